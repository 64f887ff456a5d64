package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/llm/llmtest"
)

func TestAuth(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token-value"
	a := newAPI(t, apiOptions{token: token})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "s"}, http.StatusCreated, "Authorization", "Bearer "+token)

	tests := []struct {
		name, method, path string
		header             []string
		status             int
		typ                string
	}{
		{"missing", "GET", "/v1/tools", nil, 401, errAuthentication},
		{"wrong", "GET", "/v1/tools", []string{"Authorization", "Bearer nope"}, 403, errPermission},
		{"prefix of the token", "GET", "/v1/tools", []string{"Authorization", "Bearer " + token[:5]}, 403, errPermission},
		{"not bearer", "GET", "/v1/tools", []string{"Authorization", "Basic " + token}, 401, errAuthentication},
		{"empty bearer", "GET", "/v1/tools", []string{"Authorization", "Bearer "}, 401, errAuthentication},
		{"right", "GET", "/v1/tools", []string{"Authorization", "Bearer " + token}, 200, ""},
		{"scheme is case-insensitive", "GET", "/v1/tools", []string{"Authorization", "bearer " + token}, 200, ""},
		{"health is exempt", "GET", "/v1/health", nil, 200, ""},
		{"preflight is exempt", "OPTIONS", "/v1/tools", nil, 204, ""},
		{"token in the query of a REST call", "GET", "/v1/tools?token=" + token, nil, 401, errAuthentication},
		{"token in the query of a POST", "POST", "/v1/sessions/s/cancel?token=" + token, nil, 401, errAuthentication},
		{"wrong token in the query of an event stream", "GET", "/v1/sessions/s/events?token=nope", nil, 403, errPermission},
		{"no token on an event stream", "GET", "/v1/sessions/s/events", nil, 401, errAuthentication},
		{"unknown path still needs auth", "GET", "/v1/secret", nil, 401, errAuthentication},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := a.do(tc.method, tc.path, nil, tc.header...)
			if tc.typ != "" {
				if tc.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
				decodeErr(t, resp, tc.status, tc.typ)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}

	// EventSource cannot set headers: ?token= opens the stream.
	a.fake.Push(llmtest.Text("hi"))
	a.openSSE("POST", "/v1/sessions/s/messages", map[string]any{"prompt": "hello"}, "Authorization", "Bearer "+token).readUntilDone()
	evs := a.openSSE("GET", "/v1/sessions/s/events?after=0&token="+token, nil).readUntil("done")
	contiguous(t, evs, 1)

	// The token never reaches the logs, from the header or the query.
	logs := a.logs.String()
	if strings.Contains(logs, token) || strings.Contains(logs, token[:5]) {
		t.Fatalf("the token is in the logs:\n%s", logs)
	}
	if !strings.Contains(logs, "token=REDACTED") {
		t.Fatalf("the event stream's URL is not logged redacted:\n%s", logs)
	}
}

func TestCORS(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		configured []string
		origin     string
		want       string // Access-Control-Allow-Origin; "" = none
	}{
		{"configured origin", []string{"http://localhost:3000", "http://localhost:5173"}, "http://localhost:5173", "http://localhost:5173"},
		{"other origin", []string{"http://localhost:3000"}, "http://evil.example", ""},
		{"no configuration", nil, "http://localhost:3000", ""},
		{"any", []string{"*"}, "http://anything.example", "*"},
		{"no origin", []string{"*"}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newAPI(t, apiOptions{cors: tc.configured, token: "tok"})
			var h []string
			if tc.origin != "" {
				h = []string{"Origin", tc.origin}
			}
			// A preflight: answered by the middleware, before auth.
			pre := a.do("OPTIONS", "/v1/sessions", nil, append(h, "Access-Control-Request-Method", "POST",
				"Access-Control-Request-Headers", "content-type,authorization")...)
			pre.Body.Close()
			if pre.StatusCode != http.StatusNoContent {
				t.Fatalf("preflight status %d", pre.StatusCode)
			}
			if got := pre.Header.Get("Access-Control-Allow-Origin"); got != tc.want {
				t.Fatalf("preflight Allow-Origin %q, want %q", got, tc.want)
			}
			if tc.want != "" {
				for k, v := range map[string]string{
					"Access-Control-Allow-Methods":  "GET, POST, PUT, DELETE, OPTIONS",
					"Access-Control-Allow-Headers":  "Content-Type, Authorization",
					"Access-Control-Expose-Headers": "X-Request-ID",
					"Access-Control-Max-Age":        "3600",
				} {
					if !strings.Contains(pre.Header.Get(k), v) {
						t.Errorf("%s = %q, want it to include %q", k, pre.Header.Get(k), v)
					}
				}
			} else if pre.Header.Get("Access-Control-Allow-Methods") != "" {
				t.Errorf("CORS headers for an origin that is not configured")
			}
			// A simple request: the origin is echoed on it too.
			resp := a.do("GET", "/v1/health", nil, h...)
			resp.Body.Close()
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tc.want {
				t.Fatalf("Allow-Origin %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{rateLimit: 3})
	for i := 0; i < 3; i++ {
		a.doJSON("GET", "/v1/tools", nil, http.StatusOK)
	}
	resp := a.do("GET", "/v1/tools", nil)
	ra := resp.Header.Get("Retry-After")
	if !regexp.MustCompile(`^[1-9][0-9]*$`).MatchString(ra) {
		t.Errorf("Retry-After %q", ra)
	}
	decodeErr(t, resp, http.StatusTooManyRequests, errRateLimit)
	// Health and OPTIONS are exempt.
	a.doJSON("GET", "/v1/health", nil, http.StatusOK)
	pre := a.do("OPTIONS", "/v1/tools", nil)
	pre.Body.Close()
	if pre.StatusCode != http.StatusNoContent {
		t.Fatalf("OPTIONS over the limit: %d", pre.StatusCode)
	}
}

// TestRateLimiterWindow drives the limiter's clock: the window slides
// (requests leave it one by one), Retry-After is exact, idle clients are
// forgotten.
func TestRateLimiterWindow(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	l := newRateLimiter(3, time.Minute)
	l.now = func() time.Time { return now }
	step := func(d time.Duration) { now = now.Add(d) }

	for _, d := range []time.Duration{0, 10 * time.Second, 10 * time.Second} {
		step(d)
		if ok, _ := l.allow("a"); !ok {
			t.Fatal("denied within the limit")
		}
	}
	step(10 * time.Second) // t=30s: three requests at 0, 10, 20
	if ok, wait := l.allow("a"); ok || wait != 30*time.Second {
		t.Fatalf("allow = %v, wait %v; want denied for 30s", ok, wait)
	}
	if ok, _ := l.allow("b"); !ok {
		t.Fatal("another client is limited too")
	}
	step(30 * time.Second) // t=60s: the request at 0 left the window
	if ok, _ := l.allow("a"); !ok {
		t.Fatal("denied after the oldest request left the window")
	}
	if ok, wait := l.allow("a"); ok || wait != 10*time.Second {
		t.Fatalf("allow = %v, wait %v; want denied for 10s (until the request at 10s leaves)", ok, wait)
	}
	step(5 * time.Minute)
	l.allow("c")
	if _, ok := l.clients["b"]; ok {
		t.Fatal("an idle client was not forgotten")
	}
}

func TestRecovery(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	s := &Server{log: slog.New(slog.NewTextHandler(logs, nil))}
	tests := []struct {
		name   string
		h      http.HandlerFunc
		status int
	}{
		{"panic before writing", func(w http.ResponseWriter, r *http.Request) { panic("boom") }, 500},
		{"panic after writing", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			panic("late boom")
		}, 202},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(chain(tc.h, s.recoverer, s.logger))
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/x")
			if err != nil {
				t.Fatal(err)
			}
			if tc.status == 500 {
				msg := decodeErr(t, resp, 500, errInternal)
				if !strings.Contains(msg, resp.Header.Get("X-Request-ID")) {
					t.Errorf("message %q does not name the request", msg)
				}
			} else {
				resp.Body.Close()
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
	out := logs.String()
	for _, want := range []string{"boom", "panic serving request", "status=500", "middleware_test.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{token: "tok", rateLimit: 1})
	ids := map[string]bool{}
	for _, tc := range []struct {
		method, path string
		header       []string
	}{
		{"GET", "/v1/health", nil},
		{"GET", "/v1/tools", nil},                                       // 401 (counted by the limiter)
		{"GET", "/v1/tools", []string{"Authorization", "Bearer tok"}},   // 429
		{"GET", "/v1/nothing", []string{"Authorization", "Bearer tok"}}, // 429
		{"OPTIONS", "/v1/tools", nil},
	} {
		resp := a.do(tc.method, tc.path, nil, tc.header...)
		resp.Body.Close()
		id := resp.Header.Get("X-Request-ID")
		if !regexp.MustCompile(`^req_[0-9a-f]{16}$`).MatchString(id) || ids[id] {
			t.Fatalf("%s %s (%d): X-Request-ID %q", tc.method, tc.path, resp.StatusCode, id)
		}
		ids[id] = true
	}
	// A sane incoming id is kept; anything else is replaced.
	for in, keep := range map[string]bool{
		"trace-123.abc:1":        true,
		"bad id with spaces":     false,
		"x\u00e9":                false,
		strings.Repeat("a", 129): false,
	} {
		resp := a.do("GET", "/v1/health", nil, "X-Request-ID", in)
		resp.Body.Close()
		if got := resp.Header.Get("X-Request-ID"); (got == in) != keep || got == "" {
			t.Errorf("incoming %q -> %q", in, got)
		}
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/v1/sessions/s/events":                   "/v1/sessions/s/events",
		"/v1/sessions/s/events?token=abc&after=3": "/v1/sessions/s/events?after=3&token=REDACTED",
		"/v1/ws?TOKEN=abc":                        "/v1/ws?TOKEN=REDACTED",
		"/v1/x?a=%zz&token=abc":                   "/v1/x?[unparsable query redacted]",
	} {
		req := httptest.NewRequest("GET", "http://h"+in, nil)
		if got := redactURL(req.URL); got != want {
			t.Errorf("redactURL(%s) = %s, want %s", in, got, want)
		}
	}
}
