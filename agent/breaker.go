package agent

import (
	"fmt"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/observe"
)

// breakerNote is the circuit breaker's note to the model. Providers have
// no system role in the middle of a conversation, so it is a user-role
// text after the round's tool results, marked as the engine's own as the
// continuation prompt is.
const breakerNote = "[system: every tool call in the last %d rounds failed. Stop repeating what does not work. " +
	"Re-read the errors, then change your approach: different arguments, a different tool, a smaller step, or checking your assumptions first. " +
	"If something outside your control is in the way, stop and explain to the user what it is.]"

// breaker is the circuit breaker of one run (seed 004 §3): it counts the
// rounds in a row in which every tool call failed. After
// policy.Guardrails.FailedRounds of them it asks the model to change
// approach; after StuckRounds more it ends the run (StopStuck).
type breaker struct {
	failed int // rounds in a row in which every call failed
}

// afterRound looks at a round's results, already in the history. It
// reports whether the run ended (stuck, or the consumer stopped).
func (r *run) afterRound(results []llm.Block) (ended bool) {
	_, _, _, noteAt, stuck := r.a.pol.Guardrails.Limits()
	if noteAt == 0 {
		return false
	}
	for _, b := range results {
		if !b.IsError {
			r.breaker.failed = 0
			return false
		}
	}
	if len(results) == 0 {
		return false
	}
	r.breaker.failed++
	n := r.breaker.failed
	switch {
	case n == noteAt:
		note := fmt.Sprintf(breakerNote, n)
		r.s.mu.Lock()
		r.s.messages = appendMerged(r.s.messages, llm.UserText(note))
		r.s.mu.Unlock()
		r.observeBreaker("note", n)
		return !r.emit(EventGuardrail, GuardrailData{Rule: observe.RuleFailedRounds, Count: n, Action: "note", Reason: note})
	case stuck > 0 && n >= noteAt+stuck:
		reason := fmt.Sprintf("stopped: every tool call failed in %d rounds in a row, %d of them after the model was asked to change approach", n, n-noteAt)
		r.observeBreaker("stop", n)
		if r.emit(EventGuardrail, GuardrailData{Rule: observe.RuleFailedRounds, Count: n, Action: "stop", Reason: reason}) {
			r.a.log.Debug("the circuit breaker stopped a run that was stuck", "failed_rounds", n)
			r.done(StopStuck)
		}
		return true
	}
	return false
}
