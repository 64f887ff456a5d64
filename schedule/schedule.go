// Package schedule fires published workflows on a schedule: every N
// seconds, or once after a delay (seed 001, "工作流定时任务"). Each firing
// is submitted as an ordinary background task, so task_output, task_wait
// and task_kill treat it like any other.
//
// Unlike the seed's in-memory scheduler, schedules live in the store and
// survive restarts. A schedule whose time came while weft was down fires
// once when the scheduler starts, not once per missed interval.
package schedule

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/weft-run/weft/internal/lease"
	"github.com/weft-run/weft/record"
)

// Defaults of Options (seed 001's policy).
const (
	DefaultMaxActive   = 50
	DefaultMinInterval = 60 * time.Second
	DefaultTTL         = 7 * 24 * time.Hour
)

// retryDelay is how long the loop waits after the store failed it.
const retryDelay = 30 * time.Second

// Errors callers branch on (errors.Is). Unknown schedules are
// record.ErrNotFound.
var (
	// ErrInvalid: the request is wrong (no workflow, interval too short or
	// too long, inputs not an object); the message says how.
	ErrInvalid = errors.New("invalid schedule")
	// ErrTooMany: MaxActive schedules are active already.
	ErrTooMany = errors.New("too many active schedules")
)

// SubmitFunc starts a workflow run as a background task and returns the
// task's id; its errors are user-facing.
type SubmitFunc func(ctx context.Context, workflowID string, inputs json.RawMessage) (taskID string, err error)

// CheckFunc says whether a workflow could be submitted with inputs now
// (it exists, is published, and accepts the inputs) without running it.
// Its errors are user-facing and returned by Create as they are.
type CheckFunc func(ctx context.Context, workflowID string, inputs json.RawMessage) error

// Options configure a Scheduler. The zero value means the defaults.
type Options struct {
	// Clock is the time source; nil means RealClock().
	Clock Clock
	// Logger receives failed firings and store errors; nil discards.
	Logger *slog.Logger
	// MaxActive bounds the active schedules. Zero means DefaultMaxActive.
	MaxActive int
	// MinInterval is the shortest interval accepted. Zero means
	// DefaultMinInterval.
	MinInterval time.Duration
	// TTL is how long after its creation a schedule expires (becomes
	// inactive). Zero means DefaultTTL.
	TTL time.Duration
	// Check, when set, vets a schedule's workflow and inputs at Create, so
	// that a schedule that could never fire is refused then rather than
	// failing at every firing.
	Check CheckFunc

	// Leases, when set, makes the firing loop run only while this node
	// holds the lease "scheduler" (cluster.go): of several nodes on one
	// store, one fires. Swap, when set, claims each firing by compare and
	// swap, so that even two holders (a lease lost and taken over while a
	// pass runs) cannot fire one slot twice. Poll bounds the loop's sleep
	// (0: none), so that schedules created on other nodes are seen.
	Leases *lease.Keeper
	Swap   Swapper
	Poll   time.Duration
}

// Request asks for a schedule; it is also the body of POST /v1/schedules.
type Request struct {
	WorkflowID string          `json:"workflowId"`
	Inputs     json.RawMessage `json:"inputs,omitempty"`
	// IntervalSeconds is the time between firings, or the delay of a
	// one-shot schedule.
	IntervalSeconds int `json:"intervalSeconds"`
	// Recurring: nil or true fires every interval until the schedule
	// expires; false fires once, one interval after creation (or at once
	// with RunImmediately), and the schedule is then inactive.
	Recurring *bool `json:"recurring,omitempty"`
	// RunImmediately fires the first run during Create.
	RunImmediately bool `json:"runImmediately,omitempty"`
}

// Scheduler keeps schedules in the store and fires them. Its methods are
// safe for concurrent use.
type Scheduler struct {
	store  Store
	submit SubmitFunc
	opt    Options
	log    *slog.Logger
	wake   chan struct{}

	// mu serialises changes: the active count checked by Create and the
	// firing of a due schedule must not race.
	mu sync.Mutex

	loopMu sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewScheduler returns a scheduler over st that fires through submit.
func NewScheduler(st Store, submit SubmitFunc, opt Options) *Scheduler {
	if opt.Clock == nil {
		opt.Clock = RealClock()
	}
	if opt.MaxActive <= 0 {
		opt.MaxActive = DefaultMaxActive
	}
	if opt.MinInterval <= 0 {
		opt.MinInterval = DefaultMinInterval
	}
	if opt.TTL <= 0 {
		opt.TTL = DefaultTTL
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{store: st, submit: submit, opt: opt, log: log, wake: make(chan struct{}, 1)}
}

// newID is "sched_" and 12 hex digits.
func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "sched_" + hex.EncodeToString(b[:])
}

func (s *Scheduler) validate(req *Request) error {
	req.WorkflowID = strings.TrimSpace(req.WorkflowID)
	if req.WorkflowID == "" {
		return fmt.Errorf("%w: workflowId is required", ErrInvalid)
	}
	minSec := int(s.opt.MinInterval / time.Second)
	if req.IntervalSeconds < minSec {
		return fmt.Errorf("%w: intervalSeconds must be at least %d (got %d)", ErrInvalid, minSec, req.IntervalSeconds)
	}
	if maxSec := int64(s.opt.TTL / time.Second); int64(req.IntervalSeconds) > maxSec {
		return fmt.Errorf("%w: intervalSeconds must be at most %d: schedules expire %v after creation (got %d)",
			ErrInvalid, maxSec, s.opt.TTL, req.IntervalSeconds)
	}
	in := bytes.TrimSpace(req.Inputs)
	switch {
	case len(in) == 0 || string(in) == "null":
		req.Inputs = nil
	case in[0] != '{' || !json.Valid(in):
		return fmt.Errorf("%w: inputs must be a JSON object", ErrInvalid)
	default:
		req.Inputs = in
	}
	return nil
}

// Create validates req and stores an active schedule that expires TTL
// after now. With RunImmediately the first run is submitted before Create
// returns; if that fails, nothing is kept and the error says why.
func (s *Scheduler) Create(ctx context.Context, req Request) (record.Schedule, error) {
	if err := s.validate(&req); err != nil {
		return record.Schedule{}, err
	}
	if s.opt.Check != nil {
		if err := s.opt.Check(ctx, req.WorkflowID, req.Inputs); err != nil {
			return record.Schedule{}, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opt.Clock.Now()
	active, err := s.store.ListSchedules(ctx, true)
	if err != nil {
		return record.Schedule{}, fmt.Errorf("schedule: %w", err)
	}
	n := 0
	for _, a := range active {
		if now.Before(a.ExpiresAt) {
			n++
		}
	}
	if n >= s.opt.MaxActive {
		return record.Schedule{}, fmt.Errorf("%w: at most %d schedules may be active; delete one first", ErrTooMany, s.opt.MaxActive)
	}
	interval := time.Duration(req.IntervalSeconds) * time.Second
	sch := record.Schedule{
		ID:              newID(),
		WorkflowID:      req.WorkflowID,
		Inputs:          req.Inputs,
		IntervalSeconds: req.IntervalSeconds,
		Recurring:       req.Recurring == nil || *req.Recurring,
		Active:          true,
		NextRunAt:       now.Add(interval),
		ExpiresAt:       now.Add(s.opt.TTL),
		CreatedAt:       now,
	}
	sch, err = s.store.CreateSchedule(ctx, sch)
	if err != nil {
		return record.Schedule{}, fmt.Errorf("schedule: %w", err)
	}
	if req.RunImmediately {
		taskID, err := s.submit(ctx, sch.WorkflowID, sch.Inputs)
		if err != nil {
			if derr := s.store.DeleteSchedule(context.WithoutCancel(ctx), sch.ID); derr != nil {
				s.log.Error("schedule: removing a schedule whose first run failed", "schedule", sch.ID, "err", derr)
			}
			return record.Schedule{}, fmt.Errorf("first run of workflow %s: %w", sch.WorkflowID, err)
		}
		s.recordRun(&sch, now, taskID)
		if err := s.store.UpdateSchedule(context.WithoutCancel(ctx), sch); err != nil {
			return record.Schedule{}, fmt.Errorf("schedule: %w", err)
		}
	}
	s.poke()
	return sch, nil
}

// recordRun notes a successful firing at now and moves NextRunAt to the
// first slot after now, keeping the schedule's phase; a one-shot schedule
// is spent.
func (s *Scheduler) recordRun(sch *record.Schedule, now time.Time, taskID string) {
	sch.LastRunAt = now
	sch.RunCount++
	sch.LastTaskID = taskID
	sch.LastError, sch.LastErrorAt = "", time.Time{}
	advance(sch, now)
}

// recordFailure notes a firing that could not be submitted, on the
// schedule itself (GET /v1/schedules shows it), and moves on to the next
// slot: retrying at once would fail the same way.
func (s *Scheduler) recordFailure(sch *record.Schedule, now time.Time, err error) {
	s.log.Error("schedule: firing failed", "schedule", sch.ID, "workflow", sch.WorkflowID, "err", err)
	sch.LastError, sch.LastErrorAt = err.Error(), now
	advance(sch, now)
}

// advance moves NextRunAt past now, or deactivates a one-shot schedule.
// Missed slots are skipped, not made up.
func advance(sch *record.Schedule, now time.Time) {
	if !sch.Recurring {
		sch.Active = false
		return
	}
	interval := time.Duration(sch.IntervalSeconds) * time.Second
	if interval <= 0 {
		sch.Active = false
		return
	}
	if !sch.NextRunAt.After(now) {
		sch.NextRunAt = sch.NextRunAt.Add((now.Sub(sch.NextRunAt)/interval + 1) * interval)
	}
}

// Get returns the schedule; an error wrapping record.ErrNotFound.
func (s *Scheduler) Get(ctx context.Context, id string) (record.Schedule, error) {
	return s.store.GetSchedule(ctx, id)
}

// List returns the schedules (only the active ones when activeOnly),
// soonest next run first.
func (s *Scheduler) List(ctx context.Context, activeOnly bool) ([]record.Schedule, error) {
	return s.store.ListSchedules(ctx, activeOnly)
}

// Delete cancels the schedule and removes it; runs it already started go
// on. An error wrapping record.ErrNotFound for an unknown id.
func (s *Scheduler) Delete(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.store.DeleteSchedule(ctx, id); err != nil {
		return err
	}
	s.poke()
	return nil
}

// FireDue submits a run for every active schedule due at the clock's now
// and deactivates the expired ones (a schedule fires only before it
// expires). It returns the schedules that fired, as updated. A failed
// submission is logged and recorded on the schedule (LastError,
// LastErrorAt), and the schedule moves on to its next slot: retrying at
// once would fail the same way.
func (s *Scheduler) FireDue(ctx context.Context) ([]record.Schedule, error) {
	fired, _, err := s.pass(ctx)
	return fired, err
}

// pass is FireDue, also returning when the next schedule is due or expires
// (zero when none is active).
func (s *Scheduler) pass(ctx context.Context) (fired []record.Schedule, next time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opt.Clock.Now()
	active, err := s.store.ListSchedules(ctx, true)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("schedule: %w", err)
	}
	for _, sch := range active {
		if ctx.Err() != nil {
			return fired, time.Time{}, ctx.Err()
		}
		ran := false
		prevNext, prevActive := sch.NextRunAt, sch.Active
		switch {
		case !now.Before(sch.ExpiresAt):
			sch.Active = false
		case now.Before(sch.NextRunAt):
			next = earliest(next, sch.NextRunAt, sch.ExpiresAt)
			continue
		default:
			if s.opt.Swap != nil {
				claimed, ok, cerr := s.claim(ctx, sch, now)
				if cerr != nil || !ok {
					err = errors.Join(err, cerr)
					continue // another node fired this slot
				}
				prevNext, prevActive = claimed.NextRunAt, claimed.Active
			}
			taskID, serr := s.submit(ctx, sch.WorkflowID, sch.Inputs)
			if serr != nil {
				s.recordFailure(&sch, now, serr)
			} else {
				s.recordRun(&sch, now, taskID)
				ran = true
			}
		}
		// Recorded even when ctx ends meanwhile (Stop): a run was
		// submitted, and forgetting it would fire the slot again.
		if uerr := s.save(context.WithoutCancel(ctx), sch, prevNext, prevActive); uerr != nil {
			err = errors.Join(err, fmt.Errorf("schedule: %w", uerr))
			continue
		}
		if ran {
			fired = append(fired, sch)
		}
		if sch.Active {
			next = earliest(next, sch.NextRunAt, sch.ExpiresAt)
		}
	}
	return fired, next, err
}

func earliest(cur time.Time, ts ...time.Time) time.Time {
	for _, t := range ts {
		if cur.IsZero() || t.Before(cur) {
			cur = t
		}
	}
	return cur
}

// poke wakes the loop to re-plan after a change.
func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Start runs the firing loop in the background until Stop or ctx ends. It
// fires whatever is due at once (schedules missed while weft was down
// fire once), then sleeps until the next schedule is due or expires.
func (s *Scheduler) Start(ctx context.Context) error {
	s.loopMu.Lock()
	defer s.loopMu.Unlock()
	if s.cancel != nil {
		return errors.New("schedule: scheduler already started")
	}
	ctx, cancel := context.WithCancel(ctx)
	s.cancel, s.done = cancel, make(chan struct{})
	if s.opt.Leases != nil {
		go s.lead(ctx, s.done)
	} else {
		go s.loop(ctx, s.done)
	}
	return nil
}

// Stop ends the loop started by Start and waits for it; a firing in
// progress completes first. Schedules stay in the store.
func (s *Scheduler) Stop() {
	s.loopMu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel, s.done = nil, nil
	s.loopMu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (s *Scheduler) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	clock := s.opt.Clock
	for {
		_, next, err := s.pass(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Error("schedule: pass failed; retrying", "err", err, "in", retryDelay)
			if next.IsZero() || next.After(clock.Now().Add(retryDelay)) {
				next = clock.Now().Add(retryDelay)
			}
		}
		if p := s.opt.Poll; p > 0 && (next.IsZero() || next.After(clock.Now().Add(p))) {
			next = clock.Now().Add(p)
		}
		var fire <-chan time.Time
		var tm Timer
		if !next.IsZero() {
			tm = clock.NewTimer(next.Sub(clock.Now()))
			// The clock may have moved past next while the timer was
			// being made (a fake clock advanced by a test, or a slow
			// machine): go round again rather than wait for a later slot.
			if !clock.Now().Before(next) {
				tm.Stop()
				continue
			}
			fire = tm.C()
		}
		select {
		case <-ctx.Done():
		case <-fire:
		case <-s.wake:
		}
		if tm != nil {
			tm.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// Store keeps the schedules (store.Schedules satisfies it).
type Store interface {
	CreateSchedule(ctx context.Context, s record.Schedule) (record.Schedule, error)
	GetSchedule(ctx context.Context, id string) (record.Schedule, error)
	UpdateSchedule(ctx context.Context, s record.Schedule) error
	DeleteSchedule(ctx context.Context, id string) error
	ListSchedules(ctx context.Context, activeOnly bool) ([]record.Schedule, error)
}
