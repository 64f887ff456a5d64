package registry

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/gemini"
	"github.com/weft-run/weft/llm/openai"
)

// builtin is what the registry knows about a built-in provider's
// environment.
type builtin struct {
	// keyEnv are the vendor's key variables, first set wins.
	keyEnv []string
	// bearerEnv holds a bearer token that, when set, wins over keyEnv.
	bearerEnv string
	// baseEnv is the vendor's base URL variable; ollamaHost marks it as
	// OLLAMA_HOST, which is a host rather than a URL.
	baseEnv    string
	ollamaHost bool
	// needsKey: the public service rejects unauthenticated calls, so a
	// missing key is reported at resolution rather than as a 401 mid-run.
	needsKey bool
	// otherRegion is the service's other endpoint, named when a key is
	// refused: keys of one region do not work in the other.
	otherRegion string
}

// builtinFor is a function rather than a map so that the table is not
// package-level mutable state.
func builtinFor(name string) (builtin, bool) {
	switch name {
	case "anthropic":
		return builtin{keyEnv: []string{"ANTHROPIC_API_KEY"}, bearerEnv: "ANTHROPIC_AUTH_TOKEN", baseEnv: "ANTHROPIC_BASE_URL", needsKey: true}, true
	case "openai":
		return builtin{keyEnv: []string{"OPENAI_API_KEY"}, baseEnv: "OPENAI_BASE_URL", needsKey: true}, true
	case "openrouter":
		return builtin{keyEnv: []string{"OPENROUTER_API_KEY"}, needsKey: true}, true
	case "deepseek":
		return builtin{keyEnv: []string{"DEEPSEEK_API_KEY"}, needsKey: true}, true
	case "gemini":
		return builtin{keyEnv: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, baseEnv: "GOOGLE_GEMINI_BASE_URL", needsKey: true}, true
	case "ollama":
		return builtin{baseEnv: "OLLAMA_HOST", ollamaHost: true}, true
	case "lmstudio":
		return builtin{baseEnv: "LMSTUDIO_BASE_URL"}, true
	case "vllm":
		return builtin{keyEnv: []string{"VLLM_API_KEY"}, baseEnv: "VLLM_BASE_URL"}, true
	// The Chinese services (seed 000's providers): each platform's
	// mainland endpoint by default; their international twins take keys
	// of their own and a base URL (WEFT_<NAME>_BASE_URL), named in the
	// hint of an auth error.
	case "minimax":
		return builtin{keyEnv: []string{"MINIMAX_API_KEY"}, needsKey: true,
			otherRegion: "https://api.minimax.io/anthropic (platform.minimax.io)"}, true
	case "dashscope":
		return builtin{keyEnv: []string{"DASHSCOPE_API_KEY"}, needsKey: true,
			otherRegion: "https://dashscope-intl.aliyuncs.com/compatible-mode/v1 (Alibaba Cloud Model Studio, international)"}, true
	case "zhipu":
		return builtin{keyEnv: []string{"ZHIPUAI_API_KEY"}, needsKey: true,
			otherRegion: "https://api.z.ai/api/paas/v4 (Z.ai)"}, true
	case "moonshot":
		return builtin{keyEnv: []string{"MOONSHOT_API_KEY"}, needsKey: true,
			otherRegion: "https://api.moonshot.ai/v1 (platform.moonshot.ai)"}, true
	}
	return builtin{}, false
}

// MiniMaxBaseURL is MiniMax's Anthropic-compatible endpoint (mainland
// China; /v1/messages is appended). The international one is
// https://api.minimax.io/anthropic.
const MiniMaxBaseURL = "https://api.minimaxi.com/anthropic"

func builtinNames() []string {
	return []string{"anthropic", "dashscope", "deepseek", "gemini", "lmstudio", "minimax", "moonshot", "ollama", "openai", "openrouter", "vllm", "zhipu"}
}

// BuiltinNames lists the providers every Registry starts with, sorted.
func BuiltinNames() []string { return builtinNames() }

// CredentialVariables lists every environment variable a Registry may
// read a credential from, for the built-in providers: weft's own
// WEFT_<PROVIDER>_API_KEY and the vendors' key and token variables. weft
// keeps them out of the processes it starts for the model and redacts
// their values.
func CredentialVariables() []string {
	var out []string
	for _, name := range builtinNames() {
		b, _ := builtinFor(name)
		out = append(out, weftVar(name, "API_KEY"))
		out = append(out, b.keyEnv...)
		if b.bearerEnv != "" {
			out = append(out, b.bearerEnv)
		}
	}
	return out
}

// builtinFactory builds a built-in provider, after checking that it has the
// credentials it needs.
func builtinFactory(name string) Factory {
	b, _ := builtinFor(name)
	return func(name string, ep llm.Endpoint, pc ProviderConfig) (llm.Provider, error) {
		if b.needsKey && ep.APIKey == "" && ep.Keys.Len() == 0 && pc.BearerToken == "" && pc.BaseURL == "" {
			return nil, missingKey(name, b)
		}
		switch name {
		case "anthropic":
			cfg := anthropic.Config{Endpoint: ep, NoPromptCache: pc.NoPromptCache}
			if pc.BearerToken != "" {
				cfg.APIKey, cfg.Keys, cfg.BearerAuth = pc.BearerToken, nil, true
			}
			return anthropic.New(cfg), nil
		case "minimax":
			// MiniMax's Anthropic-compatible endpoint: thinking and
			// cache_control as Anthropic's; images are not accepted
			// (the catalogue says so, and the agent describes them).
			if ep.BaseURL == "" {
				ep.BaseURL = MiniMaxBaseURL
			}
			cfg := anthropic.Config{Endpoint: ep, NoPromptCache: pc.NoPromptCache}
			if pc.BearerToken != "" {
				cfg.APIKey, cfg.Keys, cfg.BearerAuth = pc.BearerToken, nil, true
			}
			return named(anthropic.New(cfg), name, b), nil
		case "gemini":
			if pc.BearerToken != "" && pc.BaseURL == "" {
				return nil, errors.New("a bearer token selects Vertex AI, which needs the base URL set to the publisher URL, " +
					"e.g. https://us-central1-aiplatform.googleapis.com/v1/projects/PROJECT/locations/us-central1/publishers/google")
			}
			return gemini.New(gemini.Config{Endpoint: ep, BearerToken: pc.BearerToken}), nil
		}
		cfg, ok := openai.PresetConfig(name, ep)
		if !ok {
			return nil, fmt.Errorf("no OpenAI-compatible preset named %q", name)
		}
		cfg.NoPromptCache = pc.NoPromptCache
		if b.otherRegion != "" {
			return named(openai.New(cfg), name, b), nil
		}
		return openai.New(cfg), nil
	}
}

// OpenAICompatible is a Factory for any server that speaks OpenAI's Chat
// Completions (Together, Groq, Fireworks, a LiteLLM proxy, ...): register it
// under a new name and give that name a BaseURL (with /v1) in
// Config.Providers or WEFT_<NAME>_BASE_URL. It sends max_tokens, which
// every compatible server reads.
func OpenAICompatible(name string, ep llm.Endpoint, pc ProviderConfig) (llm.Provider, error) {
	if ep.BaseURL == "" {
		return nil, fmt.Errorf("an OpenAI-compatible provider needs a base URL: set it in the provider's config or in %s", weftVar(name, "BASE_URL"))
	}
	return openai.New(openai.Config{Endpoint: ep, Name: name, MaxTokensField: "max_tokens", NoPromptCache: pc.NoPromptCache}), nil
}

func missingKey(name string, b builtin) error {
	vars := append([]string{weftVar(name, "API_KEY")}, b.keyEnv...)
	if b.bearerEnv != "" {
		vars = append(vars, b.bearerEnv)
	}
	msg := fmt.Sprintf("no API key configured: set %s (or %s), or configure the provider's API key",
		b.keyEnv[0], strings.Join(slicesWithout(vars, b.keyEnv[0]), ", "))
	return &llm.Error{Provider: name, Category: llm.CategoryAuth, Message: msg, Hint: llm.HintFor(llm.CategoryAuth), Err: llm.ErrNoKey}
}

func slicesWithout(s []string, drop string) []string {
	out := make([]string, 0, len(s))
	for _, v := range s {
		if v != drop {
			out = append(out, v)
		}
	}
	return out
}

// weftVar is weft's own variable for a provider setting: WEFT_OPENAI_API_KEY.
// Characters that cannot appear in a variable name become '_'.
func weftVar(provider, setting string) string {
	var b strings.Builder
	b.WriteString("WEFT_")
	for _, c := range strings.ToUpper(provider) {
		if c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	b.WriteByte('_')
	b.WriteString(setting)
	return b.String()
}

// effective merges name's explicit configuration with the environment:
// explicit, then WEFT_<NAME>_*, then the vendor's variables. Credentials are
// taken from the first of those levels that has any.
func (r *Registry) effective(name string) ProviderConfig {
	pc := r.providers[name]
	pc.NoPromptCache = pc.NoPromptCache || r.noPromptCache
	b, _ := builtinFor(name)
	env := func(k string) string { return strings.TrimSpace(r.getenv(k)) }

	pc.BaseURL = strings.TrimSpace(pc.BaseURL)
	if pc.BaseURL == "" {
		if v := env(weftVar(name, "BASE_URL")); v != "" {
			pc.BaseURL = v
		} else if b.baseEnv != "" {
			if v := env(b.baseEnv); v != "" {
				pc.BaseURL = v
				if b.ollamaHost {
					pc.BaseURL = ollamaBaseURL(v)
				}
			}
		}
	}

	if pc.APIKey == "" && len(pc.APIKeys) == 0 && pc.BearerToken == "" {
		if v := env(weftVar(name, "API_KEY")); v != "" {
			pc.APIKey = v
		} else {
			// A gateway token is the more deliberate setting: people keep
			// an API key in their shell profile and set the token per
			// project.
			if b.bearerEnv != "" {
				pc.BearerToken = env(b.bearerEnv)
			}
			for _, k := range b.keyEnv {
				if pc.BearerToken != "" {
					break
				}
				if v := env(k); v != "" {
					pc.APIKey = v
					break
				}
			}
		}
	}

	keys := splitKeys(append([]string{pc.APIKey}, pc.APIKeys...))
	pc.APIKey, pc.APIKeys = "", nil
	switch len(keys) {
	case 0:
	case 1:
		pc.APIKey = keys[0]
	default:
		pc.APIKeys = keys
	}
	return pc
}

// splitKeys splits comma-separated values, trims, and drops empties and
// duplicates, keeping order.
func splitKeys(vals []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range vals {
		for k := range strings.SplitSeq(v, ",") {
			k = strings.TrimSpace(k)
			if k == "" || seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// ollamaBaseURL turns OLLAMA_HOST, which the ollama CLI reads as
// [scheme://]host[:port][/path] with port 11434 by default, into the base
// URL of its OpenAI-compatible API.
func ollamaBaseURL(host string) string {
	scheme, rest, ok := strings.Cut(host, "://")
	if !ok {
		scheme, rest = "http", host
	}
	hostport, path, _ := strings.Cut(rest, "/")
	if !ok {
		// Only a bare host gets ollama's default port: with a scheme, the
		// scheme's own port is meant (https://ollama.example.com).
		if _, _, err := net.SplitHostPort(hostport); err != nil {
			h := strings.Trim(hostport, "[]")
			if h == "" {
				h = "127.0.0.1"
			}
			hostport = net.JoinHostPort(h, "11434")
		} else if strings.HasPrefix(hostport, ":") {
			hostport = "127.0.0.1" + hostport
		}
	}
	u := scheme + "://" + hostport
	if path = strings.Trim(path, "/"); path != "" {
		u += "/" + path
	}
	if !strings.HasSuffix(u, "/v1") {
		u += "/v1"
	}
	return u
}
