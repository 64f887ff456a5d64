// Package anthropic is weft's provider for the Anthropic Messages API
// (POST /v1/messages with stream:true). It encodes llm.Request into the
// Messages wire format and decodes the server-sent event stream into a
// strictly framed llm.Event sequence through llm.Framer.
//
// Thinking signatures and redacted thinking travel in Block.Meta under
// MetaSignature and MetaRedacted and are sent back verbatim on later turns.
package anthropic

import (
	"context"
	"iter"
	"net/http"
	"strings"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/internal/wire"
)

const (
	// DefaultBaseURL is the public API; /v1/messages is appended.
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultVersion is the anthropic-version sent when Config.Version is
	// empty. It is the version that still accepts temperature, top_p and
	// top_k: API version 2026-10-21 answers 400 to any of them, so a caller
	// that selects it must leave the sampling fields of llm.Request unset.
	DefaultVersion = "2023-06-01"
	// DefaultMaxTokens is sent when neither the request nor the config says.
	DefaultMaxTokens = 8192

	// MetaSignature is the Block.Meta key holding a thinking block's
	// signature, which the API requires back unchanged on replay.
	MetaSignature = "anthropic.signature"
	// MetaRedacted is the Block.Meta key holding the encrypted data of a
	// redacted_thinking block (surfaced as a thinking block with no text).
	MetaRedacted = "anthropic.redacted"

	name = "anthropic"
)

// Config configures a Provider. The zero value talks to the public API with
// the key in Endpoint.APIKey or Endpoint.Keys.
type Config struct {
	llm.Endpoint
	// BearerAuth sends "Authorization: Bearer <key>" (ANTHROPIC_AUTH_TOKEN
	// style, as gateways and OAuth tokens want) instead of x-api-key.
	BearerAuth bool
	// Version is the anthropic-version header; empty means DefaultVersion.
	Version string
	// Beta flags are sent comma-joined in anthropic-beta.
	Beta []string
	// DefaultMaxTokens is used when Request.MaxTokens is 0, since the API
	// requires max_tokens; 0 means DefaultMaxTokens.
	DefaultMaxTokens int
	// NoPromptCache sends no cache_control, whatever the requests say (as
	// if every Request.Cache were llm.CacheOff). By default requests are
	// cached: see Request.Cache and the breakpoints planCache places.
	NoPromptCache bool
}

// Provider streams Messages API calls. It is safe for concurrent use.
type Provider struct {
	cfg       Config
	url       string
	headers   http.Header // static part; the key is added per call
	maxTokens int
}

// New returns a provider for cfg.
func New(cfg Config) *Provider {
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	version := cfg.Version
	if version == "" {
		version = DefaultVersion
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	h.Set("Anthropic-Version", version)
	if len(cfg.Beta) > 0 {
		h.Set("Anthropic-Beta", strings.Join(cfg.Beta, ","))
	}
	mt := cfg.DefaultMaxTokens
	if mt <= 0 {
		mt = DefaultMaxTokens
	}
	return &Provider{cfg: cfg, url: base + "/v1/messages", headers: h, maxTokens: mt}
}

// Name is the provider's registry name.
func (p *Provider) Name() string { return name }

// Stream sends req and yields its strictly framed events. It never panics
// and never retries; every failure ends in an OutcomeReport carrying an
// *llm.Error.
func (p *Provider) Stream(ctx context.Context, req *llm.Request) iter.Seq[llm.Event] {
	return func(yield func(llm.Event) bool) {
		f := llm.NewFramer(yield)
		body, err := p.encode(req)
		if err != nil {
			f.Fail(name, err)
			return
		}
		key, err := p.cfg.Key()
		if err != nil {
			f.Fail(name, err)
			return
		}
		resp, err := wire.Post(ctx, &p.cfg.Endpoint, name, p.url, body, p.header(key))
		if err != nil {
			p.cfg.Report(key, err)
			f.Fail(name, err)
			return
		}
		defer resp.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			e := httpError(resp)
			p.cfg.Report(key, e)
			f.Fail(name, e)
			return
		}
		d := decoder{f: f, resp: resp}
		err = d.run()
		p.cfg.Report(key, err)
		if err != nil {
			f.Fail(name, err)
		}
	}
}

func (p *Provider) header(key string) http.Header {
	h := make(http.Header, len(p.headers)+1)
	for k, v := range p.headers {
		h[k] = v
	}
	if key != "" {
		if p.cfg.BearerAuth {
			h.Set("Authorization", "Bearer "+key)
		} else {
			h.Set("X-Api-Key", key)
		}
	}
	return h
}

var _ llm.Provider = (*Provider)(nil)
