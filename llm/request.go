package llm

import "encoding/json"

// ThinkingLevel is a provider-neutral reasoning effort. Each provider maps it
// onto its own knob (Anthropic budget_tokens, OpenAI reasoning_effort, Gemini
// thinkingBudget).
type ThinkingLevel string

const (
	ThinkingNone   ThinkingLevel = "none"
	ThinkingLow    ThinkingLevel = "low"
	ThinkingMedium ThinkingLevel = "medium"
	ThinkingHigh   ThinkingLevel = "high"
	ThinkingXHigh  ThinkingLevel = "xhigh"
)

// ParseThinkingLevel accepts "" (meaning none) and the five level names.
func ParseThinkingLevel(s string) (ThinkingLevel, bool) {
	switch ThinkingLevel(s) {
	case "":
		return ThinkingNone, true
	case ThinkingNone, ThinkingLow, ThinkingMedium, ThinkingHigh, ThinkingXHigh:
		return ThinkingLevel(s), true
	}
	return "", false
}

// ThinkingBudget is the token budget a level stands for on providers that
// take a budget rather than an effort name. Zero means thinking is off.
func (l ThinkingLevel) Budget() int {
	switch l {
	case ThinkingLow:
		return 2048
	case ThinkingMedium:
		return 8192
	case ThinkingHigh:
		return 16384
	case ThinkingXHigh:
		return 32768
	}
	return 0
}

// ToolChoiceMode says whether and how the model must call tools.
type ToolChoiceMode string

const (
	ToolChoiceAuto ToolChoiceMode = "" // the model decides (the default)
	ToolChoiceAny  ToolChoiceMode = "any"
	ToolChoiceNone ToolChoiceMode = "none"
	ToolChoiceTool ToolChoiceMode = "tool" // must call Name
)

// ToolChoice constrains tool calling. The zero value is "auto".
type ToolChoice struct {
	Mode ToolChoiceMode `json:"mode,omitempty"`
	Name string         `json:"name,omitempty"`
	// DisableParallel asks for at most one tool call per turn.
	DisableParallel bool `json:"disable_parallel,omitempty"`
}

// CacheMode says whether a provider may cache the request's prompt prefix.
type CacheMode string

const (
	// CacheAuto (the zero value) lets the provider cache as it does best:
	// Anthropic gets cache breakpoints on the tools, the system prompt and
	// the last two user turns (see llm/anthropic), OpenAI gets
	// Request.CacheKey as its prompt_cache_key, Gemini caches implicitly.
	CacheAuto CacheMode = ""
	// CacheOff asks for no caching: no breakpoints (CacheHint is ignored
	// too) and no cache key. For one-shot calls, where a cache write costs
	// more (Anthropic: 1.25x input) and nothing reads it back.
	CacheOff CacheMode = "off"
)

// ParseCacheMode accepts "", "auto", "on" and "off".
func ParseCacheMode(s string) (CacheMode, bool) {
	switch s {
	case "", "auto", "on":
		return CacheAuto, true
	case "off":
		return CacheOff, true
	}
	return "", false
}

// ToolSpec declares a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
	// CacheHint asks for the tool list up to this tool to be cached.
	CacheHint bool `json:"cache_hint,omitempty"`
}

// Request is one model call. Zero values mean "provider default", except
// MaxTokens, where zero means the catalogue's max output for the model.
type Request struct {
	Model string `json:"model"`
	// System holds the system prompt as text blocks; CacheHint on a block
	// marks a cache breakpoint.
	System        []Block       `json:"system,omitempty"`
	Messages      []Message     `json:"messages"`
	Tools         []ToolSpec    `json:"tools,omitempty"`
	ToolChoice    ToolChoice    `json:"tool_choice,omitzero"`
	MaxTokens     int           `json:"max_tokens,omitempty"`
	Temperature   *float64      `json:"temperature,omitempty"`
	TopP          *float64      `json:"top_p,omitempty"`
	TopK          *int          `json:"top_k,omitempty"`
	StopSequences []string      `json:"stop_sequences,omitempty"`
	Thinking      ThinkingLevel `json:"thinking,omitempty"`
	// Cache says whether the provider may cache the prompt prefix; see
	// CacheMode. A prefix is only reused if it is byte-for-byte the same,
	// so callers keep System, Tools (and their order) and earlier messages
	// unchanged from one call of a conversation to the next.
	Cache CacheMode `json:"cache,omitempty"`
	// CacheKey names the conversation, for providers that route requests
	// to a cache by key (OpenAI's prompt_cache_key): requests with one key
	// and a common prefix land where that prefix is cached. Empty sends
	// none.
	CacheKey string `json:"cache_key,omitempty"`
}

// SystemText is a convenience for a single uncached system prompt.
func SystemText(s string) []Block {
	if s == "" {
		return nil
	}
	return []Block{Text(s)}
}

// Float and Int return pointers, for the optional sampling fields.
func Float(v float64) *float64 { return &v }
func Int(v int) *int           { return &v }
