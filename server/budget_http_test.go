package server

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
)

// TestBudgetRequestAnsweredOverHTTP: a turn whose budget the first call
// would pass pauses with budget_request; the answer on the permission
// endpoint, sent the moment the event is read, finds the question open.
// Allowing with a new limit lets the model call go out (the fake sees
// it); declining ends the turn with stop_reason "budget" and no call.
// Malformed answers are 400 (the question stays open), an unknown id 404,
// a second answer 409, and budget limits on a permission request 400.
func TestBudgetRequestAnsweredOverHTTP(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	fake.Push(llmtest.Text("answered"))
	a := newAPI(t, apiOptions{fake: fake})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "s"}, http.StatusCreated)
	base := "/v1/sessions/s/permissions/"

	type budgetReq struct {
		ID     string  `json:"id"`
		MaxUSD float64 `json:"max_budget_usd"`
	}
	pause := func() (budgetReq, *sseConn) {
		t.Helper()
		c := a.openSSE("POST", "/v1/sessions/s/messages", map[string]any{"prompt": "go", "max_budget_usd": 0.001})
		evs := c.readUntil("budget_request")
		var req budgetReq
		if err := json.Unmarshal(evs[len(evs)-1].Data, &req); err != nil {
			t.Fatal(err)
		}
		if len(req.ID) < len("budget_") || req.ID[:7] != "budget_" || req.MaxUSD != 0.001 {
			t.Fatalf("budget_request = %s", evs[len(evs)-1].Data)
		}
		return req, c
	}
	done := func(evs []sseEvent) (stop string, decision map[string]any) {
		t.Helper()
		for _, ev := range evs {
			switch ev.Event {
			case "budget_decision":
				_ = json.Unmarshal(ev.Data, &decision)
			case "done":
				var d struct {
					StopReason string `json:"stop_reason"`
				}
				_ = json.Unmarshal(ev.Data, &d)
				stop = d.StopReason
			}
		}
		return stop, decision
	}

	// Allow with a new limit: answered at once, the call goes out.
	req, c := pause()
	for _, bad := range []any{
		`{"allow":true,"max_budget_usd":-1}`,
		`{"allow":true,"max_tokens_total":-5}`,
		`{"max_budget_usd":1}`,
		`{"allow":"yes"}`,
		`{"allow":true,"max_budget_usd":"lots"}`,
		`{"allow":true,"max_budget":1}`,
	} {
		decodeErr(t, a.do("POST", base+req.ID, bad), http.StatusBadRequest, errInvalidRequest)
	}
	decodeErr(t, a.do("POST", base+"budget_000000000000", map[string]any{"allow": true}), http.StatusNotFound, errNotFound)
	decodeErr(t, a.do("POST", base+"perm_000000000000", map[string]any{"allow": true, "max_budget_usd": 1}), http.StatusBadRequest, errInvalidRequest)
	a.doJSON("POST", base+req.ID, map[string]any{"allow": true, "max_budget_usd": 10}, http.StatusOK)
	decodeErr(t, a.do("POST", base+req.ID, map[string]any{"allow": true, "max_budget_usd": 20}), http.StatusConflict, errConflict)
	stop, d := done(c.readUntilDone())
	if stop != "end_turn" || d["allow"] != true || d["max_budget_usd"] != 10.0 || d["id"] != req.ID {
		t.Fatalf("after allowing: stop_reason %q, budget_decision %v", stop, d)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Fatalf("the model saw %d requests after the budget was raised, want 1", n)
	}

	// Decline: the turn stops on its budget before calling the model.
	req, c = pause()
	a.doJSON("POST", base+req.ID, map[string]any{"allow": false, "reason": "too dear"}, http.StatusOK)
	stop, d = done(c.readUntilDone())
	if stop != "budget" || d["allow"] != false || d["reason"] != "too dear" {
		t.Fatalf("after declining: stop_reason %q, budget_decision %v", stop, d)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Fatalf("the model saw %d requests, want 1: a declined budget must not call it", n)
	}
	decodeErr(t, a.do("POST", base+req.ID, map[string]any{"allow": true}), http.StatusConflict, errConflict)
}
