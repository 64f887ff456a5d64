package agent

import (
	"fmt"

	"github.com/weft-run/weft/observe"
)

// StrictMode turns the engine's silent repairs into panics (seed 000), so
// that a test or a safety evaluation finds the bug behind a repair instead
// of a run that quietly went on. Production leaves Config.StrictMode nil.
type StrictMode struct {
	// ToolResultPairing panics when the history had to be repaired before
	// a model call: a tool call without its result, or a result answering
	// no call (a resumed history that was cut, an OnPromptTooLong that
	// returned a broken one). Closing the calls of a run its consumer
	// stopped is not a repair: that is how a stopped run ends.
	ToolResultPairing bool
	// CompactFailure panics when Config.OnPromptTooLong could not shorten
	// a history that is over the context window (otherwise the run ends
	// with an error).
	CompactFailure bool
	// NormalizerError panics when a provider broke the stream contract
	// (a stream that ended without an outcome), which the engine otherwise
	// treats as a malformed, retryable response.
	NormalizerError bool
}

// StrictViolation is the value a strict mode panics with.
type StrictViolation struct {
	Check  string // tool_result_pairing, compact_failure or normalizer_error
	Detail string
}

func (v StrictViolation) Error() string { return "agent: strict mode: " + v.Check + ": " + v.Detail }

// repaired reports a repair of the history (n > 0): a panic in strict
// mode, an event for the observer otherwise.
func (r *run) repaired(n int) {
	if n == 0 {
		return
	}
	if sm := r.a.cfg.StrictMode; sm != nil && sm.ToolResultPairing {
		panic(StrictViolation{Check: "tool_result_pairing", Detail: fmt.Sprintf("%d tool results had to be synthesised or dropped", n)})
	}
	r.a.log.Debug("repaired the history's tool results", "repairs", n)
	if o := r.a.obs.Events; o != nil {
		r.safely(func() { o.Event(observe.EventHistoryRepaired, map[string]any{"repairs": n}) })
	}
}

func (r *run) strictCompact(err error) {
	if sm := r.a.cfg.StrictMode; sm != nil && sm.CompactFailure {
		panic(StrictViolation{Check: "compact_failure", Detail: err.Error()})
	}
}

func (r *run) strictNormalizer(detail string) {
	if sm := r.a.cfg.StrictMode; sm != nil && sm.NormalizerError {
		panic(StrictViolation{Check: "normalizer_error", Detail: detail})
	}
}
