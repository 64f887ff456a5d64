package schedule

import (
	"context"
	"fmt"
	"time"

	"github.com/weft-run/weft/record"
)

// SetActive pauses (active false) or resumes a schedule and returns it as
// stored. A paused schedule keeps its slot and expiry; resuming skips the
// slots missed meanwhile, as a late pass does (a one-shot whose time
// passed fires at the next pass). Resuming counts against MaxActive
// (ErrTooMany) and is refused (ErrInvalid) for an expired schedule or a
// one-shot that has run: those are over, not paused. Pausing or resuming
// twice changes nothing. An error wrapping record.ErrNotFound for an
// unknown id.
func (s *Scheduler) SetActive(ctx context.Context, id string, active bool) (record.Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sch, err := s.store.GetSchedule(ctx, id)
	if err != nil {
		return record.Schedule{}, err
	}
	if sch.Active == active {
		return sch, nil
	}
	now := s.opt.Clock.Now()
	if active {
		switch {
		case !now.Before(sch.ExpiresAt):
			return record.Schedule{}, fmt.Errorf("%w: schedule %s expired at %s; create a new one", ErrInvalid, id, sch.ExpiresAt.UTC().Format(time.RFC3339))
		case !sch.Recurring && sch.RunCount > 0:
			return record.Schedule{}, fmt.Errorf("%w: schedule %s ran once and is done; create a new one", ErrInvalid, id)
		}
		all, err := s.store.ListSchedules(ctx, true)
		if err != nil {
			return record.Schedule{}, fmt.Errorf("schedule: %w", err)
		}
		n := 0
		for _, a := range all {
			if now.Before(a.ExpiresAt) {
				n++
			}
		}
		if n >= s.opt.MaxActive {
			return record.Schedule{}, fmt.Errorf("%w: at most %d schedules may be active; pause or delete one first", ErrTooMany, s.opt.MaxActive)
		}
		if sch.Recurring && !sch.NextRunAt.After(now) {
			advance(&sch, now)
		}
	}
	sch.Active = active
	if err := s.store.UpdateSchedule(ctx, sch); err != nil {
		return record.Schedule{}, fmt.Errorf("schedule: %w", err)
	}
	s.poke()
	return sch, nil
}
