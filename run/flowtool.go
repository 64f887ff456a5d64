package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/workflow"
)

// CurrentFlowTool returns run_current_flow for the workflow id as it is
// stored now (its name, description and input schema are what the model
// is offered; sessions ask at the start of each turn). Each call runs the
// revision stored when the call is made; a deleted workflow's tool says
// so when called.
func (m *Service) CurrentFlowTool(ctx context.Context, id string) (tool.Tool, error) {
	w, err := m.GetWorkflow(ctx, id)
	if errors.Is(err, record.ErrNotFound) {
		// Deleted since the session was bound: the model may still call
		// the tool, and is told the workflow is gone.
		w, err = record.Workflow{ID: id, Name: id}, nil
	}
	if err != nil {
		return nil, err
	}
	ro := false
	if p, err := decodePlan(w.Plan); err == nil {
		ro, _ = p.ReadOnly(m.lookupTool)
	}
	return workflow.NewCurrent(workflow.Def{ID: w.ID, Name: w.Name, Description: w.Description, InputSchema: w.InputSchema,
		ReadOnly: ro, Timeout: m.cfg.WorkflowToolTimeout}, m), nil
}

// CallCurrentWorkflow runs the stored revision of workflow id, draft or
// published, for run_current_flow (it implements workflow.CurrentRunner):
// an ordinary recorded run under the caller's policy, as CallWorkflow.
// started is told the run's id once it exists (nil: not told).
func (m *Service) CallCurrentWorkflow(ctx context.Context, id string, inputs json.RawMessage, started func(runID string)) (workflow.CurrentOutcome, error) {
	w, err := m.GetWorkflow(ctx, id)
	if err != nil {
		if errors.Is(err, record.ErrNotFound) {
			return workflow.CurrentOutcome{}, fmt.Errorf("workflow %q no longer exists", id)
		}
		return workflow.CurrentOutcome{}, err
	}
	out, err := m.callWorkflow(ctx, w, inputs, started)
	return workflow.CurrentOutcome{Outcome: out, WorkflowID: w.ID, Revision: w.Revision}, err
}
