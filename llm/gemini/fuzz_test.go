package gemini_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/gemini"
	"github.com/weft-run/weft/llm/llmtest"
)

// bodyTransport answers every request in-process with one canned response,
// so that fuzzing exercises the whole provider without sockets.
type bodyTransport struct {
	status int
	body   []byte
}

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode: b.status,
		Status:     http.StatusText(b.status),
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(bytes.NewReader(b.body)),
		Request:    r,
	}, nil
}

// FuzzDecode feeds arbitrary bodies (as a stream, or as an error body when
// asError is set) to the provider: it must not panic, and whatever it
// yields must be strictly framed.
func FuzzDecode(f *testing.F) {
	var gp llmtest.GeminiProtocol
	req := &llmtest.Request{Path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", Body: []byte(`{}`)}
	for _, sc := range []llmtest.Script{
		llmtest.Text("Hello", " world"),
		{Blocks: []llmtest.Block{
			llmtest.ThinkingBlock("sig", "plan"),
			{Type: llm.BlockText, Chunks: []string{"ok"}, Signature: "AQID"},
			llmtest.ToolBlock("", "f", `{"a":1}`),
			llmtest.ToolBlock("id", "g", `{}`),
		}, Usage: llm.Usage{InputTokens: 3, CacheReadTokens: 2, OutputTokens: 9, ReasoningTokens: 4}},
		{Blocks: []llmtest.Block{llmtest.TextBlock("x"), {Type: llm.BlockText, Signature: "AQID"}}, StopReason: "MALFORMED_FUNCTION_CALL"},
		{StopReason: llm.StopRefusal},
	} {
		f.Add(strings.Join(gp.Frames(&sc, req), ""), false)
	}
	errSc := llmtest.Script{Status: 429, RetryAfter: 1500 * time.Millisecond, ErrorType: "RESOURCE_EXHAUSTED"}
	f.Add(string(gp.ErrorBody(&errSc, http.Header{})), true)
	keySc := llmtest.Script{Status: 400, ErrorType: "API_KEY_INVALID"}
	f.Add(string(gp.ErrorBody(&keySc, http.Header{})), true)
	f.Add(`[{"error":{"code":503,"status":"UNAVAILABLE","details":[{"@type":"x.RetryInfo","retryDelay":"-1s"}]}}]`, true)
	f.Add("<html>", true)
	f.Add("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\n\n"+gp.ErrorFrame(&llmtest.Script{ErrorType: "UNAVAILABLE"}), false)
	f.Add("data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":\"str\"}}]},\"finishReason\":\"STOP\"}]}\n\n", false)
	f.Add("data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"}}\n\n", false)
	f.Add("data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\"}},{\"text\":\"\",\"thoughtSignature\":\"AQ==\"}]},\"finishReason\":\"STOP\"}]}\n\n", false)
	f.Add("data: {\"error\":{\"code\":400,\"message\":\"The input token count (5) exceeds the maximum number of tokens allowed (4).\",\"status\":\"INVALID_ARGUMENT\"}}\n\n", false)
	f.Add(gp.MalformedFrame(), false)
	f.Add("data: {\"candidates\":[null,{\"index\":0,\"content\":{\"parts\":[null,{}]}}],\"usageMetadata\":null}\r\n\r\n", false)
	f.Add("", false)

	f.Fuzz(func(t *testing.T, body string, asError bool) {
		status := 200
		if asError {
			status = 400 + len(body)%200
		}
		p := gemini.New(gemini.Config{Endpoint: llm.Endpoint{
			BaseURL: "http://gemini.invalid", APIKey: "k", IdleTimeout: -1,
			HTTPClient: &http.Client{Transport: bodyTransport{status: status, body: []byte(body)}},
		}})
		evs := drain(context.Background(), p, ask("q"))
		if err := framingError(evs); err != nil {
			t.Fatalf("framing: %v\nbody: %q", err, body)
		}
		if asError && result(evs).Outcome.Status == llm.StatusCompleted {
			t.Fatalf("HTTP %d completed", status)
		}
	})
}
