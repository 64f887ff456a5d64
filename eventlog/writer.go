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

// Writer appends to one incarnation of a session: the in-memory state the
// Log held for it when the Writer was made. Once CloseSession has closed
// that state (the session was deleted), every append through the Writer
// fails with ErrSessionClosed, even if a session with the same id has been
// created since: work that belonged to the deleted session (a turn still
// winding down) cannot write into its successor. An open Writer keeps the
// state from idle eviction (its ring may still be dropped), so Close it
// when done; one that is garbage-collected unclosed is released too.
//
// Log.Publish and Log.Append, by id, always append to the current
// incarnation.
type Writer struct {
	log   *Log
	s     *session
	lease *writerLease
	once  sync.Once
}

type writerLease struct {
	s        *session
	released atomic.Bool
}

func (ls *writerLease) release() {
	if ls.released.CompareAndSwap(false, true) {
		ls.s.writers.Add(-1)
	}
}

// Writer returns a Writer bound to the session's current state. It does no
// I/O.
func (l *Log) Writer(sessionID string) *Writer {
	l.maybeSweep()
	l.mu.Lock()
	s := l.getOrCreateLocked(sessionID)
	s.writers.Add(1)
	l.mu.Unlock()
	s.touched.Store(true)
	w := &Writer{log: l, s: s, lease: &writerLease{s: s}}
	runtime.AddCleanup(w, (*writerLease).release, w.lease)
	return w
}

// Publish is Log.Publish on the Writer's incarnation.
func (w *Writer) Publish(ctx context.Context, events ...store.Event) ([]store.Event, error) {
	return w.publish(ctx, events)
}

// Append is Log.Append on the Writer's incarnation.
func (w *Writer) Append(ctx context.Context, events ...store.Event) ([]store.Event, error) {
	out, err := w.publish(ctx, events)
	if err != nil || len(out) == 0 {
		return out, err
	}
	if err := w.log.waitDurable(context.WithoutCancel(ctx), w.s, out[len(out)-1].Seq); err != nil {
		return nil, err
	}
	return out, nil
}

// Flush waits until every event published through the Writer's
// incarnation before the call is in the store, or ctx ends.
func (w *Writer) Flush(ctx context.Context) error {
	w.s.mu.RLock()
	last := w.s.last
	w.s.mu.RUnlock()
	return w.log.waitDurable(ctx, w.s, last)
}

// Close releases the Writer; later appends fail. It does not close the
// session.
func (w *Writer) Close() {
	w.once.Do(w.lease.release)
}

func (w *Writer) publish(ctx context.Context, events []store.Event) ([]store.Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	if w.lease.released.Load() {
		return nil, fmt.Errorf("eventlog: append to session %s: %w", w.s.id, ErrWriterClosed)
	}
	events, err := w.log.prepare(ctx, w.s.id, events)
	if err != nil {
		return nil, err
	}
	out, err := w.log.publishTo(ctx, w.s, events)
	if errors.Is(err, errDetached) {
		return nil, fmt.Errorf("eventlog: append to session %s: %w", w.s.id, ErrSessionClosed)
	}
	return out, err
}
