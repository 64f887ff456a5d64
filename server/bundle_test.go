package server

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/prompt"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/session"
)

// systemOf is the system prompt an OpenAI chat request carried: the
// text of its system (and developer) messages.
func systemOf(t *testing.T, r llmtest.Request) string {
	t.Helper()
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("model request: %v: %s", err, r.Body)
	}
	var b strings.Builder
	for _, m := range body.Messages {
		if m.Role != "system" && m.Role != "developer" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			b.WriteString(s)
			continue
		}
		var parts []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(m.Content, &parts)
		for _, p := range parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// promptAPI is a test server whose turns build their system prompt with
// a builder over workspace ws, with a "support" bundle registered.
func promptAPI(t *testing.T, ws string) *api {
	t.Helper()
	b := prompt.New(prompt.Config{Workspace: ws, Home: t.TempDir()})
	b.Bundles().Register(prompt.KeyFor("claude", "support"), prompt.NewBundleFromFunc(
		func() []*prompt.Section {
			return []*prompt.Section{prompt.StaticSection("intro", "You are the SUPPORT-DESK assistant.")}
		}, nil))
	return newAPI(t, apiOptions{session: func(c *session.Config) { c.Prompt = b }})
}

// TestTurnBundle: the request's "bundle" (or else the X-Weft-Bundle
// header) picks the turn's system prompt, on both turn endpoints; the
// field wins over the header; a well-formed key no bundle has falls back
// to the model's bundle, as prompt.WithBundleKey does in the SDK.
func TestTurnBundle(t *testing.T) {
	t.Parallel()
	a := promptAPI(t, t.TempDir())
	a.fake.Push(llmtest.Text("baseline"))
	a.openSSE("POST", "/v1/agent/run", map[string]any{"prompt": "hi"}).readUntilDone()
	def := systemOf(t, a.fake.LastRequest())
	if !strings.Contains(def, "weft") || strings.Contains(def, "SUPPORT-DESK") {
		t.Fatalf("the default system prompt is not weft's: %q", def)
	}
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "b"}, 201)

	cases := []struct {
		name   string
		path   string
		body   map[string]any
		header []string
		// want is in the system prompt, notWant is not.
		want, notWant string
		same          bool // the prompt is exactly the default one
	}{
		{name: "field", path: "/v1/sessions/b/messages", body: map[string]any{"bundle": "claude/support"}, want: "SUPPORT-DESK"},
		{name: "header", path: "/v1/sessions/b/messages", header: []string{BundleHeader, "claude/support"}, want: "SUPPORT-DESK"},
		{name: "field wins over header", path: "/v1/sessions/b/messages", body: map[string]any{"bundle": "claude/programming"},
			header: []string{BundleHeader, "claude/support"}, notWant: "SUPPORT-DESK", same: true},
		{name: "built-in Chinese bundle", path: "/v1/sessions/b/messages", body: map[string]any{"bundle": "qwen"}, want: "你"},
		{name: "unknown key falls back", path: "/v1/sessions/b/messages", body: map[string]any{"bundle": "nosuch/thing"}, same: true},
		{name: "unknown scenario, header", path: "/v1/sessions/b/messages", header: []string{BundleHeader, "claude/warehouse"}, same: true},
		{name: "run endpoint, field", path: "/v1/agent/run", body: map[string]any{"bundle": "claude/support"}, want: "SUPPORT-DESK"},
		{name: "run endpoint, header", path: "/v1/agent/run", header: []string{BundleHeader, "Claude/Support"}, want: "SUPPORT-DESK"},
		{name: "no bundle", path: "/v1/sessions/b/messages", same: true},
	}
	for _, tc := range cases {
		body := map[string]any{"prompt": "question for " + tc.name}
		for k, v := range tc.body {
			body[k] = v
		}
		a.fake.Push(llmtest.Text("answer"))
		a.openSSE("POST", tc.path, body, tc.header...).readUntilDone()
		got := systemOf(t, a.fake.LastRequest())
		switch {
		case tc.want != "" && !strings.Contains(got, tc.want):
			t.Errorf("%s: the system prompt lacks %q: %q", tc.name, tc.want, got)
		case tc.notWant != "" && strings.Contains(got, tc.notWant):
			t.Errorf("%s: the system prompt has %q: %q", tc.name, tc.notWant, got)
		case tc.same && got != def:
			t.Errorf("%s: the system prompt is not the default one:\n%q\nwant\n%q", tc.name, got, def)
		}
	}
}

// TestTurnBundleMalformed: a bundle that is not a key is the client's
// mistake: 400 naming it and where it came from, and nothing runs.
func TestTurnBundleMalformed(t *testing.T) {
	t.Parallel()
	a := promptAPI(t, t.TempDir())
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "m"}, 201)
	cases := []struct {
		name   string
		path   string
		bundle any
		header []string
		want   string
	}{
		{name: "space", path: "/v1/sessions/m/messages", bundle: "no such", want: `bundle "no such"`},
		{name: "two slashes, header", path: "/v1/sessions/m/messages", header: []string{BundleHeader, "a/b/c"}, want: `X-Weft-Bundle "a/b/c"`},
		{name: "malformed field, good header", path: "/v1/agent/run", bundle: "qwen/../../x", header: []string{BundleHeader, "qwen"}, want: `bundle "qwen/../../x"`},
		{name: "long part", path: "/v1/agent/run", bundle: strings.Repeat("q", 65), want: "bundle"},
		{name: "only a slash", path: "/v1/agent/run", bundle: "/", want: `bundle "/"`},
		{name: "not a string", path: "/v1/agent/run", bundle: 7, want: "bundle"},
	}
	for _, tc := range cases {
		body := map[string]any{"prompt": "hi"}
		if tc.bundle != nil {
			body["bundle"] = tc.bundle
		}
		msg := decodeErr(t, a.do("POST", tc.path, body, tc.header...), http.StatusBadRequest, "invalid_request_error")
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s: error %q does not name %q", tc.name, msg, tc.want)
		}
	}
	if n := len(a.fake.Requests()); n != 0 {
		t.Fatalf("the model was called %d times for rejected requests", n)
	}
	sessions := a.doJSON("GET", "/v1/sessions", nil, 200)["sessions"].([]any)
	if len(sessions) != 1 {
		t.Fatalf("a rejected run left a session behind: %v", sessions)
	}
	// An embedder calling the service directly gets the error as well.
	if _, err := a.rt.Send(context.Background(), "m", "hi", session.TurnOptions{Bundle: "no such"}); err == nil {
		t.Fatal("Send took a malformed bundle")
	}
}

// TestTurnPromptFollowsInstructions: the system prompt is built for each
// turn, so AGENTS.md edited between two turns reaches the second one.
func TestTurnPromptFollowsInstructions(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	agents := filepath.Join(ws, "AGENTS.md")
	if err := os.WriteFile(agents, []byte("Always answer in haiku.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := promptAPI(t, ws)
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "i"}, 201)
	steps := []struct {
		rule, stale string
	}{
		{rule: "Always answer in haiku."},
		{rule: "Never use the letter zed in any answer whatsoever.", stale: "haiku"},
	}
	for i, st := range steps {
		if err := os.WriteFile(agents, []byte(st.rule+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		a.fake.Push(llmtest.Text("ok"))
		a.openSSE("POST", "/v1/sessions/i/messages", map[string]any{"prompt": "turn"}).readUntilDone()
		got := systemOf(t, a.fake.LastRequest())
		if !strings.Contains(got, st.rule) || st.stale != "" && strings.Contains(got, st.stale) {
			t.Fatalf("turn %d: the system prompt does not carry AGENTS.md as it is now (%q): %q", i+1, st.rule, got)
		}
	}
}

// TestSessionUsage: GET /v1/sessions/{id} shows what the session used:
// the tokens and cost of its turn_end events (from the cost history when
// the service keeps one, from the event log when not), the turns run and
// the last context reading; a fresh state (eviction, restart) counts the
// same from the store.
func TestSessionUsage(t *testing.T) {
	t.Parallel()
	for _, withHistory := range []bool{true, false} {
		name := "event log"
		if withHistory {
			name = "cost history"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var a *api
			opts := apiOptions{session: func(c *session.Config) {
				if withHistory {
					c.Usage = lateUsageStore{&a}
				}
			}}
			a = newAPI(t, opts)
			a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "u"}, 201)
			empty := a.doJSON("GET", "/v1/sessions/u", nil, 200)["usage"].(map[string]any)
			if empty["turns"] != 0.0 || empty["cost_usd"] != 0.0 || empty["input_tokens"] != 0.0 || empty["context"] != nil {
				t.Fatalf("a new session's usage: %v", empty)
			}

			var want session.Stats
			for i, u := range []llm.Usage{
				{InputTokens: 1200, OutputTokens: 40},
				{InputTokens: 1900, OutputTokens: 350, CacheReadTokens: 1000, CacheWriteTokens: 0},
			} {
				sc := llmtest.Text("answer")
				sc.Usage = u
				a.fake.Push(sc)
				for _, ev := range a.openSSE("POST", "/v1/sessions/u/messages", map[string]any{"prompt": "q"}).readUntilDone() {
					if ev.Event != string(agent.EventTurnEnd) {
						continue
					}
					var d agent.TurnEndData
					if err := json.Unmarshal(ev.Data, &d); err != nil {
						t.Fatal(err)
					}
					want.InputTokens += int64(d.InputTokens)
					want.OutputTokens += int64(d.OutputTokens)
					want.CacheReadTokens += int64(d.CacheReadTokens)
					want.CacheWriteTokens += int64(d.CacheWriteTokens)
					want.CostUSD += d.CostUSD
					want.Context = d.Context
				}
				want.Turns = i + 1
				if want.InputTokens == 0 || want.CostUSD == 0 || want.Context == nil {
					t.Fatalf("the turn_end events report no usage: %+v", want)
				}
				checkUsage(t, a, "u", want)
			}
			// A restarted server reads the same from the store.
			a.close()
			opts.dbPath = a.path
			a = newAPI(t, opts)
			checkUsage(t, a, "u", want)
			decodeErr(t, a.do("GET", "/v1/sessions/nope", nil), http.StatusNotFound, "not_found_error")
		})
	}
}

func checkUsage(t *testing.T, a *api, id string, want session.Stats) {
	t.Helper()
	resp := a.do("GET", "/v1/sessions/"+id, nil)
	defer resp.Body.Close()
	var got struct {
		SessionID string        `json:"session_id"`
		Usage     session.Stats `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET session: %d %v", resp.StatusCode, err)
	}
	const eps = 1e-12
	if d := got.Usage.CostUSD - want.CostUSD; d > eps || d < -eps {
		t.Fatalf("cost %v, want %v", got.Usage.CostUSD, want.CostUSD)
	}
	got.Usage.CostUSD = want.CostUSD
	if got.Usage.Context == nil || *got.Usage.Context != *want.Context {
		t.Fatalf("context %+v, want %+v", got.Usage.Context, want.Context)
	}
	got.Usage.Context = want.Context
	if got.SessionID != id || got.Usage != want {
		t.Fatalf("usage %+v, want %+v", got.Usage, want)
	}
}

// lateUsageStore is the test server's store as the session service's
// cost history, which exists once newAPI returns.
type lateUsageStore struct{ a **api }

func (l lateUsageStore) QueryUsage(ctx context.Context, q record.UsageQuery) ([]record.UsageGroup, error) {
	return (*l.a).db.QueryUsage(ctx, q)
}

func (l lateUsageStore) AppendUsage(ctx context.Context, recs ...record.UsageRecord) error {
	return (*l.a).db.AppendUsage(ctx, recs...)
}
