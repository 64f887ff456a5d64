package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/llm/llmtest"
)

// TestHostGuard: without a bearer token only loopback names and IP
// addresses (and --allowed-hosts) reach the API, so that a page cannot
// reach it by DNS rebinding; with a token, only configured hosts are
// checked.
func TestHostGuard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		token   string
		allowed []string
		host    string
		ok      bool
	}{
		{"localhost", "", nil, "localhost:8080", true},
		{"localhost without a port", "", nil, "localhost", true},
		{"upper case", "", nil, "LOCALHOST:8080", true},
		{"final dot", "", nil, "localhost.:8080", true},
		{"subdomain of localhost", "", nil, "app.localhost:5173", true},
		{"127.0.0.1", "", nil, "127.0.0.1:8080", true},
		{"another loopback address", "", nil, "127.0.0.2", true},
		{"IPv6 loopback", "", nil, "[::1]:8080", true},
		{"IPv6 loopback without a port", "", nil, "[::1]", true},
		{"LAN address", "", nil, "192.168.1.5:8080", true},
		{"rebinding name", "", nil, "evil.example:8080", false},
		{"rebinding name without a port", "", nil, "evil.example", false},
		{"localhost as a subdomain of another name", "", nil, "localhost.evil.example", false},
		{"a name ending in localhost", "", nil, "evillocalhost", false},
		{"decimal address", "", nil, "2130706433:8080", false},
		{"userinfo", "", nil, "localhost@evil.example", false},
		{"configured name", "", []string{"weft.internal"}, "weft.internal:8080", true},
		{"configured name, other case and port", "", []string{"Weft.Internal:9"}, "weft.internal:8080", true},
		{"configured domain", "", []string{".example.com"}, "a.b.example.com", true},
		{"the configured domain itself", "", []string{".example.com"}, "example.com:80", true},
		{"a name merely ending like the domain", "", []string{".example.com"}, "badexample.com", false},
		{"loopback still allowed with hosts configured", "", []string{"weft.internal"}, "localhost:8080", true},
		{"any host", "", []string{"*"}, "evil.example", true},
		{"token without hosts configured", "tok", nil, "evil.example", true},
		{"token with hosts configured", "tok", []string{"weft.internal"}, "evil.example", false},
		{"token with hosts configured, a configured one", "tok", []string{"weft.internal"}, "weft.internal", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newAPI(t, apiOptions{token: tc.token, config: func(c *Config) { c.AllowedHosts = tc.allowed }})
			for _, path := range []string{"/v1/tools", "/v1/health"} {
				req, err := http.NewRequest("GET", a.url+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Host = tc.host
				if tc.token != "" {
					req.Header.Set("Authorization", "Bearer "+tc.token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				if tc.ok {
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("GET %s with Host %q: %d", path, tc.host, resp.StatusCode)
					}
					continue
				}
				if msg := decodeErr(t, resp, http.StatusForbidden, errPermission); !strings.Contains(msg, "allowed-hosts") {
					t.Fatalf("message %q does not say how to allow the host", msg)
				}
			}
		})
	}
}

// TestHostGuardWithoutHost: an HTTP/1.0 request may leave Host out; it is
// refused like any host that is not allowed.
func TestHostGuardWithoutHost(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	resp := rawHTTP(t, a.srv.Listener.Addr().String(), "GET /v1/tools HTTP/1.0\r\n\r\n")
	decodeErr(t, resp, http.StatusForbidden, errPermission)
}

// TestCrossOriginRequests: a state-changing request or WebSocket upgrade
// from a page of another origin is refused unless its origin is a CORS
// origin; programs (no Origin) and safe methods pass.
func TestCrossOriginRequests(t *testing.T) {
	t.Parallel()
	const foreign = "http://evil.example"
	tests := []struct {
		name           string
		cors           []string
		token          string
		method, path   string
		origin, fetch  string // Origin, Sec-Fetch-Site; "self" is the server's own origin
		wantStatus     int
		wantForbiddden bool
	}{
		{"foreign POST", nil, "", "POST", "/v1/sessions", foreign, "cross-site", 0, true},
		{"foreign PUT", nil, "", "PUT", "/v1/settings/permissions", foreign, "", 0, true},
		{"foreign DELETE", nil, "", "DELETE", "/v1/sessions/nope", foreign, "", 0, true},
		{"foreign PATCH", nil, "", "PATCH", "/v1/workflows/nope", foreign, "", 0, true},
		{"opaque origin", nil, "", "POST", "/v1/sessions", "null", "cross-site", 0, true},
		{"same site, other port", nil, "", "POST", "/v1/sessions", "http://127.0.0.1:1", "same-site", 0, true},
		{"no Origin, cross-site fetch", nil, "", "POST", "/v1/sessions", "", "cross-site", 0, true},
		{"foreign with a valid token", nil, "tok", "POST", "/v1/sessions", foreign, "cross-site", 0, true},
		{"own origin", nil, "", "POST", "/v1/sessions", "self", "same-origin", http.StatusCreated, false},
		{"CORS origin", []string{foreign}, "", "POST", "/v1/sessions", foreign, "cross-site", http.StatusCreated, false},
		{"CORS origin written differently", []string{"HTTP://Evil.Example:80/"}, "", "POST", "/v1/sessions", foreign, "", http.StatusCreated, false},
		{"any origin", []string{"*"}, "", "POST", "/v1/sessions", foreign, "cross-site", http.StatusCreated, false},
		{"a program (no Origin)", nil, "", "POST", "/v1/sessions", "", "", http.StatusCreated, false},
		{"no Origin, same origin", nil, "", "POST", "/v1/sessions", "", "same-origin", http.StatusCreated, false},
		{"foreign GET", nil, "", "GET", "/v1/sessions", foreign, "cross-site", http.StatusOK, false},
		{"foreign HEAD", nil, "", "HEAD", "/v1/health", foreign, "cross-site", http.StatusOK, false},
		{"foreign preflight", nil, "", "OPTIONS", "/v1/sessions", foreign, "cross-site", http.StatusNoContent, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newAPI(t, apiOptions{cors: tc.cors, token: tc.token})
			var h []string
			switch tc.origin {
			case "":
			case "self":
				h = append(h, "Origin", a.url)
			default:
				h = append(h, "Origin", tc.origin)
			}
			if tc.fetch != "" {
				h = append(h, "Sec-Fetch-Site", tc.fetch)
			}
			if tc.token != "" {
				h = append(h, "Authorization", "Bearer "+tc.token)
			}
			var body any
			if tc.method == "POST" || tc.method == "PUT" || tc.method == "PATCH" {
				body = map[string]any{}
			}
			resp := a.do(tc.method, tc.path, body, h...)
			if tc.wantForbiddden {
				if msg := decodeErr(t, resp, http.StatusForbidden, errPermission); !strings.Contains(msg, "refused") {
					t.Fatalf("message %q", msg)
				}
				return
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
		})
	}
}

// TestWebSocketUpgradeOrigin: the upgrade is refused for foreign origins
// with the error JSON, through the whole API.
func TestWebSocketUpgradeOrigin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		cors   []string
		origin string
		status int
	}{
		{"foreign", nil, "http://evil.example", http.StatusForbidden},
		{"foreign, other CORS origin", []string{"http://localhost:3000"}, "http://evil.example", http.StatusForbidden},
		{"CORS origin", []string{"http://localhost:3000"}, "http://localhost:3000", http.StatusSwitchingProtocols},
		{"IPv6 CORS origin", []string{"http://[::1]:3000"}, "http://[::1]:3000", http.StatusSwitchingProtocols},
		{"CORS origin with the default port", []string{"http://ui.example:80"}, "http://ui.example", http.StatusSwitchingProtocols},
		{"no origin", nil, "", http.StatusSwitchingProtocols},
		{"own origin", nil, "self", http.StatusSwitchingProtocols},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newAPI(t, apiOptions{cors: tc.cors})
			addr := a.srv.Listener.Addr().String()
			origin := tc.origin
			if origin == "self" {
				origin = a.url
			}
			req := "GET /v1/ws HTTP/1.1\r\nHost: " + addr + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
				"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
			if origin != "" {
				req += "Origin: " + origin + "\r\n"
			}
			resp := rawHTTP(t, addr, req+"\r\n")
			if tc.status == http.StatusForbidden {
				decodeErr(t, resp, tc.status, errPermission)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}

// TestWebPageCannotChangePermissions is the attack of issue 12: a page
// the user visits tries to open the server's permissions, by DNS
// rebinding, by a cross-site form, and by a body that is not JSON.
func TestWebPageCannotChangePermissions(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	port := a.url[strings.LastIndex(a.url, ":")+1:]
	body := `{"allow":["Bash"]}`
	attacks := []struct {
		name   string
		host   string
		header []string
		status int
	}{
		{"DNS rebinding", "evil.example:" + port, []string{"Origin", "http://evil.example:" + port, "Content-Type", "application/json"}, http.StatusForbidden},
		{"cross-site form", "", []string{"Origin", "http://evil.example", "Content-Type", "text/plain"}, http.StatusForbidden},
		{"cross-site form, urlencoded", "", []string{"Origin", "http://evil.example", "Content-Type", "application/x-www-form-urlencoded"}, http.StatusForbidden},
		{"a body that is not declared JSON", "", []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType},
	}
	allowsBash := func() bool {
		m := a.doJSON("GET", "/v1/settings/permissions", nil, http.StatusOK)
		allow, _ := m["permissions"].(map[string]any)["allow"].([]any)
		return slices.Contains(allow, any("Bash"))
	}
	for _, tc := range attacks {
		req, err := http.NewRequest("PUT", a.url+"/v1/settings/permissions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		for i := 0; i+1 < len(tc.header); i += 2 {
			req.Header.Set(tc.header[i], tc.header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		typ := errPermission
		if tc.status == http.StatusUnsupportedMediaType {
			typ = errInvalidRequest
		}
		decodeErr(t, resp, tc.status, typ)
		if allowsBash() {
			t.Fatalf("%s: the page opened Bash", tc.name)
		}
	}
	// The same request from a program goes through: the test can tell.
	a.doJSON("PUT", "/v1/settings/permissions", body, http.StatusOK)
	if !allowsBash() {
		t.Fatal("a program could not set the permissions")
	}
}

// TestJSONContentType: a JSON body must be declared as such; an empty
// body needs no type.
func TestJSONContentType(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	tests := []struct {
		name, ctype string
		body        io.Reader // nil: no body
		status      int
	}{
		{"JSON", "application/json", strings.NewReader(`{}`), http.StatusCreated},
		{"JSON with charset", "application/json; charset=utf-8", strings.NewReader(`{}`), http.StatusCreated},
		{"JSON in capitals", "Application/JSON;Charset=UTF-8", strings.NewReader(`{}`), http.StatusCreated},
		{"another charset", "application/json; charset=iso-8859-1", strings.NewReader(`{}`), http.StatusUnsupportedMediaType},
		{"text", "text/plain", strings.NewReader(`{}`), http.StatusUnsupportedMediaType},
		{"form", "application/x-www-form-urlencoded", strings.NewReader(`{}`), http.StatusUnsupportedMediaType},
		{"multipart", "multipart/form-data; boundary=x", strings.NewReader(`{}`), http.StatusUnsupportedMediaType},
		{"a JSON-like type", "application/json-patch+json", strings.NewReader(`{}`), http.StatusUnsupportedMediaType},
		{"malformed type", "application/json; charset", strings.NewReader(`{}`), http.StatusUnsupportedMediaType},
		{"no type", "", strings.NewReader(`{}`), http.StatusUnsupportedMediaType},
		{"no type, chunked", "", io.MultiReader(strings.NewReader(`{}`)), http.StatusUnsupportedMediaType},
		{"no body", "", nil, http.StatusCreated},
		{"text, empty body", "text/plain", strings.NewReader(""), http.StatusCreated},
		{"text, empty chunked body", "text/plain", io.MultiReader(), http.StatusCreated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", a.url+"/v1/sessions", tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if tc.status == http.StatusUnsupportedMediaType {
				if msg := decodeErr(t, resp, tc.status, errInvalidRequest); !strings.Contains(msg, "application/json") {
					t.Fatalf("message %q", msg)
				}
				return
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}

// TestRateLimitAfterAuth: requests that fail authentication spend a budget
// of their own, never the real client's, and past it they get 429 while
// the real client still gets through; opening event streams is never
// limited, so EventSource reconnects never meet a 429.
func TestRateLimitAfterAuth(t *testing.T) {
	t.Parallel()
	const token = "the-right-token-0123456789"
	a := newAPI(t, apiOptions{token: token, rateLimit: 3})
	auth := []string{"Authorization", "Bearer " + token}
	a.fake.Push(llmtest.Text("hi"))
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "s"}, http.StatusCreated, auth...)
	a.openSSE("POST", "/v1/sessions/s/messages", map[string]any{"prompt": "hello"}, auth...).readUntilDone()
	// Two of the real client's three requests are spent.

	// A flood without a token, then with a wrong one.
	for i := range 10 {
		resp := a.do("GET", "/v1/tools", nil)
		switch {
		case i < 3:
			decodeErr(t, resp, http.StatusUnauthorized, errAuthentication)
		default:
			if ra := resp.Header.Get("Retry-After"); ra == "" {
				t.Errorf("429 without Retry-After")
			}
			decodeErr(t, resp, http.StatusTooManyRequests, errRateLimit)
		}
	}
	decodeErr(t, a.do("GET", "/v1/tools", nil, "Authorization", "Bearer wrong"), http.StatusTooManyRequests, errRateLimit)

	// The real client still has its third request, and a valid token is
	// never refused by the failures' budget.
	a.doJSON("GET", "/v1/tools", nil, http.StatusOK, auth...)
	decodeErr(t, a.do("GET", "/v1/tools", nil, auth...), http.StatusTooManyRequests, errRateLimit)

	// Over its limit, it can still (re)open event streams, by header or
	// by ?token= as EventSource does, as often as it needs.
	for i := range 8 {
		var c *sseConn
		if i%2 == 0 {
			c = a.openSSE("GET", "/v1/sessions/s/events", nil, auth...)
		} else {
			c = a.openSSE("GET", "/v1/sessions/s/events?token="+token, nil, "Last-Event-ID", "1")
		}
		if _, err := c.next(); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		c.close()
	}
	// Health stays exempt.
	a.doJSON("GET", "/v1/health", nil, http.StatusOK)
}

// TestUnknownFields: a field the endpoint does not know is a 400 that
// names it, and nothing is done.
func TestUnknownFields(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "s"}, http.StatusCreated)
	tests := []struct {
		method, path, body, field string
	}{
		{"POST", "/v1/sessions", `{"sesion_id":"x"}`, "sesion_id"},
		{"POST", "/v1/agent/run", `{"prompt":"hi","max_turn":1}`, "max_turn"},
		{"POST", "/v1/sessions/s/messages", `{"promt":"hi"}`, "promt"},
		{"POST", "/v1/sessions/s/messages", `{"prompt":"hi","system":"x"}`, "system"},
		{"POST", "/v1/sessions/s/permissions/perm_1", `{"allow":true,"reasn":"x"}`, "reasn"},
		{"PUT", "/v1/settings/permissions", `{"alow":["Bash"]}`, "alow"},
		{"PUT", "/v1/settings/permissions", `{"permissions":{"allow":[]},"hooks":{}}`, "hooks"},
		{"PUT", "/v1/settings/permissions", `{"permissions":{"deny":[],"defualtMode":"plan"}}`, "defualtMode"},
		{"PUT", "/v1/sessions/s/permissions", `{"allow":[],"mode":"bypass"}`, "mode"},
	}
	for _, tc := range tests {
		resp := a.do(tc.method, tc.path, tc.body)
		msg := decodeErr(t, resp, http.StatusBadRequest, errInvalidRequest)
		if msg != `unknown field "`+tc.field+`"` {
			t.Errorf("%s %s %s: %q", tc.method, tc.path, tc.body, msg)
		}
	}
	if m := a.doJSON("GET", "/v1/sessions", nil, http.StatusOK); len(m["sessions"].([]any)) != 1 {
		t.Fatalf("a session was created: %v", m)
	}
	if n := len(a.fake.Requests()); n != 0 {
		t.Fatalf("%d model calls", n)
	}
}

// TestUnknownFieldsRuns: the same for seed 001's camelCase bodies, nested
// objects and the plans inside them.
func TestUnknownFieldsRuns(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	wf := a.doJSON("POST", "/v1/workflows", `{"name":"w","plan":{"steps":[{"id":"e","tool":"echo","args":{"text":"x"}}]}}`, http.StatusCreated)
	id := wf["id"].(string)
	tests := []struct {
		path, body, want string
	}{
		{"/v1/runs", `{"goal":"g","confg":{}}`, `unknown field "confg"`},
		{"/v1/runs", `{"goal":"g","config":{"autoAprove":true}}`, `unknown field "autoAprove"`},
		{"/v1/runs", `{"goal":"g","workflow":{"steps":[{"tool":"echo","dependOn":[0]}]}}`, `unknown field "dependOn"`},
		{"/api/agent/run", `{"goal":"g","file":[]}`, `unknown field "file"`},
		{"/v1/runs/batch", `{"runs":[{"goal":"a"}],"capability":"read-only"}`, `unknown field "capability"`},
		{"/v1/workflows", `{"name":"w2","plan":{"steps":[{"tool":"echo","requireApproval":true}]}}`, `plan: unknown field "requireApproval"`},
		{"/v1/workflows", `{"name":"w2","publish":true,"plan":{"steps":[]}}`, `unknown field "publish"`},
		{"/v1/workflows/" + id + "/run", `{"input":{}}`, `unknown field "input"`},
		{"/v1/workflows/" + id + "/copy", `{"title":"x"}`, `unknown field "title"`},
		{"/v1/runs/run_nope/approve", `{"step_id":"x"}`, `unknown field "step_id"`},
		{"/v1/runs/run_nope/approve", `{"steps":[{"tool":"echo","arg":{}}]}`, `the edited plan: unknown field "arg"`},
		{"/v1/runs/run_nope/rewind", `{"keep_steps":1}`, `unknown field "keep_steps"`},
		{"/v1/schedules", `{"workflowId":"` + id + `","interval":120}`, `unknown field "interval"`},
	}
	for _, tc := range tests {
		msg := decodeErr(t, a.do("POST", tc.path, tc.body), http.StatusBadRequest, errInvalidRequest)
		if msg != tc.want {
			t.Errorf("POST %s %s: %q, want %q", tc.path, tc.body, msg, tc.want)
		}
	}
	if m := a.doJSON("GET", "/v1/runs", nil, http.StatusOK); len(m["runs"].([]any)) != 0 {
		t.Fatalf("a run was started: %v", m)
	}
	if m := a.doJSON("GET", "/v1/workflows", nil, http.StatusOK); m["count"] != float64(1) {
		t.Fatalf("a workflow was saved: %v", m)
	}
}

// rawHTTP sends raw bytes on a new connection and reads one response.
func rawHTTP(t *testing.T, addr, raw string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the response to %q: %v", raw[:min(len(raw), 60)], err)
	}
	return resp
}
