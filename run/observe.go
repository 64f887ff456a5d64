package run

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/plan"
	"github.com/weft-run/weft/record"
)

// Runs report to the sessions' observer (Config.Observer): an
// invoke_agent span per attempt (agent "run") holding a chat span per
// planner call and an invoke_agent span per step (agent "step") with the
// step's execute_tool span; events and metrics of the attempt, its plan,
// its steps, the planner's calls and re-asks, and budget breaches. The
// vocabulary is observe's (docs/operations.md). Nothing here carries a
// goal, a prompt or a tool's input or output.

// observedRun is what the observer needs to remember of an attempt,
// carried in the attempt's context.
type observedRun struct {
	started time.Time
}

// obsKey finds the attempt's start in the run's context.
type obsKey struct{}

// safely calls an observer; one that panics does not take the run down.
func (x *execution) safely(fn func()) {
	defer func() {
		if p := recover(); p != nil {
			x.m.log.Error("an observer panicked", "run", x.lr.id, "panic", p)
		}
	}()
	fn()
}

// observeStart opens the attempt's span and reports its start; the
// returned context carries the span (every span of the attempt is under
// it) and the start time.
func (x *execution) observeStart(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, obsKey{}, &observedRun{started: time.Now()})
	o := x.obs
	if o.Traces != nil {
		attrs := map[string]any{observe.AttrOperationName: observe.SpanInvokeAgent, observe.AttrAgentName: "run",
			observe.AttrConversationID: x.lr.id, observe.AttrRunID: x.lr.id}
		x.safely(func() { ctx = o.Traces.SpanStart(ctx, observe.SpanInvokeAgent, attrs) })
	}
	if o.Events != nil {
		data := map[string]any{"run_id": x.lr.id, "workflow_id": x.p.run.WorkflowID, "review": x.p.review}
		x.safely(func() { o.Events.Event(observe.EventPlanRunStart, data) })
	}
	return ctx
}

func startedAt(ctx context.Context) time.Time {
	if o, ok := ctx.Value(obsKey{}).(*observedRun); ok {
		return o.started
	}
	return time.Now()
}

// observeEnd reports how the attempt ended and closes its span.
func (x *execution) observeEnd(ctx context.Context, status, msg string) {
	o := x.obs
	if !o.On() {
		return
	}
	took := time.Since(startedAt(ctx))
	usd, tokens := x.spend.spent()
	var err error
	if status == record.RunFailed || status == record.RunBudget {
		err = errors.New(x.redact(msg))
	}
	if o.Traces != nil {
		attrs := map[string]any{observe.AttrStopReason: status, observe.AttrCostUSD: usd}
		if err != nil {
			attrs[observe.AttrErrorType] = status
		}
		x.safely(func() { o.Traces.SpanEnd(ctx, attrs, err) })
	}
	if o.Metrics != nil {
		x.safely(func() { o.Metrics.Metric(observe.MetricPlanRuns, 1, map[string]string{observe.TagStatus: status}) })
	}
	if o.Events != nil {
		data := map[string]any{"run_id": x.lr.id, "status": status, "duration_ms": took.Milliseconds(), "cost_usd": usd, "tokens": tokens}
		x.safely(func() { o.Events.Event(observe.EventPlanRunEnd, data) })
		if status == record.RunFailed {
			x.safely(func() { o.Events.Error(err, map[string]any{"run_id": x.lr.id, "status": status}) })
		}
	}
}

// redact takes registered secrets out of a message for an observer.
func (x *execution) redact(s string) string {
	if x.pol != nil && x.pol.Secrets != nil {
		return x.pol.Secrets.Redact(s)
	}
	return s
}

// observeEvent reports the run events an observer cares about as they are
// recorded: the plan being ready.
func (x *execution) observeEvent(ctx context.Context, typ string, data any) {
	if typ != RunEventPlanReady || x.obs.Events == nil {
		return
	}
	m, _ := data.(map[string]any)
	var steps int
	if p, ok := m["plan"].(*plan.Plan); ok && p != nil {
		steps = len(p.Steps)
	}
	edited, _ := m["edited"].(bool)
	ev := map[string]any{"run_id": x.lr.id, "steps": steps, "edited": edited, "duration_ms": time.Since(startedAt(ctx)).Milliseconds()}
	x.safely(func() { x.obs.Events.Event(observe.EventPlanReady, ev) })
}

// observedStep is runStep inside the step's invoke_agent and execute_tool
// spans, reported as it starts and ends.
func (x *execution) observedStep(ctx context.Context, i int, s plan.Step, args json.RawMessage) (json.RawMessage, error) {
	o := x.obs
	if !o.On() {
		return x.runStep(ctx, i, s, args)
	}
	callID := x.lr.id + "/" + s.ID
	stepCtx, toolCtx := ctx, ctx
	if o.Traces != nil {
		attrs := map[string]any{observe.AttrOperationName: observe.SpanInvokeAgent, observe.AttrAgentName: "step",
			observe.AttrConversationID: x.lr.id, observe.AttrRunID: x.lr.id, observe.AttrRunStep: s.ID}
		x.safely(func() { stepCtx = o.Traces.SpanStart(ctx, observe.SpanInvokeAgent, attrs) })
		toolCtx = stepCtx
		tattrs := map[string]any{observe.AttrOperationName: observe.SpanExecuteTool, observe.AttrToolName: s.Tool,
			observe.AttrToolCallID: callID, observe.AttrToolType: "function"}
		x.safely(func() { toolCtx = o.Traces.SpanStart(stepCtx, observe.SpanExecuteTool, tattrs) })
	}
	if o.Events != nil {
		data := map[string]any{"run_id": x.lr.id, "step": s.ID, "tool": s.Tool}
		x.safely(func() { o.Events.Event(observe.EventRunStepStart, data) })
	}
	start := time.Now()
	res, err := x.runStep(toolCtx, i, s, args)
	took := time.Since(start)
	outcome := observe.OutcomeOK
	switch {
	case err != nil && ctx.Err() != nil:
		outcome = "cancelled"
	case err != nil:
		outcome = observe.OutcomeError
	}
	if o.Traces != nil {
		attrs := map[string]any{observe.AttrToolOutcome: outcome}
		var serr error
		if err != nil {
			serr = errors.New(x.redact(err.Error()))
			attrs[observe.AttrErrorType] = outcome
		}
		x.safely(func() { o.Traces.SpanEnd(toolCtx, attrs, serr) })
		x.safely(func() { o.Traces.SpanEnd(stepCtx, map[string]any{observe.AttrToolOutcome: outcome}, serr) })
	}
	if o.Metrics != nil {
		x.safely(func() {
			o.Metrics.Metric(observe.MetricRunSteps, 1, map[string]string{observe.TagTool: s.Tool, observe.TagOutcome: outcome})
			o.Metrics.Metric(observe.MetricRunStepDuration, took.Seconds(), map[string]string{observe.TagTool: s.Tool})
		})
	}
	if o.Events != nil {
		data := map[string]any{"run_id": x.lr.id, "step": s.ID, "tool": s.Tool, "outcome": outcome, "duration_ms": took.Milliseconds()}
		x.safely(func() { o.Events.Event(observe.EventRunStepEnd, data) })
	}
	return res, err
}

// chatSpanStart opens a planner call's chat span.
func (x *execution) chatSpanStart(ctx context.Context, provider, model string, req *llm.Request) context.Context {
	t := x.obs.Traces
	if t == nil {
		return ctx
	}
	attrs := map[string]any{observe.AttrOperationName: observe.SpanChat, observe.AttrProviderName: provider,
		observe.AttrRequestModel: model, observe.AttrRequestMaxTokens: req.MaxTokens,
		observe.AttrRequestMessageCount: len(req.Messages), observe.AttrRunID: x.lr.id}
	x.safely(func() { ctx = t.SpanStart(ctx, observe.SpanChat, attrs) })
	return ctx
}

// chatSpanEnd reports a planner call: its span, latency, tokens and cost.
func (x *execution) chatSpanEnd(ctx context.Context, provider, model, role string, u llm.Usage, cost float64, out llm.Outcome, took time.Duration) {
	o := x.obs
	if !o.On() {
		return
	}
	completed := out.Status == llm.StatusCompleted
	status := string(out.Status)
	if status == "" {
		status = string(llm.StatusAborted) // the consumer stopped
	}
	var category string
	var e *llm.Error
	if errors.As(out.Err, &e) {
		category = string(e.Category)
	}
	if o.Traces != nil {
		attrs := map[string]any{observe.AttrUsageInputTokens: u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens,
			observe.AttrUsageOutputTokens: u.OutputTokens, observe.AttrUsageCacheRead: u.CacheReadTokens,
			observe.AttrUsageCacheCreation: u.CacheWriteTokens, observe.AttrCostUSD: cost}
		var err error
		if completed {
			if out.StopReason != "" {
				attrs[observe.AttrResponseFinishReasons] = []string{string(out.StopReason)}
			}
		} else {
			err = out.Err
			if err == nil {
				err = errors.New(status)
			}
			attrs[observe.AttrErrorType] = firstNonEmpty(category, status)
		}
		x.safely(func() { o.Traces.SpanEnd(ctx, attrs, err) })
	}
	if o.Metrics != nil {
		x.safely(func() {
			m := o.Metrics
			outcome := status
			if !completed {
				outcome = firstNonEmpty(category, status)
			}
			m.Metric(observe.MetricModelDuration, took.Seconds(), map[string]string{
				observe.TagModel: model, observe.TagProvider: provider, observe.TagOutcome: outcome})
			for _, t := range []struct {
				typ string
				n   int
			}{{"input", u.InputTokens}, {"output", u.OutputTokens}, {"cache_read", u.CacheReadTokens}, {"cache_write", u.CacheWriteTokens}} {
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
		data := map[string]any{"run_id": x.lr.id, "role": role, "model": model, "provider": provider, "status": status,
			"duration_ms": took.Milliseconds(), "input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
			"cache_read_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens, "cost_usd": cost}
		if category != "" {
			data["category"] = category
		}
		x.safely(func() { o.Events.Event(observe.EventModelCall, data) })
	}
}

// retryInvalidPlan is the category of a planner call that re-asks for a
// plan after an answer without a valid one.
const retryInvalidPlan = "invalid_plan"

// observeRetry reports the planner being asked again (attempt n).
func (x *execution) observeRetry(model, role string, n int) {
	o := x.obs
	if o.Metrics != nil {
		x.safely(func() {
			o.Metrics.Metric(observe.MetricRetries, 1, map[string]string{observe.TagModel: model,
				observe.TagCategory: retryInvalidPlan, observe.TagFailover: "false"})
		})
	}
	if o.Events != nil {
		data := map[string]any{"run_id": x.lr.id, "role": role, "model": model, "attempt": n, "category": retryInvalidPlan}
		x.safely(func() { o.Events.Event(observe.EventRetry, data) })
	}
}

// observeBudget reports a breach of the run's budget and what was
// decided.
func (x *execution) observeBudget(req agent.BudgetRequest, action string) {
	o := x.obs
	if o.Metrics != nil {
		x.safely(func() {
			o.Metrics.Metric(observe.MetricBudgetExceeded, 1, map[string]string{"scope": req.Scope, observe.TagAction: action})
		})
	}
	if o.Events != nil {
		data := map[string]any{"run_id": x.lr.id, "scope": req.Scope, "limit_usd": req.MaxUSD, "spent_usd": req.SpentUSD,
			"estimate_usd": req.EstimateUSD, "limit_tokens": req.MaxTokens, "spent_tokens": req.SpentTokens,
			"estimate_tokens": req.EstimateTokens, "action": action}
		x.safely(func() { o.Events.Event(observe.EventBudgetExceeded, data) })
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
