package server

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// middleware wraps a handler.
type middleware func(http.Handler) http.Handler

// chain applies mws so that the first is outermost.
func chain(h http.Handler, mws ...middleware) http.Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// responseWriter records what was written, for the log line and for
// recovery (which can only send a 500 while nothing was sent). It passes
// Flush and Hijack through, and Unwrap lets http.ResponseController reach
// the connection (write deadlines).
type responseWriter struct {
	http.ResponseWriter
	status   int
	bytes    int64
	hijacked bool
}

func (w *responseWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *responseWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
		if w.status == 0 {
			w.status = http.StatusSwitchingProtocols
		}
	}
	return c, rw, err
}

func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// started reports whether a status line went out (or the connection was
// taken over), after which no error response can be sent.
func (w *responseWriter) started() bool { return w.status != 0 || w.hijacked }

// recoverer turns a handler panic into a 500 with the error JSON instead of
// a dropped connection, and logs it with the stack. It is outermost, so it
// also covers the other middleware.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &responseWriter{ResponseWriter: w}
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p) // the handler asked net/http to drop the connection
			}
			// The logger, inside, put the id on the response already.
			id := rw.Header().Get("X-Request-ID")
			s.log.Error("panic serving request", "request_id", id, "method", r.Method,
				"path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if !rw.started() {
				writeError(rw, http.StatusInternalServerError, errInternal, "internal error (request "+id+")")
			}
		}()
		next.ServeHTTP(rw, r)
	})
}

type ctxKey int

const requestIDKey ctxKey = iota

// requestID returns the request's id ("" outside the middleware).
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// saneRequestID accepts an incoming X-Request-ID only if it is short and
// plain, so that it cannot inject into logs or headers.
func saneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.ContainsRune("-_.:", c):
		default:
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

// logger gives every response an X-Request-ID (the caller's when sane) and
// logs one line per request when it ends. The URL is logged with its token
// parameter redacted; headers are not logged at all.
func (s *Server) logger(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-ID")
		if !saneRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-ID", id)
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey, id))
		rw, _ := w.(*responseWriter)
		completed := false
		defer func() {
			status, n := 0, int64(0)
			if rw != nil {
				status, n = rw.status, rw.bytes
			}
			if !completed && status == 0 {
				status = http.StatusInternalServerError // panicking: the recoverer answers
			}
			level := slog.LevelInfo
			if status >= 500 {
				level = slog.LevelError
			}
			s.log.LogAttrs(r.Context(), level, "http request",
				slog.String("request_id", id),
				slog.String("method", r.Method),
				slog.String("url", redactURL(r.URL)),
				slog.Int("status", status),
				slog.Int64("bytes", n),
				slog.Duration("duration", time.Since(start)),
				slog.String("remote", clientIP(r)),
			)
		}()
		next.ServeHTTP(w, r)
		completed = true
	})
}

// redactURL renders the path and query with any token parameter replaced.
func redactURL(u *url.URL) string {
	if u.RawQuery == "" {
		return u.EscapedPath()
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		// Unparsable: a token could hide anywhere in it.
		return u.EscapedPath() + "?[unparsable query redacted]"
	}
	for k := range q {
		if strings.EqualFold(k, "token") || strings.EqualFold(k, "access_token") {
			q[k] = []string{"REDACTED"}
		}
	}
	return u.EscapedPath() + "?" + q.Encode()
}

// CORS headers (seed 000), plus what a browser client of this API needs:
// Last-Event-ID for EventSource resumes, X-Session-ID to learn the session
// of /v1/agent/run, Retry-After after a 429.
const (
	corsMethods       = "GET, POST, PUT, DELETE, OPTIONS, PATCH"
	corsAllowHeaders  = "Content-Type, Authorization, Last-Event-ID, X-Request-ID, X-FengYu-Token, If-Match"
	corsExposeHeaders = "X-Request-ID, X-Session-ID, Retry-After, ETag"
	corsMaxAge        = "3600"
)

// cors echoes the request's Origin only when it is configured ("*" allows
// any), and answers preflight (and any other OPTIONS) requests itself.
func (s *Server) cors(next http.Handler) http.Handler {
	anyOrigin, allowed := s.corsOrigins()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		h := w.Header()
		if origin != "" {
			h.Add("Vary", "Origin")
			switch {
			case anyOrigin:
				h.Set("Access-Control-Allow-Origin", "*")
			case allowed[normOrigin(origin)]:
				h.Set("Access-Control-Allow-Origin", origin)
			default:
				origin = ""
			}
			if origin != "" {
				h.Set("Access-Control-Allow-Methods", corsMethods)
				h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
				h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
				h.Set("Access-Control-Max-Age", corsMaxAge)
			}
		}
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// exempt reports whether a request skips rate limiting and auth.
func exempt(r *http.Request) bool {
	return r.Method == http.MethodOptions || r.URL.Path == "/v1/health"
}

// clientIP is the peer address. Forwarding headers are not trusted: behind
// a proxy every client would otherwise pick its own rate-limit bucket.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// rateLimiter is a sliding window per client IP: a request is allowed when
// fewer than limit requests of that IP fall in the last window. Each IP
// keeps the times of its last limit requests in a ring, so the check is
// exact and Retry-After is the moment the oldest one leaves the window.
type rateLimiter struct {
	limit  int
	window time.Duration
	now    func() time.Time

	mu        sync.Mutex
	clients   map[string]*ipWindow
	lastSweep time.Time
}

type ipWindow struct {
	times []time.Time // ring of the most recent requests, at most limit
	next  int         // ring index of the oldest once full
	last  time.Time
}

func newRateLimiter(limit int, window time.Duration) *rateLimiter {
	return &rateLimiter{limit: limit, window: window, now: time.Now, clients: map[string]*ipWindow{}}
}

// allow records a request of ip and reports whether it is within the
// limit; when not, wait is how long until it would be.
func (l *rateLimiter) allow(ip string) (ok bool, wait time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) > l.window {
		// Forget clients that have been quiet for a whole window: their
		// rings could not deny anything any more.
		for k, c := range l.clients {
			if now.Sub(c.last) > l.window {
				delete(l.clients, k)
			}
		}
		l.lastSweep = now
	}
	c := l.clients[ip]
	if c == nil {
		c = &ipWindow{}
		l.clients[ip] = c
	}
	if len(c.times) < l.limit {
		c.times = append(c.times, now)
		c.last = now
		return true, 0
	}
	oldest := c.times[c.next]
	if age := now.Sub(oldest); age < l.window {
		return false, l.window - age
	}
	c.times[c.next] = now
	c.next = (c.next + 1) % l.limit
	c.last = now
	return true, 0
}

// rateLimit limits authenticated requests per client IP. It runs after
// auth, so that requests with a wrong token or none cannot spend a real
// client's budget (they have their own, see auth). Opening an event
// stream or the WebSocket is not counted: EventSource reconnects by
// itself after every drop and gives up for good on a 429, so a client
// that lost its connection a few times would otherwise lose its stream.
func (s *Server) rateLimit(next http.Handler) http.Handler {
	if s.limiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt(r) || (r.Method == http.MethodGet && streamPath(r.URL.Path)) {
			next.ServeHTTP(w, r)
			return
		}
		if ok, wait := s.limiter.allow(clientIP(r)); !ok {
			writeRateLimited(w, wait, fmt.Sprintf("rate limit of %d requests per minute exceeded", s.limiter.limit))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// writeRateLimited answers 429 with Retry-After.
func writeRateLimited(w http.ResponseWriter, wait time.Duration, msg string) {
	secs := max(int((wait+time.Second-1)/time.Second), 1)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeError(w, http.StatusTooManyRequests, errRateLimit, fmt.Sprintf("%s; retry in %ds", msg, secs))
}

// auth checks the bearer token in constant time. It is read from the
// Authorization header, or seed 001's X-FengYu-Token header. Browsers'
// EventSource and WebSocket cannot set headers, so GET event streams (of
// sessions and runs) and the WebSocket also accept it as ?token=.
//
// Requests that fail have a per-IP budget of their own (the rate limit):
// past it they are answered 429 instead of 401 or 403, which tells a
// misconfigured client to back off. A request with the right token is
// never refused by it, so that a flood of bad requests (from a web page,
// say, which can make a browser send them to a loopback server) cannot
// lock the real client out. It is no defence against guessing a weak
// token: the token must be long and random.
func (s *Server) auth(next http.Handler) http.Handler {
	if s.cfg.BearerToken == "" {
		return next
	}
	// Comparing digests keeps the comparison constant-time in the length
	// of the token too.
	want := sha256.Sum256([]byte(s.cfg.BearerToken))
	fail := func(w http.ResponseWriter, r *http.Request, status int, typ, msg string) {
		if s.failures != nil {
			if ok, wait := s.failures.allow(clientIP(r)); !ok {
				writeRateLimited(w, wait, fmt.Sprintf("more than %d requests per minute from this address failed authentication", s.failures.limit))
				return
			}
		}
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="weft"`)
		}
		writeError(w, status, typ, msg)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt(r) {
			next.ServeHTTP(w, r)
			return
		}
		var token string
		if h := r.Header.Get("Authorization"); h != "" {
			scheme, rest, _ := strings.Cut(h, " ")
			if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(rest) == "" {
				fail(w, r, http.StatusUnauthorized, errAuthentication, `the Authorization header must be "Bearer <token>"`)
				return
			}
			token = strings.TrimSpace(rest)
		} else if h := r.Header.Get("X-FengYu-Token"); h != "" {
			// Seed 001's header, so that its clients work unchanged.
			token = strings.TrimSpace(h)
		} else if r.Method == http.MethodGet && streamPath(r.URL.Path) {
			token = r.URL.Query().Get("token")
		}
		if token == "" {
			fail(w, r, http.StatusUnauthorized, errAuthentication, "missing Authorization header")
			return
		}
		got := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			fail(w, r, http.StatusForbidden, errPermission, "invalid bearer token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// streamPath: the streams a browser opens without control over headers
// (event streams of sessions and runs, the WebSocket). They accept the
// token as ?token=; elsewhere a token in the URL would only end up in
// proxies' logs and browser history. Opening one is not rate limited.
func streamPath(path string) bool {
	if path == "/v1/ws" || path == "/api/agent/stream" {
		return true
	}
	for _, prefix := range []string{"/v1/sessions/", "/v1/runs/"} {
		if rest, ok := strings.CutPrefix(path, prefix); ok && strings.HasSuffix(rest, "/events") && strings.Count(rest, "/") == 1 {
			return true
		}
	}
	return false
}
