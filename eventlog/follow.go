package eventlog

import (
	"context"
	"errors"
	"fmt"
)

// Several nodes. When several processes share a store (store/postgres), a
// session's events are written by one Log at a time (the node holding the
// session's lease), and every other node's readers follow the store: the
// store announces each commit (store.Notifier), and the node's Log is told
// with Observe, which moves the watermark of a session it does not write
// and wakes its readers, who read the new events from the store. A reader
// still sees only committed events, so a node's crash takes back nothing
// any client saw. A node that starts writing a session another node wrote
// calls Reseed first, so that it numbers after the store's last seq.

// Observe tells the Log that the store holds the session's events up to
// seq, written by another process. If the Log holds state for the session
// and is not writing it (no event of its own waits for the store), the
// watermark moves to seq and the readers waiting for it wake, reading the
// new events from the store. Observe does no I/O; announcements of this
// Log's own appends, and stale ones, change nothing.
func (l *Log) Observe(sessionID string, seq int64) {
	l.mu.RLock()
	s := l.sessions[sessionID]
	l.mu.RUnlock()
	if s != nil {
		s.observe(seq)
	}
}

func (s *session) observe(seq int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || seq <= s.durable || s.writing() {
		// Nothing new, or this Log writes the session: its own persister
		// moves the watermark (an announcement of its append may arrive
		// before the persister has settled it).
		return
	}
	// The ring holds none of the new events: readers past it read the
	// store, and a later append of this Log starts a new ring.
	// A failed state's events will never be stored (the store refused
	// them: another node took the session over): they are forgotten, and
	// the failure stays, so that a writer that has not noticed yet keeps
	// failing until Reseed.
	s.dropRing()
	s.last, s.durable, s.seeded = seq, seq, true
	s.wakeReaders()
}

// writing says whether this Log has events of the session on their way
// to the store. The caller holds s.mu.
func (s *session) writing() bool {
	return s.inflight || (s.last > s.durable && s.failed == nil)
}

// Resync re-reads from the store the last seq of every session the Log
// holds state for and does not write, and observes it: for when
// announcements may have been missed (store.Notification.Resync).
func (l *Log) Resync(ctx context.Context) error {
	l.mu.RLock()
	var all []*session
	for _, s := range l.sessions {
		all = append(all, s)
	}
	l.mu.RUnlock()
	var errs []error
	for _, s := range all {
		s.mu.RLock()
		writing := s.writing()
		s.mu.RUnlock()
		if writing {
			continue
		}
		last, err := l.events.LastSeq(ctx, s.id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.observe(last)
	}
	return errors.Join(errs...)
}

// Reseed makes the Log number the session's next events after the
// store's last seq: call it before writing a session that another process
// may have written since this Log last did (a node that has just taken
// the session's lease). Events of this Log still waiting for the store are
// flushed first. A persistence failure of the session's state is cleared
// (its refused events were never visible). It reports whether the store
// had events this Log had not written or observed.
func (l *Log) Reseed(ctx context.Context, sessionID string) (moved bool, err error) {
	s := l.acquire(sessionID)
	defer s.pending.Add(-1)
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	defer func() { <-s.sem }()
	s.mu.RLock()
	last := s.last
	s.mu.RUnlock()
	if err := l.waitDurable(ctx, s, last); err != nil {
		s.mu.RLock()
		failed := s.failed != nil
		s.mu.RUnlock()
		if !failed {
			return false, err
		}
		// Refused events are never stored: start again from the store.
	}
	stored, err := l.events.LastSeq(ctx, sessionID)
	if err != nil {
		return false, fmt.Errorf("eventlog: reseed session %s: %w", sessionID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// No append is in flight: waitDurable saw every published event
	// settle, and s.sem keeps new ones out.
	if s.seeded && stored == s.durable && s.failed == nil {
		return false, nil
	}
	moved = !s.seeded || stored != s.durable
	s.dropRing()
	s.last, s.durable, s.seeded, s.failed = stored, stored, true, nil
	s.wakeReaders()
	return moved, nil
}
