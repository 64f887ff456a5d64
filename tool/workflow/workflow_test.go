package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/run"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/workflow"
)

type textIn struct {
	Text string `json:"text"`
}

// TestWorkflowTool publishes workflows through the real run manager and
// calls their tools through the registry, as a chat session would.
func TestWorkflowTool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "weft.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	echo := tool.Func("echo", "returns its text", tool.Meta{ReadOnly: true},
		func(ctx context.Context, in textIn, _ *tool.Call) (tool.Result, error) {
			return tool.Text(in.Text), nil
		})
	fail := tool.Func("fail", "always fails", tool.Meta{Effect: tool.EffectExecute},
		func(ctx context.Context, in textIn, _ *tool.Call) (tool.Result, error) {
			return tool.Result{}, errors.New("broken")
		})
	reg, err := tool.NewRegistry(echo, fail)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := run.New(ctx, run.Config{Runs: db, Workflows: db, Tools: reg,
		Policy: func() *policy.Policy { return &policy.Policy{Mode: "bypass"} }, WorkflowToolTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer runs.Shutdown(ctx)
	publish := func(name, schema, plan string) string {
		t.Helper()
		published := true
		wf, err := runs.CreateWorkflow(ctx, run.WorkflowInput{Name: &name, InputSchema: json.RawMessage(schema),
			Plan: json.RawMessage(plan), Published: &published})
		if err != nil {
			t.Fatal(err)
		}
		return wf.ID
	}
	okID := publish("shout", `{"type":"object","properties":{"who":{"type":"string"}},"required":["who"]}`,
		`{"steps":[{"tool":"echo","args":{"text":"hi {{inputs.who}}"}}]}`)
	badID := publish("breaks", "", `{"steps":[{"tool":"fail","args":{"text":"x"}}]}`)

	tests := []struct {
		name     string
		id       string
		input    string
		readOnly bool
		out      string
		isError  bool
	}{
		{"completes", okID, `{"who":"ann"}`, true, "hi ann", false},
		{"input checked by the schema", okID, `{}`, true, "who", true},
		{"failed run", badID, `{}`, false, "failed", true},
	}
	for _, tc := range tests {
		name := workflow.ToolName(tc.id)
		if !workflow.IsTool(name) || workflow.IsTool("echo") {
			t.Fatalf("IsTool(%q)", name)
		}
		tl, ok := reg.Get(name)
		if !ok {
			t.Fatalf("%s: %s is not registered", tc.name, name)
		}
		spec := tl.Spec()
		if spec.ReadOnly != tc.readOnly || spec.Timeout != time.Minute || !strings.Contains(spec.Description, "saved workflow") {
			t.Fatalf("%s: spec %+v", tc.name, spec)
		}
		var schema map[string]any
		if json.Unmarshal(spec.InputSchema, &schema) != nil || schema["type"] != "object" {
			t.Fatalf("%s: schema %s", tc.name, spec.InputSchema)
		}
		res := reg.Execute(ctx, &tool.Call{ID: "c1", Name: name, Input: json.RawMessage(tc.input)})
		if res.IsError != tc.isError || !strings.Contains(res.TextOf(), tc.out) {
			t.Fatalf("%s: result %q (error %v)", tc.name, res.TextOf(), res.IsError)
		}
		if !tc.isError || tc.id == badID {
			if id, _ := res.Data["runId"].(string); !strings.HasPrefix(id, "run_") {
				t.Fatalf("%s: data %v", tc.name, res.Data)
			}
		}
	}
}
