package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/store/sqlite"
)

// TestListHooks: GET /v1/hooks lists the settings' and the plugins' hooks
// with what they run and whether they may, and none of their secrets: a
// secret's value in a command, credentials in a URL, environment and
// header values.
func TestListHooks(t *testing.T) {
	t.Parallel()
	const secretValue = "hunter2-Zq8vN3xLp0"
	const urlToken = "tok3n-in-the-query"
	secrets := secret.NewSet()
	if err := secrets.Set("DEPLOY_KEY", secretValue); err != nil {
		t.Fatal(err)
	}
	mgr := hook.NewManager(hook.Options{})
	if err := mgr.Register(
		hook.Def{Name: "lint", Event: hook.PreToolUse, Matcher: "Edit|Write", Command: "./lint.sh --key " + secretValue, Timeout: 5 * time.Second},
		hook.Def{Name: "notify", Event: hook.Notification, URL: "https://bot:pa55word@hooks.example/notify?token=" + urlToken + "#x",
			Headers: map[string]string{"Authorization": "Bearer " + secretValue}, Async: true},
		hook.Def{Name: "fmt", Event: hook.PostToolUse, Command: "gofmt -w", Source: "acme", Env: []string{"ACME_TOKEN=" + secretValue}},
	); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "weft.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rt, err := session.New(session.Config{Store: db, Models: scriptedResolver{llmtest.NewScripted("scripted")},
		Policy: &policy.Policy{Hooks: mgr, Secrets: secrets}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
	srv := httptest.NewServer(New(Config{Runtime: rt, RateLimit: -1}).Handler())
	t.Cleanup(srv.Close)
	a := &api{t: t, url: srv.URL}

	resp := a.do("GET", "/v1/hooks", nil)
	raw := string(readAllBody(t, resp))
	for _, leak := range []string{secretValue, urlToken, "pa55word", "Bearer"} {
		if strings.Contains(raw, leak) {
			t.Fatalf("GET /v1/hooks shows %q: %s", leak, raw)
		}
	}
	got := a.doJSON("GET", "/v1/hooks", nil, http.StatusOK)
	hooks := got["hooks"].([]any)
	if got["count"] != float64(3) || len(hooks) != 3 {
		t.Fatalf("hooks %v", got)
	}
	byName := map[string]map[string]any{}
	for _, h := range hooks {
		m := h.(map[string]any)
		byName[m["name"].(string)] = m
	}
	tests := []struct {
		name, field string
		want        any
	}{
		{"lint", "type", "command"},
		{"lint", "event", "pre_tool_use"},
		{"lint", "matcher", "Edit|Write"},
		{"lint", "timeout_ms", float64(5000)},
		{"lint", "trusted", true},
		{"notify", "type", "http"},
		{"notify", "url", "https://hooks.example/notify"},
		{"notify", "async", true},
		{"notify", "timeout_ms", float64(hook.DefaultTimeout.Milliseconds())},
		{"fmt", "command", "gofmt -w"},
		{"fmt", "plugin", "acme"},
		{"fmt", "trusted", false},
	}
	for _, tc := range tests {
		if h := byName[tc.name]; h == nil || h[tc.field] != tc.want {
			t.Errorf("%s.%s = %v, want %v (%v)", tc.name, tc.field, h[tc.field], tc.want, h)
		}
	}
	if c, _ := byName["lint"]["command"].(string); !strings.HasPrefix(c, "./lint.sh --key ") {
		t.Errorf("lint's command %q", c)
	}
	if e := byName["fmt"]["env"].([]any); len(e) != 1 || e[0] != "ACME_TOKEN" {
		t.Errorf("fmt's env %v", e)
	}
	if h := byName["notify"]["headers"].([]any); len(h) != 1 || h[0] != "Authorization" {
		t.Errorf("notify's headers %v", h)
	}
}
