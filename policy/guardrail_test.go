package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/tool"
)

var readSpec = tool.Spec{Name: "Read", Meta: tool.Meta{ReadOnly: true, Effect: tool.EffectRead}}

// outcome is one call of a guardrail scenario: its tool and input, and
// the result it gets when it runs.
type outcome struct {
	tool   string
	input  string
	failed bool
	result string
}

// runCalls puts each call through Before and, when allowed, After with its
// result, as the agent does; it returns the verdicts.
func runCalls(t *testing.T, pol *policy.Policy, ctx context.Context, calls []outcome) []policy.Verdict {
	t.Helper()
	allowAll := func(context.Context, policy.Call, string) (bool, string) { return true, "" }
	var out []policy.Verdict
	for i, c := range calls {
		spec := noteSpec
		if c.tool == "Read" {
			spec = readSpec
		}
		call := policy.Call{ToolUseID: fmt.Sprint("call-", i), Tool: c.tool, Input: json.RawMessage(c.input), Spec: spec}
		v := pol.Before(ctx, call, allowAll, nil)
		out = append(out, v)
		if !v.Allow {
			continue
		}
		res := tool.Text(c.result)
		res.IsError = c.failed
		pol.After(ctx, call, v, &res)
	}
	return out
}

func repeat(n int, c outcome) []outcome {
	out := make([]outcome, n)
	for i := range out {
		out[i] = c
	}
	return out
}

// TestGuardrails runs the three detectors through the real pipeline, with
// the tracker in the context as the agent puts it there: the call after
// the threshold is refused by the guardrail stage, and what resets a
// count resets it.
func TestGuardrails(t *testing.T) {
	t.Parallel()
	failNote := outcome{tool: "Note", input: `{"text":"a"}`, failed: true, result: "no such file"}
	sameRead := outcome{tool: "Read", input: `{"file_path":"/x"}`, result: "contents"}
	varied := func(n int) []outcome {
		out := make([]outcome, n)
		for i := range out {
			out[i] = outcome{tool: "Note", input: fmt.Sprintf(`{"text":"attempt %d"}`, i), failed: true, result: "boom"}
		}
		return out
	}
	tests := []struct {
		name    string
		g       policy.Guardrails
		calls   []outcome
		blocked int    // index of the first refused call; -1: none
		rule    string // its rule
		count   string
	}{
		{name: "same call failing 5 times is refused the 6th", calls: repeat(7, failNote), blocked: 5, rule: policy.GuardSameCall, count: "5"},
		{name: "the same call spelled differently is the same call",
			calls: append(repeat(5, failNote), outcome{tool: "Note", input: "{ \"text\" :\n \"a\" }", result: "x"}), blocked: 5, rule: policy.GuardSameCall, count: "5"},
		{name: "a success in between starts the count again",
			calls: append(append(repeat(4, failNote), outcome{tool: "Note", input: `{"text":"a"}`, result: "ok"}), repeat(5, failNote)...), blocked: -1},
		{name: "varied arguments failing 8 times are refused the 9th", calls: varied(10), blocked: 8, rule: policy.GuardSameTool, count: "8"},
		{name: "another tool's success does not reset a tool's failures",
			calls: append(append(varied(4), outcome{tool: "Read", input: `{"file_path":"/y"}`, result: "fine"}), varied(10)[4:]...), blocked: 9, rule: policy.GuardSameTool, count: "8"},
		{name: "a read-only tool with the same result 5 times is refused the 6th", calls: repeat(6, sameRead), blocked: 5, rule: policy.GuardSameResult, count: "5"},
		{name: "a changed result starts the count again",
			calls: append(append(repeat(4, sameRead), outcome{tool: "Read", input: `{"file_path":"/x"}`, result: "changed"}), repeat(4, sameRead)...), blocked: -1},
		{name: "a tool that is not read-only may return the same thing", calls: repeat(8, outcome{tool: "Note", input: `{"text":"a"}`, result: "noted"}), blocked: -1},
		{name: "custom thresholds", g: policy.Guardrails{SameCallFailures: 2}, calls: repeat(3, failNote), blocked: 2, rule: policy.GuardSameCall, count: "2"},
		{name: "a negative threshold turns one guard off", g: policy.Guardrails{SameCallFailures: -1}, calls: repeat(9, failNote), blocked: 8, rule: policy.GuardSameTool, count: "8"},
		{name: "disabled", g: policy.Guardrails{Disabled: true}, calls: repeat(12, failNote), blocked: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sink := &memSink{}
			pol := &policy.Policy{Mode: permission.ModeBypass, Guardrails: tt.g, Audit: sink, Workspace: t.TempDir()}
			ctx := policy.WithLoopTracker(context.Background(), policy.NewLoopTracker())
			vs := runCalls(t, pol, ctx, tt.calls)
			first := -1
			for i, v := range vs {
				if !v.Allow {
					first = i
					break
				}
			}
			if first != tt.blocked {
				t.Fatalf("first refused call = %d, want %d (verdicts %+v)", first, tt.blocked, vs)
			}
			if first < 0 {
				return
			}
			v := vs[first]
			if v.Stage != policy.StageGuardrail || v.By != tt.rule || v.Notes[policy.NoteGuardCount] != tt.count ||
				len(v.Notes[policy.NoteGuardSignature]) != 16 || !strings.Contains(v.Reason, "blocked by a guardrail") {
				t.Fatalf("verdict = %+v", v)
			}
			// Refused again: a refused call does not run, so nothing changed.
			if last := len(vs) - 1; last > first && tt.calls[last] == tt.calls[first] && vs[last].Allow {
				t.Fatalf("the same call was allowed after its refusal: %+v", vs[last])
			}
			var blocked []string
			for _, e := range sink.entries {
				if e.Outcome == "blocked" {
					blocked = append(blocked, e.Extra["stage"]+"/"+e.Extra[policy.NoteGuardRule])
				}
			}
			if len(blocked) == 0 || blocked[0] != "guardrail/"+tt.rule {
				t.Fatalf("audit of the refusal = %v", blocked)
			}
		})
	}
}

// TestGuardrailsNeedATracker: a call checked without a run's tracker (a
// tool run directly, a front door that keeps none) is never refused, and
// two runs' trackers do not share counts.
func TestGuardrailsNeedATracker(t *testing.T) {
	t.Parallel()
	pol := &policy.Policy{Mode: permission.ModeBypass, Workspace: t.TempDir()}
	fail := outcome{tool: "Note", input: `{"text":"a"}`, failed: true, result: "boom"}
	for _, v := range runCalls(t, pol, context.Background(), repeat(10, fail)) {
		if !v.Allow {
			t.Fatalf("refused without a tracker: %+v", v)
		}
	}
	one := policy.WithLoopTracker(context.Background(), policy.NewLoopTracker())
	two := policy.WithLoopTracker(context.Background(), policy.NewLoopTracker())
	runCalls(t, pol, one, repeat(5, fail))
	if v := runCalls(t, pol, two, repeat(1, fail)); !v[0].Allow {
		t.Fatalf("a fresh run's call was refused: %+v", v[0])
	}
	if v := runCalls(t, pol, one, repeat(1, fail)); v[0].Allow {
		t.Fatal("the first run's sixth failing call was allowed")
	}
}

func TestCallSignature(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		same bool
	}{
		{`{"a":1,"b":"x"}`, `{ "b": "x", "a": 1 }`, true},
		{`{"a":{"y":1,"x":2}}`, `{"a":{"x":2,"y":1}}`, true},
		{``, `{}`, true},
		{`{"a":1}`, `{"a":1.0}`, false}, // numbers keep their spelling
		{`{"a":1}`, `{"a":2}`, false},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{`not json`, `not json`, true},
		{`not json`, `not  json`, false},
	}
	for _, tt := range tests {
		a, b := policy.CallSignature("T", json.RawMessage(tt.a)), policy.CallSignature("T", json.RawMessage(tt.b))
		if (a == b) != tt.same {
			t.Errorf("%s vs %s: same = %v, want %v", tt.a, tt.b, a == b, tt.same)
		}
	}
	if policy.CallSignature("A", json.RawMessage(`{}`)) == policy.CallSignature("B", json.RawMessage(`{}`)) {
		t.Error("two tools share a signature")
	}
}

// TestGuardrailSettings: the "guardrails" settings key, merged over
// scopes like secretScanning: a higher scope's enabled wins and its
// thresholds replace a lower one's.
func TestGuardrailSettings(t *testing.T) {
	t.Parallel()
	parse := func(scope, doc string) policy.Source {
		src, err := policy.Parse(scope, scope+".json", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	tests := []struct {
		name    string
		sources []policy.Source
		want    policy.Guardrails
	}{
		{name: "none", want: policy.Guardrails{}},
		{name: "thresholds", sources: []policy.Source{
			parse(policy.ScopeUser, `{"guardrails": {"sameCallFailures": 3, "stuckRounds": 2}}`),
			parse(policy.ScopeProject, `{"guardrails": {"sameCallFailures": 4, "sameResult": -1}}`),
		}, want: policy.Guardrails{SameCallFailures: 4, SameResult: -1, StuckRounds: 2}},
		{name: "off", sources: []policy.Source{parse(policy.ScopeProject, `{"guardrails": {"enabled": false}}`)}, want: policy.Guardrails{Disabled: true}},
		{name: "a higher scope turns them back on", sources: []policy.Source{
			parse(policy.ScopeUser, `{"guardrails": {"enabled": false}}`),
			parse(policy.ScopeCLI, `{"guardrails": {"enabled": true}}`),
		}, want: policy.Guardrails{}},
	}
	for _, tt := range tests {
		if got := policy.Merge(tt.sources...).Guardrails; got != tt.want {
			t.Errorf("%s: Guardrails = %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if _, err := policy.Parse(policy.ScopeUser, "s.json", []byte(`{"guardrails": {"sameResult": "five"}}`)); err == nil {
		t.Error("a mistyped threshold was accepted")
	}
	a, b, c, d, e := policy.Guardrails{}.Limits()
	if a != 5 || b != 8 || c != 5 || d != 3 || e != 3 {
		t.Errorf("default limits = %d %d %d %d %d", a, b, c, d, e)
	}
}
