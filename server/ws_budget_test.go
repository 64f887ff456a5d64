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

// TestWSChatBudget: the chat message carries max_budget_usd and
// max_tokens_total like POST /v1/sessions/{id}/messages: a limit the next
// model call would pass pauses the turn with a budget_request before the
// call, answering stop ends it with stop_reason "budget" and no model
// call; malformed limits are refused before a turn starts.
func TestWSChatBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		limit map[string]any
	}{
		{"tokens", map[string]any{"max_tokens_total": 1}},
		// max_budget_usd rides the same field; the scripted model has no
		// price, so only a token limit can trip on it here.
		{"tokens and usd", map[string]any{"max_tokens_total": 1, "max_budget_usd": 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rig := newWSRig(t, wsRigOptions{}, llmtest.Text("never sent"))
			c := rig.dial()
			c.create("", nil)
			msg := map[string]any{"type": "chat", "message": "go"}
			for k, v := range tc.limit {
				msg[k] = v
			}
			c.send(msg)
			evs := c.until(func(e wsEvent) bool { return e.Type == "budget_request" || e.Type == "done" })
			req := evs[len(evs)-1]
			if req.Type != "budget_request" {
				t.Fatalf("the chat's limit was not applied: %v", wsShape(evs))
			}
			c.send(map[string]any{"type": "permission", "request_id": req.ID, "allow": false})
			rest := c.untilDone(1)
			if done := rest[len(rest)-1]; done.StopReason != "budget" || len(rig.p.Requests()) != 0 {
				t.Fatalf("after stopping: %v (%d model calls)", wsShape(rest), len(rig.p.Requests()))
			}
		})
	}
	t.Run("invalid", func(t *testing.T) {
		t.Parallel()
		rig := newWSRig(t, wsRigOptions{}, llmtest.Text("never sent"))
		c := rig.dial()
		c.create("", nil)
		for _, bad := range []map[string]any{
			{"type": "chat", "message": "go", "max_budget_usd": -1},
			{"type": "chat", "message": "go", "max_tokens_total": -5},
		} {
			c.send(bad)
			if ev := c.next(); ev.Type != "error" || ev.Code != errInvalidRequest {
				t.Fatalf("%v answered %+v", bad, ev)
			}
		}
		if n := len(rig.p.Requests()); n != 0 {
			t.Fatalf("%d model calls", n)
		}
	})
}
