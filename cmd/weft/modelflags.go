package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/cassette"
	"github.com/weft-run/weft/llm/registry"
)

// modelFlags are the flags every command that talks to a model shares.
type modelFlags struct {
	model         string
	baseURL       string
	apiKey        string
	cassette      string
	cassetteMode  string
	models        string
	noPromptCache bool
	// reg is the registry resolve built, for further models of the same
	// command (--vision-model: same keys, HTTP client and cassette) and
	// for its key pools (chat's /ratelimit).
	reg *registry.Registry
}

func (m *modelFlags) register(f *pflag.FlagSet) {
	f.StringVarP(&m.model, "model", "m", "", "provider:model, e.g. anthropic:claude-sonnet-4-5, openai:gpt-4.1, ollama:llama3.3 (default $WEFT_MODEL, else inferred from the API keys set)")
	f.StringVar(&m.baseURL, "base-url", "", "override the provider's base URL (a proxy, a local server)")
	f.StringVar(&m.apiKey, "api-key", "", "API key (default: the provider's environment variable)")
	f.StringVar(&m.cassette, "cassette", "", "record model exchanges to this JSONL file, or replay them when it exists")
	f.StringVar(&m.cassetteMode, "cassette-mode", "auto", "cassette mode: auto|record|replay")
	f.StringVar(&m.models, "models", "", "models file (JSON, see docs/models.md) adding or overriding catalogue entries: context windows, output limits, prices, capabilities; applied over ~/.weft/models.json (default $WEFT_MODELS)")
	f.BoolVar(&m.noPromptCache, "no-prompt-cache", false, "do not ask providers to cache the prompt prefix (Anthropic cache_control, OpenAI prompt_cache_key); on by default, it makes long sessions much cheaper (or $WEFT_NO_PROMPT_CACHE=1)")
}

// modelsFileName is the user's own models file, under $HOME.
var modelsFileName = filepath.Join(".weft", "models.json")

// loadCatalog is the built-in catalogue with the user's models files
// applied: ~/.weft/models.json when it exists, then path (--models, else
// $WEFT_MODELS), which must.
func loadCatalog(getenv func(string) string, path string) (*llm.Catalog, error) {
	cat := llm.DefaultCatalog()
	opts := llm.LoadOptions{Providers: registry.BuiltinNames()}
	if home := getenv("HOME"); home != "" {
		if err := cat.LoadFile(filepath.Join(home, modelsFileName), opts); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if path == "" {
		path = getenv("WEFT_MODELS")
	}
	if path != "" {
		if err := cat.LoadFile(path, opts); err != nil {
			return nil, err
		}
	}
	return cat, nil
}

// registryConfig is the part of the registry's configuration every front
// door shares: the environment, the catalogue with the models files, the
// prompt-cache switch.
func (m *modelFlags) registryConfig(getenv func(string) string) (registry.Config, error) {
	cat, err := loadCatalog(getenv, m.models)
	if err != nil {
		return registry.Config{}, err
	}
	noCache := m.noPromptCache
	if v := getenv("WEFT_NO_PROMPT_CACHE"); !noCache && v != "" {
		if noCache, err = strconv.ParseBool(v); err != nil {
			return registry.Config{}, fmt.Errorf("WEFT_NO_PROMPT_CACHE %q: want true or false", v)
		}
	}
	return registry.Config{Getenv: getenv, Providers: map[string]registry.ProviderConfig{}, Catalog: cat, NoPromptCache: noCache}, nil
}

// resolve builds the provider. close releases the cassette, if any.
func (m *modelFlags) resolve(env environ) (p llm.Provider, info llm.ModelInfo, close func() error, err error) {
	close = func() error { return nil }
	spec := m.model
	if spec == "" {
		spec = defaultModel(env.getenv)
	}
	if spec == "" {
		return nil, info, close, errors.New("no model: pass --model provider:model (e.g. ollama:llama3.3) or set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY")
	}
	cfg, err := m.registryConfig(env.getenv)
	if err != nil {
		return nil, info, close, err
	}
	if m.baseURL != "" || m.apiKey != "" {
		name, _, err := registry.ParseSpec(spec)
		if err != nil {
			return nil, info, close, err
		}
		cfg.Providers[name] = registry.ProviderConfig{BaseURL: m.baseURL, APIKey: m.apiKey}
	}
	if m.cassette != "" {
		mode, err := cassette.ParseMode(m.cassetteMode)
		if err != nil {
			return nil, info, close, fmt.Errorf("--cassette-mode: %w", err)
		}
		c, err := cassette.Open(m.cassette, mode)
		if err != nil {
			return nil, info, close, err
		}
		close = c.Close
		cfg.HTTPClient = c.Client(nil)
		if c.Mode() == cassette.Replay {
			// A replay needs no real key; the recording holds none either.
			for _, name := range registry.BuiltinNames() {
				pc := cfg.Providers[name]
				if pc.APIKey == "" {
					pc.APIKey = "cassette-replay"
				}
				cfg.Providers[name] = pc
			}
		}
	}
	m.reg = registry.New(cfg)
	p, info, err = m.reg.Resolve(spec)
	if err != nil {
		close()
		return nil, info, func() error { return nil }, err
	}
	return p, info, close, nil
}

// defaultModel picks a model from what the environment has keys for, so that
// a person with one key set need not name a model.
func defaultModel(getenv func(string) string) string {
	if m := getenv("WEFT_MODEL"); m != "" {
		return m
	}
	switch {
	case getenv("ANTHROPIC_API_KEY") != "" || getenv("ANTHROPIC_AUTH_TOKEN") != "":
		return "anthropic:claude-sonnet-4-5"
	case getenv("OPENAI_API_KEY") != "":
		return "openai:gpt-4.1"
	case getenv("GEMINI_API_KEY") != "" || getenv("GOOGLE_API_KEY") != "":
		return "gemini:gemini-2.5-flash"
	case getenv("OLLAMA_HOST") != "":
		return "ollama:llama3.3"
	}
	return ""
}
