package eventlog

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestFollowAnotherWriter: two Logs on one store, as two nodes. The
// session's readers on node B follow node A's appends once B observes
// them (and only up to what it observed: never past the store's
// commits); announcements of B's own appends and stale ones change
// nothing; a Resync finds what was never announced; and when B takes
// over writing, Reseed makes it number after A's events (without it, B
// numbered from its own stale last seq and the store refused the append,
// failing the session).
func TestFollowAnotherWriter(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	st := newMemStore("s")
	a, b := New(st, Options{}), New(st, Options{})

	// B wrote first, then A took over.
	if _, err := b.Append(ctx, "s", ev("t", 0)); err != nil {
		t.Fatal(err)
	}
	r := b.Subscribe("s", 0)
	defer r.Close()
	expectSeqs(t, ctx, r, 1, 1)
	if moved, err := a.Reseed(ctx, "s"); err != nil || !moved {
		t.Fatalf("reseed on A: %v %v", moved, err)
	}
	appendN(t, a, "s", 5) // seqs 2..6
	// Not observed yet: B's reader waits.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	if e, err := r.Next(short); err == nil {
		t.Fatalf("B's reader got seq %d before it was observed", e.Seq)
	}
	cancel()
	b.Observe("s", 4)
	expectSeqs(t, ctx, r, 2, 4)
	b.Observe("s", 3) // stale
	b.Observe("s", 6)
	expectSeqs(t, ctx, r, 5, 6)

	// Appended and never announced: a Resync finds it.
	appendN(t, a, "s", 2) // 7, 8
	if err := b.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	expectSeqs(t, ctx, r, 7, 8)

	// A appends 9, unannounced, and B takes over: B has observed only 8,
	// so without Reseed it would number its append 9 too.
	appendN(t, a, "s", 1)
	if moved, err := b.Reseed(ctx, "s"); err != nil || !moved {
		t.Fatalf("reseed on B: %v %v", moved, err)
	}
	out, err := b.Append(ctx, "s", ev("t", 99))
	if err != nil || out[0].Seq != 10 {
		t.Fatalf("B's append after reseed: %+v %v", out, err)
	}
	expectSeqs(t, ctx, r, 9, 10)
	// Its own announcement, arriving late, changes nothing; a Reseed with
	// nothing new reports no move.
	b.Observe("s", 10)
	if moved, err := b.Reseed(ctx, "s"); err != nil || moved {
		t.Fatalf("second reseed: %v %v", moved, err)
	}
	out, err = b.Append(ctx, "s", ev("t", 100))
	if err != nil || out[0].Seq != 11 {
		t.Fatalf("B's second append: %+v %v", out, err)
	}
	expectSeqs(t, ctx, r, 11, 11)
}

// TestReseedClearsFailure: a Log whose append the store refused (another
// writer took the seq) recovers with Reseed, instead of failing the
// session's appends until its state is dropped.
func TestReseedClearsFailure(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	st := newMemStore("s")
	a, b := New(st, Options{}), New(st, Options{})
	appendN(t, a, "s", 1)
	appendN(t, b, "s", 1) // b seeds at 1, appends 2
	if _, err := a.Append(ctx, "s", ev("t", 1)); err == nil {
		t.Fatal("A's append over B's seq was accepted")
	}
	if _, err := a.Append(ctx, "s", ev("t", 2)); err == nil {
		t.Fatal("A's state did not stay failed")
	}
	if _, err := a.Reseed(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	out, err := a.Append(ctx, "s", ev("t", 3))
	if err != nil {
		t.Fatal(err)
	}
	if want := st.lastSeq("s"); out[0].Seq != want {
		t.Fatalf("append after reseed got seq %d, the store's last is %d", out[0].Seq, want)
	}
}

// TestObserveFailedWriter: a Log whose appends the store refused (the
// store fences a node that lost the session's lease) follows the new
// writer's events: its refused events are forgotten, its readers go on
// from the store, and it keeps failing appends until Reseed.
func TestObserveFailedWriter(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	st := newMemStore("s")
	a, b := New(st, Options{}), New(st, Options{})
	appendN(t, a, "s", 2)
	r := a.Subscribe("s", 0)
	defer r.Close()
	expectSeqs(t, ctx, r, 1, 2)
	st.mu.Lock()
	st.failAppend = errors.New("fenced")
	st.mu.Unlock()
	if _, err := a.Append(ctx, "s", ev("t", 2)); err == nil {
		t.Fatal("refused append succeeded")
	}
	st.mu.Lock()
	st.failAppend = nil
	st.mu.Unlock()
	if _, err := b.Reseed(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	appendN(t, b, "s", 3) // 3..5
	a.Observe("s", 5)
	expectSeqs(t, ctx, r, 3, 5)
	if _, err := a.Append(ctx, "s", ev("t", 9)); err == nil {
		t.Fatal("the failed Log appended before Reseed")
	}
	if _, err := a.Reseed(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	out, err := a.Append(ctx, "s", ev("t", 10))
	if err != nil || out[0].Seq != 6 {
		t.Fatalf("after reseed: %+v %v", out, err)
	}
	expectSeqs(t, ctx, r, 6, 6)
}
