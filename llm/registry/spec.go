package registry

import (
	"fmt"
	"strings"
)

// specExample is the form every spec error suggests.
const specExample = "e.g. anthropic:claude-sonnet-4-5, openai:gpt-4.1, ollama:llama3.3:70b"

// ParseSpec splits a model spec into provider and model, knowing the
// built-in provider names (Registry.Resolve also knows registered ones).
//
// The spec is "provider:model", split at the first ':' only when what
// precedes it is a provider name, because model names contain ':' too
// (ollama:llama3.3:70b). A bare model name implies its provider by prefix:
// claude-* is anthropic; gpt-*, chatgpt-*, o1*, o3*, o4* are openai;
// gemini-* is gemini; deepseek-* is deepseek; MiniMax-* is minimax;
// qwen-*, qwen3-*, qwq-* are dashscope; glm-* is zhipu; kimi-* and
// moonshot-* are moonshot. A bare name containing ':'
// implies nothing, since that is how local servers tag models (gpt-oss:20b
// is not OpenAI's).
func ParseSpec(spec string) (provider, model string, err error) {
	return parseSpec(spec, func(n string) bool {
		_, ok := builtinFor(n)
		return ok
	}, builtinNames)
}

func parseSpec(spec string, known func(string) bool, names func() []string) (string, string, error) {
	s := strings.TrimSpace(spec)
	if s == "" {
		return "", "", fmt.Errorf("empty model spec: want provider:model, %s", specExample)
	}
	if prefix, model, ok := strings.Cut(s, ":"); ok {
		p := normName(prefix)
		switch {
		case p == "":
			return "", "", fmt.Errorf("model spec %q names no provider: want provider:model (providers: %s)", spec, strings.Join(names(), ", "))
		case known(p):
			if model = strings.TrimSpace(model); model == "" {
				return "", "", fmt.Errorf("model spec %q names no model: want %s:MODEL", spec, p)
			}
			return p, model, nil
		}
		return "", "", fmt.Errorf("%w %q in model spec %q (known: %s; a model whose name has ':' needs its provider first, e.g. ollama:llama3.3:70b)",
			ErrUnknownProvider, prefix, spec, strings.Join(names(), ", "))
	}
	if p := inferProvider(s); p != "" && known(p) {
		return p, s, nil
	}
	return "", "", fmt.Errorf("model spec %q: %w: the model name does not imply one; write provider:model (providers: %s), %s",
		spec, ErrUnknownProvider, strings.Join(names(), ", "), specExample)
}

// inferProvider is the provider a bare model name implies, or "".
func inferProvider(model string) string {
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(model, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("claude-"):
		return "anthropic"
	case has("gpt-", "chatgpt-", "o1", "o3", "o4"):
		return "openai"
	case has("gemini-"):
		return "gemini"
	case has("deepseek-"):
		return "deepseek"
	case has("MiniMax-", "minimax-"):
		return "minimax"
	case has("qwen-", "qwen3-", "qwq-"):
		return "dashscope"
	case has("glm-"):
		return "zhipu"
	case has("kimi-", "moonshot-"):
		return "moonshot"
	}
	return ""
}
