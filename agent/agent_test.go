package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/tool"
)

type echoIn struct {
	Text string `json:"text"`
}

// echoTool returns its input; safe marks it concurrency-safe.
func echoTool(name string, safe bool, run func(ctx context.Context, in echoIn) (tool.Result, error)) tool.Tool {
	meta := tool.Meta{ConcurrencySafe: safe, ReadOnly: safe, Effect: tool.EffectRead}
	return tool.Func(name, "echoes", meta, func(ctx context.Context, in echoIn, _ *tool.Call) (tool.Result, error) {
		if run != nil {
			return run(ctx, in)
		}
		return tool.Text("echo: " + in.Text), nil
	})
}

func newAgent(t *testing.T, p llm.Provider, approve agent.ApproveFunc, tools ...tool.Tool) *agent.Agent {
	t.Helper()
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	info := llm.ModelInfo{ID: "m", Provider: "scripted", MaxOutputTokens: 1000, InputPrice: 1, OutputPrice: 2, CacheReadPrice: 0.1, CacheWritePrice: 1.25}
	a, err := agent.New(agent.Config{Provider: p, Model: "m", ModelInfo: &info, Tools: reg, Approve: approve,
		Retry: agent.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

type collected struct {
	events []agent.Event
	err    error
}

func (c collected) types() []agent.EventType {
	out := make([]agent.EventType, len(c.events))
	for i, e := range c.events {
		out[i] = e.Type
	}
	return out
}

func (c collected) done(t *testing.T) agent.DoneData {
	t.Helper()
	last := c.events[len(c.events)-1]
	if last.Type != agent.EventDone {
		t.Fatalf("last event is %s, want done; events: %v", last.Type, c.types())
	}
	return last.Data.(agent.DoneData)
}

func (c collected) of(typ agent.EventType) []agent.Event {
	var out []agent.Event
	for _, e := range c.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func collect(s *agent.Session, ctx context.Context, prompt string) collected {
	var c collected
	for ev, err := range s.Run(ctx, prompt) {
		c.events = append(c.events, ev)
		if err != nil {
			c.err = err
		}
	}
	return c
}

func toolScript(calls ...llmtest.Block) llmtest.Script { return llmtest.Script{Blocks: calls} }

func TestTextRun(t *testing.T) {
	t.Parallel()
	p := llmtest.NewScripted("scripted", llmtest.Script{
		Blocks: []llmtest.Block{llmtest.ThinkingBlock("sig", "hmm"), llmtest.TextBlock("Hel", "lo")},
		Usage:  llm.Usage{InputTokens: 1000, OutputTokens: 500, CacheReadTokens: 1000, CacheWriteTokens: 1000},
	})
	s := newAgent(t, p, nil).NewSession()
	c := collect(s, context.Background(), "hi")
	want := []agent.EventType{agent.EventTurnStart, agent.EventThinkingDelta, agent.EventThinking,
		agent.EventTextDelta, agent.EventTextDelta, agent.EventText, agent.EventTurnEnd, agent.EventDone}
	if fmt.Sprint(c.types()) != fmt.Sprint(want) {
		t.Fatalf("events = %v\nwant     %v", c.types(), want)
	}
	d := c.done(t)
	// 1000*1 + 500*2 + 1000*0.1 + 1000*1.25 per million.
	wantCost := (1000 + 1000 + 100 + 1250) / 1e6
	if d.StopReason != "end_turn" || d.TurnCount != 1 || d.Text != "Hello" || fmt.Sprintf("%.8f", d.CostUSD) != fmt.Sprintf("%.8f", wantCost) {
		t.Fatalf("done = %+v (want cost %v)", d, wantCost)
	}
	te := c.of(agent.EventTurnEnd)[0].Data.(agent.TurnEndData)
	if te.CacheReadTokens != 1000 || te.CostUSD != d.CostUSD {
		t.Fatalf("turn_end = %+v", te)
	}
	msgs := s.Messages()
	if len(msgs) != 2 || msgs[1].Role != llm.RoleAssistant || msgs[1].Text() != "Hello" {
		t.Fatalf("history = %+v", msgs)
	}
	if tot := s.Totals(); tot.Turns != 1 || tot.CostUSD != d.CostUSD {
		t.Fatalf("totals = %+v", tot)
	}
	b, _ := json.Marshal(c.events[0])
	if string(b) != `{"turn_number":1,"model":"m"}` {
		t.Fatalf("turn_start JSON = %s", b)
	}
}

func TestToolRoundTrip(t *testing.T) {
	t.Parallel()
	p := llmtest.NewScripted("scripted",
		toolScript(llmtest.ToolBlock("call_1", "echo", `{"text":`, `"ping"}`)),
		llmtest.Text("done"),
	)
	s := newAgent(t, p, agent.AllowAll, echoTool("echo", true, nil)).NewSession()
	c := collect(s, context.Background(), "go")
	if c.err != nil {
		t.Fatal(c.err)
	}
	uses, results := c.of(agent.EventToolUse), c.of(agent.EventToolResult)
	if len(uses) != 1 || len(results) != 1 {
		t.Fatalf("events = %v", c.types())
	}
	r := results[0].Data.(agent.ToolResultData)
	if r.Output != "echo: ping" || r.IsError || r.ID != "call_1" {
		t.Fatalf("result = %+v", r)
	}
	if d := c.done(t); d.TurnCount != 2 || d.StopReason != "end_turn" {
		t.Fatalf("done = %+v", d)
	}
	// The second request carries the tool result after the call.
	req := p.Requests()[1]
	last := req.Messages[len(req.Messages)-1]
	if last.Role != llm.RoleUser || last.Content[0].Type != llm.BlockToolResult || last.Content[0].ToolUseID != "call_1" {
		t.Fatalf("second request ends with %+v", last)
	}
	if len(req.Tools) != 1 || req.Tools[0].Name != "echo" {
		t.Fatalf("tools = %+v", req.Tools)
	}
}

func TestParallelToolsOverlap(t *testing.T) {
	t.Parallel()
	var running, peak atomic.Int32
	barrier := make(chan struct{})
	var once sync.Once
	slow := func(ctx context.Context, in echoIn) (tool.Result, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == 3 {
			once.Do(func() { close(barrier) })
		}
		select {
		case <-barrier: // all three are running at once
		case <-time.After(5 * time.Second):
			return tool.Errorf("calls did not overlap"), nil
		}
		return tool.Text(in.Text), nil
	}
	p := llmtest.NewScripted("scripted",
		toolScript(llmtest.ToolBlock("a", "slow", `{"text":"1"}`), llmtest.ToolBlock("b", "slow", `{"text":"2"}`), llmtest.ToolBlock("c", "slow", `{"text":"3"}`)),
		llmtest.Text("ok"),
	)
	s := newAgent(t, p, agent.AllowAll, echoTool("slow", true, slow)).NewSession()
	c := collect(s, context.Background(), "go")
	if peak.Load() != 3 {
		t.Fatalf("peak concurrency = %d, want 3", peak.Load())
	}
	// Results go back in call order whatever order they finished in.
	res := s.Messages()[2].Content
	for i, id := range []string{"a", "b", "c"} {
		if res[i].ToolUseID != id || res[i].IsError {
			t.Fatalf("result %d = %+v", i, res[i])
		}
	}
	_ = c
}

func TestUnsafeToolsRunSerially(t *testing.T) {
	t.Parallel()
	var running, peak atomic.Int32
	var order []string
	var mu sync.Mutex
	unsafe := func(ctx context.Context, in echoIn) (tool.Result, error) {
		if n := running.Add(1); n > peak.Load() {
			peak.Store(n)
		}
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
		order = append(order, in.Text)
		mu.Unlock()
		running.Add(-1)
		return tool.Text(in.Text), nil
	}
	p := llmtest.NewScripted("scripted",
		toolScript(llmtest.ToolBlock("a", "unsafe", `{"text":"1"}`), llmtest.ToolBlock("b", "unsafe", `{"text":"2"}`)),
		llmtest.Text("ok"),
	)
	s := newAgent(t, p, agent.AllowAll, echoTool("unsafe", false, unsafe)).NewSession()
	collect(s, context.Background(), "go")
	if peak.Load() != 1 || strings.Join(order, ",") != "1,2" {
		t.Fatalf("peak = %d, order = %v", peak.Load(), order)
	}
}

func TestApproval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		approve   agent.ApproveFunc
		wantError bool
		wantText  string
	}{
		{"no approver denies", nil, true, "no approver"},
		{"deny with reason", func(context.Context, agent.ApprovalRequest) agent.Decision { return agent.Deny("not today") }, true, "not today"},
		{"panicking approver denies", func(context.Context, agent.ApprovalRequest) agent.Decision { panic("boom") }, true, "approval check failed"},
		{"allow", agent.AllowAll, false, "echo: x"},
		{"AllowReadOnly denies a tool that writes", agent.AllowReadOnly, true, "not read-only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			approve := tt.approve
			if approve != nil {
				inner := approve
				approve = func(ctx context.Context, r agent.ApprovalRequest) agent.Decision {
					calls.Add(1)
					if r.ToolName != "echo" || string(r.Input) != `{"text":"x"}` || r.Spec.ReadOnly || r.Reason == "" {
						t.Errorf("approval request = %+v", r)
					}
					return inner(ctx, r)
				}
			}
			var ran atomic.Int32
			p := llmtest.NewScripted("scripted", toolScript(llmtest.ToolBlock("a", "echo", `{"text":"x"}`)), llmtest.Text("ok"))
			s := newAgent(t, p, approve, echoTool("echo", false, func(ctx context.Context, in echoIn) (tool.Result, error) {
				ran.Add(1)
				return tool.Text("echo: " + in.Text), nil
			})).NewSession()
			c := collect(s, context.Background(), "go")
			if tt.approve != nil && calls.Load() != 1 {
				t.Fatalf("approve called %d times, want 1", calls.Load())
			}
			r := c.of(agent.EventToolResult)[0].Data.(agent.ToolResultData)
			if r.IsError != tt.wantError || !strings.Contains(r.Output, tt.wantText) || r.Denied != tt.wantError {
				t.Fatalf("result = %+v", r)
			}
			if tt.wantError && ran.Load() != 0 {
				t.Fatal("a denied tool ran")
			}
			// The run goes on: the model saw the result and answered.
			if d := c.done(t); d.StopReason != "end_turn" || d.TurnCount != 2 {
				t.Fatalf("done = %+v", d)
			}
			got := p.Requests()[1].Messages[2].Content[0]
			if got.IsError != tt.wantError || !strings.Contains(got.Content[0].Text, tt.wantText) {
				t.Fatalf("model saw %+v", got)
			}
		})
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		scripts  []llmtest.Script
		retries  int
		stop     string
		errCat   llm.Category
		requests int
	}{
		{"overloaded then ok", []llmtest.Script{{Status: 529}, llmtest.Text("ok")}, 1, "end_turn", "", 2},
		{"rate limit honours retry-after then ok", []llmtest.Script{{Status: 429, RetryAfter: 20 * time.Millisecond}, llmtest.Text("ok")}, 1, "end_turn", "", 2},
		{"dropped stream then ok", []llmtest.Script{{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b", "c")}, CutAfter: 1}, llmtest.Text("ok")}, 1, "end_turn", "", 2},
		{"bad request is not retried", []llmtest.Script{{Status: 400}, llmtest.Text("never")}, 0, "error", llm.CategoryBadRequest, 1},
		{"unknown model is not retried", []llmtest.Script{{Status: 404}, llmtest.Text("never")}, 0, "error", llm.CategoryNotFound, 1},
		{"auth is not retried", []llmtest.Script{{Status: 401}}, 0, "error", llm.CategoryAuth, 1},
		{"attempts are bounded", []llmtest.Script{{Status: 500}, {Status: 500}, {Status: 500}, {Status: 500}, {Status: 500}, llmtest.Text("never")}, 4, "error", llm.CategoryServer, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := llmtest.NewScripted("scripted", tt.scripts...)
			s := newAgent(t, p, nil).NewSession()
			start := time.Now()
			c := collect(s, context.Background(), "go")
			if n := len(c.of(agent.EventRetry)); n != tt.retries {
				t.Fatalf("retries = %d, want %d; events %v", n, tt.retries, c.types())
			}
			if d := c.done(t); d.StopReason != tt.stop {
				t.Fatalf("stop = %s, want %s", d.StopReason, tt.stop)
			}
			if len(p.Requests()) != tt.requests {
				t.Fatalf("requests = %d, want %d", len(p.Requests()), tt.requests)
			}
			if tt.errCat != "" {
				var e *llm.Error
				if !errors.As(c.err, &e) || e.Category != tt.errCat {
					t.Fatalf("err = %v, want category %s", c.err, tt.errCat)
				}
				if len(c.of(agent.EventError)) != 1 {
					t.Fatal("no error event")
				}
			}
			if strings.Contains(tt.name, "retry-after") && time.Since(start) < 20*time.Millisecond {
				t.Fatal("the retry hint was not honoured")
			}
			// A failed attempt leaves nothing in the history.
			for _, m := range s.Messages() {
				if strings.Contains(m.Text(), "abc") {
					t.Fatalf("partial output of a failed attempt kept: %+v", m)
				}
			}
		})
	}
}

func TestMaxTokensContinuationAndMaxTurns(t *testing.T) {
	t.Parallel()
	p := llmtest.NewScripted("scripted",
		llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("part one")}, StopReason: llm.StopMaxTokens},
		llmtest.Text(" part two"),
	)
	s := newAgent(t, p, nil).NewSession()
	c := collect(s, context.Background(), "write a lot")
	if d := c.done(t); d.TurnCount != 2 || d.StopReason != "end_turn" {
		t.Fatalf("done = %+v", d)
	}
	last := p.Requests()[1].Messages
	if got := last[len(last)-1].Text(); !strings.Contains(got, "truncated") {
		t.Fatalf("continuation prompt missing: %q", got)
	}

	// A model that keeps calling tools stops at MaxTurns.
	var scripts []llmtest.Script
	for i := range 5 {
		scripts = append(scripts, toolScript(llmtest.ToolBlock(fmt.Sprint("c", i), "echo", `{"text":"x"}`)))
	}
	p2 := llmtest.NewScripted("scripted", scripts...)
	reg, _ := tool.NewRegistry(echoTool("echo", true, nil))
	a, _ := agent.New(agent.Config{Provider: p2, Model: "m", Tools: reg, Approve: agent.AllowAll, MaxTurns: 3})
	c = collect(a.NewSession(), context.Background(), "loop")
	if d := c.done(t); d.StopReason != "max_turns" || d.TurnCount != 3 {
		t.Fatalf("done = %+v", d)
	}
}

func TestStopSequence(t *testing.T) {
	t.Parallel()
	p := llmtest.NewScripted("scripted", llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a")}, StopReason: llm.StopSequence, StopSequence: "END"})
	c := collect(newAgent(t, p, nil).NewSession(), context.Background(), "x")
	if d := c.done(t); d.StopReason != "stop_sequence" {
		t.Fatalf("done = %+v", d)
	}
}

func TestCancelMidToolKeepsHistoryValid(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	blocker := func(ctx context.Context, in echoIn) (tool.Result, error) {
		close(started)
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	}
	p := llmtest.NewScripted("scripted", toolScript(llmtest.ToolBlock("a", "block", `{"text":"x"}`), llmtest.ToolBlock("b", "block", `{"text":"y"}`)))
	s := newAgent(t, p, agent.AllowAll, echoTool("block", false, blocker)).NewSession()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	c := collect(s, ctx, "go")
	if d := c.done(t); d.StopReason != "cancelled" {
		t.Fatalf("done = %+v; events %v", d, c.types())
	}
	msgs := s.Messages()
	res := msgs[len(msgs)-1]
	if res.Role != llm.RoleUser || len(res.Content) != 2 || res.Content[0].ToolUseID != "a" || res.Content[1].ToolUseID != "b" || !res.Content[1].IsError {
		t.Fatalf("history after cancel ends with %+v", res)
	}
}

func TestBreakingOutLeaksNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 20 {
		p := llmtest.NewScripted("scripted",
			toolScript(llmtest.ToolBlock("a", "slow", `{"text":"x"}`), llmtest.ToolBlock("b", "slow", `{"text":"y"}`)),
			llmtest.Text("never"))
		s := newAgent(t, p, agent.AllowAll, echoTool("slow", true, func(ctx context.Context, in echoIn) (tool.Result, error) {
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		})).NewSession()
		for ev := range s.Run(context.Background(), "go") {
			if ev.Type == agent.EventToolUse {
				break
			}
		}
		// History is valid after breaking out mid-turn.
		msgs := s.Messages()
		if last := msgs[len(msgs)-1]; last.Role != llm.RoleUser || len(last.Content) != 2 {
			t.Fatalf("history ends with %+v", last)
		}
	}
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		t.Fatalf("goroutines: %d before, %d after", before, n)
	}
}

func TestResumeRepairsOrphans(t *testing.T) {
	t.Parallel()
	history := []llm.Message{
		llm.UserText("first"),
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUse("orphan", "echo", json.RawMessage(`{}`))}},
	}
	p := llmtest.NewScripted("scripted", llmtest.Text("ok"))
	a := newAgent(t, p, nil)
	s := a.ResumeSession(history)
	collect(s, context.Background(), "again")
	msgs := p.Requests()[0].Messages
	if len(msgs) != 3 || msgs[2].Role != llm.RoleUser {
		t.Fatalf("request messages = %+v", msgs)
	}
	c := msgs[2].Content
	if c[0].Type != llm.BlockToolResult || c[0].ToolUseID != "orphan" || !c[0].IsError || c[1].Text != "again" {
		t.Fatalf("repaired turn = %+v", c)
	}
}

func TestAskUserEndsTheRun(t *testing.T) {
	t.Parallel()
	ask := tool.Func("AskUserQuestion", "asks", tool.Meta{ReadOnly: true, EndsTurn: true}, func(ctx context.Context, in echoIn, call *tool.Call) (tool.Result, error) {
		call.Notify("ask_user", []string{in.Text})
		return tool.Text("shown to the user"), nil
	})
	p := llmtest.NewScripted("scripted", toolScript(llmtest.ToolBlock("q", "AskUserQuestion", `{"text":"which?"}`)), llmtest.Text("never"))
	s := newAgent(t, p, agent.AllowAll, ask).NewSession()
	c := collect(s, context.Background(), "go")
	if d := c.done(t); d.StopReason != "end_turn" || d.TurnCount != 1 {
		t.Fatalf("done = %+v", d)
	}
	au := c.of(agent.EventAskUser)
	if len(au) != 1 || fmt.Sprint(au[0].Data.(agent.NotifyData).Payload) != "[which?]" {
		t.Fatalf("ask_user events = %+v", au)
	}
}

func TestRunFuncAndErrors(t *testing.T) {
	t.Parallel()
	if _, err := agent.New(agent.Config{Model: "m"}); err == nil {
		t.Fatal("missing provider accepted")
	}
	if _, err := agent.New(agent.Config{Provider: llmtest.NewScripted("x")}); err == nil {
		t.Fatal("missing model accepted")
	}
	p := llmtest.NewScripted("scripted", llmtest.Text("a"), llmtest.Text("b"))
	s := newAgent(t, p, nil).NewSession()
	var n int
	if err := s.RunFunc(context.Background(), "x", func(agent.Event) error { n++; return nil }); err != nil || n == 0 {
		t.Fatalf("RunFunc = %v, %d events", err, n)
	}
	stop := errors.New("stop")
	if err := s.RunFunc(context.Background(), "y", func(agent.Event) error { return stop }); err != stop {
		t.Fatalf("RunFunc callback error = %v", err)
	}
}
