package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/gemini"
	"github.com/weft-run/weft/llm/llmtest"
)

const model = "gemini-2.5-flash"

func newProvider(srv *llmtest.Server, mod func(*gemini.Config)) *gemini.Provider {
	cfg := gemini.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL, APIKey: "test-key"}}
	if mod != nil {
		mod(&cfg)
	}
	return gemini.New(cfg)
}

func ask(text string) *llm.Request {
	return &llm.Request{Model: model, Messages: []llm.Message{llm.UserText(text)}}
}

func llmErr(t *testing.T, o llm.Outcome) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(o.Err, &e) {
		t.Fatalf("outcome %+v has no *llm.Error", o)
	}
	return e
}

func wantCompleted(t *testing.T, r llm.Result, stop llm.StopReason) {
	t.Helper()
	if r.Outcome.Status != llm.StatusCompleted || r.Outcome.StopReason != stop {
		t.Fatalf("outcome = %+v, want completed/%s", r.Outcome, stop)
	}
}

func wantFailure(t *testing.T, r llm.Result, st llm.Status, cat llm.Category, code int) *llm.Error {
	t.Helper()
	if r.Outcome.Status != st {
		t.Fatalf("status = %s (%s), want %s", r.Outcome.Status, r.Outcome.Message, st)
	}
	e := llmErr(t, r.Outcome)
	if e.Category != cat || e.StatusCode != code || e.Provider != "gemini" {
		t.Fatalf("error = %+v, want category %s, status %d, provider gemini", e, cat, code)
	}
	return e
}

// TestStream runs the provider against the fake for every scripted case
// and checks the strict framing of each stream.
func TestStream(t *testing.T) {
	t.Parallel()
	sig1 := "c2lnbmF0dXJlLW9uZQ==" // valid base64, sent as-is
	cases := []struct {
		name  string
		sc    llmtest.Script
		cfg   func(*gemini.Config)
		check func(t *testing.T, r llm.Result)
	}{
		{
			name: "streamed text",
			sc:   llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("Hel", "lo, ", "world")}, Usage: llm.Usage{InputTokens: 12, OutputTokens: 3}},
			check: func(t *testing.T, r llm.Result) {
				wantCompleted(t, r, llm.StopEndTurn)
				if len(r.Message.Content) != 1 || r.Message.Text() != "Hello, world" {
					t.Fatalf("message = %+v", r.Message)
				}
				if r.Usage != (llm.Usage{InputTokens: 12, OutputTokens: 3}) {
					t.Fatalf("usage = %+v", r.Usage)
				}
			},
		},
		{
			name: "function call without id",
			sc:   llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("Checking."), llmtest.ToolBlock("", "get_weather", `{"ci`, `ty": "Par`, `is"}`)}},
			check: func(t *testing.T, r llm.Result) {
				wantCompleted(t, r, llm.StopToolUse)
				calls := r.Message.ToolUses()
				if len(calls) != 1 {
					t.Fatalf("calls = %+v", calls)
				}
				c := calls[0]
				if c.ToolName != "get_weather" || string(c.Input) != `{"city":"Paris"}` {
					t.Fatalf("call = %+v", c)
				}
				if !strings.HasPrefix(c.ToolUseID, "gemini_call_") || !strings.HasSuffix(c.ToolUseID, "_1_get_weather") ||
					c.MetaValue(gemini.MetaSyntheticID) != "1" {
					t.Fatalf("synthetic id = %q meta %v", c.ToolUseID, c.Meta)
				}
			},
		},
		{
			name: "function call with server id",
			sc:   llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_77", "lookup", `{}`)}},
			check: func(t *testing.T, r llm.Result) {
				wantCompleted(t, r, llm.StopToolUse)
				c := r.Message.Content[0]
				if c.ToolUseID != "call_77" || c.MetaValue(gemini.MetaSyntheticID) != "" || string(c.Input) != "{}" {
					t.Fatalf("call = %+v", c)
				}
			},
		},
		{
			name: "two parallel calls, only the first signed",
			sc: llmtest.Script{Blocks: []llmtest.Block{
				{Type: llm.BlockToolUse, Name: "read", Chunks: []string{`{"path":"a.go"}`}, Signature: sig1},
				llmtest.ToolBlock("", "read", `{"path":`, `"b.go"}`),
			}},
			check: func(t *testing.T, r llm.Result) {
				wantCompleted(t, r, llm.StopToolUse)
				calls := r.Message.ToolUses()
				if len(calls) != 2 || calls[0].ToolUseID == calls[1].ToolUseID {
					t.Fatalf("calls = %+v", calls)
				}
				if calls[0].MetaValue(gemini.MetaThoughtSignature) != sig1 || calls[1].MetaValue(gemini.MetaThoughtSignature) != "" {
					t.Fatalf("signatures: %v / %v", calls[0].Meta, calls[1].Meta)
				}
				if string(calls[1].Input) != `{"path":"b.go"}` || !strings.HasSuffix(calls[1].ToolUseID, "_2_read") {
					t.Fatalf("second call = %+v", calls[1])
				}
			},
		},
		{
			name: "thoughts with signatures",
			sc: llmtest.Script{Blocks: []llmtest.Block{
				llmtest.ThinkingBlock("not base64!", "**Plan**\n", "look it up"),
				{Type: llm.BlockText, Chunks: []string{"It is ", "sunny."}, Signature: sig1},
			}, Usage: llm.Usage{InputTokens: 40, OutputTokens: 30, ReasoningTokens: 20}},
			check: func(t *testing.T, r llm.Result) {
				wantCompleted(t, r, llm.StopEndTurn)
				if len(r.Message.Content) != 2 {
					t.Fatalf("blocks = %+v", r.Message.Content)
				}
				th, tx := r.Message.Content[0], r.Message.Content[1]
				if th.Type != llm.BlockThinking || th.Text != "**Plan**\nlook it up" ||
					th.MetaValue(gemini.MetaThoughtSignature) != "bm90IGJhc2U2NCE=" {
					t.Fatalf("thinking = %+v", th)
				}
				if tx.Text != "It is sunny." || tx.MetaValue(gemini.MetaThoughtSignature) != sig1 {
					t.Fatalf("text = %+v", tx)
				}
				if r.Usage != (llm.Usage{InputTokens: 40, OutputTokens: 30, ReasoningTokens: 20}) {
					t.Fatalf("usage = %+v", r.Usage)
				}
			},
		},
		{
			name: "signature on an empty part attaches to the block before",
			sc: llmtest.Script{Blocks: []llmtest.Block{
				llmtest.TextBlock("a", "b"),
				{Type: llm.BlockText, Signature: sig1},
			}},
			check: func(t *testing.T, r llm.Result) {
				wantCompleted(t, r, llm.StopEndTurn)
				if len(r.Message.Content) != 1 || r.Message.Content[0].Text != "ab" ||
					r.Message.Content[0].MetaValue(gemini.MetaThoughtSignature) != sig1 {
					t.Fatalf("message = %+v", r.Message.Content)
				}
			},
		},
		{
			name: "signature-only part as the whole answer",
			sc:   llmtest.Script{Blocks: []llmtest.Block{{Type: llm.BlockText, Signature: sig1}}},
			check: func(t *testing.T, r llm.Result) {
				wantCompleted(t, r, llm.StopEndTurn)
				if len(r.Message.Content) != 1 || r.Message.Content[0].Text != "" ||
					r.Message.Content[0].MetaValue(gemini.MetaThoughtSignature) != sig1 {
					t.Fatalf("message = %+v", r.Message.Content)
				}
			},
		},
		{
			name: "cumulative usage with cache hits",
			sc: llmtest.Script{Blocks: []llmtest.Block{llmtest.ThinkingBlock("", "hm"), llmtest.TextBlock("a", "b", "c")},
				Usage: llm.Usage{InputTokens: 100, CacheReadTokens: 900, OutputTokens: 70, ReasoningTokens: 50}},
			check: func(t *testing.T, r llm.Result) {
				wantCompleted(t, r, llm.StopEndTurn)
				if r.Usage != (llm.Usage{InputTokens: 100, CacheReadTokens: 900, OutputTokens: 70, ReasoningTokens: 50}) {
					t.Fatalf("usage = %+v", r.Usage)
				}
			},
		},
		{
			name: "arguments that are not an object",
			sc:   llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("", "f", `{"a":`)}},
			check: func(t *testing.T, r llm.Result) {
				// The Framer turns the completed outcome into malformed.
				if r.Outcome.Status != llm.StatusMalformed || llmErr(t, r.Outcome).Category != llm.CategoryMalformed {
					t.Fatalf("outcome = %+v", r.Outcome)
				}
			},
		},
		{
			name: "no content",
			sc:   llmtest.Script{StopReason: llm.StopMaxTokens},
			check: func(t *testing.T, r llm.Result) {
				wantCompleted(t, r, llm.StopMaxTokens)
				if len(r.Message.Content) != 0 {
					t.Fatalf("message = %+v", r.Message)
				}
			},
		},

		// Errors before the stream.
		{name: "400", sc: llmtest.Script{Status: 400}, check: func(t *testing.T, r llm.Result) {
			e := wantFailure(t, r, llm.StatusFailed, llm.CategoryBadRequest, 400)
			if e.Type != "INVALID_ARGUMENT" || e.Message != "Request contains an invalid argument." {
				t.Fatalf("error = %+v", e)
			}
		}},
		{name: "401", sc: llmtest.Script{Status: 401}, check: func(t *testing.T, r llm.Result) {
			wantFailure(t, r, llm.StatusAuth, llm.CategoryAuth, 401)
		}},
		{name: "403", sc: llmtest.Script{Status: 403}, check: func(t *testing.T, r llm.Result) {
			wantFailure(t, r, llm.StatusAuth, llm.CategoryPermission, 403)
		}},
		{name: "404", sc: llmtest.Script{Status: 404, ErrorMessage: "models/nope is not found for API version v1beta"}, check: func(t *testing.T, r llm.Result) {
			e := wantFailure(t, r, llm.StatusFailed, llm.CategoryNotFound, 404)
			if !strings.Contains(e.Message, "models/nope") {
				t.Fatalf("message = %q", e.Message)
			}
		}},
		{name: "429 with RetryInfo", sc: llmtest.Script{Status: 429, RetryAfter: 37 * time.Second}, check: func(t *testing.T, r llm.Result) {
			e := wantFailure(t, r, llm.StatusTimeout, llm.CategoryRateLimit, 429)
			if e.RetryAfter != 37*time.Second || r.Outcome.RetryAfter != 37*time.Second || e.Type != "RESOURCE_EXHAUSTED" {
				t.Fatalf("error = %+v", e)
			}
		}},
		{name: "429 with fractional RetryInfo", sc: llmtest.Script{Status: 429, RetryAfter: 1500 * time.Millisecond}, check: func(t *testing.T, r llm.Result) {
			if e := wantFailure(t, r, llm.StatusTimeout, llm.CategoryRateLimit, 429); e.RetryAfter != 1500*time.Millisecond {
				t.Fatalf("RetryAfter = %v", e.RetryAfter)
			}
		}},
		{name: "429 with retry-after header", sc: llmtest.Script{Status: 429, RetryAfter: time.Hour, Header: http.Header{"Retry-After": {"3"}}}, check: func(t *testing.T, r llm.Result) {
			if e := wantFailure(t, r, llm.StatusTimeout, llm.CategoryRateLimit, 429); e.RetryAfter != 3*time.Second {
				t.Fatalf("RetryAfter = %v, the header must win", e.RetryAfter)
			}
		}},
		{name: "500", sc: llmtest.Script{Status: 500, Header: http.Header{"X-Goog-Request-Id": {"req-9"}}}, check: func(t *testing.T, r llm.Result) {
			if e := wantFailure(t, r, llm.StatusTimeout, llm.CategoryServer, 500); e.RequestID != "req-9" || e.Type != "INTERNAL" {
				t.Fatalf("error = %+v", e)
			}
		}},
		{name: "503", sc: llmtest.Script{Status: 503}, check: func(t *testing.T, r llm.Result) {
			wantFailure(t, r, llm.StatusTimeout, llm.CategoryOverloaded, 503)
		}},
		{name: "529", sc: llmtest.Script{Status: 529}, check: func(t *testing.T, r llm.Result) {
			if e := wantFailure(t, r, llm.StatusTimeout, llm.CategoryOverloaded, 529); e.Type != "UNAVAILABLE" {
				t.Fatalf("error = %+v", e)
			}
		}},
		{name: "API key invalid", sc: llmtest.Script{Status: 400, ErrorType: "API_KEY_INVALID"}, check: func(t *testing.T, r llm.Result) {
			e := wantFailure(t, r, llm.StatusAuth, llm.CategoryAuth, 400)
			if !strings.Contains(e.Message, "API key not valid") || e.Hint == "" {
				t.Fatalf("error = %+v", e)
			}
		}},
		{name: "prompt too long", sc: llmtest.Script{Status: 400,
			ErrorMessage: "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."},
			check: func(t *testing.T, r llm.Result) {
				if e := wantFailure(t, r, llm.StatusFailed, llm.CategoryPromptTooLong, 400); e.TokenGap != 1200000-1048576 {
					t.Fatalf("TokenGap = %d", e.TokenGap)
				}
			}},

		// Faults inside the stream.
		{name: "cut mid-stream", sc: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("one ", "two ", "three")}, CutAfter: 2},
			check: func(t *testing.T, r llm.Result) {
				wantFailure(t, r, llm.StatusTimeout, llm.CategoryNetwork, 0)
				if got := r.Message.Text(); got != "one two " {
					t.Fatalf("partial text = %q", got)
				}
			}},
		{name: "connection dropped after the finish chunk", sc: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b")}, CutAfter: 2},
			check: func(t *testing.T, r llm.Result) {
				// The finishReason arrived: the message is complete.
				wantCompleted(t, r, llm.StopEndTurn)
				if r.Message.Text() != "ab" {
					t.Fatalf("text = %q", r.Message.Text())
				}
			}},
		{name: "cut inside the finish chunk", sc: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b")}, CutAfter: 1},
			check: func(t *testing.T, r llm.Result) {
				wantFailure(t, r, llm.StatusTimeout, llm.CategoryNetwork, 0)
				if r.Message.Text() != "a" {
					t.Fatalf("text = %q", r.Message.Text())
				}
			}},
		{name: "malformed JSON", sc: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b", "c")}, MalformedAt: 2},
			check: func(t *testing.T, r llm.Result) {
				wantFailure(t, r, llm.StatusMalformed, llm.CategoryMalformed, 200)
			}},
		{name: "error line in the stream", sc: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b", "c")}, ErrorAfter: 1},
			check: func(t *testing.T, r llm.Result) {
				if e := wantFailure(t, r, llm.StatusTimeout, llm.CategoryServer, 200); e.Type != "INTERNAL" {
					t.Fatalf("error = %+v", e)
				}
				if r.Message.Text() != "a" {
					t.Fatalf("partial = %q", r.Message.Text())
				}
			}},
		{name: "rate limit line in the stream", sc: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b")}, ErrorAfter: 1,
			ErrorType: "RESOURCE_EXHAUSTED", RetryAfter: 2 * time.Second},
			check: func(t *testing.T, r llm.Result) {
				if e := wantFailure(t, r, llm.StatusTimeout, llm.CategoryRateLimit, 200); e.RetryAfter != 2*time.Second {
					t.Fatalf("error = %+v", e)
				}
			}},
		{name: "overload line in the stream", sc: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b")}, ErrorAfter: 2, ErrorType: "UNAVAILABLE"},
			check: func(t *testing.T, r llm.Result) {
				wantFailure(t, r, llm.StatusTimeout, llm.CategoryOverloaded, 200)
			}},
		{name: "slow stream past the idle timeout", sc: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b")}, Delay: 300 * time.Millisecond},
			cfg: func(c *gemini.Config) { c.IdleTimeout = 50 * time.Millisecond },
			check: func(t *testing.T, r llm.Result) {
				wantFailure(t, r, llm.StatusTimeout, llm.CategoryTimeout, 0)
			}},
		{name: "slow stream within the idle timeout", sc: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b")}, Delay: 20 * time.Millisecond},
			cfg: func(c *gemini.Config) { c.IdleTimeout = 2 * time.Second },
			check: func(t *testing.T, r llm.Result) {
				wantCompleted(t, r, llm.StopEndTurn)
			}},
	}

	// Every finish reason Gemini documents.
	finishes := []struct {
		reason string
		stop   llm.StopReason
		status llm.Status
	}{
		{"STOP", llm.StopEndTurn, llm.StatusCompleted},
		{"MAX_TOKENS", llm.StopMaxTokens, llm.StatusCompleted},
		{"SAFETY", llm.StopRefusal, llm.StatusCompleted},
		{"RECITATION", llm.StopRefusal, llm.StatusCompleted},
		{"LANGUAGE", llm.StopRefusal, llm.StatusCompleted},
		{"BLOCKLIST", llm.StopRefusal, llm.StatusCompleted},
		{"PROHIBITED_CONTENT", llm.StopRefusal, llm.StatusCompleted},
		{"SPII", llm.StopRefusal, llm.StatusCompleted},
		{"IMAGE_SAFETY", llm.StopRefusal, llm.StatusCompleted},
		{"OTHER", llm.StopEndTurn, llm.StatusCompleted},
		{"FINISH_REASON_UNSPECIFIED", llm.StopEndTurn, llm.StatusCompleted},
		{"MALFORMED_FUNCTION_CALL", "", llm.StatusMalformed},
		{"UNEXPECTED_TOOL_CALL", "", llm.StatusMalformed},
		{"TOO_MANY_TOOL_CALLS", "", llm.StatusMalformed},
	}
	for _, fc := range finishes {
		cases = append(cases, struct {
			name  string
			sc    llmtest.Script
			cfg   func(*gemini.Config)
			check func(t *testing.T, r llm.Result)
		}{
			name: "finish " + fc.reason,
			sc:   llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("x")}, StopReason: llm.StopReason(fc.reason)},
			check: func(t *testing.T, r llm.Result) {
				if r.Outcome.Status != fc.status || r.Outcome.StopReason != fc.stop {
					t.Fatalf("outcome = %+v, want %s/%s", r.Outcome, fc.status, fc.stop)
				}
				if fc.status == llm.StatusMalformed {
					if e := llmErr(t, r.Outcome); e.Type != fc.reason || e.Category != llm.CategoryMalformed {
						t.Fatalf("error = %+v", e)
					}
				}
				if fc.stop == llm.StopRefusal && !strings.Contains(r.Outcome.Message, fc.reason) {
					t.Fatalf("refusal message %q does not name %s", r.Outcome.Message, fc.reason)
				}
			},
		})
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewGemini(t).Push(tc.sc)
			evs := drain(context.Background(), newProvider(srv, tc.cfg), ask("hi"))
			if err := framingError(evs); err != nil {
				t.Fatalf("framing: %v\nevents: %+v", err, evs)
			}
			tc.check(t, result(evs))
			req := srv.LastRequest()
			if req.Path != "/v1beta/models/"+model+":streamGenerateContent?alt=sse" || req.Header.Get("X-Goog-Api-Key") != "test-key" {
				t.Fatalf("request %s with key %q", req.Path, req.Header.Get("X-Goog-Api-Key"))
			}
		})
	}
}

// rawServer serves body with status for every request.
func rawServer(t *testing.T, status int, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestStreamRaw covers what the fake does not script: blocked prompts, data:
// error payloads, non-JSON error bodies, Vertex's array error envelope.
func TestStreamRaw(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status int
		body   string
		check  func(t *testing.T, r llm.Result)
	}{
		{"blocked prompt", 200,
			`data: {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT", "blockReasonMessage": "The prompt was blocked."},"usageMetadata": {"promptTokenCount": 9,"totalTokenCount": 9},"modelVersion": "gemini-2.5-flash"}` + "\r\n\r\n",
			func(t *testing.T, r llm.Result) {
				wantCompleted(t, r, llm.StopRefusal)
				if r.Outcome.Message != "prompt blocked: PROHIBITED_CONTENT: The prompt was blocked." || r.Usage.InputTokens != 9 {
					t.Fatalf("result = %+v", r)
				}
			}},
		{"data error payload", 200,
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}],\"role\":\"model\"},\"index\":0}]}\n\n" +
				`data: {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}` + "\n\n",
			func(t *testing.T, r llm.Result) {
				if e := wantFailure(t, r, llm.StatusTimeout, llm.CategoryOverloaded, 200); e.Message != "The model is overloaded." {
					t.Fatalf("error = %+v", e)
				}
			}},
		{"bare line that is not an error", 200, "[{\"candidates\": []}]\n",
			func(t *testing.T, r llm.Result) { wantFailure(t, r, llm.StatusMalformed, llm.CategoryMalformed, 200) }},
		{"clean EOF without finish reason", 200,
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}],\"role\":\"model\"},\"index\":0}]}\n\n",
			func(t *testing.T, r llm.Result) { wantFailure(t, r, llm.StatusTimeout, llm.CategoryNetwork, 0) }},
		{"empty body", 200, "",
			func(t *testing.T, r llm.Result) { wantFailure(t, r, llm.StatusTimeout, llm.CategoryNetwork, 0) }},
		{"EOF cut after the finish chunk", 200,
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}]}\n\ndata: {\"candi",
			func(t *testing.T, r llm.Result) { wantCompleted(t, r, llm.StopEndTurn) }},
		{"second candidate ignored", 200,
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]},\"index\":0},{\"content\":{\"parts\":[{\"text\":\"b\"}]},\"index\":1,\"finishReason\":\"STOP\"}]}\n\n" +
				"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"c\"}]},\"finishReason\":\"STOP\"}]}\n\n",
			func(t *testing.T, r llm.Result) {
				wantCompleted(t, r, llm.StopEndTurn)
				if r.Message.Text() != "ac" {
					t.Fatalf("text = %q", r.Message.Text())
				}
			}},
		{"text after thoughts after text makes three blocks", 200,
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"},{\"text\":\"t\",\"thought\":true},{\"text\":\"b\"},{\"text\":\"c\"}]},\"finishReason\":\"STOP\"}]}\n\n",
			func(t *testing.T, r llm.Result) {
				wantCompleted(t, r, llm.StopEndTurn)
				c := r.Message.Content
				if len(c) != 3 || c[0].Text != "a" || c[1].Type != llm.BlockThinking || c[2].Text != "bc" {
					t.Fatalf("blocks = %+v", c)
				}
			}},
		{"second signature starts a new block", 200,
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\",\"thoughtSignature\":\"AQ==\"},{\"text\":\"b\"},{\"text\":\"c\",\"thoughtSignature\":\"Ag==\"},{\"text\":\"\",\"thoughtSignature\":\"Aw==\"}]},\"finishReason\":\"STOP\"}]}\n\n",
			func(t *testing.T, r llm.Result) {
				wantCompleted(t, r, llm.StopEndTurn)
				c := r.Message.Content
				if len(c) != 3 || c[0].Text != "ab" || c[0].Meta[gemini.MetaThoughtSignature] != "AQ==" ||
					c[1].Text != "c" || c[1].Meta[gemini.MetaThoughtSignature] != "Ag==" ||
					c[2].Text != "" || c[2].Meta[gemini.MetaThoughtSignature] != "Aw==" {
					t.Fatalf("blocks = %+v", c)
				}
			}},
		{"signature-only part after a call", 200,
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\"}},{\"text\":\"\",\"thoughtSignature\":\"AQ==\"}]},\"finishReason\":\"STOP\"}]}\n\n",
			func(t *testing.T, r llm.Result) {
				wantCompleted(t, r, llm.StopToolUse)
				c := r.Message.Content
				if len(c) != 2 || c[0].Type != llm.BlockToolUse || c[0].Meta[gemini.MetaThoughtSignature] != "" ||
					c[1].Type != llm.BlockText || c[1].Text != "" || c[1].Meta[gemini.MetaThoughtSignature] != "AQ==" {
					t.Fatalf("blocks = %+v", c)
				}
			}},
		{"event and comment lines are tolerated", 200,
			": keep-alive\nevent: chunk\ndata: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]},\"finishReason\":\"STOP\"}]}\n\n",
			func(t *testing.T, r llm.Result) { wantCompleted(t, r, llm.StopEndTurn) }},
		{"non-JSON error body", 502, "<html>Bad Gateway</html>",
			func(t *testing.T, r llm.Result) {
				if e := wantFailure(t, r, llm.StatusTimeout, llm.CategoryServer, 502); e.Message != "<html>Bad Gateway</html>" {
					t.Fatalf("error = %+v", e)
				}
			}},
		{"empty error body", 404, "",
			func(t *testing.T, r llm.Result) {
				if e := wantFailure(t, r, llm.StatusFailed, llm.CategoryNotFound, 404); e.Message != "404 Not Found" {
					t.Fatalf("error = %+v", e)
				}
			}},
		{"Vertex array error envelope", 429,
			`[{"error": {"code": 429, "message": "Resource exhausted.", "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.25s"}]}}]`,
			func(t *testing.T, r llm.Result) {
				if e := wantFailure(t, r, llm.StatusTimeout, llm.CategoryRateLimit, 429); e.RetryAfter != 250*time.Millisecond || e.Message != "Resource exhausted." {
					t.Fatalf("error = %+v", e)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := gemini.New(gemini.Config{Endpoint: llm.Endpoint{BaseURL: rawServer(t, tc.status, tc.body), APIKey: "k"}})
			evs := drain(context.Background(), p, ask("hi"))
			if err := framingError(evs); err != nil {
				t.Fatalf("framing: %v", err)
			}
			tc.check(t, result(evs))
		})
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewGemini(t).Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b", "c", "d")}, Delay: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var evs []llm.Event
	for ev := range newProvider(srv, nil).Stream(ctx, ask("hi")) {
		evs = append(evs, ev)
		if ev.Kind == llm.EventBlockDelta {
			cancel()
		}
	}
	if err := framingError(evs); err != nil {
		t.Fatal(err)
	}
	r := result(evs)
	wantFailure(t, r, llm.StatusAborted, llm.CategoryCanceled, 0)
	if r.Message.Text() != "a" {
		t.Fatalf("partial = %q", r.Message.Text())
	}
}

func TestCanceledBeforeStart(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewGemini(t).Push(llmtest.Text("a"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	evs := drain(ctx, newProvider(srv, nil), ask("hi"))
	if err := framingError(evs); err != nil {
		t.Fatal(err)
	}
	wantFailure(t, result(evs), llm.StatusAborted, llm.CategoryCanceled, 0)
}

// TestBreakEarly stops ranging mid-stream: the provider must yield nothing
// more and release the connection, leaving no goroutine behind. It is not
// parallel so that the goroutine count is its own.
func TestBreakEarly(t *testing.T) {
	closed := make(chan struct{})
	srv := llmtest.NewGemini(t)
	p := newProvider(srv, nil)
	// Warm up so that the keep-alive connection's goroutines are in the
	// baseline.
	srv.Push(llmtest.Text("warm"))
	if r := llm.Collect(p.Stream(context.Background(), ask("hi"))); r.Outcome.Status != llm.StatusCompleted {
		t.Fatalf("warm-up: %+v", r.Outcome)
	}
	base := runtime.NumGoroutine()

	chunks := make([]string, 200)
	for i := range chunks {
		chunks[i] = "x"
	}
	srv.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(chunks...)}, Delay: 5 * time.Millisecond})
	n := 0
	for ev := range p.Stream(context.Background(), ask("hi")) {
		n++
		if ev.Kind == llm.EventBlockDelta {
			break
		}
	}
	if n != 2 {
		t.Fatalf("got %d events before breaking, want 2", n)
	}
	go func() {
		// The fake's handler returns once its write fails on the closed
		// connection; poll the goroutine count until then.
		defer close(closed)
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && runtime.NumGoroutine() > base {
			time.Sleep(10 * time.Millisecond)
		}
	}()
	<-closed
	if g := runtime.NumGoroutine(); g > base {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines, %d before the call:\n%s", g, base, buf[:runtime.Stack(buf, true)])
	}
}

func TestVertex(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewGemini(t).Push(llmtest.Text("hi"))
	p := gemini.New(gemini.Config{
		Endpoint:    llm.Endpoint{BaseURL: srv.URL + "/v1/projects/p1/locations/us-central1/publishers/google/", APIKey: "ignored", Keys: llm.NewKeyPool("ignored-too")},
		BearerToken: "ya29.token",
	})
	r := llm.Collect(p.Stream(context.Background(), &llm.Request{Model: "gemini-2.5-pro", Messages: []llm.Message{llm.UserText("hi")}}))
	wantCompleted(t, r, llm.StopEndTurn)
	req := srv.LastRequest()
	if req.Path != "/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse" {
		t.Fatalf("path = %s", req.Path)
	}
	if req.Header.Get("Authorization") != "Bearer ya29.token" || req.Header.Get("X-Goog-Api-Key") != "" {
		t.Fatalf("headers = %v", req.Header)
	}

	r = llm.Collect(gemini.New(gemini.Config{BearerToken: "t"}).Stream(context.Background(), ask("hi")))
	if r.Outcome.Status != llm.StatusFailed || llmErr(t, r.Outcome).Category != llm.CategoryBadRequest {
		t.Fatalf("Vertex without BaseURL: %+v", r.Outcome)
	}
}

func TestURL(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewGemini(t).Push(llmtest.Text("a"), llmtest.Text("b"))
	p := gemini.New(gemini.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL + "/", APIKey: "k",
		Headers: http.Header{"X-Extra": {"1"}}}, APIVersion: "v1"})
	if p.Name() != "gemini" {
		t.Fatalf("name = %q", p.Name())
	}
	llm.Collect(p.Stream(context.Background(), &llm.Request{Model: "models/gemini-2.0-flash", Messages: []llm.Message{llm.UserText("x")}}))
	req := srv.LastRequest()
	if req.Path != "/v1/models/gemini-2.0-flash:streamGenerateContent?alt=sse" || req.Header.Get("X-Extra") != "1" ||
		req.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("request = %s %v", req.Path, req.Header)
	}
	// No key configured: the call goes out without one.
	p = gemini.New(gemini.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL}})
	llm.Collect(p.Stream(context.Background(), ask("x")))
	if _, ok := srv.LastRequest().Header["X-Goog-Api-Key"]; ok {
		t.Fatal("empty key sent")
	}
}

func TestKeyPool(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		sc    llmtest.Script
		state llm.KeyState
	}{
		{"success", llmtest.Text("ok"), llm.KeyOK},
		{"429 cools", llmtest.Script{Status: 429, RetryAfter: time.Minute}, llm.KeyCooling},
		{"in-stream rate limit cools", llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b")}, ErrorAfter: 1, ErrorType: "RESOURCE_EXHAUSTED"}, llm.KeyCooling},
		{"401 retires", llmtest.Script{Status: 401}, llm.KeyDead},
		{"403 retires", llmtest.Script{Status: 403}, llm.KeyDead},
		{"API_KEY_INVALID retires", llmtest.Script{Status: 400, ErrorType: "API_KEY_INVALID"}, llm.KeyDead},
		{"500 leaves it", llmtest.Script{Status: 500}, llm.KeyOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewGemini(t).Push(tc.sc, llmtest.Text("next"))
			pool := llm.NewKeyPool("key-one-0000000000", "key-two-0000000000")
			p := gemini.New(gemini.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL, Keys: pool}})
			llm.Collect(p.Stream(context.Background(), ask("a")))
			h := pool.Health()
			if h[0].State != tc.state || h[1].State != llm.KeyOK || h[0].Uses != 1 {
				t.Fatalf("health = %+v", h)
			}
			if tc.state == llm.KeyCooling && time.Until(h[0].CoolUntil) < 29*time.Second {
				t.Fatalf("cool-down until %v", h[0].CoolUntil)
			}
			if got := srv.LastRequest().Header.Get("X-Goog-Api-Key"); got != "key-one-0000000000" {
				t.Fatalf("first call used %q", got)
			}
			r := llm.Collect(p.Stream(context.Background(), ask("b")))
			wantCompleted(t, r, llm.StopEndTurn)
			if got := srv.LastRequest().Header.Get("X-Goog-Api-Key"); got != "key-two-0000000000" {
				t.Fatalf("second call used %q", got)
			}
		})
	}

	// Every key dead: the pool's error ends the call before any request.
	pool := llm.NewKeyPool("only-key-000000000")
	pool.Report("only-key-000000000", &llm.Error{Category: llm.CategoryAuth})
	srv := llmtest.NewGemini(t)
	evs := drain(context.Background(), gemini.New(gemini.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL, Keys: pool}}), ask("x"))
	if err := framingError(evs); err != nil {
		t.Fatal(err)
	}
	wantFailure(t, result(evs), llm.StatusAuth, llm.CategoryAuth, 0)
	if len(srv.Requests()) != 0 {
		t.Fatal("a request went out without a key")
	}
}

func TestNilRequest(t *testing.T) {
	t.Parallel()
	evs := drain(context.Background(), gemini.New(gemini.Config{}), nil)
	if err := framingError(evs); err != nil {
		t.Fatal(err)
	}
	wantFailure(t, result(evs), llm.StatusFailed, llm.CategoryBadRequest, 0)
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	evs := drain(context.Background(), gemini.New(gemini.Config{Endpoint: llm.Endpoint{BaseURL: url, APIKey: "k"}}), ask("x"))
	if err := framingError(evs); err != nil {
		t.Fatal(err)
	}
	wantFailure(t, result(evs), llm.StatusTimeout, llm.CategoryNetwork, 0)
}

// TestBadToolInput: a stored tool call whose input is not JSON cannot be
// encoded; the call fails before anything is sent.
func TestBadToolInput(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewGemini(t)
	req := &llm.Request{Model: model, Messages: []llm.Message{
		llm.UserText("x"),
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUse("c1", "f", json.RawMessage(`{"a":`))}},
	}}
	evs := drain(context.Background(), newProvider(srv, nil), req)
	if err := framingError(evs); err != nil {
		t.Fatal(err)
	}
	wantFailure(t, result(evs), llm.StatusFailed, llm.CategoryBadRequest, 0)
	if len(srv.Requests()) != 0 {
		t.Fatal("request sent")
	}
}
