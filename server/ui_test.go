package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// uiStub stands for the web UI (package web): it answers every request it
// gets with a marker, so a test sees which side served a path.
var uiStub = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html")
	_, _ = io.WriteString(w, "UI "+r.Method+" "+r.URL.Path)
})

// TestUIServedOutsideAPI checks that Config.UI serves every path but the
// API's: /v1 and /api paths, known or not, always reach the API (its JSON
// errors), never the UI's page; and that the UI needs no token and is not
// rate limited, while the API keeps both.
func TestUIServedOutsideAPI(t *testing.T) {
	t.Parallel()
	const token = "a-long-enough-token-for-the-tests"
	a := newAPI(t, apiOptions{token: token, rateLimit: 20, config: func(c *Config) { c.UI = uiStub }})

	for _, tc := range []struct {
		path   string
		wantUI bool
		status int
	}{
		{"/", true, 200},
		{"/chat", true, 200},
		{"/runs/run_1", true, 200},
		{"/assets/app.js", true, 200},
		{"/v1x", true, 200},    // not the API's prefix
		{"/apix/y", true, 200}, // nor this
		{"/v1", false, 401},    // the API, which wants the token
		{"/v1/sessions", false, 401},
		{"/v1/no-such-thing", false, 401},
		{"/api", false, 401},
		{"/api/agent/runs", false, 401},
		{"/v1/health", false, 200}, // the API's, without a token
	} {
		resp := a.do("GET", tc.path, nil)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		gotUI := strings.HasPrefix(string(body), "UI ")
		if gotUI != tc.wantUI || resp.StatusCode != tc.status {
			t.Errorf("GET %s: status %d, UI %v (body %.80q); want status %d, UI %v", tc.path, resp.StatusCode, gotUI, body, tc.status, tc.wantUI)
		}
	}

	// With the token, an unknown API path is the API's JSON 404.
	resp := a.do("GET", "/v1/no-such-thing", nil, "Authorization", "Bearer "+token)
	decodeErr(t, resp, http.StatusNotFound, errNotFound)

	// The UI is not rate limited (limit 20 above): loading the page is many requests.
	for i := range 30 {
		resp := a.do("GET", "/assets/x.js", nil)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("UI request %d: status %d, want 200", i, resp.StatusCode)
		}
	}
}

// TestUIHostGuard checks that the UI keeps the Host check (DNS rebinding)
// of a server without a token.
func TestUIHostGuard(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{config: func(c *Config) { c.UI = uiStub }})
	req, _ := http.NewRequest("GET", a.url+"/chat", nil)
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	decodeErr(t, resp, http.StatusForbidden, errPermission)

	resp = a.do("GET", "/chat", nil)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "UI GET /chat" {
		t.Fatalf("GET /chat on loopback: %d %q", resp.StatusCode, body)
	}
}

// TestNoUI checks that without Config.UI the server answers / as before:
// the API's 404.
func TestNoUI(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	decodeErr(t, a.do("GET", "/", nil), http.StatusNotFound, errNotFound)
}
