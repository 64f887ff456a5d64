package run

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/internal/approval"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/record"
)

// Budgets of runs (issue 15). A run's limits (RunConfig.MaxBudgetUSD and
// MaxTokensTotal, or the server's Config.Budget) bound all its model
// calls together: one running total per run attempt, checked before every
// call, never in the middle of a tool. Every model call a run makes goes
// through its meter's provider (the planner's today; plan steps are tool
// calls, and a tool that calls a model runs under the caller's own
// accounting). When the next call would pass a limit:
//
//   - with a person following the run (a client on its event stream, or
//     its approval gates on), the run pauses with a budget_request event
//     answered through the approval broker like a permission request
//     (POST /v1/runs/{id}/permissions/{request_id} with {"allow": true,
//     "max_budget_usd": 0.5} to go on with a new limit, {"allow": false}
//     to stop), a budget_decision event follows;
//   - without one, budget_request and budget_decision (allow false) are
//     recorded and the run ends with status "budget".
//
// A resume, fork or rewind is a new attempt under the same limits,
// starting from nothing spent.

// Run events of budgets: the payloads are agent.BudgetRequest (scope
// "run") and agent.BudgetDecision, as in sessions.
const (
	RunEventBudgetRequest  = string(agent.EventBudgetRequest)
	RunEventBudgetDecision = string(agent.EventBudgetDecision)
)

// UsageStore keeps the cost history (store.Usage satisfies it).
type UsageStore interface {
	AppendUsage(ctx context.Context, recs ...record.UsageRecord) error
}

// errBudget is the cause of a model call the budget refused.
var errBudget = errors.New("the run's budget is spent")

// budgetStop is the error a refused model call ends with: why, for the
// run's error message.
type budgetStop struct{ msg string }

func (e *budgetStop) Error() string { return e.msg }
func (e *budgetStop) Unwrap() error { return errBudget }

// budgetStopOf says whether err (a planning failure) is the budget's
// refusal, and the message the run ends with.
func budgetStopOf(err error) (string, bool) {
	var b *budgetStop
	if !errors.As(err, &b) {
		return "", false
	}
	return "budget: " + b.msg, true
}

// budgetInto puts the request's limits into the run's config, where they
// are kept with the run.
func (r RunRequest) budgetInto(c *RunConfig) {
	if r.MaxBudgetUSD != nil {
		c.MaxBudgetUSD = r.MaxBudgetUSD
	}
	if r.MaxTokensTotal != nil {
		c.MaxTokensTotal = r.MaxTokensTotal
	}
}

// checkBudget refuses limits that are not amounts.
func (c RunConfig) checkBudget() error {
	if p := c.MaxBudgetUSD; p != nil && (*p < 0 || math.IsNaN(*p) || math.IsInf(*p, 0)) {
		return &record.InvalidError{Err: fmt.Errorf("max_budget_usd must be a non-negative number of dollars, got %v", *p)}
	}
	if n := c.MaxTokensTotal; n != nil && *n < 0 {
		return &record.InvalidError{Err: fmt.Errorf("max_tokens_total must not be negative, got %d", *n)}
	}
	return nil
}

// meter is a run attempt's budget and spend. Steps may run in parallel,
// so it is locked; asks take turns (one question at a time).
type meter struct {
	x *execution

	ask sync.Mutex // held while a person is asked

	mu        sync.Mutex
	maxUSD    float64 // 0: none
	maxTokens int     // 0: none
	usd       float64
	tokens    int
	maxOutput int // the largest output of a call so far
}

func (x *execution) newMeter() *meter {
	b := x.m.cfg.Budget
	mt := &meter{x: x, maxUSD: b.MaxUSD, maxTokens: b.MaxTokens}
	if p := x.p.cfg.MaxBudgetUSD; p != nil {
		mt.maxUSD = *p
	}
	if n := x.p.cfg.MaxTokensTotal; n != nil {
		mt.maxTokens = *n
	}
	return mt
}

// spent is what the attempt's model calls cost so far.
func (mt *meter) spent() (usd float64, tokens int) {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	return mt.usd, mt.tokens
}

// provider wraps p so that each call is checked against the budget
// first, and accounted, recorded and observed after. role names the
// caller in observer data ("planner").
func (mt *meter) provider(p llm.Provider, info llm.ModelInfo, role string) llm.Provider {
	return &meteredProvider{p: p, info: info, mt: mt, role: role}
}

type meteredProvider struct {
	p     llm.Provider
	info  llm.ModelInfo
	mt    *meter
	role  string
	calls atomic.Int32 // calls so far: the planner's second and later are re-asks
}

func (mp *meteredProvider) Name() string { return mp.p.Name() }

func (mp *meteredProvider) Stream(ctx context.Context, req *llm.Request) iter.Seq[llm.Event] {
	return func(yield func(llm.Event) bool) {
		n := mp.calls.Add(1)
		if err := mp.mt.check(ctx, req, mp.info); err != nil {
			yield(llm.Event{Kind: llm.EventOutcome, Outcome: llm.Outcome{Status: llm.StatusAborted, Message: err.Error(), Err: err}})
			return
		}
		x := mp.mt.x
		if n > 1 {
			x.observeRetry(mp.info.ID, mp.role, int(n))
		}
		sctx := x.chatSpanStart(ctx, mp.p.Name(), mp.info.ID, req)
		start := time.Now()
		var usage llm.Usage
		var out llm.Outcome
		for ev := range mp.p.Stream(sctx, req) {
			switch ev.Kind {
			case llm.EventUsage:
				usage = ev.Usage
			case llm.EventOutcome:
				out = ev.Outcome
			}
			if !yield(ev) {
				break
			}
		}
		cost := mp.info.Cost(usage)
		mp.mt.account(usage, cost)
		x.recordUsage(ctx, mp.p.Name(), mp.info.ID, usage, cost)
		x.chatSpanEnd(sctx, mp.p.Name(), mp.info.ID, mp.role, usage, cost, out, time.Since(start))
	}
}

// account adds a completed call to the spend.
func (mt *meter) account(u llm.Usage, cost float64) {
	mt.mu.Lock()
	mt.usd += cost
	mt.tokens += u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
	mt.maxOutput = max(mt.maxOutput, u.OutputTokens)
	mt.mu.Unlock()
}

// Estimating the next call errs high, as the agent's does: the whole
// request at the dearest input rate (bytesPerToken is below the usual 4
// bytes a token), plus the largest output so far (at least outputFloor,
// at most the call's output limit) at the output rate.
const (
	outputFloor   = 256
	bytesPerToken = 3
)

func (mt *meter) estimate(req *llm.Request, info llm.ModelInfo) (usd float64, tokens int) {
	size := 0
	for _, v := range []any{req.System, req.Messages, req.Tools} {
		if b, err := json.Marshal(v); err == nil {
			size += len(b)
		}
	}
	in := (size + bytesPerToken - 1) / bytesPerToken
	mt.mu.Lock()
	out := max(mt.maxOutput, outputFloor)
	mt.mu.Unlock()
	limit := req.MaxTokens
	if limit == 0 {
		limit = info.MaxOutputTokens
	}
	if limit > 0 && out > limit {
		out = limit
	}
	inPrice := max(info.InputPrice, info.CacheWritePrice)
	return (float64(in)*inPrice + float64(out)*info.OutputPrice) / 1e6, in + out
}

// check runs before every model call of the run: nil lets it go; an
// error (a *budgetStop, or ctx's) refuses it.
func (mt *meter) check(ctx context.Context, req *llm.Request, info llm.ModelInfo) error {
	mt.ask.Lock()
	defer mt.ask.Unlock()
	mt.mu.Lock()
	maxUSD, maxTokens, spentUSD, spentTokens := mt.maxUSD, mt.maxTokens, mt.usd, mt.tokens
	mt.mu.Unlock()
	if maxUSD <= 0 && maxTokens <= 0 {
		return nil
	}
	estUSD, estTokens := mt.estimate(req, info)
	overUSD := maxUSD > 0 && spentUSD+estUSD > maxUSD
	overTokens := maxTokens > 0 && spentTokens+estTokens > maxTokens
	if !overUSD && !overTokens {
		return nil
	}
	x := mt.x
	br := agent.BudgetRequest{ID: newBudgetID(), Scope: "run", MaxUSD: maxUSD, MaxTokens: maxTokens,
		SpentUSD: spentUSD, SpentTokens: spentTokens, EstimateUSD: estUSD, EstimateTokens: estTokens}
	if overUSD {
		br.Message = fmt.Sprintf("the next model call (estimated $%.4f) would take the run past its budget of $%.4f ($%.4f spent)",
			estUSD, maxUSD, spentUSD)
	} else {
		br.Message = fmt.Sprintf("the next model call (estimated %d tokens) would take the run past its budget of %d tokens (%d spent)",
			estTokens, maxTokens, spentTokens)
	}
	d := x.askBudget(ctx, br)
	d.ID = br.ID
	action := "stop"
	if d.Allow {
		action = "allow"
	}
	x.observeBudget(br, action)
	x.emit(ctx, RunEventBudgetDecision, d)
	if err := ctx.Err(); err != nil {
		return err
	}
	if !d.Allow {
		return &budgetStop{msg: br.Message + " (" + d.Reason + ")"}
	}
	mt.mu.Lock()
	if d.MaxUSD > 0 {
		mt.maxUSD = d.MaxUSD
	}
	if d.MaxTokens > 0 {
		mt.maxTokens = d.MaxTokens
	}
	mt.mu.Unlock()
	return nil
}

// followed says whether a person can answer the run's questions now: a
// client follows its event stream, or it has approval gates on (someone
// approves its plan). A workflow called as a tool has nobody: its caller
// approved it as one call.
func (x *execution) followed() bool {
	if x.p.caller != nil && !x.p.detached {
		return false
	}
	return x.m.elog.Readers(x.lr.id) > 0 || x.p.approve || x.p.review != ""
}

// askBudget records the budget_request and gets its answer: from a
// person through the approval broker (the permission timeout, or the
// run's end, stops), or at once a stop when nobody follows the run.
func (x *execution) askBudget(ctx context.Context, br agent.BudgetRequest) agent.BudgetDecision {
	if !x.followed() {
		x.emit(ctx, RunEventBudgetRequest, br)
		return agent.BudgetDecision{Reason: "nobody is following the run to allow more"}
	}
	// Opened before the event, so that an answer sent on seeing it finds
	// the question open.
	q, err := x.m.approvals.Open(scope(x.lr.id), approval.Budget, br.ID)
	if err != nil {
		x.emit(ctx, RunEventBudgetRequest, br)
		return agent.BudgetDecision{Reason: "the budget request could not be recorded"}
	}
	if _, err := x.m.emit(ctx, x.lr.id, RunEventBudgetRequest, br); err != nil {
		q.Close()
		return agent.BudgetDecision{Reason: "the budget request could not be recorded"}
	}
	timeout := x.m.cfg.PermissionTimeout
	a, err := q.Wait(ctx, timeout)
	switch {
	case err == nil:
		if d, ok := a.Payload.(agent.BudgetDecision); ok {
			return d
		}
		return agent.BudgetDecision{Allow: a.Allow, Reason: a.Reason}
	case errors.Is(err, approval.ErrTimeout):
		return agent.BudgetDecision{Reason: fmt.Sprintf("no answer to the budget request within %s", timeout)}
	default:
		return agent.BudgetDecision{Reason: "the run was stopped while waiting for an answer"}
	}
}

// AnswerBudget answers a run's budget_request: d.Allow with new limits (0
// keeps a limit), or stop. ErrNotFound for a request that is not open (or
// not a budget request), ErrAnswered for a second answer.
func (m *Service) AnswerBudget(runID, requestID string, d agent.BudgetDecision) error {
	d.ID = requestID
	if !d.Allow && d.Reason == "" {
		d.Reason = "the user declined to raise the budget"
	}
	return m.approvals.AnswerIf(scope(runID), requestID, approval.Answer{Allow: d.Allow, Reason: d.Reason, Payload: d},
		kindIs(approval.Budget))
}

// recordUsage adds a model call to the cost history, under the run. A
// failure is logged, never the run's: the call was made and paid for.
func (x *execution) recordUsage(ctx context.Context, provider, model string, u llm.Usage, cost float64) {
	us := x.m.cfg.Usage
	if us == nil {
		return
	}
	rec := record.UsageRecord{Time: time.Now().UTC(), RunID: x.lr.id, Provider: provider, Model: model,
		InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens),
		CacheReadTokens: int64(u.CacheReadTokens), CacheWriteTokens: int64(u.CacheWriteTokens), CostUSD: cost}
	if err := us.AppendUsage(context.WithoutCancel(ctx), rec); err != nil {
		x.m.log.Warn("the cost history could not be written", "run", x.lr.id, "error", err)
	}
}

func newBudgetID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "budget_" + hex.EncodeToString(b[:])
}
