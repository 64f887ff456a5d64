package llm

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"time"
)

// Provider streams one model call. It is the whole model-side contract.
//
// Stream never panics and never retries. Every sequence it returns, whatever
// the server or network does, is framed strictly:
//
//	(BlockStart BlockDelta* BlockStop)*  MessageDone  UsageReport  OutcomeReport
//
// Blocks may interleave (two tool calls streaming at once), but every
// started block is stopped before MessageDone, and OutcomeReport is always the
// last event. A consumer that stops ranging early cancels the call; the
// provider then releases the connection and yields nothing more.
type Provider interface {
	// Name is the provider's registry name ("anthropic", "openai", ...).
	Name() string
	Stream(ctx context.Context, req *Request) iter.Seq[Event]
}

// EventKind discriminates Event.
type EventKind uint8

const (
	EventBlockStart EventKind = iota + 1
	EventBlockDelta
	EventBlockStop
	EventMessageDone
	EventUsage
	EventOutcome
)

func (k EventKind) String() string {
	switch k {
	case EventBlockStart:
		return "block_start"
	case EventBlockDelta:
		return "block_delta"
	case EventBlockStop:
		return "block_stop"
	case EventMessageDone:
		return "message_done"
	case EventUsage:
		return "usage"
	case EventOutcome:
		return "outcome"
	}
	return "unknown"
}

// Event is one item of a provider stream. It is a value type so that the hot
// path (one event per token delta) does not allocate.
type Event struct {
	Kind EventKind
	// Index is the block's position in the final message (block events).
	Index int
	// Block: on start, the block's type and what is known up front (tool id
	// and name); on delta, the type only; on stop, the complete block.
	Block Block
	// Delta is the increment of text, thinking, or tool-input JSON.
	Delta string
	// Message is the complete assistant message (EventMessageDone).
	Message *Message
	// Usage is the call's token usage (EventUsage).
	Usage Usage
	// Outcome is the call's terminal state (EventOutcome).
	Outcome Outcome
}

// Usage counts tokens for one call. InputTokens excludes cached prompt
// tokens, so that the full prompt is InputTokens + CacheReadTokens +
// CacheWriteTokens and each part can be priced on its own.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// ReasoningTokens is the part of OutputTokens spent thinking, when the
	// provider reports it.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
}

// Add accumulates u2 into u.
func (u *Usage) Add(u2 Usage) {
	u.InputTokens += u2.InputTokens
	u.OutputTokens += u2.OutputTokens
	u.CacheReadTokens += u2.CacheReadTokens
	u.CacheWriteTokens += u2.CacheWriteTokens
	u.ReasoningTokens += u2.ReasoningTokens
}

// Status is the terminal state of a call (seed 003's LLMOutcome).
type Status string

const (
	// StatusCompleted: the model finished; see StopReason.
	StatusCompleted Status = "completed"
	// StatusTimeout: timed out, transport dropped, or a transient provider
	// condition (rate limit, overload, 5xx). Worth retrying.
	StatusTimeout Status = "timeout"
	// StatusMalformed: the response could not be decoded. Worth retrying.
	StatusMalformed Status = "malformed"
	// StatusAborted: the caller cancelled. Never retried.
	StatusAborted Status = "aborted"
	// StatusFailed: a non-transient error (bad request, unknown model,
	// prompt too long, TLS). Not retried: the same request would fail the
	// same way.
	StatusFailed Status = "failed"
	// StatusAuth: credentials were rejected. Never retried.
	StatusAuth Status = "auth"
)

// Retryable reports whether a call that ended so can succeed when it is
// sent again unchanged: timeouts (which include rate limits, overload, 5xx
// and dropped connections) and malformed streams. Seed 003 lets an engine
// retry failed too; weft does not, because a failed outcome is a request
// the provider refused (bad request, unknown model, prompt too long), and
// repeating it only spends time and quota.
func (s Status) Retryable() bool {
	return s == StatusTimeout || s == StatusMalformed
}

// StopReason says why a completed model turn ended.
type StopReason string

const (
	StopEndTurn   StopReason = "end_turn"
	StopMaxTokens StopReason = "max_tokens"
	StopSequence  StopReason = "stop_sequence"
	StopToolUse   StopReason = "tool_use"
	StopRefusal   StopReason = "refusal"
	StopPauseTurn StopReason = "pause_turn"
)

// Outcome is the terminal state of one call.
type Outcome struct {
	Status Status `json:"status"`
	// Message is a one-line description, set for every status but completed.
	Message string `json:"message,omitempty"`
	// StopReason and StopSequence are set when the provider said them.
	StopReason   StopReason `json:"stop_reason,omitempty"`
	StopSequence string     `json:"stop_sequence,omitempty"`
	// RetryAfter is the server's retry hint, when it gave one.
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	// Err is the typed error (*Error) behind a non-completed outcome.
	Err error `json:"-"`
}

// Retryable reports whether the call can succeed when it is sent again
// unchanged. The typed error's category decides when there is one (see
// Category.Retryable); otherwise the status does.
func (o Outcome) Retryable() bool {
	var e *Error
	if errors.As(o.Err, &e) && e.Category != "" {
		return e.Category.Retryable()
	}
	return o.Status.Retryable()
}

// OutcomeFromError builds the outcome for err, classifying it as an *Error.
func OutcomeFromError(provider string, err error) Outcome {
	e := AsError(provider, err)
	return Outcome{Status: e.Status(), Message: e.Error(), RetryAfter: e.RetryAfter, Err: e}
}

// Result is a collected stream: what Collect returns.
type Result struct {
	Message Message
	Usage   Usage
	Outcome Outcome
}

// Collect drains a stream and returns its message, usage and outcome. It is
// for callers that do not need deltas.
func Collect(seq iter.Seq[Event]) Result {
	var r Result
	for ev := range seq {
		switch ev.Kind {
		case EventMessageDone:
			r.Message = *ev.Message
		case EventUsage:
			r.Usage = ev.Usage
		case EventOutcome:
			r.Outcome = ev.Outcome
		}
	}
	return r
}

// Framer is the one place where stream framing is enforced. Providers decode
// their wire protocol and report blocks to a Framer; it assigns indexes,
// accumulates the complete message, and on Finish closes whatever the server
// left open, so that no provider can emit a half-framed stream.
//
// Every method returns false once the consumer has stopped ranging; the
// provider must then return without yielding again.
type Framer struct {
	yield   func(Event) bool
	msg     Message
	bufs    [][]byte // per block; byte slices, not strings.Builder, which must not be copied when the slice grows
	open    []bool
	nOpen   int
	usage   Usage
	done    bool
	stopped bool
}

// NewFramer starts framing an assistant message onto yield.
func NewFramer(yield func(Event) bool) *Framer {
	return &Framer{yield: yield, msg: Message{Role: RoleAssistant}}
}

func (f *Framer) emit(ev Event) bool {
	if f.stopped {
		return false
	}
	if !f.yield(ev) {
		f.stopped = true
	}
	return !f.stopped
}

// Stopped reports whether the consumer has stopped ranging.
func (f *Framer) Stopped() bool { return f.stopped }

// Start opens a block and returns its index. b carries what is known up
// front: the type, tool id and name, metadata. Text is taken as the block's
// initial content.
func (f *Framer) Start(b Block) (int, bool) {
	i := len(f.msg.Content)
	f.msg.Content = append(f.msg.Content, b)
	f.bufs = append(f.bufs, nil)
	f.open = append(f.open, true)
	f.nOpen++
	if b.Text != "" {
		f.bufs[i] = append(f.bufs[i], b.Text...)
	}
	if b.Type == BlockToolUse && len(b.Input) > 0 && string(b.Input) != "{}" {
		f.bufs[i] = append(f.bufs[i], b.Input...)
	}
	start := Block{Type: b.Type, ToolUseID: b.ToolUseID, ToolName: b.ToolName, Meta: b.Meta}
	return i, f.emit(Event{Kind: EventBlockStart, Index: i, Block: start})
}

// Open reports whether block i is open.
func (f *Framer) Open(i int) bool { return i >= 0 && i < len(f.open) && f.open[i] }

// Delta appends s to open block i. Deltas to unknown or closed blocks are
// ignored: the server broke the protocol, and the complete message must
// still be consistent with the deltas that were emitted.
func (f *Framer) Delta(i int, s string) bool {
	if !f.Open(i) || s == "" {
		return !f.stopped
	}
	f.bufs[i] = append(f.bufs[i], s...)
	return f.emit(Event{Kind: EventBlockDelta, Index: i, Block: Block{Type: f.msg.Content[i].Type}, Delta: s})
}

// SetMeta records opaque provider data on block i (open or not).
func (f *Framer) SetMeta(i int, key, value string) {
	if i >= 0 && i < len(f.msg.Content) {
		f.msg.Content[i].SetMeta(key, value)
	}
}

// Block returns block i as accumulated so far (without its buffered text).
func (f *Framer) Block(i int) *Block { return &f.msg.Content[i] }

// Stop closes block i and emits it complete.
func (f *Framer) Stop(i int) bool {
	if !f.Open(i) {
		return !f.stopped
	}
	f.open[i] = false
	f.nOpen--
	b := &f.msg.Content[i]
	s := string(f.bufs[i])
	f.bufs[i] = nil
	if b.Type == BlockToolUse {
		if s == "" {
			s = "{}"
		}
		b.Input = json.RawMessage(s)
	} else {
		b.Text = s
	}
	return f.emit(Event{Kind: EventBlockStop, Index: i, Block: *b})
}

// SetUsage records the call's usage (the latest report wins).
func (f *Framer) SetUsage(u Usage) { f.usage = u }

// Usage returns the usage recorded so far.
func (f *Framer) Usage() Usage { return f.usage }

// Finish closes open blocks, then emits the message, the usage and o. A
// completed outcome whose tool inputs are not valid JSON objects becomes
// malformed: the engine must not run a tool on arguments the model never
// finished sending. Finish is idempotent.
func (f *Framer) Finish(o Outcome) {
	if f.done {
		return
	}
	f.done = true
	for i := range f.open {
		if f.open[i] && !f.Stop(i) {
			return
		}
	}
	if o.Status == StatusCompleted {
		for i := range f.msg.Content {
			b := &f.msg.Content[i]
			if b.Type == BlockToolUse && !isJSONObject(b.Input) {
				o = Outcome{Status: StatusMalformed, StopReason: o.StopReason,
					Message: "tool call " + b.ToolName + " has arguments that are not a JSON object: " + truncate(string(b.Input), 120)}
				o.Err = &Error{Category: CategoryMalformed, Message: o.Message}
				break
			}
		}
	}
	if o.Status == "" {
		o.Status = StatusCompleted
	}
	msg := f.msg
	if !f.emit(Event{Kind: EventMessageDone, Message: &msg}) {
		return
	}
	if !f.emit(Event{Kind: EventUsage, Usage: f.usage}) {
		return
	}
	f.emit(Event{Kind: EventOutcome, Outcome: o})
}

// Fail finishes the stream with the outcome for err.
func (f *Framer) Fail(provider string, err error) { f.Finish(OutcomeFromError(provider, err)) }

func isJSONObject(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return json.Valid(b)
		}
		return false
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
