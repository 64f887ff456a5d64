package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/openai"
)

func drain(seq iter.Seq[llm.Event]) []llm.Event {
	var evs []llm.Event
	for ev := range seq {
		evs = append(evs, ev)
	}
	return evs
}

func newProvider(srv *llmtest.Server, mod func(*openai.Config)) *openai.Provider {
	cfg := openai.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL + "/v1", APIKey: "sk-test"}}
	if mod != nil {
		mod(&cfg)
	}
	return openai.New(cfg)
}

func basicRequest() *llm.Request {
	return &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{llm.UserText("Weather in Paris?")}}
}

// stream runs one call and checks its framing.
func stream(t *testing.T, p llm.Provider, ctx context.Context, req *llm.Request) llm.Result {
	t.Helper()
	res, err := checkFraming(drain(p.Stream(ctx, req)))
	if err != nil {
		t.Fatalf("framing: %v", err)
	}
	return res
}

type wantTool struct{ id, name, input string }

func toolsOf(m llm.Message) []wantTool {
	var out []wantTool
	for _, b := range m.ToolUses() {
		out = append(out, wantTool{b.ToolUseID, b.ToolName, string(b.Input)})
	}
	return out
}

func thinkingOf(m llm.Message) (text, field string) {
	for _, b := range m.Content {
		if b.Type == llm.BlockThinking {
			text += b.Text
			field = b.MetaValue(openai.MetaReasoningField)
		}
	}
	return text, field
}

func errOf(t *testing.T, o llm.Outcome) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(o.Err, &e) {
		t.Fatalf("outcome %+v carries no *llm.Error", o)
	}
	return e
}

var weatherArgs = []string{`{"ci`, `ty":`, `"Par`, `is","unit"`, `:"celsius"}`}

func TestStream(t *testing.T) {
	t.Parallel()
	type want struct {
		status   llm.Status
		stop     llm.StopReason
		text     string
		thinking string
		field    string
		tools    []wantTool
		usage    llm.Usage
		category llm.Category
		code     int
		typ      string
		retry    time.Duration
		gap      int
		msg      string // substring of the outcome message
		hint     string // substring of the error hint
	}
	cases := []struct {
		name   string
		opts   []llmtest.OpenAIOption
		cfg    func(*openai.Config)
		script llmtest.Script
		want   want
	}{
		{name: "text", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("It is", " 18°C", " and \"cloudy\".")},
			Usage: llm.Usage{InputTokens: 57, OutputTokens: 6}},
			want: want{status: llm.StatusCompleted, stop: llm.StopEndTurn, text: "It is 18°C and \"cloudy\".", usage: llm.Usage{InputTokens: 57, OutputTokens: 6}}},
		{name: "tool call with fragmented arguments", script: llmtest.Script{Blocks: []llmtest.Block{
			llmtest.ToolBlock("call_abc", "get_weather", weatherArgs...)}},
			want: want{status: llm.StatusCompleted, stop: llm.StopToolUse,
				tools: []wantTool{{"call_abc", "get_weather", `{"city":"Paris","unit":"celsius"}`}}}},
		{name: "text then two parallel tool calls", script: llmtest.Script{Blocks: []llmtest.Block{
			llmtest.TextBlock("Checking", " both."),
			llmtest.ToolBlock("call_1", "get_weather", `{"city":`, `"Paris"}`),
			llmtest.ToolBlock("call_2", "get_weather", `{"ci`, `ty":"Rome"`, `}`)}},
			want: want{status: llm.StatusCompleted, stop: llm.StopToolUse, text: "Checking both.",
				tools: []wantTool{{"call_1", "get_weather", `{"city":"Paris"}`}, {"call_2", "get_weather", `{"city":"Rome"}`}}}},
		{name: "ollama whole tool calls without done", opts: []llmtest.OpenAIOption{llmtest.OpenAIWholeToolCalls(), llmtest.OpenAINoDone(), llmtest.OpenAIReasoningField("reasoning")},
			script: llmtest.Script{Blocks: []llmtest.Block{
				llmtest.ThinkingBlock("", "Two cities."),
				llmtest.ToolBlock("call_x1", "get_weather", `{"city":`, `"Paris"}`),
				llmtest.ToolBlock("call_x2", "get_time", `{}`)}},
			want: want{status: llm.StatusCompleted, stop: llm.StopToolUse, thinking: "Two cities.", field: "reasoning",
				tools: []wantTool{{"call_x1", "get_weather", `{"city":"Paris"}`}, {"call_x2", "get_time", `{}`}}}},
		{name: "reasoning_content then text", script: llmtest.Script{Blocks: []llmtest.Block{
			llmtest.ThinkingBlock("", "Let me", " think."), llmtest.TextBlock("Sunny.")},
			Usage: llm.Usage{InputTokens: 10, OutputTokens: 30, ReasoningTokens: 20}},
			want: want{status: llm.StatusCompleted, stop: llm.StopEndTurn, text: "Sunny.", thinking: "Let me think.", field: "reasoning_content",
				usage: llm.Usage{InputTokens: 10, OutputTokens: 30, ReasoningTokens: 20}}},
		{name: "reasoning field", opts: []llmtest.OpenAIOption{llmtest.OpenAIReasoningField("reasoning")},
			script: llmtest.Script{Blocks: []llmtest.Block{llmtest.ThinkingBlock("", "Hmm."), llmtest.TextBlock("Rain.")}},
			want:   want{status: llm.StatusCompleted, stop: llm.StopEndTurn, text: "Rain.", thinking: "Hmm.", field: "reasoning"}},
		{name: "finish length", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("It is")}, StopReason: llm.StopMaxTokens},
			want: want{status: llm.StatusCompleted, stop: llm.StopMaxTokens, text: "It is"}},
		{name: "finish stop after a stop sequence", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("A")}, StopReason: llm.StopSequence, StopSequence: "</a>"},
			want: want{status: llm.StatusCompleted, stop: llm.StopEndTurn, text: "A"}},
		{name: "finish content_filter", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("I")}, StopReason: llm.StopRefusal},
			want: want{status: llm.StatusCompleted, stop: llm.StopRefusal, text: "I"}},
		{name: "refusal deltas", opts: []llmtest.OpenAIOption{llmtest.OpenAIRefusal()},
			script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("I can't", " help with that.")}, StopReason: llm.StopRefusal},
			want:   want{status: llm.StatusCompleted, stop: llm.StopRefusal, text: "I can't help with that."}},
		{name: "finish function_call", opts: []llmtest.OpenAIOption{llmtest.OpenAIFinishReason("function_call")},
			script: llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_f", "f", `{}`)}},
			want:   want{status: llm.StatusCompleted, stop: llm.StopToolUse, tools: []wantTool{{"call_f", "f", `{}`}}}},
		{name: "finish stop with tool calls", opts: []llmtest.OpenAIOption{llmtest.OpenAIFinishReason("stop")},
			script: llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_s", "f", `{"a":1}`)}},
			want:   want{status: llm.StatusCompleted, stop: llm.StopToolUse, tools: []wantTool{{"call_s", "f", `{"a":1}`}}}},
		{name: "usage with cached and reasoning tokens", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("ok")},
			Usage: llm.Usage{InputTokens: 1000, CacheReadTokens: 3000, OutputTokens: 500, ReasoningTokens: 320}},
			want: want{status: llm.StatusCompleted, stop: llm.StopEndTurn, text: "ok",
				usage: llm.Usage{InputTokens: 1000, CacheReadTokens: 3000, OutputTokens: 500, ReasoningTokens: 320}}},
		{name: "no usage requested", cfg: func(c *openai.Config) { c.NoStreamUsage = true },
			script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("ok")}, Usage: llm.Usage{InputTokens: 5, OutputTokens: 1}},
			want:   want{status: llm.StatusCompleted, stop: llm.StopEndTurn, text: "ok"}},
		{name: "no done after finish", opts: []llmtest.OpenAIOption{llmtest.OpenAINoDone()},
			script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("fine")}, Usage: llm.Usage{InputTokens: 3, OutputTokens: 1}},
			want:   want{status: llm.StatusCompleted, stop: llm.StopEndTurn, text: "fine", usage: llm.Usage{InputTokens: 3, OutputTokens: 1}}},
		{name: "empty answer", script: llmtest.Script{},
			want: want{status: llm.StatusCompleted, stop: llm.StopEndTurn}},

		{name: "400", script: llmtest.Script{Status: 400, ErrorMessage: "Invalid value for 'temperature'"},
			want: want{status: llm.StatusFailed, category: llm.CategoryBadRequest, code: 400, typ: "invalid_request_error", msg: "temperature"}},
		{name: "401", script: llmtest.Script{Status: 401},
			want: want{status: llm.StatusAuth, category: llm.CategoryAuth, code: 401, typ: "invalid_api_key", msg: "Incorrect API key"}},
		{name: "403", script: llmtest.Script{Status: 403},
			want: want{status: llm.StatusAuth, category: llm.CategoryPermission, code: 403, typ: "unsupported_country_region_territory"}},
		{name: "404", script: llmtest.Script{Status: 404},
			want: want{status: llm.StatusFailed, category: llm.CategoryNotFound, code: 404, typ: "model_not_found"}},
		{name: "404 api_error (Ollama's unknown model)", script: llmtest.Script{Status: 404, ErrorType: "api_error", ErrorMessage: `model "llama9" not found, try pulling it first`},
			want: want{status: llm.StatusFailed, category: llm.CategoryNotFound, code: 404, typ: "api_error", msg: "not found"}},
		{name: "429 with retry-after", script: llmtest.Script{Status: 429, RetryAfter: 1500 * time.Millisecond},
			want: want{status: llm.StatusTimeout, category: llm.CategoryRateLimit, code: 429, typ: "rate_limit_exceeded", retry: 1500 * time.Millisecond}},
		{name: "429 insufficient quota", script: llmtest.Script{Status: 429, ErrorType: "insufficient_quota"},
			want: want{status: llm.StatusTimeout, category: llm.CategoryRateLimit, code: 429, typ: "insufficient_quota", msg: "quota", hint: "out of quota"}},
		{name: "500", script: llmtest.Script{Status: 500},
			want: want{status: llm.StatusTimeout, category: llm.CategoryServer, code: 500, typ: "server_error"}},
		{name: "503", script: llmtest.Script{Status: 503},
			want: want{status: llm.StatusTimeout, category: llm.CategoryOverloaded, code: 503, typ: "server_error", msg: "overloaded"}},
		{name: "529", script: llmtest.Script{Status: 529},
			want: want{status: llm.StatusTimeout, category: llm.CategoryOverloaded, code: 529, typ: "server_error"}},
		{name: "context length", script: llmtest.Script{Status: 400, ErrorType: "context_length_exceeded",
			ErrorMessage: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages."},
			want: want{status: llm.StatusFailed, category: llm.CategoryPromptTooLong, code: 400, typ: "context_length_exceeded", gap: 2000}},

		{name: "cut mid-stream", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b", "c", "d")}, CutAfter: 3},
			want: want{status: llm.StatusTimeout, category: llm.CategoryNetwork}},
		{name: "cut before the finish chunk", opts: []llmtest.OpenAIOption{llmtest.OpenAINoDone()},
			script: llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_c", "f", `{"a":`, `1}`)}, CutAfter: 3},
			want:   want{status: llm.StatusTimeout, category: llm.CategoryNetwork}},
		{name: "malformed chunk", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b", "c")}, MalformedAt: 3},
			want: want{status: llm.StatusMalformed, category: llm.CategoryMalformed, code: 200}},
		{name: "error frame", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b", "c")}, ErrorAfter: 2},
			want: want{status: llm.StatusTimeout, category: llm.CategoryServer, code: 200, typ: "server_error", msg: "server had an error"}},
		{name: "rate limit error frame", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b")}, ErrorAfter: 1,
			ErrorType: "rate_limit_exceeded", ErrorMessage: "Rate limit reached"},
			want: want{status: llm.StatusTimeout, category: llm.CategoryRateLimit, code: 200, typ: "rate_limit_exceeded"}},
		{name: "slow stream hits the idle timeout", cfg: func(c *openai.Config) { c.IdleTimeout = 50 * time.Millisecond },
			script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b")}, Delay: 400 * time.Millisecond},
			want:   want{status: llm.StatusTimeout, category: llm.CategoryTimeout, msg: "idle"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewOpenAI(t, tc.opts...).Push(tc.script)
			res := stream(t, newProvider(srv, tc.cfg), t.Context(), basicRequest())
			w, o := tc.want, res.Outcome
			if o.Status != w.status {
				t.Fatalf("status %q (%s), want %q", o.Status, o.Message, w.status)
			}
			if w.status == llm.StatusCompleted {
				if o.StopReason != w.stop {
					t.Errorf("stop %q, want %q", o.StopReason, w.stop)
				}
				if got := res.Message.Text(); got != w.text {
					t.Errorf("text %q, want %q", got, w.text)
				}
				th, field := thinkingOf(res.Message)
				if th != w.thinking || field != w.field {
					t.Errorf("thinking %q (%q), want %q (%q)", th, field, w.thinking, w.field)
				}
				if got := toolsOf(res.Message); !equalTools(got, w.tools) {
					t.Errorf("tools %v, want %v", got, w.tools)
				}
				if res.Usage != w.usage {
					t.Errorf("usage %+v, want %+v", res.Usage, w.usage)
				}
				return
			}
			e := errOf(t, o)
			if e.Category != w.category {
				t.Errorf("category %q, want %q (%v)", e.Category, w.category, e)
			}
			if e.Provider != "openai" {
				t.Errorf("provider %q", e.Provider)
			}
			if e.StatusCode != w.code {
				t.Errorf("status code %d, want %d", e.StatusCode, w.code)
			}
			if w.typ != "" && e.Type != w.typ {
				t.Errorf("type %q, want %q", e.Type, w.typ)
			}
			if e.RetryAfter != w.retry || o.RetryAfter != w.retry {
				t.Errorf("retry after %v / %v, want %v", e.RetryAfter, o.RetryAfter, w.retry)
			}
			if e.TokenGap != w.gap {
				t.Errorf("token gap %d, want %d", e.TokenGap, w.gap)
			}
			if !strings.Contains(o.Message, w.msg) {
				t.Errorf("message %q lacks %q", o.Message, w.msg)
			}
			if !strings.Contains(e.Hint, w.hint) || e.Hint == "" {
				t.Errorf("hint %q lacks %q", e.Hint, w.hint)
			}
			if e.StatusCode >= 400 && e.RequestID == "" {
				t.Errorf("no request id")
			}
		})
	}
}

func equalTools(a, b []wantTool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].id != b[i].id || a[i].name != b[i].name || !equalJSON(a[i].input, b[i].input) {
			return false
		}
	}
	return true
}

func equalJSON(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return a == b
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}

func TestStreamCancel(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t).Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b", "c", "d")}, Delay: 100 * time.Millisecond})
	p := newProvider(srv, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var evs []llm.Event
	for ev := range p.Stream(ctx, basicRequest()) {
		evs = append(evs, ev)
		if ev.Kind == llm.EventBlockDelta {
			cancel()
		}
	}
	res, err := checkFraming(evs)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome.Status != llm.StatusAborted || errOf(t, res.Outcome).Category != llm.CategoryCanceled {
		t.Fatalf("outcome %+v, want aborted", res.Outcome)
	}
	if res.Message.Text() != "a" {
		t.Errorf("partial text %q, want %q", res.Message.Text(), "a")
	}
}

func TestStreamCanceledBeforeStart(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := stream(t, newProvider(srv, nil), ctx, basicRequest())
	if res.Outcome.Status != llm.StatusAborted {
		t.Fatalf("outcome %+v, want aborted", res.Outcome)
	}
}

// bodyTracker counts response bodies opened and closed.
type bodyTracker struct {
	rt             http.RoundTripper
	opened, closed atomic.Int32
}

func (b *bodyTracker) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(r)
	if err == nil {
		b.opened.Add(1)
		resp.Body = &trackedBody{ReadCloser: resp.Body, t: b}
	}
	return resp, err
}

type trackedBody struct {
	io.ReadCloser
	t    *bodyTracker
	once atomic.Bool
}

func (tb *trackedBody) Close() error {
	if tb.once.CompareAndSwap(false, true) {
		tb.t.closed.Add(1)
	}
	return tb.ReadCloser.Close()
}

// TestConsumerBreaks is not parallel: it counts goroutines.
func TestConsumerBreaks(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	track := &bodyTracker{rt: tr}
	p := newProvider(srv, func(c *openai.Config) { c.HTTPClient = &http.Client{Transport: track} })
	chunks := make([]string, 200)
	for i := range chunks {
		chunks[i] = "word "
	}
	before := runtime.NumGoroutine()
	const n = 20
	for i := range n {
		srv.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(chunks...)}, Delay: time.Millisecond})
		seen := 0
		for ev := range p.Stream(t.Context(), basicRequest()) {
			if ev.Kind == llm.EventBlockDelta {
				seen++
				if seen == 1+i%3 {
					break
				}
			}
		}
		if got := track.closed.Load(); got != int32(i+1) {
			t.Fatalf("after break %d: %d bodies closed", i+1, got)
		}
	}
	if track.opened.Load() != n {
		t.Fatalf("%d responses opened, want %d", track.opened.Load(), n)
	}
	tr.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+2 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestKeyPool(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t)
	pool := llm.NewKeyPool("sk-key-aaaaaaaa-1", "sk-key-bbbbbbbb-2", "sk-key-cccccccc-3")
	p := newProvider(srv, func(c *openai.Config) { c.APIKey = ""; c.Keys = pool })
	srv.Push(
		llmtest.Script{Status: 429, RetryAfter: time.Hour},
		llmtest.Script{Status: 401},
		llmtest.Text("ok"),
		llmtest.Text("ok again"),
	)
	for range 4 {
		stream(t, p, t.Context(), basicRequest())
	}
	var keys []string
	for _, r := range srv.Requests() {
		keys = append(keys, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}
	want := []string{"sk-key-aaaaaaaa-1", "sk-key-bbbbbbbb-2", "sk-key-cccccccc-3", "sk-key-cccccccc-3"}
	if strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Fatalf("keys used %v, want %v", keys, want)
	}
	h := pool.Health()
	if h[0].State != llm.KeyCooling || h[1].State != llm.KeyDead || h[2].State != llm.KeyOK {
		t.Fatalf("health %+v", h)
	}
	if d := time.Until(h[0].CoolUntil); d < 59*time.Minute {
		t.Errorf("cooling for %v, want the server's hour", d)
	}
	// Rate-limit the last live key: the pool is exhausted and says so.
	srv.Push(llmtest.Script{Status: 429})
	stream(t, p, t.Context(), basicRequest())
	res := stream(t, p, t.Context(), basicRequest())
	if e := errOf(t, res.Outcome); e.Category != llm.CategoryRateLimit || !errors.Is(e, llm.ErrNoKey) || e.Provider != "openai" {
		t.Fatalf("exhausted pool: %+v", e)
	}
	if n := len(srv.Requests()); n != 5 {
		t.Fatalf("%d requests reached the server, want 5", n)
	}
}

func TestPresets(t *testing.T) {
	t.Parallel()
	names := openai.PresetNames()
	if strings.Join(names, ",") != "dashscope,deepseek,lmstudio,moonshot,ollama,openai,openrouter,vllm,zhipu" {
		t.Fatalf("presets %v", names)
	}
	if _, ok := openai.ForPreset("nope", llm.Endpoint{}); ok {
		t.Fatal("unknown preset accepted")
	}
	urls := map[string]string{
		"openai":     "https://api.openai.com/v1",
		"openrouter": "https://openrouter.ai/api/v1",
		"ollama":     "http://localhost:11434/v1",
		"lmstudio":   "http://localhost:1234/v1",
		"deepseek":   "https://api.deepseek.com/v1",
		"vllm":       "http://localhost:8000/v1",
		"dashscope":  "https://dashscope.aliyuncs.com/compatible-mode/v1",
		"zhipu":      "https://open.bigmodel.cn/api/paas/v4",
		"moonshot":   "https://api.moonshot.cn/v1",
	}
	maxField := map[string]string{"openai": "max_completion_tokens"}
	effort := map[string]bool{"deepseek": false, "dashscope": false, "zhipu": false, "moonshot": false}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The preset's own URL goes where the request is sent; capture
			// it with a transport that answers in memory.
			var gotURL string
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				gotURL = r.URL.String()
				return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
					Body: io.NopCloser(strings.NewReader("data: [DONE]\n\n")), Request: r}, nil
			})
			p, ok := openai.ForPreset(name, llm.Endpoint{HTTPClient: &http.Client{Transport: rt}})
			if !ok || p.Name() != name {
				t.Fatalf("ForPreset(%q) = %v, %v", name, p, ok)
			}
			stream(t, p, t.Context(), basicRequest())
			if gotURL != urls[name]+"/chat/completions" {
				t.Errorf("url %q, want %q", gotURL, urls[name]+"/chat/completions")
			}

			srv := llmtest.NewOpenAI(t).Push(llmtest.Text("hi"))
			p, _ = openai.ForPreset(name, llm.Endpoint{BaseURL: srv.URL + "/v1/"})
			req := basicRequest()
			req.MaxTokens, req.Thinking = 512, llm.ThinkingLow
			if res := stream(t, p, t.Context(), req); res.Outcome.Status != llm.StatusCompleted {
				t.Fatalf("outcome %+v", res.Outcome)
			}
			r := srv.LastRequest()
			if r.Path != "/v1/chat/completions" {
				t.Errorf("path %q", r.Path)
			}
			if h := r.Header.Get("Authorization"); h != "" {
				t.Errorf("Authorization %q sent without a key", h)
			}
			body := r.JSON()
			field := maxField[name]
			if field == "" {
				field = "max_tokens"
			}
			if body[field] != float64(512) || len(body) != countKeys(body, "max_tokens", "max_completion_tokens")+1 {
				t.Errorf("max tokens: %v", body)
			}
			wantEffort, set := effort[name]
			if !set {
				wantEffort = true
			}
			if _, has := body["reasoning_effort"]; has != wantEffort {
				t.Errorf("reasoning_effort sent = %v, want %v", has, wantEffort)
			}
		})
	}
}

// countKeys counts the keys of m other than the named ones.
func countKeys(m map[string]any, except ...string) int {
	n := 0
	for k := range m {
		skip := false
		for _, e := range except {
			skip = skip || k == e
		}
		if !skip {
			n++
		}
	}
	return n
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestAuthorizationAndHeaders(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t).Push(llmtest.Text("a"), llmtest.Text("b"))
	p := newProvider(srv, func(c *openai.Config) {
		c.Headers = http.Header{"HTTP-Referer": {"https://weft.run"}}
	})
	stream(t, p, t.Context(), basicRequest())
	r := srv.LastRequest()
	if r.Header.Get("Authorization") != "Bearer sk-test" || r.Header.Get("Http-Referer") != "https://weft.run" ||
		r.Header.Get("Content-Type") != "application/json" || r.Method != http.MethodPost {
		t.Fatalf("headers %v", r.Header)
	}
	p = newProvider(srv, func(c *openai.Config) { c.APIKey = "" })
	stream(t, p, t.Context(), basicRequest())
	if h, ok := srv.LastRequest().Header["Authorization"]; ok {
		t.Fatalf("Authorization %q without a key", h)
	}
}

func TestNewDefaults(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t).Push(llmtest.Text("a"), llmtest.Text("b"))
	req := basicRequest()
	req.Thinking, req.MaxTokens = llm.ThinkingXHigh, 100
	p := newProvider(srv, nil)
	if p.Name() != "openai" {
		t.Fatalf("name %q", p.Name())
	}
	stream(t, p, t.Context(), req)
	lr := srv.LastRequest()
	body := lr.JSON()
	if body["reasoning_effort"] != "xhigh" || body["max_completion_tokens"] != float64(100) {
		t.Fatalf("body %v", body)
	}
	// A named compatible server built by hand sends no effort unless asked.
	p = newProvider(srv, func(c *openai.Config) { c.Name = "groq"; c.MaxTokensField = "max_tokens" })
	stream(t, p, t.Context(), req)
	lr = srv.LastRequest()
	body = lr.JSON()
	if _, ok := body["reasoning_effort"]; ok || body["max_tokens"] != float64(100) || p.Name() != "groq" {
		t.Fatalf("body %v", body)
	}
}

// TestPromptCacheKeyOnlyToOpenAI: the conversation's cache key goes out as
// prompt_cache_key to OpenAI's API, and never to the compatible servers,
// which are not known to accept the field.
func TestPromptCacheKeyOnlyToOpenAI(t *testing.T) {
	t.Parallel()
	for _, name := range openai.PresetNames() {
		for _, cache := range []llm.CacheMode{llm.CacheAuto, llm.CacheOff} {
			t.Run(name+"/"+string(cache), func(t *testing.T) {
				t.Parallel()
				srv := llmtest.NewOpenAI(t).Push(llmtest.Text("ok"))
				p, ok := openai.ForPreset(name, llm.Endpoint{BaseURL: srv.URL + "/v1", APIKey: "k"})
				if !ok {
					t.Fatal("no preset")
				}
				req := basicRequest()
				req.CacheKey, req.Cache = "weft-key", cache
				stream(t, p, t.Context(), req)
				last := srv.LastRequest()
				got, sent := last.JSON()["prompt_cache_key"]
				want := name == "openai" && cache == llm.CacheAuto
				if sent != want || sent && got != "weft-key" {
					t.Fatalf("prompt_cache_key = %v (sent %v), want sent %v", got, sent, want)
				}
			})
		}
	}
	// The provider-wide switch wins over the request.
	srv := llmtest.NewOpenAI(t).Push(llmtest.Text("ok"))
	p := newProvider(srv, func(c *openai.Config) { c.NoPromptCache = true })
	req := basicRequest()
	req.CacheKey = "weft-key"
	stream(t, p, t.Context(), req)
	last := srv.LastRequest()
	if _, sent := last.JSON()["prompt_cache_key"]; sent {
		t.Fatal("NoPromptCache sent a prompt_cache_key")
	}
}
