// Package workflow turns a published workflow into a tool, run_workflow_<id>,
// that chat sessions and other callers invoke like any tool (seed 001: "AI
// invocation"). The tool only knows how to reach a runner: the runtime
// implements Runner, so this package does not depend on it, and the run
// itself is an ordinary plan-and-execute run (same executor, same run
// history, same safety pipeline).
package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/weft-run/weft/tool"
)

// Prefix starts the name of every workflow tool.
const Prefix = "run_workflow_"

// DefaultTimeout bounds one workflow tool call: a workflow is many tool
// calls, so the default tool deadline would cut most of them short.
const DefaultTimeout = 30 * time.Minute

// ToolName is the tool name of workflow id.
func ToolName(id string) string { return Prefix + id }

// IsTool reports whether name is a workflow tool's. Saved workflows and
// runs may not call these (no recursion).
func IsTool(name string) bool { return strings.HasPrefix(name, Prefix) }

// Outcome is how a workflow run called as a tool ended.
type Outcome struct {
	RunID string
	// Status is the run's final status (completed, failed, cancelled,
	// interrupted).
	Status string
	// Result is the run's final result (JSON) when it completed.
	Result json.RawMessage
	// Error says why it did not complete.
	Error string
}

// Runner runs a workflow synchronously: it binds inputs, runs the plan to
// its end under the policy the caller's context carries
// (policy.CallerFrom), and reports the outcome. An error means the run
// could not start (bad inputs, unknown or unpublished workflow); it must
// be a one-line message the model can act on.
type Runner interface {
	CallWorkflow(ctx context.Context, workflowID string, inputs json.RawMessage) (Outcome, error)
}

// Def describes the tool of one published workflow.
type Def struct {
	ID          string
	Name        string
	Description string
	// InputSchema is the workflow's input contract, which becomes the
	// tool's schema; empty means an object with no declared properties.
	InputSchema json.RawMessage
	// ReadOnly is set when every step's tool is read-only, so that the
	// permission modes treat the call like any read-only tool call.
	ReadOnly bool
	// Timeout bounds a call: 0 means DefaultTimeout, negative none.
	Timeout time.Duration
}

// New returns the tool of def, running through r.
func New(def Def, r Runner) tool.Tool { return &wfTool{def: def, r: r} }

type wfTool struct {
	def Def
	r   Runner
}

func (t *wfTool) Spec() tool.Spec {
	schema := t.def.InputSchema
	if len(bytes.TrimSpace(schema)) == 0 || string(bytes.TrimSpace(schema)) == "null" {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	desc := fmt.Sprintf("Run the saved workflow %q and return its final result.", t.def.Name)
	if d := strings.TrimSpace(t.def.Description); d != "" {
		desc += " " + d
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
	return tool.Spec{Name: ToolName(t.def.ID), Description: desc, InputSchema: schema, Meta: meta}
}

func (t *wfTool) Run(ctx context.Context, call *tool.Call) (tool.Result, error) {
	out, err := t.r.CallWorkflow(ctx, t.def.ID, call.Input)
	if err != nil {
		return tool.Result{}, err
	}
	data := map[string]any{"runId": out.RunID, "status": out.Status}
	if out.Status != "completed" {
		msg := fmt.Sprintf("workflow run %s %s", out.RunID, out.Status)
		if out.Error != "" {
			msg += ": " + out.Error
		}
		res := tool.Text(msg)
		res.IsError = true
		res.Data = data
		return res, nil
	}
	res := tool.Text(resultText(out.Result))
	res.Data = data
	return res, nil
}

// resultText shows a result to the model: a JSON string as its text,
// anything else as JSON.
func resultText(r json.RawMessage) string {
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	if len(r) == 0 {
		return "null"
	}
	return string(r)
}
