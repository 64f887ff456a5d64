package schedtest

import (
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func TestFakeClock(t *testing.T) {
	t.Parallel()
	c := NewFakeClock(t0)
	a, b, gone := c.NewTimer(2*time.Second), c.NewTimer(time.Second), c.NewTimer(time.Second)
	if !gone.Stop() || gone.Stop() {
		t.Fatal("Stop should report true once")
	}
	if now := c.NewTimer(0); (<-now.C()) != t0 {
		t.Fatal("a zero timer should fire at once")
	}
	if c.Timers() != 2 {
		t.Fatalf("%d timers", c.Timers())
	}
	c.Advance(1500 * time.Millisecond)
	select {
	case at := <-b.C():
		if !at.Equal(t0.Add(time.Second)) {
			t.Fatalf("fired at %v", at)
		}
	default:
		t.Fatal("b did not fire")
	}
	select {
	case <-a.C():
		t.Fatal("a fired early")
	case <-gone.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	c.Advance(time.Second)
	<-a.C()
	if !c.Now().Equal(t0.Add(2500*time.Millisecond)) || a.Stop() {
		t.Fatalf("now %v", c.Now())
	}
}
