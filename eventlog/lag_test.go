package eventlog

import "testing"

// TestLag: Lag counts the events published but not yet stored, over every
// session, and falls to 0 once the store has them.
func TestLag(t *testing.T) {
	t.Parallel()
	m := newMemStore("s", "u")
	l := New(m, Options{Logger: quiet})
	g := newGate(m)
	ctx := testCtx(t)
	if n := l.Lag(); n != 0 {
		t.Fatalf("Lag of an empty log = %d", n)
	}
	publishN(t, l, "s", 1)
	<-g.entered // seq 1 of s is being written, held by the gate
	publishN(t, l, "s", 4)
	publishN(t, l, "u", 3)
	if n := l.Lag(); n != 8 {
		t.Fatalf("Lag = %d with 5+3 events unstored, want 8", n)
	}
	close(g.open)
	if err := l.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	if n := l.Lag(); n != 0 {
		t.Fatalf("Lag = %d after FlushAll, want 0", n)
	}
}
