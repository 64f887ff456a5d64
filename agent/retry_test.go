package agent_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/gemini"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/openai"
)

// wireProvider is a real provider client and the loopback fake of its
// protocol.
type wireProvider struct {
	name string
	fake func(t *testing.T) *llmtest.Server
	prov func(url string) llm.Provider
	// tooLong is the provider's prompt-too-long error, in its real format.
	tooLong llmtest.Script
	gap     int
}

func wireProviders() []wireProvider {
	return []wireProvider{
		{
			name: "anthropic",
			fake: func(t *testing.T) *llmtest.Server { return llmtest.NewAnthropic(t) },
			prov: func(url string) llm.Provider {
				return anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: url, APIKey: "k"}})
			},
			tooLong: llmtest.Script{Status: 400, ErrorMessage: "prompt is too long: 208310 tokens > 200000 maximum"},
			gap:     8310,
		},
		{
			name: "openai",
			fake: func(t *testing.T) *llmtest.Server { return llmtest.NewOpenAI(t) },
			prov: func(url string) llm.Provider {
				return openai.New(openai.Config{Endpoint: llm.Endpoint{BaseURL: url + "/v1", APIKey: "k"}})
			},
			tooLong: llmtest.Script{Status: 400, ErrorType: "context_length_exceeded",
				ErrorMessage: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages."},
			gap: 2000,
		},
		{
			name: "gemini",
			fake: func(t *testing.T) *llmtest.Server { return llmtest.NewGemini(t) },
			prov: func(url string) llm.Provider {
				return gemini.New(gemini.Config{Endpoint: llm.Endpoint{BaseURL: url, APIKey: "k"}})
			},
			tooLong: llmtest.Script{Status: 400, ErrorType: "INVALID_ARGUMENT",
				ErrorMessage: "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."},
			gap: 151424,
		},
	}
}

func retryAgent(t *testing.T, p llm.Provider, attempts int) *agent.Agent {
	t.Helper()
	info := llm.ModelInfo{ID: "test-model", ContextWindow: 200_000, MaxOutputTokens: 1000}
	a, err := agent.New(agent.Config{Provider: p, Model: "test-model", ModelInfo: &info,
		Retry: agent.RetryPolicy{MaxAttempts: attempts, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestRetriesByCause runs the real provider clients against their protocol
// fakes: an error a retry cannot cure costs exactly one request and ends
// the run; a transient one is retried.
func TestRetriesByCause(t *testing.T) {
	t.Parallel()
	type scenario struct {
		name     string
		scripts  func(wp wireProvider) []llmtest.Script
		requests int
		cat      llm.Category // of the error that ended the run; "" means the run succeeded
		minTime  time.Duration
	}
	scenarios := []scenario{
		{name: "bad request costs one request", requests: 1, cat: llm.CategoryBadRequest,
			scripts: func(wireProvider) []llmtest.Script {
				return []llmtest.Script{{Status: 400, ErrorMessage: "messages.0.content: Input should be a valid list"}, llmtest.Text("never")}
			}},
		{name: "unknown model is not retried", requests: 1, cat: llm.CategoryNotFound,
			scripts: func(wireProvider) []llmtest.Script { return []llmtest.Script{{Status: 404}, llmtest.Text("never")} }},
		{name: "unknown model with a server-sounding type is not retried", requests: 1, cat: llm.CategoryNotFound,
			scripts: func(wireProvider) []llmtest.Script {
				return []llmtest.Script{{Status: 404, ErrorType: "api_error", ErrorMessage: "model not found"}, llmtest.Text("never")}
			}},
		{name: "permission is not retried", requests: 1, cat: llm.CategoryPermission,
			scripts: func(wireProvider) []llmtest.Script { return []llmtest.Script{{Status: 403}, llmtest.Text("never")} }},
		{name: "auth is not retried", requests: 1, cat: llm.CategoryAuth,
			scripts: func(wireProvider) []llmtest.Script { return []llmtest.Script{{Status: 401}, llmtest.Text("never")} }},
		{name: "prompt too long is not retried", requests: 1, cat: llm.CategoryPromptTooLong,
			scripts: func(wp wireProvider) []llmtest.Script { return []llmtest.Script{wp.tooLong, llmtest.Text("never")} }},
		{name: "rate limit is retried after its Retry-After", requests: 2, minTime: 150 * time.Millisecond,
			scripts: func(wireProvider) []llmtest.Script {
				return []llmtest.Script{{Status: 429, RetryAfter: 150 * time.Millisecond}, llmtest.Text("ok")}
			}},
		{name: "overload is retried", requests: 2,
			scripts: func(wireProvider) []llmtest.Script { return []llmtest.Script{{Status: 529}, llmtest.Text("ok")} }},
		{name: "gateway timeout is retried", requests: 2,
			scripts: func(wireProvider) []llmtest.Script { return []llmtest.Script{{Status: 504}, llmtest.Text("ok")} }},
		{name: "server error is retried", requests: 2,
			scripts: func(wireProvider) []llmtest.Script { return []llmtest.Script{{Status: 500}, llmtest.Text("ok")} }},
		{name: "cut stream is retried", requests: 2,
			scripts: func(wireProvider) []llmtest.Script {
				return []llmtest.Script{{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b", "c")}, CutAfter: 2}, llmtest.Text("ok")}
			}},
		{name: "malformed stream is retried", requests: 2,
			scripts: func(wireProvider) []llmtest.Script {
				return []llmtest.Script{{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b", "c")}, MalformedAt: 2}, llmtest.Text("ok")}
			}},
	}
	for _, wp := range wireProviders() {
		for _, sc := range scenarios {
			t.Run(wp.name+"/"+sc.name, func(t *testing.T) {
				t.Parallel()
				fake := wp.fake(t)
				fake.Push(sc.scripts(wp)...)
				s := retryAgent(t, wp.prov(fake.URL), 5).NewSession()
				start := time.Now()
				c := collect(s, context.Background(), "hi")
				if n := len(fake.Requests()); n != sc.requests {
					t.Fatalf("requests = %d, want %d; events %v", n, sc.requests, c.types())
				}
				if got := len(c.of(agent.EventRetry)); got != sc.requests-1 {
					t.Fatalf("retry events = %d, want %d", got, sc.requests-1)
				}
				if time.Since(start) < sc.minTime {
					t.Fatalf("retried after %v, before the server's hint of %v", time.Since(start), sc.minTime)
				}
				d := c.done(t)
				if sc.cat == "" {
					if c.err != nil || d.StopReason != agent.StopEndTurn || d.Text != "ok" {
						t.Fatalf("run did not recover: err %v, done %+v", c.err, d)
					}
					return
				}
				var e *llm.Error
				if !errors.As(c.err, &e) || e.Category != sc.cat {
					t.Fatalf("err = %v, want category %s", c.err, sc.cat)
				}
				if d.StopReason != agent.StopError {
					t.Fatalf("done = %+v", d)
				}
				ed := c.of(agent.EventError)[0].Data.(agent.ErrorData)
				if ed.Category != string(sc.cat) {
					t.Fatalf("error event %+v, want category %s", ed, sc.cat)
				}
				if sc.cat == llm.CategoryPromptTooLong {
					// The turn ends with an error that names the gap.
					if e.TokenGap != wp.gap || !strings.Contains(ed.Error, fmt.Sprintf("%d tokens over test-model's context window of 200000 tokens", wp.gap)) {
						t.Fatalf("token gap = %d (want %d); error %q", e.TokenGap, wp.gap, ed.Error)
					}
				}
			})
		}
	}
}

// refusedURL is a loopback address on which nothing listens: a port that
// was listened on, then closed.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestRefusedConnectionIsNetworkAndRetried: a refused connection is a
// network error (not a timeout), and worth retrying.
func TestRefusedConnectionIsNetworkAndRetried(t *testing.T) {
	t.Parallel()
	for _, wp := range wireProviders() {
		t.Run(wp.name, func(t *testing.T) {
			t.Parallel()
			s := retryAgent(t, wp.prov(refusedURL(t)), 3).NewSession()
			c := collect(s, context.Background(), "hi")
			var e *llm.Error
			if !errors.As(c.err, &e) || e.Category != llm.CategoryNetwork {
				t.Fatalf("err = %v, want a network error", c.err)
			}
			retries := c.of(agent.EventRetry)
			if len(retries) != 2 {
				t.Fatalf("retries = %d, want 2 (3 attempts); events %v", len(retries), c.types())
			}
			for _, ev := range retries {
				d := ev.Data.(agent.RetryData)
				// The status stays seed 003's (a transport failure is a
				// timeout outcome); the category says what happened.
				if d.Category != string(llm.CategoryNetwork) || d.Status != string(llm.StatusTimeout) ||
					d.MaxAttempts != 3 || !strings.Contains(d.Error, "connection refused") {
					t.Fatalf("retry event %+v", d)
				}
			}
			if d := c.of(agent.EventError)[0].Data.(agent.ErrorData); d.Category != string(llm.CategoryNetwork) {
				t.Fatalf("error event %+v", d)
			}
		})
	}
}

// TestOpenAICompatibleNotFoundIsNotRetried: a compatible server (Ollama)
// answers an unknown model with a 404 whose error type is api_error; the
// status says what happened, so it is not retried as a server error.
func TestOpenAICompatibleNotFoundIsNotRetried(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	fake.Push(llmtest.Script{Status: 404, ErrorType: "api_error", ErrorMessage: `model "llama9" not found, try pulling it first`}, llmtest.Text("never"))
	p, _ := openai.ForPreset("ollama", llm.Endpoint{BaseURL: fake.URL + "/v1"})
	c := collect(retryAgent(t, p, 5).NewSession(), context.Background(), "hi")
	var e *llm.Error
	if !errors.As(c.err, &e) || e.Category != llm.CategoryNotFound {
		t.Fatalf("err = %v, want not_found", c.err)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Fatalf("requests = %d, want 1", n)
	}
}

// TestPromptTooLongGoesToTheHook: a prompt over the window is handed to
// Config.OnPromptTooLong (where compaction plugs in) and sent once more
// with the history it returns; a second refusal ends the turn.
func TestPromptTooLongGoesToTheHook(t *testing.T) {
	t.Parallel()
	tooLong := llmtest.Script{Status: 400, ErrorMessage: "prompt is too long: 210000 tokens > 200000 maximum"}
	tests := []struct {
		name     string
		scripts  []llmtest.Script
		answer   bool // the hook offers a shorter history
		requests int
		hookRuns int
		wantErr  bool
	}{
		{"shrunk history is sent once more", []llmtest.Script{tooLong, llmtest.Text("ok")}, true, 2, 1, false},
		{"still too long ends the turn", []llmtest.Script{tooLong, tooLong, llmtest.Text("never")}, true, 2, 1, true},
		{"no shorter history ends the turn", []llmtest.Script{tooLong, llmtest.Text("never")}, false, 1, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.NewAnthropic(t)
			fake.Push(tt.scripts...)
			hookRuns := 0
			info := llm.ModelInfo{ID: "test-model", ContextWindow: 200_000, MaxOutputTokens: 1000}
			a, err := agent.New(agent.Config{
				Provider: anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL, APIKey: "k"}}),
				Model:    "test-model", ModelInfo: &info,
				Retry: agent.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond},
				OnPromptTooLong: func(_ context.Context, p agent.PromptTooLong) ([]llm.Message, bool) {
					hookRuns++
					if p.Err.TokenGap != 10000 || p.ContextWindow != 200_000 || len(p.Messages) != 3 {
						t.Errorf("hook got gap %d, window %d, %d messages", p.Err.TokenGap, p.ContextWindow, len(p.Messages))
					}
					if !tt.answer {
						return nil, false
					}
					return []llm.Message{llm.UserText("[summary] earlier: we talked"), p.Messages[len(p.Messages)-1]}, true
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			s := a.ResumeSession([]llm.Message{llm.UserText("long ago"), {Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("yes")}}})
			c := collect(s, context.Background(), "now")
			if n := len(fake.Requests()); n != tt.requests || hookRuns != tt.hookRuns {
				t.Fatalf("requests = %d, hook runs = %d; want %d, %d", n, hookRuns, tt.requests, tt.hookRuns)
			}
			if (c.err != nil) != tt.wantErr {
				t.Fatalf("err = %v", c.err)
			}
			if tt.requests == 2 {
				body := string(fake.Requests()[1].Body)
				if strings.Contains(body, "long ago") || !strings.Contains(body, "[summary]") {
					t.Fatalf("second request did not carry the shorter history: %s", body)
				}
			}
		})
	}
}
