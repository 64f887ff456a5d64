package llmtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
)

// Protocol renders scripts in one provider's wire format.
type Protocol interface {
	// Frames renders a successful stream. Each element is one complete
	// frame, terminator included, so that faults can cut between frames.
	Frames(sc *Script, req *Request) []string
	// ErrorBody renders an HTTP error response body in the provider's
	// envelope, and may add headers (e.g. retry-after).
	ErrorBody(sc *Script, h http.Header) []byte
	// ErrorFrame renders an in-stream error.
	ErrorFrame(sc *Script) string
	// MalformedFrame renders a frame whose payload is not valid JSON.
	MalformedFrame() string
}

// Request is a request the fake received.
type Request struct {
	Method string
	Path   string // with the query string
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic value.
func (r *Request) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	return m
}

// Server is a loopback fake of one provider. Queue scripts with Push; each
// request consumes one. A request with nothing queued gets a 500 naming the
// problem, so a test that under-scripts fails loudly.
type Server struct {
	URL string
	*httptest.Server
	proto Protocol

	mu      sync.Mutex
	scripts []Script
	reqs    []Request
	repeat  bool
	// usage, when set, works out a streamed response's usage from the
	// request (WithPromptCache) in place of the script's.
	usage func(req *Request, u llm.Usage) llm.Usage
	// window, when set, is the model's context window (WithContextWindow).
	window int
}

// NewServer starts a fake speaking proto and closes it when the test ends.
func NewServer(t testing.TB, proto Protocol) *Server {
	s := &Server{proto: proto}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.Server.URL
	if t != nil {
		t.Cleanup(s.Close)
	}
	return s
}

// Push queues scripts, answered in order.
func (s *Server) Push(scripts ...Script) *Server {
	s.mu.Lock()
	s.scripts = append(s.scripts, scripts...)
	s.mu.Unlock()
	return s
}

// Repeat makes the last queued script answer every further request (for
// benchmarks).
func (s *Server) Repeat() *Server {
	s.mu.Lock()
	s.repeat = true
	s.mu.Unlock()
	return s
}

// Requests returns what the fake has received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// LastRequest returns the most recent request, or a zero Request.
func (s *Server) LastRequest() Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		return Request{}
	}
	return s.reqs[len(s.reqs)-1]
}

func (s *Server) next(req Request) (Script, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	tokens := 0
	if s.window > 0 {
		if tokens = PromptTokens(req.Body); tokens > s.window {
			return s.overflow(tokens), true // the script waits for a request that fits
		}
	}
	if len(s.scripts) == 0 {
		return Script{}, false
	}
	sc := s.scripts[0]
	if len(s.scripts) > 1 || !s.repeat {
		s.scripts = s.scripts[1:]
	}
	if s.usage != nil && sc.Status < 400 {
		sc.Usage = s.usage(&req, sc.Usage)
	}
	if s.window > 0 && s.usage == nil && sc.Status < 400 && sc.Usage.InputTokens == 0 {
		sc.Usage.InputTokens = tokens
	}
	return sc, true
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body}
	sc, ok := s.next(req)
	if !ok {
		sc = Script{Status: 500, ErrorMessage: "llmtest: no script queued for " + req.Path}
	}
	for k, vs := range sc.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if sc.Status >= 400 {
		b := s.proto.ErrorBody(&sc, w.Header())
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(sc.Status)
		_, _ = w.Write(b)
		return
	}
	frames := s.proto.Frames(&sc, &req)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	flush := func() {
		if fl != nil {
			fl.Flush()
		}
	}
	flush()
	for i, f := range frames {
		n := i + 1
		if sc.Delay > 0 {
			t := time.NewTimer(sc.Delay)
			select {
			case <-r.Context().Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		if sc.CutAfter > 0 && i == sc.CutAfter {
			_, _ = io.WriteString(w, f[:len(f)/2])
			flush()
			panic(http.ErrAbortHandler) // drops the connection mid-frame
		}
		if sc.MalformedAt == n {
			f = s.proto.MalformedFrame()
		}
		if _, err := io.WriteString(w, f); err != nil {
			return
		}
		flush()
		if sc.ErrorAfter == n {
			_, _ = io.WriteString(w, s.proto.ErrorFrame(&sc))
			flush()
			return
		}
	}
	if sc.CutAfter > 0 && sc.CutAfter >= len(frames) {
		panic(http.ErrAbortHandler)
	}
}

// MustJSON marshals v, for renderers.
func MustJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return string(bytes.TrimRight(buf.Bytes(), "\n"))
}
