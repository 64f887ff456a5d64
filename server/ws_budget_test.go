package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/session"
)

// TestWSBudgetRequest: a budget_request reaches a WebSocket client as
// budget_request {id, message, budget}, and the permission message answers
// it, with new limits; malformed limits are refused and the question stays
// open; a second answer is a conflict.
func TestWSBudgetRequest(t *testing.T) {
	t.Parallel()
	rig := newWSRig(t, wsRigOptions{}, llmtest.Text("within budget"))
	c := rig.dial()
	sid := c.create("", nil).SessionID
	limit := 1
	if _, err := rig.rt.Send(context.Background(), sid, "go", session.TurnOptions{MaxTokensTotal: &limit}); err != nil {
		t.Fatal(err)
	}
	evs := c.until(func(e wsEvent) bool { return e.Type == "budget_request" })
	req := evs[len(evs)-1]
	var payload struct {
		MaxTokens int `json:"max_tokens_total"`
	}
	if !strings.HasPrefix(req.ID, "budget_") || req.Message == "" || req.Source != "system" || req.Seq == 0 ||
		json.Unmarshal(req.Budget, &payload) != nil || payload.MaxTokens != 1 {
		t.Fatalf("budget_request %+v (budget %s)", req, req.Budget)
	}
	for _, bad := range []map[string]any{
		{"type": "permission", "request_id": req.ID, "allow": true, "max_tokens_total": -1},
		{"type": "permission", "request_id": "perm_000000000000", "allow": true, "max_budget_usd": 1},
	} {
		c.send(bad)
		if ev := c.next(); ev.Type != "error" || ev.Code != errInvalidRequest {
			t.Fatalf("%v answered %+v", bad, ev)
		}
	}
	c.send(map[string]any{"type": "permission", "request_id": req.ID, "allow": true, "max_tokens_total": 1 << 20})
	rest := c.untilDone(1)
	if done := rest[len(rest)-1]; done.StopReason != "end_turn" || len(rig.p.Requests()) != 1 {
		t.Fatalf("after allowing: %v (%d model calls)", wsShape(rest), len(rig.p.Requests()))
	}
	c.send(map[string]any{"type": "permission", "request_id": req.ID, "allow": false})
	if ev := c.next(); ev.Type != "error" || ev.Code != errConflict {
		t.Fatalf("second answer: %+v", ev)
	}
}
