package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/observe"
)

// StopBudget: the next model call would have taken the run past its
// budget (Config.Budget) and nobody allowed more.
const StopBudget = "budget"

// Events of budgets and cost alerts.
const (
	// EventBudgetRequest: the next model call would exceed the budget; the
	// run waits for Config.ApproveBudget (budget_decision follows).
	EventBudgetRequest EventType = "budget_request"
	// EventBudgetDecision answers a budget_request: allowed (with the new
	// limits) or not (done follows, stop_reason "budget").
	EventBudgetDecision EventType = "budget_decision"
	// EventCostThreshold: the session's cost crossed one of
	// Budget.Thresholds, once per threshold and session.
	EventCostThreshold EventType = "session_cost_threshold_crossed"
)

// DefaultCostThresholds are the session costs in USD at which
// session_cost_threshold_crossed fires (seed 000).
var DefaultCostThresholds = []float64{1, 5, 10, 50, 100}

// Budget bounds what a run (or a session) may spend on model calls. It is
// checked before every model call, never in the middle of a tool call:
// when what was spent plus a conservative estimate of the call about to be
// made would pass a limit, the run asks Config.ApproveBudget, and without
// one it ends with stop_reason "budget". The zero value has no limits and
// the default cost thresholds.
type Budget struct {
	// MaxUSD is the limit in US dollars at the catalogue's list prices
	// (llm.ModelInfo.Cost); 0 means none. A model the catalogue does not
	// price costs nothing, so only MaxTokens bounds it.
	MaxUSD float64
	// MaxTokens bounds all tokens of the model calls: input, output,
	// cache reads and writes (done's total_tokens); 0 means none.
	MaxTokens int
	// Session makes the limits count the whole session (Session.Totals:
	// every run on it, and what SetTotals restored) instead of each run
	// on its own. A raised limit then holds for the later runs too.
	Session bool
	// Thresholds are the session costs in USD at which
	// session_cost_threshold_crossed fires, once each per session; nil
	// means DefaultCostThresholds, an empty non-nil slice none.
	Thresholds []float64
}

// BudgetApproveFunc is asked when the next model call would pass the
// budget. It may block (asking a person) and must honour ctx; a panic
// counts as a stop. Its answer allows that one call at least: the new
// limits apply from the next check on.
type BudgetApproveFunc func(ctx context.Context, req BudgetRequest) BudgetDecision

// BudgetRequest is the payload of budget_request and what
// Config.ApproveBudget is asked.
type BudgetRequest struct {
	ID string `json:"id"`
	// Scope is "run" or "session" (Budget.Session).
	Scope string `json:"scope"`
	// The limits in force (0: none), what the scope spent so far and the
	// estimate of the call about to be made.
	MaxUSD         float64 `json:"max_budget_usd,omitempty"`
	MaxTokens      int     `json:"max_tokens_total,omitempty"`
	SpentUSD       float64 `json:"spent_usd"`
	SpentTokens    int     `json:"spent_tokens"`
	EstimateUSD    float64 `json:"estimate_usd"`
	EstimateTokens int     `json:"estimate_tokens"`
	// Message says it in a sentence, for a person.
	Message string `json:"message"`
}

// BudgetDecision answers a BudgetRequest: Allow with new limits (a zero
// limit keeps the old one), or stop.
type BudgetDecision struct {
	ID        string  `json:"id"`
	Allow     bool    `json:"allow"`
	MaxUSD    float64 `json:"max_budget_usd,omitempty"`
	MaxTokens int     `json:"max_tokens_total,omitempty"`
	Reason    string  `json:"reason,omitempty"`
}

// CostThresholdData is the payload of session_cost_threshold_crossed.
type CostThresholdData struct {
	ThresholdUSD float64 `json:"threshold_usd"`
	CostUSD      float64 `json:"cost_usd"` // the session's cost now
}

// CallUsage is one completed model call's usage and cost, for
// Config.OnUsage: the numbers of its turn_end, with the model and time.
type CallUsage struct {
	Time     time.Time
	Provider string
	Model    string
	Turn     int
	Usage    llm.Usage
	CostUSD  float64
}

// budgetState is a session's memory for estimating the next call,
// guarded by Session.mu.
type budgetState struct {
	// What the last call's prompt was: its tokens (input and cache), its
	// cost, and how many messages the history held when it was sent.
	// msgs == 0 means unknown: the next estimate counts the whole prompt.
	promptTokens int
	promptCost   float64
	msgs         int
	maxOutput    int // the largest output of a call so far
	// raised are the limits a person set for a session-scoped budget.
	raised *budgetLimits
	// alerted is the highest cost threshold already reported.
	alerted float64
}

type budgetLimits struct {
	usd    float64
	tokens int
}

// runBudget is a run's budget: its limits (after any raise) and the
// history length its next call's estimate was made at.
type runBudget struct {
	init   bool
	limits budgetLimits
	msgs   int
}

// SetTotals restores a session's cumulative usage and cost, for a front
// door that resumes a stored conversation (ResumeSession starts at zero):
// session-scoped budgets then count what was spent before, and the cost
// thresholds at or below the restored cost do not fire again.
func (s *Session) SetTotals(t Totals) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.totals = t
	s.budget.alerted = 0
	for _, th := range s.agent.thresholds() {
		if th <= t.CostUSD && th > s.budget.alerted {
			s.budget.alerted = th
		}
	}
}

func (a *Agent) thresholds() []float64 {
	if a.cfg.Budget.Thresholds == nil {
		return DefaultCostThresholds
	}
	return a.cfg.Budget.Thresholds
}

// outputFloor is the fewest output tokens the estimate of a call counts:
// the first call of a session has no history of outputs to go by.
const outputFloor = 256

// bytesPerToken is deliberately low (tokenizers average about 4 bytes a
// token on English and code), so that the estimate errs high.
const bytesPerToken = 3

// estimateCall estimates the tokens and cost of the model call about to
// be made, erring high: the prompt the last call sent, at what it cost
// then, plus what the history gained since, at the dearest input rate
// (uncached or cache write), plus the largest output so far (at least
// outputFloor, at most the call's output limit) at the output rate. The
// whole prompt is counted at the dearest rate when there is no last call
// to go by.
func (r *run) estimateCall() (usd float64, tokens int) {
	info := r.a.info
	inPrice := max(info.InputPrice, info.CacheWritePrice)
	r.s.mu.Lock()
	st := r.s.budget
	msgs := r.s.messages
	n := len(msgs)
	var newBytes int
	var base int
	var baseCost float64
	if st.msgs > 0 && st.msgs <= n {
		base, baseCost = st.promptTokens, st.promptCost
		// The last message then may have had more merged into it since.
		newBytes = jsonSize(msgs[st.msgs-1:])
	} else {
		newBytes = jsonSize(msgs)
	}
	r.s.mu.Unlock()
	if st.msgs == 0 || st.msgs > n {
		var tools []llm.ToolSpec
		if r.a.cfg.Tools != nil {
			tools = r.a.cfg.Tools.LLMSpecs()
		}
		newBytes += jsonSize(tools) + jsonSize(r.systemPrompt(tools))
	}
	r.bud.msgs = n
	newTokens := (newBytes + bytesPerToken - 1) / bytesPerToken
	out := max(st.maxOutput, outputFloor)
	limit := r.a.cfg.MaxTokens
	if limit == 0 {
		limit = info.MaxOutputTokens
	}
	if limit > 0 && out > limit {
		out = limit
	}
	tokens = base + newTokens + out
	usd = baseCost + (float64(newTokens)*inPrice+float64(out)*info.OutputPrice)/1e6
	return usd, tokens
}

func jsonSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}

func totalTokens(u llm.Usage) int {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// limits are the run's budget limits in force.
func (r *run) limits() budgetLimits {
	if !r.bud.init {
		r.bud.init = true
		b := r.a.cfg.Budget
		r.bud.limits = budgetLimits{usd: b.MaxUSD, tokens: b.MaxTokens}
		if b.Session {
			r.s.mu.Lock()
			if r.s.budget.raised != nil {
				r.bud.limits = *r.s.budget.raised
			}
			r.s.mu.Unlock()
		}
	}
	return r.bud.limits
}

// spent is what the budget's scope has spent: the run's model calls, or
// the session's totals (Budget.Session). It is the one place that says
// what counts, so that other spend a run causes (sub-agents' model calls
// rolled up into their parent) is added here.
func (r *run) spent() (usd float64, tokens int) {
	if r.a.cfg.Budget.Session {
		t := r.s.Totals()
		return t.CostUSD, totalTokens(t.Usage)
	}
	return r.cost, totalTokens(r.usage)
}

// checkBudget runs before every model call. It reports false when the
// run ended (stopped on the budget, or cancelled while a person was being
// asked).
func (r *run) checkBudget() bool {
	lim := r.limits()
	if lim.usd <= 0 && lim.tokens <= 0 {
		return true
	}
	estUSD, estTokens := r.estimateCall()
	scope := "run"
	if r.a.cfg.Budget.Session {
		scope = "session"
	}
	spentUSD, spentTokens := r.spent()
	overUSD := lim.usd > 0 && spentUSD+estUSD > lim.usd
	overTokens := lim.tokens > 0 && spentTokens+estTokens > lim.tokens
	if !overUSD && !overTokens {
		return true
	}
	req := BudgetRequest{ID: budgetID(), Scope: scope, MaxUSD: lim.usd, MaxTokens: lim.tokens,
		SpentUSD: spentUSD, SpentTokens: spentTokens, EstimateUSD: estUSD, EstimateTokens: estTokens}
	if overUSD {
		req.Message = fmt.Sprintf("the next model call (estimated $%.4f) would take the %s past its budget of $%.4f ($%.4f spent)",
			estUSD, scope, lim.usd, spentUSD)
	} else {
		req.Message = fmt.Sprintf("the next model call (estimated %d tokens) would take the %s past its budget of %d tokens (%d spent)",
			estTokens, scope, lim.tokens, spentTokens)
	}
	if !r.emit(EventBudgetRequest, req) {
		return false
	}
	d := r.askBudget(req)
	d.ID = req.ID
	if r.ctx.Err() != nil {
		r.observeBudget(req, "stop")
		r.done(StopCancelled)
		return false
	}
	action := "stop"
	if d.Allow {
		action = "allow"
	}
	r.observeBudget(req, action)
	if !r.emit(EventBudgetDecision, d) {
		return false
	}
	if !d.Allow {
		r.a.log.Debug("a run stopped on its budget", "scope", scope, "reason", d.Reason)
		r.done(StopBudget)
		return false
	}
	if d.MaxUSD > 0 {
		r.bud.limits.usd = d.MaxUSD
	}
	if d.MaxTokens > 0 {
		r.bud.limits.tokens = d.MaxTokens
	}
	if r.a.cfg.Budget.Session {
		raised := r.bud.limits
		r.s.mu.Lock()
		r.s.budget.raised = &raised
		r.s.mu.Unlock()
	}
	return true
}

// askBudget asks Config.ApproveBudget; none, or one that panics, stops.
func (r *run) askBudget(req BudgetRequest) (d BudgetDecision) {
	fn := r.a.cfg.ApproveBudget
	if fn == nil {
		return BudgetDecision{Reason: "no budget approver is configured, so the run stops at its budget"}
	}
	defer func() {
		if p := recover(); p != nil {
			r.a.log.Error("the budget approver panicked", "panic", p)
			d = BudgetDecision{Reason: "the budget approver failed"}
		}
	}()
	return fn(r.ctx, req)
}

func budgetID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "budget_" + hex.EncodeToString(b[:])
}

// afterCall accounts a completed model call (its turn_end is out): the
// estimate's memory, the cost thresholds and Config.OnUsage. It reports
// false when the consumer stopped.
func (r *run) afterCall(u llm.Usage, cost float64) bool {
	info := r.a.info
	r.s.mu.Lock()
	st := &r.s.budget
	if r.bud.msgs > 0 {
		st.msgs = r.bud.msgs
		st.promptTokens = u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
		st.promptCost = (float64(u.InputTokens)*info.InputPrice + float64(u.CacheReadTokens)*info.CacheReadPrice +
			float64(u.CacheWriteTokens)*info.CacheWritePrice) / 1e6
		r.bud.msgs = 0
	}
	st.maxOutput = max(st.maxOutput, u.OutputTokens)
	total := r.s.totals.CostUSD
	var crossed []float64
	for _, th := range r.a.thresholds() {
		if th > st.alerted && th <= total {
			crossed = append(crossed, th)
		}
	}
	for _, th := range crossed {
		st.alerted = max(st.alerted, th)
	}
	r.s.mu.Unlock()
	if fn := r.a.cfg.OnUsage; fn != nil {
		cu := CallUsage{Time: time.Now(), Provider: r.a.cfg.Provider.Name(), Model: r.a.cfg.Model, Turn: r.turns, Usage: u, CostUSD: cost}
		r.safely(func() { fn(r.ctx, cu) })
	}
	for _, th := range crossed {
		r.observeThreshold(th, total)
		if !r.emit(EventCostThreshold, CostThresholdData{ThresholdUSD: th, CostUSD: total}) {
			return false
		}
	}
	return true
}

// observeBudget reports a breach and what was decided.
func (r *run) observeBudget(req BudgetRequest, action string) {
	o := r.a.obs
	if o.Metrics != nil {
		r.safely(func() {
			o.Metrics.Metric(observe.MetricBudgetExceeded, 1, map[string]string{"scope": req.Scope, observe.TagAction: action})
		})
	}
	if o.Events != nil {
		data := map[string]any{"scope": req.Scope, "limit_usd": req.MaxUSD, "spent_usd": req.SpentUSD,
			"estimate_usd": req.EstimateUSD, "limit_tokens": req.MaxTokens, "spent_tokens": req.SpentTokens,
			"estimate_tokens": req.EstimateTokens, "action": action}
		r.safely(func() { o.Events.Event(observe.EventBudgetExceeded, data) })
	}
}

// observeThreshold reports a cost threshold crossed.
func (r *run) observeThreshold(th, total float64) {
	o := r.a.obs
	if o.Metrics != nil {
		r.safely(func() {
			o.Metrics.Metric(observe.MetricCostThreshold, 1, map[string]string{"threshold": strconv.FormatFloat(th, 'f', -1, 64)})
		})
	}
	if o.Events != nil {
		data := map[string]any{"model": r.a.cfg.Model, "threshold_usd": th, "cost_usd": total}
		r.safely(func() { o.Events.Event(observe.EventCostThreshold, data) })
	}
}

// validate refuses limits and thresholds that cannot mean anything.
func (b Budget) validate() error {
	if b.MaxUSD < 0 || math.IsNaN(b.MaxUSD) || math.IsInf(b.MaxUSD, 0) {
		return fmt.Errorf("agent: Budget.MaxUSD %v is not a price", b.MaxUSD)
	}
	if b.MaxTokens < 0 {
		return fmt.Errorf("agent: Budget.MaxTokens %d is negative", b.MaxTokens)
	}
	for _, th := range b.Thresholds {
		if th <= 0 || math.IsNaN(th) || math.IsInf(th, 0) {
			return fmt.Errorf("agent: cost threshold %v is not a positive price", th)
		}
	}
	return nil
}

// CarryBudget makes s continue from's spend, for a front door that
// replaces a session with one resumed on part of its history (a rewind):
// its totals, the cost thresholds already reported and a raised
// session-scoped limit. The estimate of s's first call counts its whole
// prompt.
func (s *Session) CarryBudget(from *Session) {
	from.mu.Lock()
	t, st := from.totals, from.budget
	from.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.totals = t
	s.budget = budgetState{raised: st.raised, alerted: st.alerted, maxOutput: st.maxOutput}
}
