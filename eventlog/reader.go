package eventlog

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/weft-run/weft/store"
)

// Reader reads one session's events in seq order from a position. Next must
// be called from one goroutine at a time; Position and Close are safe from
// any goroutine.
type Reader struct {
	log   *Log
	id    string
	s     *session
	pos   atomic.Int64
	lease *lease

	// batch is the one store read a reader behind the window holds.
	batch []store.Event
	bi    int
	// dry records that the store had nothing after dryAt when last read; it
	// lets a reader of a session this Log has not appended to yet wait
	// instead of polling the store.
	dry   bool
	dryAt int64

	done      chan struct{}
	closeOnce sync.Once
}

// lease is the reader's hold on its session, separate from the Reader so a
// cleanup can release it when an unclosed Reader is collected.
type lease struct {
	s        *session
	released atomic.Bool
}

func (ls *lease) release() {
	if ls.released.CompareAndSwap(false, true) {
		ls.s.readers.Add(-1)
	}
}

func newReader(l *Log, id string, s *session, after int64) *Reader {
	r := &Reader{log: l, id: id, s: s, lease: &lease{s: s}, done: make(chan struct{})}
	r.pos.Store(after)
	runtime.AddCleanup(r, (*lease).release, r.lease)
	return r
}

// Position is the seq of the last event returned by Next (or the starting
// position): resuming with Subscribe(id, r.Position()) continues exactly
// where this reader stopped.
func (r *Reader) Position() int64 { return r.pos.Load() }

// Close releases the reader; a Next blocked in another goroutine returns
// ErrClosed, as does every later Next. Close is idempotent.
func (r *Reader) Close() {
	r.closeOnce.Do(func() {
		close(r.done)
		r.lease.release()
	})
}

// Buffered reports whether the reader holds its next event in memory, so
// that Next would return it at once, without waiting or reading the store.
// A caller that writes events out can gather what is already there into
// one write without ever waiting for more. Like Next, it must be called
// from one goroutine at a time (Next's).
func (r *Reader) Buffered() bool {
	pos := r.pos.Load()
	for _, ev := range r.batch[r.bi:] {
		if ev.Seq > pos {
			return true
		}
	}
	s := r.s
	s.mu.RLock()
	ok := pos+1 <= s.durable && s.has(pos+1)
	s.mu.RUnlock()
	return ok
}

// Next returns the event after the reader's position, blocking until it
// is in the store, the reader or the session is closed, or ctx ends: a
// reader never sees an event the store does not have. A reader older than
// the in-memory window replays from the store in batches, then follows
// live. It never blocks appenders or other readers.
func (r *Reader) Next(ctx context.Context) (store.Event, error) {
	for {
		select {
		case <-r.done:
			return store.Event{}, ErrClosed
		default:
		}
		if err := ctx.Err(); err != nil {
			return store.Event{}, err
		}
		s := r.s
		if !s.touched.Load() {
			s.touched.Store(true)
		}
		pos := r.pos.Load()
		for r.bi < len(r.batch) {
			ev := r.batch[r.bi]
			r.bi++
			if ev.Seq > pos {
				r.pos.Store(ev.Seq)
				return ev, nil
			}
		}
		r.batch, r.bi = nil, 0

		q := pos + 1
		s.mu.RLock()
		switch {
		case q <= s.durable && s.has(q):
			ev := s.at(q)
			s.mu.RUnlock()
			r.pos.Store(q)
			return ev, nil

		case (s.seeded && q > s.durable) || (!s.seeded && r.dry && pos >= r.dryAt):
			// Caught up with the watermark. Every event reaches the store
			// through this Log, whose persister moves the watermark under
			// s.mu after the store has it and then closes the channel taken
			// here: no wake-up is lost between "the store had nothing
			// more" (or "nothing more is stored") and "wait".
			if s.closed {
				s.mu.RUnlock()
				return store.Event{}, ErrSessionClosed
			}
			ch := s.notify
			if !s.waited.Load() {
				s.waited.Store(true)
			}
			s.mu.RUnlock()
			select {
			case <-ch:
			case <-r.done:
				return store.Event{}, ErrClosed
			case <-ctx.Done():
				return store.Event{}, ctx.Err()
			}

		default:
			// Behind the ring, or nothing is known about the session yet
			// (fresh Log, evicted window): the store has the events, since
			// the ring keeps every event the store does not have yet.
			closed, last := s.closed, s.durable
			s.mu.RUnlock()
			if err := r.fill(ctx, pos, last, closed); err != nil {
				return store.Event{}, err
			}
		}
	}
}

// fill reads the next batch after pos from the store; last is the
// session's watermark as far as the Log knows (0 when it knows nothing).
// The caller found pos+1 older than the ring, so the store has it.
func (r *Reader) fill(ctx context.Context, pos, last int64, closed bool) error {
	limit := r.log.opt.ReadBatch
	evs, err := r.log.events.ReadEvents(ctx, r.id, pos, limit)
	if err != nil {
		if closed && errors.Is(err, store.ErrNotFound) {
			return ErrSessionClosed
		}
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return ctxErr
		}
		return fmt.Errorf("eventlog: read session %s after %d: %w", r.id, pos, err)
	}
	if len(evs) == 0 {
		if closed {
			return ErrSessionClosed
		}
		if last > pos {
			// The store lost events it had (the session was deleted and
			// recreated without CloseSession). Retrying would spin, so say
			// so.
			return fmt.Errorf("eventlog: session %s: store has no events after %d but %d were appended", r.id, pos, last)
		}
	}
	r.dry = len(evs) < limit
	r.dryAt = pos
	if n := len(evs); n > 0 {
		r.dryAt = evs[n-1].Seq
	}
	r.batch, r.bi = evs, 0
	return nil
}
