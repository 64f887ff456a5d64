package schedule_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/schedule"
	"github.com/weft-run/weft/schedule/schedtest"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// submissions is the submit side of the tests: it records what fired and
// hands out task ids; workflows named in fail are refused.
type submissions struct {
	mu    sync.Mutex
	calls []string // "workflow inputs"
	fail  map[string]error
	ch    chan string
}

func newSubmissions() *submissions {
	return &submissions{fail: map[string]error{}, ch: make(chan string, 100)}
}

func (s *submissions) submit(_ context.Context, workflowID string, inputs json.RawMessage) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail[workflowID]; err != nil {
		return "", err
	}
	s.calls = append(s.calls, workflowID+" "+string(inputs))
	id := fmt.Sprintf("task_%d", len(s.calls))
	s.ch <- id
	return id, nil
}

func (s *submissions) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

func openDB(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newTest(t *testing.T, opt schedule.Options) (*schedule.Scheduler, *schedtest.FakeClock, *submissions) {
	t.Helper()
	clock := schedtest.NewFakeClock(t0)
	opt.Clock = clock
	subs := newSubmissions()
	return schedule.NewScheduler(openDB(t, ":memory:"), subs.submit, opt), clock, subs
}

func boolp(b bool) *bool { return &b }

func mustCreate(t *testing.T, s *schedule.Scheduler, req schedule.Request) record.Schedule {
	t.Helper()
	sch, err := s.Create(context.Background(), req)
	if err != nil {
		t.Fatalf("Create(%+v): %v", req, err)
	}
	return sch
}

func mustFire(t *testing.T, s *schedule.Scheduler, want int) []record.Schedule {
	t.Helper()
	fired, err := s.FireDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(fired) != want {
		t.Fatalf("fired %d schedules, want %d: %+v", len(fired), want, fired)
	}
	return fired
}

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	s, _, _ := newTest(t, schedule.Options{})
	tests := []struct {
		name string
		req  schedule.Request
		msg  string
	}{
		{"no workflow", schedule.Request{WorkflowID: "  ", IntervalSeconds: 60}, "workflowId is required"},
		{"interval too short", schedule.Request{WorkflowID: "w", IntervalSeconds: 59}, "intervalSeconds must be at least 60 (got 59)"},
		{"interval past expiry", schedule.Request{WorkflowID: "w", IntervalSeconds: 8 * 86400}, "must be at most 604800"},
		{"inputs an array", schedule.Request{WorkflowID: "w", IntervalSeconds: 60, Inputs: json.RawMessage(`[1]`)}, "inputs must be a JSON object"},
		{"inputs broken", schedule.Request{WorkflowID: "w", IntervalSeconds: 60, Inputs: json.RawMessage(`{"a":`)}, "inputs must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := s.Create(context.Background(), tt.req)
			if !errors.Is(err, schedule.ErrInvalid) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want schedule.ErrInvalid with %q", err, tt.msg)
			}
		})
	}
	if all, _ := s.List(context.Background(), false); len(all) != 0 {
		t.Fatalf("invalid requests stored %d schedules", len(all))
	}
}

func TestRecurring(t *testing.T) {
	t.Parallel()
	s, clock, subs := newTest(t, schedule.Options{})
	sch := mustCreate(t, s, schedule.Request{WorkflowID: "digest", Inputs: json.RawMessage(` {"n": 1} `), IntervalSeconds: 60})
	if !sch.Active || !sch.Recurring || !sch.NextRunAt.Equal(t0.Add(time.Minute)) || !sch.ExpiresAt.Equal(t0.Add(7*day)) ||
		!sch.CreatedAt.Equal(t0) || sch.RunCount != 0 || !strings.HasPrefix(sch.ID, "sched_") {
		t.Fatalf("created = %+v", sch)
	}
	clock.Advance(59 * time.Second)
	mustFire(t, s, 0)
	clock.Advance(time.Second)
	fired := mustFire(t, s, 1)[0]
	if fired.RunCount != 1 || fired.LastTaskID != "task_1" || !fired.LastRunAt.Equal(t0.Add(time.Minute)) || !fired.NextRunAt.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("after the first run = %+v", fired)
	}
	mustFire(t, s, 0) // no double firing at the same instant
	clock.Advance(time.Minute)
	mustFire(t, s, 1)
	got, err := s.Get(context.Background(), sch.ID)
	if err != nil || got.RunCount != 2 || got.LastTaskID != "task_2" || !got.Active {
		t.Fatalf("stored = %+v, %v", got, err)
	}
	if subs.calls[0] != `digest {"n": 1}` {
		t.Fatalf("submitted %q", subs.calls[0])
	}
}

func TestOneShot(t *testing.T) {
	t.Parallel()
	s, clock, subs := newTest(t, schedule.Options{})
	sch := mustCreate(t, s, schedule.Request{WorkflowID: "remind", IntervalSeconds: 300, Recurring: boolp(false)})
	if sch.Recurring || !sch.Active {
		t.Fatalf("created = %+v", sch)
	}
	clock.Advance(299 * time.Second)
	mustFire(t, s, 0)
	clock.Advance(time.Second)
	fired := mustFire(t, s, 1)[0]
	if fired.Active || fired.RunCount != 1 {
		t.Fatalf("one-shot after firing = %+v", fired)
	}
	clock.Advance(time.Hour)
	mustFire(t, s, 0)
	if subs.count() != 1 {
		t.Fatalf("%d submissions, want 1", subs.count())
	}
}

func TestRunImmediately(t *testing.T) {
	t.Parallel()
	s, clock, subs := newTest(t, schedule.Options{})
	sch := mustCreate(t, s, schedule.Request{WorkflowID: "w", IntervalSeconds: 120, RunImmediately: true})
	if sch.RunCount != 1 || sch.LastTaskID != "task_1" || !sch.LastRunAt.Equal(t0) || !sch.NextRunAt.Equal(t0.Add(2*time.Minute)) || !sch.Active {
		t.Fatalf("created = %+v", sch)
	}
	mustFire(t, s, 0)
	clock.Advance(2 * time.Minute)
	mustFire(t, s, 1)

	once := mustCreate(t, s, schedule.Request{WorkflowID: "w", IntervalSeconds: 120, Recurring: boolp(false), RunImmediately: true})
	if once.Active || once.RunCount != 1 {
		t.Fatalf("immediate one-shot = %+v", once)
	}
	clock.Advance(2 * time.Minute)
	fired := mustFire(t, s, 1) // only the recurring one
	if fired[0].ID != sch.ID {
		t.Fatalf("fired %s", fired[0].ID)
	}

	subs.mu.Lock()
	subs.fail["broken"] = errors.New(`input "city" is required`)
	subs.mu.Unlock()
	_, err := s.Create(context.Background(), schedule.Request{WorkflowID: "broken", IntervalSeconds: 60, RunImmediately: true})
	if err == nil || !strings.Contains(err.Error(), `first run of workflow broken: input "city" is required`) {
		t.Fatalf("failing first run: err = %v", err)
	}
	all, _ := s.List(context.Background(), false)
	if len(all) != 2 {
		t.Fatalf("%d schedules stored, want 2 (the failed one is not kept)", len(all))
	}
}

func TestFailedFiringMovesOn(t *testing.T) {
	t.Parallel()
	s, clock, subs := newTest(t, schedule.Options{})
	sch := mustCreate(t, s, schedule.Request{WorkflowID: "broken", IntervalSeconds: 60})
	subs.mu.Lock()
	subs.fail["broken"] = errors.New("workflow deleted")
	subs.mu.Unlock()
	clock.Advance(time.Minute)
	mustFire(t, s, 0)
	got, _ := s.Get(context.Background(), sch.ID)
	if got.RunCount != 0 || !got.NextRunAt.Equal(t0.Add(2*time.Minute)) || !got.Active {
		t.Fatalf("after a failed firing = %+v", got)
	}
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	s, clock, subs := newTest(t, schedule.Options{})
	sch := mustCreate(t, s, schedule.Request{WorkflowID: "daily", IntervalSeconds: 86400})
	for range 6 {
		clock.Advance(day)
		mustFire(t, s, 1)
	}
	// Day 7 is the expiry: the schedule stops instead of firing.
	clock.Advance(day)
	mustFire(t, s, 0)
	got, _ := s.Get(context.Background(), sch.ID)
	if got.Active || got.RunCount != 6 {
		t.Fatalf("after 7 days = %+v", got)
	}
	active, _ := s.List(context.Background(), true)
	if len(active) != 0 || subs.count() != 6 {
		t.Fatalf("%d active, %d submissions", len(active), subs.count())
	}
}

func TestMaxActive(t *testing.T) {
	t.Parallel()
	s, clock, _ := newTest(t, schedule.Options{})
	var first record.Schedule
	for i := range schedule.DefaultMaxActive {
		sch := mustCreate(t, s, schedule.Request{WorkflowID: fmt.Sprint("w", i), IntervalSeconds: 3600})
		if i == 0 {
			first = sch
		}
	}
	_, err := s.Create(context.Background(), schedule.Request{WorkflowID: "one-more", IntervalSeconds: 3600})
	if !errors.Is(err, schedule.ErrTooMany) || !strings.Contains(err.Error(), "at most 50 schedules may be active") {
		t.Fatalf("51st: err = %v", err)
	}
	if err := s.Delete(context.Background(), first.ID); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, schedule.Request{WorkflowID: "one-more", IntervalSeconds: 3600})
	if err := s.Delete(context.Background(), first.ID); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("deleting twice: %v", err)
	}
	if _, err := s.Get(context.Background(), first.ID); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("Get(deleted): %v", err)
	}
	// Expired schedules do not count, even before a pass deactivates them.
	clock.Advance(7 * day)
	mustCreate(t, s, schedule.Request{WorkflowID: "after-expiry", IntervalSeconds: 3600})
}

func TestLimitsConfigurable(t *testing.T) {
	t.Parallel()
	s, _, _ := newTest(t, schedule.Options{MaxActive: 1, MinInterval: 10 * time.Second, TTL: time.Hour})
	sch := mustCreate(t, s, schedule.Request{WorkflowID: "w", IntervalSeconds: 10})
	if !sch.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("expires %v", sch.ExpiresAt)
	}
	if _, err := s.Create(context.Background(), schedule.Request{WorkflowID: "w", IntervalSeconds: 10}); !errors.Is(err, schedule.ErrTooMany) {
		t.Fatalf("second with MaxActive 1: %v", err)
	}
}

// TestPersistsAcrossRestart: a schedule created by one scheduler is fired
// by a new one on the same database file; the three intervals missed while
// "down" fire once, and the phase is kept.
func TestPersistsAcrossRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "weft.db")
	clock := schedtest.NewFakeClock(t0)
	before := newSubmissions()
	db1, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s1 := schedule.NewScheduler(db1, before.submit, schedule.Options{Clock: clock})
	sch := mustCreate(t, s1, schedule.Request{WorkflowID: "w", IntervalSeconds: 60, Inputs: json.RawMessage(`{"big":12345678901234567890}`)})
	if err := db1.Close(); err != nil {
		t.Fatal(err)
	}

	clock.Advance(3*time.Minute + 30*time.Second)
	after := newSubmissions()
	s2 := schedule.NewScheduler(openDB(t, path), after.submit, schedule.Options{Clock: clock})
	if err := s2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s2.Stop()
	select {
	case id := <-after.ch:
		if id != "task_1" {
			t.Fatalf("task %s", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the missed schedule did not fire on start")
	}
	s2.Stop()
	got, err := s2.Get(context.Background(), sch.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.count() != 1 || got.RunCount != 1 || !got.NextRunAt.Equal(t0.Add(4*time.Minute)) || !got.LastRunAt.Equal(clock.Now()) {
		t.Fatalf("%d submissions; stored = %+v", after.count(), got)
	}
	if after.calls[0] != `w {"big":12345678901234567890}` {
		t.Fatalf("submitted %q", after.calls[0])
	}
}

// TestLoop drives the background loop with the fake clock only.
func TestLoop(t *testing.T) {
	t.Parallel()
	s, clock, subs := newTest(t, schedule.Options{})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := s.Start(context.Background()); err == nil {
		t.Fatal("started twice")
	}
	sch := mustCreate(t, s, schedule.Request{WorkflowID: "w", IntervalSeconds: 60})
	once := mustCreate(t, s, schedule.Request{WorkflowID: "once", IntervalSeconds: 90, Recurring: boolp(false)})
	next := func() string {
		t.Helper()
		select {
		case id := <-subs.ch:
			return id
		case <-time.After(10 * time.Second):
			t.Fatal("nothing fired")
			return ""
		}
	}
	clock.Advance(time.Minute)
	next()
	clock.Advance(30 * time.Second)
	next()
	clock.Advance(30 * time.Second)
	next()
	// A jump over many intervals fires once.
	clock.Advance(10 * time.Minute)
	next()
	s.Stop()
	if n := subs.count(); n != 4 {
		t.Fatalf("%d submissions, want 4", n)
	}
	got, _ := s.Get(context.Background(), sch.ID)
	if got.RunCount != 3 || !got.NextRunAt.Equal(t0.Add(13*time.Minute)) {
		t.Fatalf("recurring = %+v", got)
	}
	if got, _ := s.Get(context.Background(), once.ID); got.Active || got.RunCount != 1 {
		t.Fatalf("one-shot = %+v", got)
	}
	// Stopped: the clock moves, nothing fires.
	clock.Advance(time.Hour)
	if n := subs.count(); n != 4 {
		t.Fatalf("fired after Stop: %d", n)
	}
}

func TestTool(t *testing.T) {
	t.Parallel()
	s, _, subs := newTest(t, schedule.Options{})
	reg, err := tool.NewRegistry(s.Tool())
	if err != nil {
		t.Fatal(err)
	}
	run := func(input string) tool.Result {
		return reg.Execute(context.Background(), &tool.Call{ID: "c", Name: "task_schedule", Input: json.RawMessage(input)})
	}
	res := run(`{"workflowId":"report","inputs":{"id":12345678901234567890},"intervalSeconds":120,"runImmediately":true}`)
	sch, ok := res.Data["schedule"].(record.Schedule)
	if res.IsError || !ok || !strings.Contains(res.TextOf(), "every 120 s") || !strings.Contains(res.TextOf(), "First run started as task task_1") {
		t.Fatalf("result: %v %s", res.IsError, res.TextOf())
	}
	if string(sch.Inputs) != `{"id":12345678901234567890}` || subs.calls[0] != `report {"id":12345678901234567890}` {
		t.Fatalf("inputs %s, submitted %q", sch.Inputs, subs.calls[0])
	}
	res = run(`{"workflowId":"report","intervalSeconds":600,"recurring":false}`)
	if res.IsError || !strings.Contains(res.TextOf(), ": once, at 2025-03-01T12:10:00Z.") {
		t.Fatalf("one-shot: %s", res.TextOf())
	}
	res = run(`{"workflowId":"report","intervalSeconds":10}`)
	if !res.IsError || !strings.Contains(res.TextOf(), "intervalSeconds must be at least 60 (got 10)") {
		t.Fatalf("short interval: %s", res.TextOf())
	}
	spec := s.Tool().Spec()
	if spec.ReadOnly || spec.Effect != tool.EffectExecute || !strings.Contains(spec.Description, "at least 60") {
		t.Fatalf("spec = %+v", spec)
	}
}

// TestRealClock: the system clock's timer fires and it reads the time.
func TestRealClock(t *testing.T) {
	t.Parallel()
	c := schedule.RealClock()
	tm := c.NewTimer(time.Millisecond)
	<-tm.C()
	if c.Now().IsZero() {
		t.Fatal("real clock")
	}
	if tm.Stop() {
		t.Fatal("Stop of a fired timer reported true")
	}
}
