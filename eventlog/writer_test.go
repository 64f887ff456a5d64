package eventlog

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/store"
)

// TestWriterIncarnation: a Writer appends to the state it was made on;
// once CloseSession closed it (the session was deleted), its appends fail,
// even after a session with the same id was created again, whose events
// go on undisturbed.
func TestWriterIncarnation(t *testing.T) {
	t.Parallel()
	m := newMemStore("s")
	l := New(m, Options{Logger: quiet})
	ctx := testCtx(t)
	w := l.Writer("s")
	defer w.Close()
	if got, err := w.Append(ctx, ev("old", 0)); err != nil || got[0].Seq != 1 {
		t.Fatalf("Append = %v, %v; want seq 1", seqs(got), err)
	}
	if _, err := w.Publish(ctx, ev("old", 1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	l.CloseSession("s")
	m.delete("s")
	m.create("s") // a new session with the same id
	fresh := l.Writer("s")
	defer fresh.Close()
	if got, err := fresh.Append(ctx, ev("new", 0)); err != nil || got[0].Seq != 1 {
		t.Fatalf("Append to the new session = %v, %v; want seq 1", seqs(got), err)
	}
	for _, f := range []func() error{
		func() error { _, err := w.Publish(ctx, ev("stale", 0)); return err },
		func() error { _, err := w.Append(ctx, ev("stale", 1)); return err },
	} {
		if err := f(); !errors.Is(err, ErrSessionClosed) {
			t.Fatalf("append through the deleted session's Writer = %v, want ErrSessionClosed", err)
		}
	}
	if n := m.lastSeq("s"); n != 1 {
		t.Fatalf("the new session has %d events, want only its own 1", n)
	}
	fresh.Close()
	if _, err := fresh.Publish(ctx, ev("closed", 0)); !errors.Is(err, ErrWriterClosed) {
		t.Fatalf("Publish after Close = %v, want ErrWriterClosed", err)
	}
}

// TestWriterKeepsStateFromEviction: the sweep never forgets a state an
// open Writer is bound to (it would then append to a detached state), but
// it does once the Writer is closed.
func TestWriterKeepsStateFromEviction(t *testing.T) {
	t.Parallel()
	m := newMemStore("s")
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	l := New(m, Options{IdleEvict: time.Minute, Logger: quiet})
	l.now = clk.Now
	w := l.Writer("s")
	if _, err := w.Append(testCtx(t), ev("a", 0)); err != nil {
		t.Fatal(err)
	}
	s := l.state("s")
	clk.Advance(time.Hour)
	l.sweep(clk.Now())
	if l.state("s") != s {
		t.Fatal("the sweep forgot a state with an open Writer")
	}
	if got, err := w.Append(testCtx(t), ev("a", 1)); err != nil || got[0].Seq != 2 {
		t.Fatalf("Append after the sweep = %v, %v; want seq 2", seqs(got), err)
	}
	w.Close()
	clk.Advance(time.Hour)
	l.sweep(clk.Now())
	if l.state("s") != nil {
		t.Fatal("an idle state with no Writer left was not evicted")
	}
}

// TestWriterRedacts: appends through a Writer go through Options.Redact as
// the Log's own do (the runtime's turns append through Writers).
func TestWriterRedacts(t *testing.T) {
	t.Parallel()
	m := newMemStore("s")
	redact := func(b []byte) []byte { return []byte(strings.ReplaceAll(string(b), "hunter2", "[SECRET]")) }
	l := New(m, Options{Logger: quiet, Redact: redact})
	w := l.Writer("s")
	defer w.Close()
	ctx := testCtx(t)
	if _, err := w.Publish(ctx, store.Event{Type: "a", Data: []byte(`{"p":"hunter2"}`)}); err != nil {
		t.Fatal(err)
	}
	got, err := w.Append(ctx, store.Event{Type: "b", Data: []byte(`{"q":"hunter2"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if string(got[0].Data) != `{"q":"[SECRET]"}` {
		t.Fatalf("Append returned %s", got[0].Data)
	}
	for q := int64(1); q <= 2; q++ {
		if d := string(m.eventAt("s", q).Data); strings.Contains(d, "hunter2") {
			t.Fatalf("stored seq %d: %s", q, d)
		}
	}
}
