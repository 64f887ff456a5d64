package anthropic_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/llmtest"
)

func userReq() *llm.Request {
	return &llm.Request{Model: "claude-test", Messages: []llm.Message{llm.UserText("Hi")}}
}

// run streams req through p, checks the framing and returns the stream.
func run(t testing.TB, ctx context.Context, p llm.Provider, req *llm.Request) *framed {
	t.Helper()
	var evs []llm.Event
	for ev := range p.Stream(ctx, req) {
		evs = append(evs, ev)
	}
	fr, err := checkFraming(evs)
	if err != nil {
		t.Fatalf("framing: %v\nevents: %s", err, dumpEvents(evs))
	}
	return fr
}

func dumpEvents(evs []llm.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString("\n  ")
		b.WriteString(ev.Kind.String())
		switch ev.Kind {
		case llm.EventBlockStart, llm.EventBlockDelta, llm.EventBlockStop:
			b.WriteString(" #" + strconv.Itoa(ev.Index) + " " + string(ev.Block.Type) + " " + strconv.Quote(ev.Delta))
		case llm.EventOutcome:
			b.WriteString(" " + string(ev.Outcome.Status) + " " + ev.Outcome.Message)
		}
	}
	return b.String()
}

func fakeProvider(t testing.TB, mod func(*anthropic.Config)) (*llmtest.Server, *anthropic.Provider) {
	srv := llmtest.NewAnthropic(t)
	cfg := anthropic.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL, APIKey: "sk-ant-test"}}
	if mod != nil {
		mod(&cfg)
	}
	return srv, anthropic.New(cfg)
}

// rawServer answers every request with status and body verbatim, for
// streams the scripted fake does not produce.
func rawServer(t testing.TB, status int, contentType, body string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("request-id", "req_raw")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func jsonEqual(t testing.TB, what string, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got invalid JSON %q: %v", what, got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: want invalid JSON %q: %v", what, want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s: got %s, want %s", what, got, want)
	}
}

const (
	frameStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n"
	frameText0 = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n"
	frameStop0 = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
	frameDelta = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":7}}\n\n"
	frameEnd   = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

func TestStream(t *testing.T) {
	t.Parallel()
	usage := llm.Usage{InputTokens: 472, OutputTokens: 89, CacheReadTokens: 1830, CacheWriteTokens: 120}
	type want struct {
		status   llm.Status
		category llm.Category
		text     string
		stop     llm.StopReason
		seq      string
		usage    *llm.Usage
		tools    []llm.Block // id, name, input
	}
	tests := []struct {
		name   string
		script llmtest.Script
		raw    func(t *testing.T) string // a base URL replacing the fake
		cfg    func(*anthropic.Config)
		want   want
		check  func(t *testing.T, fr *framed)
	}{
		{name: "text", script: llmtest.Text("Hel", "lo", ", world"),
			want: want{status: llm.StatusCompleted, text: "Hello, world", stop: llm.StopEndTurn}},
		{name: "tool call with fragmented args",
			script: llmtest.Script{Blocks: []llmtest.Block{
				llmtest.TextBlock("Let me check."),
				llmtest.ToolBlock("toolu_01", "get_weather", `{"ci`, `ty": "Pa`, `ris", "unit": "cel`, `sius"}`),
			}},
			want: want{status: llm.StatusCompleted, text: "Let me check.", stop: llm.StopToolUse,
				tools: []llm.Block{llm.ToolUse("toolu_01", "get_weather", json.RawMessage(`{"city":"Paris","unit":"celsius"}`))}}},
		{name: "two parallel tool calls",
			script: llmtest.Script{Blocks: []llmtest.Block{
				llmtest.ToolBlock("toolu_a", "read", `{"path":`, `"a.go"}`),
				llmtest.ToolBlock("toolu_b", "read", `{"pa`, `th":"b.go"`, `}`),
			}},
			want: want{status: llm.StatusCompleted, stop: llm.StopToolUse, tools: []llm.Block{
				llm.ToolUse("toolu_a", "read", json.RawMessage(`{"path":"a.go"}`)),
				llm.ToolUse("toolu_b", "read", json.RawMessage(`{"path":"b.go"}`)),
			}}},
		{name: "tool call without arguments",
			script: llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("toolu_n", "now")}},
			want: want{status: llm.StatusCompleted, stop: llm.StopToolUse,
				tools: []llm.Block{llm.ToolUse("toolu_n", "now", json.RawMessage(`{}`))}}},
		{name: "thinking with signature",
			script: llmtest.Script{Blocks: []llmtest.Block{
				llmtest.ThinkingBlock("EqQBCgIYAhIMsig==", "The user wants", " Paris weather."),
				llmtest.TextBlock("Sunny."),
			}},
			want: want{status: llm.StatusCompleted, text: "Sunny.", stop: llm.StopEndTurn},
			check: func(t *testing.T, fr *framed) {
				b := fr.Message.Content[0]
				if b.Type != llm.BlockThinking || b.Text != "The user wants Paris weather." {
					t.Errorf("thinking block = %+v", b)
				}
				if got := b.MetaValue(anthropic.MetaSignature); got != "EqQBCgIYAhIMsig==" {
					t.Errorf("signature = %q", got)
				}
			}},
		{name: "redacted thinking",
			script: llmtest.Script{Blocks: []llmtest.Block{
				llmtest.RedactedThinkingBlock("EmwKAhgBEgy3va3pzix/LafPsn4a"),
				llmtest.TextBlock("Done."),
			}},
			want: want{status: llm.StatusCompleted, text: "Done.", stop: llm.StopEndTurn},
			check: func(t *testing.T, fr *framed) {
				b := fr.Message.Content[0]
				if b.Type != llm.BlockThinking || b.Text != "" || b.MetaValue(anthropic.MetaRedacted) != "EmwKAhgBEgy3va3pzix/LafPsn4a" {
					t.Errorf("redacted block = %+v", b)
				}
			}},
		{name: "usage with cache fields", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("ok")}, Usage: usage},
			want: want{status: llm.StatusCompleted, text: "ok", stop: llm.StopEndTurn, usage: &usage}},
		{name: "stop max_tokens", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("cut")}, StopReason: llm.StopMaxTokens},
			want: want{status: llm.StatusCompleted, text: "cut", stop: llm.StopMaxTokens}},
		{name: "stop sequence", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("42")}, StopReason: llm.StopSequence, StopSequence: "</answer>"},
			want: want{status: llm.StatusCompleted, text: "42", stop: llm.StopSequence, seq: "</answer>"}},
		{name: "stop refusal", script: llmtest.Script{StopReason: llm.StopRefusal},
			want: want{status: llm.StatusCompleted, stop: llm.StopRefusal}},
		{name: "stop pause_turn", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("…")}, StopReason: llm.StopPauseTurn},
			want: want{status: llm.StatusCompleted, text: "…", stop: llm.StopPauseTurn}},
		{name: "stop context window exceeded", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("x")}, StopReason: "model_context_window_exceeded"},
			want: want{status: llm.StatusCompleted, text: "x", stop: llm.StopMaxTokens}},
		{name: "http 400", script: llmtest.Script{Status: 400, ErrorMessage: "max_tokens: Field required"},
			want: want{status: llm.StatusFailed, category: llm.CategoryBadRequest}},
		{name: "http 401", script: llmtest.Script{Status: 401},
			want: want{status: llm.StatusAuth, category: llm.CategoryAuth}},
		{name: "http 403", script: llmtest.Script{Status: 403},
			want: want{status: llm.StatusAuth, category: llm.CategoryPermission}},
		{name: "http 404", script: llmtest.Script{Status: 404},
			want: want{status: llm.StatusFailed, category: llm.CategoryNotFound}},
		{name: "http 413", script: llmtest.Script{Status: 413},
			want: want{status: llm.StatusFailed, category: llm.CategoryPromptTooLong}},
		{name: "http 429 with retry-after", script: llmtest.Script{Status: 429, RetryAfter: 7 * time.Second},
			want: want{status: llm.StatusTimeout, category: llm.CategoryRateLimit},
			check: func(t *testing.T, fr *framed) {
				if fr.Err.RetryAfter != 7*time.Second || fr.Result.Outcome.RetryAfter != 7*time.Second {
					t.Errorf("retry after = %v / %v, want 7s", fr.Err.RetryAfter, fr.Result.Outcome.RetryAfter)
				}
			}},
		{name: "http 500", script: llmtest.Script{Status: 500},
			want: want{status: llm.StatusTimeout, category: llm.CategoryServer}},
		{name: "http 503", script: llmtest.Script{Status: 503},
			want: want{status: llm.StatusTimeout, category: llm.CategoryOverloaded}},
		{name: "http 529 overloaded", script: llmtest.Script{Status: 529},
			want: want{status: llm.StatusTimeout, category: llm.CategoryOverloaded},
			check: func(t *testing.T, fr *framed) {
				if fr.Err.Type != "overloaded_error" || fr.Err.Message != "Overloaded" {
					t.Errorf("error = %+v", fr.Err)
				}
			}},
		{name: "prompt too long",
			script: llmtest.Script{Status: 400, ErrorMessage: "prompt is too long: 208310 tokens > 200000 maximum"},
			want:   want{status: llm.StatusFailed, category: llm.CategoryPromptTooLong},
			check: func(t *testing.T, fr *framed) {
				if fr.Err.TokenGap != 8310 {
					t.Errorf("token gap = %d, want 8310", fr.Err.TokenGap)
				}
			}},
		{name: "cut mid-stream",
			script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b", "c", "d")}, CutAfter: 5},
			want:   want{status: llm.StatusTimeout, category: llm.CategoryNetwork, text: "ab"}},
		{name: "cut inside a tool call",
			script: llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("toolu_c", "x", `{"a":`, `1}`)}, CutAfter: 4},
			want:   want{status: llm.StatusTimeout, category: llm.CategoryNetwork}},
		{name: "malformed frame", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b")}, MalformedAt: 5},
			want: want{status: llm.StatusMalformed, category: llm.CategoryMalformed, text: "a"}},
		{name: "error frame", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b")}, ErrorAfter: 4},
			want: want{status: llm.StatusTimeout, category: llm.CategoryOverloaded, text: "a"},
			check: func(t *testing.T, fr *framed) {
				if fr.Err.StatusCode != 200 || fr.Err.Type != "overloaded_error" || !strings.HasPrefix(fr.Err.RequestID, "req_") {
					t.Errorf("error = %+v", fr.Err)
				}
			}},
		{name: "rate limit error frame", script: llmtest.Script{ErrorAfter: 1, ErrorType: "rate_limit_error"},
			want: want{status: llm.StatusTimeout, category: llm.CategoryRateLimit}},
		{name: "invalid request error frame", script: llmtest.Script{ErrorAfter: 1, ErrorType: "invalid_request_error", ErrorMessage: "prompt is too long: 10 tokens > 5 maximum"},
			want: want{status: llm.StatusFailed, category: llm.CategoryPromptTooLong},
			check: func(t *testing.T, fr *framed) {
				if fr.Err.TokenGap != 5 {
					t.Errorf("token gap = %d", fr.Err.TokenGap)
				}
			}},
		{name: "idle timeout", script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("slow")}, Delay: 2 * time.Second},
			cfg:  func(c *anthropic.Config) { c.IdleTimeout = 50 * time.Millisecond },
			want: want{status: llm.StatusTimeout, category: llm.CategoryTimeout}},
		{name: "clean EOF without message_stop",
			raw:  func(t *testing.T) string { return rawServer(t, 200, "text/event-stream", frameStart+frameText0) },
			want: want{status: llm.StatusTimeout, category: llm.CategoryNetwork, text: "Hello"}},
		{name: "block out of order",
			raw: func(t *testing.T) string {
				return rawServer(t, 200, "text/event-stream", frameStart+strings.ReplaceAll(frameText0, `"index":0`, `"index":1`))
			},
			want: want{status: llm.StatusMalformed, category: llm.CategoryMalformed}},
		{name: "delta for a block never started",
			raw: func(t *testing.T) string {
				return rawServer(t, 200, "text/event-stream", frameStart+frameText0+strings.ReplaceAll(frameStop0, `"index":0`, `"index":3`))
			},
			want: want{status: llm.StatusMalformed, category: llm.CategoryMalformed, text: "Hello"}},
		{name: "unknown events and blocks are skipped",
			raw: func(t *testing.T) string {
				return rawServer(t, 200, "text/event-stream", frameStart+
					"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}}\n\n"+
					"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n"+
					"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"+
					"event: future_event\ndata: {\"type\":\"future_event\"}\n\n"+
					": keep-alive\n\n"+
					strings.ReplaceAll(frameText0+frameStop0, `"index":0`, `"index":1`)+frameDelta+frameEnd)
			},
			want: want{status: llm.StatusCompleted, text: "Hello", stop: llm.StopEndTurn, usage: &llm.Usage{InputTokens: 5, OutputTokens: 7}}},
		{name: "interleaved blocks",
			raw: func(t *testing.T) string {
				second := strings.ReplaceAll(frameText0, `"index":0`, `"index":1`)
				again := frameText0[strings.Index(frameText0, "event: content_block_delta"):]
				return rawServer(t, 200, "text/event-stream", frameStart+frameText0+second+again+frameStop0+
					strings.ReplaceAll(frameStop0, `"index":0`, `"index":1`)+frameDelta+frameEnd)
			},
			want: want{status: llm.StatusCompleted, text: "HelloHelloHello", stop: llm.StopEndTurn}},
		{name: "non-JSON error body",
			raw:  func(t *testing.T) string { return rawServer(t, 502, "text/html", "<html>Bad Gateway</html>") },
			want: want{status: llm.StatusTimeout, category: llm.CategoryServer},
			check: func(t *testing.T, fr *framed) {
				if fr.Err.Message != "<html>Bad Gateway</html>" || fr.Err.StatusCode != 502 || fr.Err.RequestID != "req_raw" {
					t.Errorf("error = %+v", fr.Err)
				}
			}},
		{name: "undecodable error frame",
			raw: func(t *testing.T) string {
				return rawServer(t, 200, "text/event-stream", frameStart+"event: error\ndata: oops\n\n")
			},
			want: want{status: llm.StatusMalformed, category: llm.CategoryMalformed}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var p *anthropic.Provider
			if tc.raw != nil {
				cfg := anthropic.Config{Endpoint: llm.Endpoint{BaseURL: tc.raw(t), APIKey: "k"}}
				if tc.cfg != nil {
					tc.cfg(&cfg)
				}
				p = anthropic.New(cfg)
			} else {
				var srv *llmtest.Server
				srv, p = fakeProvider(t, tc.cfg)
				srv.Push(tc.script)
			}
			fr := run(t, context.Background(), p, userReq())
			o := fr.Result.Outcome
			if o.Status != tc.want.status {
				t.Fatalf("status = %s (%s), want %s", o.Status, o.Message, tc.want.status)
			}
			if tc.want.category != "" && fr.Err.Category != tc.want.category {
				t.Errorf("category = %s (%s), want %s", fr.Err.Category, fr.Err.Message, tc.want.category)
			}
			if fr.Err != nil && fr.Err.Provider != "anthropic" {
				t.Errorf("error provider = %q", fr.Err.Provider)
			}
			if got := fr.Message.Text(); got != tc.want.text {
				t.Errorf("text = %q, want %q", got, tc.want.text)
			}
			if o.StopReason != tc.want.stop || o.StopSequence != tc.want.seq {
				t.Errorf("stop = %q %q, want %q %q", o.StopReason, o.StopSequence, tc.want.stop, tc.want.seq)
			}
			if tc.want.usage != nil && fr.Result.Usage != *tc.want.usage {
				t.Errorf("usage = %+v, want %+v", fr.Result.Usage, *tc.want.usage)
			}
			if tc.want.tools != nil {
				got := fr.Message.ToolUses()
				if len(got) != len(tc.want.tools) {
					t.Fatalf("%d tool calls, want %d", len(got), len(tc.want.tools))
				}
				for i, w := range tc.want.tools {
					if got[i].ToolUseID != w.ToolUseID || got[i].ToolName != w.ToolName {
						t.Errorf("tool %d = %s %s, want %s %s", i, got[i].ToolUseID, got[i].ToolName, w.ToolUseID, w.ToolName)
					}
					jsonEqual(t, "tool input", got[i].Input, w.Input)
				}
			}
			if fr.Err != nil && fr.Err.StatusCode >= 400 && tc.raw == nil && !strings.HasPrefix(fr.Err.RequestID, "req_") {
				t.Errorf("request id = %q", fr.Err.RequestID)
			}
			if tc.check != nil {
				tc.check(t, fr)
			}
		})
	}
}

func TestStreamCancel(t *testing.T) {
	t.Parallel()
	srv, p := fakeProvider(t, nil)
	srv.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b", "c", "d", "e")}, Delay: 30 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var evs []llm.Event
	for ev := range p.Stream(ctx, userReq()) {
		evs = append(evs, ev)
		if ev.Kind == llm.EventBlockDelta {
			cancel()
		}
	}
	fr, err := checkFraming(evs)
	if err != nil {
		t.Fatalf("framing: %v%s", err, dumpEvents(evs))
	}
	if fr.Result.Outcome.Status != llm.StatusAborted || fr.Err.Category != llm.CategoryCanceled {
		t.Fatalf("outcome = %+v", fr.Result.Outcome)
	}
	if !strings.HasPrefix(fr.Message.Text(), "a") {
		t.Errorf("partial text = %q", fr.Message.Text())
	}
}

func TestStreamCanceledBeforeStart(t *testing.T) {
	t.Parallel()
	_, p := fakeProvider(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fr := run(t, ctx, p, userReq())
	if fr.Result.Outcome.Status != llm.StatusAborted {
		t.Fatalf("outcome = %+v", fr.Result.Outcome)
	}
}

func TestStreamUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	p := anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: url, APIKey: "k"}})
	fr := run(t, context.Background(), p, userReq())
	if fr.Result.Outcome.Status != llm.StatusTimeout || fr.Err.Category != llm.CategoryNetwork {
		t.Fatalf("outcome = %+v", fr.Result.Outcome)
	}
}

// TestStreamBreakEarly checks that a consumer leaving the range loop gets
// nothing more and leaves no goroutine behind. It is not parallel, so that
// the goroutine count is its own.
func TestStreamBreakEarly(t *testing.T) {
	srv, _ := fakeProvider(t, nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	p := anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL, APIKey: "k", HTTPClient: &http.Client{Transport: tr}}})
	chunks := make([]string, 200)
	for i := range chunks {
		chunks[i] = "word "
	}
	// Warm the connection pool so that the baseline counts its goroutines.
	srv.Push(llmtest.Text("warm"))
	run(t, context.Background(), p, userReq())
	tr.CloseIdleConnections()
	base := steady()

	for _, delay := range []time.Duration{0, 20 * time.Millisecond} {
		srv.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(chunks...)}, Delay: delay})
		n := 0
		for ev := range p.Stream(context.Background(), userReq()) {
			n++
			if ev.Kind == llm.EventBlockDelta {
				break
			}
		}
		if n != 2 {
			t.Errorf("delay %v: got %d events before breaking, want 2", delay, n)
		}
	}
	tr.CloseIdleConnections()
	if got := settle(base, 5*time.Second); got > base {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after breaking early, %d before\n%s", got, base, buf[:runtime.Stack(buf, true)])
	}
}

// steady returns the goroutine count once it has stopped changing.
func steady() int {
	last := runtime.NumGoroutine()
	for same := 0; same < 5; {
		time.Sleep(20 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == last {
			same++
		} else {
			same, last = 0, n
		}
	}
	return last
}

// settle waits up to d for the goroutine count to fall to want or below
// and returns the last count.
func settle(want int, d time.Duration) int {
	deadline := time.Now().Add(d)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestConnectionReuse checks that a completed stream leaves its HTTP/1.1
// connection reusable, and that a server holding the response open after
// message_stop does not hold up the caller.
func TestConnectionReuse(t *testing.T) {
	t.Parallel()
	stream := frameStart + frameText0 + frameStop0 + frameDelta + frameEnd
	var conns atomic.Int32
	hold := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, stream)
		// Flushed, the body is chunked and its end comes after message_stop.
		w.(http.Flusher).Flush()
		if strings.HasPrefix(r.URL.Path, "/hold/") {
			select {
			case <-hold:
			case <-r.Context().Done():
			}
			return
		}
		time.Sleep(2 * time.Millisecond)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(func() { close(hold); srv.Close() })
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	p := anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL, APIKey: "k", HTTPClient: &http.Client{Transport: tr}}})
	for range 3 {
		if fr := run(t, context.Background(), p, userReq()); fr.Result.Outcome.Status != llm.StatusCompleted {
			t.Fatalf("outcome = %+v", fr.Result.Outcome)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("3 calls used %d connections, want 1", n)
	}

	held := anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL + "/hold", APIKey: "k", HTTPClient: &http.Client{Transport: tr}}})
	start := time.Now()
	fr := run(t, context.Background(), held, userReq())
	if fr.Result.Outcome.Status != llm.StatusCompleted || fr.Message.Text() != "Hello" {
		t.Fatalf("outcome = %+v", fr.Result.Outcome)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a server holding the response open after message_stop held the caller for %v", d)
	}
}
