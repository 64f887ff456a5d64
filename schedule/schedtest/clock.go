// Package schedtest holds test helpers for code that takes a
// schedule.Clock: a clock that moves only when a test says so.
package schedtest

import (
	"sync"
	"time"

	"github.com/weft-run/weft/schedule"
)

var _ schedule.Clock = (*FakeClock)(nil)

// FakeClock is a schedule.Clock that moves only when told to (Advance).
// It is safe for concurrent use.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

// NewFakeClock returns a fake clock reading t0.
func NewFakeClock(t0 time.Time) *FakeClock { return &FakeClock{now: t0} }

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires when Advance reaches now+d; at once
// when d <= 0.
func (c *FakeClock) NewTimer(d time.Duration) schedule.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock forward by d and fires the timers now due, in
// the order of their deadlines.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	var left []*fakeTimer
	var due []*fakeTimer
	for _, t := range c.timers {
		if t.at.After(c.now) {
			left = append(left, t)
		} else {
			due = append(due, t)
		}
	}
	c.timers = left
	for len(due) > 0 {
		first := 0
		for i, t := range due {
			if t.at.Before(due[first].at) {
				first = i
			}
		}
		due[first].ch <- due[first].at
		due = append(due[:first], due[first+1:]...)
	}
}

// Timers returns how many timers are waiting: a test can tell that a loop
// is idle before it advances the clock.
func (c *FakeClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

type fakeTimer struct {
	clock *FakeClock
	at    time.Time
	ch    chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.timers {
		if x == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			return true
		}
	}
	return false
}
