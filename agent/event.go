package agent

import (
	"encoding/json"

	"github.com/weft-run/weft/llm"
)

// EventType names an event. The names and the JSON of each payload are the
// wire format of the HTTP API's SSE streams (seed 000), so every front door
// shows the same thing.
type EventType string

const (
	EventTurnStart     EventType = "turn_start"
	EventTextDelta     EventType = "text_delta"
	EventText          EventType = "text"
	EventThinkingDelta EventType = "thinking_delta"
	EventThinking      EventType = "thinking"
	EventToolUse       EventType = "tool_use"
	EventToolProgress  EventType = "tool_progress"
	EventToolResult    EventType = "tool_result"
	EventAskUser       EventType = "ask_user"
	EventTodos         EventType = "todos"
	EventRetry         EventType = "retry"
	EventGuardrail     EventType = "guardrail"
	EventTurnEnd       EventType = "turn_end"
	EventDone          EventType = "done"
	EventError         EventType = "error"
	// EventCompaction (CompactionData) and EventTokenWarning
	// (TokenWarningData) report the context window's management
	// (context.go).
	EventCompaction   EventType = "compaction"
	EventTokenWarning EventType = "token_warning"
)

// Event is one observable step of a run. Data holds the typed payload for
// the type (TextData for text_delta, ToolUseData for tool_use, ...); switch
// on its dynamic type or on Type.
type Event struct {
	Type EventType
	Data any
}

// MarshalJSON renders the payload alone, as SSE data lines carry it.
func (e Event) MarshalJSON() ([]byte, error) { return json.Marshal(e.Data) }

// TextData is the payload of text_delta, text, thinking_delta and thinking.
type TextData struct {
	Text string `json:"text"`
}

// TurnStartData opens a model turn (one model call).
type TurnStartData struct {
	TurnNumber int    `json:"turn_number"`
	Model      string `json:"model"`
}

// ToolUseData is a complete tool call from the model.
type ToolUseData struct {
	ID       string          `json:"id"`
	ToolName string          `json:"tool_name"`
	Input    json.RawMessage `json:"input"`
}

// ToolProgressData is a line of progress from a running tool.
type ToolProgressData struct {
	ID       string `json:"id"`
	ToolName string `json:"tool_name"`
	Detail   string `json:"detail"`
}

// ToolResultData is the result of a tool call, as the model will see it.
type ToolResultData struct {
	ID       string         `json:"id"`
	ToolName string         `json:"tool_name"`
	Output   string         `json:"output"`
	IsError  bool           `json:"is_error"`
	Content  []llm.Block    `json:"content,omitempty"` // when it holds more than text (images)
	Data     map[string]any `json:"data,omitempty"`
	// Denied is set when the call never ran because approval was refused.
	Denied bool `json:"denied,omitempty"`
	// Stage is the policy stage that refused a denied call (deny_rule,
	// human, hook, guardrail, ...; see policy.Verdict.Stage).
	Stage      string `json:"stage,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// GuardrailData says a loop guard acted: the guardrail stage refused a
// call (Rule is policy.GuardSameCall, GuardSameTool or GuardSameResult;
// the call's tool_result follows, denied with stage "guardrail"), or the
// circuit breaker, after rounds in which every tool call failed, asked
// the model to change approach (Rule "failed_rounds", Action "note") or
// stopped the run (Action "stop"; done follows with stop_reason "stuck").
type GuardrailData struct {
	Rule     string `json:"rule"`
	ToolName string `json:"tool_name,omitempty"`
	ID       string `json:"id,omitempty"` // the refused call's id
	// Signature is the refused call's policy.CallSignature, short form.
	Signature string `json:"signature,omitempty"`
	// Count is the failures or identical results in a row (a refusal), or
	// the failed rounds in a row (the circuit breaker).
	Count  int    `json:"count"`
	Action string `json:"action,omitempty"` // the circuit breaker's: note or stop
	Reason string `json:"reason"`
}

// NotifyData is a side event a tool emitted (ask_user, todos).
type NotifyData struct {
	ID       string `json:"id"`
	ToolName string `json:"tool_name"`
	// Payload is the tool's data: the questions for ask_user, the list for
	// todos.
	Payload any `json:"payload"`
}

// RetryData says a model call failed and will be retried: clients should
// discard the deltas of the failed attempt.
type RetryData struct {
	TurnNumber  int   `json:"turn_number"`
	Attempt     int   `json:"attempt"`      // the attempt that failed, from 1
	MaxAttempts int   `json:"max_attempts"` // the attempts the retry policy allows
	DelayMS     int64 `json:"delay_ms"`
	// Status is the failed attempt's outcome status (seed 003's); Category
	// says more precisely what failed (rate_limit, network, ...; see
	// llm.Category), when the provider's error was classified.
	Status   string `json:"status"`
	Category string `json:"category,omitempty"`
	Error    string `json:"error"`
}

// TurnEndData closes a model turn with its usage and cost.
type TurnEndData struct {
	TurnNumber       int     `json:"turn_number"`
	InputTokens      int     `json:"input_tokens"`
	OutputTokens     int     `json:"output_tokens"`
	CacheReadTokens  int     `json:"cache_read_tokens"`
	CacheWriteTokens int     `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	StopReason       string  `json:"stop_reason"`
	// Context is how full the context window is after the turn.
	Context *ContextUsage `json:"context,omitempty"`
}

// Stop reasons of a run.
const (
	StopEndTurn   = "end_turn"
	StopSequence  = "stop_sequence"
	StopMaxTurns  = "max_turns"
	StopCancelled = "cancelled"
	StopError     = "error"
	// StopStuck: the circuit breaker ended a run in which every tool call
	// kept failing (policy.Guardrails.FailedRounds + StuckRounds rounds
	// in a row).
	StopStuck = "stuck"
)

// DoneData ends every run that was not ended by an error event (and those
// too: a run always ends with done, stop_reason "error" after an error).
type DoneData struct {
	TotalInputTokens      int     `json:"total_input_tokens"`
	TotalOutputTokens     int     `json:"total_output_tokens"`
	TotalTokens           int     `json:"total_tokens"`
	TotalCacheReadTokens  int     `json:"total_cache_read_tokens"`
	TotalCacheWriteTokens int     `json:"total_cache_write_tokens"`
	CostUSD               float64 `json:"cost_usd"`
	TurnCount             int     `json:"turn_count"`
	StopReason            string  `json:"stop_reason"`
	// Text is the final assistant text of the run.
	Text string `json:"text,omitempty"`
}

// ErrorData reports what ended a run.
type ErrorData struct {
	Error string `json:"error"`
	// Status is the model outcome status when a model call failed
	// (auth, failed, timeout, ...).
	Status string `json:"status,omitempty"`
	// Category is the provider error's llm.Category (auth, not_found,
	// prompt_too_long, network, ...), when a model call failed.
	Category string `json:"category,omitempty"`
	Hint     string `json:"hint,omitempty"`
}
