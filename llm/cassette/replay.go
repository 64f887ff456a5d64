package cassette

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/weft-run/weft/llm"
)

const replayHint = "the request differs from the recorded session: re-record the cassette (mode record) if the change is intended"

type replayer struct{ c *Cassette }

func (t replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := drainBody(req)
	if err != nil {
		return nil, err
	}
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("cassette %s: %w", c.path, ErrClosed)
	}
	n := c.next + 1
	if c.next >= len(c.recs) {
		return nil, &llm.Error{
			Category: llm.CategoryBadRequest,
			Message: fmt.Sprintf("cassette %s: request %d (%s %s) is past the end of the recording, which holds %d interactions",
				c.path, n, req.Method, pathQuery(cleanURL(req.URL)), len(c.recs)),
			Hint: replayHint,
			Err:  ErrExhausted,
		}
	}
	r := c.recs[c.next]
	if d := r.mismatch(req.Method, req.URL, body); d != "" {
		// The cursor stays put: a retry of the same request meets the same
		// recording and the same message.
		return nil, &llm.Error{
			Category: llm.CategoryBadRequest,
			Message:  fmt.Sprintf("cassette %s: request %d does not match the recording: %s", c.path, n, d),
			Hint:     replayHint,
			Err:      ErrMismatch,
		}
	}
	c.next++
	if r.Error != "" {
		return nil, &replayedError{msg: r.Error, kind: r.ErrorKind}
	}
	return r.response(req), nil
}

func (r *recorded) response(req *http.Request) *http.Response {
	rr := r.Response
	status := strconv.Itoa(rr.Status)
	if text := http.StatusText(rr.Status); text != "" {
		status += " " + text
	}
	resp := &http.Response{
		Status:        status,
		StatusCode:    rr.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rr.Headers.Clone(),
		ContentLength: -1,
		Request:       req,
	}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	complete := !rr.Cut && !rr.Partial
	if complete && len(r.chunks) == 0 {
		resp.Body = http.NoBody
		resp.ContentLength = 0
		return resp
	}
	end := io.EOF
	switch {
	case rr.Cut:
		end = io.ErrUnexpectedEOF
	case rr.Partial:
		end = errPartial
	}
	if complete {
		total := 0
		for _, c := range r.chunks {
			total += len(c)
		}
		if cl, err := strconv.Atoi(resp.Header.Get("Content-Length")); err == nil && cl == total {
			resp.ContentLength = int64(cl)
		}
	}
	resp.Body = &replayBody{ctx: req.Context(), chunks: r.chunks, end: end}
	return resp
}

// errPartial ends the replay of a body whose reader stopped early during
// recording: there is nothing more to give, and it was not a clean end.
var errPartial = fmt.Errorf("cassette: the recorded body ends here (the reader stopped early while recording): %w", io.ErrUnexpectedEOF)

var errBodyClosed = errors.New("cassette: read on closed response body")

// replayBody yields the recorded chunks one read at a time (a read never
// spans two chunks), so decoders see the stream as it arrived.
type replayBody struct {
	ctx    context.Context
	mu     sync.Mutex
	chunks [][]byte
	cur    []byte
	end    error
	closed bool
}

func (b *replayBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errBodyClosed
	}
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	for len(b.cur) == 0 {
		if len(b.chunks) == 0 {
			return 0, b.end
		}
		b.cur, b.chunks = b.chunks[0], b.chunks[1:]
	}
	n := copy(p, b.cur)
	b.cur = b.cur[n:]
	return n, nil
}

func (b *replayBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

// replayedError is a recorded transport failure. It keeps the failure's
// kind so that llm.AsError classifies it as the original was.
type replayedError struct{ msg, kind string }

func (e *replayedError) Error() string { return e.msg }

func (e *replayedError) Timeout() bool { return e.kind == kindTimeout || e.kind == kindDeadline }

func (e *replayedError) Temporary() bool { return false }

func (e *replayedError) Unwrap() error {
	switch e.kind {
	case kindCanceled:
		return context.Canceled
	case kindDeadline:
		return context.DeadlineExceeded
	}
	return nil
}
