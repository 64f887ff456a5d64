package schedule_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-run/weft/internal/lease"
	"github.com/weft-run/weft/internal/lease/leasetest"
	"github.com/weft-run/weft/schedule"
	"github.com/weft-run/weft/store/postgres"
	"github.com/weft-run/weft/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type firing struct {
	node string
	at   time.Time
}

// TestSchedulesFireOnceAcrossNodes: three schedulers on one PostgreSQL, a
// schedule every second: each slot fires exactly once, on the node
// holding the scheduler lease; when that node dies (its lease not handed
// back), another takes over within the TTL, and no slot fires twice.
func TestSchedulesFireOnceAcrossNodes(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	const (
		nodes    = 3
		ttl      = 600 * time.Millisecond
		interval = time.Second
	)
	var (
		mu      sync.Mutex
		firings []firing
	)
	scheds := make([]*schedule.Scheduler, nodes)
	lstores := make([]*leasetest.Mortal, nodes)
	dbs := make([]*postgres.DB, nodes)
	for i := range nodes {
		db, err := postgres.Open(t.Context(), dsn, postgres.Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
		id := fmt.Sprintf("node-%d", i)
		lstores[i] = &leasetest.Mortal{Leases: db}
		submit := func(_ context.Context, wf string, _ json.RawMessage) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			firings = append(firings, firing{id, time.Now()})
			return fmt.Sprintf("task-%d", len(firings)), nil
		}
		scheds[i] = schedule.NewScheduler(db, submit, schedule.Options{MinInterval: interval,
			Leases: lease.NewKeeper(lstores[i], id, ttl, nil), Swap: db, Poll: 50 * time.Millisecond})
		if err := scheds[i].Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(scheds[i].Stop)
	}
	sch, err := scheds[2].Create(t.Context(), schedule.Request{WorkflowID: "wf", IntervalSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	start := sch.CreatedAt
	// slot is the interval a firing belongs to (the first is slot 1).
	slot := func(f firing) int { return int(f.at.Sub(start) / interval) }

	time.Sleep(4*interval + interval/2)
	mu.Lock()
	before := append([]firing(nil), firings...)
	mu.Unlock()
	if len(before) != 4 {
		t.Fatalf("in 4.5 intervals: %d firings %v, want 4", len(before), before)
	}
	holder := before[len(before)-1].node
	seen := map[int]bool{}
	for _, f := range before {
		if f.node != holder {
			t.Errorf("firing %v not on the lease holder %s", f, holder)
		}
		if seen[slot(f)] {
			t.Errorf("slot %d fired twice: %v", slot(f), before)
		}
		seen[slot(f)] = true
	}

	// Kill the holder: nothing handed back, its lease expires.
	var victim int
	fmt.Sscanf(holder, "node-%d", &victim)
	lstores[victim].Kill()
	scheds[victim].Stop()
	killedAt := time.Now()

	time.Sleep(4 * interval)
	for _, s := range scheds {
		s.Stop()
	}
	mu.Lock()
	after := append([]firing(nil), firings[len(before):]...)
	mu.Unlock()
	var took time.Time
	for _, f := range after {
		if f.node == holder {
			t.Errorf("the killed node fired: %v", f)
		}
		if seen[slot(f)] {
			t.Errorf("slot %d fired twice: %v then %v", slot(f), before, after)
		}
		seen[slot(f)] = true
		if took.IsZero() {
			took = f.at
		}
	}
	// Taken over within the TTL (plus the next slot and the retry of a
	// node that found the lease held): at most TTL + interval + TTL/2.
	if took.IsZero() || took.Sub(killedAt) > ttl+interval+ttl/2+200*time.Millisecond {
		t.Fatalf("no takeover in time: killed at %v, firings after %v", killedAt, after)
	}
	// Slots lost only within the takeover window: the last ones all fired.
	last := slot(firing{at: time.Now()})
	for s := slot(firing{at: took}); s < last; s++ {
		if !seen[s] {
			t.Errorf("slot %d after the takeover never fired: %v", s, after)
		}
	}
	got, err := dbs[0].GetSchedule(t.Context(), sch.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.RunCount != len(before)+len(after) {
		t.Errorf("run count %d, firings %d", got.RunCount, len(before)+len(after))
	}
}

// TestSwapFiresEachSlotOnce: two schedulers that both run their loop (as
// two holders would, in the window where one lost the lease and has not
// noticed yet) still fire each slot once: the compare and swap on the
// schedule's next run lets one of them claim it.
func TestSwapFiresEachSlotOnce(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	var fired atomic.Int64
	var scheds []*schedule.Scheduler
	for range 2 {
		db, err := postgres.Open(t.Context(), dsn, postgres.Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		submit := func(context.Context, string, json.RawMessage) (string, error) {
			return fmt.Sprintf("task-%d", fired.Add(1)), nil
		}
		s := schedule.NewScheduler(db, submit, schedule.Options{MinInterval: time.Second, Swap: db, Poll: 10 * time.Millisecond})
		scheds = append(scheds, s)
	}
	sch, err := scheds[0].Create(t.Context(), schedule.Request{WorkflowID: "wf", IntervalSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scheds {
		if err := s.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3*time.Second + 500*time.Millisecond)
	for _, s := range scheds {
		s.Stop()
	}
	if n := fired.Load(); n != 3 {
		t.Errorf("3.5 intervals: %d firings, want 3", n)
	}
	got, err := scheds[1].Get(t.Context(), sch.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.RunCount != int(fired.Load()) {
		t.Errorf("run count %d, firings %d", got.RunCount, fired.Load())
	}
}
