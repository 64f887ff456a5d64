package runtime

import (
	"context"
	"encoding/json"

	"github.com/weft-run/weft/store"
)

// writerBatch bounds the events one store transaction carries.
const writerBatch = 256

// eventWriter appends one turn's events in order, batching whatever has
// queued up while the previous append was being committed. A turn's events
// are produced far faster than one durable commit each (a delta every few
// microseconds against a commit's hundreds), so without batching a busy
// server's latency is the commit queue's; with it, an idle session still
// sees each event as soon as it is committed, and a busy one commits many
// per transaction.
type eventWriter struct {
	rt   *Runtime
	id   string
	ch   chan writeReq
	done chan struct{}
}

type writeReq struct {
	ev    store.Event
	flush chan struct{} // closed once this and every earlier event are appended
}

func (rt *Runtime) newWriter(sessionID string) *eventWriter {
	w := &eventWriter{rt: rt, id: sessionID, ch: make(chan writeReq, 1024), done: make(chan struct{})}
	go w.loop()
	return w
}

// push queues an event; it blocks only when the queue is full, which slows
// the turn to the store's pace instead of growing without bound.
func (w *eventWriter) push(typ string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		w.rt.log.Error("encoding an event failed", "session", w.id, "type", typ, "error", err)
		return
	}
	w.ch <- writeReq{ev: store.Event{Type: typ, Data: b}}
}

// sync queues an event and waits until it is appended, for events that
// must be visible before the turn goes on (a permission request that a
// person has to see to answer).
func (w *eventWriter) sync(typ string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		w.rt.log.Error("encoding an event failed", "session", w.id, "type", typ, "error", err)
		return
	}
	f := make(chan struct{})
	w.ch <- writeReq{ev: store.Event{Type: typ, Data: b}, flush: f}
	<-f
}

// close appends what is queued and stops the writer.
func (w *eventWriter) close() {
	close(w.ch)
	<-w.done
}

func (w *eventWriter) loop() {
	defer close(w.done)
	ctx := context.Background() // persisting outlives a cancelled turn
	batch := make([]store.Event, 0, writerBatch)
	var flushes []chan struct{}
	for req := range w.ch {
		batch = append(batch[:0], req.ev)
		flushes = flushes[:0]
		if req.flush != nil {
			flushes = append(flushes, req.flush)
		}
	more:
		for len(batch) < writerBatch {
			select {
			case r, ok := <-w.ch:
				if !ok {
					break more
				}
				batch = append(batch, r.ev)
				if r.flush != nil {
					flushes = append(flushes, r.flush)
				}
			default:
				break more
			}
		}
		if _, err := w.rt.elog.Append(ctx, w.id, batch...); err != nil {
			w.rt.log.Error("appending events failed", "session", w.id, "events", len(batch), "error", err)
		}
		for _, f := range flushes {
			close(f)
		}
	}
}
