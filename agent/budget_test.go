package agent_test

import (
	"bytes"
	"context"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/tool"
)

// budgetModel is priced by the default catalogue: $3 input, $15 output
// per million tokens.
const budgetModel = "claude-sonnet-4-5"

// budgetAgent runs budgetModel against the Anthropic protocol fake.
func budgetAgent(t *testing.T, fake *llmtest.Server, mutate func(*agent.Config)) *agent.Agent {
	t.Helper()
	reg, err := tool.NewRegistry(echoTool("echo", true, nil))
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{
		Provider: anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL, APIKey: "k"}}),
		Model:    budgetModel, Tools: reg, Approve: agent.AllowAll,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !a.ModelInfo().Known || a.ModelInfo().InputPrice != 3 {
		t.Fatalf("the catalogue does not price %s as the test expects: %+v", budgetModel, a.ModelInfo())
	}
	return a
}

// echoTurn is a tool call costing 2000*3 + 200*15 per million = $0.009.
func echoTurn(id string) llmtest.Script {
	return llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock(id, "echo", `{"text":"x"}`)},
		Usage: llm.Usage{InputTokens: 2000, OutputTokens: 200}}
}

func sumTurnEnds(c collected) float64 {
	var sum float64
	for _, e := range c.of(agent.EventTurnEnd) {
		sum += e.Data.(agent.TurnEndData).CostUSD
	}
	return sum
}

func TestBudgetStopsBeforeTheCallThatWouldExceedIt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		budget   agent.Budget
		approve  agent.BudgetApproveFunc
		requests int    // model calls the fake saw
		stop     string // done's stop_reason
		allowed  bool   // the budget_decision
	}{
		{name: "no approver stops", budget: agent.Budget{MaxUSD: 0.01}, requests: 1, stop: agent.StopBudget},
		{name: "approver stops", budget: agent.Budget{MaxUSD: 0.01}, requests: 1, stop: agent.StopBudget,
			approve: func(context.Context, agent.BudgetRequest) agent.BudgetDecision {
				return agent.BudgetDecision{Reason: "no"}
			}},
		{name: "approver raises the limit", budget: agent.Budget{MaxUSD: 0.01}, requests: 2, stop: agent.StopEndTurn, allowed: true,
			approve: func(_ context.Context, req agent.BudgetRequest) agent.BudgetDecision {
				return agent.BudgetDecision{Allow: true, MaxUSD: req.MaxUSD * 10}
			}},
		{name: "approver that panics stops", budget: agent.Budget{MaxUSD: 0.01}, requests: 1, stop: agent.StopBudget,
			approve: func(context.Context, agent.BudgetRequest) agent.BudgetDecision { panic("boom") }},
		{name: "token limit", budget: agent.Budget{MaxTokens: 2500}, requests: 1, stop: agent.StopBudget},
		{name: "enough budget", budget: agent.Budget{MaxUSD: 0.05, MaxTokens: 10_000}, requests: 2, stop: agent.StopEndTurn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.NewAnthropic(t)
			fake.Push(echoTurn("c1"), llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("done")},
				Usage: llm.Usage{InputTokens: 2300, OutputTokens: 10}})
			var log bytes.Buffer
			a := budgetAgent(t, fake, func(c *agent.Config) {
				c.Budget, c.ApproveBudget, c.Observer = tt.budget, tt.approve, observe.NewStderr(&log)
			})
			c := collect(a.NewSession(), context.Background(), "go")
			d := c.done(t)
			if got := len(fake.Requests()); got != tt.requests {
				t.Fatalf("the model was called %d times, want %d; events %v", got, tt.requests, c.types())
			}
			if d.StopReason != tt.stop {
				t.Fatalf("stop_reason = %q, want %q", d.StopReason, tt.stop)
			}
			if tt.budget.MaxUSD > 0 && !tt.allowed && d.CostUSD > tt.budget.MaxUSD {
				t.Fatalf("spent $%v over the budget of $%v", d.CostUSD, tt.budget.MaxUSD)
			}
			reqs, decs := c.of(agent.EventBudgetRequest), c.of(agent.EventBudgetDecision)
			if tt.stop == agent.StopEndTurn && !tt.allowed {
				if len(reqs)+len(decs) != 0 {
					t.Fatalf("budget events in a run within its budget: %v", c.types())
				}
				return
			}
			if len(reqs) != 1 || len(decs) != 1 {
				t.Fatalf("want one budget_request and one budget_decision, events %v", c.types())
			}
			action := "action=stop"
			if tt.allowed {
				action = "action=allow"
			}
			if n := strings.Count(log.String(), "weft: "+observe.EventBudgetExceeded); n != 1 || !strings.Contains(log.String(), action) {
				t.Fatalf("the observer saw:\n%s", log.String())
			}
			req, dec := reqs[0].Data.(agent.BudgetRequest), decs[0].Data.(agent.BudgetDecision)
			if req.ID == "" || dec.ID != req.ID || dec.Allow != tt.allowed || req.Scope != "run" || req.Message == "" {
				t.Fatalf("request %+v, decision %+v", req, dec)
			}
			// The request comes after the first turn's tool result and
			// before any second turn_start: never mid-tool.
			var sawResult bool
			for _, e := range c.events {
				switch e.Type {
				case agent.EventToolResult:
					sawResult = true
				case agent.EventBudgetRequest:
					if !sawResult {
						t.Fatalf("budget_request before the tool result: %v", c.types())
					}
				}
			}
			if math.Abs(req.SpentUSD-0.009) > 1e-9 || req.EstimateUSD <= 0 {
				t.Fatalf("request = %+v, want $0.009 spent and an estimate", req)
			}
			if tt.budget.MaxUSD > 0 && req.SpentUSD+req.EstimateUSD <= tt.budget.MaxUSD {
				t.Fatalf("asked though the estimate fits: %+v", req)
			}
		})
	}
}

// TestBudgetEstimateIsConservative: the estimate of the call that was
// asked about is at least what that call then cost.
func TestBudgetEstimateIsConservative(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	second := llm.Usage{InputTokens: 2050, OutputTokens: 150} // the prompt grew by the tool call and result
	fake.Push(echoTurn("c1"), llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("done")}, Usage: second})
	var asked []agent.BudgetRequest
	a := budgetAgent(t, fake, func(c *agent.Config) {
		c.Budget = agent.Budget{MaxUSD: 0.0001}
		c.ApproveBudget = func(_ context.Context, req agent.BudgetRequest) agent.BudgetDecision {
			asked = append(asked, req)
			return agent.BudgetDecision{Allow: true}
		}
	})
	c := collect(a.NewSession(), context.Background(), "go")
	if d := c.done(t); d.StopReason != agent.StopEndTurn || len(asked) != 2 {
		t.Fatalf("done %+v after %d requests", d, len(asked))
	}
	cost := a.ModelInfo().Cost(second)
	if asked[1].EstimateUSD < cost || asked[1].EstimateTokens < second.InputTokens+second.OutputTokens {
		t.Fatalf("the estimate %+v is below the call's cost $%v", asked[1], cost)
	}
}

// TestSessionBudgetRaiseHolds: a session-scoped limit counts every run,
// and a raise holds for the runs after it.
func TestSessionBudgetRaiseHolds(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	answer := func(text string) llmtest.Script {
		return llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(text)}, Usage: llm.Usage{InputTokens: 2000, OutputTokens: 200}}
	}
	fake.Push(answer("one"), answer("two"), answer("three"))
	var mu sync.Mutex
	asks := 0
	a := budgetAgent(t, fake, func(c *agent.Config) {
		c.Budget = agent.Budget{MaxUSD: 0.012, Session: true}
		c.ApproveBudget = func(_ context.Context, req agent.BudgetRequest) agent.BudgetDecision {
			mu.Lock()
			defer mu.Unlock()
			asks++
			if req.Scope != "session" {
				t.Errorf("scope = %q", req.Scope)
			}
			return agent.BudgetDecision{Allow: true, MaxUSD: 1}
		}
	})
	s := a.NewSession()
	for i, want := range []string{"one", "two", "three"} {
		c := collect(s, context.Background(), "go")
		if d := c.done(t); d.Text != want || d.StopReason != agent.StopEndTurn {
			t.Fatalf("run %d: done %+v", i, d)
		}
	}
	if asks != 1 {
		t.Fatalf("asked %d times, want once (run two; the raise holds for run three)", asks)
	}
}

// TestCostThresholdsFireOnce: each threshold fires once per session, in
// the event stream and to the observer, including several crossed by one
// call, and none at or below a cost restored with SetTotals.
func TestCostThresholdsFireOnce(t *testing.T) {
	t.Parallel()
	// $0.009 a call.
	fake := llmtest.NewAnthropic(t)
	for range 4 {
		fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("ok")}, Usage: llm.Usage{InputTokens: 2000, OutputTokens: 200}})
	}
	// $0.0405 in one call.
	fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("big")}, Usage: llm.Usage{InputTokens: 10_000, OutputTokens: 700}})
	var log bytes.Buffer
	a := budgetAgent(t, fake, func(c *agent.Config) {
		c.Budget = agent.Budget{Thresholds: []float64{0.01, 0.02, 0.05, 0.06, 1}}
		c.Observer = observe.NewStderr(&log)
	})
	s := a.NewSession()
	var fired []float64
	for range 5 {
		c := collect(s, context.Background(), "go")
		for _, e := range c.of(agent.EventCostThreshold) {
			d := e.Data.(agent.CostThresholdData)
			if d.CostUSD < d.ThresholdUSD {
				t.Fatalf("fired %+v below its threshold", d)
			}
			fired = append(fired, d.ThresholdUSD)
		}
	}
	// Costs: .009 .018 .027 .036 .0765: 0.01 (2nd), 0.02 (3rd), 0.05 and
	// 0.06 (5th).
	if want := []float64{0.01, 0.02, 0.05, 0.06}; !floatsEqual(fired, want) {
		t.Fatalf("fired %v, want %v", fired, want)
	}
	if n := strings.Count(log.String(), "weft: "+observe.EventCostThreshold); n != 4 {
		t.Fatalf("the observer saw %d threshold events, want 4:\n%s", n, log.String())
	}

	// A resumed session at $0.055 has crossed 0.01..0.05 already.
	fake2 := llmtest.NewAnthropic(t)
	fake2.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("ok")}, Usage: llm.Usage{InputTokens: 2000, OutputTokens: 200}})
	a2 := budgetAgent(t, fake2, func(c *agent.Config) { c.Budget = agent.Budget{Thresholds: []float64{0.01, 0.02, 0.05, 0.06}} })
	s2 := a2.ResumeSession(nil)
	s2.SetTotals(agent.Totals{CostUSD: 0.055})
	c := collect(s2, context.Background(), "go")
	var got []float64
	for _, e := range c.of(agent.EventCostThreshold) {
		got = append(got, e.Data.(agent.CostThresholdData).ThresholdUSD)
	}
	if !floatsEqual(got, []float64{0.06}) {
		t.Fatalf("after SetTotals fired %v, want [0.06]", got)
	}
}

// TestOnUsageMatchesTurnEnds: every model call reaches OnUsage with the
// turn_end's cost.
func TestOnUsageMatchesTurnEnds(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	fake.Push(echoTurn("c1"), echoTurn("c2"), llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("done")},
		Usage: llm.Usage{InputTokens: 100, OutputTokens: 10, CacheReadTokens: 3000}})
	var calls []agent.CallUsage
	a := budgetAgent(t, fake, func(c *agent.Config) {
		c.OnUsage = func(_ context.Context, u agent.CallUsage) { calls = append(calls, u) }
	})
	c := collect(a.NewSession(), context.Background(), "go")
	var sum float64
	for i, u := range calls {
		if u.Model != budgetModel || u.Provider != "anthropic" || u.Turn != i+1 || u.Time.IsZero() {
			t.Fatalf("call %d = %+v", i, u)
		}
		sum += u.CostUSD
	}
	if len(calls) != 3 || math.Abs(sum-sumTurnEnds(c)) > 1e-12 || math.Abs(sum-c.done(t).CostUSD) > 1e-12 {
		t.Fatalf("%d calls costing $%v; turn_ends $%v", len(calls), sum, sumTurnEnds(c))
	}
}

func TestBudgetValidation(t *testing.T) {
	t.Parallel()
	for _, b := range []agent.Budget{{MaxUSD: -1}, {MaxTokens: -5}, {MaxUSD: math.NaN()}, {Thresholds: []float64{1, -2}}} {
		_, err := agent.New(agent.Config{Provider: llmtest.NewScripted("scripted"), Model: "m", Budget: b})
		if err == nil {
			t.Errorf("budget %+v accepted", b)
		}
	}
}

func floatsEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			return false
		}
	}
	return true
}

// TestCarryBudget: a session that replaces another (weft chat's /rewind)
// keeps its spend, the thresholds already reported and a raised limit.
func TestCarryBudget(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	for _, text := range []string{"one", "two", "three"} {
		fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(text)}, Usage: llm.Usage{InputTokens: 2000, OutputTokens: 200}})
	}
	asks := 0
	a := budgetAgent(t, fake, func(c *agent.Config) {
		c.Budget = agent.Budget{MaxUSD: 0.012, Session: true, Thresholds: []float64{0.005}}
		c.ApproveBudget = func(context.Context, agent.BudgetRequest) agent.BudgetDecision {
			asks++
			return agent.BudgetDecision{Allow: true, MaxUSD: 0.5}
		}
	})
	s := a.NewSession()
	first := collect(s, context.Background(), "go")
	second := collect(s, context.Background(), "go")
	if asks != 1 || len(first.of(agent.EventCostThreshold)) != 1 || len(second.of(agent.EventCostThreshold)) != 0 {
		t.Fatalf("asked %d times; thresholds %v / %v", asks, first.types(), second.types())
	}
	ns := a.ResumeSession(s.Messages()[:2])
	ns.CarryBudget(s)
	if ns.Totals() != s.Totals() {
		t.Fatalf("totals %+v, want %+v", ns.Totals(), s.Totals())
	}
	third := collect(ns, context.Background(), "go")
	if d := third.done(t); d.Text != "three" || asks != 1 || len(third.of(agent.EventCostThreshold)) != 0 {
		t.Fatalf("after the carry: done %+v, asked %d times, events %v", d, asks, third.types())
	}
}
