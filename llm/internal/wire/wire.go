// Package wire is the HTTP plumbing the provider codecs share: posting a
// JSON body, an idle timeout on the streamed response, and classifying
// transport failures into *llm.Error. It knows nothing about any protocol.
package wire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/weft-run/weft/llm"
)

// errIdle is the cancel cause when the idle timer fires.
var errIdle = errors.New("no data received within the idle timeout")

// Response is a streaming response whose body is guarded by the idle timer.
type Response struct {
	*http.Response
	Body   io.Reader // read this, not Response.Body
	cancel context.CancelCauseFunc
	ctx    context.Context
	timer  *time.Timer
	idle   time.Duration
	once   sync.Once
}

// Post sends body to url with the endpoint's client and headers merged
// under hdr. The returned Response must be closed. A transport failure is
// returned as an *llm.Error.
func Post(ctx context.Context, ep *llm.Endpoint, provider, url string, body []byte, hdr http.Header) (*Response, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		cancel(nil)
		return nil, &llm.Error{Provider: provider, Category: llm.CategoryBadRequest, Message: "building request: " + err.Error(), Err: err}
	}
	req.Header = hdr
	if req.Header == nil {
		req.Header = http.Header{}
	}
	for k, vs := range ep.Headers {
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
	r := &Response{ctx: ctx, cancel: cancel, idle: ep.Idle()}
	if r.idle > 0 {
		r.timer = time.AfterFunc(r.idle, func() { cancel(errIdle) })
	}
	resp, err := ep.Client().Do(req)
	if err != nil {
		e := r.classify(provider, err) // before Close, whose cancel would read as the caller's
		r.Close()
		return nil, e
	}
	r.Response = resp
	r.Body = idleReader{r}
	r.touch()
	return r, nil
}

func (r *Response) touch() {
	if r.timer != nil {
		r.timer.Reset(r.idle)
	}
}

type idleReader struct{ r *Response }

func (ir idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Response.Body.Read(p)
	if n > 0 {
		ir.r.touch()
	}
	return n, err
}

// Close releases the connection and the timer. It is idempotent.
func (r *Response) Close() {
	r.once.Do(func() {
		if r.timer != nil {
			r.timer.Stop()
		}
		if r.Response != nil {
			r.Response.Body.Close()
		}
		r.cancel(nil)
	})
}

// Err classifies an error met while reading the body: the idle timer and
// the caller's context take precedence over the I/O error they caused.
func (r *Response) Err(provider string, err error) *llm.Error { return r.classify(provider, err) }

func (r *Response) classify(provider string, err error) *llm.Error {
	if cause := context.Cause(r.ctx); cause != nil {
		switch {
		case errors.Is(cause, errIdle):
			return &llm.Error{Provider: provider, Category: llm.CategoryTimeout, Message: errIdle.Error() + " (" + r.idle.String() + ")",
				Hint: llm.HintFor(llm.CategoryTimeout), Err: err}
		case errors.Is(cause, context.DeadlineExceeded):
			return &llm.Error{Provider: provider, Category: llm.CategoryTimeout, Message: "deadline exceeded", Hint: llm.HintFor(llm.CategoryTimeout), Err: cause}
		case errors.Is(cause, context.Canceled):
			return &llm.Error{Provider: provider, Category: llm.CategoryCanceled, Message: "cancelled", Hint: llm.HintFor(llm.CategoryCanceled), Err: cause}
		}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &llm.Error{Provider: provider, Category: llm.CategoryNetwork, Message: "connection closed before the stream ended",
			Hint: llm.HintFor(llm.CategoryNetwork), Err: err}
	}
	return llm.AsError(provider, err)
}

// drainGrace bounds the wait for the end of the body in Drain.
const drainGrace = 100 * time.Millisecond

// Drain reads what follows the protocol's last frame (normally just the end
// of the chunked body) so that an HTTP/1.1 connection returns to the pool
// instead of being closed and dialled again for the next call: measured in
// bench/agentloop, a fresh loopback connection per model call cost the
// engine about 10% of its throughput. A server that holds the response open
// is cut off after drainGrace; the message is complete either way.
func (r *Response) Drain() {
	t := time.AfterFunc(drainGrace, r.Close)
	defer t.Stop()
	_, _ = io.CopyN(io.Discard, r.Body, 64<<10)
}

// ReadErrorBody reads at most 1 MiB of an error response body.
func ReadErrorBody(r *Response) []byte {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	return b
}
