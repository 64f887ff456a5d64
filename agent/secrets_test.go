package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/builtin"
)

// leakedWindow returns the first run of n bytes of value found in s, or "":
// a cut that falls inside a secret leaves a prefix or a suffix of it, which
// no later redaction can recognise.
func leakedWindow(s, value string, n int) string {
	for i := 0; i+n <= len(value); i++ {
		if strings.Contains(s, value[i:i+n]) {
			return value[i : i+n]
		}
	}
	return ""
}

// runWithSecret runs one tool call and a final answer under a policy that
// knows value as TOKEN, and returns every event and what the model was
// sent.
func runWithSecret(t *testing.T, value string, call llmtest.Block, tools ...tool.Tool) (collected, *llmtest.Scripted) {
	t.Helper()
	set := secret.NewSet()
	if err := set.Set("TOKEN", value); err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	p := llmtest.NewScripted("scripted", toolScript(call), llmtest.Text("done"))
	a, err := agent.New(agent.Config{Provider: p, Model: "m", Tools: reg,
		Policy: &policy.Policy{Mode: permission.ModeBypass, Secrets: set}})
	if err != nil {
		t.Fatal(err)
	}
	c := collect(a.NewSession(), context.Background(), "go")
	if c.err != nil {
		t.Fatal(c.err)
	}
	return c, p
}

// TestToolOutputIsRedactedBeforeItIsCut: every cap on tool output (Bash's
// head and tail, its progress lines, the framework's output cap) used to
// cut before the result was redacted, so a secret at the cut left a piece
// of itself in clear for the model, the events and the store. Redaction
// must come first.
func TestToolOutputIsRedactedBeforeItIsCut(t *testing.T) {
	t.Parallel()
	const value = "zqKp2WmXv4Rt8LnB" // 16 bytes
	ws := t.TempDir()
	bash := builtin.NewBash(builtin.Config{Workspace: ws})
	// bashOutputLimit is 30000: the head keeps 15000 bytes, the tail 15000.
	fill := func(c string, n int) string { return fmt.Sprintf("head -c %d /dev/zero | tr '\\0' %s", n, c) }
	big := tool.Func("Big", "returns a lot of text", tool.Meta{ReadOnly: true},
		func(ctx context.Context, in echoIn, _ *tool.Call) (tool.Result, error) {
			// The framework's cap (16000 characters) falls 8 bytes into the value.
			return tool.Text(strings.Repeat("x", tool.DefaultOutputCap-8) + value + strings.Repeat("y", 100)), nil
		})
	tests := []struct {
		name    string
		command string // Bash; "" calls Big
	}{
		{"bash head", fill("x", 15000-8) + "; printf " + value + "; " + fill("y", 20000)},
		{"bash tail", fill("x", 20000) + "; printf " + value + "; " + fill("y", 15000-8)},
		{"bash progress line", fill("x", 2000-8) + "; echo " + value},
		{"framework cap", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			call := llmtest.ToolBlock("c1", "Big", `{"text":"go"}`)
			if tt.command != "" {
				in, _ := json.Marshal(map[string]string{"command": tt.command})
				call = llmtest.ToolBlock("c1", "Bash", string(in))
			}
			c, p := runWithSecret(t, value, call, bash, big)
			for _, e := range c.events {
				b, _ := json.Marshal(e.Data)
				if w := leakedWindow(string(b), value, 6); w != "" {
					t.Fatalf("event %s shows %q of the secret", e.Type, w)
				}
			}
			reqs := p.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests", len(reqs))
			}
			m, _ := json.Marshal(reqs[1].Messages)
			if w := leakedWindow(string(m), value, 6); w != "" {
				t.Fatalf("the model was shown %q of the secret", w)
			}
		})
	}
}

// TestStructuredToolDataIsRedacted: a tool result's structured data (and
// its non-text content) reaches the events, and from there every stream
// and the store; it used to be passed on as the tool made it.
func TestStructuredToolDataIsRedacted(t *testing.T) {
	t.Parallel()
	const value = "zqKp2WmXv4Rt8LnB"
	data := tool.Func("Data", "returns structured data", tool.Meta{ReadOnly: true},
		func(ctx context.Context, in echoIn, _ *tool.Call) (tool.Result, error) {
			return tool.Result{
				Content: []llm.Block{llm.Text("see data")},
				Data: map[string]any{"token": value, "nested": map[string]any{"list": []any{"a " + value, 3}},
					value: "as a key", "todos": []tool.Todo{{Content: value, Status: "pending"}}},
			}, nil
		})
	c, _ := runWithSecret(t, value, llmtest.ToolBlock("c1", "Data", `{"text":"go"}`), data)
	results := c.of(agent.EventToolResult)
	if len(results) != 1 {
		t.Fatalf("events %v", c.types())
	}
	for _, e := range c.events {
		if b, _ := json.Marshal(e.Data); strings.Contains(string(b), value) {
			t.Fatalf("event %s carries the secret: %s", e.Type, b)
		}
	}
	d := results[0].Data.(agent.ToolResultData)
	if d.Data["token"] != "[SECRET:TOKEN]" {
		t.Fatalf("data %v", d.Data)
	}
}

// TestApprovalRequestIsRedacted: the person asked about a call (a terminal
// prompt, a permission_request event) is shown the input as the model's
// events show it, without the value; the tool still runs with it.
func TestApprovalRequestIsRedacted(t *testing.T) {
	t.Parallel()
	const value = "zqKp2WmXv4Rt8LnB"
	set := secret.NewSet()
	if err := set.Set("TOKEN", value); err != nil {
		t.Fatal(err)
	}
	var ran, asked string
	note := tool.Func("Note", "writes", tool.Meta{Effect: tool.EffectWrite},
		func(ctx context.Context, in echoIn, _ *tool.Call) (tool.Result, error) {
			ran = in.Text
			return tool.Text("ok"), nil
		})
	reg, _ := tool.NewRegistry(note)
	p := llmtest.NewScripted("scripted", toolScript(llmtest.ToolBlock("c1", "Note", `{"text":"`+value+`"}`)), llmtest.Text("done"))
	a, err := agent.New(agent.Config{Provider: p, Model: "m", Tools: reg, Policy: &policy.Policy{Secrets: set},
		Approve: func(ctx context.Context, req agent.ApprovalRequest) agent.Decision {
			asked = string(req.Input)
			return agent.Allow()
		}})
	if err != nil {
		t.Fatal(err)
	}
	if c := collect(a.NewSession(), context.Background(), "go"); c.err != nil {
		t.Fatal(c.err)
	}
	if asked != `{"text":"[SECRET:TOKEN]"}` || ran != value {
		t.Fatalf("asked about %s, ran with %q", asked, ran)
	}
}
