// Package eventlog is weft's one event log: every observable event of a
// session is appended here, and live streams, history, resume after a
// disconnect or a restart, audit and UI replay all read it back through a
// Reader.
//
// The store (store.Events) is the source of truth and assigns seqs. In front
// of it, each active session keeps a ring of its most recent events and a
// broadcast notification, so readers that follow live are served from memory
// and wake together on each append. A reader holds only a position (plus at
// most one batch read from the store while it is behind the ring): there is
// no per-reader queue, so a slow or idle reader costs nothing and never
// delays the appender or other readers.
//
// One Log is expected to be the only writer of a store's events. Events
// appended to the store by someone else are not lost, but live readers only
// see them once an append goes through this Log.
package eventlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-run/weft/store"
)

// Errors returned by Reader.Next (errors.Is).
var (
	// ErrClosed: the reader was closed.
	ErrClosed = errors.New("eventlog: reader closed")
	// ErrSessionClosed: the session was closed (for example deleted) and the
	// reader has drained every event that existed.
	ErrSessionClosed = errors.New("eventlog: session closed")
)

// Options tune the memory/latency trade-off. The zero value is usable.
type Options struct {
	// Window is how many of a session's most recent events are kept in
	// memory for live readers. 0 means 1024.
	Window int
	// ReadBatch is how many events a reader fetches per store read while it
	// is behind the window. 0 means 256.
	ReadBatch int
	// IdleEvict drops a session's in-memory window once it has had no
	// appends and no reads for this long. 0 means 5 minutes.
	IdleEvict time.Duration
}

func (o Options) withDefaults() Options {
	if o.Window <= 0 {
		o.Window = 1024
	}
	if o.ReadBatch <= 0 {
		o.ReadBatch = 256
	}
	if o.IdleEvict <= 0 {
		o.IdleEvict = 5 * time.Minute
	}
	return o
}

// Log is the event log over a store. It is safe for concurrent use.
type Log struct {
	events store.Events
	opt    Options
	now    func() time.Time // replaced by tests to drive eviction

	mu        sync.RWMutex
	sessions  map[string]*session
	lastSweep atomic.Int64 // unix nanos of the last idle sweep
}

// session is the in-memory state of one active session.
type session struct {
	// sem serialises Append for the session (store call and ring push
	// together), so the ring receives seqs in order and without gaps. It is a
	// channel rather than a mutex so a waiting Append honours its ctx.
	sem chan struct{}

	// readers counts open Readers; pending counts Appends in flight. Both
	// are raised under Log.mu, so the sweep (which holds Log.mu exclusively)
	// never evicts a session someone is about to use.
	readers atomic.Int32
	pending atomic.Int32
	// touched records reads since the last sweep without a clock call on the
	// read path.
	touched atomic.Bool
	// waited records that a reader took notify since the last broadcast, so
	// appends nobody waits for allocate no channel. Set under mu.RLock.
	waited atomic.Bool

	mu sync.RWMutex
	// ring holds seqs first..last in order; ring[start] is the oldest. It
	// grows by append up to Window, then wraps.
	ring  []store.Event
	start int
	first int64
	// last is the highest seq pushed through this Log, 0 when none. It
	// survives dropping the ring, so caught-up readers keep waiting in
	// memory instead of polling the store.
	last       int64
	notify     chan struct{}
	closed     bool
	lastActive time.Time
}

// New returns a Log over events.
func New(events store.Events, opt Options) *Log {
	return &Log{
		events:   events,
		opt:      opt.withDefaults(),
		now:      time.Now,
		sessions: make(map[string]*session),
	}
}

// Append persists events in one store call (one transaction) and then makes
// them visible to live readers, in seq order. It returns the events as
// stored, with Seq and CreatedAt set. Concurrent Appends to one session are
// serialised; Appends to different sessions are independent.
//
// The returned events and their Data are shared with readers: treat them as
// immutable.
func (l *Log) Append(ctx context.Context, sessionID string, events ...store.Event) ([]store.Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	for {
		s := l.acquire(sessionID)
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			s.pending.Add(-1)
			return nil, ctx.Err()
		}
		s.mu.RLock()
		closed := s.closed
		s.mu.RUnlock()
		if closed {
			// CloseSession detached this state after we found it; appends
			// from now on belong to whatever Subscribe or Append creates
			// next, so retry against the current one.
			<-s.sem
			s.pending.Add(-1)
			continue
		}
		stored, err := l.events.AppendEvents(ctx, sessionID, events...)
		if err == nil {
			s.push(stored, l.opt.Window, l.now())
		}
		<-s.sem
		s.pending.Add(-1)
		if err != nil {
			return nil, fmt.Errorf("eventlog: append to session %s: %w", sessionID, err)
		}
		return stored, nil
	}
}

// Subscribe returns a reader positioned after seq after (0 reads from the
// beginning). It does no I/O: the first Next replays from the store if the
// position is older than the in-memory window. Close the reader when done;
// a reader that is garbage-collected unclosed is released too.
func (l *Log) Subscribe(sessionID string, after int64) *Reader {
	if after < 0 {
		after = 0
	}
	l.maybeSweep()
	l.mu.RLock()
	s := l.sessions[sessionID]
	if s != nil {
		s.readers.Add(1)
	}
	l.mu.RUnlock()
	if s == nil {
		l.mu.Lock()
		s = l.getOrCreateLocked(sessionID)
		s.readers.Add(1)
		l.mu.Unlock()
	}
	s.touched.Store(true)
	return newReader(l, sessionID, s, after)
}

// CloseSession ends the session's current readers (for example because the
// session was deleted): each one drains the events that exist and then gets
// ErrSessionClosed. It waits for an Append in flight to finish so that
// "what exists" is well defined. Later Subscribe and Append calls start
// afresh.
func (l *Log) CloseSession(sessionID string) {
	l.mu.Lock()
	s := l.sessions[sessionID]
	delete(l.sessions, sessionID)
	l.mu.Unlock()
	if s == nil {
		// No state means no open readers: Readers keep their session alive.
		return
	}
	s.sem <- struct{}{}
	s.mu.Lock()
	s.closed = true
	close(s.notify)
	s.mu.Unlock()
	<-s.sem
}

// acquire returns the session's state with pending raised.
func (l *Log) acquire(id string) *session {
	l.maybeSweep()
	l.mu.RLock()
	s := l.sessions[id]
	if s != nil {
		s.pending.Add(1)
	}
	l.mu.RUnlock()
	if s != nil {
		return s
	}
	l.mu.Lock()
	s = l.getOrCreateLocked(id)
	s.pending.Add(1)
	l.mu.Unlock()
	return s
}

func (l *Log) getOrCreateLocked(id string) *session {
	s := l.sessions[id]
	if s == nil {
		s = &session{
			sem:        make(chan struct{}, 1),
			notify:     make(chan struct{}),
			lastActive: l.now(),
		}
		l.sessions[id] = s
	}
	return s
}

// maybeSweep runs the idle sweep at most every IdleEvict/2, piggybacking on
// calls that already happen, so the Log needs no background goroutine and
// no Close.
func (l *Log) maybeSweep() {
	now := l.now()
	last := l.lastSweep.Load()
	if now.UnixNano()-last < int64(l.opt.IdleEvict/2) {
		return
	}
	if !l.lastSweep.CompareAndSwap(last, now.UnixNano()) {
		return // another caller is sweeping
	}
	l.sweep(now)
}

// sweep drops idle state: a session idle for IdleEvict with no open readers
// is forgotten entirely; one that still has (idle) readers keeps only its
// small header, since those readers may wait on its notify channel, and
// loses its ring. Readers fall back to the store either way.
func (l *Log) sweep(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, s := range l.sessions {
		if s.pending.Load() > 0 {
			continue
		}
		s.mu.Lock()
		if s.touched.Swap(false) {
			s.lastActive = now
		}
		if now.Sub(s.lastActive) >= l.opt.IdleEvict {
			if s.readers.Load() == 0 {
				delete(l.sessions, id)
			} else {
				s.ring, s.start, s.first = nil, 0, 0
			}
		}
		s.mu.Unlock()
	}
}

// push adds freshly stored events to the ring and wakes waiting readers.
// Callers hold s.sem, so pushes are in seq order.
func (s *session) push(evs []store.Event, window int, now time.Time) {
	if len(evs) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastActive = now
	if len(s.ring) > 0 && evs[0].Seq != s.last+1 {
		// Someone else appended to the store: the ring must stay
		// contiguous, so restart it; readers before it use the store.
		s.resetRing()
	}
	if len(evs) >= window {
		s.resetRing()
		evs = evs[len(evs)-window:]
	}
	for _, e := range evs {
		switch {
		case len(s.ring) == 0:
			s.ring = append(s.ring, e)
			s.first = e.Seq
		case len(s.ring) < window:
			s.ring = append(s.ring, e)
		default:
			s.ring[s.start] = e
			s.start = (s.start + 1) % len(s.ring)
			s.first++
		}
	}
	s.last = evs[len(evs)-1].Seq
	if s.waited.Load() {
		close(s.notify)
		s.notify = make(chan struct{})
		s.waited.Store(false)
	}
}

func (s *session) resetRing() {
	clear(s.ring) // let the old events' payloads be collected
	s.ring, s.start, s.first = s.ring[:0], 0, 0
}

// at returns the event with seq q; the caller holds s.mu and has checked
// first <= q <= last.
func (s *session) at(q int64) store.Event {
	return s.ring[(s.start+int(q-s.first))%len(s.ring)]
}
