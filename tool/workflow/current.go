package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weft-run/weft/tool"
)

// CurrentName is the tool a session bound to a workflow gets (the Flows
// builder's chat dock: "chat with the flow" in seed 001). Unlike
// run_workflow_<id> it is bound to a workflow, not to a published
// revision: each call runs what is stored when the call is made, draft
// or published. It is never in the server's registry, so saved plans
// cannot name it (no recursion).
const CurrentName = "run_current_flow"

// CurrentOutcome is a run_current_flow call's outcome: the run's, and the
// revision of the workflow that ran.
type CurrentOutcome struct {
	Outcome
	WorkflowID string
	Revision   int
}

// CurrentRunner runs the stored workflow id (draft or published) to its
// end under the caller's policy. An error means the run could not start
// (the workflow is gone, the inputs are refused, the plan is invalid):
// a one-line message the model can act on. started, when set, is told
// the run's id as soon as the run exists, before it ends.
type CurrentRunner interface {
	CallCurrentWorkflow(ctx context.Context, workflowID string, inputs json.RawMessage, started func(runID string)) (CurrentOutcome, error)
}

// StartedProgress is the progress line run_current_flow reports when its
// run starts, before the result: a client (the Flows builder's chat dock)
// follows the run's own event stream (GET /v1/runs/{id}/events) from it
// to show the steps while they run. ParseStarted reads it back.
func StartedProgress(runID string) string { return "workflow run " + runID + " started" }

// ParseStarted returns the run id of a StartedProgress line.
func ParseStarted(line string) (string, bool) {
	id, ok := strings.CutPrefix(line, "workflow run ")
	if !ok {
		return "", false
	}
	id, ok = strings.CutSuffix(id, " started")
	if !ok || id == "" || strings.ContainsAny(id, " \n") {
		return "", false
	}
	return id, true
}

// NewCurrent returns run_current_flow for def (the workflow as it is
// stored now: its schema and description are what the model is offered
// this turn), running through r.
func NewCurrent(def Def, r CurrentRunner) tool.Tool { return &currentTool{def: def, r: r} }

type currentTool struct {
	def Def
	r   CurrentRunner
}

func (t *currentTool) Spec() tool.Spec {
	schema := t.def.InputSchema
	if s := bytes.TrimSpace(schema); len(s) == 0 || string(s) == "null" {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	desc := fmt.Sprintf("Runs the flow %q that the user is editing", t.def.Name)
	if d := strings.TrimSpace(t.def.Description); d != "" {
		desc += ": " + d
	} else {
		desc += "."
	}
	timeout := t.def.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	meta := tool.Meta{ReadOnly: t.def.ReadOnly, Timeout: timeout}
	if t.def.ReadOnly {
		meta.Effect = tool.EffectRead
		meta.Permission = tool.ClassReadOnly
	}
	return tool.Spec{Name: CurrentName, Description: desc, InputSchema: schema, Meta: meta}
}

// currentOutput is the JSON the model (and the dock, which shows the run
// on the canvas) reads.
type currentOutput struct {
	RunID  string          `json:"runId"`
	Status string          `json:"status"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

func (t *currentTool) Run(ctx context.Context, call *tool.Call) (tool.Result, error) {
	// The run's id goes out as progress at once: the caller may follow
	// the run's steps while the call waits for its end.
	out, err := t.r.CallCurrentWorkflow(ctx, t.def.ID, call.Input, func(runID string) { call.Progress(StartedProgress(runID)) })
	if err != nil {
		// Refused inputs, an invalid plan, a deleted workflow: the model
		// is told and the turn goes on.
		res := tool.Text(fmt.Sprintf("%s: %v", CurrentName, err))
		res.IsError = true
		res.Data = map[string]any{"workflowId": t.def.ID}
		return res, nil
	}
	body, err := json.Marshal(currentOutput{RunID: out.RunID, Status: out.Status, Result: out.Result, Error: out.Error})
	if err != nil {
		return tool.Result{}, err
	}
	res := tool.Text(string(body))
	res.IsError = out.Status != "completed"
	res.Data = map[string]any{"runId": out.RunID, "workflowId": out.WorkflowID, "revision": out.Revision}
	return res, nil
}
