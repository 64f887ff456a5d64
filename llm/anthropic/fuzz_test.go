package anthropic_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/llmtest"
)

// bodyTransport answers every request with one canned response, so that
// fuzzing exercises the decoder without sockets.
type bodyTransport struct {
	status int
	body   []byte
}

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	h := http.Header{"Content-Type": {"text/event-stream"}, "Request-Id": {"req_fuzz"}}
	return &http.Response{StatusCode: b.status, Status: http.StatusText(b.status), Header: h,
		Body: io.NopCloser(bytes.NewReader(b.body)), ContentLength: -1, Request: r}, nil
}

func rendered(sc llmtest.Script) string {
	return strings.Join(llmtest.AnthropicProtocol{}.Frames(&sc, nil), "")
}

// FuzzDecode feeds arbitrary bytes to the provider as a response body. It
// must never panic, and whatever it yields must be strictly framed.
func FuzzDecode(f *testing.F) {
	full := rendered(llmtest.Script{Blocks: []llmtest.Block{
		llmtest.ThinkingBlock("c2ln", "hmm", " ok"),
		llmtest.RedactedThinkingBlock("cmVk"),
		llmtest.TextBlock("Hel", "lo"),
		llmtest.ToolBlock("toolu_1", "get", `{"a":`, `[1,2]}`),
	}, StopReason: llm.StopSequence, StopSequence: "END", Usage: llm.Usage{InputTokens: 3, OutputTokens: 9, CacheReadTokens: 2, CacheWriteTokens: 1}})
	seeds := []string{
		full,
		full[:len(full)/2],
		rendered(llmtest.Text("x")),
		rendered(llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("t", "n", `{"a"`, `:}`)}}),
		frameStart + frameText0 + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
		frameStart + llmtest.AnthropicProtocol{}.MalformedFrame(),
		frameStart + strings.ReplaceAll(frameText0, `"index":0`, `"index":-1`),
		frameStart + frameText0 + frameStop0 + frameStop0 + frameDelta + frameEnd,
		frameStart + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{\"pre\":1}}}\n\n" + frameDelta + frameEnd,
		frameStart + frameText0 + strings.ReplaceAll(frameText0, `"index":0`, `"index":1`) + frameText0[strings.Index(frameText0, "event: content_block_delta"):] + frameStop0 + frameDelta + frameEnd,
		"event: message_stop\ndata: {}\n\n",
		"data: {\"type\":\"message_stop\"}\n\n",
		`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
		"event: message_delta\ndata: {\"delta\":{\"stop_reason\":7}}\n\n",
		"\x00\xff\r\n\r\n",
		"",
	}
	for _, s := range seeds {
		f.Add([]byte(s), uint8(0))
	}
	f.Add([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`), uint8(3))
	f.Add([]byte(`<html>502</html>`), uint8(2))
	statuses := []int{200, 200, 502, 529, 429, 400}
	f.Fuzz(func(t *testing.T, body []byte, status uint8) {
		p := anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: "http://fuzz.invalid", APIKey: "k",
			HTTPClient: &http.Client{Transport: bodyTransport{status: statuses[int(status)%len(statuses)], body: body}}}})
		var evs []llm.Event
		for ev := range p.Stream(context.Background(), userReq()) {
			evs = append(evs, ev)
		}
		fr, err := checkFraming(evs)
		if err != nil {
			t.Fatalf("framing: %v%s", err, dumpEvents(evs))
		}
		if fr.Result.Outcome.Status == llm.StatusCompleted {
			if !bytes.Contains(body, []byte("message_stop")) {
				t.Fatalf("completed without a message_stop in the body")
			}
			for _, b := range fr.Message.ToolUses() {
				if !strings.HasPrefix(strings.TrimSpace(string(b.Input)), "{") {
					t.Fatalf("completed with tool input %q", b.Input)
				}
			}
		}
	})
}
