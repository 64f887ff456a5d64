package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/weft-run/weft/internal/approval"
	"github.com/weft-run/weft/internal/lease"
	"github.com/weft-run/weft/plan"
	"github.com/weft-run/weft/record"
)

// liveRun is the in-memory state of a run attempt in progress: its
// cancellation, its open gates and questions, and its latest record.
type liveRun struct {
	id     string
	done   chan struct{} // closed once the attempt has fully ended
	cancel context.CancelCauseFunc

	// saveMu serialises writes of the run record, so that the store sees
	// them in the order they were made.
	saveMu sync.Mutex

	mu        sync.Mutex
	run       record.Run
	finishing bool
	// pending, env and readOnly check the plan at approval: an edited one,
	// or the pending one, which may have gone stale (a replayed plan whose
	// tools changed).
	pending  *plan.Plan
	env      plan.Env
	readOnly bool
	m        *Service
	held     *lease.Held // the attempt's lease (claims.go); nil without claims
}

// update changes the run record and stores it.
func (lr *liveRun) update(ctx context.Context, change func(*record.Run)) error {
	lr.saveMu.Lock()
	defer lr.saveMu.Unlock()
	if lr.leaseLost() {
		return errLeaseLost // another node's run now
	}
	lr.mu.Lock()
	change(&lr.run)
	r := lr.run
	lr.mu.Unlock()
	if err := lr.m.cfg.Runs.UpdateRun(context.WithoutCancel(ctx), r); err != nil {
		lr.m.log.Error("saving a run failed", "run", lr.id, "error", err)
		return err
	}
	return nil
}

// scope is the run's scope in the approval broker: every attempt's (a
// resumed run's answered ids stay answered).
func scope(runID string) string { return "run/" + runID }

// planKey is the plan gate's id in the run's scope.
const planKey = "plan"

// kindIs accepts only questions of the given kinds (a step id is not a
// permission request's id, nor the other way round).
func kindIs(kinds ...approval.Kind) func(approval.Pending) error {
	return func(p approval.Pending) error {
		if slices.Contains(kinds, p.Kind) {
			return nil
		}
		return approval.ErrNotFound
	}
}

func (lr *liveRun) awaiting() *Awaiting {
	a := &Awaiting{}
	for _, p := range lr.m.approvals.Pending(scope(lr.id)) {
		switch p.Kind {
		case approval.Plan:
			a.Plan = true
		case approval.Step:
			a.Steps = append(a.Steps, p.ID)
		default:
			a.Permissions = append(a.Permissions, p.ID)
		}
	}
	slices.Sort(a.Permissions)
	if !a.Plan && len(a.Steps) == 0 && len(a.Permissions) == 0 {
		return nil
	}
	return a
}

// stepsWaiting counts the steps waiting for approval.
func (lr *liveRun) stepsWaiting() int {
	n := 0
	for _, p := range lr.m.approvals.Pending(scope(lr.id)) {
		if p.Kind == approval.Step {
			n++
		}
	}
	return n
}

// openPlan opens the plan gate (before the event that announces it, so
// that an approval sent on seeing the event finds it open).
func (lr *liveRun) openPlan(pending *plan.Plan, env plan.Env, readOnly bool) (*approval.Ticket, error) {
	lr.mu.Lock()
	lr.pending, lr.env, lr.readOnly = pending, env, readOnly
	lr.mu.Unlock()
	return lr.m.approvals.Open(scope(lr.id), approval.Plan, planKey)
}

// waitPlan waits for Approve to answer the plan gate (with the edited
// plan, or nil) or for the run's end, and closes the gate.
func (lr *liveRun) waitPlan(ctx context.Context, gate *approval.Ticket) (*plan.Plan, error) {
	defer func() {
		lr.mu.Lock()
		lr.pending = nil
		lr.mu.Unlock()
	}()
	a, err := gate.Wait(ctx, 0)
	if err != nil {
		return nil, err
	}
	edited, _ := a.Payload.(*plan.Plan)
	return edited, nil
}

// openStep opens a step's approval gate.
func (lr *liveRun) openStep(id string) (*approval.Ticket, error) {
	return lr.m.approvals.Open(scope(lr.id), approval.Step, id)
}

// syncGateStatus stores the run as awaiting approval while a step gate is
// open and as running otherwise. The status is computed from the gates
// when the write is made, so the last write always matches them.
func (lr *liveRun) syncGateStatus(ctx context.Context) {
	_ = lr.update(ctx, func(r *record.Run) {
		if r.Status != record.RunRunning && r.Status != record.RunAwaitingApproval {
			return
		}
		if lr.stepsWaiting() > 0 {
			r.Status = record.RunAwaitingApproval
		} else {
			r.Status = record.RunRunning
		}
	})
}

func (lr *liveRun) approve(a Approval) error {
	b, sc := lr.m.approvals, scope(lr.id)
	planOpen, steps := false, []string(nil)
	for _, p := range b.Pending(sc) {
		switch p.Kind {
		case approval.Plan:
			planOpen = true
		case approval.Step:
			steps = append(steps, p.ID)
		}
	}
	if planOpen {
		if a.StepID != "" {
			return fmt.Errorf("%w: the plan awaits approval, not step %q", ErrNoGate, a.StepID)
		}
		lr.mu.Lock()
		check, env, readOnly := a.Plan, lr.env, lr.readOnly
		if check == nil {
			check = lr.pending
		}
		lr.mu.Unlock()
		if check != nil {
			if err := lr.m.checkPlan(*check, env, RunConfig{CapabilityMode: readOnlyMode(readOnly)}); err != nil {
				return err
			}
		}
		if a.Plan != nil {
			norm := a.Plan.Normalize()
			a.Plan = &norm
		}
		if err := b.AnswerIf(sc, planKey, approval.Answer{Allow: true, Payload: a.Plan}, kindIs(approval.Plan)); err != nil {
			return ErrNoGate // another approval took the gate meanwhile
		}
		return nil
	}
	if a.Plan != nil {
		if len(steps) > 0 {
			return &record.InvalidError{Err: errors.New("an edited plan can be sent only while the plan awaits approval; the run is waiting for step approval")}
		}
		return ErrNoGate
	}
	if a.StepID != "" {
		if err := b.AnswerIf(sc, a.StepID, approval.Answer{Allow: true}, kindIs(approval.Step)); err != nil {
			return fmt.Errorf("%w: step %q is not waiting for approval", ErrNoGate, a.StepID)
		}
		return nil
	}
	if len(steps) == 0 {
		return ErrNoGate
	}
	for _, id := range steps {
		_ = b.AnswerIf(sc, id, approval.Answer{Allow: true}, kindIs(approval.Step))
	}
	return nil
}

func readOnlyMode(ro bool) string {
	if ro {
		return capabilityReadOnly
	}
	return ""
}

type decision struct {
	allow  bool
	reason string
}

// ask opens a question (permission_request, checkpoint) in the approval
// broker, records the event that announces it and waits for its answer,
// the permission timeout or the run's end.
func (lr *liveRun) ask(ctx context.Context, typ string, payload func(id string) any) decision {
	kind := approval.Permission
	if typ == RunEventCheckpoint {
		kind = approval.Checkpoint
	}
	q, err := lr.m.approvals.Open(scope(lr.id), kind, "")
	if err != nil {
		return decision{reason: "the request could not be recorded"}
	}
	if _, err := lr.m.emit(ctx, lr.id, typ, payload(q.ID)); err != nil {
		q.Close()
		return decision{reason: "the request could not be recorded"}
	}
	timeout := lr.m.cfg.PermissionTimeout
	a, err := q.Wait(ctx, timeout)
	switch {
	case err == nil:
		return decision{allow: a.Allow, reason: a.Reason}
	case errors.Is(err, approval.ErrTimeout):
		return decision{reason: fmt.Sprintf("no answer within %s", timeout)}
	default:
		return decision{reason: "the run was stopped while waiting for an answer"}
	}
}
