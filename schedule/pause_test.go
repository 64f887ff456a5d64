package schedule_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/schedule"
)

// TestPauseResume: a paused schedule does not fire; resumed, it skips the
// slots it missed and fires on its phase again; pausing twice is a no-op.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock, subs := newTest(t, schedule.Options{})
	sch := mustCreate(t, s, schedule.Request{WorkflowID: "digest", IntervalSeconds: 60})
	for range 2 {
		got, err := s.SetActive(ctx, sch.ID, false)
		if err != nil || got.Active {
			t.Fatalf("pause: %+v, %v", got, err)
		}
	}
	clock.Advance(5*time.Minute + 30*time.Second)
	mustFire(t, s, 0)
	if stored, _ := s.Get(ctx, sch.ID); stored.Active {
		t.Fatalf("stored after pause %+v", stored)
	}
	got, err := s.SetActive(ctx, sch.ID, true)
	if err != nil || !got.Active || !got.NextRunAt.Equal(t0.Add(6*time.Minute)) {
		t.Fatalf("resume: %+v, %v (want the next slot on the phase, %v)", got, err, t0.Add(6*time.Minute))
	}
	mustFire(t, s, 0) // the missed slots are not made up
	clock.Advance(30 * time.Second)
	mustFire(t, s, 1)
	if subs.count() != 1 {
		t.Fatalf("%d submissions", subs.count())
	}
}

// TestResumeRefused: what is over cannot be resumed, resuming counts
// against MaxActive, and an unknown id is ErrNotFound.
func TestResumeRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock, _ := newTest(t, schedule.Options{MaxActive: 2})
	once := mustCreate(t, s, schedule.Request{WorkflowID: "once", IntervalSeconds: 60, Recurring: boolp(false)})
	clock.Advance(time.Minute)
	mustFire(t, s, 1)
	a := mustCreate(t, s, schedule.Request{WorkflowID: "a", IntervalSeconds: 3600})
	if _, err := s.SetActive(ctx, a.ID, false); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, schedule.Request{WorkflowID: "b", IntervalSeconds: 3600})
	mustCreate(t, s, schedule.Request{WorkflowID: "c", IntervalSeconds: 3600})

	tests := []struct {
		name string
		id   string
		want error
	}{
		{"spent one-shot", once.ID, schedule.ErrInvalid},
		{"over the active limit", a.ID, schedule.ErrTooMany},
		{"unknown", "sched_000000000000", record.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.SetActive(ctx, tc.id, true); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	clock.Advance(8 * 24 * time.Hour)
	mustFire(t, s, 0) // deactivates b and c: expired
	if _, err := s.SetActive(ctx, a.ID, true); !errors.Is(err, schedule.ErrInvalid) {
		t.Fatalf("resuming an expired schedule: %v", err)
	}
}
