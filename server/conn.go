package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Connection-level limits and what net/http answers by itself.
const (
	// DefaultBodyReadTimeout bounds sending a request body: a 10 MB body
	// at 3 Mbit/s fits, a client that stops half-way is dropped.
	DefaultBodyReadTimeout = 30 * time.Second
	// DefaultReadHeaderTimeout bounds sending the request line and
	// headers, and how long a connection may stay open before its first
	// request.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultMaxHeaderBytes bounds the request line and headers: the API
	// uses a handful of short headers.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultIdleTimeout closes kept-alive connections that stay idle.
	DefaultIdleTimeout = 2 * time.Minute
)

// HTTPServer returns an http.Server for the API with its timeouts set:
// headers must arrive within ReadHeaderTimeout, and (through the handler)
// bodies within BodyReadTimeout. It sets neither ReadTimeout nor
// WriteTimeout, which would cut event streams and WebSockets: a stream's
// writes have deadlines of their own. Serve it on Listener(ln).
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.readHeaderTimeout(),
		IdleTimeout:       DefaultIdleTimeout,
		MaxHeaderBytes:    s.maxHeaderBytes(),
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

func (s *Server) readHeaderTimeout() time.Duration {
	if s.cfg.ReadHeaderTimeout > 0 {
		return s.cfg.ReadHeaderTimeout
	}
	return DefaultReadHeaderTimeout
}

func (s *Server) maxHeaderBytes() int {
	if s.cfg.MaxHeaderBytes > 0 {
		return s.cfg.MaxHeaderBytes
	}
	return DefaultMaxHeaderBytes
}

// bodyDeadline gives a request with a body until BodyReadTimeout to send
// it, so that a client cannot hold a connection (and its file descriptor)
// by sending half a body and waiting. The deadline is the connection's
// read deadline, lifted as soon as the body has been read to its end: net/
// http then reads the connection in the background to notice a client
// that goes away, and a stream that follows (the turn of POST .../messages)
// must not be cut. A handler that never reads the body leaves the deadline
// in place, which bounds net/http's draining of the rest after it.
func (s *Server) bodyDeadline(next http.Handler) http.Handler {
	d := s.cfg.BodyReadTimeout
	if d == 0 {
		d = DefaultBodyReadTimeout
	}
	if d < 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(d)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline at the end of the body.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// DefaultMaxConns is the default bound on open connections: three
// quarters of the process's file descriptor limit, so that the database,
// provider connections, tool processes and MCP servers keep the rest. A
// flood of connections is then answered 503 instead of making every
// accept (and every file the tools open) fail.
func DefaultMaxConns() int {
	n := fdLimit()
	if n <= 0 {
		return 10_000
	}
	return max(32, n*3/4)
}

// Listener wraps ln for HTTPServer: it bounds the connections open at once
// (MaxConns, MaxConnsPerIP), answering those over a bound with a 503 in
// the error JSON, and turns the few errors net/http writes as plain text
// itself, before any handler runs, into the error JSON too.
//
// Those errors are the answers to requests net/http cannot parse: 431
// (headers over MaxHeaderBytes), 400 (a malformed request line or header,
// no Host), 501 (an unknown Transfer-Encoding), 505 (an HTTP version other
// than 1.x) and 417 (an Expect other than 100-continue). http.Server has
// no hook for them; it writes each as one complete response on the
// connection and then closes it. The connection recognises exactly those
// writes (a status line followed by net/http's fixed text/plain headers,
// in an order no handler response can have since net/http sorts response
// headers) and sends the same status with the error JSON instead. Should
// a future Go word them differently, they pass through unchanged, as
// plain text: the test that pins them then fails.
func (s *Server) Listener(ln net.Listener) net.Listener {
	l := &listener{Listener: ln, s: s, maxHeader: s.maxHeaderBytes(), perIP: s.cfg.MaxConnsPerIP,
		byIP: map[string]int{}, linger: make(chan struct{}, maxLingering)}
	switch {
	case s.cfg.MaxConns > 0:
		l.max = s.cfg.MaxConns
	case s.cfg.MaxConns == 0:
		l.max = DefaultMaxConns()
	}
	return l
}

// maxLingering bounds the refused connections waiting for their client to
// read the 503 before they are closed.
const maxLingering = 64

type listener struct {
	net.Listener
	s         *Server
	maxHeader int
	max       int // 0: no bound
	perIP     int // 0: no bound
	linger    chan struct{}

	mu   sync.Mutex
	open int
	byIP map[string]int
	// Refusals are logged at most once a second (a flood of connections
	// must not become a flood of log lines), with how many there were.
	refused   int
	refusedAt time.Time
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := connIP(c)
		if msg := l.admit(ip); msg != "" {
			l.refuse(c, ip, msg)
			continue
		}
		return &apiConn{Conn: c, l: l, ip: ip}, nil
	}
}

// admit takes a slot for ip, or says why there is none.
func (l *listener) admit(ip string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.open >= l.max {
		return fmt.Sprintf("the server has %d connections open, its limit; retry shortly", l.open)
	}
	if l.perIP > 0 && l.byIP[ip] >= l.perIP {
		return fmt.Sprintf("this client address has %d connections open, the limit per address; close some or retry shortly", l.byIP[ip])
	}
	l.open++
	l.byIP[ip]++
	return ""
}

func (l *listener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byIP[ip]--; l.byIP[ip] <= 0 {
		delete(l.byIP, ip)
	}
}

// refuse answers a connection over a bound with a 503 and closes it. The
// close waits a moment for the client's request (a close with unread data
// resets the connection, and the reset can destroy the answer on its way)
// unless too many refused connections wait already.
func (l *listener) refuse(c net.Conn, ip, msg string) {
	_ = c.SetDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(errorResponse(http.StatusServiceUnavailable, errInternal, msg, newRequestID(), "Retry-After: 1\r\n"))
	l.mu.Lock()
	l.refused++
	n, logIt := l.refused, time.Since(l.refusedAt) >= time.Second
	if logIt {
		l.refused, l.refusedAt = 0, time.Now()
	}
	l.mu.Unlock()
	if logIt {
		l.s.log.Warn("connections refused", "count", n, "last_remote", ip, "reason", msg)
	}
	select {
	case l.linger <- struct{}{}:
		go func() {
			defer func() { <-l.linger }()
			if cw, ok := c.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
			}
			_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
			_ = c.Close()
		}()
	default:
		_ = c.Close()
	}
}

func connIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// apiConn is an accepted connection: it frees its slot when closed and
// rewrites net/http's own plain-text errors (see Listener).
type apiConn struct {
	net.Conn
	l      *listener
	ip     string
	closed sync.Once
}

func (c *apiConn) Write(p []byte) (int, error) {
	if code, detail, ok := netHTTPError(p); ok {
		msg := netHTTPErrorMessage(code, detail, c.l.maxHeader)
		id := newRequestID()
		c.l.s.log.LogAttrs(context.Background(), slog.LevelInfo, "http request",
			slog.String("request_id", id), slog.Int("status", code), slog.String("error", msg), slog.String("remote", c.ip))
		if _, err := c.Conn.Write(errorResponse(code, errInvalidRequest, msg, id, "")); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *apiConn) Close() error {
	err := c.Conn.Close()
	c.closed.Do(func() { c.l.release(c.ip) })
	return err
}

// CloseWrite passes through: net/http half-closes after a 431 so that the
// client reads it before the connection goes.
func (c *apiConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// The headers net/http's own error responses carry (net/http/server.go,
// conn.serve), and the start of its 417.
const (
	netHTTPErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	netHTTP417          = "HTTP/1.1 417 Expectation Failed\r\n"
)

// netHTTPError recognises a response net/http wrote itself (see Listener)
// and returns its status and the detail it gave, if any.
func netHTTPError(p []byte) (code int, detail string, ok bool) {
	if !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) {
		return 0, "", false
	}
	if bytes.HasPrefix(p, []byte(netHTTP417)) && bytes.Contains(p, []byte("\r\nConnection: close\r\n")) {
		return http.StatusExpectationFailed, "", true
	}
	i := bytes.Index(p, []byte(netHTTPErrorHeaders))
	if i < 0 || i < 12 {
		return 0, "", false
	}
	status := string(p[len("HTTP/1.1 "):i])
	code, err := strconv.Atoi(status[:3])
	if err != nil || code < 400 || code > 599 {
		return 0, "", false
	}
	if _, d, found := bytes.Cut([]byte(status), []byte(": ")); found {
		detail = string(d)
	}
	return code, detail, true
}

// netHTTPErrorMessage says what was wrong with a request net/http refused.
func netHTTPErrorMessage(code int, detail string, maxHeader int) string {
	switch code {
	case http.StatusRequestHeaderFieldsTooLarge:
		return fmt.Sprintf("the request line and headers exceed the limit of %d KB", maxHeader>>10)
	case http.StatusNotImplemented:
		return "unsupported Transfer-Encoding: only chunked is accepted"
	case http.StatusHTTPVersionNotSupported:
		return "unsupported HTTP version: this server speaks HTTP/1.0 and HTTP/1.1"
	case http.StatusExpectationFailed:
		return `unsupported Expect header: only "100-continue" is understood`
	}
	if detail != "" {
		return "malformed HTTP request: " + detail
	}
	return "malformed HTTP request (its request line or a header could not be parsed)"
}

// errorResponse is a complete HTTP/1.1 response carrying the error JSON,
// after which the connection closes. extra is more header lines.
func errorResponse(code int, typ, msg, requestID, extra string) []byte {
	body, _ := json.Marshal(errorBody{Error: errorDetail{Type: typ, Message: msg}})
	body = append(body, '\n')
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nCache-Control: no-store\r\nConnection: close\r\nContent-Length: %d\r\n"+
		"Content-Type: application/json\r\n%sX-Request-ID: %s\r\n\r\n", code, http.StatusText(code), len(body), extra, requestID)
	b.Write(body)
	return b.Bytes()
}
