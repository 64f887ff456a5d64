package runtime

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/weft-run/weft/store"
)

// eventWriter appends one turn's events. Events are published to the event
// log, which numbers them and wakes the session's readers at once, and
// reach the store behind, in batches: a delta reaches a client without
// waiting for a durable commit, so a busy server's latency is not its
// commit queue's. sync waits for durability where it matters, and close
// waits for the whole turn.
type eventWriter struct {
	rt *Runtime
	id string
	// failed makes a persistence failure logged once per turn, not once per
	// event.
	failed atomic.Bool
}

func (rt *Runtime) newWriter(sessionID string) *eventWriter {
	return &eventWriter{rt: rt, id: sessionID}
}

// push appends an event without waiting for the store. It blocks only when
// the session has many events waiting for the store, which slows the turn
// to the store's pace instead of growing without bound.
func (w *eventWriter) push(typ string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		w.rt.log.Error("encoding an event failed", "session", w.id, "type", typ, "error", err)
		return
	}
	// Persisting outlives a cancelled turn.
	if _, err := w.rt.elog.Publish(context.Background(), w.id, store.Event{Type: typ, Data: b}); err != nil {
		w.fail(typ, err)
	}
}

// sync appends an event and waits until it is in the store, for events
// that must be durable before the turn goes on (a permission request that a
// person has to see to answer).
func (w *eventWriter) sync(typ string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		w.rt.log.Error("encoding an event failed", "session", w.id, "type", typ, "error", err)
		return
	}
	if _, err := w.rt.elog.Append(context.Background(), w.id, store.Event{Type: typ, Data: b}); err != nil {
		w.fail(typ, err)
	}
}

// close waits until every event of the turn is in the store.
func (w *eventWriter) close() {
	if err := w.rt.elog.Flush(context.Background(), w.id); err != nil {
		w.fail("", err)
	}
}

func (w *eventWriter) fail(typ string, err error) {
	if w.failed.CompareAndSwap(false, true) {
		w.rt.log.Error("appending events failed; later events of this turn are dropped", "session", w.id, "type", typ, "error", err)
	}
}
