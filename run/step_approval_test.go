package run_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/run"
)

// TestStepApprovalShowsRenderedArgs: step_approval_requested carries the
// arguments the step will run with, placeholders resolved: the same as its
// step_start and as what the tool gets.
func TestStepApprovalShowsRenderedArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, args, want string
	}{
		{"step result in text", `{"text":"{{steps.g.result}} there"}`, `{"text":"hello there"}`},
		{"whole step result", `{"text":"{{steps.g.result}}"}`, `{"text":"hello"}`},
		{"input", `{"text":"{{inputs.who}}!"}`, `{"text":"bo!"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newRunEnv(t, "", &policy.Policy{Mode: permission.ModeAuto, Rules: mustRules(t, []string{"Tool(note)"})})
			ctx := context.Background()
			created, err := e.runs.CreateRun(ctx, run.RunRequest{Goal: "g", Config: run.RunConfig{AutoApprove: true},
				Inputs: json.RawMessage(`{"who":"bo"}`),
				Workflow: mustPlan(t, `{"steps":[{"id":"g","tool":"echo","args":{"text":"hello"}},`+
					`{"id":"n","tool":"note","args":`+tc.args+`,"dependsOn":["g"],"requiresApproval":true}]}`)})
			if err != nil {
				t.Fatal(err)
			}
			evs := readRun(t, e.runs, created.ID, 0, "step_approval_requested")
			var gate struct {
				StepID string          `json:"stepId"`
				Args   json.RawMessage `json:"args"`
			}
			if err := json.Unmarshal(evs[len(evs)-1].Data, &gate); err != nil {
				t.Fatal(err)
			}
			if gate.StepID != "n" || string(gate.Args) != tc.want {
				t.Fatalf("step_approval_requested shows %s %s, want n %s", gate.StepID, gate.Args, tc.want)
			}
			if err := e.runs.Approve(ctx, created.ID, run.Approval{StepID: "n"}); err != nil {
				t.Fatal(err)
			}
			rest := readRun(t, e.runs, created.ID, evs[len(evs)-1].Seq, "complete")
			var start struct {
				StepID string          `json:"stepId"`
				Args   json.RawMessage `json:"args"`
			}
			if err := json.Unmarshal(rest[0].Data, &start); err != nil || rest[0].Type != "step_start" {
				t.Fatalf("after approval: %s %s", rest[0].Type, rest[0].Data)
			}
			if start.StepID != "n" || string(start.Args) != string(gate.Args) {
				t.Fatalf("step_start args %s differ from the approved %s", start.Args, gate.Args)
			}
			var approved struct{ Text string }
			_ = json.Unmarshal(gate.Args, &approved)
			if got := e.noted(); !slices.Equal(got, []string{approved.Text}) {
				t.Fatalf("the tool ran with %q, approved %q", got, approved.Text)
			}
		})
	}
}
