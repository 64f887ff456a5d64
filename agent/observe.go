package agent

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/tool"
)

// The engine's reports to Config.Observer. Every helper here returns at
// once when the observer lacks the part it would call (observe.Resolve,
// once per agent), so that the default, no observer, builds no data and
// allocates nothing; an observer that panics is logged and the run goes
// on.

// safely calls fn, which calls the observer, recovering a panic.
func (r *run) safely(fn func()) {
	defer func() {
		if p := recover(); p != nil {
			r.a.log.Error("an observer panicked", "panic", p)
		}
	}()
	fn()
}

// begin starts the run's guardrail memory and its invoke_agent span.
func (r *run) begin() {
	r.started = time.Now()
	if t := r.a.obs.Traces; t != nil {
		attrs := map[string]any{observe.AttrOperationName: observe.SpanInvokeAgent,
			observe.AttrProviderName: r.a.cfg.Provider.Name(), observe.AttrRequestModel: r.a.cfg.Model}
		r.safely(func() { r.ctx = t.SpanStart(r.ctx, observe.SpanInvokeAgent, attrs) })
	}
	// The tracker rides only in the context of the policy's Before and
	// After: a tool's own calls (a workflow's, a sub-agent's) are another
	// run's, with a tracker of their own or none.
	r.polCtx = r.ctx
	if !r.a.pol.Guardrails.Disabled {
		r.polCtx = policy.WithLoopTracker(r.ctx, &r.loops)
	}
}

// end reports the run's end, however it ended.
func (r *run) end() {
	o := r.a.obs
	if !o.On() {
		return
	}
	reason := r.stopReason
	if reason == "" {
		reason = StopCancelled // the consumer broke out
	}
	if o.Events != nil {
		data := map[string]any{"model": r.a.cfg.Model, "stop_reason": reason, "turns": r.turns,
			"input_tokens": r.usage.InputTokens, "output_tokens": r.usage.OutputTokens, "cost_usd": r.cost,
			"duration_ms": time.Since(r.started).Milliseconds()}
		r.safely(func() { o.Events.Event(observe.EventRunEnd, data) })
	}
	if o.Metrics != nil {
		r.safely(func() {
			o.Metrics.Metric(observe.MetricRuns, 1, map[string]string{observe.TagModel: r.a.cfg.Model, observe.TagStopReason: reason})
		})
	}
	if o.Traces != nil {
		attrs := map[string]any{observe.AttrStopReason: reason, observe.AttrTurns: r.turns, observe.AttrCostUSD: r.cost}
		usageAttrs(attrs, r.usage)
		var err error
		if reason == StopError && r.runErr != nil {
			err = r.runErr
			attrs[observe.AttrErrorType] = errorType(r.runErr)
		}
		r.safely(func() { o.Traces.SpanEnd(r.ctx, attrs, err) })
	}
}

// usageAttrs sets the GenAI usage attributes: input tokens count the
// cached ones too, as the conventions say.
func usageAttrs(attrs map[string]any, u llm.Usage) {
	attrs[observe.AttrUsageInputTokens] = u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	attrs[observe.AttrUsageOutputTokens] = u.OutputTokens
	attrs[observe.AttrUsageCacheRead] = u.CacheReadTokens
	attrs[observe.AttrUsageCacheCreation] = u.CacheWriteTokens
}

// errorType is the low-cardinality error.type of an error: the provider
// error's category when there is one.
func errorType(err error) string {
	var e *llm.Error
	if errors.As(err, &e) && e.Category != "" {
		return string(e.Category)
	}
	return "_OTHER"
}

// attempt is one model call attempt (streamOnce) with its chat span, its
// latency, and, when it completed, its tokens and cost.
func (r *run) attempt(req *llm.Request, n int) (llm.Result, bool) {
	o := r.a.obs
	if !o.On() {
		return r.streamOnce(r.ctx, req)
	}
	ctx := r.ctx
	if o.Traces != nil {
		attrs := map[string]any{observe.AttrOperationName: observe.SpanChat, observe.AttrProviderName: r.a.cfg.Provider.Name(),
			observe.AttrRequestModel: req.Model, observe.AttrRequestMaxTokens: req.MaxTokens, observe.AttrAttempt: n,
			observe.AttrRequestMessageCount: len(req.Messages)}
		if req.Temperature != nil {
			attrs[observe.AttrRequestTemperature] = *req.Temperature
		}
		r.safely(func() { ctx = o.Traces.SpanStart(ctx, observe.SpanChat, attrs) })
	}
	start := time.Now()
	res, ok := r.streamOnce(ctx, req)
	took := time.Since(start)
	out := res.Outcome
	status := string(out.Status)
	if !ok {
		status = string(llm.StatusAborted) // the consumer stopped
	}
	var cost float64
	completed := out.Status == llm.StatusCompleted && ok
	if completed {
		cost = r.a.info.Cost(res.Usage)
	}
	var category string
	var e *llm.Error
	if errors.As(out.Err, &e) {
		category = string(e.Category)
	}
	if o.Traces != nil {
		attrs := map[string]any{}
		if completed {
			usageAttrs(attrs, res.Usage)
			attrs[observe.AttrCostUSD] = cost
			if out.StopReason != "" {
				attrs[observe.AttrResponseFinishReasons] = []string{string(out.StopReason)}
			}
		}
		var err error
		if !completed {
			err = out.Err
			if err == nil {
				err = errors.New(nonEmptyString(out.Message, status))
			}
			attrs[observe.AttrErrorType] = nonEmptyString(category, status)
		}
		r.safely(func() { o.Traces.SpanEnd(ctx, attrs, err) })
	}
	model := r.a.cfg.Model
	if o.Metrics != nil {
		r.safely(func() {
			m := o.Metrics
			outcome := status
			if !completed {
				outcome = nonEmptyString(category, status) // rate_limit says more than timeout
			}
			m.Metric(observe.MetricModelDuration, took.Seconds(), map[string]string{
				observe.TagModel: model, observe.TagProvider: r.a.cfg.Provider.Name(), observe.TagOutcome: outcome})
			if !completed {
				return
			}
			m.Metric(observe.MetricTurns, 1, map[string]string{observe.TagModel: model})
			for _, t := range []struct {
				typ string
				n   int
			}{{"input", res.Usage.InputTokens}, {"output", res.Usage.OutputTokens},
				{"cache_read", res.Usage.CacheReadTokens}, {"cache_write", res.Usage.CacheWriteTokens}} {
				if t.n > 0 {
					m.Metric(observe.MetricModelTokens, float64(t.n), map[string]string{observe.TagModel: model, observe.TagType: t.typ})
				}
			}
			if cost > 0 {
				m.Metric(observe.MetricModelCost, cost, map[string]string{observe.TagModel: model})
			}
		})
	}
	if o.Events != nil {
		data := map[string]any{"model": model, "provider": r.a.cfg.Provider.Name(), "turn": r.turns, "status": status,
			"duration_ms": took.Milliseconds()}
		if completed {
			data["input_tokens"], data["output_tokens"] = res.Usage.InputTokens, res.Usage.OutputTokens
			data["cache_read_tokens"], data["cache_write_tokens"] = res.Usage.CacheReadTokens, res.Usage.CacheWriteTokens
			data["cost_usd"], data["stop_reason"] = cost, string(out.StopReason)
		} else if category != "" {
			data["category"] = category
		}
		r.safely(func() { o.Events.Event(observe.EventModelCall, data) })
	}
	return res, ok
}

// observeRetry reports a retry about to happen.
func (r *run) observeRetry(d RetryData, failover bool) {
	o := r.a.obs
	if o.Metrics != nil {
		r.safely(func() {
			o.Metrics.Metric(observe.MetricRetries, 1, map[string]string{observe.TagModel: r.a.cfg.Model,
				observe.TagCategory: nonEmptyString(d.Category, d.Status), observe.TagFailover: strconv.FormatBool(failover)})
		})
	}
	if o.Events != nil {
		data := map[string]any{"model": r.a.cfg.Model, "turn": d.TurnNumber, "attempt": d.Attempt, "status": d.Status,
			"category": d.Category, "delay_ms": d.DelayMS, "failover": failover}
		r.safely(func() { o.Events.Event(observe.EventRetry, data) })
	}
}

// observeError reports the error that ends a run.
func (r *run) observeError(err error, status llm.Status) {
	r.runErr = err
	if o := r.a.obs.Events; o != nil {
		if sec := r.a.pol.Secrets; sec != nil {
			err = errors.New(sec.Redact(err.Error()))
		}
		ctx := map[string]any{"model": r.a.cfg.Model, "turn": r.turns, "status": string(status)}
		r.safely(func() { o.Error(err, ctx) })
	}
}

// toolTag is what metrics call a tool: its name, or UnknownTool for a
// name the agent does not have (the model's choice: unbounded).
func toolTag(spec tool.Spec) string {
	if spec.Name == "" {
		return observe.UnknownTool
	}
	return spec.Name
}

// observeDecision reports the policy's verdict on a call; waited is the
// time a person took to answer, when one was asked.
func (r *run) observeDecision(c llm.Block, spec tool.Spec, v policy.Verdict, waited time.Duration) {
	o := r.a.obs
	if o.Events == nil && o.Metrics == nil {
		return
	}
	name, verdict := toolTag(spec), "allow"
	if !v.Allow {
		verdict = "deny"
	}
	if o.Metrics != nil {
		r.safely(func() {
			o.Metrics.Metric(observe.MetricPermissionDecisions, 1, map[string]string{observe.TagTool: name, observe.TagVerdict: verdict, observe.TagStage: v.Stage})
			if waited > 0 {
				o.Metrics.Metric(observe.MetricPermissionWait, waited.Seconds(), map[string]string{observe.TagTool: name})
			}
		})
	}
	if o.Events != nil {
		data := map[string]any{"tool": name, "id": c.ToolUseID, "verdict": verdict, "stage": v.Stage, "by": v.By}
		if !v.Allow {
			data["reason"] = r.redact(v.Reason)
		}
		if waited > 0 {
			data["waited_ms"] = waited.Milliseconds()
		}
		r.safely(func() { o.Events.Event(observe.EventPermission, data) })
	}
}

// observeTool reports a tool call's end: it ran (ok or error), or the
// policy refused it (denied, or blocked by a guardrail).
func (r *run) observeTool(c llm.Block, spec tool.Spec, outcome string, took time.Duration) {
	o := r.a.obs
	if o.Events == nil && o.Metrics == nil {
		return
	}
	name := toolTag(spec)
	if o.Metrics != nil {
		r.safely(func() {
			o.Metrics.Metric(observe.MetricToolCalls, 1, map[string]string{observe.TagTool: name, observe.TagOutcome: outcome})
			if outcome == observe.OutcomeOK || outcome == observe.OutcomeError {
				o.Metrics.Metric(observe.MetricToolDuration, took.Seconds(), map[string]string{observe.TagTool: name})
			}
		})
	}
	if o.Events != nil {
		data := map[string]any{"tool": name, "id": c.ToolUseID, "turn": r.turns, "outcome": outcome, "duration_ms": took.Milliseconds()}
		r.safely(func() { o.Events.Event(observe.EventToolCall, data) })
	}
}

// noSpanEnd is toolSpan's end when nothing traces.
func noSpanEnd(*tool.Result) {}

// toolSpan opens a call's execute_tool span; end closes it with the
// result. It runs on the call's own goroutine.
func (r *run) toolSpan(ctx context.Context, c llm.Block, spec tool.Spec) (context.Context, func(*tool.Result)) {
	t := r.a.obs.Traces
	if t == nil {
		return ctx, noSpanEnd
	}
	return r.toolSpanOn(ctx, t, c, spec)
}

// toolSpanOn is toolSpan with a tracer. (Apart, so that the closure's
// capture of ctx does not cost toolSpan an allocation when nothing traces.)
func (r *run) toolSpanOn(ctx context.Context, t observe.TraceObserver, c llm.Block, spec tool.Spec) (context.Context, func(*tool.Result)) {
	attrs := map[string]any{observe.AttrOperationName: observe.SpanExecuteTool, observe.AttrToolName: toolTag(spec),
		observe.AttrToolCallID: c.ToolUseID, observe.AttrToolType: "function"}
	if spec.Description != "" {
		attrs[observe.AttrToolDescription] = spec.Description
	}
	r.safely(func() { ctx = t.SpanStart(ctx, observe.SpanExecuteTool, attrs) })
	return ctx, func(res *tool.Result) {
		end := map[string]any{observe.AttrToolOutcome: observe.OutcomeOK}
		var err error
		if res.IsError {
			end[observe.AttrToolOutcome] = observe.OutcomeError
			end[observe.AttrErrorType] = "tool_error"
			err = errors.New("the tool reported an error")
		}
		r.safely(func() { t.SpanEnd(ctx, end, err) })
	}
}

// observeGuardrail reports a call the guardrail stage refused, as an event
// of the run and to the observer.
func (r *run) observeGuardrail(c llm.Block, v policy.Verdict) bool {
	count, _ := strconv.Atoi(v.Notes[policy.NoteGuardCount])
	d := GuardrailData{Rule: v.By, ToolName: c.ToolName, ID: c.ToolUseID, Signature: v.Notes[policy.NoteGuardSignature],
		Count: count, Reason: v.Reason}
	o := r.a.obs
	if o.Metrics != nil {
		tags := map[string]string{observe.TagTool: c.ToolName, observe.TagRule: d.Rule}
		r.safely(func() { o.Metrics.Metric(observe.MetricGuardrailBlocks, 1, tags) })
	}
	if o.Events != nil {
		data := map[string]any{"rule": d.Rule, "tool": c.ToolName, "id": c.ToolUseID, "signature": d.Signature, "count": count, "reason": d.Reason}
		r.safely(func() { o.Events.Event(observe.EventGuardrail, data) })
	}
	r.a.log.Debug("a guardrail refused a tool call", "tool", c.ToolName, "rule", d.Rule, "count", count)
	return r.emit(EventGuardrail, d)
}

// observeBreaker reports the circuit breaker's note or stop.
func (r *run) observeBreaker(action string, rounds int) {
	o := r.a.obs
	if o.Metrics != nil {
		r.safely(func() {
			o.Metrics.Metric(observe.MetricCircuitBreaker, 1, map[string]string{observe.TagAction: action})
		})
	}
	if o.Events != nil {
		data := map[string]any{"rule": observe.RuleFailedRounds, "action": action, "count": rounds}
		r.safely(func() { o.Events.Event(observe.EventGuardrail, data) })
	}
}

// failover reports whether a failed attempt's key is cooling down (or was
// rejected) while another key of the provider's pool is healthy: the next
// attempt then goes at once, with that key (llm.Error.Failover).
func failover(e *llm.Error) bool { return e != nil && e.Failover }
