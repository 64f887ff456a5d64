package openai_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
)

// FuzzDecode feeds arbitrary response bodies to the stream decoder: it must
// never panic and every stream must be strictly framed.
func FuzzDecode(f *testing.F) {
	req := &llmtest.Request{Body: []byte(`{"model":"m","stream_options":{"include_usage":true}}`)}
	for _, p := range []*llmtest.OpenAIProtocol{{}, {ReasoningField: "reasoning", WholeToolCalls: true, NoDone: true}, {Refusal: true}} {
		for _, sc := range []llmtest.Script{
			{Blocks: []llmtest.Block{llmtest.ThinkingBlock("", "hm", "m"), llmtest.TextBlock("a", "b")}, Usage: llm.Usage{InputTokens: 3, CacheReadTokens: 2, OutputTokens: 4, ReasoningTokens: 1}},
			{Blocks: []llmtest.Block{llmtest.ToolBlock("c1", "f", `{"a"`, `:1}`), llmtest.ToolBlock("c2", "g", `{}`)}},
		} {
			f.Add(strings.Join(p.Frames(&sc, req), ""))
		}
		sc := llmtest.Script{ErrorType: "rate_limit_exceeded"}
		f.Add(p.ErrorFrame(&sc) + p.MalformedFrame())
	}
	f.Add(frames(`{"choices":[{"index":-1,"delta":{"tool_calls":[{"index":-1,"function":{"arguments":"{"}}]}}]}`, finishTools))
	f.Add(frames(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"function":{"name":"x"}},{"index":0,"id":"a"}]},"finish_reason":"stop"}]}`) + "data: {")
	f.Add("{\"error\":\"x\"}\n")
	f.Add("data: [DONE]\n\n")
	f.Add("event: x\nid: 1\n: c\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		p := rawProvider(200, body, http.Header{"Content-Type": {"text/event-stream"}})
		if _, err := checkFraming(drain(p.Stream(t.Context(), basicRequest()))); err != nil {
			t.Fatalf("framing: %v\nbody: %q", err, body)
		}
	})
}

// FuzzErrorBody feeds arbitrary error bodies to the HTTP error decoder.
func FuzzErrorBody(f *testing.F) {
	p := &llmtest.OpenAIProtocol{}
	for _, sc := range []llmtest.Script{{Status: 401}, {Status: 429, ErrorType: "insufficient_quota"}, {Status: 400, ErrorType: "context_length_exceeded",
		ErrorMessage: "This model's maximum context length is 10 tokens. However, your messages resulted in 12 tokens."}} {
		f.Add(uint16(sc.Status), string(p.ErrorBody(&sc, http.Header{})))
	}
	f.Add(uint16(400), `{"object":"error","message":"m","type":"BadRequestError","code":400}`)
	f.Add(uint16(404), `{"error":"nope"}`)
	f.Add(uint16(500), `{"error":{"code":{"nested":true}}}`)
	f.Fuzz(func(t *testing.T, status uint16, body string) {
		st := 400 + int(status)%200
		r, err := checkFraming(drain(rawProvider(st, body, nil).Stream(t.Context(), basicRequest())))
		if err != nil {
			t.Fatalf("framing: %v", err)
		}
		e := errOf(t, r.Outcome)
		if e.StatusCode != st || e.Category == "" || e.Message == "" || e.Hint == "" {
			t.Fatalf("status %d body %q: %+v", st, body, e)
		}
	})
}
