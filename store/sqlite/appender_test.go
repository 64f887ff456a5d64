package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/store"
)

// holdWriter takes the single write connection so that appends pile up
// behind it and form groups; release lets them through.
func holdWriter(t *testing.T, db *DB) (release func()) {
	t.Helper()
	tx, err := db.w.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return func() { _ = tx.Rollback() }
}

func createSessions(t *testing.T, db *DB, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := db.CreateSession(t.Context(), store.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGroupFailureIsolated: a request that fails inside a shared
// transaction fails alone; the requests grouped with it are stored, with
// gap-free seqs.
func TestGroupFailureIsolated(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := openTest(t, filepath.Join(t.TempDir(), "weft.db"))
	defer db.Close()
	createSessions(t, db, "s")
	// A real failure at insert time, past AppendEvents' own validation.
	if _, err := db.w.ExecContext(ctx, `CREATE TRIGGER poison BEFORE INSERT ON events
		WHEN NEW.type = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned event'); END`); err != nil {
		t.Fatal(err)
	}

	release := holdWriter(t, db)
	const good = 20
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		seqsOK   []int64
		poisoned error
		missing  error
	)
	for i := range good {
		wg.Go(func() {
			got, err := db.AppendEvents(ctx, "s", store.Event{Type: "ok", Data: json.RawMessage(fmt.Sprint(i))})
			if err != nil {
				t.Errorf("good append %d: %v", i, err)
				return
			}
			mu.Lock()
			seqsOK = append(seqsOK, got[0].Seq)
			mu.Unlock()
		})
		if i == good/2 {
			// In the middle of the queue, so that they share a group with
			// good requests on both sides.
			wg.Go(func() {
				_, poisoned = db.AppendEvents(ctx, "s", store.Event{Type: "ok"}, store.Event{Type: "poison"})
			})
			wg.Go(func() {
				_, missing = db.AppendEvents(ctx, "nope", store.Event{Type: "ok"})
			})
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(50 * time.Millisecond)
	release()
	wg.Wait()

	if poisoned == nil || !strings.Contains(poisoned.Error(), "poisoned event") {
		t.Errorf("poisoned append: %v, want the trigger's error", poisoned)
	}
	if !errors.Is(missing, store.ErrNotFound) {
		t.Errorf("append to a missing session: %v, want ErrNotFound", missing)
	}
	slices.Sort(seqsOK)
	want := make([]int64, good)
	for i := range want {
		want[i] = int64(i + 1)
	}
	if !slices.Equal(seqsOK, want) {
		t.Errorf("good appends got seqs %v, want 1..%d", seqsOK, good)
	}
	events, err := db.ReadEvents(ctx, "s", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Type != "ok" || e.Data == nil {
			t.Errorf("stored event %d from the failed batch: %+v", e.Seq, e)
		}
	}
	if len(events) != good {
		t.Errorf("%d events stored, want %d", len(events), good)
	}
}

// TestCanceledWhileQueued: a caller that gives up while its append waits
// gets its context's error and its events are never stored; the requests
// around it are.
func TestCanceledWhileQueued(t *testing.T) {
	t.Parallel()
	db := openTest(t, filepath.Join(t.TempDir(), "weft.db"))
	defer db.Close()
	createSessions(t, db, "s")
	release := holdWriter(t, db)

	bg := context.Background()
	var wg sync.WaitGroup
	appendType := func(ctx context.Context, typ string) error {
		_, err := db.AppendEvents(ctx, "s", store.Event{Type: typ})
		return err
	}
	wg.Go(func() {
		if err := appendType(bg, "a"); err != nil {
			t.Errorf("first append: %v", err)
		}
	})
	time.Sleep(10 * time.Millisecond)
	ctx, cancel := context.WithCancel(bg)
	canceled := make(chan error, 1)
	go func() { canceled <- appendType(ctx, "canceled") }()
	time.Sleep(10 * time.Millisecond)
	wg.Go(func() {
		if err := appendType(bg, "c"); err != nil {
			t.Errorf("last append: %v", err)
		}
	})
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-canceled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("canceled append returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a canceled append still waits for the write lock")
	}
	release()
	wg.Wait()

	events, err := db.ReadEvents(bg, "s", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
	}
	slices.Sort(types)
	if !slices.Equal(types, []string{"a", "c"}) {
		t.Errorf("stored %v, want a and c only", types)
	}
}

// TestCloseDuringAppends: Close while appends are in flight neither hangs
// nor panics, and every append that reported success is in the file.
func TestCloseDuringAppends(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "weft.db")
	db := openTest(t, path)
	createSessions(t, db, "s")
	var (
		wg sync.WaitGroup
		mu sync.Mutex
		ok []int64
	)
	for range 8 {
		wg.Go(func() {
			for {
				got, err := db.AppendEvents(context.Background(), "s", store.Event{Type: "e"})
				if err != nil {
					return
				}
				mu.Lock()
				ok = append(ok, got[0].Seq)
				mu.Unlock()
			}
		})
	}
	time.Sleep(30 * time.Millisecond)
	if err := db.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	wg.Wait()
	if _, err := db.AppendEvents(t.Context(), "s", store.Event{Type: "late"}); err == nil {
		t.Error("AppendEvents after Close succeeded")
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	db = openTest(t, path)
	defer db.Close()
	events, err := db.ReadEvents(t.Context(), "s", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[int64]bool{}
	for _, e := range events {
		stored[e.Seq] = true
	}
	for _, s := range ok {
		if !stored[s] {
			t.Errorf("seq %d was acknowledged but is not stored", s)
		}
	}
	if len(events) != len(ok) {
		t.Errorf("%d events stored, %d acknowledged: a failed append stored something", len(events), len(ok))
	}
	if len(ok) == 0 {
		t.Error("no append succeeded before Close")
	}
}

// TestSeqCacheFollowsOtherWriters: appends number their events from the
// cached last seq, so whatever changes a session behind the cache (a
// delete and re-create through this handle or another, another handle's
// appends) must make the next append start from the database again.
func TestSeqCacheFollowsOtherWriters(t *testing.T) {
	t.Parallel()
	ev := store.Event{Type: "e"}
	for _, tc := range []struct {
		name string
		// change runs between two appends to "s" through a; it returns the
		// seq the next append through a must get.
		change func(t *testing.T, a, b *DB) int64
	}{
		{"appends through another handle", func(t *testing.T, a, b *DB) int64 {
			if _, err := b.AppendEvents(t.Context(), "s", ev, ev); err != nil {
				t.Fatal(err)
			}
			return 6
		}},
		{"delete and re-create through this handle", func(t *testing.T, a, b *DB) int64 {
			if err := a.DeleteSession(t.Context(), "s"); err != nil {
				t.Fatal(err)
			}
			createSessions(t, a, "s")
			return 1
		}},
		{"delete and re-create through another handle", func(t *testing.T, a, b *DB) int64 {
			// The new row reuses the deleted one's pk (it had the highest).
			if err := b.DeleteSession(t.Context(), "s"); err != nil {
				t.Fatal(err)
			}
			createSessions(t, b, "s")
			return 1
		}},
		{"a run deleted and re-created through this handle", func(t *testing.T, a, b *DB) int64 {
			if _, err := a.RunEvents().AppendEvents(t.Context(), "r", ev); err != nil {
				t.Fatal(err)
			}
			if err := a.DeleteRun(t.Context(), "r"); err != nil {
				t.Fatal(err)
			}
			if _, err := a.CreateRun(t.Context(), store.Run{ID: "r", Status: store.RunRunning}); err != nil {
				t.Fatal(err)
			}
			got, err := a.RunEvents().AppendEvents(t.Context(), "r", ev)
			if err != nil {
				t.Fatal(err)
			}
			if got[0].Seq != 1 {
				t.Errorf("run re-created: first seq %d, want 1", got[0].Seq)
			}
			return 4
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "weft.db")
			a, b := openTest(t, path), openForeign(t, path)
			defer a.Close()
			defer b.Close()
			createSessions(t, a, "s")
			if _, err := a.CreateRun(t.Context(), store.Run{ID: "r", Status: store.RunRunning}); err != nil {
				t.Fatal(err)
			}
			if _, err := a.AppendEvents(t.Context(), "s", ev, ev, ev); err != nil {
				t.Fatal(err)
			}
			want := tc.change(t, a, b)
			got, err := a.AppendEvents(t.Context(), "s", ev)
			if err != nil {
				t.Fatal(err)
			}
			if got[0].Seq != want {
				t.Errorf("next seq %d, want %d", got[0].Seq, want)
			}
			stored, err := a.ReadEvents(t.Context(), "s", 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range stored {
				if e.Seq != int64(i+1) {
					t.Fatalf("stored seqs are not 1..%d: %v", len(stored), stored)
				}
			}
		})
	}
}

// TestAppendEventBatches: batches for many sessions are stored with each
// session's next seqs, split into transactions of maxGroupEvents events;
// a batch that fails (an unknown session, a poisoned event, invalid data)
// fails alone.
func TestAppendEventBatches(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := openTest(t, filepath.Join(t.TempDir(), "weft.db"))
	defer db.Close()
	if _, err := db.w.ExecContext(ctx, `CREATE TRIGGER poison BEFORE INSERT ON events
		WHEN NEW.type = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned event'); END`); err != nil {
		t.Fatal(err)
	}
	const sessions = 40
	var batches []store.EventBatch
	for i := range sessions {
		id := fmt.Sprintf("s%d", i)
		createSessions(t, db, id)
		if _, err := db.AppendEvents(ctx, id, store.Event{Type: "first"}); err != nil {
			t.Fatal(err)
		}
		// 40 x 60 events: more than two transactions' worth.
		evs := make([]store.Event, 60)
		for k := range evs {
			evs[k] = store.Event{Type: "ok", Data: json.RawMessage(fmt.Sprint(k))}
		}
		batches = append(batches, store.EventBatch{SessionID: id, Events: evs})
	}
	bad := []store.EventBatch{
		{SessionID: "nope", Events: []store.Event{{Type: "ok"}}},
		{SessionID: "s3", Events: []store.Event{{Type: "ok"}, {Type: "poison"}}},
		{SessionID: "s4", Events: []store.Event{{Type: "ok", Data: json.RawMessage(`{`)}}},
	}
	batches = append(batches[:10], append(bad, batches[10:]...)...)
	out, errs := db.AppendEventBatches(ctx, batches)
	for i, b := range batches {
		switch {
		case i == 10:
			if !errors.Is(errs[i], store.ErrNotFound) {
				t.Errorf("batch for an unknown session: %v, want ErrNotFound", errs[i])
			}
		case i == 11:
			if errs[i] == nil || !strings.Contains(errs[i].Error(), "poisoned event") {
				t.Errorf("poisoned batch: %v, want the trigger's error", errs[i])
			}
		case i == 12:
			if errs[i] == nil || !strings.Contains(errs[i].Error(), "not valid JSON") {
				t.Errorf("batch with invalid data: %v, want a JSON error", errs[i])
			}
		default:
			if errs[i] != nil {
				t.Fatalf("batch %d (%s): %v", i, b.SessionID, errs[i])
			}
			if len(out[i]) != 60 || out[i][0].Seq != 2 || out[i][59].Seq != 61 {
				t.Fatalf("batch %d stored %d events, seqs %d..%d; want 60, 2..61", i, len(out[i]), out[i][0].Seq, out[i][len(out[i])-1].Seq)
			}
			stored, err := db.ReadEvents(ctx, b.SessionID, 0, 0)
			if err != nil || len(stored) != 61 || string(stored[60].Data) != "59" {
				t.Fatalf("%s holds %d events, %v", b.SessionID, len(stored), err)
			}
		}
	}
}

// TestWriteCacheGrowsForManySessions: a batch spanning many sessions (a
// persist round under load) grows the write connection's cache; smaller
// ones leave SQLite's default, so that idle sessions cost no cache.
func TestWriteCacheGrowsForManySessions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := openTest(t, filepath.Join(t.TempDir(), "weft.db"))
	defer db.Close()
	cache := func() int {
		var v int
		if err := db.w.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	batch := func(n int) []store.EventBatch {
		b := make([]store.EventBatch, n)
		for i := range b {
			b[i] = store.EventBatch{SessionID: fmt.Sprintf("s%d", i), Events: []store.Event{{Type: "ok"}}}
		}
		return b
	}
	for i := range bigCacheSessions {
		createSessions(t, db, fmt.Sprintf("s%d", i))
	}
	for _, c := range []struct {
		sessions int
		want     int
	}{{bigCacheSessions - 1, -2000}, {bigCacheSessions, -bigCacheKiB}, {1, -bigCacheKiB}} {
		_, errs := db.AppendEventBatches(ctx, batch(c.sessions))
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if got := cache(); got != c.want {
			t.Errorf("after a batch of %d sessions: cache_size %d, want %d", c.sessions, got, c.want)
		}
	}
}

// TestCacheGrowsWithSessionsPerSecond: appends to many sessions one by one
// (small transactions, as the event log's rounds are under a steady load)
// grow the write cache once bigCacheSessions sessions were appended to in
// one second; the same appends spread over seconds do not.
func TestCacheGrowsWithSessionsPerSecond(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, spread := range []bool{true, false} {
		db := openTest(t, filepath.Join(t.TempDir(), "weft.db"))
		defer db.Close()
		var mu sync.Mutex
		now := time.Unix(1_000_000, 0)
		db.seqs.mu.Lock()
		db.seqs.clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		db.seqs.mu.Unlock()
		for i := range bigCacheSessions {
			id := fmt.Sprintf("s%d", i)
			createSessions(t, db, id)
			if _, err := db.AppendEvents(ctx, id, store.Event{Type: "ok"}); err != nil {
				t.Fatal(err)
			}
			if spread && i%(bigCacheSessions/4) == 0 {
				mu.Lock()
				now = now.Add(time.Second)
				mu.Unlock()
			}
		}
		var v int
		if err := db.w.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&v); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: -2000, false: -bigCacheKiB}[spread]; v != want {
			t.Errorf("spread over seconds %v: cache_size %d, want %d", spread, v, want)
		}
	}
}
