package policy_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/audit"
	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/tool"
)

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

var (
	noteSpec = tool.Spec{Name: "Note", Meta: tool.Meta{Effect: tool.EffectWrite}}
	bashSpec = tool.Spec{Name: "Bash", Meta: tool.Meta{Effect: tool.EffectExecute, Permission: tool.ClassBash}}
)

func parseRules(t *testing.T, allow, deny []string) permission.RuleSet {
	t.Helper()
	var rs permission.RuleSet
	for _, l := range []struct {
		src []string
		dst *[]permission.Rule
	}{{allow, &rs.Allow}, {deny, &rs.Deny}} {
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

func TestDefaultPipelineOrder(t *testing.T) {
	t.Parallel()
	want := []string{"schema", "guardrail", "pre_tool_use", "deny_rules", "bypass", "floor", "ask_rules", "unresolved",
		"protected", "allow_rules", "mode_default", "opinion", "resolve_paths", "approve", "checkpoint"}
	if got := policy.DefaultPipeline().Stages(); !slices.Equal(got, want) {
		t.Fatalf("stages = %v, want %v", got, want)
	}
	if got := policy.DefaultPipeline().Finishers(); !slices.Equal(got, []string{"redact", "guardrail", "post_tool_use", "context", "audit"}) {
		t.Fatalf("finishers = %v", got)
	}
}

// TestCustomStageRunsAtItsPosition: a stage added to the pipeline runs
// where it was put: before the hooks it refuses a call no hook sees;
// after them, the hooks have run; at the end it sees the human's answer.
func TestCustomStageRunsAtItsPosition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		before      string
		hookCalls   int
		humanCalls  int
		sawDecision permission.Verdict // what the stage found decided when it ran
	}{
		{name: "before the hooks", before: policy.StagePreToolUse, hookCalls: 0, humanCalls: 0, sawDecision: ""},
		{name: "after the rules", before: policy.StageApprove, hookCalls: 1, humanCalls: 0, sawDecision: permission.Ask},
		{name: "at the end", before: "", hookCalls: 1, humanCalls: 1, sawDecision: permission.Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var hookSaw []string
			hooks := hook.NewManager(hook.Options{})
			if err := hooks.Register(hook.Def{Event: hook.PreToolUse, Func: func(_ context.Context, in hook.Input) (hook.Outcome, error) {
				mu.Lock()
				defer mu.Unlock()
				hookSaw = append(hookSaw, string(in.ToolInput))
				return hook.Outcome{}, nil
			}}); err != nil {
				t.Fatal(err)
			}
			var saw []permission.Verdict
			budget := policy.StageFunc(func(_ context.Context, st *policy.State) policy.Decision {
				saw = append(saw, st.Decision.Verdict)
				if strings.Contains(string(st.Input), "expensive") {
					return policy.Decision{Verdict: permission.Deny, Reason: "over budget", Stage: "budget"}
				}
				return policy.Decision{}
			})
			pl, err := policy.DefaultPipeline().Insert(tt.before, "budget", budget)
			if err != nil {
				t.Fatal(err)
			}
			sink := &memSink{}
			pol := &policy.Policy{Hooks: hooks, Audit: sink, Pipeline: pl, Workspace: t.TempDir()}
			humanCalls := 0
			human := func(context.Context, policy.Call, string) (bool, string) { humanCalls++; return true, "" }

			v := pol.Before(context.Background(), policy.Call{Tool: "Note", Input: json.RawMessage(`{"text":"expensive"}`), Spec: noteSpec}, human, nil)
			if v.Allow || v.Stage != "budget" || v.Reason != "over budget" {
				t.Fatalf("verdict = %+v, want a denial by the budget stage", v)
			}
			if len(hookSaw) != tt.hookCalls || humanCalls != tt.humanCalls {
				t.Fatalf("hook saw %d calls, human %d; want %d and %d", len(hookSaw), humanCalls, tt.hookCalls, tt.humanCalls)
			}
			if !slices.Equal(saw, []permission.Verdict{tt.sawDecision}) {
				t.Fatalf("the stage ran %v, want once seeing %q", saw, tt.sawDecision)
			}
			if len(sink.entries) != 1 || sink.entries[0].Outcome != "blocked" || sink.entries[0].Extra["stage"] != "budget" {
				t.Fatalf("audit = %+v", sink.entries)
			}
			// A call the stage lets through goes on as before.
			v = pol.Before(context.Background(), policy.Call{Tool: "Note", Input: json.RawMessage(`{"text":"cheap"}`), Spec: noteSpec}, human, nil)
			if !v.Allow || v.Stage != "human" {
				t.Fatalf("verdict = %+v, want allowed by the human", v)
			}
		})
	}
}

// TestStageDecisions: what a stage's Allow or Ask means depends on where it
// is: before the rules it is an opinion they weigh (deny still wins),
// among them the first decision wins, and after them nothing but the
// human answers an ask only a person may answer.
func TestStageDecisions(t *testing.T) {
	t.Parallel()
	says := func(v permission.Verdict) policy.Stage {
		return policy.StageFunc(func(context.Context, *policy.State) policy.Decision {
			return policy.Decision{Verdict: v, Reason: "the custom stage says " + string(v), Stage: "custom"}
		})
	}
	tests := []struct {
		name      string
		before    string
		stage     policy.Stage
		spec      tool.Spec
		input     string
		allow     []string
		deny      []string
		wantStage string // of the verdict; "" = allowed is not expected
		allowed   bool
		asked     int
	}{
		{name: "an ask before the rules sends an allowed call to the human", before: policy.StagePreToolUse, stage: says(permission.Ask),
			spec: noteSpec, input: `{"text":"x"}`, allow: []string{"Note"}, wantStage: "human", allowed: true, asked: 1},
		{name: "an allow before the rules settles a question", before: policy.StagePreToolUse, stage: says(permission.Allow),
			spec: noteSpec, input: `{"text":"x"}`, wantStage: "custom", allowed: true},
		{name: "an allow before the rules does not beat a deny rule", before: policy.StageDenyRules, stage: says(permission.Allow),
			spec: noteSpec, input: `{"text":"x"}`, deny: []string{"Note"}, wantStage: permission.StageDenyRule},
		{name: "an allow before the rules does not open the floor", before: policy.StagePreToolUse, stage: says(permission.Allow),
			spec: bashSpec, input: `{"command":"rm -rf build"}`, wantStage: "human", allowed: true, asked: 1},
		{name: "an ask among the rules wins over the allow rules after it", before: policy.StageAllowRules, stage: says(permission.Ask),
			spec: noteSpec, input: `{"text":"x"}`, allow: []string{"Note"}, wantStage: "human", allowed: true, asked: 1},
		{name: "a deny among the rules ends the pipeline after an allow rule", before: policy.StageModeDefault, stage: says(permission.Deny),
			spec: noteSpec, input: `{"text":"x"}`, allow: []string{"Note"}, wantStage: "custom"},
		{name: "an allow after the rules settles a question", before: policy.StageApprove, stage: says(permission.Allow),
			spec: noteSpec, input: `{"text":"x"}`, wantStage: "custom", allowed: true},
		{name: "an allow after the rules does not answer the floor", before: policy.StageApprove, stage: says(permission.Allow),
			spec: bashSpec, input: `{"command":"rm -rf build"}`, wantStage: "human", allowed: true, asked: 1},
		{name: "a stage that panics denies", before: policy.StageDenyRules,
			stage: policy.StageFunc(func(context.Context, *policy.State) policy.Decision { panic("boom") }),
			spec:  noteSpec, input: `{"text":"x"}`, allow: []string{"Note"}, wantStage: "custom"},
		{name: "an unknown verdict denies", before: policy.StagePreToolUse, stage: says("maybe"),
			spec: noteSpec, input: `{"text":"x"}`, allow: []string{"Note"}, wantStage: "custom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pl, err := policy.DefaultPipeline().Insert(tt.before, "custom", tt.stage)
			if err != nil {
				t.Fatal(err)
			}
			pol := &policy.Policy{Rules: parseRules(t, tt.allow, tt.deny), Pipeline: pl, Workspace: t.TempDir()}
			asked := 0
			human := func(context.Context, policy.Call, string) (bool, string) { asked++; return true, "" }
			v := pol.Before(context.Background(), policy.Call{Tool: tt.spec.Name, Input: json.RawMessage(tt.input), Spec: tt.spec}, human, nil)
			if v.Allow != tt.allowed || v.Stage != tt.wantStage || asked != tt.asked {
				t.Fatalf("verdict = %+v, human asked %d times; want allowed=%v stage %q, asked %d", v, asked, tt.allowed, tt.wantStage, tt.asked)
			}
		})
	}
}

// TestStageNotesAndFinishers: what a stage notes goes into the call's
// audit entry, and a finisher added before the context step adds to what
// the model sees.
func TestStageNotesAndFinishers(t *testing.T) {
	t.Parallel()
	pl, err := policy.DefaultPipeline().Insert(policy.StageApprove, "meter", policy.StageFunc(func(_ context.Context, st *policy.State) policy.Decision {
		st.Notes = map[string]string{"cost": "3", "stage": "not this"}
		return policy.Decision{}
	}))
	if err != nil {
		t.Fatal(err)
	}
	pl, err = pl.InsertFinisher(policy.FinishContext, "remaining", policy.FinisherFunc(func(_ context.Context, st *policy.State) {
		st.Context = "budget left: " + st.Notes["cost"]
	}))
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	pol := &policy.Policy{Rules: parseRules(t, []string{"Note"}, nil), Audit: sink, Pipeline: pl, Workspace: t.TempDir()}
	c := policy.Call{Tool: "Note", Input: json.RawMessage(`{"text":"x"}`), Spec: noteSpec}
	v := pol.Before(context.Background(), c, nil, nil)
	if !v.Allow {
		t.Fatalf("verdict = %+v", v)
	}
	res := tool.Text("noted")
	pol.After(context.Background(), c, v, &res)
	if got := res.TextOf(); got != "notedbudget left: 3" || len(res.Content) != 2 {
		t.Fatalf("result = %q", got)
	}
	if len(sink.entries) != 1 {
		t.Fatalf("audit = %+v", sink.entries)
	}
	if e := sink.entries[0].Extra; e["cost"] != "3" || e["stage"] != permission.StageAllowRule || e["by"] != "Note" {
		t.Fatalf("audit extra = %v", e)
	}
}

func TestInsertRefusesMistakes(t *testing.T) {
	t.Parallel()
	pass := policy.StageFunc(func(context.Context, *policy.State) policy.Decision { return policy.Decision{} })
	tests := []struct {
		name, before, stage string
		s                   policy.Stage
	}{
		{name: "unknown position", before: "no_such_stage", stage: "x", s: pass},
		{name: "a name taken", before: policy.StageSchema, stage: policy.StageFloor, s: pass},
		{name: "no name", before: policy.StageSchema, stage: "", s: pass},
		{name: "no stage", before: policy.StageSchema, stage: "x", s: nil},
	}
	for _, tt := range tests {
		if pl, err := policy.DefaultPipeline().Insert(tt.before, tt.stage, tt.s); err == nil {
			t.Errorf("%s: Insert = %v, want an error", tt.name, pl.Stages())
		}
	}
	// Insert copies: the default list is never changed.
	before := policy.DefaultPipeline().Stages()
	a, _ := policy.DefaultPipeline().Insert(policy.StageFloor, "a", pass)
	b, _ := policy.DefaultPipeline().Insert(policy.StageFloor, "b", pass)
	if !slices.Equal(policy.DefaultPipeline().Stages(), before) || slices.Contains(a.Stages(), "b") || slices.Contains(b.Stages(), "a") {
		t.Fatalf("default %v, a %v, b %v", policy.DefaultPipeline().Stages(), a.Stages(), b.Stages())
	}
}
