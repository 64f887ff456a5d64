package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/openai"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/tool"
)

type loopIn struct {
	Path string `json:"path"`
}

// loopTools are the tools of the loop scenarios: Open always fails
// ("no such file"), Stat (read-only) always answers the same, Ping works.
// Each counts its executions.
type loopTools struct {
	open, stat, ping atomic.Int32
}

func (lt *loopTools) registry(t *testing.T) *tool.Registry {
	t.Helper()
	reg, err := tool.NewRegistry(
		tool.Func("Open", "opens a file", tool.Meta{Effect: tool.EffectWrite}, func(_ context.Context, in loopIn, _ *tool.Call) (tool.Result, error) {
			lt.open.Add(1)
			return tool.Errorf("open %s: no such file or directory", in.Path), nil
		}),
		tool.Func("Stat", "describes a file", tool.Meta{ReadOnly: true, ConcurrencySafe: true, Effect: tool.EffectRead}, func(_ context.Context, in loopIn, _ *tool.Call) (tool.Result, error) {
			lt.stat.Add(1)
			return tool.Text(in.Path + ": 120 bytes"), nil
		}),
		tool.Func("Ping", "answers pong", tool.Meta{ReadOnly: true, Effect: tool.EffectRead}, func(_ context.Context, _ struct{}, _ *tool.Call) (tool.Result, error) {
			lt.ping.Add(1)
			return tool.Text(fmt.Sprint("pong ", time.Now().UnixNano())), nil
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// forever queues n turns of the model's calls (fresh ids each turn) on the
// OpenAI protocol fake, the last repeated for every further request: a
// model that never stops.
func forever(fake *llmtest.Server, n int, turn func(i int) []llmtest.Block) {
	for i := range n {
		fake.Push(llmtest.Script{Blocks: turn(i), Usage: llm.Usage{InputTokens: 100, OutputTokens: 20}})
	}
	fake.Repeat()
}

func loopAgent(t *testing.T, fake *llmtest.Server, reg *tool.Registry, g policy.Guardrails, maxTurns int, obs observe.Observer) *agent.Agent {
	t.Helper()
	info := llm.ModelInfo{ID: "gpt-test", Provider: "openai", MaxOutputTokens: 1000, InputPrice: 1, OutputPrice: 2}
	a, err := agent.New(agent.Config{
		Provider: openai.New(openai.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL + "/v1", APIKey: "k"}}),
		Model:    "gpt-test", ModelInfo: &info, Tools: reg, MaxTurns: maxTurns, Observer: obs,
		Policy: &policy.Policy{Mode: permission.ModeBypass, Guardrails: g},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func guardEvents(c collected) []agent.GuardrailData {
	var out []agent.GuardrailData
	for _, e := range c.of(agent.EventGuardrail) {
		out = append(out, e.Data.(agent.GuardrailData))
	}
	return out
}

// TestGuardrailStopsARepeatedFailingCall is the proof: a model
// that repeats the same failing call forever gets it executed 5 times;
// the 6th is refused by the guardrail (an error result saying what to do
// instead, and a guardrail event); the circuit breaker asks for a change
// of approach after 3 failed rounds and ends the run "stuck" after 3
// more.
func TestGuardrailStopsARepeatedFailingCall(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	forever(fake, 30, func(i int) []llmtest.Block {
		return []llmtest.Block{llmtest.ToolBlock(fmt.Sprint("call_", i), "Open", `{"path":"/etc/missing.conf"}`)}
	})
	lt := &loopTools{}
	c := collect(loopAgent(t, fake, lt.registry(t), policy.Guardrails{}, 0, nil).NewSession(), context.Background(), "read the config")
	if n := lt.open.Load(); n != 5 {
		t.Fatalf("the failing call ran %d times, want 5", n)
	}
	d := c.done(t)
	if d.StopReason != agent.StopStuck || d.TurnCount != 6 {
		t.Fatalf("done = %+v, want stuck after 6 turns", d)
	}
	g := guardEvents(c)
	if len(g) != 3 {
		t.Fatalf("guardrail events = %+v, want the note, the refusal and the stop", g)
	}
	note, block, stop := g[0], g[1], g[2]
	if note.Rule != observe.RuleFailedRounds || note.Action != "note" || note.Count != 3 {
		t.Errorf("note = %+v", note)
	}
	if block.Rule != policy.GuardSameCall || block.ToolName != "Open" || block.Count != 5 || block.ID != "call_5" || len(block.Signature) != 16 {
		t.Errorf("refusal = %+v", block)
	}
	if stop.Action != "stop" || stop.Count != 6 || !strings.Contains(stop.Reason, "6 rounds") {
		t.Errorf("stop = %+v", stop)
	}
	results := c.of(agent.EventToolResult)
	last := results[len(results)-1].Data.(agent.ToolResultData)
	if !last.IsError || !last.Denied || last.Stage != policy.StageGuardrail || !strings.Contains(last.Output, "Do not repeat it unchanged") {
		t.Errorf("the refused call's result = %+v", last)
	}
	// The model saw the note (a user-role text after the 3rd round's
	// results) and the refusal.
	reqs := fake.Requests()
	if len(reqs) != 6 {
		t.Fatalf("model calls = %d, want 6", len(reqs))
	}
	if body := string(reqs[3].Body); !strings.Contains(body, "every tool call in the last 3 rounds failed") {
		t.Errorf("the 4th request does not carry the note")
	}
	if body := string(reqs[2].Body); strings.Contains(body, "every tool call in the last") {
		t.Errorf("the note came too early")
	}
}

// TestGuardrailVariedArguments: a tool that keeps failing with different
// arguments is refused after 8 failures in a row, even while another tool
// works in the same rounds (so no round fails entirely and the circuit
// breaker stays out of it).
func TestGuardrailVariedArguments(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	forever(fake, 12, func(i int) []llmtest.Block {
		return []llmtest.Block{
			llmtest.ToolBlock(fmt.Sprint("open_", i), "Open", fmt.Sprintf(`{"path":"/tmp/guess-%d"}`, i)),
			llmtest.ToolBlock(fmt.Sprint("ping_", i), "Ping", `{}`),
		}
	})
	lt := &loopTools{}
	c := collect(loopAgent(t, fake, lt.registry(t), policy.Guardrails{}, 12, nil).NewSession(), context.Background(), "find the file")
	if n := lt.open.Load(); n != 8 {
		t.Fatalf("Open ran %d times, want 8", n)
	}
	if n := lt.ping.Load(); n != 12 {
		t.Fatalf("Ping ran %d times, want 12", n)
	}
	if d := c.done(t); d.StopReason != agent.StopMaxTurns {
		t.Fatalf("done = %+v, want max_turns", d)
	}
	g := guardEvents(c)
	if len(g) != 4 { // turns 9 to 12
		t.Fatalf("guardrail events = %+v", g)
	}
	for _, e := range g {
		if e.Rule != policy.GuardSameTool || e.ToolName != "Open" || e.Count != 8 {
			t.Fatalf("refusal = %+v", e)
		}
	}
}

// TestGuardrailIdenticalReadOnlyResults: a read-only call that keeps
// returning the same answer runs 5 times; then it is refused, and the
// rounds of nothing but refusals end the run through the circuit breaker.
func TestGuardrailIdenticalReadOnlyResults(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	forever(fake, 30, func(i int) []llmtest.Block {
		return []llmtest.Block{llmtest.ToolBlock(fmt.Sprint("call_", i), "Stat", `{"path":"go.mod"}`)}
	})
	lt := &loopTools{}
	c := collect(loopAgent(t, fake, lt.registry(t), policy.Guardrails{}, 50, nil).NewSession(), context.Background(), "check go.mod")
	if n := lt.stat.Load(); n != 5 {
		t.Fatalf("Stat ran %d times, want 5", n)
	}
	d := c.done(t)
	// 5 rounds that worked, then refusals: note after 3 failed rounds,
	// stop after 3 more.
	if d.StopReason != agent.StopStuck || d.TurnCount != 11 {
		t.Fatalf("done = %+v, want stuck at turn 11", d)
	}
	if g := guardEvents(c); g[0].Rule != policy.GuardSameResult || g[0].Count != 5 || !strings.Contains(g[0].Reason, "identical result") {
		t.Fatalf("first guardrail event = %+v", g[0])
	}
}

// TestCircuitBreaker: rounds in which every call fails, each with other
// arguments (so no single-call guard fires), get the note after
// FailedRounds and end the run after StuckRounds more; a round with one
// success starts the count again; disabled, the run goes to max_turns.
func TestCircuitBreaker(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		g        policy.Guardrails
		success  map[int]bool // turns (from 0) that also call Ping
		maxTurns int
		stop     string
		turns    int
		notes    []int // how many notes each model call's request carries
	}{
		{name: "defaults", maxTurns: 20, stop: agent.StopStuck, turns: 6, notes: []int{0, 0, 0, 1, 1, 1}},
		{name: "configured", g: policy.Guardrails{FailedRounds: 2, StuckRounds: 1}, maxTurns: 20, stop: agent.StopStuck, turns: 3, notes: []int{0, 0, 1}},
		{name: "a success resets", g: policy.Guardrails{SameToolFailures: -1}, success: map[int]bool{4: true}, maxTurns: 20,
			stop: agent.StopStuck, turns: 11, notes: []int{0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2}},
		{name: "note only", g: policy.Guardrails{StuckRounds: -1, SameToolFailures: -1}, maxTurns: 7, stop: agent.StopMaxTurns, turns: 7, notes: []int{0, 0, 0, 1, 1, 1, 1}},
		{name: "disabled", g: policy.Guardrails{Disabled: true}, maxTurns: 10, stop: agent.StopMaxTurns, turns: 10, notes: []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.NewOpenAI(t)
			forever(fake, 40, func(i int) []llmtest.Block {
				b := []llmtest.Block{llmtest.ToolBlock(fmt.Sprint("open_", i), "Open", fmt.Sprintf(`{"path":"/tmp/try-%d"}`, i))}
				if tt.success[i] {
					b = append(b, llmtest.ToolBlock(fmt.Sprint("ping_", i), "Ping", `{}`))
				}
				return b
			})
			lt := &loopTools{}
			s := loopAgent(t, fake, lt.registry(t), tt.g, tt.maxTurns, nil).NewSession()
			c := collect(s, context.Background(), "go")
			if d := c.done(t); d.StopReason != tt.stop || d.TurnCount != tt.turns {
				t.Fatalf("done = %s after %d turns, want %s after %d", d.StopReason, d.TurnCount, tt.stop, tt.turns)
			}
			var notes []int
			for _, r := range fake.Requests() {
				notes = append(notes, strings.Count(string(r.Body), "every tool call in the last"))
			}
			if fmt.Sprint(notes) != fmt.Sprint(tt.notes) {
				t.Fatalf("requests carrying a note: %v, want %v", notes, tt.notes)
			}
			// The note is a user-role text after the round's tool results:
			// the history stays valid for every provider.
			for _, m := range s.Messages() {
				if m.Role != llm.RoleUser || !strings.Contains(m.Text(), "every tool call in the last") {
					continue
				}
				if m.Content[0].Type != llm.BlockToolResult || m.Content[len(m.Content)-1].Type != llm.BlockText {
					t.Fatalf("the note's message = %+v", m.Content)
				}
			}
		})
	}
}

// recObserver records what the engine reports: events, errors, metrics
// and spans.
type recObserver struct {
	mu      sync.Mutex
	events  []string
	data    []map[string]any
	errs    []error
	metrics map[string]float64
	spans   []string
}

type recSpanKey struct{}

func (o *recObserver) Event(name string, data map[string]any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, name)
	o.data = append(o.data, data)
}

func (o *recObserver) Error(err error, _ map[string]any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.errs = append(o.errs, err)
}

func (o *recObserver) Metric(name string, v float64, tags map[string]string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.metrics == nil {
		o.metrics = map[string]float64{}
	}
	key := name
	for _, k := range []string{"tool", "outcome", "rule", "verdict", "stage", "type", "stop_reason", "action", "category", "failover"} {
		if v, ok := tags[k]; ok {
			key += " " + k + "=" + v
		}
	}
	o.metrics[key] += v
}

func (o *recObserver) SpanStart(ctx context.Context, name string, attrs map[string]any) context.Context {
	o.mu.Lock()
	defer o.mu.Unlock()
	parent, _ := ctx.Value(recSpanKey{}).(string)
	label := name
	if tn, ok := attrs[observe.AttrToolName].(string); ok {
		label += ":" + tn
	}
	o.spans = append(o.spans, parent+">"+label)
	return context.WithValue(ctx, recSpanKey{}, label)
}

func (o *recObserver) SpanEnd(context.Context, map[string]any, error) {}

func (o *recObserver) find(name string) []map[string]any {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []map[string]any
	for i, e := range o.events {
		if e == name {
			out = append(out, o.data[i])
		}
	}
	return out
}

// TestObserverSeesTheLoop: the observer gets the model calls, the tool
// calls by outcome, the permission decisions (the guardrail's among
// them), the guardrail events, the run's end, its metrics and its spans.
func TestObserverSeesTheLoop(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	forever(fake, 30, func(i int) []llmtest.Block {
		return []llmtest.Block{llmtest.ToolBlock(fmt.Sprint("call_", i), "Open", `{"path":"/x"}`)}
	})
	obs := &recObserver{}
	denials := observe.NewDenialTracker()
	lt := &loopTools{}
	collect(loopAgent(t, fake, lt.registry(t), policy.Guardrails{}, 0, observe.NewComposite(obs, denials)).NewSession(), context.Background(), "go")

	if n := len(obs.find(observe.EventModelCall)); n != 6 {
		t.Errorf("model_call events = %d, want 6", n)
	}
	end := obs.find(observe.EventRunEnd)
	if len(end) != 1 || end[0]["stop_reason"] != agent.StopStuck || end[0]["turns"] != 6 {
		t.Errorf("run_end = %v", end)
	}
	guards := obs.find(observe.EventGuardrail)
	if len(guards) != 3 || guards[1]["rule"] != policy.GuardSameCall || guards[1]["signature"] == "" {
		t.Errorf("guardrail events = %v", guards)
	}
	want := map[string]float64{
		"weft.turns": 6,
		"weft.tool.calls tool=Open outcome=error":                          5,
		"weft.tool.calls tool=Open outcome=blocked":                        1,
		"weft.guardrail.blocks tool=Open rule=same_call_failures":          1,
		"weft.permission.decisions tool=Open verdict=allow stage=mode":     5,
		"weft.permission.decisions tool=Open verdict=deny stage=guardrail": 1,
		"weft.model.tokens type=input":                                     600,
		"weft.model.tokens type=output":                                    120,
		"weft.circuit_breaker action=note":                                 1,
		"weft.circuit_breaker action=stop":                                 1,
		"weft.runs stop_reason=stuck":                                      1,
	}
	obs.mu.Lock()
	for k, v := range want {
		if obs.metrics[k] != v {
			t.Errorf("metric %q = %v, want %v (all: %v)", k, obs.metrics[k], v, obs.metrics)
		}
	}
	if c := obs.metrics["weft.model.cost_usd"]; c < 0.00083 || c > 0.00085 { // 6*(100*1+20*2)/1e6
		t.Errorf("cost = %v", c)
	}
	spans := fmt.Sprint(obs.spans)
	obs.mu.Unlock()
	if !strings.HasPrefix(spans, "[>invoke_agent invoke_agent>chat invoke_agent>execute_tool:Open invoke_agent>chat") {
		t.Errorf("spans = %s", spans)
	}
	s := denials.Stats()
	if s.Total != 1 || s.ByRule["guardrail:same_call_failures"] != 1 || s.ByTool["Open"] != 1 {
		t.Errorf("denial stats = %+v", s)
	}
}

// TestNestedApprovalsInParallel: tools that ask the run's approver for
// calls of their own (as a workflow does, through policy.CallerFrom) may
// do so from parallel goroutines; the time the approver takes is
// accounted without a race.
func TestNestedApprovalsInParallel(t *testing.T) {
	t.Parallel()
	nested := func(name string) tool.Tool {
		return tool.Func(name, "asks for a nested call", tool.Meta{ReadOnly: true, ConcurrencySafe: true, Effect: tool.EffectRead},
			func(ctx context.Context, _ struct{}, _ *tool.Call) (tool.Result, error) {
				c, ok := policy.CallerFrom(ctx)
				if !ok {
					return tool.Errorf("no caller"), nil
				}
				for range 20 {
					c.Human(ctx, policy.Call{Tool: "Inner"}, "nested")
				}
				return tool.Text("asked"), nil
			})
	}
	reg, err := tool.NewRegistry(nested("A"), nested("B"))
	if err != nil {
		t.Fatal(err)
	}
	p := llmtest.NewScripted("scripted",
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("a", "A", `{}`), llmtest.ToolBlock("b", "B", `{}`)}},
		llmtest.Text("done"))
	info := llm.ModelInfo{ID: "m", MaxOutputTokens: 100}
	a := mustAgent(t, agent.Config{Provider: p, Model: "m", ModelInfo: &info, Tools: reg, Observer: &recObserver{},
		Approve: func(context.Context, agent.ApprovalRequest) agent.Decision { return agent.Allow() }})
	c := collect(a.NewSession(), context.Background(), "go")
	if d := c.done(t); d.StopReason != agent.StopEndTurn {
		t.Fatalf("done = %+v", d)
	}
}
