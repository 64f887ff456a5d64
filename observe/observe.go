// Package observe is how the engine reports what it does to monitoring
// (seed 000's EventObserver): discrete events and errors through an
// Observer, numbers through an optional MetricObserver and call trees
// through an optional TraceObserver. agent.Config.Observer takes one; nil
// or Noop costs nothing (the engine checks once, at agent.New, which
// parts an observer has, and builds no data for the parts it lacks).
//
// Built in: Noop, Stderr (one line per event), Composite (several at
// once), Buffered (delivery on its own goroutine, bounded, drops counted)
// and DenialTracker (permission denials by tool and by rule). The
// OpenTelemetry and Prometheus adapters are in observe/otelobs and
// observe/promobs.
//
// The vocabulary (event, metric, span and attribute names, and the keys
// of their data) is the constants below; docs/operations.md lists it
// with the Prometheus series it becomes. Events and metrics never carry a
// tool's input or output, or a prompt: an observer may send what it gets
// to another system.
package observe

import "context"

// Observer receives the engine's events and errors. The engine calls it
// synchronously from the run's goroutines (several at once when tools
// run in parallel), so an implementation must be safe for concurrent use
// and quick; wrap a slow one in Buffered. The maps are the observer's:
// the engine builds a fresh one per call and never touches it again, but
// an observer must not change one it passes on (Composite hands the same
// map to each).
type Observer interface {
	// Event records something that happened: name is one of the Event
	// constants, data its documented keys.
	Event(name string, data map[string]any)
	// Error records an error with its context (model, turn, tool).
	Error(err error, context map[string]any)
}

// MetricObserver is an Observer that also takes numbers: name is one of
// the Metric constants, tags its documented tags. A counter's value is
// the increment, a duration's the seconds it lasted.
type MetricObserver interface {
	Metric(name string, value float64, tags map[string]string)
}

// TraceObserver is an Observer that also traces: SpanStart opens a span
// named name (one of the Span constants) as a child of the span ctx
// carries, and returns the context that carries the new one; SpanEnd ends
// the span ctx carries (one this observer started), adding attrs and
// marking it failed when err is not nil. Attribute keys are the Attr
// constants (the OpenTelemetry GenAI semantic conventions' names).
type TraceObserver interface {
	SpanStart(ctx context.Context, name string, attrs map[string]any) context.Context
	SpanEnd(ctx context.Context, attrs map[string]any, err error)
}

// Events. The keys of each one's data are listed beside it.
const (
	// EventModelCall: one model call attempt ended. model, provider,
	// turn, status (llm.Status), category (of a failure), duration_ms,
	// input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
	// cost_usd, stop_reason.
	EventModelCall = "model_call"
	// EventRetry: a failed model call will be sent again. model, turn,
	// attempt, status, category, delay_ms, failover (another key of the
	// pool is used at once).
	EventRetry = "retry"
	// EventToolCall: a tool call ended. tool, id, turn, outcome
	// (OutcomeOK, OutcomeError, OutcomeDenied, OutcomeBlocked),
	// duration_ms.
	EventToolCall = "tool_call"
	// EventPermission: the policy decided a call. tool, id, verdict
	// ("allow" or "deny"), stage, by, reason (of a denial), waited_ms
	// (time a person took to answer, when one was asked).
	EventPermission = "permission_decision"
	// EventGuardrail: a loop guard acted. rule, tool, signature, count,
	// reason; for the circuit breaker rule RuleFailedRounds with action
	// "note" or "stop" and count the failed rounds.
	EventGuardrail = "guardrail"
	// EventHistoryRepaired: tool calls and results were paired up again
	// before the history was sent (a run that was stopped, a stored
	// history that was cut). repairs.
	EventHistoryRepaired = "history_repaired"
	// EventRunEnd: a run ended. model, stop_reason, turns, input_tokens,
	// output_tokens, cost_usd, duration_ms.
	EventRunEnd = "run_end"

	// Reserved for the budget and cost work (issue 15 items 2 and 3), so
	// that every observer knows the names before they fire:
	// EventBudgetExceeded (scope, limit_usd, spent_usd, action) and
	// EventCostThreshold (session_id, threshold_usd, cost_usd), fired once
	// per threshold crossed; EventCompaction (messages_before,
	// messages_after, tokens_saved).
	EventBudgetExceeded = "budget_exceeded"
	EventCostThreshold  = "session_cost_threshold_crossed"
	EventCompaction     = "compaction"
	// EventTokenWarning: a session passed 80% or 95% of its usable
	// context window (model, used_tokens, window, threshold); the agent
	// fires it and EventCompaction (with level, trigger, tokens_before,
	// tokens_after) since issue 14.
	EventTokenWarning = "token_warning"
)

// Events of plan-and-execute runs (run.Service). Their model calls (the
// planner's) report EventModelCall, EventRetry (category "invalid_plan":
// the planner is asked again) and EventBudgetExceeded (scope "run") as
// agents do.
const (
	// EventPlanRunStart: a run attempt started. run_id, workflow_id,
	// review ("", resume, fork or rewind).
	EventPlanRunStart = "plan_run_start"
	// EventPlanReady: the run has its plan. run_id, steps, edited (a
	// person replaced it), duration_ms (since the attempt started).
	EventPlanReady = "plan_ready"
	// EventRunStepStart: a plan step starts. run_id, step, tool.
	EventRunStepStart = "run_step_start"
	// EventRunStepEnd: a plan step ended. run_id, step, tool, outcome
	// (OutcomeOK, OutcomeError, "cancelled"), duration_ms.
	EventRunStepEnd = "run_step_end"
	// EventPlanRunEnd: a run attempt ended. run_id, status (the run's),
	// duration_ms, cost_usd and tokens (its model calls).
	EventPlanRunEnd = "plan_run_end"
)

// Outcomes of a tool call (the outcome key and tag).
const (
	OutcomeOK      = "ok"
	OutcomeError   = "error"   // it ran and failed
	OutcomeDenied  = "denied"  // the policy refused it
	OutcomeBlocked = "blocked" // a guardrail refused it
)

// RuleFailedRounds is the circuit breaker's rule in EventGuardrail (the
// guardrail stage's are policy.GuardSameCall, GuardSameTool and
// GuardSameResult).
const RuleFailedRounds = "failed_rounds"

// Metrics, with their tags. Counters take the increment, durations the
// seconds.
const (
	MetricTurns               = "weft.turns"                // counter; model
	MetricModelDuration       = "weft.model.duration"       // seconds per attempt; model, provider, outcome (completed, or the failure's llm.Category, else its llm.Status)
	MetricModelTokens         = "weft.model.tokens"         // counter; model, type (input, output, cache_read, cache_write)
	MetricModelCost           = "weft.model.cost_usd"       // counter in USD; model
	MetricRetries             = "weft.model.retries"        // counter; model, category, failover ("true", "false")
	MetricToolCalls           = "weft.tool.calls"           // counter; tool, outcome
	MetricToolDuration        = "weft.tool.duration"        // seconds; tool
	MetricGuardrailBlocks     = "weft.guardrail.blocks"     // counter; tool, rule
	MetricCircuitBreaker      = "weft.circuit_breaker"      // counter; action (note, stop)
	MetricPermissionDecisions = "weft.permission.decisions" // counter; tool, verdict, stage
	MetricPermissionWait      = "weft.permission.wait"      // seconds a person took; tool
	MetricRuns                = "weft.runs"                 // counter; model, stop_reason

	// Reserved for budgets and cost alerts.
	MetricBudgetExceeded = "weft.budget.exceeded" // counter; scope, action
	MetricCostThreshold  = "weft.cost.threshold"  // counter; threshold
	// Plan-and-execute runs.
	MetricPlanRuns        = "weft.plan_runs"         // counter of attempts ended; status
	MetricRunSteps        = "weft.run.steps"         // counter; tool, outcome (ok, error, cancelled)
	MetricRunStepDuration = "weft.run.step.duration" // seconds; tool
)

// Tags of the metrics.
const (
	TagModel      = "model"
	TagProvider   = "provider"
	TagOutcome    = "outcome"
	TagType       = "type"
	TagCategory   = "category"
	TagFailover   = "failover"
	TagTool       = "tool"
	TagRule       = "rule"
	TagAction     = "action"
	TagVerdict    = "verdict"
	TagStage      = "stage"
	TagStopReason = "stop_reason"
	TagStatus     = "status"
)

// UnknownTool is the tool tag and attribute of a call of a tool the agent
// does not have: the model chose that name, and a metric must not grow a
// series per name a model makes up.
const UnknownTool = "_unknown"

// Spans (OpenTelemetry GenAI semantic conventions: an agent run holds its
// model calls and tool executions).
const (
	SpanInvokeAgent = "invoke_agent"
	SpanChat        = "chat"
	SpanExecuteTool = "execute_tool"
)

// Span attributes: the GenAI semantic conventions' names, and weft's own
// under weft.*.
const (
	AttrOperationName         = "gen_ai.operation.name"
	AttrProviderName          = "gen_ai.provider.name"
	AttrAgentName             = "gen_ai.agent.name"
	AttrConversationID        = "gen_ai.conversation.id"
	AttrRequestModel          = "gen_ai.request.model"
	AttrRequestMaxTokens      = "gen_ai.request.max_tokens"
	AttrRequestTemperature    = "gen_ai.request.temperature"
	AttrResponseFinishReasons = "gen_ai.response.finish_reasons"
	// AttrUsageInputTokens counts every input token, cached ones included
	// (as the conventions say); the cache attributes say how many of them
	// were read from or written to the provider's cache.
	AttrUsageInputTokens    = "gen_ai.usage.input_tokens"
	AttrUsageOutputTokens   = "gen_ai.usage.output_tokens"
	AttrUsageCacheRead      = "gen_ai.usage.cache_read.input_tokens"
	AttrUsageCacheCreation  = "gen_ai.usage.cache_creation.input_tokens"
	AttrToolName            = "gen_ai.tool.name"
	AttrToolCallID          = "gen_ai.tool.call.id"
	AttrToolType            = "gen_ai.tool.type"
	AttrToolDescription     = "gen_ai.tool.description"
	AttrErrorType           = "error.type"
	AttrCostUSD             = "weft.cost_usd"
	AttrStopReason          = "weft.stop_reason"
	AttrTurns               = "weft.turns"
	AttrToolOutcome         = "weft.tool.outcome"
	AttrAttempt             = "weft.attempt"
	AttrPermissionStage     = "weft.permission.stage"
	AttrGuardrailRule       = "weft.guardrail.rule"
	AttrRequestMessageCount = "weft.request.messages"
	AttrRunID               = "weft.run.id"
	AttrRunStep             = "weft.run.step"
)

// Parts are the parts of an observer the engine calls; each is nil when
// the observer lacks it.
type Parts struct {
	Events  Observer
	Metrics MetricObserver
	Traces  TraceObserver
}

// On reports whether any part is there.
func (p Parts) On() bool { return p.Events != nil || p.Metrics != nil || p.Traces != nil }

// capable is implemented by the built-in observers that wrap others
// (Composite, Buffered): they implement every method, and say here which
// parts their observers really have.
type capable interface {
	capabilities() (metrics, traces bool)
}

// Resolve returns the parts of o: all nil for nil and Noop. The engine
// calls it once per agent, so that an observer that lacks a part costs
// nothing for it.
func Resolve(o Observer) Parts {
	switch o.(type) {
	case nil, Noop, *Noop:
		return Parts{}
	}
	p := Parts{Events: o}
	m, _ := o.(MetricObserver)
	t, _ := o.(TraceObserver)
	if c, ok := o.(capable); ok {
		hasM, hasT := c.capabilities()
		if !hasM {
			m = nil
		}
		if !hasT {
			t = nil
		}
	}
	p.Metrics, p.Traces = m, t
	return p
}
