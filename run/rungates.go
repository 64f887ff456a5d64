package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

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
	// planGate is set while the plan awaits approval: it receives the
	// edited plan, or nil to run the plan as it is.
	planGate chan *plan.Plan
	// stepGates holds the steps waiting for approval, by step id, in the
	// order they started waiting.
	stepGates map[string]chan struct{}
	gateOrder []string
	asks      map[string]*runAsk
	m         *Runs
}

// runAsk is a permission request or checkpoint waiting for its answer.
type runAsk struct {
	answer   chan decision
	answered bool
}

type decision struct {
	allow  bool
	reason string
}

// update changes the run record and stores it.
func (lr *liveRun) update(ctx context.Context, change func(*record.Run)) error {
	lr.saveMu.Lock()
	defer lr.saveMu.Unlock()
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

func (lr *liveRun) awaiting() *Awaiting {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	a := &Awaiting{Plan: lr.planGate != nil, Steps: slices.Clone(lr.gateOrder)}
	for id, q := range lr.asks {
		if !q.answered {
			a.Permissions = append(a.Permissions, id)
		}
	}
	slices.Sort(a.Permissions)
	if !a.Plan && len(a.Steps) == 0 && len(a.Permissions) == 0 {
		return nil
	}
	return a
}

// openPlan opens the plan gate (before the event that announces it, so
// that an approval sent on seeing the event finds it open).
func (lr *liveRun) openPlan(pending *plan.Plan, env plan.Env, readOnly bool) chan *plan.Plan {
	ch := make(chan *plan.Plan, 1)
	lr.mu.Lock()
	lr.planGate, lr.pending, lr.env, lr.readOnly = ch, pending, env, readOnly
	lr.mu.Unlock()
	return ch
}

// waitPlan waits for Approve to send through the plan gate (the edited
// plan, or nil) or for the run's end, and closes the gate.
func (lr *liveRun) waitPlan(ctx context.Context, ch chan *plan.Plan) (*plan.Plan, error) {
	defer func() {
		lr.mu.Lock()
		lr.planGate, lr.pending = nil, nil
		lr.mu.Unlock()
	}()
	select {
	case p := <-ch:
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// openStep registers a step waiting for approval and returns its gate.
func (lr *liveRun) openStep(id string) chan struct{} {
	ch := make(chan struct{})
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.stepGates == nil {
		lr.stepGates = map[string]chan struct{}{}
	}
	lr.stepGates[id] = ch
	lr.gateOrder = append(lr.gateOrder, id)
	return ch
}

// closeStep forgets a step gate (approved or abandoned).
func (lr *liveRun) closeStep(id string) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	delete(lr.stepGates, id)
	lr.gateOrder = slices.DeleteFunc(lr.gateOrder, func(s string) bool { return s == id })
}

// syncGateStatus stores the run as awaiting approval while a step gate is
// open and as running otherwise. The status is computed from the gates
// when the write is made, so the last write always matches them.
func (lr *liveRun) syncGateStatus(ctx context.Context) {
	_ = lr.update(ctx, func(r *record.Run) {
		if r.Status != record.RunRunning && r.Status != record.RunAwaitingApproval {
			return
		}
		if len(lr.stepGates) > 0 {
			r.Status = record.RunAwaitingApproval
		} else {
			r.Status = record.RunRunning
		}
	})
}

func (lr *liveRun) approve(a Approval) error {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.planGate != nil {
		if a.StepID != "" {
			return fmt.Errorf("%w: the plan awaits approval, not step %q", ErrNoGate, a.StepID)
		}
		check := a.Plan
		if check == nil {
			check = lr.pending
		}
		if check != nil {
			if err := lr.m.checkPlan(*check, lr.env, RunConfig{CapabilityMode: readOnlyMode(lr.readOnly)}); err != nil {
				return err
			}
		}
		if a.Plan != nil {
			norm := a.Plan.Normalize()
			a.Plan = &norm
		}
		lr.planGate <- a.Plan // buffered, and only ever sent once: the gate closes below
		lr.planGate = nil
		return nil
	}
	if a.Plan != nil {
		if len(lr.stepGates) > 0 {
			return &InvalidError{errors.New("an edited plan can be sent only while the plan awaits approval; the run is waiting for step approval")}
		}
		return ErrNoGate
	}
	if a.StepID != "" {
		ch, ok := lr.stepGates[a.StepID]
		if !ok {
			return fmt.Errorf("%w: step %q is not waiting for approval", ErrNoGate, a.StepID)
		}
		close(ch)
		delete(lr.stepGates, a.StepID)
		lr.gateOrder = slices.DeleteFunc(lr.gateOrder, func(s string) bool { return s == a.StepID })
		return nil
	}
	if len(lr.stepGates) == 0 {
		return ErrNoGate
	}
	for id, ch := range lr.stepGates {
		close(ch)
		delete(lr.stepGates, id)
	}
	lr.gateOrder = nil
	return nil
}

func readOnlyMode(ro bool) string {
	if ro {
		return capabilityReadOnly
	}
	return ""
}

// ask records a question event (permission_request, checkpoint) and waits
// for its answer, the permission timeout or the run's end.
func (lr *liveRun) ask(ctx context.Context, typ string, payload func(id string) any) decision {
	prefix := "perm_"
	if typ == RunEventCheckpoint {
		prefix = "ckpt_"
	}
	id := prefix + randHex(6)
	q := &runAsk{answer: make(chan decision, 1)}
	lr.mu.Lock()
	if lr.asks == nil {
		lr.asks = map[string]*runAsk{}
	}
	lr.asks[id] = q
	lr.mu.Unlock()
	defer func() {
		lr.mu.Lock()
		// An expired request is gone (not found); an answered one is
		// remembered (a second answer is a conflict).
		q.answered = true
		delete(lr.asks, id)
		lr.mu.Unlock()
	}()
	if _, err := lr.m.emit(ctx, lr.id, typ, payload(id)); err != nil {
		return decision{reason: "the request could not be recorded"}
	}
	timeout := lr.m.cfg.PermissionTimeout
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case d := <-q.answer:
		return d
	case <-t.C:
		return decision{reason: fmt.Sprintf("no answer within %s", timeout)}
	case <-ctx.Done():
		return decision{reason: "the run was stopped while waiting for an answer"}
	}
}

func (lr *liveRun) answer(id string, allow bool, reason string) error {
	lr.mu.Lock()
	q := lr.asks[id]
	if q == nil {
		lr.mu.Unlock()
		if lr.m.wasAnswered(lr.id, id) {
			return ErrAnswered
		}
		return ErrNotFound
	}
	if q.answered {
		lr.mu.Unlock()
		return ErrAnswered
	}
	q.answered = true
	lr.mu.Unlock()
	lr.m.rememberAnswer(lr.id, id)
	if !allow && reason == "" {
		reason = "the user denied this tool call"
	}
	q.answer <- decision{allow: allow, reason: reason} // buffered: the asker may have timed out
	return nil
}

// maxRememberedAnswers bounds the answered requests kept to tell a second
// answer (409) from an unknown request (404) after the question closed,
// even after its run ended.
const maxRememberedAnswers = 4096

func (m *Runs) rememberAnswer(runID, reqID string) {
	m.ansMu.Lock()
	defer m.ansMu.Unlock()
	if m.answered == nil {
		m.answered = map[string]bool{}
	}
	k := runID + "/" + reqID
	m.answered[k] = true
	m.answeredFIFO = append(m.answeredFIFO, k)
	if len(m.answeredFIFO) > maxRememberedAnswers {
		delete(m.answered, m.answeredFIFO[0])
		m.answeredFIFO = m.answeredFIFO[1:]
	}
}

func (m *Runs) wasAnswered(runID, reqID string) bool {
	m.ansMu.Lock()
	defer m.ansMu.Unlock()
	return m.answered[runID+"/"+reqID]
}
