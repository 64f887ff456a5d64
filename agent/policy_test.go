package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/audit"
	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/tool"
)

// memSink is an audit sink that keeps entries in memory.
type memSink struct {
	mu      sync.Mutex
	entries []audit.Entry
}

func (m *memSink) Write(e audit.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = append(m.entries, e)
	return nil
}
func (m *memSink) Close() error { return nil }

func (m *memSink) all() []audit.Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]audit.Entry(nil), m.entries...)
}

// noteTool writes (not read-only) and records the text it ran with.
func noteTool(ran *[]string, mu *sync.Mutex, meta tool.Meta) tool.Tool {
	return tool.Func("Note", "writes a note", meta, func(ctx context.Context, in echoIn, _ *tool.Call) (tool.Result, error) {
		mu.Lock()
		*ran = append(*ran, in.Text)
		mu.Unlock()
		return tool.Text("noted " + in.Text), nil
	})
}

func rules(t *testing.T, allow, ask, deny []string) permission.RuleSet {
	t.Helper()
	var rs permission.RuleSet
	for _, l := range []struct {
		src []string
		dst *[]permission.Rule
	}{{allow, &rs.Allow}, {ask, &rs.Ask}, {deny, &rs.Deny}} {
		for _, s := range l.src {
			r, err := permission.ParseRule(s)
			if err != nil {
				t.Fatal(err)
			}
			*l.dst = append(*l.dst, r)
		}
	}
	return rs
}

// script writes an executable hook script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hook.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func hooks(t *testing.T, defs ...hook.Def) *hook.Manager {
	t.Helper()
	m := hook.NewManager(hook.Options{})
	if err := m.Register(defs...); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPolicyPipelineOrder(t *testing.T) {
	t.Parallel()
	denyScript := script(t, `cat >/dev/null; echo "blocked by the script" >&2; exit 2`)
	allowJSON := script(t, `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'`)
	rewrite := script(t, `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"text":"rewritten"}}}'`)
	askJSON := script(t, `cat >/dev/null; echo '{"decision":"ask","reason":"check this"}'`)
	tests := []struct {
		name     string
		mode     string
		allow    []string
		ask      []string
		deny     []string
		hook     string
		approve  agent.ApproveFunc
		ran      string // the text the tool ran with; "" = it did not run
		denied   string // in the denial the model sees
		approved int32  // approver calls
	}{
		{name: "no rule, no approver: denied", denied: "no approver"},
		{name: "the approver decides what the rules leave open", approve: agent.AllowAll, ran: "x", approved: 1},
		{name: "an allow rule settles it", allow: []string{"Note"}, ran: "x"},
		{name: "deny wins over allow whatever the order", allow: []string{"Note"}, deny: []string{"Note"}, approve: agent.AllowAll, denied: "denies this"},
		{name: "an ask rule beats an allow rule", allow: []string{"Note"}, ask: []string{"Note"}, approve: agent.AllowAll, ran: "x", approved: 1},
		{name: "plan mode refuses writes", mode: "plan", approve: agent.AllowAll, denied: "plan"},
		{name: "bypass asks nobody", mode: "bypass", ran: "x"},
		{name: "bypass still honours deny rules", mode: "bypass", deny: []string{"Tool(No*)"}, denied: "denies this"},
		{name: "a hook's exit 2 blocks before any rule", allow: []string{"Note"}, hook: denyScript, approve: agent.AllowAll, denied: "blocked by the script"},
		{name: "a hook's allow skips the human", hook: allowJSON, ran: "x"},
		{name: "a hook's allow cannot beat a deny rule", hook: allowJSON, deny: []string{"Note"}, denied: "denies this"},
		{name: "a hook's ask sends an allowed call to the human", hook: askJSON, allow: []string{"Note"}, approve: agent.AllowAll, ran: "x", approved: 1},
		{name: "a hook rewrites the input", hook: rewrite, mode: "bypass", ran: "rewritten"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var ran []string
			var approved atomic.Int32
			approve := tt.approve
			if approve != nil {
				inner := approve
				approve = func(ctx context.Context, r agent.ApprovalRequest) agent.Decision {
					approved.Add(1)
					return inner(ctx, r)
				}
			}
			pol := &policy.Policy{Mode: permission.Mode(tt.mode), Rules: rules(t, tt.allow, tt.ask, tt.deny), Workspace: t.TempDir()}
			if tt.hook != "" {
				pol.Hooks = hooks(t, hook.Def{Event: hook.PreToolUse, Matcher: "Note", Command: tt.hook})
			}
			if pol.Mode == "" {
				pol.Mode = "default"
			}
			reg, _ := tool.NewRegistry(noteTool(&ran, &mu, tool.Meta{Effect: tool.EffectWrite}))
			p := llmtest.NewScripted("scripted", toolScript(llmtest.ToolBlock("a", "Note", `{"text":"x"}`)), llmtest.Text("ok"))
			a, err := agent.New(agent.Config{Provider: p, Model: "m", Tools: reg, Approve: approve, Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			c := collect(a.NewSession(), context.Background(), "go")
			r := c.of(agent.EventToolResult)[0].Data.(agent.ToolResultData)
			if got := strings.Join(ran, ","); got != tt.ran {
				t.Fatalf("tool ran with %q, want %q (result %+v)", got, tt.ran, r)
			}
			if tt.denied != "" && (!r.Denied || !strings.Contains(strings.ToLower(r.Output), strings.ToLower(tt.denied))) {
				t.Fatalf("result = %+v, want a denial containing %q", r, tt.denied)
			}
			if approved.Load() != tt.approved {
				t.Fatalf("approver called %d times, want %d", approved.Load(), tt.approved)
			}
		})
	}
}

func TestReadOnlyToolsNeedNoApprover(t *testing.T) {
	t.Parallel()
	p := llmtest.NewScripted("scripted", toolScript(llmtest.ToolBlock("a", "echo", `{"text":"x"}`)), llmtest.Text("ok"))
	c := collect(newAgent(t, p, nil, echoTool("echo", true, nil)).NewSession(), context.Background(), "go")
	if r := c.of(agent.EventToolResult)[0].Data.(agent.ToolResultData); r.IsError || r.Output != "echo: x" {
		t.Fatalf("result = %+v", r)
	}
}

func TestCheckpointConfirmation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler policy.Checkpoint
		ran     bool
	}{
		{"no handler denies", nil, false},
		{"a refusing handler denies", func(context.Context, policy.CheckpointRequest) bool { return false }, false},
		{"a panicking handler denies", func(context.Context, policy.CheckpointRequest) bool { panic("boom") }, false},
		{"a confirming handler lets it run", func(_ context.Context, r policy.CheckpointRequest) bool {
			return r.ToolName == "Note" && r.ToolCallID == "a"
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var ran []string
			reg, _ := tool.NewRegistry(noteTool(&ran, &mu, tool.Meta{Effect: tool.EffectExternal, RequiresCheckpoint: true}))
			p := llmtest.NewScripted("scripted", toolScript(llmtest.ToolBlock("a", "Note", `{"text":"x"}`)), llmtest.Text("ok"))
			// bypass: the checkpoint is the only question left.
			a, err := agent.New(agent.Config{Provider: p, Model: "m", Tools: reg, Checkpoint: tt.handler,
				Policy: &policy.Policy{Mode: "bypass"}})
			if err != nil {
				t.Fatal(err)
			}
			c := collect(a.NewSession(), context.Background(), "go")
			r := c.of(agent.EventToolResult)[0].Data.(agent.ToolResultData)
			if (len(ran) == 1) != tt.ran {
				t.Fatalf("ran = %v, result %+v", ran, r)
			}
			if !tt.ran && !strings.Contains(r.Output, policy.DeniedAtCheckpoint) {
				t.Fatalf("result = %+v", r)
			}
		})
	}
}

func TestSecretsNeverLeaveTheRun(t *testing.T) {
	t.Parallel()
	const value = "tok-9f8e7d6c5b4a"
	set := secret.NewSet()
	if err := set.Set("API_TOKEN", value); err != nil {
		t.Fatal(err)
	}
	var env []string
	leak := tool.Func("Leak", "prints the token", tool.Meta{ReadOnly: true}, func(ctx context.Context, in echoIn, call *tool.Call) (tool.Result, error) {
		env = call.Env
		return tool.Text("the token is " + value), nil
	})
	reg, _ := tool.NewRegistry(leak)
	sink := &memSink{}
	p := llmtest.NewScripted("scripted",
		toolScript(llmtest.ToolBlock("a", "Leak", `{"text":"`+value+`"}`)),
		// The value arrives split across three deltas.
		llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("I saw tok-9f8", "e7d6c", "5b4a and more")}},
	)
	a, err := agent.New(agent.Config{Provider: p, Model: "m", Tools: reg,
		Policy: &policy.Policy{Secrets: set, Audit: sink}})
	if err != nil {
		t.Fatal(err)
	}
	c := collect(a.NewSession(), context.Background(), "go")
	var deltas strings.Builder
	for _, e := range c.events {
		b, _ := json.Marshal(e.Data)
		if strings.Contains(string(b), value) {
			t.Fatalf("event %s carries the secret: %s", e.Type, b)
		}
		if e.Type == agent.EventTextDelta {
			deltas.WriteString(e.Data.(agent.TextData).Text)
		}
	}
	if got := deltas.String(); got != "I saw [SECRET:API_TOKEN] and more" {
		t.Fatalf("deltas = %q", got)
	}
	if r := c.of(agent.EventToolResult)[0].Data.(agent.ToolResultData); r.Output != "the token is [SECRET:API_TOKEN]" {
		t.Fatalf("tool result = %q", r.Output)
	}
	// What the model sees is redacted too.
	if m, _ := json.Marshal(p.Requests()[1].Messages); strings.Contains(string(m), "the token is "+value) {
		t.Fatalf("the model saw the secret: %s", m)
	}
	if strings.Join(env, " ") != "API_TOKEN="+value {
		t.Fatalf("tool env = %v", env)
	}
	for _, e := range sink.all() {
		if b, _ := json.Marshal(e); strings.Contains(string(b), value) {
			t.Fatalf("audit entry carries the secret: %s", b)
		}
	}
}

func TestAuditRecordsEveryDecision(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ran []string
	reg, _ := tool.NewRegistry(noteTool(&ran, &mu, tool.Meta{Effect: tool.EffectWrite}))
	sink := &memSink{}
	p := llmtest.NewScripted("scripted",
		toolScript(llmtest.ToolBlock("a", "Note", `{"text":"keep"}`), llmtest.ToolBlock("b", "Note", `{"text":"drop"}`)),
		llmtest.Text("ok"))
	approve := func(_ context.Context, r agent.ApprovalRequest) agent.Decision {
		if strings.Contains(string(r.Input), "drop") {
			return agent.Deny("not that one")
		}
		return agent.Allow()
	}
	a, err := agent.New(agent.Config{Provider: p, Model: "m", Tools: reg, Approve: approve,
		Policy: &policy.Policy{Audit: sink, SessionID: "s1"}})
	if err != nil {
		t.Fatal(err)
	}
	collect(a.NewSession(), context.Background(), "go")
	got := sink.all()
	if len(got) != 2 {
		t.Fatalf("entries = %+v", got)
	}
	var outcomes []string
	for _, e := range got {
		if e.SessionID != "s1" || e.ToolName != "Note" || e.TurnNumber != 1 || e.Timestamp.IsZero() {
			t.Fatalf("entry = %+v", e)
		}
		outcomes = append(outcomes, e.Outcome+":"+e.Extra["stage"]+":"+e.Reason)
	}
	// The denial is recorded when it happens, the run when it finishes.
	if strings.Join(outcomes, " | ") != "blocked:human:not that one | allowed:human:" {
		t.Fatalf("outcomes = %q", outcomes)
	}
}

func TestRunLevelHooks(t *testing.T) {
	t.Parallel()
	t.Run("user_prompt_submit exit 2 blocks the prompt", func(t *testing.T) {
		t.Parallel()
		p := llmtest.NewScripted("scripted", llmtest.Text("never"))
		m := hooks(t, hook.Def{Event: hook.UserPromptSubmit, Command: script(t, `cat >/dev/null; echo "no secrets in prompts" >&2; exit 2`)})
		a, _ := agent.New(agent.Config{Provider: p, Model: "m", Policy: &policy.Policy{Hooks: m}})
		c := collect(a.NewSession(), context.Background(), "go")
		if c.err == nil || !strings.Contains(c.err.Error(), "no secrets in prompts") || len(p.Requests()) != 0 {
			t.Fatalf("err = %v, requests = %d", c.err, len(p.Requests()))
		}
	})
	t.Run("a stop hook sends the model back once", func(t *testing.T) {
		t.Parallel()
		marker := filepath.Join(t.TempDir(), "once")
		body := `cat >/dev/null; if [ -e ` + marker + ` ]; then exit 0; fi; touch ` + marker + `; echo '{"decision":"block","reason":"run the tests first"}'`
		p := llmtest.NewScripted("scripted", llmtest.Text("done"), llmtest.Text("tests pass"))
		m := hooks(t, hook.Def{Event: hook.Stop, Command: script(t, body)})
		a, _ := agent.New(agent.Config{Provider: p, Model: "m", Policy: &policy.Policy{Hooks: m}})
		c := collect(a.NewSession(), context.Background(), "go")
		if d := c.done(t); d.TurnCount != 2 || d.Text != "tests pass" {
			t.Fatalf("done = %+v", d)
		}
		last := p.Requests()[1].Messages
		if got := last[len(last)-1]; got.Role != llm.RoleUser || !strings.Contains(got.Text(), "run the tests first") {
			t.Fatalf("second request ends with %+v", got)
		}
	})
	t.Run("run_complete observes the end", func(t *testing.T) {
		t.Parallel()
		out := filepath.Join(t.TempDir(), "seen")
		p := llmtest.NewScripted("scripted", llmtest.Text("bye"))
		m := hooks(t, hook.Def{Event: hook.RunComplete, Command: `cat > ` + out})
		a, _ := agent.New(agent.Config{Provider: p, Model: "m", Policy: &policy.Policy{Hooks: m, SessionID: "s9"}})
		collect(a.NewSession(), context.Background(), "go")
		m.Wait()
		deadline := time.Now().Add(5 * time.Second)
		for {
			b, _ := os.ReadFile(out)
			if strings.Contains(string(b), `"session_id":"s9"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run_complete envelope = %s", b)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// TestObserverHooksOutliveTheRun: post_sampling and run_complete hooks run
// after the iterator has moved on; the manager still counts them, so
// Wait (and Close, at shutdown) return only once they finished.
func TestObserverHooksOutliveTheRun(t *testing.T) {
	t.Parallel()
	for _, ev := range []hook.Event{hook.PostSampling, hook.RunComplete} {
		t.Run(string(ev), func(t *testing.T) {
			t.Parallel()
			var finished atomic.Int32
			m := hooks(t, hook.Def{Event: ev, Timeout: 10 * time.Second, Func: func(ctx context.Context, _ hook.Input) (hook.Outcome, error) {
				select {
				case <-time.After(300 * time.Millisecond):
					finished.Add(1)
				case <-ctx.Done():
				}
				return hook.Outcome{}, nil
			}})
			a, _ := agent.New(agent.Config{Provider: llmtest.NewScripted("scripted", llmtest.Text("bye")), Model: "m", Policy: &policy.Policy{Hooks: m}})
			ctx, cancel := context.WithCancel(context.Background())
			collect(a.NewSession(), ctx, "go")
			cancel() // the run's context ending must not cut an observer hook off
			m.Wait()
			if finished.Load() != 1 {
				t.Fatalf("Wait returned with the %s hook still running", ev)
			}
			cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer ccancel()
			if err := m.Close(cctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
