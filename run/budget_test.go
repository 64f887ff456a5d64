package run_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/run"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool"
)

// pricedModels resolves every spec to one scripted provider with list
// prices: $1 per million input tokens, $5 per million output tokens.
type pricedModels struct{ p *llmtest.Scripted }

func (m pricedModels) Resolve(string) (llm.Provider, llm.ModelInfo, error) {
	return m.p, llm.ModelInfo{ID: "m", Provider: "scripted", MaxOutputTokens: 4000, InputPrice: 1, OutputPrice: 5, Known: true}, nil
}

// budgetRig is a run service over a temp SQLite store (its cost history
// too) with a priced scripted planner and two tools: echo (returns its
// text) and fail (always fails).
type budgetRig struct {
	db   *sqlite.DB
	p    *llmtest.Scripted
	runs *run.Service
}

func newBudgetRig(t *testing.T, def agent.Budget, obs observe.Observer, scripts ...llmtest.Script) *budgetRig {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "weft.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	echo := tool.Func("echo", "returns its text", tool.Meta{ReadOnly: true, ConcurrencySafe: true},
		func(ctx context.Context, in textIn, _ *tool.Call) (tool.Result, error) {
			return tool.Text(in.Text), nil
		})
	fail := tool.Func("fail", "always fails", tool.Meta{ReadOnly: true},
		func(ctx context.Context, in textIn, _ *tool.Call) (tool.Result, error) {
			return tool.Errorf("broken: %s", in.Text), nil
		})
	reg, err := tool.NewRegistry(echo, fail)
	if err != nil {
		t.Fatal(err)
	}
	p := llmtest.NewScripted("scripted", scripts...)
	m, err := run.New(context.Background(), run.Config{Runs: db, Workflows: db, Tools: reg, Models: pricedModels{p},
		DefaultModel: "scripted:m", Budget: def, Usage: db, Observer: obs, PermissionTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		_ = db.Close()
	})
	return &budgetRig{db: db, p: p, runs: m}
}

// wait waits for the run's end.
func (r *budgetRig) wait(t *testing.T, id string) run.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := r.runs.WaitRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// events reads the run's events as stored.
func (r *budgetRig) events(t *testing.T, id string) []event.Event {
	t.Helper()
	last, err := r.runs.LastSeq(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	rd := r.runs.Subscribe(id, 0)
	defer rd.Close()
	var out []event.Event
	for len(out) == 0 || out[len(out)-1].Seq < last {
		ev, err := rd.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func ofType(evs []event.Event, typ string) []event.Event {
	var out []event.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// The planner's answers: one without a plan (1,000 input and 1,500
// output tokens: $0.0085 at pricedModels' prices), then a valid plan.
var (
	noPlan    = withUsage(llmtest.Text("I am not sure yet."), llm.Usage{InputTokens: 1000, OutputTokens: 1500})
	validPlan = withUsage(llmtest.Text(`{"steps":[{"id":"s","tool":"echo","args":{"text":"hi"}}]}`), llm.Usage{InputTokens: 1000, OutputTokens: 100})
)

func withUsage(s llmtest.Script, u llm.Usage) llmtest.Script {
	s.Usage = u
	return s
}

func ptr[T any](v T) *T { return &v }

// TestRunBudget: a run's budget (its request's max_budget_usd or
// max_tokens_total, its config's, or the server's default) covers every
// model call of the run together and is checked before each: a $0.01
// budget lets the first planner call ($0.0085) through and stops the run
// before the second, which would pass it, is sent; nobody follows these
// runs (auto-approved, no stream client), so the run ends with status
// "budget" after budget_request and a refusing budget_decision. Every
// call made is in the cost history under the run's id.
func TestRunBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		def      agent.Budget
		req      run.RunRequest
		scripts  []llmtest.Script
		status   string
		requests int
		costUSD  float64
	}{
		{name: "one cent stops before the call that would pass it", req: run.RunRequest{MaxBudgetUSD: ptr(0.01)},
			scripts: []llmtest.Script{noPlan, validPlan}, status: run.RunStoppedOnBudget, requests: 1, costUSD: 0.0085},
		{name: "a dollar is enough", req: run.RunRequest{MaxBudgetUSD: ptr(1.0)},
			scripts: []llmtest.Script{noPlan, validPlan}, status: run.RunCompleted, requests: 2, costUSD: 0.0085 + 0.0015},
		{name: "the config's token limit", req: run.RunRequest{Config: run.RunConfig{MaxTokensTotal: ptr(10)}},
			scripts: []llmtest.Script{validPlan}, status: run.RunStoppedOnBudget},
		{name: "the server's default", def: agent.Budget{MaxTokens: 10},
			scripts: []llmtest.Script{validPlan}, status: run.RunStoppedOnBudget},
		{name: "a request's 0 lifts the default", def: agent.Budget{MaxTokens: 10}, req: run.RunRequest{MaxTokensTotal: ptr(0)},
			scripts: []llmtest.Script{validPlan}, status: run.RunCompleted, requests: 1, costUSD: 0.0015},
		{name: "the request's limit replaces the config's", req: run.RunRequest{MaxBudgetUSD: ptr(1.0), Config: run.RunConfig{MaxBudgetUSD: ptr(1e-9)}},
			scripts: []llmtest.Script{validPlan}, status: run.RunCompleted, requests: 1, costUSD: 0.0015},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newBudgetRig(t, tc.def, nil, tc.scripts...)
			req := tc.req
			req.Goal = "say hi"
			req.Config.AutoApprove = true
			created, err := r.runs.CreateRun(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			end := r.wait(t, created.ID)
			if end.Status != tc.status || len(r.p.Requests()) != tc.requests {
				t.Fatalf("status %q (%s), %d model calls; want %q, %d", end.Status, end.Error, len(r.p.Requests()), tc.status, tc.requests)
			}
			evs := r.events(t, created.ID)
			asks, decisions := ofType(evs, run.RunEventBudgetRequest), ofType(evs, run.RunEventBudgetDecision)
			if tc.status == run.RunStoppedOnBudget {
				var d agent.BudgetDecision
				if len(asks) != 1 || len(decisions) != 1 || json.Unmarshal(decisions[0].Data, &d) != nil || d.Allow || d.Reason == "" {
					t.Fatalf("budget events %v %v", asks, decisions)
				}
				last := evs[len(evs)-1]
				var data map[string]string
				if last.Type != run.RunEventError || json.Unmarshal(last.Data, &data) != nil || data["stop_reason"] != "budget" {
					t.Fatalf("last event %s %s", last.Type, last.Data)
				}
			} else if len(asks)+len(decisions) != 0 {
				t.Fatalf("budget events in a run within its budget: %v %v", asks, decisions)
			}
			g, err := r.db.QueryUsage(context.Background(), record.UsageQuery{})
			if err != nil {
				t.Fatal(err)
			}
			var calls int64
			var cost float64
			for _, x := range g {
				calls, cost = calls+x.Calls, cost+x.CostUSD
			}
			if int(calls) != tc.requests || math.Abs(cost-tc.costUSD) > 1e-9 {
				t.Fatalf("cost history: %d calls, $%v; want %d, $%v", calls, cost, tc.requests, tc.costUSD)
			}
		})
	}
}

// TestRunBudgetInvalid: limits that are not amounts are refused before
// anything is stored.
func TestRunBudgetInvalid(t *testing.T) {
	t.Parallel()
	r := newBudgetRig(t, agent.Budget{}, nil)
	for _, req := range []run.RunRequest{
		{Goal: "x", MaxBudgetUSD: ptr(-1.0)},
		{Goal: "x", MaxBudgetUSD: ptr(math.Inf(1))},
		{Goal: "x", MaxTokensTotal: ptr(-5)},
		{Goal: "x", Config: run.RunConfig{MaxTokensTotal: ptr(-1)}},
	} {
		var inv *record.InvalidError
		if _, err := r.runs.CreateRun(context.Background(), req); !errors.As(err, &inv) {
			t.Errorf("%+v: %v", req, err)
		}
	}
	if _, _, err := r.runs.Batch(context.Background(), run.BatchRequest{Runs: []run.RunRequest{{Goal: "x", MaxBudgetUSD: ptr(-1.0)}}}); err == nil {
		t.Error("a batch with a negative budget was accepted")
	}
}

// TestRunBudgetAsked: a run with its plan gate on has a person, so a
// breach pauses it with a budget_request answered through the approval
// broker: allowed with a new limit the run goes on (and keeps the new
// limit), refused it ends "budget"; a budget-stopped run can be resumed.
func TestRunBudgetAsked(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{true, false} {
		name := "stop"
		if allow {
			name = "allow"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newBudgetRig(t, agent.Budget{}, nil, noPlan, validPlan)
			created, err := r.runs.CreateRun(context.Background(), run.RunRequest{Goal: "say hi", MaxBudgetUSD: ptr(0.01)})
			if err != nil {
				t.Fatal(err)
			}
			rd := r.runs.Subscribe(created.ID, 0)
			defer rd.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var req agent.BudgetRequest
			for req.ID == "" {
				ev, err := rd.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if ev.Type == run.RunEventBudgetRequest {
					if err := json.Unmarshal(ev.Data, &req); err != nil {
						t.Fatal(err)
					}
				}
			}
			if req.Scope != "run" || req.MaxUSD != 0.01 || math.Abs(req.SpentUSD-0.0085) > 1e-9 || req.EstimateUSD <= 0.0015 {
				t.Fatalf("budget_request %+v", req)
			}
			if d, err := r.runs.GetRun(ctx, created.ID); err != nil || d.Awaiting == nil || len(d.Awaiting.Permissions) != 1 || d.Awaiting.Permissions[0] != req.ID {
				t.Fatalf("awaiting %+v (%v)", d.Awaiting, err)
			}
			if err := r.runs.AnswerPermission(created.ID, req.ID, true, ""); !errors.Is(err, run.ErrNotFound) {
				t.Fatalf("a permission answer to a budget request: %v", err)
			}
			if err := r.runs.AnswerBudget(created.ID, req.ID, agent.BudgetDecision{Allow: allow, MaxUSD: 1}); err != nil {
				t.Fatal(err)
			}
			if err := r.runs.AnswerBudget(created.ID, req.ID, agent.BudgetDecision{Allow: allow}); !errors.Is(err, run.ErrAnswered) {
				t.Fatalf("second answer: %v", err)
			}
			if !allow {
				if end := r.wait(t, created.ID); end.Status != run.RunStoppedOnBudget || len(r.p.Requests()) != 1 {
					t.Fatalf("refused: %q (%s), %d model calls", end.Status, end.Error, len(r.p.Requests()))
				}
				// A budget-stopped run resumes (and pauses for review).
				if _, err := r.runs.ResumeRun(ctx, created.ID); err != nil {
					t.Fatalf("resume: %v", err)
				}
				r.runs.CancelRun(created.ID)
				r.wait(t, created.ID)
				return
			}
			for {
				ev, err := rd.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if ev.Type == run.RunEventPlanApproval {
					break
				}
			}
			if err := r.runs.Approve(ctx, created.ID, run.Approval{}); err != nil {
				t.Fatal(err)
			}
			if end := r.wait(t, created.ID); end.Status != run.RunCompleted || len(r.p.Requests()) != 2 {
				t.Fatalf("allowed: %q (%s), %d model calls", end.Status, end.Error, len(r.p.Requests()))
			}
		})
	}
}
