package session

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/eventlog"
)

// eventWriter appends one turn's events to the session's incarnation (so a
// turn of a deleted session writes nothing into a successor with the same
// id). Events are published to the event log, which numbers them and
// commits them in its next round, and readers see each one once it is
// stored (durable before visible); the turn itself does not wait for the
// commits. sync waits for durability where the turn must (a permission
// request that a person has to see to answer), and close waits for the
// whole turn.
type eventWriter struct {
	rt *Service
	id string
	l  *live
	w  *eventlog.Writer
	// failed makes a persistence failure logged once per turn, not once per
	// event.
	failed atomic.Bool
}

func (rt *Service) newWriter(l *live) *eventWriter {
	return &eventWriter{rt: rt, id: l.id, l: l, w: l.w}
}

// push appends an event without waiting for the store. It blocks only when
// the session has many events waiting for the store, which slows the turn
// to the store's pace instead of growing without bound.
func (w *eventWriter) push(typ string, data any) {
	if w.l.fenced.Load() {
		return // the lease was lost: the next holder ends the turn
	}
	b, err := json.Marshal(data)
	if err != nil {
		w.rt.log.Error("encoding an event failed", "session", w.id, "type", typ, "error", err)
		return
	}
	// Persisting outlives a cancelled turn.
	if _, err := w.w.Publish(context.Background(), event.Event{Type: typ, Data: b}); err != nil {
		w.fail(typ, err)
	}
}

// sync appends an event and waits until it is in the store, for events
// that must be durable (and so visible) before the turn goes on.
func (w *eventWriter) sync(typ string, data any) {
	if w.l.fenced.Load() {
		return
	}
	b, err := json.Marshal(data)
	if err != nil {
		w.rt.log.Error("encoding an event failed", "session", w.id, "type", typ, "error", err)
		return
	}
	if _, err := w.w.Append(context.Background(), event.Event{Type: typ, Data: b}); err != nil {
		w.fail(typ, err)
	}
}

// close waits until every event of the turn is in the store.
func (w *eventWriter) close() {
	if err := w.w.Flush(context.Background()); err != nil {
		w.fail("", err)
	}
}

func (w *eventWriter) fail(typ string, err error) {
	if w.failed.CompareAndSwap(false, true) {
		w.rt.log.Error("appending events failed; later events of this turn are dropped", "session", w.id, "type", typ, "error", err)
	}
}
