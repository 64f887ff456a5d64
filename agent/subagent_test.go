package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/tool"
)

// eventLog collects events from several goroutines (Config.SubagentEvents).
type eventLog struct {
	mu     sync.Mutex
	events []agent.Event
}

func (l *eventLog) add(ev agent.Event) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
}

func (l *eventLog) all() []agent.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]agent.Event(nil), l.events...)
}

func (l *eventLog) ends() []agent.SubagentEndData {
	var out []agent.SubagentEndData
	for _, e := range l.all() {
		if d, ok := e.Data.(agent.SubagentEndData); ok {
			out = append(out, d)
		}
	}
	return out
}

func anthropicAgent(t *testing.T, fake *llmtest.Server, cfg agent.Config) *agent.Agent {
	t.Helper()
	cfg.Provider = anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL, APIKey: "k"}})
	if cfg.Model == "" {
		cfg.Model = "claude-sonnet-4-5"
	}
	cfg.Retry = agent.RetryPolicy{MaxAttempts: 1}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// userTexts are the texts of a request's user messages (tool results
// left out), in order.
func userTexts(req llmtest.Request) []string {
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(req.Body, &body)
	var out []string
	for _, m := range body.Messages {
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			out = append(out, s)
			continue
		}
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(m.Content, &blocks)
		for _, b := range blocks {
			if b.Type == "text" {
				out = append(out, b.Text)
			}
		}
	}
	return out
}

// TestSpawnHasItsOwnConversationAndCost: a sub-agent spawned on a session
// talks to the model with its own system prompt and history, keeps that
// history for a further prompt, has its own totals, and its cost is
// counted in the parent's; its events reach Config.SubagentEvents (it was
// spawned outside a run). Close is idempotent and ends it.
func TestSpawnHasItsOwnConversationAndCost(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	fake.Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("parent answer")}, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}},
		llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("first sub answer")}, Usage: llm.Usage{InputTokens: 1000, OutputTokens: 100}},
		llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("second sub answer")}, Usage: llm.Usage{InputTokens: 2000, OutputTokens: 200}},
	)
	var log eventLog
	a := anthropicAgent(t, fake, agent.Config{System: "parent system", SubagentEvents: log.add})
	s := a.NewSession()
	if c := collect(s, context.Background(), "parent prompt"); c.err != nil {
		t.Fatal(c.err)
	}
	parentOnly := s.Totals()

	sa, err := s.Spawn(context.Background(), agent.SpawnConfig{Type: "explore", Description: "look around", System: "sub system"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"sub prompt one", "sub prompt two"} {
		for _, err := range sa.Run(context.Background(), p) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := sa.Last(); got.Status != agent.SubagentCompleted || got.Result != "second sub answer" {
		t.Fatalf("last = %+v", got)
	}
	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	// The sub-agent's requests: its own system prompt and only its own
	// conversation, the first exchange kept for the second prompt.
	for i, want := range [][]string{{"sub prompt one"}, {"sub prompt one", "sub prompt two"}} {
		req := reqs[i+1]
		if got := userTexts(req); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("sub request %d user messages = %q, want %q", i+1, got, want)
		}
		if sys := systemOf(t, req.Body); !strings.Contains(sys, "sub system") || strings.Contains(sys, "parent system") {
			t.Fatalf("sub request system = %q", sys)
		}
		if strings.Contains(string(req.Body), "parent prompt") {
			t.Fatalf("the sub-agent saw the parent's conversation: %s", req.Body)
		}
	}
	if !strings.Contains(string(reqs[2].Body), "first sub answer") {
		t.Fatal("the second prompt lost the sub-agent's first answer")
	}
	if got := s.Messages(); len(got) != 2 {
		t.Fatalf("the parent's history changed: %d messages", len(got))
	}

	own := sa.Totals()
	if own.Usage.InputTokens != 3000 || own.Usage.OutputTokens != 300 || own.Turns != 2 {
		t.Fatalf("sub totals = %+v", own)
	}
	tot := s.Totals()
	if tot.Usage.InputTokens != parentOnly.Usage.InputTokens+3000 || tot.CostUSD <= parentOnly.CostUSD || tot.Turns != parentOnly.Turns {
		t.Fatalf("parent totals %+v, before %+v", tot, parentOnly)
	}

	ends := log.ends()
	if len(ends) != 2 || ends[0].Status != agent.SubagentCompleted || ends[1].Result != "second sub answer" || ends[0].SubagentID != sa.ID() {
		t.Fatalf("subagent_end events = %+v", ends)
	}
	if err := sa.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sa.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	var runErr error
	for _, err := range sa.Run(context.Background(), "again") {
		if err != nil {
			runErr = err
		}
	}
	if !errors.Is(runErr, agent.ErrSubagentClosed) || len(fake.Requests()) != 3 {
		t.Fatalf("run after Close: err = %v, requests = %d", runErr, len(fake.Requests()))
	}
}

// TestSubagentToolsAreFiltered: the sub-agent gets the parent's tools
// that its patterns name, never one that spawns sub-agents or ends the
// turn for the user, and none the parent lacks.
func TestSubagentToolsAreFiltered(t *testing.T) {
	t.Parallel()
	spawner := spawnerTool{echoTool("Agent", true, nil)}
	ask := tool.Func("Ask", "asks the user", tool.Meta{EndsTurn: true}, func(context.Context, echoIn, *tool.Call) (tool.Result, error) {
		return tool.Text("asked"), nil
	})
	tools := []tool.Tool{echoTool("Read", true, nil), echoTool("Grep", true, nil), echoTool("Write", false, nil),
		echoTool("mcp__gh__issues", true, nil), echoTool("mcp__gh__pr", true, nil), spawner, ask}
	a := newAgent(t, llmtest.NewScripted("scripted"), nil, tools...)
	s := a.NewSession()
	tests := []struct {
		name             string
		patterns, except []string
		want             string
	}{
		{"all", nil, nil, "Read Grep Write mcp__gh__issues mcp__gh__pr"},
		{"named", []string{"Read", "Bash", "Grep"}, nil, "Read Grep"},
		{"globs", []string{"mcp__gh__*", "Agent", "Ask"}, nil, "mcp__gh__issues mcp__gh__pr"},
		{"star", []string{"*"}, []string{"Write", "mcp__*"}, "Read Grep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sa, err := s.Spawn(context.Background(), agent.SpawnConfig{Tools: tt.patterns, ExcludeTools: tt.except})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, sp := range sa.Tools().Specs() {
				names = append(names, sp.Name)
			}
			if got := strings.Join(names, " "); got != tt.want {
				t.Fatalf("tools = %q, want %q", got, tt.want)
			}
		})
	}
}

// spawnerTool marks a tool as one that drives sub-agents.
type spawnerTool struct{ tool.Tool }

func (spawnerTool) SubagentTool() {}

// TestSubagentCannotSpawn: Spawn from a sub-agent's tool call fails, and
// so does the package-level Spawn outside any run.
func TestSubagentCannotSpawn(t *testing.T) {
	t.Parallel()
	var nestedErr error
	nester := tool.Func("Nest", "tries to spawn", tool.Meta{ReadOnly: true}, func(ctx context.Context, _ echoIn, _ *tool.Call) (tool.Result, error) {
		_, nestedErr = agent.Spawn(ctx, agent.SpawnConfig{})
		if o, ok := agent.OriginFrom(ctx); !ok || o.SubagentID == "" {
			return tool.Errorf("no origin in a sub-agent's tool call"), nil
		}
		return tool.Text("tried"), nil
	})
	p := llmtest.NewScripted("scripted",
		toolScript(llmtest.ToolBlock("n1", "Nest", `{"text":"x"}`)),
		llmtest.Text("done"))
	a := newAgent(t, p, nil, nester)
	sa, err := a.NewSession().Spawn(context.Background(), agent.SpawnConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for range sa.Run(context.Background(), "go") {
	}
	if !errors.Is(nestedErr, agent.ErrNestedSubagent) {
		t.Fatalf("Spawn in a sub-agent's call: %v", nestedErr)
	}
	if res := p.Requests()[1].Messages[2].Content[0]; res.IsError {
		t.Fatalf("the tool's result: %+v", res)
	}
	if _, err := agent.Spawn(context.Background(), agent.SpawnConfig{}); !errors.Is(err, agent.ErrNoRun) {
		t.Fatalf("Spawn outside a run: %v", err)
	}
}

// panicky is a provider that panics: a broken one, for the sub-agent's
// panic path.
type panicky struct{}

func (panicky) Name() string { return "panicky" }
func (panicky) Stream(context.Context, *llm.Request) iter.Seq[llm.Event] {
	return func(func(llm.Event) bool) { panic("provider bug") }
}

// TestSubagentEndOnEveryExitPath: each way a sub-agent's run can end
// sends exactly one subagent_start and then one subagent_end, last, with
// the status that says how it ended.
func TestSubagentEndOnEveryExitPath(t *testing.T) {
	t.Parallel()
	gate := func(started chan<- struct{}) tool.Tool {
		return echoTool("Wait", true, func(ctx context.Context, _ echoIn) (tool.Result, error) {
			close(started)
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		})
	}
	boom := echoTool("Boom", true, func(context.Context, echoIn) (tool.Result, error) { panic("tool bug") })
	tests := []struct {
		name      string
		scripts   []llmtest.Script
		provider  llm.Provider
		maxTurns  int
		drive     func(t *testing.T, sa *agent.SubAgent, started chan struct{})
		status    string
		errSubstr string
	}{
		{name: "completed", scripts: []llmtest.Script{llmtest.Text("fine")}, status: agent.SubagentCompleted},
		{name: "model error", scripts: []llmtest.Script{{Status: 400, ErrorMessage: "bad request body"}}, status: agent.SubagentFailed, errSubstr: "bad request body"},
		{name: "turn limit", scripts: []llmtest.Script{toolScript(llmtest.ToolBlock("r", "Boom", `{"text":"x"}`))}, maxTurns: 1,
			status: agent.SubagentFailed, errSubstr: "limit of 1 model calls"},
		{name: "panic in a tool", scripts: []llmtest.Script{toolScript(llmtest.ToolBlock("b", "Boom", `{"text":"x"}`)), llmtest.Text("recovered")},
			status: agent.SubagentCompleted},
		{name: "cancelled", scripts: []llmtest.Script{toolScript(llmtest.ToolBlock("w", "Wait", `{"text":"x"}`))}, status: agent.SubagentCancelled,
			drive: func(t *testing.T, sa *agent.SubAgent, started chan struct{}) {
				ctx, cancel := context.WithCancel(context.Background())
				go func() { <-started; cancel() }()
				for range sa.Run(ctx, "go") {
				}
			}},
		{name: "closed while running", scripts: []llmtest.Script{toolScript(llmtest.ToolBlock("w", "Wait", `{"text":"x"}`))}, status: agent.SubagentCancelled,
			drive: func(t *testing.T, sa *agent.SubAgent, started chan struct{}) {
				go func() { <-started; sa.Close() }()
				for range sa.Run(context.Background(), "go") {
				}
			}},
		{name: "consumer stops early", scripts: []llmtest.Script{llmtest.Text("never read")}, status: agent.SubagentCancelled,
			drive: func(t *testing.T, sa *agent.SubAgent, started chan struct{}) {
				for range sa.Run(context.Background(), "go") {
					break
				}
			}},
		{name: "panic in the sub-agent", provider: panicky{}, status: agent.SubagentFailed, errSubstr: "provider bug",
			drive: func(t *testing.T, sa *agent.SubAgent, started chan struct{}) {
				defer func() {
					if recover() == nil {
						t.Error("the panic was swallowed")
					}
				}()
				for range sa.Run(context.Background(), "go") {
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			started := make(chan struct{})
			var p llm.Provider = llmtest.NewScripted("scripted", tt.scripts...)
			if tt.provider != nil {
				p = tt.provider
			}
			var log eventLog
			reg, _ := tool.NewRegistry(gate(started), boom)
			a, err := agent.New(agent.Config{Provider: p, Model: "m", Tools: reg, SubagentEvents: log.add,
				Retry: agent.RetryPolicy{MaxAttempts: 1}, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			sa, err := a.NewSession().Spawn(context.Background(), agent.SpawnConfig{MaxTurns: tt.maxTurns})
			if err != nil {
				t.Fatal(err)
			}
			if tt.drive != nil {
				tt.drive(t, sa, started)
			} else {
				for range sa.Run(context.Background(), "go") {
				}
			}
			evs := log.all()
			if len(evs) < 2 || evs[0].Type != agent.EventSubagentStart || evs[len(evs)-1].Type != agent.EventSubagentEnd {
				t.Fatalf("events: %v", typesOf(evs))
			}
			var starts, ends int
			for _, e := range evs {
				switch e.Type {
				case agent.EventSubagentStart:
					starts++
				case agent.EventSubagentEnd:
					ends++
				}
			}
			end := evs[len(evs)-1].Data.(agent.SubagentEndData)
			if starts != 1 || ends != 1 || end.Status != tt.status || !strings.Contains(end.Error, tt.errSubstr) || end.SubagentID != sa.ID() {
				t.Fatalf("starts %d ends %d, end = %+v; want status %s, error with %q", starts, ends, end, tt.status, tt.errSubstr)
			}
			if tt.status == agent.SubagentCompleted && end.Error != "" {
				t.Fatalf("a completed run has an error: %q", end.Error)
			}
			if sa.Running() {
				t.Fatal("still running after the end")
			}
		})
	}
}

func typesOf(evs []agent.Event) []agent.EventType {
	out := make([]agent.EventType, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// TestSubagentSlots: a session runs at most Config.MaxSubagents
// sub-agents at once; the others wait for a slot and then run.
func TestSubagentSlots(t *testing.T) {
	t.Parallel()
	var inFlight, maxInFlight atomic.Int32
	slow := echoTool("Slow", true, func(ctx context.Context, _ echoIn) (tool.Result, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		return tool.Text("ok"), nil
	})
	const n = 4
	var scripts []llmtest.Script
	for range n {
		scripts = append(scripts, toolScript(llmtest.ToolBlock("s", "Slow", `{"text":"x"}`)))
	}
	for range n {
		scripts = append(scripts, llmtest.Text("done"))
	}
	reg, _ := tool.NewRegistry(slow)
	a, err := agent.New(agent.Config{Provider: llmtest.NewScripted("scripted", scripts...), Model: "m", Tools: reg, MaxSubagents: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := a.NewSession()
	var wg sync.WaitGroup
	for range n {
		sa, err := s.Spawn(context.Background(), agent.SpawnConfig{})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for range sa.Run(context.Background(), "go") {
			}
			if st := sa.Last().Status; st != agent.SubagentCompleted {
				t.Errorf("status %s", st)
			}
		})
	}
	wg.Wait()
	if got := maxInFlight.Load(); got > 2 {
		t.Fatalf("%d sub-agents ran at once; the limit is 2", got)
	}
}

// TestSubagentStopHook: subagent_stop fires (not stop) when a sub-agent
// finishes, with Claude Code's agent_id and agent_type, and can send it
// back to work as a stop hook can.
func TestSubagentStopHook(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, marker, stopOut := filepath.Join(dir, "seen"), filepath.Join(dir, "once"), filepath.Join(dir, "stop")
	body := `cat >> ` + out + `; if [ -e ` + marker + ` ]; then exit 0; fi; touch ` + marker + `; echo '{"decision":"block","reason":"check your work"}'`
	m := hooks(t, hook.Def{Event: hook.SubagentStop, Command: script(t, body)}, hook.Def{Event: hook.Stop, Command: `cat > ` + stopOut})
	p := llmtest.NewScripted("scripted", llmtest.Text("done"), llmtest.Text("checked"))
	a, err := agent.New(agent.Config{Provider: p, Model: "m", Policy: &policy.Policy{Hooks: m}})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := a.NewSession().Spawn(context.Background(), agent.SpawnConfig{Type: "review"})
	if err != nil {
		t.Fatal(err)
	}
	for range sa.Run(context.Background(), "go") {
	}
	m.Wait()
	if got := sa.Last(); got.Result != "checked" || got.Turns != 2 {
		t.Fatalf("last = %+v", got)
	}
	b, _ := os.ReadFile(out)
	for _, want := range []string{`"hook_event_name":"SubagentStop"`, `"agent_id":"` + sa.ID() + `"`, `"agent_type":"review"`} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("subagent_stop input lacks %s: %s", want, b)
		}
	}
	if _, err := os.Stat(stopOut); err == nil {
		t.Fatal("the session's stop hook fired for a sub-agent")
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestSubagentSlotsSpanResumedSessions: front doors that build a session
// per turn (weft serve) carry the tools' state over; the cap on running
// sub-agents is the conversation's, so a background sub-agent of an
// earlier turn holds its slot in the next.
func TestSubagentSlotsSpanResumedSessions(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := echoTool("Hold", true, func(ctx context.Context, _ echoIn) (tool.Result, error) {
		once.Do(func() { close(started) })
		select {
		case <-release:
		case <-ctx.Done():
		}
		return tool.Text("held"), nil
	})
	p := llmtest.NewScripted("scripted",
		toolScript(llmtest.ToolBlock("h", "Hold", `{"text":"x"}`)), llmtest.Text("first done"), llmtest.Text("second done"))
	reg, _ := tool.NewRegistry(hold)
	a, err := agent.New(agent.Config{Provider: p, Model: "m", Tools: reg, MaxSubagents: 1})
	if err != nil {
		t.Fatal(err)
	}
	turn1 := a.NewSession()
	first, err := turn1.Spawn(context.Background(), agent.SpawnConfig{Background: true})
	if err != nil {
		t.Fatal(err)
	}
	firstDone := make(chan struct{})
	go func() {
		defer close(firstDone)
		for range first.Run(context.Background(), "go") {
		}
	}()
	<-started
	turn2 := a.ResumeSessionWith(nil, turn1.ToolState())
	second, err := turn2.Spawn(context.Background(), agent.SpawnConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	for range second.Run(ctx, "go") {
	}
	if got := second.Last(); got.Status != agent.SubagentCancelled {
		t.Fatalf("the second sub-agent ran while the first held the only slot: %+v", got)
	}
	close(release)
	<-firstDone
	for range second.Run(context.Background(), "go") {
	}
	if got := second.Last(); got.Status != agent.SubagentCompleted {
		t.Fatalf("after the first ended: %+v", got)
	}
}
