package llm

import (
	"net/http"
	"time"
)

// DefaultIdleTimeout is how long a call may go without receiving a byte
// before it ends with a timeout outcome (seed 003's 120 s request timeout,
// applied to silence rather than to the whole stream, so that long answers
// are not cut off while they are still arriving).
const DefaultIdleTimeout = 120 * time.Second

// Endpoint is how a provider reaches its server. Every provider's Config
// embeds it; zero values mean the provider's defaults.
type Endpoint struct {
	// BaseURL overrides the provider's default server.
	BaseURL string
	// APIKey authenticates calls. Keys, when set, takes precedence.
	APIKey string
	// Keys is a pool of keys used round-robin with cool-down and retirement.
	Keys *KeyPool
	// Headers are added to every request (e.g. OpenRouter's HTTP-Referer).
	Headers http.Header
	// HTTPClient sends the requests; nil means a client with no overall
	// timeout (streams can be long), sharing http.DefaultTransport.
	HTTPClient *http.Client
	// IdleTimeout bounds the silence between received bytes; 0 means
	// DefaultIdleTimeout and a negative value turns it off.
	IdleTimeout time.Duration
}

// Key returns the key for the next call: from the pool when there is one.
// It returns "" with no error when no key is configured, for servers that
// need none (Ollama, LM Studio).
func (e *Endpoint) Key() (string, error) {
	if e.Keys != nil && e.Keys.Len() > 0 {
		return e.Keys.Acquire()
	}
	return e.APIKey, nil
}

// Report passes a call's error (or nil) to the key pool, if any.
func (e *Endpoint) Report(key string, err error) {
	if e.Keys != nil {
		e.Keys.Report(key, err)
	}
}

// Client returns the HTTP client to use.
func (e *Endpoint) Client() *http.Client {
	if e.HTTPClient != nil {
		return e.HTTPClient
	}
	return http.DefaultClient
}

// Idle returns the effective idle timeout, 0 meaning none.
func (e *Endpoint) Idle() time.Duration {
	switch {
	case e.IdleTimeout < 0:
		return 0
	case e.IdleTimeout == 0:
		return DefaultIdleTimeout
	}
	return e.IdleTimeout
}
