package server

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/run"
)

// pricedResolver resolves every spec to one scripted provider priced as
// info says.
type pricedResolver struct {
	p    *llmtest.Scripted
	info llm.ModelInfo
}

func (r pricedResolver) Resolve(string) (llm.Provider, llm.ModelInfo, error) { return r.p, r.info, nil }

// The planner's answers: one without a plan (1,000 input and 1,500 output
// tokens: $0.0085 at runPrices), then a plan of one echo.
var (
	runPrices   = &llm.ModelInfo{ID: "m", Provider: "scripted", MaxOutputTokens: 4000, InputPrice: 1, OutputPrice: 5, Known: true}
	runNoPlan   = llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("thinking about it")}, Usage: llm.Usage{InputTokens: 1000, OutputTokens: 1500}}
	runEchoPlan = llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(`{"steps":[{"id":"s","tool":"echo","args":{"text":"hi"}}]}`)},
		Usage: llm.Usage{InputTokens: 1000, OutputTokens: 100}}
)

// TestRunBudgetHTTP: POST /v1/runs takes max_budget_usd. A client
// following the run's stream sees budget_request before the planner call
// that would pass $0.01 and answers it on the permission endpoint: with
// allow and a new limit the run goes on to complete (both calls in the
// cost history under the run, GET /v1/usage agreeing), with allow false
// it ends with status "budget". Without anybody following (auto-approved,
// no stream) the run ends "budget" by itself. Malformed answers and
// limits are refused.
func TestRunBudgetHTTP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer map[string]any // nil: nobody follows the run
		status string
		calls  int
	}{
		{"allowed with a new limit", map[string]any{"allow": true, "max_budget_usd": 1}, run.RunCompleted, 2},
		{"stopped", map[string]any{"allow": false, "reason": "too dear"}, run.RunStoppedOnBudget, 1},
		{"nobody following", nil, run.RunStoppedOnBudget, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newRunsAPI(t, runsOptions{scripts: []llmtest.Script{runNoPlan, runEchoPlan}, priced: runPrices})
			body := map[string]any{"goal": "say hi", "max_budget_usd": 0.01, "config": map[string]any{"autoApprove": tc.answer == nil}}
			id := a.createRun(body)
			if tc.answer != nil {
				c := a.events(id, 0)
				evs := c.readUntil("budget_request")
				reqID, _ := evs[len(evs)-1].field("id").(string)
				if got := evs[len(evs)-1].field("scope"); got != "run" || reqID == "" {
					t.Fatalf("budget_request %s", evs[len(evs)-1].Data)
				}
				// Limits answer only a budget request; a budget request
				// needs allow; a limit must be an amount.
				a.doJSON("POST", "/v1/runs/"+id+"/permissions/perm_000000000000", map[string]any{"allow": true, "max_budget_usd": 1}, http.StatusBadRequest)
				a.doJSON("POST", "/v1/runs/"+id+"/permissions/"+reqID, map[string]any{"max_budget_usd": 1}, http.StatusBadRequest)
				a.doJSON("POST", "/v1/runs/"+id+"/permissions/"+reqID, map[string]any{"allow": true, "max_budget_usd": -1}, http.StatusBadRequest)
				a.doJSON("POST", "/v1/runs/"+id+"/permissions/"+reqID, tc.answer, http.StatusOK)
				a.doJSON("POST", "/v1/runs/"+id+"/permissions/"+reqID, tc.answer, http.StatusConflict)
				if allow, _ := tc.answer["allow"].(bool); allow {
					c.readUntil("plan_approval_requested")
					a.doJSON("POST", "/v1/runs/"+id+"/approve", nil, http.StatusOK)
				}
				rest := c.readAll()
				last := rest[len(rest)-1]
				if tc.status == run.RunStoppedOnBudget && (last.Event != "error" || last.field("stop_reason") != "budget") {
					t.Fatalf("last event %s %s", last.Event, last.Data)
				}
			}
			end := a.wait(id)
			if end.Status != tc.status || len(a.provider.Requests()) != tc.calls {
				t.Fatalf("status %q (%s), %d model calls; want %q, %d", end.Status, end.Error, len(a.provider.Requests()), tc.status, tc.calls)
			}
			got := a.doJSON("GET", "/v1/runs/"+id, nil, http.StatusOK)
			if got["status"] != tc.status {
				t.Fatalf("GET /v1/runs/%s: %v", id, got["status"])
			}
			rec := httptest.NewRecorder()
			UsageHandler(a.db).ServeHTTP(rec, httptest.NewRequest("GET", "/v1/usage?group_by=model", nil))
			var usage struct {
				Groups []struct {
					Key     string  `json:"key"`
					Calls   int     `json:"calls"`
					CostUSD float64 `json:"cost_usd"`
				} `json:"groups"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &usage); err != nil {
				t.Fatal(err)
			}
			want := 0.0085
			if tc.calls == 2 {
				want += 0.0015
			}
			if len(usage.Groups) != 1 || usage.Groups[0].Key != "m" || usage.Groups[0].Calls != tc.calls || math.Abs(usage.Groups[0].CostUSD-want) > 1e-9 {
				t.Fatalf("GET /v1/usage: %s", rec.Body)
			}
		})
	}
	t.Run("invalid limits", func(t *testing.T) {
		t.Parallel()
		a := newRunsAPI(t, runsOptions{priced: runPrices})
		for _, body := range []map[string]any{
			{"goal": "x", "max_budget_usd": -1},
			{"goal": "x", "max_tokens_total": -1},
			{"goal": "x", "config": map[string]any{"max_budget_usd": -0.5}},
		} {
			a.doJSON("POST", "/v1/runs", body, http.StatusBadRequest)
		}
		a.doJSON("POST", "/v1/runs/batch", map[string]any{"runs": []map[string]any{{"goal": "x", "max_budget_usd": -1}}}, http.StatusBadRequest)
	})
}
