package subagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/subagent"
	"github.com/weft-run/weft/task"
	"github.com/weft-run/weft/tool"
)

// front is a loopback proxy in front of a provider fake. It can hold the
// first hold requests until all of them have arrived (proof that they
// were in flight at once), and it rewrites the placeholders SAID_A and
// SAID_B in responses to the first and second sub-agent ids seen in the
// requests' tool results, so that a scripted model can name a background
// sub-agent whose id is random.
type front struct {
	t    *testing.T
	url  string
	fake *llmtest.Server

	mu      sync.Mutex
	hold    int
	arrived int
	release chan struct{}
	ids     []string
}

var idPattern = regexp.MustCompile(`sa_[0-9a-f]{12}`)

func newFront(t *testing.T, fake *llmtest.Server, hold int) *front {
	f := &front{t: t, fake: fake, hold: hold, release: make(chan struct{})}
	if hold == 0 {
		close(f.release)
	}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *front) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	for _, id := range idPattern.FindAllString(string(body), -1) {
		if !slices.Contains(f.ids, id) {
			f.ids = append(f.ids, id)
		}
	}
	held := f.arrived < f.hold
	f.arrived++
	if f.arrived == f.hold {
		close(f.release)
	}
	f.mu.Unlock()
	if held {
		select {
		case <-f.release:
		case <-time.After(10 * time.Second):
			f.t.Errorf("only %d of %d requests arrived together: they did not run in parallel", f.arrived, f.hold)
		}
	}
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, f.fake.URL+r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return // the client went away (a killed sub-agent)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return
	}
	f.mu.Lock()
	for i, ph := range []string{"SAID_A", "SAID_B"} {
		if i < len(f.ids) {
			out = bytes.ReplaceAll(out, []byte(ph), []byte(f.ids[i]))
		}
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

// rig is a parent agent with the sub-agent tools: the parent talks to one
// Anthropic fake, the sub-agents (type "worker", model "sub") to another,
// so that each side's script is in order.
type rig struct {
	parent, sub   *llmtest.Server
	pfront, front *front
	mgr           *subagent.Manager
	tasks         *task.Registry
	agent         *agent.Agent

	mu        sync.Mutex
	approvals []agent.ApprovalRequest
	bgEvents  []agent.Event
}

const workerFile = `---
name: worker
description: Does one piece of work and reports.
tools: Echo, Write
model: sub
---
You are a worker sub-agent.`

type echoIn struct {
	Text string `json:"text"`
}

func newRig(t *testing.T, hold int, mcfg subagent.Config) *rig {
	t.Helper()
	r := &rig{parent: llmtest.NewAnthropic(t), sub: llmtest.NewAnthropic(t)}
	r.pfront, r.front = newFront(t, r.parent, 0), newFront(t, r.sub, hold)
	worker, err := subagent.Parse(workerFile, "worker.md")
	if err != nil {
		t.Fatal(err)
	}
	subProvider := anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: r.front.url, APIKey: "k"}})
	r.tasks = task.NewRegistry(nil, task.Options{})
	t.Cleanup(func() { _ = r.tasks.Close(context.Background()) })
	mcfg.Types = append(subagent.Builtin(), worker)
	mcfg.Tasks = r.tasks
	mcfg.Resolve = func(spec string) (llm.Provider, llm.ModelInfo, error) {
		if spec != "sub" {
			return nil, llm.ModelInfo{}, fmt.Errorf("unknown model %q", spec)
		}
		return subProvider, llm.ModelInfo{ID: "sub-model", Provider: "anthropic", InputPrice: 1, OutputPrice: 1}, nil
	}
	r.mgr = subagent.New(mcfg)
	t.Cleanup(r.mgr.Close)
	echo := tool.Func("Echo", "echoes", tool.Meta{ReadOnly: true, ConcurrencySafe: true, Effect: tool.EffectRead},
		func(_ context.Context, in echoIn, _ *tool.Call) (tool.Result, error) {
			return tool.Text("echo: " + in.Text), nil
		})
	write := tool.Func("Write", "writes", tool.Meta{Effect: tool.EffectWrite},
		func(_ context.Context, in echoIn, _ *tool.Call) (tool.Result, error) {
			return tool.Text("written"), nil
		})
	reg, err := tool.NewRegistry(append([]tool.Tool{echo, write}, r.mgr.Tools()...)...)
	if err != nil {
		t.Fatal(err)
	}
	r.agent, err = agent.New(agent.Config{
		Provider: anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: r.pfront.url, APIKey: "k"}}),
		Model:    "claude-sonnet-4-5", Tools: reg, Retry: agent.RetryPolicy{MaxAttempts: 1},
		Approve: func(_ context.Context, req agent.ApprovalRequest) agent.Decision {
			r.mu.Lock()
			r.approvals = append(r.approvals, req)
			r.mu.Unlock()
			return agent.Deny("the user said no to " + req.ToolName)
		},
		SubagentEvents: func(ev agent.Event) {
			r.mu.Lock()
			r.bgEvents = append(r.bgEvents, ev)
			r.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func run(t *testing.T, s *agent.Session, prompt string) []agent.Event {
	t.Helper()
	var evs []agent.Event
	for ev, err := range s.Run(context.Background(), prompt) {
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func toolCall(id, name string, input any) llmtest.Block {
	b, _ := json.Marshal(input)
	return llmtest.ToolBlock(id, name, string(b))
}

// messagesOf decodes an Anthropic request's messages.
type wireMsg struct {
	Role    string `json:"role"`
	Content []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ToolUseID string          `json:"tool_use_id"`
		Name      string          `json:"name"`
		IsError   bool            `json:"is_error"`
		Content   json.RawMessage `json:"content"`
	} `json:"content"`
}

func messagesOf(t *testing.T, req llmtest.Request) []wireMsg {
	t.Helper()
	var body struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		t.Fatal(err)
	}
	out := make([]wireMsg, len(body.Messages))
	for i, raw := range body.Messages {
		var m wireMsg
		if err := json.Unmarshal(raw, &m); err != nil {
			// A plain string content.
			var s struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			}
			_ = json.Unmarshal(raw, &s)
			m.Role = s.Role
			m.Content = append(m.Content, struct {
				Type      string          `json:"type"`
				Text      string          `json:"text"`
				ToolUseID string          `json:"tool_use_id"`
				Name      string          `json:"name"`
				IsError   bool            `json:"is_error"`
				Content   json.RawMessage `json:"content"`
			}{Type: "text", Text: s.Content})
		}
		out[i] = m
	}
	return out
}

// toolResults maps tool_use_id to the result's text in a request's last
// message.
func toolResults(t *testing.T, req llmtest.Request) map[string]string {
	t.Helper()
	msgs := messagesOf(t, req)
	out := map[string]string{}
	for _, b := range msgs[len(msgs)-1].Content {
		if b.Type == "tool_result" {
			out[b.ToolUseID] = string(b.Content)
		}
	}
	return out
}

func toolNames(t *testing.T, req llmtest.Request) []string {
	t.Helper()
	var body struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(req.Body, &body)
	var out []string
	for _, tl := range body.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// TestAgentCallsRunInParallel: a parent whose model calls Agent twice in
// one turn runs two sub-agents at once (the fake holds the first two
// sub-agent requests until both have arrived), each with a conversation of
// its own, and gets both answers as the calls' results; the parent's
// stream carries each sub-agent's start, events and end, tied to its call.
func TestAgentCallsRunInParallel(t *testing.T) {
	t.Parallel()
	r := newRig(t, 2, subagent.Config{})
	r.parent.Push(
		llmtest.Script{Blocks: []llmtest.Block{
			toolCall("call_a", "Agent", map[string]any{"description": "task a", "prompt": "PROMPT-A: count the files", "subagent_type": "worker"}),
			toolCall("call_b", "Agent", map[string]any{"description": "task b", "prompt": "PROMPT-B: read the docs", "subagent_type": "worker"}),
		}},
		llmtest.Text("both done"),
	)
	answer := llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("an answer")}, Usage: llm.Usage{InputTokens: 1000, OutputTokens: 100}}
	r.sub.Push(answer, answer)
	evs := run(t, r.agent.NewSession(), "do two things")

	subReqs := r.sub.Requests()
	if len(subReqs) != 2 {
		t.Fatalf("%d sub-agent requests, want 2", len(subReqs))
	}
	seen := map[string]bool{}
	for _, req := range subReqs {
		msgs := messagesOf(t, req)
		if len(msgs) != 1 || msgs[0].Role != "user" {
			t.Fatalf("a sub-agent's first request has %d messages: %s", len(msgs), req.Body)
		}
		text := msgs[0].Content[0].Text
		for _, other := range []string{"do two things", "PROMPT-A", "PROMPT-B"} {
			if strings.Contains(string(req.Body), other) && !strings.HasPrefix(text, other) {
				t.Fatalf("a sub-agent's request holds %q, another conversation's: %s", other, req.Body)
			}
		}
		seen[text[:8]] = true
		if names := toolNames(t, req); strings.Join(names, ",") != "Echo,Write" {
			t.Fatalf("a sub-agent's tools = %v, want Echo and Write only (no Agent)", names)
		}
	}
	if !seen["PROMPT-A"] || !seen["PROMPT-B"] {
		t.Fatalf("the sub-agents' prompts: %v", seen)
	}
	res := toolResults(t, r.parent.Requests()[1])
	if !strings.Contains(res["call_a"], "an answer") || !strings.Contains(res["call_b"], "an answer") {
		t.Fatalf("the parent's tool results: %v", res)
	}

	starts, ends := map[string]agent.SubagentStartData{}, map[string]agent.SubagentEndData{}
	inner := 0
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case agent.SubagentStartData:
			starts[d.ParentToolUseID] = d
		case agent.SubagentEndData:
			ends[d.ParentToolUseID] = d
		case agent.SubagentEventData:
			inner++
		}
	}
	for _, call := range []string{"call_a", "call_b"} {
		s, e := starts[call], ends[call]
		if s.SubagentID == "" || s.SubagentID != e.SubagentID || s.Model != "sub-model" || s.SubagentType != "worker" {
			t.Fatalf("%s: start %+v, end %+v", call, s, e)
		}
		if e.Status != agent.SubagentCompleted || e.Result != "an answer" {
			t.Fatalf("%s: end %+v", call, e)
		}
	}
	if starts["call_a"].Description != "task a" || inner == 0 {
		t.Fatalf("start a = %+v, %d inner events", starts["call_a"], inner)
	}
	// The sub-agents' usage is in the parent's done totals.
	done := evs[len(evs)-1].Data.(agent.DoneData)
	if done.TurnCount != 2 || done.TotalInputTokens < 2000 || done.TotalOutputTokens < 200 || done.CostUSD <= 0 {
		t.Fatalf("done = %+v", done)
	}
}

// TestSubagentApprovalsCarryOrigin: a sub-agent's call that needs approval
// reaches the parent's approver tagged with the sub-agent and the parent's
// call; the denial's reason reaches the sub-agent's model.
func TestSubagentApprovalsCarryOrigin(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0, subagent.Config{})
	r.parent.Push(
		llmtest.Script{Blocks: []llmtest.Block{toolCall("call_w", "Agent", map[string]any{"description": "write", "prompt": "write it", "subagent_type": "worker"})}},
		llmtest.Text("ok"),
	)
	r.sub.Push(
		llmtest.Script{Blocks: []llmtest.Block{toolCall("w1", "Write", map[string]any{"text": "x"})}},
		llmtest.Text("I was not allowed to write"),
	)
	evs := run(t, r.agent.NewSession(), "go")
	if len(r.approvals) != 1 {
		t.Fatalf("%d approval requests, want 1", len(r.approvals))
	}
	req := r.approvals[0]
	var start agent.SubagentStartData
	for _, ev := range evs {
		if d, ok := ev.Data.(agent.SubagentStartData); ok {
			start = d
		}
	}
	if req.ToolName != "Write" || req.Origin == nil || req.Origin.SubagentID != start.SubagentID || req.Origin.ToolUseID != "call_w" || req.Origin.Type != "worker" {
		t.Fatalf("approval request %+v origin %+v; sub-agent %s", req, req.Origin, start.SubagentID)
	}
	res := toolResults(t, r.sub.Requests()[1])["w1"]
	if !strings.Contains(res, "the user said no to Write") {
		t.Fatalf("the sub-agent's model got %q for its denied call", res)
	}
}

// TestSubagentCannotCallAgent: a sub-agent whose model calls Agent anyway
// gets an unknown-tool error and no sub-agent starts.
func TestSubagentCannotCallAgent(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0, subagent.Config{})
	r.parent.Push(
		llmtest.Script{Blocks: []llmtest.Block{toolCall("call_1", "Agent", map[string]any{"description": "d", "prompt": "p", "subagent_type": "worker"})}},
		llmtest.Text("ok"),
	)
	r.sub.Push(
		llmtest.Script{Blocks: []llmtest.Block{toolCall("nest", "Agent", map[string]any{"description": "d", "prompt": "p"})}},
		llmtest.Text("could not"),
	)
	evs := run(t, r.agent.NewSession(), "go")
	starts := 0
	for _, ev := range evs {
		if ev.Type == agent.EventSubagentStart {
			starts++
		}
	}
	if starts != 1 || len(r.parent.Requests()) != 2 || len(r.sub.Requests()) != 2 {
		t.Fatalf("%d sub-agents started; requests: parent %d, sub %d", starts, len(r.parent.Requests()), len(r.sub.Requests()))
	}
	msgs := messagesOf(t, r.sub.Requests()[1])
	last := msgs[len(msgs)-1].Content[0]
	if last.Type != "tool_result" || !last.IsError || !strings.Contains(string(last.Content), "Agent") {
		t.Fatalf("the nested Agent call's result: %+v %s", last, last.Content)
	}
}

// TestAgentAnswerIsCut: an answer over MaxAnswer reaches the parent's
// model cut, with a marker; subagent_end's result is cut to 2 KB with
// "...".
func TestAgentAnswerIsCut(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0, subagent.Config{MaxAnswer: 100})
	long := strings.Repeat("word ", 1000)
	r.parent.Push(
		llmtest.Script{Blocks: []llmtest.Block{toolCall("c", "Agent", map[string]any{"description": "d", "prompt": "p", "subagent_type": "worker"})}},
		llmtest.Text("ok"),
	)
	r.sub.Push(llmtest.Text(long))
	evs := run(t, r.agent.NewSession(), "go")
	res := toolResults(t, r.parent.Requests()[1])["c"]
	if len(res) > 300 || !strings.Contains(res, "[answer cut: 4899 of 4999 characters removed]") {
		t.Fatalf("the parent's model got %d bytes: %.300s", len(res), res)
	}
	for _, ev := range evs {
		if d, ok := ev.Data.(agent.SubagentEndData); ok {
			if len(d.Result) != agent.SubagentResultCap || !strings.HasSuffix(d.Result, "...") {
				t.Fatalf("subagent_end result: %d bytes, ends %q", len(d.Result), d.Result[len(d.Result)-5:])
			}
			return
		}
	}
	t.Fatal("no subagent_end")
}

// TestBackgroundSubagents: run_in_background returns an id at once; the
// sub-agent is a task of the registry; subagent_output waits for its
// answer, subagent_input gives it a further prompt (it keeps its
// conversation), and subagent_kill stops one that is still working, whose
// task then says cancelled. Another session cannot reach them.
func TestBackgroundSubagents(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0, subagent.Config{})
	r.parent.Push(
		llmtest.Script{Blocks: []llmtest.Block{toolCall("bg1", "Agent", map[string]any{"description": "bg", "prompt": "first job", "subagent_type": "worker", "run_in_background": true})}},
		llmtest.Script{Blocks: []llmtest.Block{toolCall("o1", "subagent_output", map[string]any{"subagent_id": "SAID_A", "timeout_ms": 10000})}},
		llmtest.Script{Blocks: []llmtest.Block{toolCall("i1", "subagent_input", map[string]any{"subagent_id": "SAID_A", "prompt": "second job"})}},
		llmtest.Script{Blocks: []llmtest.Block{toolCall("o2", "subagent_output", map[string]any{"subagent_id": "SAID_A", "timeout_ms": 10000})}},
		llmtest.Script{Blocks: []llmtest.Block{toolCall("bg2", "Agent", map[string]any{"description": "slow", "prompt": "slow job", "subagent_type": "worker", "run_in_background": true})}},
		llmtest.Script{Blocks: []llmtest.Block{toolCall("o3", "subagent_output", map[string]any{"subagent_id": "SAID_B", "timeout_ms": 50})}},
		llmtest.Script{Blocks: []llmtest.Block{toolCall("k", "subagent_kill", map[string]any{"subagent_id": "SAID_B"})}},
		llmtest.Text("all done"),
	)
	r.sub.Push(llmtest.Text("first answer"), llmtest.Text("second answer"),
		llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("never", "finished")}, Delay: time.Minute})
	s := r.agent.NewSession()
	run(t, s, "go")

	reqs := r.parent.Requests()
	if len(reqs) != 8 {
		t.Fatalf("%d parent requests", len(reqs))
	}
	started := toolResults(t, reqs[1])["bg1"]
	ids := idPattern.FindAllString(started, -1)
	if len(ids) == 0 {
		t.Fatalf("Agent with run_in_background returned %q", started)
	}
	for i, want := range map[int][2]string{2: {"o1", "first answer"}, 3: {"i1", "Sent"}, 4: {"o2", "second answer"},
		6: {"o3", "still working"}, 7: {"k", "was stopped"}} {
		if got := toolResults(t, reqs[i])[want[0]]; !strings.Contains(got, want[1]) {
			t.Fatalf("result of %s = %q, want %q in it", want[0], got, want[1])
		}
	}
	// The second prompt went to the same conversation.
	subReqs := r.sub.Requests()
	msgs := messagesOf(t, subReqs[1])
	if len(msgs) != 3 || !strings.Contains(string(subReqs[1].Body), "first job") || !strings.Contains(string(subReqs[1].Body), "first answer") {
		t.Fatalf("the further prompt's request: %s", subReqs[1].Body)
	}
	// They are tasks: two runs of the first, one of the killed second.
	var kinds []string
	for _, tk := range r.tasks.List() {
		if tk.Kind != task.KindSubagent || tk.SubagentID == "" {
			t.Fatalf("task %+v", tk)
		}
		kinds = append(kinds, tk.SubagentID[:3]+":"+tk.Status)
	}
	slices.Sort(kinds)
	if strings.Join(kinds, " ") != "sa_:cancelled sa_:completed sa_:completed" {
		t.Fatalf("tasks: %v", kinds)
	}
	// Their events went to Config.SubagentEvents, each run ending.
	r.mu.Lock()
	ends := 0
	for _, ev := range r.bgEvents {
		if ev.Type == agent.EventSubagentEnd {
			ends++
		}
	}
	r.mu.Unlock()
	if ends != 3 {
		t.Fatalf("%d subagent_end events for 3 background runs", ends)
	}

	// Another session does not see them.
	r.parent.Push(
		llmtest.Script{Blocks: []llmtest.Block{toolCall("x", "subagent_output", map[string]any{"subagent_id": ids[0]})}},
		llmtest.Text("fine"),
	)
	run(t, r.agent.NewSession(), "peek")
	if got := toolResults(t, r.parent.LastRequest())["x"]; !strings.Contains(got, "no background sub-agent") {
		t.Fatalf("another session's subagent_output: %q", got)
	}
}

// TestBackgroundSubagentsAreBounded: a session at its limit of background
// sub-agents gets a new one in place of the one idle longest (its
// conversation is dropped), and is refused only while all of them work;
// the manager as a whole keeps a bounded number of idle ones, so sessions
// that never kill theirs cannot grow it without end.
func TestBackgroundSubagentsAreBounded(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0, subagent.Config{MaxBackground: 2})
	bgCall := func(id string) llmtest.Script {
		return llmtest.Script{Blocks: []llmtest.Block{toolCall(id, "Agent", map[string]any{"description": id, "prompt": "job " + id, "subagent_type": "worker", "run_in_background": true})}}
	}
	wait := func(id, ph string) llmtest.Script {
		return llmtest.Script{Blocks: []llmtest.Block{toolCall(id, "subagent_output", map[string]any{"subagent_id": ph, "timeout_ms": 10000})}}
	}
	// Two that finish, a third that evicts the first, then a fourth and a
	// fifth while the third and fourth work: the fifth is refused.
	r.parent.Push(
		bgCall("a"), wait("wa", "SAID_A"),
		bgCall("b"), wait("wb", "SAID_B"),
		bgCall("c"),
		llmtest.Script{Blocks: []llmtest.Block{toolCall("wa2", "subagent_output", map[string]any{"subagent_id": "SAID_A"})}},
		bgCall("d"), bgCall("e"),
		llmtest.Text("done"),
	)
	slow := llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("slow")}, Delay: time.Minute}
	r.sub.Push(llmtest.Text("answer a"), llmtest.Text("answer b"), slow, slow)
	run(t, r.agent.NewSession(), "go")
	reqs := r.parent.Requests()
	if len(reqs) != 9 {
		t.Fatalf("%d parent requests", len(reqs))
	}
	results := map[string]string{}
	for _, req := range reqs[1:] {
		for k, v := range toolResults(t, req) {
			results[k] = v
		}
	}
	for id, want := range map[string]string{"wa": "answer a", "wb": "answer b", "c": "Started", "wa2": "no background sub-agent",
		"d": "Started", "e": "already has 2 background sub-agents"} {
		if !strings.Contains(results[id], want) {
			t.Errorf("result of %s = %q, want %q in it", id, results[id], want)
		}
	}
}

// TestAgentDescriptionIsBounded: a model's overlong description is cut
// before it goes into subagent_start (and every client's tree view).
func TestAgentDescriptionIsBounded(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0, subagent.Config{})
	r.parent.Push(
		llmtest.Script{Blocks: []llmtest.Block{toolCall("c", "Agent", map[string]any{"description": strings.Repeat("é", 5000), "prompt": "p", "subagent_type": "worker"})}},
		llmtest.Text("ok"),
	)
	r.sub.Push(llmtest.Text("fine"))
	for _, ev := range run(t, r.agent.NewSession(), "go") {
		if d, ok := ev.Data.(agent.SubagentStartData); ok {
			if n := len([]rune(d.Description)); n != 203 || !strings.HasSuffix(d.Description, "...") {
				t.Fatalf("description of %d characters: %.40q", n, d.Description)
			}
			return
		}
	}
	t.Fatal("no subagent_start")
}

// TestModelChoiceStaysWithTheProvider: a model the model names, or a
// project's agent file names, must be of the parent's provider; the
// user's own file may pick another.
func TestModelChoiceStaysWithTheProvider(t *testing.T) {
	t.Parallel()
	other := llmtest.NewScripted("elsewhere", llmtest.Text("from elsewhere"))
	resolve := func(spec string) (llm.Provider, llm.ModelInfo, error) {
		if spec == "elsewhere:big" {
			return other, llm.ModelInfo{ID: "big", Provider: "elsewhere"}, nil
		}
		return nil, llm.ModelInfo{}, fmt.Errorf("unknown model %q", spec)
	}
	typ := func(project bool) subagent.Type {
		ty, err := subagent.Parse("---\nname: far\ndescription: d\nmodel: elsewhere:big\n---\nprompt", "far.md")
		if err != nil {
			t.Fatal(err)
		}
		ty.Project = project
		return ty
	}
	tests := []struct {
		name    string
		ty      subagent.Type
		input   map[string]any
		refused bool
	}{
		{"the user's file", typ(false), map[string]any{"description": "d", "prompt": "p", "subagent_type": "far"}, false},
		{"a project's file", typ(true), map[string]any{"description": "d", "prompt": "p", "subagent_type": "far"}, true},
		{"the model's own pick", typ(false), map[string]any{"description": "d", "prompt": "p", "subagent_type": "far", "model": "elsewhere:big"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.NewAnthropic(t)
			fake.Push(llmtest.Script{Blocks: []llmtest.Block{toolCall("c", "Agent", tt.input)}}, llmtest.Text("ok"))
			mgr := subagent.New(subagent.Config{Types: []subagent.Type{tt.ty}, Resolve: resolve})
			reg, err := tool.NewRegistry(mgr.Tools()...)
			if err != nil {
				t.Fatal(err)
			}
			a, err := agent.New(agent.Config{Provider: anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL, APIKey: "k"}}),
				Model: "claude-sonnet-4-5", Tools: reg, Retry: agent.RetryPolicy{MaxAttempts: 1}})
			if err != nil {
				t.Fatal(err)
			}
			before := len(other.Requests())
			run(t, a.NewSession(), "go")
			res := toolResults(t, fake.Requests()[1])["c"]
			used := len(other.Requests()) > before
			if tt.refused != strings.Contains(res, "pick a model of the current provider") || used == tt.refused {
				t.Fatalf("result %q, other provider used: %v", res, used)
			}
		})
	}
}
