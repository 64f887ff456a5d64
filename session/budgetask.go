package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/internal/approval"
)

// Budget requests over HTTP (issue 15). The engine emits budget_request
// itself, with its own id, and then asks Config.ApproveBudget. Its events
// reach the turn's loop synchronously (the loop body runs inside the
// engine's emit), so the loop opens the question in the approval broker,
// under the engine's id, before it pushes the event: an answer sent the
// moment a client sees the event finds the question open. The approver,
// asked right after, takes that ticket and waits on it with the
// permission timeout, as a permission request does.

// openBudget opens the broker question of a budget_request event the turn
// is about to publish. A failure leaves no ticket, and the approver then
// stops the run.
func (rt *Service) openBudget(l *live, data any) {
	req, ok := data.(agent.BudgetRequest)
	if !ok {
		// The engine's payload passed through redaction; read its id back.
		b, err := json.Marshal(data)
		if err != nil || json.Unmarshal(b, &req) != nil {
			return
		}
	}
	if req.ID == "" {
		return
	}
	q, err := rt.approvals.Open(l.scope, approval.Budget, req.ID)
	if err != nil {
		rt.log.Error("opening a budget request failed", "session", l.id, "request_id", req.ID, "error", err)
		return
	}
	l.mu.Lock()
	if l.budgetQ == nil {
		l.budgetQ = map[string]*approval.Ticket{}
	}
	l.budgetQ[req.ID] = q
	l.mu.Unlock()
}

// dropBudgetAsks closes the budget questions of a turn that ended without
// asking them (the engine stopped between the event and the ask).
func (rt *Service) dropBudgetAsks(l *live) {
	l.mu.Lock()
	qs := l.budgetQ
	l.budgetQ = nil
	l.mu.Unlock()
	for _, q := range qs {
		q.Close()
	}
}

// budgetApprover is the session turn's agent.Config.ApproveBudget: it
// waits for the answer to the question openBudget opened, the permission
// timeout (stop) or the turn's end (stop).
func (rt *Service) budgetApprover(l *live) agent.BudgetApproveFunc {
	return func(ctx context.Context, req agent.BudgetRequest) agent.BudgetDecision {
		l.mu.Lock()
		q := l.budgetQ[req.ID]
		delete(l.budgetQ, req.ID)
		l.mu.Unlock()
		if q == nil {
			return agent.BudgetDecision{Reason: "the budget request could not be recorded"}
		}
		a, err := q.Wait(ctx, rt.cfg.PermissionTimeout)
		switch {
		case err == nil:
			if d, ok := a.Payload.(agent.BudgetDecision); ok {
				return d
			}
			return agent.BudgetDecision{Allow: a.Allow, Reason: a.Reason}
		case errors.Is(err, approval.ErrTimeout):
			return agent.BudgetDecision{Reason: fmt.Sprintf("no answer to the budget request within %s", rt.cfg.PermissionTimeout)}
		default:
			return agent.BudgetDecision{Reason: "the turn was cancelled"}
		}
	}
}

// ErrNotBudget: an answer with budget limits was sent for a question that
// is not a budget request, or a plain answer for one that is.
var ErrNotBudget = errors.New("the request is not a budget request")

// AnswerBudget answers a session's budget_request: d.Allow with new
// limits (0 keeps a limit), or stop. Like Answer: ErrNotFound for a
// request that is not open, ErrAnswered for a second answer.
func (rt *Service) AnswerBudget(sessionID, requestID string, d agent.BudgetDecision) error {
	return rt.answerAt(sessionID, cmdBudget, answerCmd{RequestID: requestID, Budget: &d},
		func(l *live) error { return rt.answerBudgetLive(l, requestID, d) })
}

func (rt *Service) answerBudgetLive(l *live, requestID string, d agent.BudgetDecision) error {
	d.ID = requestID
	if !d.Allow && d.Reason == "" {
		d.Reason = "the user declined to raise the budget"
	}
	return rt.approvals.AnswerIf(l.scope, requestID, approval.Answer{Allow: d.Allow, Reason: d.Reason, Payload: d},
		func(p approval.Pending) error {
			if p.Kind != approval.Budget {
				return ErrNotBudget
			}
			return nil
		})
}

// EventLogLag is how many of the sessions' events are published but not
// yet in the store (weft_eventlog_lag_events).
func (rt *Service) EventLogLag() int64 { return rt.elog.Lag() }
