package server

import (
	"net/http"
	"time"

	"github.com/weft-run/weft/llm"
)

// The API key pools over HTTP (issue 15): GET /v1/keys shows, for every
// provider configured with several keys, each key masked (never the key
// itself), its state and how long it still cools down after a 429.
//
//	GET /v1/keys
//	{"providers": [{"provider": "openai", "usable": 1, "keys": [
//	   {"id": "key-1", "key": "sk-a...wxyz", "state": "cooling", "cool_until": "...", "cooldown_seconds": 27, "uses": 3, "last_error": "..."},
//	   {"id": "key-2", "key": "sk-b...1234", "state": "ok", "uses": 2}]}]}
//
// A provider with one key has no pool and is not listed: a rate limit on
// it is retried after the server's Retry-After.

// KeySource is what GET /v1/keys reads: *registry.Registry is one. The
// keys it reports must be masked already (llm.KeyPool.Status masks).
type KeySource interface {
	// Names lists the providers.
	Names() []string
	// KeyStatus reports a provider's key pool, keys masked; ok is false
	// when it has none (fewer than two keys).
	KeyStatus(provider string) (st llm.PoolStatus, ok bool)
}

// KeysResponse is the body of GET /v1/keys.
type KeysResponse struct {
	Providers []ProviderKeys `json:"providers"`
}

// ProviderKeys is one provider's pool.
type ProviderKeys struct {
	Provider string `json:"provider"`
	// Usable is how many keys can be used now; NextReady, when none can,
	// is when the first cooling key is back.
	Usable    int       `json:"usable"`
	NextReady time.Time `json:"next_ready,omitzero"`
	Keys      []KeyInfo `json:"keys"`
}

// KeyInfo is one pooled key: llm.KeyHealth (the key masked) and the
// seconds its cooldown still lasts.
type KeyInfo struct {
	llm.KeyHealth
	CooldownSeconds float64 `json:"cooldown_seconds,omitempty"`
}

// KeysHandler serves GET /v1/keys from src; nil answers 503. The Server
// mounts it behind its authentication (Config.Keys).
func KeysHandler(src KeySource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if src == nil {
			writeError(w, http.StatusServiceUnavailable, errInternal, "this server does not report its API keys")
			return
		}
		now := time.Now()
		out := KeysResponse{Providers: []ProviderKeys{}}
		for _, name := range src.Names() {
			st, ok := src.KeyStatus(name)
			if !ok {
				continue
			}
			p := ProviderKeys{Provider: name, Usable: st.Usable, NextReady: st.NextReady, Keys: make([]KeyInfo, 0, len(st.Keys))}
			for _, k := range st.Keys {
				ki := KeyInfo{KeyHealth: k}
				if k.State == llm.KeyCooling && k.CoolUntil.After(now) {
					ki.CooldownSeconds = k.CoolUntil.Sub(now).Round(time.Millisecond).Seconds()
				}
				p.Keys = append(p.Keys, ki)
			}
			out.Providers = append(out.Providers, p)
		}
		writeJSON(w, http.StatusOK, out)
	})
}
