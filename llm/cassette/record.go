package cassette

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// slot is one interaction being recorded, queued in request order.
type slot struct {
	it   interaction
	done bool
	body *recordBody // while the response body is being read
}

type recorder struct {
	c     *Cassette
	inner http.RoundTripper
}

func (t recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := drainBody(req)
	if err != nil {
		return nil, err
	}
	out := req.Clone(req.Context())
	if body != nil {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	s, err := t.c.reserve(req, body)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := t.inner.RoundTrip(out)
	if err != nil {
		msg := redact(err.Error(), req)
		if msg == "" {
			msg = "transport error"
		}
		t.c.complete(s, func(it *interaction) { it.Error, it.ErrorKind = msg, errorKind(err) })
		return nil, err
	}
	rb := &recordBody{rc: resp.Body, c: t.c, s: s, ctx: req.Context(), start: start,
		status: resp.StatusCode, header: cleanHeaders(resp.Header)}
	if resp.Body == nil || resp.Body == http.NoBody {
		t.c.complete(s, func(it *interaction) { it.Response = rb.response(false, false) })
		return resp, nil
	}
	t.c.mu.Lock()
	if t.c.closed || s.done {
		// Close got here first and has written the slot; pass through.
		t.c.mu.Unlock()
		return resp, nil
	}
	s.body = rb
	t.c.mu.Unlock()
	resp.Body = rb
	return resp, nil
}

// drainBody reads and closes the request body, as RoundTrip must. nil means
// no body.
func drainBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("cassette: reading the request body: %w", err)
	}
	return b, nil
}

func (c *Cassette) reserve(req *http.Request, body []byte) (*slot, error) {
	s := &slot{it: interaction{Request: request{
		Method:  req.Method,
		URL:     cleanURL(req.URL).String(),
		Headers: cleanHeaders(req.Header),
	}}}
	s.it.Request.Body, s.it.Request.BodyBase64 = encodeBody(body)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("cassette %s: %w", c.path, ErrClosed)
	}
	c.queue = append(c.queue, s)
	return s, nil
}

// complete fills in a slot's outcome and writes every finished interaction
// at the head of the queue.
func (c *Cassette) complete(s *slot, fill func(*interaction)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.done {
		return
	}
	fill(&s.it)
	s.done, s.body = true, nil
	c.flush()
}

// flush writes the finished interactions at the head of the queue. c.mu is
// held.
func (c *Cassette) flush() {
	for len(c.queue) > 0 && c.queue[0].done {
		c.writeLine(&c.queue[0].it)
		c.queue[0] = nil
		c.queue = c.queue[1:]
	}
}

// writeLine writes v as one line. A line is written as soon as it is
// complete, so that a session that crashes still leaves a usable prefix.
func (c *Cassette) writeLine(v any) {
	if c.werr != nil {
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		c.werr = fmt.Errorf("cassette %s: %w", c.path, err)
		return
	}
	if _, err := c.f.Write(buf.Bytes()); err != nil {
		c.werr = fmt.Errorf("cassette %s: %w", c.path, err)
	}
}

// recordBody passes the response body through, keeping each read as a
// chunk, and writes the interaction once the body ends, fails or is closed.
type recordBody struct {
	rc     io.ReadCloser
	c      *Cassette
	s      *slot
	ctx    context.Context
	start  time.Time
	status int
	header http.Header

	mu     sync.Mutex
	chunks [][]byte
	done   bool
}

func (b *recordBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return n, err
	}
	if n > 0 {
		b.chunks = append(b.chunks, bytes.Clone(p[:n]))
	}
	switch {
	case err == io.EOF:
		b.finish(false, false)
	case err != nil:
		// A cancelled context (the caller's, or an idle timer's) is the
		// reader giving up, not the server cutting the stream.
		gaveUp := b.ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
		b.finish(!gaveUp, gaveUp)
	}
	return n, err
}

func (b *recordBody) Close() error {
	b.abandon()
	return b.rc.Close()
}

// abandon records what was read so far as a partial body.
func (b *recordBody) abandon() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		b.finish(false, true)
	}
}

// finish hands the response to the cassette. b.mu is held.
func (b *recordBody) finish(cut, partial bool) {
	b.done = true
	resp := b.response(cut, partial)
	b.chunks = nil
	b.c.complete(b.s, func(it *interaction) { it.Response = resp })
}

func (b *recordBody) response(cut, partial bool) *response {
	chunks, b64 := encodeChunks(b.chunks)
	return &response{
		Status:     b.status,
		Headers:    b.header,
		Chunks:     chunks,
		Base64:     b64,
		Cut:        cut,
		Partial:    partial,
		DurationMS: time.Since(b.start).Milliseconds(),
	}
}

func errorKind(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return kindCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return kindDeadline
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return kindTimeout
	}
	return ""
}

// redact removes the request's credentials from an error message: a
// wrapping transport may quote the URL or a header.
func redact(msg string, req *http.Request) string {
	var secrets []string
	for k, vs := range req.Header {
		if !credentialHeader(k) {
			continue
		}
		for _, v := range vs {
			secrets = append(secrets, v)
			if _, tok, ok := strings.Cut(v, " "); ok {
				secrets = append(secrets, tok)
			}
		}
	}
	for k, vs := range req.URL.Query() {
		if secretName(k) {
			secrets = append(secrets, vs...)
		}
	}
	if req.URL.User != nil {
		secrets = append(secrets, req.URL.User.String())
		if p, ok := req.URL.User.Password(); ok {
			secrets = append(secrets, p)
		}
	}
	for _, s := range secrets {
		// Short values (a "1" flag) would shred the message and are no secret.
		if len(s) >= 6 {
			msg = strings.ReplaceAll(msg, s, "REDACTED")
		}
	}
	return msg
}
