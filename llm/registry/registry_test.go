package registry_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/registry"
)

// env is a fake environment: tests never read the real one.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// fake is a provider that answers nothing, for wiring tests.
type fake struct{ name string }

func (f *fake) Name() string { return f.name }
func (f *fake) Stream(context.Context, *llm.Request) iter.Seq[llm.Event] {
	return func(yield func(llm.Event) bool) {
		llm.NewFramer(yield).Finish(llm.Outcome{Status: llm.StatusCompleted})
	}
}

func TestParseSpec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec, provider, model string
		wantErr               []string // substrings of the error
		unknownProvider       bool     // errors.Is(err, ErrUnknownProvider)
	}{
		{spec: "anthropic:claude-sonnet-4-5", provider: "anthropic", model: "claude-sonnet-4-5"},
		{spec: "ollama:llama3.3:70b", provider: "ollama", model: "llama3.3:70b"},
		{spec: "ollama:gpt-oss:20b", provider: "ollama", model: "gpt-oss:20b"},
		{spec: "OpenAI:gpt-4o", provider: "openai", model: "gpt-4o"},
		{spec: "  gemini : gemini-2.5-flash ", provider: "gemini", model: "gemini-2.5-flash"},
		{spec: "openrouter:anthropic/claude-sonnet-4.5", provider: "openrouter", model: "anthropic/claude-sonnet-4.5"},
		{spec: "openrouter:meta-llama/llama-3.3-70b-instruct:free", provider: "openrouter", model: "meta-llama/llama-3.3-70b-instruct:free"},
		{spec: "lmstudio:openai/gpt-oss-20b", provider: "lmstudio", model: "openai/gpt-oss-20b"},
		{spec: "vllm:Qwen/Qwen3-8B", provider: "vllm", model: "Qwen/Qwen3-8B"},
		{spec: "deepseek:deepseek-chat", provider: "deepseek", model: "deepseek-chat"},
		// Inference from bare names.
		{spec: "claude-haiku-4-5-20251001", provider: "anthropic", model: "claude-haiku-4-5-20251001"},
		{spec: "gpt-4.1", provider: "openai", model: "gpt-4.1"},
		{spec: "chatgpt-4o-latest", provider: "openai", model: "chatgpt-4o-latest"},
		{spec: "o1-preview", provider: "openai", model: "o1-preview"},
		{spec: "o3", provider: "openai", model: "o3"},
		{spec: "o4-mini", provider: "openai", model: "o4-mini"},
		{spec: "gemini-2.5-pro", provider: "gemini", model: "gemini-2.5-pro"},
		{spec: "deepseek-reasoner", provider: "deepseek", model: "deepseek-reasoner"},
		// Errors.
		{spec: "", wantErr: []string{"empty model spec", "provider:model", "anthropic:claude-sonnet-4-5"}},
		{spec: "   ", wantErr: []string{"empty model spec"}},
		{spec: "openai:", wantErr: []string{`"openai:" names no model`, "openai:MODEL"}},
		{spec: "ollama:  ", wantErr: []string{"names no model"}},
		{spec: ":gpt-4o", wantErr: []string{"names no provider", "anthropic, dashscope, deepseek, gemini, lmstudio, minimax, moonshot, ollama, openai, openrouter, vllm, zhipu"}},
		{spec: "antropic:claude-sonnet-4-5", unknownProvider: true,
			wantErr: []string{`unknown provider "antropic"`, "known: anthropic, dashscope, deepseek, gemini, lmstudio, minimax, moonshot, ollama, openai, openrouter, vllm, zhipu"}},
		// A bare Ollama tag has no provider prefix and implies none.
		{spec: "llama3.3:70b", unknownProvider: true, wantErr: []string{`unknown provider "llama3.3"`, "ollama:llama3.3:70b"}},
		{spec: "gpt-oss:20b", unknownProvider: true, wantErr: []string{`unknown provider "gpt-oss"`}},
		{spec: "mistral-large-latest", unknownProvider: true,
			wantErr: []string{`model spec "mistral-large-latest"`, "does not imply", "provider:model", "openrouter", "e.g. anthropic:claude-sonnet-4-5"}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			t.Parallel()
			p, m, err := registry.ParseSpec(tt.spec)
			if len(tt.wantErr) == 0 {
				if err != nil || p != tt.provider || m != tt.model {
					t.Fatalf("ParseSpec = %q, %q, %v; want %q, %q", p, m, err, tt.provider, tt.model)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseSpec = %q, %q; want an error", p, m)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if errors.Is(err, registry.ErrUnknownProvider) != tt.unknownProvider {
				t.Errorf("errors.Is(%v, ErrUnknownProvider) = %v", err, !tt.unknownProvider)
			}
		})
	}
}

func TestResolveCustomProvider(t *testing.T) {
	t.Parallel()
	var builds atomic.Int32
	r := registry.New(registry.Config{
		Getenv:    env("WEFT_MY_PROXY_API_KEY", "k-env", "WEFT_MY_PROXY_BASE_URL", "http://proxy.test/v1"),
		Providers: map[string]registry.ProviderConfig{"My-Proxy": {Headers: map[string]string{"x-team": "a"}}},
	})
	var gotEP llm.Endpoint
	r.Register("My-Proxy", func(name string, ep llm.Endpoint, pc registry.ProviderConfig) (llm.Provider, error) {
		builds.Add(1)
		gotEP = ep
		return &fake{name: name}, nil
	})
	if !slices.Contains(r.Names(), "my-proxy") {
		t.Fatalf("Names = %v", r.Names())
	}
	p, info, err := r.Resolve("my-proxy:team/model:v2")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "my-proxy" || info.ID != "team/model:v2" || info.Provider != "my-proxy" || info.Known {
		t.Fatalf("Resolve = %s, %+v", p.Name(), info)
	}
	if gotEP.APIKey != "k-env" || gotEP.BaseURL != "http://proxy.test/v1" || gotEP.Headers.Get("X-Team") != "a" {
		t.Fatalf("factory got endpoint %+v", gotEP)
	}
	for range 3 {
		if p2, _, _ := r.Resolve("MY-PROXY:other"); p2 != p {
			t.Fatal("the provider was not cached")
		}
	}
	if builds.Load() != 1 {
		t.Fatalf("factory ran %d times, want 1", builds.Load())
	}

	// Replacing a factory drops the built provider.
	r.Register("my-proxy", func(name string, ep llm.Endpoint, pc registry.ProviderConfig) (llm.Provider, error) {
		return &fake{name: "replaced"}, nil
	})
	if p, _ := r.Provider("my-proxy"); p.Name() != "replaced" {
		t.Fatalf("after Register, Provider = %s", p.Name())
	}

	// Built-ins can be replaced too (e.g. with a cassette).
	r.Register("anthropic", func(name string, ep llm.Endpoint, pc registry.ProviderConfig) (llm.Provider, error) {
		return &fake{name: "recorded-" + name}, nil
	})
	if p, _, err := r.Resolve("claude-sonnet-4-5"); err != nil || p.Name() != "recorded-anthropic" {
		t.Fatalf("Resolve after replacing anthropic = %v, %v", p, err)
	}

	// Factory errors come back named and are not cached.
	fail := true
	r.Register("flaky", func(name string, ep llm.Endpoint, pc registry.ProviderConfig) (llm.Provider, error) {
		if fail {
			return nil, errors.New("boom")
		}
		return &fake{name: name}, nil
	})
	if _, _, err := r.Resolve("flaky:m"); err == nil || err.Error() != "provider flaky: boom" {
		t.Fatalf("Resolve(flaky) error = %v", err)
	}
	fail = false
	if _, _, err := r.Resolve("flaky:m"); err != nil {
		t.Fatalf("Resolve after the factory recovered: %v", err)
	}
	r.Register("nil", func(string, llm.Endpoint, registry.ProviderConfig) (llm.Provider, error) { return nil, nil })
	if _, err := r.Provider("nil"); err == nil {
		t.Fatal("a nil provider was accepted")
	}

	// Another registry is unaffected.
	if slices.Contains(registry.New(registry.Config{Getenv: env()}).Names(), "my-proxy") {
		t.Fatal("Register leaked into another registry")
	}
}

func TestRegisterPanicsOnProgrammingErrors(t *testing.T) {
	t.Parallel()
	r := registry.New(registry.Config{Getenv: env()})
	f := func(string, llm.Endpoint, registry.ProviderConfig) (llm.Provider, error) { return &fake{}, nil }
	for _, tc := range []struct {
		name string
		f    registry.Factory
	}{{"", f}, {"  ", f}, {"a:b", f}, {"ok", nil}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q, %v) did not panic", tc.name, tc.f != nil)
				}
			}()
			r.Register(tc.name, tc.f)
		}()
	}
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	r := registry.New(registry.Config{Getenv: env()})
	r.Register("acme", func(name string, ep llm.Endpoint, pc registry.ProviderConfig) (llm.Provider, error) {
		return &fake{name: name}, nil
	})
	for spec, want := range map[string]string{
		"":              "empty model spec",
		"nope:x":        `unknown provider "nope" in model spec "nope:x" (known: acme, anthropic,`,
		"acme:":         "names no model",
		"llama3.3:70b":  "ollama:llama3.3:70b",
		"mistral-large": "providers: acme, anthropic",
	} {
		if _, _, err := r.Resolve(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve(%q) error = %v, want it to contain %q", spec, err, want)
		}
	}
	if _, err := r.Provider("nope"); !errors.Is(err, registry.ErrUnknownProvider) || !strings.Contains(err.Error(), "acme, anthropic") {
		t.Errorf("Provider(nope) error = %v", err)
	}
	if _, err := r.Endpoint("nope"); !errors.Is(err, registry.ErrUnknownProvider) {
		t.Errorf("Endpoint(nope) error = %v", err)
	}
	if h := r.KeyHealth("nope"); h != nil {
		t.Errorf("KeyHealth(nope) = %v", h)
	}
}

func TestEnvPrecedence(t *testing.T) {
	t.Parallel()
	type want struct {
		baseURL, key, bearer string
		keys                 []string
	}
	tests := []struct {
		name     string
		provider string
		explicit *registry.ProviderConfig
		env      []string
		want     want
	}{
		{name: "anthropic vendor key", provider: "anthropic", env: []string{"ANTHROPIC_API_KEY", "sk-ant-vendor"},
			want: want{key: "sk-ant-vendor"}},
		{name: "anthropic weft beats vendor", provider: "anthropic",
			env:  []string{"ANTHROPIC_API_KEY", "sk-ant-vendor", "WEFT_ANTHROPIC_API_KEY", "sk-ant-weft", "ANTHROPIC_BASE_URL", "http://vendor", "WEFT_ANTHROPIC_BASE_URL", "http://weft"},
			want: want{key: "sk-ant-weft", baseURL: "http://weft"}},
		{name: "anthropic explicit beats all", provider: "anthropic",
			explicit: &registry.ProviderConfig{APIKey: "sk-explicit", BaseURL: "http://explicit"},
			env:      []string{"ANTHROPIC_API_KEY", "sk-ant-vendor", "WEFT_ANTHROPIC_API_KEY", "sk-ant-weft", "ANTHROPIC_BASE_URL", "http://vendor", "WEFT_ANTHROPIC_BASE_URL", "http://weft"},
			want:     want{key: "sk-explicit", baseURL: "http://explicit"}},
		{name: "explicit fields merge with env fields", provider: "anthropic",
			explicit: &registry.ProviderConfig{BaseURL: "http://explicit"},
			env:      []string{"ANTHROPIC_API_KEY", "sk-ant-vendor"},
			want:     want{key: "sk-ant-vendor", baseURL: "http://explicit"}},
		{name: "anthropic auth token", provider: "anthropic",
			env:  []string{"ANTHROPIC_AUTH_TOKEN", "tok", "ANTHROPIC_API_KEY", "sk-ant-vendor", "ANTHROPIC_BASE_URL", "https://gateway.test"},
			want: want{bearer: "tok", baseURL: "https://gateway.test"}},
		{name: "weft key beats vendor token", provider: "anthropic",
			env:  []string{"ANTHROPIC_AUTH_TOKEN", "tok", "WEFT_ANTHROPIC_API_KEY", "sk-ant-weft"},
			want: want{key: "sk-ant-weft"}},
		{name: "explicit bearer ignores env keys", provider: "anthropic",
			explicit: &registry.ProviderConfig{BearerToken: "oauth"},
			env:      []string{"ANTHROPIC_API_KEY", "sk-ant-vendor"},
			want:     want{bearer: "oauth"}},
		{name: "openai", provider: "openai", env: []string{"OPENAI_API_KEY", "sk-oai", "OPENAI_BASE_URL", "https://oai-proxy/v1"},
			want: want{key: "sk-oai", baseURL: "https://oai-proxy/v1"}},
		{name: "OPENAI_* is for openai only", provider: "openrouter", env: []string{"OPENAI_API_KEY", "sk-oai", "OPENAI_BASE_URL", "https://oai-proxy/v1"}},
		{name: "openrouter", provider: "openrouter", env: []string{"OPENROUTER_API_KEY", "sk-or", "OPENAI_API_KEY", "sk-oai"},
			want: want{key: "sk-or"}},
		{name: "deepseek", provider: "deepseek", env: []string{"DEEPSEEK_API_KEY", "sk-ds"}, want: want{key: "sk-ds"}},
		{name: "gemini key first", provider: "gemini", env: []string{"GOOGLE_API_KEY", "g2", "GEMINI_API_KEY", "g1", "GOOGLE_GEMINI_BASE_URL", "http://gem"},
			want: want{key: "g1", baseURL: "http://gem"}},
		{name: "google key fallback", provider: "gemini", env: []string{"GOOGLE_API_KEY", "g2"}, want: want{key: "g2"}},
		{name: "lmstudio", provider: "lmstudio", env: []string{"LMSTUDIO_BASE_URL", "http://box:1234/v1"}, want: want{baseURL: "http://box:1234/v1"}},
		{name: "vllm", provider: "vllm", env: []string{"VLLM_BASE_URL", "http://gpu:8000/v1", "VLLM_API_KEY", "vk"},
			want: want{baseURL: "http://gpu:8000/v1", key: "vk"}},
		{name: "ollama default", provider: "ollama"},
		{name: "ollama host:port", provider: "ollama", env: []string{"OLLAMA_HOST", "localhost:11434"}, want: want{baseURL: "http://localhost:11434/v1"}},
		{name: "ollama bare host", provider: "ollama", env: []string{"OLLAMA_HOST", "0.0.0.0"}, want: want{baseURL: "http://0.0.0.0:11434/v1"}},
		{name: "ollama port only", provider: "ollama", env: []string{"OLLAMA_HOST", ":9999"}, want: want{baseURL: "http://127.0.0.1:9999/v1"}},
		{name: "ollama ipv6", provider: "ollama", env: []string{"OLLAMA_HOST", "::1"}, want: want{baseURL: "http://[::1]:11434/v1"}},
		{name: "ollama bracketed ipv6", provider: "ollama", env: []string{"OLLAMA_HOST", "[::1]:8080"}, want: want{baseURL: "http://[::1]:8080/v1"}},
		{name: "ollama url", provider: "ollama", env: []string{"OLLAMA_HOST", "http://gpu-box:8080"}, want: want{baseURL: "http://gpu-box:8080/v1"}},
		{name: "ollama https with path", provider: "ollama", env: []string{"OLLAMA_HOST", "https://ollama.example.com/proxy/"}, want: want{baseURL: "https://ollama.example.com/proxy/v1"}},
		{name: "ollama url with /v1", provider: "ollama", env: []string{"OLLAMA_HOST", "http://h:1/v1"}, want: want{baseURL: "http://h:1/v1"}},
		{name: "ollama weft base URL is taken as is", provider: "ollama",
			env: []string{"OLLAMA_HOST", "other:1", "WEFT_OLLAMA_BASE_URL", "http://h:2/custom"}, want: want{baseURL: "http://h:2/custom"}},
		{name: "whitespace is trimmed", provider: "openai", env: []string{"OPENAI_API_KEY", "  sk-oai\n"}, want: want{key: "sk-oai"}},
		{name: "comma key is a pool", provider: "openai", env: []string{"OPENAI_API_KEY", "sk-1, sk-2,,sk-1 ,sk-3"},
			want: want{keys: []string{"sk-1", "sk-2", "sk-3"}}},
		{name: "one key after dedup is not a pool", provider: "openai", env: []string{"WEFT_OPENAI_API_KEY", "sk-1,sk-1"},
			want: want{key: "sk-1"}},
		{name: "explicit APIKeys", provider: "deepseek", explicit: &registry.ProviderConfig{APIKey: "a", APIKeys: []string{"b", "c,d"}},
			env: []string{"DEEPSEEK_API_KEY", "env"}, want: want{keys: []string{"a", "b", "c", "d"}}},
		{name: "custom provider reads weft names", provider: "acme.ai", env: []string{"WEFT_ACME_AI_API_KEY", "k", "WEFT_ACME_AI_BASE_URL", "http://acme"},
			want: want{key: "k", baseURL: "http://acme"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := registry.Config{Getenv: env(tt.env...)}
			if tt.explicit != nil {
				cfg.Providers = map[string]registry.ProviderConfig{tt.provider: *tt.explicit}
			}
			r := registry.New(cfg)
			if _, ok := slices.BinarySearch(r.Names(), tt.provider); !ok {
				r.Register(tt.provider, func(name string, ep llm.Endpoint, pc registry.ProviderConfig) (llm.Provider, error) {
					return &fake{name: name}, nil
				})
			}
			pc, err := r.ProviderConfig(tt.provider)
			if err != nil {
				t.Fatal(err)
			}
			ep, err := r.Endpoint(tt.provider)
			if err != nil {
				t.Fatal(err)
			}
			if pc.BaseURL != tt.want.baseURL || ep.BaseURL != tt.want.baseURL {
				t.Errorf("base URL = %q (endpoint %q), want %q", pc.BaseURL, ep.BaseURL, tt.want.baseURL)
			}
			if pc.APIKey != tt.want.key || ep.APIKey != tt.want.key {
				t.Errorf("key = %q (endpoint %q), want %q", pc.APIKey, ep.APIKey, tt.want.key)
			}
			if pc.BearerToken != tt.want.bearer {
				t.Errorf("bearer = %q, want %q", pc.BearerToken, tt.want.bearer)
			}
			if !slices.Equal(pc.APIKeys, tt.want.keys) || ep.Keys.Len() != len(tt.want.keys) {
				t.Errorf("keys = %q (pool of %d), want %q", pc.APIKeys, ep.Keys.Len(), tt.want.keys)
			}
		})
	}
}

func TestEndpointCarriesSharedSettings(t *testing.T) {
	t.Parallel()
	client := &http.Client{}
	r := registry.New(registry.Config{
		Getenv:     env("OPENROUTER_API_KEY", "sk-or"),
		HTTPClient: client,
		Providers: map[string]registry.ProviderConfig{
			"openrouter": {Headers: map[string]string{"http-referer": "https://weft.run", "X-Title": "weft"}, IdleTimeout: 5 * time.Second},
		},
	})
	ep, err := r.Endpoint("openrouter")
	if err != nil {
		t.Fatal(err)
	}
	if ep.HTTPClient != client || ep.IdleTimeout != 5*time.Second ||
		ep.Headers.Get("HTTP-Referer") != "https://weft.run" || ep.Headers.Get("X-Title") != "weft" {
		t.Fatalf("endpoint = %+v", ep)
	}
	// Callers get copies: changing them does not change the registry.
	ep.Headers.Set("X-Title", "changed")
	pc, _ := r.ProviderConfig("openrouter")
	pc.Headers["X-Title"] = "changed"
	if ep2, _ := r.Endpoint("openrouter"); ep2.Headers.Get("X-Title") != "weft" {
		t.Fatal("Endpoint returned the registry's own headers")
	}
	if pc2, _ := r.ProviderConfig("openrouter"); pc2.Headers["X-Title"] != "weft" {
		t.Fatal("ProviderConfig returned the registry's own headers")
	}
}

func TestConfigIsCopied(t *testing.T) {
	t.Parallel()
	providers := map[string]registry.ProviderConfig{"openai": {APIKey: "sk-1"}}
	r := registry.New(registry.Config{Getenv: env(), Providers: providers})
	providers["openai"] = registry.ProviderConfig{APIKey: "sk-changed"}
	if ep, _ := r.Endpoint("openai"); ep.APIKey != "sk-1" {
		t.Fatalf("the registry saw a later change to the caller's map: %q", ep.APIKey)
	}
}

func TestMissingKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		provider string
		env      []string
		explicit *registry.ProviderConfig
		wantErr  []string // nil: no error
	}{
		{provider: "anthropic", wantErr: []string{"anthropic: auth", "ANTHROPIC_API_KEY", "WEFT_ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"}},
		{provider: "openai", wantErr: []string{"openai: auth", "set OPENAI_API_KEY", "WEFT_OPENAI_API_KEY"}},
		{provider: "openrouter", wantErr: []string{"set OPENROUTER_API_KEY"}},
		{provider: "deepseek", wantErr: []string{"set DEEPSEEK_API_KEY"}},
		{provider: "gemini", wantErr: []string{"set GEMINI_API_KEY", "GOOGLE_API_KEY"}},
		// Another provider's key does not count.
		{provider: "openrouter", env: []string{"OPENAI_API_KEY", "sk"}, wantErr: []string{"OPENROUTER_API_KEY"}},
		// Local servers need none.
		{provider: "ollama"},
		{provider: "lmstudio"},
		{provider: "vllm"},
		// A configured base URL lifts the requirement (a proxy may need no key).
		{provider: "openai", explicit: &registry.ProviderConfig{BaseURL: "http://litellm:4000/v1"}},
		{provider: "anthropic", env: []string{"ANTHROPIC_BASE_URL", "http://gateway"}},
		{provider: "anthropic", env: []string{"ANTHROPIC_AUTH_TOKEN", "tok"}},
		{provider: "gemini", env: []string{"GOOGLE_API_KEY", "g"}},
		// Vertex needs its publisher URL.
		{provider: "gemini", explicit: &registry.ProviderConfig{BearerToken: "ya29"}, wantErr: []string{"provider gemini", "Vertex AI", "publisher URL"}},
		{provider: "gemini", explicit: &registry.ProviderConfig{BearerToken: "ya29", BaseURL: "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/publishers/google"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.provider, tt.env, tt.explicit != nil), func(t *testing.T) {
			t.Parallel()
			cfg := registry.Config{Getenv: env(tt.env...)}
			if tt.explicit != nil {
				cfg.Providers = map[string]registry.ProviderConfig{tt.provider: *tt.explicit}
			}
			p, err := registry.New(cfg).Provider(tt.provider)
			if tt.wantErr == nil {
				if err != nil || p.Name() != tt.provider {
					t.Fatalf("Provider = %v, %v", p, err)
				}
				return
			}
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "no API key") {
				var le *llm.Error
				if !errors.Is(err, llm.ErrNoKey) || !errors.As(err, &le) || le.Category != llm.CategoryAuth || le.Provider != tt.provider {
					t.Errorf("missing-key error is not an auth *llm.Error wrapping ErrNoKey: %#v", err)
				}
			}
		})
	}
}

func TestBuiltinProviders(t *testing.T) {
	t.Parallel()
	r := registry.New(registry.Config{Getenv: env(
		"ANTHROPIC_API_KEY", "a", "OPENAI_API_KEY", "o", "OPENROUTER_API_KEY", "r", "DEEPSEEK_API_KEY", "d", "GEMINI_API_KEY", "g",
		"MINIMAX_API_KEY", "m", "DASHSCOPE_API_KEY", "q", "ZHIPUAI_API_KEY", "z", "MOONSHOT_API_KEY", "k")})
	if got := r.Names(); !slices.Equal(got, registry.BuiltinNames()) {
		t.Fatalf("Names = %v, want %v", got, registry.BuiltinNames())
	}
	for _, name := range r.Names() {
		p, err := r.Provider(name)
		if err != nil {
			t.Fatalf("Provider(%s): %v", name, err)
		}
		if p.Name() != name {
			t.Errorf("Provider(%s).Name() = %s", name, p.Name())
		}
		if p2, _ := r.Provider(strings.ToUpper(name)); p2 != p {
			t.Errorf("Provider(%s) built twice", name)
		}
	}
}

func TestResolveModelInfo(t *testing.T) {
	t.Parallel()
	cat := llm.NewCatalog(llm.ModelInfo{Provider: "openai", ID: "gpt-4.1", ContextWindow: 1000, InputPrice: 2})
	r := registry.New(registry.Config{Getenv: env("OPENAI_API_KEY", "o", "OPENROUTER_API_KEY", "r", "GEMINI_API_KEY", "g"), Catalog: cat})
	if r.Catalog() != cat {
		t.Fatal("Catalog() is not the configured catalogue")
	}
	tests := []struct {
		spec      string
		wantKnown bool
		wantCtx   int
		wantProv  string
	}{
		{"openai:gpt-4.1-2025-04-14", true, 1000, "openai"},
		{"gpt-4o", false, llm.UnknownContextWindow, "openai"},
		// OpenRouter's vendor/model names fall back to the vendor's entry.
		{"openrouter:openai/gpt-4.1", true, 1000, "openrouter"},
		{"openrouter:mistralai/mistral-large", false, llm.UnknownContextWindow, "openrouter"},
	}
	for _, tt := range tests {
		_, info, err := r.Resolve(tt.spec)
		if err != nil {
			t.Fatalf("Resolve(%s): %v", tt.spec, err)
		}
		_, model, _ := strings.Cut(tt.spec, ":")
		if !strings.Contains(tt.spec, ":") {
			model = tt.spec
		}
		if info.Known != tt.wantKnown || info.ContextWindow != tt.wantCtx || info.Provider != tt.wantProv || info.ID != model {
			t.Errorf("Resolve(%s) info = %+v", tt.spec, info)
		}
	}
	cat.Add(llm.ModelInfo{Provider: "openai", ID: "gpt-4o", ContextWindow: 7})
	if _, info, _ := r.Resolve("gpt-4o"); info.ContextWindow != 7 {
		t.Errorf("a catalogue change was not seen: %+v", info)
	}
	// The default catalogue is used when none is configured.
	r2 := registry.New(registry.Config{Getenv: env("GEMINI_API_KEY", "g", "OPENROUTER_API_KEY", "r")})
	if _, info, _ := r2.Resolve("gemini-2.5-flash"); !info.Known || info.ContextWindow != 1_048_576 {
		t.Errorf("default catalogue: %+v", info)
	}
	if _, info, _ := r2.Resolve("openrouter:google/gemini-2.5-pro"); !info.Known || info.InputPrice != 1.25 {
		t.Errorf("openrouter google fallback: %+v", info)
	}
}

func TestKeyHealth(t *testing.T) {
	t.Parallel()
	r := registry.New(registry.Config{Getenv: env(
		"OPENAI_API_KEY", "sk-proj-aaaaaaaaaaaa1111,sk-proj-bbbbbbbbbbbb2222",
		"ANTHROPIC_API_KEY", "sk-ant-single-key-0000")})
	h := r.KeyHealth("openai")
	if len(h) != 2 || h[0].Key != "sk-p...1111" || h[1].Key != "sk-p...2222" || h[0].State != llm.KeyOK {
		t.Fatalf("KeyHealth = %+v", h)
	}
	for _, k := range h {
		if strings.Contains(k.Key, "aaaa") || strings.Contains(k.Key, "bbbb") {
			t.Fatalf("KeyHealth shows the key unmasked: %+v", k)
		}
	}
	if h := r.KeyHealth("anthropic"); h != nil {
		t.Fatalf("a single key has no pool, KeyHealth = %+v", h)
	}
	// The pool behind KeyHealth is the one the provider uses.
	ep, _ := r.Endpoint("openai")
	k, err := ep.Key()
	if err != nil {
		t.Fatal(err)
	}
	ep.Report(k, &llm.Error{Category: llm.CategoryAuth})
	if h := r.KeyHealth("openai"); h[0].State != llm.KeyDead || h[0].Uses != 1 {
		t.Fatalf("after a 401, KeyHealth = %+v", h)
	}
	// KeyStatus, the data of GET /v1/keys: the same pool, masked.
	st, ok := r.KeyStatus("openai")
	if !ok || st.Usable != 1 || st.Keys[0].ID != "key-1" || st.Keys[0].State != llm.KeyDead || st.Keys[1].Key != "sk-p...2222" {
		t.Fatalf("KeyStatus = %+v, %v", st, ok)
	}
	if _, ok := r.KeyStatus("anthropic"); ok {
		t.Fatal("a single key has no pool, but KeyStatus reported one")
	}
}

// TestEndToEnd resolves specs against the loopback fakes of the real wire
// protocols, so that the registry's wiring (base URL conventions, auth
// headers, key pools) is checked against what the providers send.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	req := func(model string) *llm.Request {
		return &llm.Request{Model: model, MaxTokens: 64, Messages: []llm.Message{llm.UserText("hi")}}
	}

	t.Run("openai", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewOpenAI(t)
		srv.Push(llmtest.Text("hel", "lo"))
		r := registry.New(registry.Config{
			Getenv:    env("OPENAI_API_KEY", "sk-from-env", "WEFT_OPENAI_BASE_URL", srv.URL+"/v1"),
			Providers: map[string]registry.ProviderConfig{"openai": {APIKey: "sk-test", Headers: map[string]string{"X-Team": "core"}}},
		})
		p, info, err := r.Resolve("openai:gpt-4.1")
		if err != nil {
			t.Fatal(err)
		}
		if !info.Known || info.ContextWindow != 1_047_576 {
			t.Errorf("info = %+v", info)
		}
		res := llm.Collect(p.Stream(ctx, req(info.ID)))
		if res.Outcome.Status != llm.StatusCompleted || res.Message.Text() != "hello" {
			t.Fatalf("result = %+v", res)
		}
		got := srv.LastRequest()
		if got.Path != "/v1/chat/completions" || got.Header.Get("Authorization") != "Bearer sk-test" || got.Header.Get("X-Team") != "core" {
			t.Fatalf("request = %s %v", got.Path, got.Header)
		}
		if m := got.JSON()["model"]; m != "gpt-4.1" {
			t.Fatalf("model sent = %v", m)
		}
	})

	t.Run("ollama tag via OLLAMA_HOST", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewOpenAI(t, llmtest.OpenAIWholeToolCalls())
		srv.Push(llmtest.Text("ok"))
		r := registry.New(registry.Config{Getenv: env("OLLAMA_HOST", strings.TrimPrefix(srv.URL, "http://"))})
		p, info, err := r.Resolve("ollama:qwen3:8b")
		if err != nil {
			t.Fatal(err)
		}
		res := llm.Collect(p.Stream(ctx, req(info.ID)))
		if res.Outcome.Status != llm.StatusCompleted || res.Message.Text() != "ok" || !info.Known || !info.Thinking {
			t.Fatalf("result = %+v, info = %+v", res, info)
		}
		got := srv.LastRequest()
		if got.Path != "/v1/chat/completions" || got.Header.Get("Authorization") != "" || got.JSON()["model"] != "qwen3:8b" {
			t.Fatalf("request = %s %v %s", got.Path, got.Header, got.Body)
		}
	})

	t.Run("anthropic bearer token", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewAnthropic(t)
		srv.Push(llmtest.Text("hey"))
		r := registry.New(registry.Config{Getenv: env(
			"ANTHROPIC_AUTH_TOKEN", "gateway-token", "ANTHROPIC_API_KEY", "sk-ant-unused", "ANTHROPIC_BASE_URL", srv.URL)})
		p, info, err := r.Resolve("claude-sonnet-4-5-20250929")
		if err != nil {
			t.Fatal(err)
		}
		res := llm.Collect(p.Stream(ctx, req(info.ID)))
		if res.Outcome.Status != llm.StatusCompleted || res.Message.Text() != "hey" {
			t.Fatalf("result = %+v", res)
		}
		got := srv.LastRequest()
		if got.Header.Get("Authorization") != "Bearer gateway-token" || got.Header.Get("X-Api-Key") != "" {
			t.Fatalf("headers = %v", got.Header)
		}
	})

	t.Run("gemini key", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewGemini(t)
		srv.Push(llmtest.Text("yo"))
		r := registry.New(registry.Config{Getenv: env("GOOGLE_API_KEY", "g-key", "GOOGLE_GEMINI_BASE_URL", srv.URL)})
		p, info, err := r.Resolve("gemini-2.5-flash")
		if err != nil {
			t.Fatal(err)
		}
		res := llm.Collect(p.Stream(ctx, req(info.ID)))
		if res.Outcome.Status != llm.StatusCompleted || res.Message.Text() != "yo" {
			t.Fatalf("result = %+v", res)
		}
		got := srv.LastRequest()
		if !strings.HasPrefix(got.Path, "/v1beta/models/gemini-2.5-flash:streamGenerateContent") || got.Header.Get("X-Goog-Api-Key") != "g-key" {
			t.Fatalf("request = %s %v", got.Path, got.Header)
		}
	})

	t.Run("custom OpenAI-compatible provider", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewOpenAI(t)
		srv.Push(llmtest.Text("from together"))
		r := registry.New(registry.Config{Getenv: env("WEFT_TOGETHER_BASE_URL", srv.URL+"/v1", "WEFT_TOGETHER_API_KEY", "tg-key")})
		r.Register("together", registry.OpenAICompatible)
		p, info, err := r.Resolve("together:meta-llama/Llama-3.3-70B-Instruct-Turbo")
		if err != nil {
			t.Fatal(err)
		}
		res := llm.Collect(p.Stream(ctx, req(info.ID)))
		if p.Name() != "together" || res.Outcome.Status != llm.StatusCompleted || res.Message.Text() != "from together" {
			t.Fatalf("name %s, result = %+v", p.Name(), res)
		}
		got := srv.LastRequest()
		body := got.JSON()
		if got.Header.Get("Authorization") != "Bearer tg-key" || body["max_tokens"] != float64(64) || body["model"] != "meta-llama/Llama-3.3-70B-Instruct-Turbo" {
			t.Fatalf("request = %v %s", got.Header, got.Body)
		}

		r.Register("groq", registry.OpenAICompatible)
		if _, err := r.Provider("groq"); err == nil || !strings.Contains(err.Error(), "WEFT_GROQ_BASE_URL") {
			t.Fatalf("OpenAICompatible without a base URL: %v", err)
		}
	})

	t.Run("key pool rotates and cools down", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewOpenAI(t)
		srv.Push(llmtest.Script{Status: 429, RetryAfter: time.Hour}, llmtest.Text("second key"))
		r := registry.New(registry.Config{Getenv: env(
			"DEEPSEEK_API_KEY", "sk-first-aaaaaaaa,sk-second-bbbbbbb",
			"WEFT_DEEPSEEK_BASE_URL", srv.URL+"/v1")})
		p, info, err := r.Resolve("deepseek-chat")
		if err != nil {
			t.Fatal(err)
		}
		if res := llm.Collect(p.Stream(ctx, req(info.ID))); res.Outcome.Status != llm.StatusTimeout {
			t.Fatalf("first call outcome = %+v", res.Outcome)
		}
		// Resolving again gives the same provider and so the same pool.
		p2, _, _ := r.Resolve("deepseek:deepseek-chat")
		if res := llm.Collect(p2.Stream(ctx, req(info.ID))); res.Outcome.Status != llm.StatusCompleted {
			t.Fatalf("second call outcome = %+v", res.Outcome)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 || reqs[0].Header.Get("Authorization") != "Bearer sk-first-aaaaaaaa" || reqs[1].Header.Get("Authorization") != "Bearer sk-second-bbbbbbb" {
			t.Fatalf("keys used: %q, %q", reqs[0].Header.Get("Authorization"), reqs[1].Header.Get("Authorization"))
		}
		h := r.KeyHealth("deepseek")
		if len(h) != 2 || h[0].State != llm.KeyCooling || h[0].Key != "sk-f...aaaa" || h[1].State != llm.KeyOK {
			t.Fatalf("KeyHealth = %+v", h)
		}
	})
}

// TestConcurrentResolve runs with -race: many goroutines resolving,
// registering and reading health at once must build each provider once.
func TestConcurrentResolve(t *testing.T) {
	t.Parallel()
	r := registry.New(registry.Config{Getenv: env("OPENAI_API_KEY", "sk-1,sk-2", "ANTHROPIC_API_KEY", "a", "GEMINI_API_KEY", "g")})
	var builds atomic.Int32
	r.Register("acme", func(name string, ep llm.Endpoint, pc registry.ProviderConfig) (llm.Provider, error) {
		builds.Add(1)
		time.Sleep(time.Millisecond) // widen the window for a double build
		return &fake{name: name}, nil
	})
	specs := []string{"openai:gpt-4.1", "claude-sonnet-4-5", "gemini-2.5-pro", "ollama:llama3.3:70b", "acme:x", "gpt-5-mini"}
	seen := make([]sync.Map, len(specs))
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 50 {
				k := (g + i) % len(specs)
				p, info, err := r.Resolve(specs[k])
				if err != nil {
					t.Error(err)
					return
				}
				seen[k].Store(p, true)
				_ = info.Cost(llm.Usage{InputTokens: 10})
				_ = r.KeyHealth("openai")
				_ = r.Names()
				if i%10 == 0 {
					r.Catalog().Add(llm.ModelInfo{Provider: "acme", ID: fmt.Sprint("m", g)})
					r.Register(fmt.Sprint("extra", g), func(name string, ep llm.Endpoint, pc registry.ProviderConfig) (llm.Provider, error) {
						return &fake{name: name}, nil
					})
				}
			}
		})
	}
	wg.Wait()
	for k := range specs {
		n := 0
		seen[k].Range(func(any, any) bool { n++; return true })
		if n != 1 {
			t.Errorf("%s resolved to %d distinct providers, want 1", specs[k], n)
		}
	}
	if builds.Load() != 1 {
		t.Errorf("acme built %d times, want 1", builds.Load())
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"anthropic:claude-sonnet-4-5", "ollama:llama3.3:70b", "llama3.3:70b", "", ":", "openai:", "gpt-4o", " o3 ", "x:y:z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		p, m, err := registry.ParseSpec(spec)
		if err != nil {
			if p != "" || m != "" {
				t.Fatalf("ParseSpec(%q) returned %q, %q with error %v", spec, p, m, err)
			}
			return
		}
		if m == "" || !slices.Contains(registry.BuiltinNames(), p) {
			t.Fatalf("ParseSpec(%q) = %q, %q", spec, p, m)
		}
		if !strings.Contains(spec, m) {
			t.Fatalf("ParseSpec(%q) invented model %q", spec, m)
		}
		// Writing the spec out in full parses back to the same thing.
		if p2, m2, err := registry.ParseSpec(p + ":" + m); err != nil || p2 != p || m2 != m {
			t.Fatalf("ParseSpec(%q) = %q, %q, %v; want %q, %q", p+":"+m, p2, m2, err, p, m)
		}
	})
}

// TestNoPromptCache: the registry-wide switch reaches the providers that
// cache on request (Anthropic's cache_control, OpenAI's prompt_cache_key).
func TestNoPromptCache(t *testing.T) {
	t.Parallel()
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprint("off=", off), func(t *testing.T) {
			t.Parallel()
			ant, oai := llmtest.NewAnthropic(t), llmtest.NewOpenAI(t)
			ant.Push(llmtest.Text("ok"))
			oai.Push(llmtest.Text("ok"))
			r := registry.New(registry.Config{NoPromptCache: off, Getenv: env(
				"ANTHROPIC_API_KEY", "k", "ANTHROPIC_BASE_URL", ant.URL, "OPENAI_API_KEY", "k", "OPENAI_BASE_URL", oai.URL+"/v1")})
			for _, spec := range []string{"anthropic:claude-sonnet-4-5", "openai:gpt-4.1"} {
				p, info, err := r.Resolve(spec)
				if err != nil {
					t.Fatal(err)
				}
				req := &llm.Request{Model: info.ID, System: llm.SystemText("Be brief."), Messages: []llm.Message{llm.UserText("hi")}, CacheKey: "weft-k"}
				if res := llm.Collect(p.Stream(context.Background(), req)); res.Outcome.Status != llm.StatusCompleted {
					t.Fatalf("%s: %+v", spec, res.Outcome)
				}
			}
			a, o := ant.LastRequest(), oai.LastRequest()
			if got := strings.Contains(string(a.Body), "cache_control"); got == off {
				t.Errorf("anthropic cache_control sent = %v with NoPromptCache %v: %s", got, off, a.Body)
			}
			if _, got := o.JSON()["prompt_cache_key"]; got == off {
				t.Errorf("openai prompt_cache_key sent = %v with NoPromptCache %v: %s", got, off, o.Body)
			}
		})
	}
}
