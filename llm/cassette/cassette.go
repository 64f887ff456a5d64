// Package cassette records a session's HTTP exchanges with model providers
// to a JSONL file and replays them deterministically, with no network.
//
// A Cassette works at the HTTP layer: it is an http.RoundTripper that goes
// into any provider's llm.Endpoint.HTTPClient, so a replay drives the real
// wire codec over the bytes the real server sent, chunk by chunk as they
// arrived (SSE streams keep their incremental shape).
//
// Record once with a real key, then commit the file; secrets (auth headers,
// key query parameters, cookies) are stripped on the way to disk:
//
//	c, err := cassette.Open("testdata/tool-loop.jsonl", cassette.Record)
//	if err != nil { ... }
//	defer c.Close()
//	p := openai.New(openai.Config{Endpoint: llm.Endpoint{
//		APIKey:     os.Getenv("OPENAI_API_KEY"),
//		HTTPClient: c.Client(nil),
//	}})
//
// In CI open the same file in Replay mode (no key, no network). Requests
// must arrive in the recorded order and match the recording on method, path,
// query and body (JSON compared semantically); a mismatch fails the call
// with an *llm.Error of category bad_request that names the interaction and
// the first differing JSON path. A mismatch does not consume the recording,
// so a retry of the same request meets the same message:
//
//	c, err := cassette.Open("testdata/tool-loop.jsonl", cassette.Replay)
//	...
//	p := openai.New(openai.Config{Endpoint: llm.Endpoint{HTTPClient: c.Client(nil)}})
//	res := llm.Collect(p.Stream(ctx, req))
//	if n := c.Unused(); n > 0 { t.Errorf("%d recorded interactions were not replayed", n) }
//
// Auto mode replays when the file exists and records otherwise, so deleting
// a cassette is how it gets re-recorded.
//
// # File format
//
// The first line is a header, {"cassette":1,"recorded_at":"..."}; each
// further line is one interaction:
//
//	{"request":{"method":"POST","url":"https://api.openai.com/v1/chat/completions",
//	  "headers":{...},"body":<the JSON body, or a string>},
//	 "response":{"status":200,"headers":{...},"chunks":["data: ...\n\n",...],"duration_ms":812}}
//
// A transport failure is {"request":{...},"error":"...","error_kind":"..."}
// (the kind, when set, makes the replayed error a cancellation, deadline or
// timeout again). A response whose body read failed mid-stream has
// "cut":true and replays its chunks followed by io.ErrUnexpectedEOF; one
// whose reader gave up early (closed the body, or cancelled) has
// "partial":true and replays its chunks followed by an error wrapping
// io.ErrUnexpectedEOF. Bodies that are not UTF-8 text are stored
// base64-encoded ("body_base64", or "base64":true on the response).
// duration_ms is informational: replay runs as fast as the reader reads.
package cassette

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Mode selects what a cassette does with requests.
type Mode int

const (
	// Replay serves only from the file and never touches the network.
	Replay Mode = iota
	// Record passes requests through to the inner transport and writes
	// every exchange.
	Record
	// Auto is Replay when the file exists and Record otherwise.
	Auto
)

func (m Mode) String() string {
	switch m {
	case Replay:
		return "replay"
	case Record:
		return "record"
	case Auto:
		return "auto"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses "replay", "record" or "auto".
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "replay":
		return Replay, nil
	case "record":
		return Record, nil
	case "auto":
		return Auto, nil
	}
	return 0, fmt.Errorf("cassette: unknown mode %q (valid modes: replay, record, auto)", s)
}

var (
	// ErrMismatch is wrapped by the *llm.Error a replay returns when a
	// request differs from its recording.
	ErrMismatch = errors.New("request does not match the recording")
	// ErrExhausted is wrapped by the *llm.Error a replay returns for a
	// request past the end of the recording.
	ErrExhausted = errors.New("no recorded interaction left")
	// ErrClosed is returned by RoundTrip after Close.
	ErrClosed = errors.New("cassette is closed")
)

// Cassette is one recording file, opened for recording or replaying. It is
// safe for concurrent use; in Replay mode, concurrent requests are matched
// in the order RoundTrip is called.
type Cassette struct {
	path string
	mode Mode

	mu     sync.Mutex
	closed bool

	// Replay.
	recs []*recorded
	next int

	// Record. queue holds the interactions not yet written, in the order
	// their requests were made, so that the file is in request order even
	// when responses finish out of order.
	f     *os.File
	queue []*slot
	werr  error
}

// Open opens the cassette at path. In Replay mode the file must exist and
// parse; errors name the offending line. In Record mode the file is created
// (with its parent directories) or truncated. Auto resolves to one of the
// two, which Mode then reports.
func Open(path string, mode Mode) (*Cassette, error) {
	if mode == Auto {
		mode = Record
		if _, err := os.Stat(path); err == nil {
			mode = Replay
		}
	}
	c := &Cassette{path: path, mode: mode}
	switch mode {
	case Replay:
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("cassette: %w", err)
		}
		c.recs, err = load(path, data)
		if err != nil {
			return nil, err
		}
	case Record:
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("cassette: %w", err)
		}
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("cassette: %w", err)
		}
		c.f = f
		c.writeLine(fileHeader{Cassette: version, RecordedAt: time.Now().UTC().Format(time.RFC3339)})
		if c.werr != nil {
			f.Close()
			return nil, c.werr
		}
	default:
		return nil, fmt.Errorf("cassette: invalid mode %v", mode)
	}
	return c, nil
}

// Mode is Replay or Record (Auto has been resolved by Open).
func (c *Cassette) Mode() Mode { return c.mode }

// Path is the file the cassette reads or writes.
func (c *Cassette) Path() string { return c.path }

// Transport returns a RoundTripper backed by the cassette. In Record mode
// requests go through inner (nil means http.DefaultTransport); in Replay
// mode inner is ignored and nothing is dialled.
func (c *Cassette) Transport(inner http.RoundTripper) http.RoundTripper {
	if c.mode == Replay {
		return replayer{c}
	}
	if inner == nil {
		inner = http.DefaultTransport
	}
	return recorder{c: c, inner: inner}
}

// Client returns a copy of inner (nil meaning a zero http.Client) whose
// transport is Transport(inner.Transport).
func (c *Cassette) Client(inner *http.Client) *http.Client {
	var cl http.Client
	if inner != nil {
		cl = *inner
	}
	cl.Transport = c.Transport(cl.Transport)
	return &cl
}

// Unused is the number of recorded interactions not replayed (yet). It is
// always 0 in Record mode.
func (c *Cassette) Unused() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.recs) - c.next
}

// Close ends the cassette. In Record mode it writes every interaction still
// pending (a response body not yet read to the end is written as partial)
// and closes the file, returning the first write error. It is idempotent.
func (c *Cassette) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	if c.mode == Replay {
		c.mu.Unlock()
		return nil
	}
	var open []*recordBody
	for _, s := range c.queue {
		if s.body != nil {
			open = append(open, s.body)
		}
	}
	c.mu.Unlock()
	// Bodies lock themselves before the cassette, so they are abandoned
	// outside c.mu.
	for _, b := range open {
		b.abandon()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.queue {
		if !s.done {
			// The request is still waiting for its response headers.
			s.it.Error = "cassette closed before the response arrived"
			s.done = true
		}
	}
	c.flush()
	if err := c.f.Close(); err != nil && c.werr == nil {
		c.werr = fmt.Errorf("cassette: %w", err)
	}
	return c.werr
}
