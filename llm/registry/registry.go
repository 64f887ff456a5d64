// Package registry turns "provider:model" strings into ready providers, the
// way database/sql turns driver names into drivers, except that the table
// lives on a Registry value: two registries in one process (two tenants, two
// tests) never see each other's providers, keys or overrides.
//
// A Registry knows the built-in providers (anthropic, openai, openrouter,
// ollama, lmstudio, deepseek, vllm, gemini, and the Chinese services
// minimax, dashscope, zhipu and moonshot), reads their keys and base URLs
// from explicit configuration first, then weft's WEFT_<PROVIDER>_API_KEY and
// WEFT_<PROVIDER>_BASE_URL, then the vendors' usual environment variables,
// and builds each provider once, so that its key pool and its connections
// are shared by every model resolved through it.
package registry

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weft-run/weft/llm"
)

// ProviderConfig is the explicit configuration of one provider. Zero fields
// fall back to the environment, then to the provider's defaults.
type ProviderConfig struct {
	// BaseURL overrides the provider's server. Setting it also lifts the
	// requirement for a key, since a compatible proxy may need none.
	BaseURL string
	// APIKey is the key; a value with commas is a pool of keys.
	APIKey string
	// APIKeys are several keys, pooled (round robin, cool-down on 429,
	// retirement on 401/403) and shared by every model of the provider.
	APIKeys []string
	// BearerToken is sent as "Authorization: Bearer" instead of an API
	// key: a gateway or OAuth token for anthropic, Vertex AI for gemini
	// (which then needs BaseURL set to the publisher URL).
	BearerToken string
	// Headers are added to every request (e.g. OpenRouter's HTTP-Referer).
	Headers map[string]string
	// IdleTimeout bounds the silence between received bytes; see
	// llm.Endpoint.IdleTimeout.
	IdleTimeout time.Duration
	// NoPromptCache turns prompt caching off for every request to the
	// provider (no Anthropic cache_control, no OpenAI prompt_cache_key);
	// see llm.Request.Cache for the per-request switch.
	NoPromptCache bool
}

// Config configures a Registry. The zero value reads everything from the
// process environment and uses the built-in model catalogue.
type Config struct {
	// Providers is keyed by provider name. An explicitly set field always
	// beats the environment; credentials (APIKey, APIKeys, BearerToken) go
	// together: setting any one of them ignores all credential variables.
	Providers map[string]ProviderConfig
	// HTTPClient is shared by every provider (tests, proxies, cassettes);
	// nil means llm.Endpoint's default.
	HTTPClient *http.Client
	// Catalog answers Resolve's model lookups; nil means a fresh
	// llm.DefaultCatalog(). Front doors pass one with the user's models
	// file loaded (llm.Catalog.LoadFile).
	Catalog *llm.Catalog
	// NoPromptCache sets ProviderConfig.NoPromptCache for every provider.
	NoPromptCache bool
	// Getenv reads environment variables; nil means os.Getenv. Tests pass a
	// map lookup so that they never depend on the real environment.
	Getenv func(string) string
}

// Factory builds the provider registered as name. ep is the resolved
// endpoint (key or key pool, base URL, headers, HTTP client, idle timeout);
// pc is the effective configuration it was resolved from, environment
// included, for what ep cannot carry (BearerToken). A Factory is called once
// per registry and name, unless it fails.
type Factory func(name string, ep llm.Endpoint, pc ProviderConfig) (llm.Provider, error)

// ErrUnknownProvider is wrapped by errors for specs and names that match no
// registered provider.
var ErrUnknownProvider = errors.New("unknown provider")

// Registry resolves model specs to providers. It is safe for concurrent use.
type Registry struct {
	providers     map[string]ProviderConfig // lower-case names; never mutated after New
	client        *http.Client
	catalog       *llm.Catalog
	getenv        func(string) string
	noPromptCache bool

	mu        sync.Mutex
	factories map[string]Factory
	slots     map[string]*slot
}

// slot holds what has been resolved for one provider name. Its own lock
// lets a slow factory block only callers of that provider.
type slot struct {
	mu       sync.Mutex
	factory  Factory
	resolved bool
	pc       ProviderConfig
	ep       llm.Endpoint
	p        llm.Provider
}

// New returns a registry holding the built-in providers.
func New(cfg Config) *Registry {
	r := &Registry{
		providers:     make(map[string]ProviderConfig, len(cfg.Providers)),
		client:        cfg.HTTPClient,
		catalog:       cfg.Catalog,
		getenv:        cfg.Getenv,
		noPromptCache: cfg.NoPromptCache,
		factories:     map[string]Factory{},
		slots:         map[string]*slot{},
	}
	// Copied, so that a caller changing its map later cannot race with
	// resolution.
	for name, pc := range cfg.Providers {
		pc.APIKeys = slices.Clone(pc.APIKeys)
		if pc.Headers != nil {
			h := make(map[string]string, len(pc.Headers))
			for k, v := range pc.Headers {
				h[k] = v
			}
			pc.Headers = h
		}
		r.providers[normName(name)] = pc
	}
	if r.catalog == nil {
		r.catalog = llm.DefaultCatalog()
	}
	if r.getenv == nil {
		r.getenv = os.Getenv
	}
	for _, name := range builtinNames() {
		r.factories[name] = builtinFactory(name)
	}
	return r
}

func normName(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

// Register adds the provider name, or replaces its factory (built-ins
// included); a provider already built under that name is dropped, so that
// later resolutions use f. Names are case-insensitive. Like
// database/sql.Register, it panics on an empty name, a name containing ':'
// (which would make specs ambiguous) or a nil factory: those are
// programming errors.
func (r *Registry) Register(name string, f Factory) {
	name = normName(name)
	if name == "" || strings.Contains(name, ":") {
		panic(fmt.Sprintf("registry: Register: invalid provider name %q", name))
	}
	if f == nil {
		panic("registry: Register: nil factory for " + name)
	}
	r.mu.Lock()
	r.factories[name] = f
	delete(r.slots, name)
	r.mu.Unlock()
}

// Names lists the registered providers, sorted.
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.factories))
	for n := range r.factories {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (r *Registry) has(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.factories[name]
	return ok
}

// Catalog is the registry's model catalogue (shared: Add and LoadJSON on it
// affect later resolutions).
func (r *Registry) Catalog() *llm.Catalog { return r.catalog }

// slot returns name's slot, resolved, with its lock held.
func (r *Registry) slot(name string) (*slot, error) {
	name = normName(name)
	r.mu.Lock()
	f, ok := r.factories[name]
	if !ok {
		names := make([]string, 0, len(r.factories))
		for n := range r.factories {
			names = append(names, n)
		}
		r.mu.Unlock()
		slices.Sort(names)
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownProvider, name, strings.Join(names, ", "))
	}
	s := r.slots[name]
	if s == nil {
		s = &slot{factory: f}
		r.slots[name] = s
	}
	r.mu.Unlock()
	s.mu.Lock()
	if !s.resolved {
		s.pc = r.effective(name)
		s.ep = r.endpoint(s.pc)
		s.resolved = true
	}
	return s, nil
}

// Provider returns the provider registered as name, building it on first
// use. Build errors (a missing key, say) are not remembered: the next call
// tries again.
func (r *Registry) Provider(name string) (llm.Provider, error) {
	s, err := r.slot(name)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if s.p != nil {
		return s.p, nil
	}
	name = normName(name)
	p, err := s.factory(name, s.ep, s.pc)
	if err == nil && p == nil {
		err = errors.New("factory returned no provider")
	}
	if err != nil {
		var le *llm.Error
		if errors.As(err, &le) {
			return nil, err
		}
		return nil, fmt.Errorf("provider %s: %w", name, err)
	}
	s.p = p
	return p, nil
}

// Resolve parses spec (see ParseSpec; specs may name any registered
// provider), returns the provider and what the catalogue knows about the
// model. An unknown model is not an error: its ModelInfo has Known false and
// conservative limits.
func (r *Registry) Resolve(spec string) (llm.Provider, llm.ModelInfo, error) {
	provider, model, err := parseSpec(spec, r.has, r.Names)
	if err != nil {
		return nil, llm.ModelInfo{}, err
	}
	p, err := r.Provider(provider)
	if err != nil {
		return nil, llm.ModelInfo{}, err
	}
	return p, r.lookup(provider, model), nil
}

// lookup finds the model in the catalogue, falling back, for a model named
// "vendor/model" (OpenRouter's style), to the first-party vendor's entry:
// routers pass the vendor's list price through.
func (r *Registry) lookup(provider, model string) llm.ModelInfo {
	info := r.catalog.Lookup(provider, model)
	if info.Known {
		return info
	}
	vendor, rest, ok := strings.Cut(model, "/")
	if !ok {
		return info
	}
	switch vendor {
	case "openai", "anthropic":
	case "google":
		vendor = "gemini"
	default:
		return info
	}
	if v := r.catalog.Lookup(vendor, rest); v.Known {
		v.ID, v.Provider = model, provider
		return v
	}
	return info
}

// Endpoint returns the endpoint name's provider is (or will be) built with:
// the base URL ("" meaning the provider's default), the key or key pool,
// headers and timeouts, after merging configuration and environment. It
// does not build the provider, so it reports no missing-key error.
func (r *Registry) Endpoint(name string) (llm.Endpoint, error) {
	s, err := r.slot(name)
	if err != nil {
		return llm.Endpoint{}, err
	}
	defer s.mu.Unlock()
	ep := s.ep
	ep.Headers = ep.Headers.Clone()
	return ep, nil
}

// ProviderConfig returns name's effective configuration: the explicit one
// with the environment filled in, and keys normalised (one key in APIKey,
// several in APIKeys).
func (r *Registry) ProviderConfig(name string) (ProviderConfig, error) {
	s, err := r.slot(name)
	if err != nil {
		return ProviderConfig{}, err
	}
	defer s.mu.Unlock()
	pc := s.pc
	pc.APIKeys = slices.Clone(pc.APIKeys)
	if pc.Headers != nil {
		h := make(map[string]string, len(pc.Headers))
		for k, v := range pc.Headers {
			h[k] = v
		}
		pc.Headers = h
	}
	return pc, nil
}

// KeyHealth reports the health of provider's key pool, keys masked. It is
// nil when the provider has fewer than two keys (no pool) or is unknown.
func (r *Registry) KeyHealth(provider string) []llm.KeyHealth {
	s, err := r.slot(provider)
	if err != nil {
		return nil
	}
	defer s.mu.Unlock()
	if s.ep.Keys.Len() == 0 {
		return nil
	}
	return s.ep.Keys.Health()
}

// KeyStatus reports provider's key pool (keys masked, usable count, when
// the first cooling key is back): the data of GET /v1/keys. ok is false
// when the provider has no pool (fewer than two keys) or is unknown.
func (r *Registry) KeyStatus(provider string) (st llm.PoolStatus, ok bool) {
	s, err := r.slot(provider)
	if err != nil {
		return st, false
	}
	defer s.mu.Unlock()
	if s.ep.Keys.Len() == 0 {
		return st, false
	}
	return s.ep.Keys.Status(), true
}

// endpoint turns an effective configuration into the endpoint every build
// of the provider shares, key pool included.
func (r *Registry) endpoint(pc ProviderConfig) llm.Endpoint {
	ep := llm.Endpoint{BaseURL: pc.BaseURL, HTTPClient: r.client, IdleTimeout: pc.IdleTimeout}
	switch len(pc.APIKeys) {
	case 0:
		ep.APIKey = pc.APIKey
	default:
		ep.Keys = llm.NewKeyPool(pc.APIKeys...)
	}
	if len(pc.Headers) > 0 {
		ep.Headers = make(http.Header, len(pc.Headers))
		for k, v := range pc.Headers {
			ep.Headers.Set(k, v)
		}
	}
	return ep
}
