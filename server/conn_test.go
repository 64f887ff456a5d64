package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slowClient is a raw connection to a real server.
type slowClient struct {
	t *testing.T
	c net.Conn
}

func dialFrom(t *testing.T, addr, from string) (*slowClient, error) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return &slowClient{t: t, c: c}, nil
}

func dialSlow(t *testing.T, addr string) *slowClient {
	t.Helper()
	c, err := dialFrom(t, addr, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (s *slowClient) send(raw string) {
	s.t.Helper()
	if _, err := io.WriteString(s.c, raw); err != nil {
		s.t.Fatal(err)
	}
}

// closedWithin reads until the server closes the connection, failing if
// that takes longer than d, and returns what was read.
func (s *slowClient) closedWithin(d time.Duration) []byte {
	s.t.Helper()
	_ = s.c.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(s.c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		s.t.Fatalf("the server did not close the connection within %s: %v (read %q)", d, err, b)
	}
	return b
}

// TestBodyReadTimeout: a client that sends half a request body, or half
// its headers, loses the connection within the timeout; a body that stops
// half-way is answered 408 with the error JSON.
func TestBodyReadTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	a := newAPI(t, apiOptions{real: true, config: func(c *Config) {
		c.BodyReadTimeout = timeout
		c.ReadHeaderTimeout = timeout
	}})
	addr := a.srv.Listener.Addr().String()
	head := func(method, path, extra string) string {
		return method + " " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\n" + extra + "\r\n"
	}
	tests := []struct {
		name   string
		raw    string
		status int // 0: closed, answered 400 at most (net/http answers a cut header line)
	}{
		{"half a body", head("POST", "/v1/sessions", "Content-Length: 100\r\n") + `{"session_id":"`, http.StatusRequestTimeout},
		{"half a chunked body", head("POST", "/v1/sessions", "Transfer-Encoding: chunked\r\n") + "5\r\n{\"ses\r\n", http.StatusRequestTimeout},
		{"headers only", head("POST", "/v1/agent/run", "Content-Length: 100\r\n"), http.StatusRequestTimeout},
		{"half a body the handler does not read", head("POST", "/v1/sessions/nope/cancel", "Content-Length: 100\r\n") + "{", http.StatusNotFound},
		{"half the headers", "POST /v1/sessions HTTP/1.1\r\nHost: " + addr + "\r\nContent-Le", 0},
		{"nothing at all", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := dialSlow(t, addr)
			start := time.Now()
			c.send(tc.raw)
			got := c.closedWithin(timeout + 3*time.Second)
			if took := time.Since(start); took > timeout+2*time.Second {
				t.Fatalf("closed after %s", took)
			}
			if tc.status == 0 {
				if len(got) != 0 && !strings.HasPrefix(string(got), "HTTP/1.1 400 ") {
					t.Fatalf("answered %q", got)
				}
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(got))), nil)
			if err != nil {
				t.Fatalf("answer %q: %v", got, err)
			}
			typ := errInvalidRequest
			if tc.status == http.StatusNotFound {
				typ = errNotFound
			}
			decodeErr(t, resp, tc.status, typ)
		})
	}

	// Meanwhile the server serves others.
	a.doJSON("GET", "/v1/health", nil, http.StatusOK)
}

// TestStreamsOutliveTheBodyDeadline: the deadline is lifted once the body
// is read, so that the turn streamed on the same request, and event
// streams, last as long as they need.
func TestStreamsOutliveTheBodyDeadline(t *testing.T) {
	t.Parallel()
	const timeout = 150 * time.Millisecond
	a := newAPI(t, apiOptions{real: true, keepalive: time.Hour, config: func(c *Config) {
		c.BodyReadTimeout = timeout
	}})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "s"}, http.StatusCreated)
	follow := a.openSSE("GET", "/v1/sessions/s/events", nil)
	a.fake.Push(deltas(8, 80*time.Millisecond)) // about 0.6s, four timeouts
	start := time.Now()
	evs := a.openSSE("POST", "/v1/sessions/s/messages", map[string]any{"prompt": "go"}).readUntilDone()
	if took := time.Since(start); took < 3*timeout {
		t.Fatalf("the turn took %s: too short to tell", took)
	}
	if got := evs[len(evs)-1].field("stop_reason"); got != "end_turn" {
		t.Fatalf("turn ended with %v: %s", got, eventTypes(evs))
	}
	// The follower, idle for the whole wait before the turn, got it all.
	if got := follow.readUntil("done"); len(got) != len(evs) {
		t.Fatalf("follower got %d events, the turn %d", len(got), len(evs))
	}
}

// TestConnectionLimits: connections over MaxConns, or over MaxConnsPerIP
// from one address, are answered 503 with the error JSON and closed;
// closing one frees its slot.
func TestConnectionLimits(t *testing.T) {
	t.Parallel()
	t.Run("total", func(t *testing.T) {
		t.Parallel()
		a := newAPI(t, apiOptions{real: true, config: func(c *Config) { c.MaxConns = 3 }})
		addr := a.srv.Listener.Addr().String()
		var held []*slowClient
		for range 3 {
			c := dialSlow(t, addr)
			c.send("POST /v1/sessions HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{")
			held = append(held, c)
		}
		waitFor(t, "the held connections to be accepted", func() bool { return openConns(a.s, a.srv.Listener) == 3 })
		resp := rawHTTP(t, addr, "GET /v1/health HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
		if resp.Header.Get("Retry-After") == "" {
			t.Error("503 without Retry-After")
		}
		if msg := decodeErr(t, resp, http.StatusServiceUnavailable, errInternal); !strings.Contains(msg, "connections") {
			t.Fatalf("message %q", msg)
		}
		held[0].c.Close()
		waitFor(t, "the slot to be freed", func() bool { return openConns(a.s, a.srv.Listener) < 3 })
		resp = rawHTTP(t, addr, "GET /v1/health HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("after a slot was freed: %d", resp.StatusCode)
		}
	})
	t.Run("per address", func(t *testing.T) {
		t.Parallel()
		a := newAPI(t, apiOptions{real: true, config: func(c *Config) { c.MaxConnsPerIP = 2 }})
		addr := a.srv.Listener.Addr().String()
		for range 2 {
			dialSlow(t, addr).send("GET /v1/health HTTP/1.1\r\nHost: " + addr + "\r\n") // headers never end
		}
		waitFor(t, "the held connections to be accepted", func() bool { return openConns(a.s, a.srv.Listener) == 2 })
		decodeErr(t, rawHTTP(t, addr, "GET /v1/health HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"), http.StatusServiceUnavailable, errInternal)
		// Another address is not affected (127.0.0.2 is loopback on Linux).
		other, err := dialFrom(t, addr, "127.0.0.2")
		if err != nil {
			t.Skipf("no second loopback address: %v", err)
		}
		other.send("GET /v1/health HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(other.c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("from another address: %d", resp.StatusCode)
		}
	})
}

// openConns is the number of connections the listener counts.
func openConns(s *Server, ln net.Listener) int {
	l := ln.(*listener)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// TestNetHTTPErrorsAreJSON: what net/http refuses before any handler runs
// is answered with the error JSON too.
func TestNetHTTPErrorsAreJSON(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{real: true, config: func(c *Config) { c.MaxHeaderBytes = 4 << 10 }})
	addr := a.srv.Listener.Addr().String()
	host := "Host: " + addr + "\r\n"
	tests := []struct {
		name, raw string
		status    int
		contains  string
	}{
		{"garbage", "GARBAGE\r\n\r\n", http.StatusBadRequest, "malformed HTTP request"},
		{"no Host", "GET /v1/health HTTP/1.1\r\n\r\n", http.StatusBadRequest, "missing required Host header"},
		{"malformed Host", "GET /v1/health HTTP/1.1\r\nHost: a b\r\n\r\n", http.StatusBadRequest, "malformed Host header"},
		{"invalid header name", "GET /v1/health HTTP/1.1\r\n" + host + "Bad Header: x\r\n\r\n", http.StatusBadRequest, "invalid header name"},
		{"bad Content-Length", "POST /v1/sessions HTTP/1.1\r\n" + host + "Content-Length: abc\r\n\r\n", http.StatusBadRequest, "malformed"},
		{"headers too large", "GET /v1/health HTTP/1.1\r\n" + host + "X-Big: " + strings.Repeat("x", 20<<10) + "\r\n\r\n",
			http.StatusRequestHeaderFieldsTooLarge, "4 KB"},
		{"request line too large", "GET /" + strings.Repeat("x", 20<<10) + " HTTP/1.1\r\n" + host + "\r\n",
			http.StatusRequestHeaderFieldsTooLarge, "headers"},
		{"HTTP/3", "GET /v1/health HTTP/3.0\r\n" + host + "\r\n", http.StatusHTTPVersionNotSupported, "HTTP version"},
		{"unknown transfer encoding", "POST /v1/sessions HTTP/1.1\r\n" + host + "Transfer-Encoding: gzip\r\n\r\n", http.StatusNotImplemented, "Transfer-Encoding"},
		{"unknown Expect", "GET /v1/health HTTP/1.1\r\n" + host + "Expect: teapot\r\n\r\n", http.StatusExpectationFailed, "Expect"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := rawHTTP(t, addr, tc.raw)
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if msg := decodeErr(t, resp, tc.status, errInvalidRequest); !strings.Contains(msg, tc.contains) {
				t.Fatalf("message %q, want it to mention %q", msg, tc.contains)
			}
		})
	}
	// The handlers' own answers, 400s included, are untouched.
	resp := a.do("POST", "/v1/sessions", `{"session_id":"bad/id"}`)
	decodeErr(t, resp, http.StatusBadRequest, errInvalidRequest)
	resp = a.do("GET", "/v1/nope", nil)
	decodeErr(t, resp, http.StatusNotFound, errNotFound)
	resp = a.do("DELETE", "/v1/health", nil)
	if allow := resp.Header.Get("Allow"); !strings.Contains(allow, "GET") {
		t.Errorf("405 with Allow %q", allow)
	}
	decodeErr(t, resp, http.StatusMethodNotAllowed, errInvalidRequest)
}

// TestNetHTTPErrorRecognition pins what is rewritten: net/http's own
// answers, never a handler's.
func TestNetHTTPErrorRecognition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		write string
		code  int // 0: not recognised
	}{
		{"431", "HTTP/1.1 431 Request Header Fields Too Large" + netHTTPErrorHeaders + "431 Request Header Fields Too Large", 431},
		{"400 with detail", "HTTP/1.1 400 Bad Request: missing required Host header" + netHTTPErrorHeaders + "400 Bad Request: missing required Host header", 400},
		{"501", "HTTP/1.1 501 Not Implemented" + netHTTPErrorHeaders + "Unsupported transfer encoding", 501},
		{"417", "HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 417},
		{"a handler's 400", "HTTP/1.1 400 Bad Request\r\nCache-Control: no-store\r\nContent-Type: application/json\r\n\r\n{}", 0},
		{"http.Error's text", "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nDate: x\r\nConnection: close\r\n\r\nbad", 0},
		{"a 200", "HTTP/1.1 200 OK" + netHTTPErrorHeaders + "ok", 0},
		{"an event frame", "id: 1\nevent: text_delta\ndata: {}\n\n", 0},
		{"short", "HTTP/1.1 4", 0},
	}
	for _, tc := range tests {
		code, _, ok := netHTTPError([]byte(tc.write))
		if ok != (tc.code != 0) || code != tc.code {
			t.Errorf("%s: %d %v, want %d", tc.name, code, ok, tc.code)
		}
	}
}

// TestHealth503: GET /v1/health says 503 when the store does not answer
// or the server is shutting down.
func TestHealth503(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		breakIt func(a *api)
		want    string
	}{
		{"store closed", func(a *api) { _ = a.db.Close() }, "store"},
		{"shutting down", func(a *api) { _ = a.rt.Shutdown(context.Background()) }, "shutting down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newAPI(t, apiOptions{})
			if m := a.doJSON("GET", "/v1/health", nil, http.StatusOK); m["status"] != "ok" {
				t.Fatalf("healthy: %v", m)
			}
			tc.breakIt(a)
			// Checks are cached for a second.
			waitFor(t, "the next check", func() bool {
				resp := a.do("GET", "/v1/health", nil)
				resp.Body.Close()
				return resp.StatusCode != http.StatusOK
			})
			resp := a.do("GET", "/v1/health", nil)
			defer resp.Body.Close()
			var m struct {
				Status string      `json:"status"`
				Error  errorDetail `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusServiceUnavailable || m.Status != "unavailable" || m.Error.Type != errInternal ||
				!strings.Contains(m.Error.Message, tc.want) || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("%d %+v", resp.StatusCode, m)
			}
		})
	}
}
