package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weft-run/weft/internal/lease"
	"github.com/weft-run/weft/record"
)

// LeaseName is the lease the node that runs the firing loop holds.
const LeaseName = "scheduler"

// Swapper is implemented by stores several nodes share (store/postgres):
// SwapSchedule replaces s, as UpdateSchedule does, only if the stored
// schedule is still active as prevActive and due at prevNextRunAt, and
// reports whether it did.
type Swapper interface {
	SwapSchedule(ctx context.Context, s record.Schedule, prevNextRunAt time.Time, prevActive bool) (bool, error)
}

// claim moves a due schedule's slot on in the store before it fires, by
// compare and swap: ok is false when another scheduler claimed the slot
// first (it fires it, this one must not). claimed is the schedule as
// stored by the claim.
func (s *Scheduler) claim(ctx context.Context, sch record.Schedule, now time.Time) (claimed record.Schedule, ok bool, err error) {
	claimed = sch
	advance(&claimed, now)
	ok, err = s.opt.Swap.SwapSchedule(ctx, claimed, sch.NextRunAt, sch.Active)
	if err != nil {
		return claimed, false, fmt.Errorf("schedule: claiming %s: %w", sch.ID, err)
	}
	return claimed, ok, nil
}

// save stores sch after a pass handled it: by compare and swap against
// what the pass read or claimed when firings are claimed (a schedule that
// moved meanwhile was handled by another scheduler: it is not set back),
// else as it is.
func (s *Scheduler) save(ctx context.Context, sch record.Schedule, prevNext time.Time, prevActive bool) error {
	if s.opt.Swap == nil {
		return s.store.UpdateSchedule(ctx, sch)
	}
	ok, err := s.opt.Swap.SwapSchedule(ctx, sch, prevNext, prevActive)
	if err != nil {
		return err
	}
	if !ok {
		s.log.Warn("schedule: changed by another node while firing; its state is kept", "schedule", sch.ID)
	}
	return nil
}

// lead runs the firing loop while this node holds the scheduler lease:
// it tries to take the lease every half TTL, runs the loop until the
// lease is lost or ctx ends, and hands the lease back when it stops, so
// that another node's scheduler takes over at once.
func (s *Scheduler) lead(ctx context.Context, done chan struct{}) {
	defer close(done)
	k := s.opt.Leases
	retry := k.TTL() / 2
	for {
		h, err := k.Hold(ctx, LeaseName)
		if err != nil {
			var held *lease.HeldError
			if !errors.As(err, &held) && ctx.Err() == nil {
				s.log.Warn("schedule: taking the scheduler lease failed", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(retry):
			}
			continue
		}
		s.log.Debug("schedule: this node runs the schedules", "holder", k.Holder(), "epoch", h.Lease().Epoch)
		lctx, cancel := context.WithCancel(ctx)
		loopDone := make(chan struct{})
		go s.loop(lctx, loopDone)
		select {
		case <-ctx.Done():
		case <-h.Lost():
			s.log.Warn("schedule: scheduler lease lost; another node runs the schedules", "holder", k.Holder())
		}
		cancel()
		<-loopDone
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), retry)
		_ = h.Release(rctx)
		rcancel()
		if ctx.Err() != nil {
			return
		}
	}
}
