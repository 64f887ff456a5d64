package schedule

import "time"

// Clock is the scheduler's time source; tests substitute a fake
// (schedule/schedtest).
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that fires once, d from now (at once when
	// d <= 0).
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer of a Clock.
type Timer interface {
	// C delivers the time once the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; false if it already has or was
	// stopped.
	Stop() bool
}

// RealClock returns the system clock.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }
