package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weft-run/weft/eventlog"
	"github.com/weft-run/weft/session"
)

// sseWriteTimeout bounds one frame's write: a client that stops reading
// without closing its connection is dropped instead of holding the
// handler forever. (It never holds the turn: readers only keep a position.)
const sseWriteTimeout = 30 * time.Second

// sseStream writes Server-Sent Events to one response. Frames and keepalive
// comments come from two goroutines (the handler and the heartbeat timer), so
// writes are serialised by mu.
type sseStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	fl http.Flusher

	// client ends when the client went away or a write failed; ctx also
	// when the server closes, after which the stream delivers the events
	// that exist and ends (see next).
	client context.Context
	ctx    context.Context
	cancel context.CancelFunc
	// drainTo is the last seq to deliver once the server closes; -1 until
	// then.
	drainTo int64

	// rd is the reader the handler takes frames from (set by next, so nil
	// for streams not read through it); while it has its next event in
	// memory, a frame waits in buf for the ones after it, so that a
	// backlog goes out in one write instead of one per frame.
	rd *eventlog.Reader

	mu       sync.Mutex
	buf      []byte // frames not yet written (pending says so)
	pending  bool
	err      error
	active   bool // a frame went out since the last heartbeat tick
	deadline time.Time
	// The heartbeat is a timer rather than a goroutine, so that an idle
	// stream costs no goroutine beyond its handler's.
	beat    *time.Timer
	every   time.Duration
	stopped bool
}

// startSSE sends the stream's headers and starts the heartbeat. The caller
// must call close.
func (s *Server) startSSE(w http.ResponseWriter, r *http.Request) *sseStream {
	s.streams.Add(1)
	s.streamsActive.Add(1)
	client, cancelClient := context.WithCancel(r.Context())
	ctx, cancel := context.WithCancel(client)
	stopClosing := context.AfterFunc(s.closing, cancel)
	st := &sseStream{w: w, rc: http.NewResponseController(w), client: client, ctx: ctx, drainTo: -1, every: s.keepalive}
	var once sync.Once
	st.cancel = func() {
		stopClosing()
		cancel()
		cancelClient()
		once.Do(func() { s.streamsActive.Add(-1); s.streams.Done() })
	}
	st.fl, _ = w.(http.Flusher)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	st.mu.Lock()
	st.flushLocked()
	st.beat = time.AfterFunc(st.every, st.heartbeat)
	st.mu.Unlock()
	return st
}

// heartbeat writes a ": keepalive" comment after every interval in which no
// frame went out, so that proxies and browsers keep an idle stream open.
func (st *sseStream) heartbeat() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.stopped || st.ctx.Err() != nil {
		return
	}
	if !st.active && !st.pending && st.err == nil {
		st.buf = append(st.buf[:0], ": keepalive\n\n"...)
		st.writeLocked()
	}
	st.active = false
	st.beat.Reset(st.every)
}

// event writes one stored event as a frame.
func (st *sseStream) event(ev session.Event) error { return st.frame(ev.Seq, ev.Type, ev.Data) }

// maxCoalesce bounds the frames gathered into one write.
const maxCoalesce = 32 << 10

// frame writes "id: <seq>\nevent: <type>\ndata: <json>\n\n" and flushes
// it, together with the frames before it that waited, unless the reader
// already holds the next event: then the frame waits for it (next writes
// it out before it could block, close before the stream ends). A frame
// never waits for an event that is not there yet.
func (st *sseStream) frame(seq int64, typ string, data []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err != nil {
		return st.err
	}
	if !st.pending {
		st.buf = st.buf[:0]
	}
	b := append(st.buf, "id: "...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, "\nevent: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: "...)
	b = appendData(b, data)
	b = append(b, "\n\n"...)
	st.buf = b
	st.active = true
	if len(b) < maxCoalesce && st.rd != nil && st.rd.Buffered() {
		st.pending = true
		return nil
	}
	return st.writeLocked()
}

// flushPending writes the frames that wait, if any.
func (st *sseStream) flushPending() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.pending || st.err != nil {
		return st.err
	}
	return st.writeLocked()
}

// appendData appends a JSON payload as one data line. The runtime stores
// compact JSON, but a payload with line breaks (indented JSON from
// elsewhere) would split the frame, so it is compacted; JSON strings cannot
// hold raw line breaks, so nothing is lost.
func appendData(b, data []byte) []byte {
	if len(data) == 0 {
		return append(b, "{}"...)
	}
	if bytes.IndexByte(data, '\n') < 0 && bytes.IndexByte(data, '\r') < 0 {
		return append(b, data...)
	}
	var c bytes.Buffer
	if err := json.Compact(&c, data); err != nil {
		// Not JSON after all: keep the bytes, drop the line breaks.
		return append(b, strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(string(data))...)
	}
	return append(b, c.Bytes()...)
}

func (st *sseStream) writeLocked() error {
	now := time.Now()
	// The deadline moves at most once a second, not per frame.
	if st.deadline.Sub(now) < sseWriteTimeout-time.Second {
		st.deadline = now.Add(sseWriteTimeout)
		_ = st.rc.SetWriteDeadline(st.deadline) // unsupported by some writers (tests)
	}
	_, err := st.w.Write(st.buf)
	st.pending = false
	if cap(st.buf) > maxCoalesce {
		st.buf = nil // a backlog's buffer is not kept for the stream's life
	} else {
		st.buf = st.buf[:0]
	}
	if err != nil {
		st.fail(err)
		return err
	}
	return st.flushLocked()
}

func (st *sseStream) flushLocked() error {
	if st.fl != nil {
		st.fl.Flush()
		return nil
	}
	if err := st.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		st.fail(err)
		return err
	}
	return nil
}

func (st *sseStream) fail(err error) {
	if st.err == nil {
		st.err = err
		st.cancel()
	}
}

// close stops the heartbeat (a beat already running finishes first: it
// holds mu) and clears the write deadline, which would otherwise outlive
// the stream on a kept-alive connection.
func (st *sseStream) close() {
	_ = st.flushPending() // the handler's last frames (a turn's done) may wait for a next that never comes
	st.cancel()
	st.mu.Lock()
	st.stopped = true
	st.beat.Stop()
	if !st.deadline.IsZero() {
		_ = st.rc.SetWriteDeadline(time.Time{})
	}
	st.mu.Unlock()
}

// closeDrainTimeout bounds how long a stream of a closing server waits for
// the events that exist to reach it.
const closeDrainTimeout = 5 * time.Second

// next returns the reader's next event for the stream. Once the server
// closes, a stream still ends cleanly but not abruptly: it first delivers
// every event that exists at that moment (Close comes after the runtime's
// shutdown, so that includes the done events of the turns it cancelled),
// and then ends with an error.
func (s *Server) next(st *sseStream, sessionID string, rd *eventlog.Reader) (session.Event, error) {
	st.rd = rd
	// Frames wait only while the next event is at hand.
	if !rd.Buffered() {
		if err := st.flushPending(); err != nil {
			return session.Event{}, err
		}
	}
	ev, err := rd.Next(st.ctx)
	if err == nil || st.client.Err() != nil || s.closing.Err() == nil {
		return ev, err
	}
	if st.drainTo < 0 {
		st.drainTo = 0
		if sess, gerr := s.rt.GetSession(st.client, sessionID); gerr == nil {
			st.drainTo = sess.LastSeq
		}
	}
	if rd.Position() >= st.drainTo {
		return ev, err
	}
	ctx, cancel := context.WithTimeout(st.client, closeDrainTimeout)
	defer cancel()
	return rd.Next(ctx)
}

// readFailed logs a reader error unless it is an expected end: the stream
// ended (client gone, server closing) or the session was deleted.
func (s *Server) readFailed(st *sseStream, sessionID string, rd *eventlog.Reader, err error) {
	if st.ctx.Err() == nil && st.client.Err() == nil && !errors.Is(err, eventlog.ErrSessionClosed) && !errors.Is(err, eventlog.ErrClosed) {
		s.log.Error("reading session events failed", "session", sessionID, "position", rd.Position(), "error", err)
	}
}
