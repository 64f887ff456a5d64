package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/llmtest"
)

func TestMaxTokensAndThinking(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		defaultMax int
		maxTokens  int
		level      llm.ThinkingLevel
		wantMax    int
		wantBudget int // 0: no thinking field
	}{
		{name: "default", wantMax: 8192},
		{name: "explicit", maxTokens: 100, wantMax: 100},
		{name: "config default", defaultMax: 2000, wantMax: 2000},
		{name: "none level", level: llm.ThinkingNone, maxTokens: 50, wantMax: 50},
		{name: "low fits", level: llm.ThinkingLow, wantMax: 8192, wantBudget: 2048},
		{name: "medium equal to max is raised", level: llm.ThinkingMedium, wantMax: 8192 + 8192, wantBudget: 8192},
		{name: "high over explicit max is raised", level: llm.ThinkingHigh, maxTokens: 4096, wantMax: 16384 + 8192, wantBudget: 16384},
		{name: "xhigh under explicit max", level: llm.ThinkingXHigh, maxTokens: 64000, wantMax: 64000, wantBudget: 32768},
		{name: "raised by the config default", defaultMax: 1000, level: llm.ThinkingLow, wantMax: 2048 + 1000, wantBudget: 2048},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, p := fakeProvider(t, func(c *anthropic.Config) { c.DefaultMaxTokens = tc.defaultMax })
			srv.Push(llmtest.Text("ok"))
			req := userReq()
			req.MaxTokens, req.Thinking = tc.maxTokens, tc.level
			run(t, context.Background(), p, req)
			var body struct {
				MaxTokens int `json:"max_tokens"`
				Thinking  *struct {
					Type         string `json:"type"`
					BudgetTokens int    `json:"budget_tokens"`
				} `json:"thinking"`
			}
			if err := json.Unmarshal(srv.LastRequest().Body, &body); err != nil {
				t.Fatal(err)
			}
			if body.MaxTokens != tc.wantMax {
				t.Errorf("max_tokens = %d, want %d", body.MaxTokens, tc.wantMax)
			}
			switch {
			case tc.wantBudget == 0 && body.Thinking != nil:
				t.Errorf("thinking = %+v, want none", *body.Thinking)
			case tc.wantBudget != 0 && (body.Thinking == nil || body.Thinking.Type != "enabled" || body.Thinking.BudgetTokens != tc.wantBudget):
				t.Errorf("thinking = %+v, want enabled %d", body.Thinking, tc.wantBudget)
			case body.Thinking != nil && !(body.Thinking.BudgetTokens >= 1024 && body.Thinking.BudgetTokens < body.MaxTokens):
				t.Errorf("budget %d breaks 1024 <= budget < max_tokens %d", body.Thinking.BudgetTokens, body.MaxTokens)
			}
		})
	}
}

func TestForeignThinkingDropped(t *testing.T) {
	t.Parallel()
	srv, p := fakeProvider(t, nil)
	srv.Push(llmtest.Text("ok"))
	req := &llm.Request{Model: "m", Messages: []llm.Message{
		llm.UserText("q"),
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.Thinking("openai reasoning", map[string]string{"openai.reasoning": "x"}), llm.Text("a")}},
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.Thinking("unsigned", nil)}},
		llm.UserText("q2"),
	}}
	run(t, context.Background(), p, req)
	var body struct {
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(srv.LastRequest().Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Messages) != 3 {
		t.Fatalf("%d messages sent, want 3 (the thinking-only one dropped): %s", len(body.Messages), srv.LastRequest().Body)
	}
	if c := body.Messages[1].Content; len(c) != 1 || c[0]["type"] != "text" {
		t.Errorf("assistant content = %v, want the text block only", c)
	}
}

func TestBadToolInput(t *testing.T) {
	t.Parallel()
	srv, p := fakeProvider(t, nil)
	req := &llm.Request{Model: "m", Messages: []llm.Message{
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUse("t1", "x", json.RawMessage(`{"a":`))}},
	}}
	fr := run(t, context.Background(), p, req)
	if fr.Result.Outcome.Status != llm.StatusFailed || fr.Err.Category != llm.CategoryBadRequest {
		t.Fatalf("outcome = %+v", fr.Result.Outcome)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent for an unencodable conversation", n)
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  anthropic.Config
		want map[string]string // "" means absent
	}{
		{name: "defaults", cfg: anthropic.Config{Endpoint: llm.Endpoint{APIKey: "sk-ant-1"}},
			want: map[string]string{"X-Api-Key": "sk-ant-1", "Authorization": "", "Anthropic-Version": "2023-06-01",
				"Anthropic-Beta": "", "Content-Type": "application/json"}},
		{name: "bearer", cfg: anthropic.Config{Endpoint: llm.Endpoint{APIKey: "tok"}, BearerAuth: true},
			want: map[string]string{"X-Api-Key": "", "Authorization": "Bearer tok"}},
		{name: "version and betas", cfg: anthropic.Config{Endpoint: llm.Endpoint{APIKey: "k"}, Version: "2026-10-21",
			Beta: []string{"interleaved-thinking-2025-05-14", "context-1m-2025-08-07"}},
			want: map[string]string{"Anthropic-Version": "2026-10-21", "Anthropic-Beta": "interleaved-thinking-2025-05-14,context-1m-2025-08-07"}},
		{name: "endpoint headers", cfg: anthropic.Config{Endpoint: llm.Endpoint{APIKey: "k",
			Headers: http.Header{"X-Gateway": {"weft"}, "anthropic-beta": {"from-endpoint"}}}, Beta: []string{"from-config"}},
			want: map[string]string{"X-Gateway": "weft", "Anthropic-Beta": "from-endpoint", "X-Api-Key": "k"}},
		{name: "no key", cfg: anthropic.Config{},
			want: map[string]string{"X-Api-Key": "", "Authorization": ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewAnthropic(t)
			srv.Push(llmtest.Text("ok"))
			tc.cfg.BaseURL = srv.URL + "/" // a trailing slash is tolerated
			fr := run(t, context.Background(), anthropic.New(tc.cfg), userReq())
			if fr.Result.Outcome.Status != llm.StatusCompleted {
				t.Fatalf("outcome = %+v", fr.Result.Outcome)
			}
			got := srv.LastRequest()
			if got.Path != "/v1/messages" || got.Method != http.MethodPost {
				t.Errorf("%s %s, want POST /v1/messages", got.Method, got.Path)
			}
			for k, v := range tc.want {
				if g := got.Header.Get(k); g != v {
					t.Errorf("%s = %q, want %q", k, g, v)
				}
			}
		})
	}
}

func TestKeyPool(t *testing.T) {
	t.Parallel()
	t.Run("429 cools the key", func(t *testing.T) {
		t.Parallel()
		pool := llm.NewKeyPool("key-a", "key-b")
		srv, p := fakeProvider(t, func(c *anthropic.Config) { c.APIKey = ""; c.Keys = pool })
		srv.Push(llmtest.Script{Status: 429, RetryAfter: time.Minute}, llmtest.Text("ok"), llmtest.Text("ok"))
		var used []string
		for range 3 {
			run(t, context.Background(), p, userReq())
			used = append(used, srv.LastRequest().Header.Get("X-Api-Key"))
		}
		if used[0] != "key-a" || used[1] != "key-b" || used[2] != "key-b" {
			t.Errorf("keys used = %v, want key-a then key-b twice (key-a cooling)", used)
		}
		h := pool.Health()
		if h[0].State != llm.KeyCooling || h[1].State != llm.KeyOK {
			t.Errorf("health = %+v", h)
		}
		if d := time.Until(h[0].CoolUntil); d < 50*time.Second || d > time.Minute {
			t.Errorf("cooling for %v, want the server's minute", d)
		}
	})
	t.Run("401 retires the key", func(t *testing.T) {
		t.Parallel()
		pool := llm.NewKeyPool("key-a", "key-b")
		srv, p := fakeProvider(t, func(c *anthropic.Config) { c.APIKey = ""; c.Keys = pool; c.BearerAuth = true })
		srv.Push(llmtest.Script{Status: 401}, llmtest.Text("ok"), llmtest.Text("ok"))
		var used []string
		for range 3 {
			run(t, context.Background(), p, userReq())
			used = append(used, srv.LastRequest().Header.Get("Authorization"))
		}
		if used[0] != "Bearer key-a" || used[1] != "Bearer key-b" || used[2] != "Bearer key-b" {
			t.Errorf("keys used = %v", used)
		}
		if h := pool.Health(); h[0].State != llm.KeyDead || h[1].State != llm.KeyOK {
			t.Errorf("health = %+v", h)
		}
	})
	t.Run("no usable key", func(t *testing.T) {
		t.Parallel()
		pool := llm.NewKeyPool("key-a")
		srv, p := fakeProvider(t, func(c *anthropic.Config) { c.Keys = pool })
		srv.Push(llmtest.Script{Status: 403})
		run(t, context.Background(), p, userReq())
		fr := run(t, context.Background(), p, userReq())
		if fr.Result.Outcome.Status != llm.StatusAuth || len(srv.Requests()) != 1 {
			t.Errorf("outcome = %+v after %d requests", fr.Result.Outcome, len(srv.Requests()))
		}
	})
}

// TestCacheBreakpoints pins where the provider puts cache_control: the
// elements of the prompt (tools, system blocks, then each message's blocks,
// in that order) that carry a marker.
func TestCacheBreakpoints(t *testing.T) {
	t.Parallel()
	tools := []llm.ToolSpec{{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)}, {Name: "b", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	toolTurn := []llm.Message{
		llm.UserText("first"),
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUse("t1", "a", nil)}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("t1", false, llm.Text("r1"))}},
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUse("t2", "b", nil), llm.ToolUse("t3", "b", nil)}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("t2", false, llm.Text("r2")), llm.ToolResult("t3", false, llm.Text("r3"))}},
	}
	tests := []struct {
		name  string
		cfg   func(*anthropic.Config)
		req   llm.Request
		marks []string // the marked elements, as "tools[i]", "system[i]" or "messages[i][j]"
	}{
		{name: "tools, system, the last two user turns",
			req:   llm.Request{Model: "m", Tools: tools, System: []llm.Block{llm.Text("one"), llm.Text("two")}, Messages: toolTurn},
			marks: []string{"tools[1]", "system[1]", "messages[2][0]", "messages[4][1]"}},
		{name: "no tools or system: the user turns only",
			req: llm.Request{Model: "m", Messages: toolTurn}, marks: []string{"messages[2][0]", "messages[4][1]"}},
		{name: "one user turn",
			req: llm.Request{Model: "m", Tools: tools, Messages: []llm.Message{llm.UserText("hi")}}, marks: []string{"tools[1]", "messages[0][0]"}},
		{name: "an assistant prefill last: the user turns before it",
			req: llm.Request{Model: "m", Messages: append(append([]llm.Message(nil), toolTurn...),
				llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("{")}})},
			marks: []string{"messages[2][0]", "messages[4][1]"}},
		{name: "an empty trailing text block is skipped",
			req:   llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.Text("hi"), llm.Text("")}}}},
			marks: []string{"messages[0][0]"}},
		{name: "the caller's own hints replace the automatic ones",
			req:   llm.Request{Model: "m", Tools: tools, System: []llm.Block{{Type: llm.BlockText, Text: "s", CacheHint: true}}, Messages: toolTurn},
			marks: []string{"system[0]"}},
		{name: "caching off in the request",
			req:   llm.Request{Model: "m", Tools: tools, Cache: llm.CacheOff, System: []llm.Block{{Type: llm.BlockText, Text: "s", CacheHint: true}}, Messages: toolTurn},
			marks: nil},
		{name: "caching off in the config", cfg: func(c *anthropic.Config) { c.NoPromptCache = true },
			req: llm.Request{Model: "m", Tools: tools, System: llm.SystemText("s"), Messages: toolTurn}, marks: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, p := fakeProvider(t, tc.cfg)
			srv.Push(llmtest.Text("ok"))
			run(t, context.Background(), p, &tc.req)
			var body struct {
				Tools    []map[string]any `json:"tools"`
				System   []map[string]any `json:"system"`
				Messages []struct {
					Content []map[string]any `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(srv.LastRequest().Body, &body); err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, tl := range body.Tools {
				if tl["cache_control"] != nil {
					got = append(got, fmt.Sprintf("tools[%d]", i))
				}
			}
			for i, b := range body.System {
				if b["cache_control"] != nil {
					got = append(got, fmt.Sprintf("system[%d]", i))
				}
			}
			for i, m := range body.Messages {
				for j, b := range m.Content {
					if b["cache_control"] != nil {
						got = append(got, fmt.Sprintf("messages[%d][%d]", i, j))
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.marks) || len(got) > anthropic.MaxBreakpoints {
				t.Fatalf("breakpoints %v, want %v", got, tc.marks)
			}
		})
	}
}
