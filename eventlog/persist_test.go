package eventlog

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-run/weft/store"
)

// quiet keeps expected persistence failures out of the test output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// gate blocks the store's appends (after they stored) until opened, so
// tests can hold events in the unpersisted state.
type gate struct {
	once    sync.Once
	entered chan struct{} // closed when the first append is held
	open    chan struct{}
}

func newGate(m *memStore) *gate {
	g := &gate{entered: make(chan struct{}), open: make(chan struct{})}
	m.setHooks(nil, func(string, []store.Event) {
		g.once.Do(func() { close(g.entered) })
		<-g.open
	})
	return g
}

func publishN(t *testing.T, l *Log, id string, n int) {
	t.Helper()
	for i := range n {
		if _, err := l.Publish(t.Context(), id, ev("pub", i)); err != nil {
			t.Fatalf("Publish %d: %v", i, err)
		}
	}
}

// TestDurableBeforeVisible: readers see no event the store does not have
// (they follow the durable watermark), however many are published; the
// ring keeps what waits for the store, and a commit wakes the readers.
// Before issue 12 readers were served from memory first, so this failed.
func TestDurableBeforeVisible(t *testing.T) {
	t.Parallel()
	m := newMemStore("s")
	l := New(m, Options{Window: 4, Logger: quiet})
	g := newGate(m)
	ctx := testCtx(t)
	r := l.Subscribe("s", 0)
	defer r.Close()

	publishN(t, l, "s", 1)
	<-g.entered // seq 1 is being written, held by the gate
	publishN(t, l, "s", 19)
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if e, err := r.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next before anything was stored = seq %d, %v; want to wait", e.Seq, err)
	}
	if r.Buffered() {
		t.Fatal("Buffered reports an event the store does not have")
	}
	if got := l.LastSeq("s"); got != 0 {
		t.Fatalf("LastSeq = %d before anything was stored, want 0", got)
	}
	// The ring keeps everything unpersisted, beyond its window.
	if n, first, last := l.state("s").snapshot(); n != 20 || first != 1 || last != 20 {
		t.Fatalf("ring = len %d, %d..%d; want 20, 1..20", n, first, last)
	}

	flushed := make(chan error, 1)
	go func() { flushed <- l.Flush(ctx, "s") }()
	select {
	case err := <-flushed:
		t.Fatalf("Flush returned %v before the store had the events", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(g.open)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	expectSeqs(t, ctx, r, 1, 20)
	if got := m.lastSeq("s"); got != 20 {
		t.Fatalf("store has %d events after Flush, want 20", got)
	}
	for q := int64(1); q <= 20; q++ {
		if e := m.eventAt("s", q); e.Seq != q || e.Type != "test" {
			t.Fatalf("stored seq %d = %+v", q, e)
		}
	}
	if got := l.LastSeq("s"); got != 20 {
		t.Fatalf("LastSeq = %d after Flush, want 20", got)
	}
	// Persisted, the ring is back to its window, and a reader behind it
	// reads the store.
	if n, first, last := l.state("s").snapshot(); n != 4 || first != 17 || last != 20 {
		t.Fatalf("ring after Flush = len %d, %d..%d; want 4, 17..20", n, first, last)
	}
	reads := m.reads.Load()
	behind := l.Subscribe("s", 2)
	defer behind.Close()
	expectSeqs(t, ctx, behind, 3, 20)
	if m.reads.Load() == reads {
		t.Fatal("reader behind the window did not read the store")
	}
}

// TestRoundsFollowCommits: with no PersistDelay a round starts as soon as
// the previous one has committed (natural group commit): a lone event is
// stored without waiting for a timer, and events published while a round
// commits share the next one.
func TestRoundsFollowCommits(t *testing.T) {
	t.Parallel()
	bs := &batchStore{memStore: newMemStore("a", "b", "c")}
	l := New(bs, Options{Logger: quiet})
	ctx := testCtx(t)
	r := l.Subscribe("a", 0)
	defer r.Close()
	start := time.Now()
	if _, err := l.Publish(ctx, "a", ev("lone", 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(ctx); err != nil {
		t.Fatal(err)
	}
	// The old persister gathered for 20ms first; allow a slow machine a
	// few milliseconds, not a timer's worth.
	if d := time.Since(start); d > 15*time.Millisecond {
		t.Logf("a lone event took %v to become visible (a busy machine?)", d)
	}
	if n := bs.batches.Load(); n != 1 {
		t.Fatalf("%d rounds for one event, want 1", n)
	}

	// Hold a round in its commit; what is published meanwhile, to three
	// sessions, goes in one next round.
	g := newGate(bs.memStore)
	if _, err := l.Publish(ctx, "a", ev("held", 0)); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	for _, id := range []string{"a", "b", "c"} {
		publishN(t, l, id, 5)
	}
	before := bs.batches.Load()
	close(g.open)
	if err := l.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	if n := bs.batches.Load() - before; n != 1 {
		t.Fatalf("%d rounds after the held one, want 1 for everything published meanwhile", n)
	}
	if n := bs.appends.Load(); n != 0 {
		t.Fatalf("%d single-session appends; want every write in a round", n)
	}
}

// TestPersistBatches: events published while the store is busy go to it in
// few appends, and Append waits for durability.
func TestPersistBatches(t *testing.T) {
	t.Parallel()
	m := newMemStore("s")
	l := New(m, Options{Logger: quiet})
	g := newGate(m)
	publishN(t, l, "s", 1)
	<-g.entered
	publishN(t, l, "s", 500)
	calls := m.appends.Load()
	close(g.open)
	got, err := l.Append(t.Context(), "s", ev("last", 0))
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Seq != 502 || m.lastSeq("s") != 502 {
		t.Fatalf("Append = seq %d, store has %d; want 502 and 502", got[0].Seq, m.lastSeq("s"))
	}
	// 501 waiting events in batches of persistBatch, plus the last one.
	if n := m.appends.Load() - calls; n > 4 {
		t.Fatalf("%d store appends for 502 events", n)
	}
}

// TestPublishBackpressure: a session with MaxUnpersisted events waiting
// for the store makes Publish wait, honouring ctx, until the store catches
// up.
func TestPublishBackpressure(t *testing.T) {
	t.Parallel()
	m := newMemStore("s")
	l := New(m, Options{MaxUnpersisted: 8, Logger: quiet})
	g := newGate(m)
	publishN(t, l, "s", 1)
	<-g.entered
	publishN(t, l, "s", 7)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.Publish(ctx, "s", ev("over", 0)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Publish over the bound = %v, want DeadlineExceeded", err)
	}
	if _, _, last := l.state("s").snapshot(); last != 8 {
		t.Fatalf("refused Publish was numbered: last %d", last)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Publish(testCtx(t), "s", ev("over", 1))
		done <- err
	}()
	close(g.open)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(t.Context(), "s"); err != nil {
		t.Fatal(err)
	}
	if got := m.lastSeq("s"); got != 9 {
		t.Fatalf("store has %d events, want 9", got)
	}
}

// TestPersistFailure: a store that refuses an append fails the session:
// the failure reaches Flush and every later append, readers never see the
// refused events, and closing the session starts afresh from the store,
// numbering after what it has (the refused seqs were never shown to
// anyone, so they are free). Before issue 12 readers got the refused
// events from memory, and the new state reissued seqs they had seen.
func TestPersistFailure(t *testing.T) {
	t.Parallel()
	boom := errors.New("disk full")
	m := newMemStore("s")
	// Rounds wait for a Flush, so all six publishes precede the failure.
	l := New(m, Options{Window: 4, PersistDelay: time.Hour, Logger: quiet})
	ctx := testCtx(t)
	appendN(t, l, "s", 3)
	r := l.Subscribe("s", 0)
	defer r.Close()

	m.setFailAppend(boom)
	publishN(t, l, "s", 6) // seqs 4..9, never stored
	if err := l.Flush(ctx, "s"); !errors.Is(err, boom) {
		t.Fatalf("Flush = %v, want the store's error", err)
	}
	if _, err := l.Publish(ctx, "s", ev("later", 0)); !errors.Is(err, boom) {
		t.Fatalf("Publish after the failure = %v, want the store's error", err)
	}
	if _, err := l.Append(ctx, "s", ev("later", 0)); !errors.Is(err, boom) {
		t.Fatalf("Append after the failure = %v, want the store's error", err)
	}
	if err := l.FlushAll(ctx); !errors.Is(err, boom) {
		t.Fatalf("FlushAll = %v, want the store's error", err)
	}
	// Only what the store has is readable.
	expectSeqs(t, ctx, r, 1, 3)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if e, err := r.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next past the stored events = seq %d, %v; want to wait", e.Seq, err)
	}

	m.setFailAppend(nil)
	l.CloseSession("s")
	if _, err := r.Next(ctx); !errors.Is(err, ErrSessionClosed) {
		t.Fatalf("Next after CloseSession = %v, want ErrSessionClosed", err)
	}
	// A new state numbers after what the store has.
	got, err := l.Append(ctx, "s", ev("again", 0))
	if err != nil || got[0].Seq != 4 {
		t.Fatalf("Append after reset = %v, %v; want seq 4", seqs(got), err)
	}
	r2 := l.Subscribe("s", 0)
	defer r2.Close()
	expectSeqs(t, ctx, r2, 1, 4)
	if e := m.eventAt("s", 4); !strings.Contains(string(e.Data), "again") {
		t.Fatalf("stored seq 4 = %+v, want the event appended after the reset", e)
	}
}

// TestPersistUnknownSession: the first Publish learns the session's last
// seq from the store, so an unknown session fails at once.
func TestPersistUnknownSession(t *testing.T) {
	t.Parallel()
	l := New(newMemStore(), Options{Logger: quiet})
	if _, err := l.Publish(t.Context(), "nope", ev("a", 0)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Publish = %v, want ErrNotFound", err)
	}
}

// TestPersistSessionDeletedBehind: the store losing a session while events
// wait for it fails the session instead of dropping them silently.
func TestPersistSessionDeletedBehind(t *testing.T) {
	t.Parallel()
	m := newMemStore("s")
	l := New(m, Options{Logger: quiet})
	g := newGate(m)
	publishN(t, l, "s", 1)
	<-g.entered
	publishN(t, l, "s", 3)
	m.delete("s")
	close(g.open)
	if err := l.Flush(testCtx(t), "s"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Flush = %v, want ErrNotFound", err)
	}
}

// TestAnotherWriter: events appended to the store behind the Log's back
// are detected, not silently renumbered.
func TestAnotherWriter(t *testing.T) {
	t.Parallel()
	m := newMemStore("s")
	l := New(m, Options{Logger: quiet})
	appendN(t, l, "s", 2)
	if _, err := m.AppendEvents(t.Context(), "s", ev("intruder", 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(t.Context(), "s", ev("mine", 0)); err == nil {
		t.Fatal("Append succeeded although the store numbered its event differently")
	}
}

// TestCloseSessionFlushes: CloseSession returns only once the store has
// what was published, so a deletion that follows removes everything and a
// new state numbers after it.
func TestCloseSessionFlushes(t *testing.T) {
	t.Parallel()
	m := newMemStore("s")
	l := New(m, Options{PersistDelay: time.Hour, Logger: quiet})
	publishN(t, l, "s", 5)
	l.CloseSession("s")
	if got := m.lastSeq("s"); got != 5 {
		t.Fatalf("store has %d events after CloseSession, want 5", got)
	}
	got, err := l.Publish(t.Context(), "s", ev("next", 0))
	if err != nil || got[0].Seq != 6 {
		t.Fatalf("Publish after CloseSession = %v, %v; want seq 6", seqs(got), err)
	}
}

// TestFlushAll waits for every session, and a Log restarted over the store
// continues each session's seqs.
func TestFlushAll(t *testing.T) {
	t.Parallel()
	ids := []string{"a", "b", "c"}
	m := newMemStore(ids...)
	l := New(m, Options{PersistDelay: time.Hour, Logger: quiet})
	for i, id := range ids {
		publishN(t, l, id, 10*(i+1))
	}
	ctx := testCtx(t)
	if err := l.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := New(m, Options{Logger: quiet})
	for i, id := range ids {
		want := int64(10 * (i + 1))
		if got := m.lastSeq(id); got != want {
			t.Fatalf("%s: store has %d events, want %d", id, got, want)
		}
		got, err := restarted.Append(ctx, id, ev("after", 0))
		if err != nil || got[0].Seq != want+1 {
			t.Fatalf("%s: Append after restart = %v, %v; want seq %d", id, seqs(got), err, want+1)
		}
	}
}

// TestFlushContext: Flush honours ctx while the store is held up.
func TestFlushContext(t *testing.T) {
	t.Parallel()
	m := newMemStore("s")
	l := New(m, Options{Logger: quiet})
	g := newGate(m)
	publishN(t, l, "s", 1)
	<-g.entered
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := l.Flush(ctx, "s"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush = %v, want DeadlineExceeded", err)
	}
	close(g.open)
	if err := l.Flush(t.Context(), "s"); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(t.Context(), "unknown"); err != nil {
		t.Fatalf("Flush of a session without state = %v", err)
	}
}

// TestSweepKeepsUnpersisted: idle eviction never drops events the store
// does not have.
func TestSweepKeepsUnpersisted(t *testing.T) {
	t.Parallel()
	m := newMemStore("s")
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	l := New(m, Options{IdleEvict: time.Minute, Logger: quiet})
	l.now = clk.Now
	g := newGate(m)
	publishN(t, l, "s", 1)
	<-g.entered
	publishN(t, l, "s", 4)
	clk.Advance(time.Hour)
	l.sweep(clk.Now())
	if n, _, last := l.state("s").snapshot(); n != 5 || last != 5 {
		t.Fatalf("sweep dropped unpersisted events: ring len %d last %d", n, last)
	}
	close(g.open)
	if err := l.Flush(t.Context(), "s"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	l.sweep(clk.Now())
	if l.state("s") != nil {
		t.Fatal("persisted idle session was not evicted")
	}
}

func TestPublishInvalidData(t *testing.T) {
	t.Parallel()
	m := newMemStore("s")
	l := New(m, Options{Logger: quiet})
	bad := store.Event{Type: "x", Data: []byte("{not json")}
	if _, err := l.Publish(t.Context(), "s", ev("ok", 0), bad); err == nil {
		t.Fatal("Publish accepted invalid JSON")
	}
	got, err := l.Append(t.Context(), "s", store.Event{Type: "nil data"})
	if err != nil || got[0].Seq != 1 {
		t.Fatalf("Append after a refused Publish = %v, %v; want seq 1", seqs(got), err)
	}
}

// TestDurableWaitSkipsBacklog: Append and Flush wait for their own
// session's store append, not for a persister round held up by another
// session.
func TestDurableWaitSkipsBacklog(t *testing.T) {
	t.Parallel()
	m := newMemStore("a", "b")
	l := New(m, Options{PersistDelay: time.Millisecond, Logger: quiet})
	entered, open := make(chan struct{}), make(chan struct{})
	var once sync.Once
	m.setHooks(nil, func(id string, _ []store.Event) {
		if id == "a" {
			once.Do(func() { close(entered) })
			<-open
		}
	})
	defer close(open)
	publishN(t, l, "a", 1)
	<-entered // the round is stuck on session a
	publishN(t, l, "b", 3)
	got, err := l.Append(testCtx(t), "b", ev("durable", 0))
	if err != nil || got[0].Seq != 4 {
		t.Fatalf("Append = %v, %v; want seq 4", seqs(got), err)
	}
	if n := m.lastSeq("b"); n != 4 {
		t.Fatalf("store has %d events of b, want 4", n)
	}
	publishN(t, l, "b", 2)
	if err := l.Flush(testCtx(t), "b"); err != nil {
		t.Fatal(err)
	}
	if n := m.lastSeq("b"); n != 6 {
		t.Fatalf("store has %d events of b after Flush, want 6", n)
	}
}

// batchStore is a memStore that also appends many sessions' events in one
// call, as store/sqlite does in one transaction.
type batchStore struct {
	*memStore
	batches atomic.Int64
}

func (b *batchStore) AppendEventBatches(ctx context.Context, batches []store.EventBatch) ([][]store.Event, []error) {
	b.batches.Add(1)
	out := make([][]store.Event, len(batches))
	errs := make([]error, len(batches))
	for i, bt := range batches {
		out[i], errs[i] = b.memStore.AppendEvents(ctx, bt.SessionID, bt.Events...)
		b.appends.Add(-1) // counted as part of the batch
	}
	return out, errs
}

// TestRoundsBatchAndDurableWaitsJoin: with a store that appends batches,
// a round writes every waiting session in one call, a durable Append
// whose session waits in a shared round rides it instead of appending
// alone, and a session the store refuses fails alone.
func TestRoundsBatchAndDurableWaitsJoin(t *testing.T) {
	t.Parallel()
	ids := []string{"a", "b", "c", "d"}
	// A stall of the machine between the publishes and the Append can let
	// the round start first; the scenario is then run again.
	for attempt := 0; ; attempt++ {
		bs := &batchStore{memStore: newMemStore(ids...)}
		l := New(bs, Options{PersistDelay: joinRoundMax, Logger: quiet})
		for _, id := range append(ids, "unknown") {
			if id == "unknown" {
				bs.create(id) // seeded, then lost by the store
			}
			publishN(t, l, id, 2)
		}
		bs.delete("unknown")
		l.pmu.Lock()
		gathered := len(l.dirty) == len(ids)+1 && !l.writing
		l.pmu.Unlock()
		if !gathered && attempt < 5 {
			continue
		}
		got, err := l.Append(testCtx(t), "a", ev("durable", 0))
		if err != nil || got[0].Seq != 3 {
			t.Fatalf("Append = %v, %v; want seq 3", seqs(got), err)
		}
		if n := bs.appends.Load(); n != 0 {
			t.Fatalf("%d appends of a single session; want every write in a batch", n)
		}
		if n := bs.batches.Load(); n != 1 {
			t.Fatalf("%d batch appends, want 1", n)
		}
		for _, id := range ids {
			want := int64(2)
			if id == "a" {
				want = 3
			}
			if n := bs.lastSeq(id); n != want {
				t.Fatalf("store has %d events of %s, want %d", n, id, want)
			}
		}
		if err := l.Flush(testCtx(t), "unknown"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Flush of the session the store lost = %v, want ErrNotFound", err)
		}
		return
	}
}
