package run

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weft-run/weft/internal/lease"
	"github.com/weft-run/weft/record"
)

// Runs across nodes (issue 20, item 3). Each attempt of a run executes
// under the lease "run:<id>" (Config.Leases), taken before the run's
// record says it is live and renewed while it runs, so exactly one node
// drives it. When the store is shared (Config.Shared), a run the store
// shows live whose lease is not is one whose node died: start-up recovery
// and a sweeper every half TTL mark it interrupted (its interrupted
// event), after taking its lease, so that one node does it and the run
// can be resumed on any node.

// errLeaseLost is the cause of a run stopped because this node lost its
// lease: another node may have taken the run over, so this one writes
// nothing more of it.
var errLeaseLost = errors.New("this node lost the run's lease")

// leaseName is a run's lease.
func leaseName(runID string) string { return "run:" + runID }

// claims are the run leases this node holds, by run id, from before a run
// is stored live until its attempt has ended; the sweeper leaves them
// alone (the keeper would hand this node a lease it holds already).
type claims struct {
	mu   sync.Mutex
	held map[string]*lease.Held
	// stale are the live runs whose lease the last sweep found not live,
	// with when: a run is taken over only when the next sweep, half a
	// TTL later, finds it so again. By then its old holder, whose own
	// clock may lag the database's, has seen its lease lost and stopped
	// writing.
	stale map[string]time.Time
}

// claim takes the run's lease for p (once: a prepared run keeps its
// claim until start hands it to the attempt or unclaim gives it back).
// Another node's live lease is a *ConflictError.
func (m *Service) claim(ctx context.Context, p *prepared, runID string) error {
	if m.cfg.Leases == nil || p.held != nil {
		return nil
	}
	h, err := m.cfg.Leases.Hold(ctx, leaseName(runID))
	var held *lease.HeldError
	if errors.As(err, &held) {
		return &ConflictError{Msg: fmt.Sprintf("run %q is active on node %s", runID, held.Lease.Holder)}
	}
	if err != nil {
		return fmt.Errorf("run: claiming run %q: %w", runID, err)
	}
	if err := m.reseed(ctx, runID); err != nil {
		_ = h.Release(context.WithoutCancel(ctx))
		return err
	}
	m.claims.mu.Lock()
	if m.claims.held == nil {
		m.claims.held = map[string]*lease.Held{}
	}
	m.claims.held[runID] = h
	m.claims.mu.Unlock()
	p.held = h
	return nil
}

// unclaim gives back p's claim of runID (a run that did not start, or an
// attempt that ended).
func (m *Service) unclaim(p *prepared, runID string) {
	h := p.held
	if h == nil {
		return
	}
	p.held = nil
	m.claims.mu.Lock()
	if m.claims.held[runID] == h {
		delete(m.claims.held, runID)
	}
	m.claims.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Leases.TTL())
	defer cancel()
	if err := h.Release(ctx); err != nil {
		m.log.Warn("handing back a run's lease failed; it expires", "run", runID, "error", err)
	}
}

func (m *Service) claimed(runID string) bool {
	m.claims.mu.Lock()
	defer m.claims.mu.Unlock()
	_, ok := m.claims.held[runID]
	return ok
}

// watchLease stops the attempt when its lease is lost.
func watchLease(lr *liveRun, h *lease.Held) {
	select {
	case <-h.Lost():
		lr.cancel(errLeaseLost)
	case <-lr.done:
	}
}

// leaseLost says whether the attempt lost its lease: it must not write
// the run any more.
func (lr *liveRun) leaseLost() bool {
	if lr.held == nil {
		return false
	}
	select {
	case <-lr.held.Lost():
		return true
	default:
		return false
	}
}

// liveStatuses are the statuses of a run some node is driving.
var liveStatuses = []string{record.RunPlanning, record.RunAwaitingApproval, record.RunRunning}

// sweep marks interrupted the runs the store shows live whose lease was
// not live at this sweep and the one before (their node died), each
// after taking its lease, and returns their ids. Runs this node drives or
// is starting are left alone.
func (m *Service) sweep(ctx context.Context) ([]string, error) {
	leases, err := m.cfg.Leases.Leases().ListLeases(ctx)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, l := range leases {
		live[l.Name] = true
	}
	m.claims.mu.Lock()
	before := m.claims.stale
	m.claims.stale = map[string]time.Time{}
	m.claims.mu.Unlock()
	now := time.Now()
	var out []string
	for _, status := range liveStatuses {
		q := record.RunQuery{Status: status, Limit: 500}
		for {
			page, err := m.cfg.Runs.ListRuns(ctx, q)
			if err != nil {
				return out, err
			}
			for _, r := range page.Runs {
				if m.claimed(r.ID) || live[leaseName(r.ID)] {
					continue
				}
				since, seen := before[r.ID]
				if !seen {
					since = now
				}
				m.claims.mu.Lock()
				m.claims.stale[r.ID] = since
				m.claims.mu.Unlock()
				if !seen || now.Sub(since) < m.cfg.Leases.TTL()/2 {
					continue
				}
				ok, err := m.takeOver(ctx, r.ID)
				if err != nil {
					m.log.Warn("sweeping a run failed", "run", r.ID, "error", err)
					continue
				}
				if ok {
					out = append(out, r.ID)
				}
			}
			if page.NextCursor == "" {
				break
			}
			q.Cursor = page.NextCursor
		}
	}
	return out, nil
}

// takeOver marks the run interrupted if its lease is not live and it is
// still live in the store, holding its lease meanwhile.
func (m *Service) takeOver(ctx context.Context, id string) (bool, error) {
	h, err := m.cfg.Leases.Hold(ctx, leaseName(id))
	var held *lease.HeldError
	if errors.As(err, &held) {
		return false, nil // its node is alive
	}
	if err != nil {
		return false, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.Leases.TTL())
		_ = h.Release(rctx)
		cancel()
	}()
	// Read again under the lease: it may have ended before the lease was
	// given back.
	r, err := m.cfg.Runs.GetRun(ctx, id)
	if err != nil {
		return false, err
	}
	if finalStatus(r.Status) {
		return false, nil
	}
	if err := m.reseed(ctx, id); err != nil {
		return false, err
	}
	r.Status, r.Error = record.RunInterrupted, "interrupted: the node running it stopped; resume it to go on"
	if err := m.cfg.Runs.UpdateRun(ctx, r); err != nil {
		return false, err
	}
	if _, err := m.emit(ctx, id, RunEventInterrupted, map[string]string{"message": r.Error}); err != nil {
		m.log.Error("recording an interrupted run failed", "run", id, "error", err)
	}
	return true, nil
}

// sweeper sweeps every half lease TTL until the service shuts down.
func (m *Service) sweeper() {
	defer m.wg.Done()
	every := m.cfg.Leases.TTL() / 2
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.shutdown.Done():
			return
		case <-t.C:
		}
		ids, err := m.sweep(m.shutdown)
		if err != nil && m.shutdown.Err() == nil {
			m.log.Warn("sweeping runs of dead nodes failed", "error", err)
		}
		if len(ids) > 0 {
			m.log.Info("runs of a node that stopped marked interrupted", "runs", ids)
		}
	}
}

// interruptStale is start-up recovery: the runs the store shows live
// were cut off by a crash or restart, and are marked interrupted (each
// gets an interrupted event, so streams following them end). On a shared
// store only those whose lease is not live: the others run on live nodes.
func (m *Service) interruptStale(ctx context.Context) ([]string, error) {
	if m.cfg.Shared && m.cfg.Leases != nil {
		ids, err := m.sweep(ctx)
		if err == nil {
			m.wg.Add(1)
			go m.sweeper()
		}
		return ids, err
	}
	ids, err := m.cfg.Runs.InterruptRuns(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if _, err := m.emit(ctx, id, RunEventInterrupted, map[string]string{"message": "interrupted: the server stopped while the run was live; resume it to go on"}); err != nil {
			m.log.Error("recording an interrupted run failed", "run", id, "error", err)
		}
	}
	return ids, nil
}

// reseed makes this node's event log of the run number after the store's
// last seq, on a shared store, before the node writes a run another node
// may have written (a takeover, a resume elsewhere): what it observed of
// the other node's events may lag the store.
func (m *Service) reseed(ctx context.Context, runID string) error {
	if !m.cfg.Shared {
		return nil
	}
	if _, err := m.elog.Reseed(ctx, runID); err != nil && !errors.Is(err, record.ErrNotFound) {
		// (A run being created has no events anywhere yet.)
		return fmt.Errorf("run: reading run %q's last event: %w", runID, err)
	}
	return nil
}
