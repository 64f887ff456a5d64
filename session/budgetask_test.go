package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/session"
)

// TestBudgetRequestFlow: a session turn over its budget asks through the
// approval broker with the engine's id, answerable as soon as the event
// is readable; the answer decides, and no answer within the permission
// timeout stops the turn on its budget.
func TestBudgetRequestFlow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		answer   func(rt *session.Service, sid, id string) error // nil: never answered
		stop     string
		calls    int
		decision string // in budget_decision's reason
	}{
		{"allowed with a new limit", func(rt *session.Service, sid, id string) error {
			return rt.AnswerBudget(sid, id, agent.BudgetDecision{Allow: true, MaxTokens: 1 << 20})
		}, agent.StopEndTurn, 1, ""},
		{"allowed by a plain permission answer", func(rt *session.Service, sid, id string) error {
			return rt.Answer(sid, id, true, "")
		}, agent.StopEndTurn, 1, ""},
		{"declined", func(rt *session.Service, sid, id string) error {
			return rt.AnswerBudget(sid, id, agent.BudgetDecision{})
		}, agent.StopBudget, 0, "declined"},
		{"unanswered within the permission timeout", nil, agent.StopBudget, 0, "no answer to the budget request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := llmtest.NewScripted("scripted", llmtest.Text("ok"))
			rt, db := setup(t, filepath.Join(t.TempDir(), "w.db"), p, "", nil)
			defer db.Close()
			defer rt.Shutdown(context.Background())
			ctx := context.Background()
			s, _ := rt.CreateSession(ctx, "")
			limit := 1
			seq, err := rt.Send(ctx, s.ID, "hi", session.TurnOptions{MaxTokensTotal: &limit})
			if err != nil {
				t.Fatal(err)
			}
			var reqID, reason, stop string
			readTurn(t, rt, s.ID, seq-1, func(e event.Event) {
				switch e.Type {
				case string(agent.EventBudgetRequest):
					var d agent.BudgetRequest
					_ = json.Unmarshal(e.Data, &d)
					reqID = d.ID
					if tt.answer == nil {
						return
					}
					if err := tt.answer(rt, s.ID, d.ID); err != nil {
						t.Errorf("answer: %v", err)
					}
					if err := rt.AnswerBudget(s.ID, d.ID, agent.BudgetDecision{Allow: true}); !errors.Is(err, session.ErrAnswered) {
						t.Errorf("second answer: %v", err)
					}
				case string(agent.EventBudgetDecision):
					var d agent.BudgetDecision
					_ = json.Unmarshal(e.Data, &d)
					reason = d.Reason
				case string(agent.EventDone):
					var d agent.DoneData
					_ = json.Unmarshal(e.Data, &d)
					stop = d.StopReason
				}
			})
			if reqID == "" || stop != tt.stop || len(p.Requests()) != tt.calls {
				t.Fatalf("request %q, stop_reason %q, %d model calls; want %q and %d calls", reqID, stop, len(p.Requests()), tt.stop, tt.calls)
			}
			if tt.decision != "" && !strings.Contains(reason, tt.decision) {
				t.Fatalf("budget_decision reason %q lacks %q", reason, tt.decision)
			}
			if err := rt.AnswerBudget(s.ID, "budget_000000000000", agent.BudgetDecision{Allow: true}); !errors.Is(err, session.ErrNotFound) {
				t.Fatalf("unknown request: %v", err)
			}
			if tt.answer == nil {
				if err := rt.AnswerBudget(s.ID, reqID, agent.BudgetDecision{Allow: true}); !errors.Is(err, session.ErrNotFound) {
					t.Fatalf("expired request: %v", err)
				}
			}
		})
	}
}
