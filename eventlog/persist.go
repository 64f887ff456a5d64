package eventlog

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-run/weft/store"
)

// The persister writes published events to the store in rounds: it takes
// every session with unpersisted events and appends them all in one store
// call when the store can (store.BatchEvents: one transaction), else each
// session's events in one call, up to persistWorkers calls at once. The
// next round starts as soon as this one has committed (after PersistDelay,
// 0 by default) if events are waiting, so a busy store gets fewer, larger
// appends instead of a queue, an idle store commits each event at once,
// and no event waits for a timer; an idle Log has no goroutine. A round's
// commit moves each of its sessions' watermark and wakes their readers.
// Callers that wait for durability (Append, Flush, a full session) ride
// the next round, or append their session's events themselves when the
// store does not batch (see advance).

// enqueue puts s in the next round, starting the persister if it is not
// running. The caller has set s.queued.
func (l *Log) enqueue(s *session) {
	l.pmu.Lock()
	l.dirty = append(l.dirty, s)
	start := !l.persisting
	l.persisting = true
	l.pmu.Unlock()
	if start {
		go l.persistLoop()
	}
}

func (l *Log) persistLoop() {
	var round []*session
	for {
		if l.opt.PersistDelay > 0 {
			time.Sleep(l.opt.PersistDelay)
		}
		l.pmu.Lock()
		round, l.dirty = l.dirty, round[:0]
		if len(round) == 0 {
			l.persisting = false
			l.pmu.Unlock()
			return
		}
		l.writing = true
		l.pmu.Unlock()
		if l.batch != nil {
			l.persistRound(l.batch, round)
		} else {
			parallel(len(round), func(i int) { l.persistOne(round[i], true) })
		}
		l.pmu.Lock()
		l.writing = false
		l.pmu.Unlock()
		clear(round) // the next round's list must not keep sessions alive
	}
}

// parallel runs fn(0..n-1) on up to persistWorkers goroutines.
func parallel(n int, fn func(i int)) {
	workers := min(n, persistWorkers)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				fn(int(i))
			}
		})
	}
	wg.Wait()
}

// persistOne appends the session's next batch of unpersisted events, unless
// an append of the session is already in flight (it returns false then,
// and when there is nothing to append). fromRound says the caller took s
// from the dirty list.
func (l *Log) persistOne(s *session, fromRound bool) bool {
	from, to, evs, ok := s.take(fromRound)
	if !ok {
		return false
	}
	// Persisting outlives whoever published.
	stored, err := l.events.AppendEvents(context.Background(), s.id, evs...)
	if err == nil {
		err = agree(stored, from, to)
	}
	l.settle(s, from, to, err)
	return true
}

// persistRound appends the next batch of each of the round's sessions in
// one store call.
func (l *Log) persistRound(b store.BatchEvents, round []*session) {
	type taken struct {
		s        *session
		from, to int64
	}
	var (
		took    []taken
		batches []store.EventBatch
	)
	for _, s := range round {
		if from, to, evs, ok := s.take(true); ok {
			took = append(took, taken{s, from, to})
			batches = append(batches, store.EventBatch{SessionID: s.id, Events: evs})
		}
	}
	if len(batches) == 0 {
		return
	}
	stored, errs := b.AppendEventBatches(context.Background(), batches)
	for i, t := range took {
		err := errs[i]
		if err == nil {
			err = agree(stored[i], t.from, t.to)
		}
		l.settle(t.s, t.from, t.to, err)
	}
}

// take marks s's next batch of unpersisted events in flight and returns
// it; ok is false when an append of s is already in flight or there is
// nothing to append.
func (s *session) take(fromRound bool) (from, to int64, evs []store.Event, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fromRound {
		s.queued = false
	}
	from, to = s.durable+1, min(s.last, s.durable+persistBatch)
	if s.inflight || s.failed != nil || from > to {
		// An append in flight puts the session back in the list when it
		// leaves events behind.
		return 0, 0, nil, false
	}
	s.inflight = true
	evs = make([]store.Event, 0, to-from+1)
	for q := from; q <= to; q++ {
		evs = append(evs, s.at(q))
	}
	return from, to, evs, true
}

// settle records the outcome of the append of s's seqs from..to that take
// started.
func (l *Log) settle(s *session, from, to int64, err error) {
	s.mu.Lock()
	s.inflight = false
	if err != nil {
		s.failed = err
		l.opt.Logger.Error("eventlog: persisting events failed; the session's later appends fail until its state is dropped",
			"session", s.id, "first_seq", from, "last_seq", s.last, "error", err)
	} else {
		s.durable = to
		s.trim(l.opt.Window)
		s.wakeReaders()
	}
	s.wakeDurable()
	again := err == nil && s.durable < s.last && !s.queued
	if again {
		s.queued = true
	}
	s.mu.Unlock()
	if again {
		l.enqueue(s)
	}
}

// agree checks that the store numbered the events as the Log did; it would
// not if something else appended to the session.
func agree(stored []store.Event, from, to int64) error {
	if int64(len(stored)) != to-from+1 {
		return fmt.Errorf("eventlog: store stored %d events of %d", len(stored), to-from+1)
	}
	for i, e := range stored {
		if want := from + int64(i); e.Seq != want {
			return fmt.Errorf("eventlog: store numbered seq %d as %d (another writer appended to the session?)", want, e.Seq)
		}
	}
	return nil
}
