package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
)

// TestServeSystemPromptPerTurn: weft serve builds each turn's system
// prompt afresh: AGENTS.md edited between two turns reaches the second,
// the request's bundle (body or X-Weft-Bundle) and the turn's model pick
// the bundle, and --system still stands in for weft's own sections.
func TestServeSystemPromptPerTurn(t *testing.T) {
	t.Parallel()
	type turn struct {
		rules  string // AGENTS.md before the turn ("": unchanged)
		body   string
		header []string
		// scripts answer the turn's model calls; none: one "ok".
		scripts []llmtest.Script
		want    []string
		not     []string
	}
	tests := []struct {
		name  string
		args  []string
		turns []turn
	}{
		{name: "AGENTS.md edited between turns", turns: []turn{
			{rules: "RULE-ONE: use tabs", body: `{"prompt":"a"}`, want: []string{"You are weft", "RULE-ONE"}},
			{rules: "RULE-TWO: use spaces, and say so", body: `{"prompt":"b"}`, want: []string{"You are weft", "RULE-TWO"}, not: []string{"RULE-ONE"}},
		}},
		{name: "per-request bundle", turns: []turn{
			{rules: "RULE-ONE", body: `{"prompt":"a","bundle":"qwen/programming"}`, want: []string{"你是 weft", "RULE-ONE"}, not: []string{"You are weft"}},
			{body: `{"prompt":"b"}`, header: []string{"X-Weft-Bundle", "deepseek"}, want: []string{"你是 weft"}},
			{body: `{"prompt":"c","bundle":"claude"}`, header: []string{"X-Weft-Bundle", "deepseek"}, want: []string{"You are weft"}, not: []string{"你是 weft"}},
			{body: `{"prompt":"d","bundle":"nosuch/bundle"}`, want: []string{"You are weft", "RULE-ONE"}},
			{body: `{"prompt":"e"}`, want: []string{"You are weft"}},
		}},
		{name: "the turn's model picks the bundle", turns: []turn{
			{rules: "RULE-ONE", body: `{"prompt":"a","model":"openai:qwen-max"}`, want: []string{"你是 weft", "qwen-max"}},
			{body: `{"prompt":"b"}`, want: []string{"You are weft", "gpt-4.1"}},
		}},
		{name: "file memory written in an earlier turn", args: []string{"--permission-mode", "bypass"}, turns: []turn{
			{body: `{"prompt":"remember"}`, scripts: []llmtest.Script{
				toolCall("call_1", "memory_remember", map[string]any{"name": "test-command", "description": "how to run the tests",
					"type": "project", "content": "Run the tests with `make check-FACT-7731`."}),
				llmtest.Text("Noted."),
			}, not: []string{"FACT-7731"}},
			{body: `{"prompt":"and now?"}`, want: []string{"make check-FACT-7731", `name="test-command"`}},
		}},
		{name: "--system", args: []string{"--system", "You are a release bot."}, turns: []turn{
			{rules: "RULE-ONE", body: `{"prompt":"a"}`, want: []string{"You are a release bot.", "RULE-ONE"}, not: []string{"You are weft"}},
			{rules: "RULE-TWO", body: `{"prompt":"b","bundle":"qwen"}`, want: []string{"You are a release bot.", "RULE-TWO"}, not: []string{"You are weft", "你是 weft"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			fake := llmtest.NewOpenAI(t)
			env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + fake.URL + "/v1"}
			p := startServe(t, env, append([]string{"--db", filepath.Join(t.TempDir(), "weft.db"), "--workspace", ws,
				"--model", "openai:gpt-4.1"}, tt.args...)...)
			p.expect("POST", "/v1/sessions", `{"session_id":"s"}`, 201)
			for i, tu := range tt.turns {
				if tu.rules != "" {
					if err := os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte(tu.rules), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if tu.scripts == nil {
					tu.scripts = []llmtest.Script{llmtest.Text("ok")}
				}
				first := len(fake.Requests())
				fake.Push(tu.scripts...)
				resp := p.request("POST", "/v1/sessions/s/messages", tu.body, tu.header...)
				fs, err := frames(t, resp, nil)
				resp.Body.Close()
				if !errors.Is(err, io.EOF) || len(fs) == 0 || fs[len(fs)-1].event != "done" || strings.Contains(eventNames(fs), "error") {
					t.Fatalf("turn %d: %v %q %v\n%s", i+1, err, eventNames(fs), fs, p.log())
				}
				sys, _ := systemAndTools(t, fake.Requests()[first])
				for _, w := range tu.want {
					if !strings.Contains(sys, w) {
						t.Errorf("turn %d: system prompt lacks %q:\n%s", i+1, w, sys)
					}
				}
				for _, n := range tu.not {
					if strings.Contains(sys, n) {
						t.Errorf("turn %d: system prompt has %q:\n%s", i+1, n, sys)
					}
				}
			}
			bad := p.request("POST", "/v1/sessions/s/messages", `{"prompt":"x"}`, "X-Weft-Bundle", "no such")
			raw, _ := io.ReadAll(bad.Body)
			bad.Body.Close()
			if bad.StatusCode != 400 || !strings.Contains(string(raw), "X-Weft-Bundle") {
				t.Fatalf("a malformed X-Weft-Bundle: %d %s", bad.StatusCode, raw)
			}
			p.stop()
		})
	}
}
