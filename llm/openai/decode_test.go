package openai_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/openai"
)

// rawProvider answers every call in memory with status, body and headers.
func rawProvider(status int, body string, hdr http.Header) *openai.Provider {
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		h := hdr.Clone()
		if h == nil {
			h = http.Header{}
		}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	})
	return openai.New(openai.Config{Endpoint: llm.Endpoint{BaseURL: "http://fake.invalid/v1", APIKey: "k", HTTPClient: &http.Client{Transport: rt}}})
}

// frames joins chunk payloads as data frames.
func frames(payloads ...string) string {
	var b strings.Builder
	for _, p := range payloads {
		b.WriteString("data: ")
		b.WriteString(p)
		b.WriteString("\n\n")
	}
	return b.String()
}

const finishTools = `{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`

func TestDecodeEdges(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		body  string
		check func(t *testing.T, r llm.Result)
	}{
		{"interleaved tool calls", frames(
			`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":""}}]}}]}`,
			`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"g","arguments":"{\"y\""}}]}}]}`,
			`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\":1"}}]}}]}`,
			`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":2}"}},{"index":0,"function":{"arguments":"}"}}]}}]}`,
			finishTools, "[DONE]"),
			func(t *testing.T, r llm.Result) {
				want := []wantTool{{"call_a", "f", `{"x":1}`}, {"call_b", "g", `{"y":2}`}}
				if got := toolsOf(r.Message); !equalTools(got, want) || r.Outcome.StopReason != llm.StopToolUse {
					t.Fatalf("tools %v, stop %q", got, r.Outcome.StopReason)
				}
			}},
		{"lone call numbered -1, id and name late", frames(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":-1,"function":{"arguments":"{\"q\":"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":-1,"id":"call_late","function":{"name":"search","arguments":"\"go\"}"}}]}}]}`,
			finishTools),
			func(t *testing.T, r llm.Result) {
				if got := toolsOf(r.Message); !equalTools(got, []wantTool{{"call_late", "search", `{"q":"go"}`}}) {
					t.Fatalf("tools %v", got)
				}
			}},
		{"call without an id gets one", frames(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{}"}}]}}]}`, finishTools, "[DONE]"),
			func(t *testing.T, r llm.Result) {
				tu := r.Message.ToolUses()
				if len(tu) != 1 || !strings.HasPrefix(tu[0].ToolUseID, "call_") || len(tu[0].ToolUseID) < 10 {
					t.Fatalf("tools %+v", tu)
				}
			}},
		{"done without finish_reason", frames(`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`, "[DONE]"),
			func(t *testing.T, r llm.Result) {
				if r.Outcome.Status != llm.StatusCompleted || r.Outcome.StopReason != llm.StopEndTurn || r.Message.Text() != "hi" {
					t.Fatalf("%+v", r)
				}
			}},
		{"clean end without finish_reason is a cut", frames(`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`),
			func(t *testing.T, r llm.Result) {
				if r.Outcome.Status != llm.StatusTimeout || errOf(t, r.Outcome).Category != llm.CategoryNetwork || r.Message.Text() != "hi" {
					t.Fatalf("%+v", r.Outcome)
				}
			}},
		{"end mid-frame after finish_reason is complete", frames(`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`) + `data: {"choices":[],"usa`,
			func(t *testing.T, r llm.Result) {
				if r.Outcome.Status != llm.StatusCompleted || r.Message.Text() != "hi" {
					t.Fatalf("%+v", r.Outcome)
				}
			}},
		{"event names, comments, CRLF and empty data are ignored",
			": keep-alive\r\n\r\nevent: chunk\r\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\r\n\r\ndata:\r\n\r\n" +
				"retry: 10\r\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"},\"finish_reason\":\"stop\"}]}\r\n\r\ndata: [DONE]\r\n\r\n",
			func(t *testing.T, r llm.Result) {
				if r.Message.Text() != "ab" || r.Outcome.Status != llm.StatusCompleted {
					t.Fatalf("%+v", r)
				}
			}},
		{"both reasoning fields count once", frames(
			`{"choices":[{"index":0,"delta":{"reasoning_content":"think","reasoning":"think"}}]}`,
			`{"choices":[{"index":0,"delta":{"content":"done"},"finish_reason":"stop"}]}`),
			func(t *testing.T, r llm.Result) {
				th, f := thinkingOf(r.Message)
				if th != "think" || f != "reasoning_content" || r.Message.Text() != "done" {
					t.Fatalf("%+v", r.Message)
				}
			}},
		{"usage beside finish and repeated: the last wins; deepseek cache field", frames(
			`{"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":7,"prompt_cache_hit_tokens":20}}`, "[DONE]"),
			func(t *testing.T, r llm.Result) {
				if r.Usage != (llm.Usage{InputTokens: 30, CacheReadTokens: 20, OutputTokens: 7}) {
					t.Fatalf("usage %+v", r.Usage)
				}
			}},
		{"other choices are ignored", frames(
			`{"choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"},{"index":1,"delta":{},"finish_reason":"length"}]}`),
			func(t *testing.T, r llm.Result) {
				if r.Message.Text() != "mine" || r.Outcome.StopReason != llm.StopEndTurn {
					t.Fatalf("%+v", r)
				}
			}},
		{"text after a tool call opens a new block", frames(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"content":"and more"}}]}`, finishTools),
			func(t *testing.T, r llm.Result) {
				if len(r.Message.Content) != 2 || r.Message.Content[1].Text != "and more" {
					t.Fatalf("%+v", r.Message)
				}
			}},
		{"unfinished tool arguments are malformed", frames(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{\"a\":"}}]}}]}`, finishTools, "[DONE]"),
			func(t *testing.T, r llm.Result) {
				if r.Outcome.Status != llm.StatusMalformed || r.Outcome.StopReason != llm.StopToolUse {
					t.Fatalf("%+v", r.Outcome)
				}
			}},
		{"chunk of the wrong shape is malformed", frames(`{"choices":{"index":0}}`),
			func(t *testing.T, r llm.Result) {
				if errOf(t, r.Outcome).Category != llm.CategoryMalformed {
					t.Fatalf("%+v", r.Outcome)
				}
			}},
		{"bare error line", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n{\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n",
			func(t *testing.T, r llm.Result) {
				e := errOf(t, r.Outcome)
				if e.Category != llm.CategoryServer || e.StatusCode != 200 || e.Message != "boom" || r.Message.Text() != "a" {
					t.Fatalf("%+v", e)
				}
			}},
		{"error frame as a string", frames(`{"error":"model runner crashed"}`),
			func(t *testing.T, r llm.Result) {
				e := errOf(t, r.Outcome)
				if e.Category != llm.CategoryServer || e.Message != "model runner crashed" {
					t.Fatalf("%+v", e)
				}
			}},
		{"error frame with a numeric code", frames(`{"error":{"message":"slow down","code":429}}`),
			func(t *testing.T, r llm.Result) {
				if e := errOf(t, r.Outcome); e.Category != llm.CategoryRateLimit || e.StatusCode != 200 {
					t.Fatalf("%+v", e)
				}
			}},
		{"error frame for the context length", frames(`{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8000 in the messages, 1000 in the completion).","type":"invalid_request_error","code":"context_length_exceeded"}}`),
			func(t *testing.T, r llm.Result) {
				e := errOf(t, r.Outcome)
				if e.Category != llm.CategoryPromptTooLong || e.TokenGap != 808 || e.Type != "context_length_exceeded" {
					t.Fatalf("%+v", e)
				}
			}},
		{"error frame with an unknown type", frames(`{"error":{"message":"weird","type":"mystery"}}`),
			func(t *testing.T, r llm.Result) {
				if e := errOf(t, r.Outcome); e.Category != llm.CategoryServer || e.Type != "mystery" {
					t.Fatalf("%+v", e)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.check(t, stream(t, rawProvider(200, tc.body, http.Header{"Content-Type": {"text/event-stream"}}), t.Context(), basicRequest()))
		})
	}
}

func TestNotStreamed(t *testing.T) {
	t.Parallel()
	json := http.Header{"Content-Type": {"application/json"}}
	r := stream(t, rawProvider(200, `{"error":{"message":"model is loading","type":"server_error"}}`, json), t.Context(), basicRequest())
	if e := errOf(t, r.Outcome); e.Category != llm.CategoryServer || e.Message != "model is loading" || e.StatusCode != 200 {
		t.Fatalf("%+v", e)
	}
	r = stream(t, rawProvider(200, `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`, json), t.Context(), basicRequest())
	if e := errOf(t, r.Outcome); e.Category != llm.CategoryMalformed || r.Outcome.Status != llm.StatusMalformed {
		t.Fatalf("%+v", e)
	}
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status int
		body   string
		cat    llm.Category
		typ    string
		msg    string
		gap    int
	}{
		{"html from a proxy", 502, "<html><body>Bad Gateway</body></html>", llm.CategoryServer, "", "Bad Gateway", 0},
		{"empty body", 500, "", llm.CategoryServer, "", "Internal Server Error", 0},
		{"ollama string error", 404, `{"error":"model \"llama9\" not found, try pulling it first"}`, llm.CategoryNotFound, "", "pulling", 0},
		{"ollama typed error", 400, `{"error":{"message":"invalid tool","type":"invalid_request_error","param":null,"code":null}}`, llm.CategoryBadRequest, "invalid_request_error", "invalid tool", 0},
		{"vllm top-level error", 400, `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens","type":"BadRequestError","param":null,"code":400}`,
			llm.CategoryPromptTooLong, "BadRequestError", "maximum context", 904},
		{"404 for an unknown route keeps not_found", 404, `{"error":{"message":"Unknown request URL","type":"invalid_request_error","param":null,"code":null}}`, llm.CategoryNotFound, "invalid_request_error", "Unknown", 0},
		{"403 with an invalid key", 403, `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`, llm.CategoryAuth, "invalid_api_key", "bad key", 0},
		{"context length without a code", 400, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":null}}`,
			llm.CategoryPromptTooLong, "invalid_request_error", "maximum context", 2000},
		{"413", 413, `{"error":{"message":"Request too large","type":"invalid_request_error","code":null}}`, llm.CategoryPromptTooLong, "invalid_request_error", "too large", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := stream(t, rawProvider(tc.status, tc.body, http.Header{"X-Request-Id": {"req_1"}}), t.Context(), basicRequest())
			e := errOf(t, r.Outcome)
			if e.Category != tc.cat || e.Type != tc.typ || e.StatusCode != tc.status || !strings.Contains(e.Message, tc.msg) ||
				e.TokenGap != tc.gap || e.RequestID != "req_1" || e.Hint == "" {
				t.Fatalf("%+v", e)
			}
		})
	}
}
