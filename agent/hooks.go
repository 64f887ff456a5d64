package agent

import (
	"context"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/policy/secret"
)

// maxStopHookRuns bounds how many times stop hooks may send the model back
// to work within one run.
const maxStopHookRuns = 3

// hooks returns the policy's hook manager when it has hooks for ev.
func (r *run) hooks(ev hook.Event) *hook.Manager {
	if m := r.a.pol.Hooks; m != nil && m.Has(ev) {
		return m
	}
	return nil
}

func (r *run) hookInput(ev hook.Event) hook.Input {
	in := r.a.pol.HookInput(ev)
	in.Model, in.Turn = r.a.cfg.Model, r.turns
	return in
}

// userPromptHooks runs user_prompt_submit hooks: a deny blocks the prompt
// (it never reaches the model or the history), additional context rides
// along with it.
func (r *run) userPromptHooks(msg *llm.Message) (blocked string) {
	m := r.hooks(hook.UserPromptSubmit)
	if m == nil || r.a.sub != nil { // a sub-agent's prompt is the model's, not the user's
		return ""
	}
	in := r.hookInput(hook.UserPromptSubmit)
	in.Prompt = r.redact(msg.Text())
	out := m.Run(r.ctx, in)
	if out.Verdict == hook.Deny {
		return nonEmptyString(out.Reason, "the prompt was blocked by a user_prompt_submit hook")
	}
	if out.Stop {
		return nonEmptyString(out.StopReason, "a user_prompt_submit hook stopped the run")
	}
	if out.AdditionalContext != "" {
		msg.Content = append(msg.Content, llm.Text(out.AdditionalContext))
	}
	return ""
}

// preSamplingHooks runs before every model call; a deny stops the run.
func (r *run) preSamplingHooks() (blocked string) {
	m := r.hooks(hook.PreSampling)
	if m == nil {
		return ""
	}
	in := r.hookInput(hook.PreSampling)
	r.s.mu.Lock()
	in.MessageCount = len(r.s.messages)
	r.s.mu.Unlock()
	out := m.Run(r.ctx, in)
	if out.Verdict == hook.Deny || out.Stop {
		return nonEmptyString(out.Reason, nonEmptyString(out.StopReason, "a pre_sampling hook blocked the model call"))
	}
	return ""
}

// postSamplingHooks observe a completed model call; they never hold up
// the run (seed 000: fire and forget).
func (r *run) postSamplingHooks(res llm.Result) {
	m := r.hooks(hook.PostSampling)
	if m == nil {
		return
	}
	in := r.hookInput(hook.PostSampling)
	in.InputTokens, in.OutputTokens = res.Usage.InputTokens, res.Usage.OutputTokens
	in.StopReason = string(res.Outcome.StopReason)
	in.ResponsePreview = r.redact(res.Message.Text()) // the hook package caps it
	m.Go(r.ctx, in)                                   // bounded, and awaited by the manager's Close

}

// stopHooks run when the model has finished; a hook that blocks (Claude
// Code's Stop "decision":"block") sends its reason back to the model as
// the next user message, a bounded number of times.
func (r *run) stopHooks() (again bool) {
	ev := hook.Stop
	if r.a.sub != nil {
		ev = hook.SubagentStop // a sub-agent's, as in Claude Code
		r.subStopFired = true
	}
	m := r.hooks(ev)
	if m == nil || r.stopHookRuns >= maxStopHookRuns {
		return false
	}
	in := r.hookInput(ev)
	in.Extra = map[string]any{"stop_hook_active": r.stopHookRuns > 0}
	r.subagentHookInput(&in)
	out := m.Run(r.ctx, in)
	if out.Verdict != hook.Deny || out.Reason == "" || out.Stop {
		return false
	}
	r.stopHookRuns++
	r.s.mu.Lock()
	r.s.messages = appendMerged(r.s.messages, llm.UserText(out.Reason))
	r.s.mu.Unlock()
	return true
}

// runEndHooks report how the run ended: run_complete or run_error
// (seed 001), observers only.
func (r *run) runEndHooks(reason string) {
	if r.a.sub != nil {
		r.subagentEndHook(reason)
		return
	}
	ev := hook.RunComplete
	if reason == StopError {
		ev = hook.RunError
	}
	m := r.hooks(ev)
	if m == nil {
		return
	}
	in := r.hookInput(ev)
	in.StopReason = reason
	in.ResponsePreview = r.redact(r.text)
	m.Go(r.ctx, in) // outlives the run; the manager's Close waits for it
}

// emitDelta sends the part of a delta that cannot be the start of a
// secret; the rest waits for the next delta or the block's end.
func (r *run) emitDelta(typ EventType, st **secret.Stream, delta string) bool {
	sec := r.a.pol.Secrets
	if sec == nil || sec.Len() == 0 {
		return r.emitRaw(typ, TextData{Text: delta})
	}
	if *st == nil {
		*st = sec.NewStream()
	}
	if out := (*st).Write(delta); out != "" {
		return r.emitRaw(typ, TextData{Text: out})
	}
	return true
}

// flushDelta sends what a stream held back, at the end of its block.
func (r *run) flushDelta(typ EventType, st **secret.Stream) bool {
	if *st == nil {
		return true
	}
	out := (*st).Flush()
	*st = nil
	if out == "" {
		return true
	}
	return r.emitRaw(typ, TextData{Text: out})
}

// emitRaw emits data that is already redacted.
func (r *run) emitRaw(typ EventType, data any) bool {
	if r.stopped {
		return false
	}
	if !r.yield(Event{Type: typ, Data: data}, nil) {
		r.stopped = true
		r.cancel()
	}
	return !r.stopped
}

func (r *run) redact(s string) string {
	if sec := r.a.pol.Secrets; sec != nil && sec.Len() > 0 {
		return sec.Redact(s)
	}
	return s
}

// redactEvent replaces registered secret values in an event's payload,
// in every field at any depth, so no stream, log or stored row carries
// them.
func (r *run) redactEvent(data any) any {
	return secret.Redacted(r.a.pol.Secrets, data)
}

// redactMessage is msg as the history keeps it: the user's prompt and the
// model's text and tool inputs hold no registered value, so the model is
// never shown one, now or when the history is reloaded. Thinking blocks
// are kept as they are: a provider signs them and refuses a changed one
// (their events are redacted like any other).
func (r *run) redactMessage(msg llm.Message) llm.Message {
	sec := r.a.pol.Secrets
	if sec.Len() == 0 {
		return msg
	}
	out := msg
	out.Content = make([]llm.Block, len(msg.Content))
	for i, b := range msg.Content {
		if b.Type != llm.BlockThinking {
			b = secret.Redacted(sec, b)
		}
		out.Content[i] = b
	}
	return out
}

func nonEmptyString(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// subagentHookInput adds the sub-agent's identity to a hook's input:
// Claude Code's agent_id and agent_type, and the parent's tool call.
func (r *run) subagentHookInput(in *hook.Input) {
	sub := r.a.sub
	if sub == nil {
		return
	}
	if in.Extra == nil {
		in.Extra = map[string]any{}
	}
	in.Extra["agent_id"], in.Extra["agent_type"] = sub.origin.SubagentID, sub.origin.Type
	in.ToolUseID = sub.origin.ToolUseID
}

// subagentEndHook fires subagent_stop, as an observer, for a sub-agent's
// run that ended without reaching stopHooks (an error, a cancellation,
// the turn limit): the hook sees every sub-agent end, once. The run
// hooks (run_complete, run_error) are the session's own runs'.
func (r *run) subagentEndHook(reason string) {
	if r.subStopFired {
		return
	}
	r.subStopFired = true
	m := r.hooks(hook.SubagentStop)
	if m == nil {
		return
	}
	in := r.hookInput(hook.SubagentStop)
	in.StopReason = reason
	in.ResponsePreview = r.redact(r.text)
	in.Extra = map[string]any{"stop_hook_active": false}
	r.subagentHookInput(&in)
	m.Go(context.WithoutCancel(r.ctx), in)
}
