package task

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weft-run/weft/tool"
)

// Tool limits.
const (
	// MaxToolWait caps timeoutMs of task_output and task_wait: a tool call
	// should not hold a turn for longer.
	MaxToolWait = 10 * time.Minute
	// DefaultToolWait is task_wait's timeout when timeoutMs is omitted.
	DefaultToolWait = 30 * time.Second
	// ToolReadMax is how much new output of a process task one
	// task_output (or task_kill) shows: the latest bytes. Below the
	// tools' output cap, so that the framework, which cuts from the end,
	// never cuts the newest output.
	ToolReadMax = 30000
	// toolOutputCap is those tools' output cap: the output and a few
	// lines about the task.
	toolOutputCap = ToolReadMax + 2000
)

// object is a JSON object argument (workflow inputs) that keeps numbers
// exactly as written; its generated schema is an object with any
// properties.
type object map[string]any

// UnmarshalJSON decodes an object, numbers as json.Number.
func (o *object) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*o = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	*o = m
	return nil
}

// raw is o as JSON; nil for an absent object.
func (o object) raw() json.RawMessage {
	if o == nil {
		return nil
	}
	b, err := json.Marshal(map[string]any(o))
	if err != nil {
		// Only decoded JSON gets here, and that always encodes.
		return nil
	}
	return b
}

type submitInput struct {
	WorkflowID string `json:"workflowId" jsonschema:"id of a published workflow"`
	Inputs     object `json:"inputs,omitempty" jsonschema:"the workflow's inputs, matching its input schema"`
}

type outputInput struct {
	TaskID    string `json:"taskId" jsonschema:"the task's id"`
	TimeoutMs int    `json:"timeoutMs,omitempty" jsonschema:"how long to wait for the task to end, in milliseconds (0 or omitted: return the current state at once; at most 600000)"`
}

type waitInput struct {
	IDs       []string `json:"ids" jsonschema:"ids of the tasks to wait on (1 to 20)"`
	Mode      string   `json:"mode,omitempty" jsonschema:"any: return when one of them ends; all (the default): when every one has"`
	TimeoutMs *int     `json:"timeoutMs,omitempty" jsonschema:"how long to wait at most, in milliseconds (default 30000; 0 returns the current states at once; at most 600000)"`
}

type killInput struct {
	TaskID string `json:"taskId" jsonschema:"the task's id"`
}

type listInput struct{}

// Tools returns the task tools: task_submit_workflow (only when the
// registry has a WorkflowRunner: a tool that can only fail would mislead
// the model), task_output, task_wait, task_kill and task_list.
func (r *Registry) Tools() []tool.Tool {
	waitMeta := tool.Meta{ReadOnly: true, ConcurrencySafe: true, Effect: tool.EffectRead,
		Permission: tool.ClassReadOnly, Timeout: MaxToolWait + 30*time.Second, OutputCap: toolOutputCap}
	var tools []tool.Tool
	if r.runner != nil {
		tools = append(tools, tool.Func("task_submit_workflow",
			"Starts a published workflow in the background and returns its taskId at once, so that you can go on working while it runs. "+
				"Follow it with task_output (poll or wait for one task) or task_wait (wait for several), and stop it with task_kill.",
			tool.Meta{Effect: tool.EffectExecute, Permission: tool.ClassGeneric},
			r.submitTool))
	}
	return append(tools,
		tool.Func("task_output",
			"Returns a background task's status and, once it has ended, its result or error. "+
				"With timeoutMs it waits up to that long for the task to end; a task still running afterwards is reported as running. "+
				"For a command run in the background (Bash with run_in_background) it returns the output written since the previous task_output of that task "+
				"(the first call: since it started; the latest 30000 bytes at most) and, once it has ended, its exit code.",
			waitMeta, r.outputTool),
		tool.Func("task_wait",
			"Waits for background tasks (at most 20 ids) to end: mode \"any\" returns as soon as one has ended, \"all\" (the default) when all have, "+
				"or when timeoutMs passes. Returns every named task's status and, for ended ones, the result or error.",
			waitMeta, r.waitTool),
		tool.Func("task_kill",
			"Stops a running background task: a cooperative cancel first (a command gets SIGINT); "+
				"a command that keeps running gets SIGTERM and then SIGKILL, with every process it started. "+
				"Returns the task's state once it has stopped (or after the grace periods), and a command's last output not read yet.",
			tool.Meta{Effect: tool.EffectExecute, Permission: tool.ClassGeneric, Destructive: true,
				Timeout: r.killWait() + 10*time.Second, OutputCap: toolOutputCap},
			r.killTool),
		tool.Func("task_list",
			"Lists the background tasks, newest first, with their status.",
			tool.Meta{ReadOnly: true, ConcurrencySafe: true, Effect: tool.EffectRead, Permission: tool.ClassReadOnly},
			r.listTool),
	)
}

func (r *Registry) submitTool(ctx context.Context, in submitInput, _ *tool.Call) (tool.Result, error) {
	t, err := r.SubmitWorkflow(ctx, in.WorkflowID, in.Inputs.raw())
	if err != nil {
		return tool.Errorf("task_submit_workflow: %v", err), nil
	}
	return r.taskResult(fmt.Sprintf("Started task %s (workflow %s, run %s). Use task_output or task_wait with this taskId.", t.ID, t.WorkflowID, t.RunID), t), nil
}

func (r *Registry) outputTool(ctx context.Context, in outputInput, _ *tool.Call) (tool.Result, error) {
	timeout, err := toolTimeout(in.TimeoutMs)
	if err != nil {
		return tool.Errorf("task_output: %v", err), nil
	}
	t, err := r.Output(ctx, in.TaskID, timeout)
	if err != nil {
		return tool.Errorf("task_output: %v", err), nil
	}
	head := fmt.Sprintf("Task %s is %s.", t.ID, t.Status)
	if !t.Done() && timeout > 0 {
		head = fmt.Sprintf("Task %s is still running after %d ms.", t.ID, in.TimeoutMs)
	}
	return r.taskResult(head, t), nil
}

func (r *Registry) waitTool(ctx context.Context, in waitInput, _ *tool.Call) (tool.Result, error) {
	timeout := DefaultToolWait
	if in.TimeoutMs != nil {
		var err error
		if timeout, err = toolTimeout(*in.TimeoutMs); err != nil {
			return tool.Errorf("task_wait: %v", err), nil
		}
	}
	ts, err := r.Wait(ctx, in.IDs, in.Mode, timeout)
	if err != nil {
		return tool.Errorf("task_wait: %v", err), nil
	}
	ended := 0
	for _, t := range ts {
		if t.Done() {
			ended++
		}
	}
	head := fmt.Sprintf("%d of %d tasks have ended.", ended, len(ts))
	views := make([]Task, len(ts))
	processes := false
	for i, t := range ts {
		views[i] = withoutOutput(t)
		processes = processes || t.Kind == KindProcess
	}
	if processes {
		head += " Read a command's output with task_output."
	}
	body, _ := json.MarshalIndent(views, "", "  ")
	return tool.Result{Content: tool.Text(head + "\n" + string(body)).Content, Data: map[string]any{"tasks": views}}, nil
}

func (r *Registry) killTool(ctx context.Context, in killInput, _ *tool.Call) (tool.Result, error) {
	t, err := r.Get(in.TaskID)
	if err != nil {
		return tool.Errorf("task_kill: %v", err), nil
	}
	if t.Done() {
		return r.taskResult(fmt.Sprintf("Task %s had already ended (%s); nothing to kill.", t.ID, t.Status), t), nil
	}
	if err := r.Kill(in.TaskID); err != nil {
		return tool.Errorf("task_kill: %v", err), nil
	}
	t, err = r.Output(ctx, in.TaskID, r.killWait())
	if err != nil && !errors.Is(err, ErrUnknownTask) {
		return tool.Errorf("task_kill: %v", err), nil
	}
	if errors.Is(err, ErrUnknownTask) {
		return tool.Text(fmt.Sprintf("Task %s was killed.", in.TaskID)), nil
	}
	return r.taskResult(fmt.Sprintf("Task %s is %s.", t.ID, t.Status), t), nil
}

func (r *Registry) listTool(context.Context, listInput, *tool.Call) (tool.Result, error) {
	ts := r.List()
	if len(ts) == 0 {
		return tool.Text("No background tasks."), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d background tasks, newest first:\n", len(ts))
	for _, t := range ts {
		fmt.Fprintf(&b, "- %s  %s  %s", t.ID, t.Status, t.Kind)
		if t.Description != "" {
			fmt.Fprintf(&b, "  %s", t.Description)
		}
		if t.RunID != "" {
			fmt.Fprintf(&b, "  (run %s)", t.RunID)
		}
		b.WriteByte('\n')
	}
	return tool.Result{Content: tool.Text(strings.TrimSuffix(b.String(), "\n")).Content, Data: map[string]any{"tasks": ts}}, nil
}

// killWait is how long a Kill can take before the task has ended: it gives
// up after TermGrace and two KillGraces at most.
func (r *Registry) killWait() time.Duration {
	return r.opt.TermGrace + 2*r.opt.KillGrace + time.Second
}

// toolTimeout turns timeoutMs into a duration, capped at MaxToolWait.
func toolTimeout(ms int) (time.Duration, error) {
	if ms < 0 {
		return 0, fmt.Errorf("timeoutMs must not be negative (got %d)", ms)
	}
	if int64(ms) >= MaxToolWait.Milliseconds() {
		return MaxToolWait, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// taskResult shows a task to the model: a workflow task as JSON, a process
// task with its exit status and the output new since the last read.
func (r *Registry) taskResult(head string, t Task) tool.Result {
	if t.Kind == KindProcess {
		if po, err := r.ReadOutput(t.ID, ToolReadMax); err == nil {
			if po.Task.Done() && !t.Done() {
				// It ended between the two looks: say so, with its exit.
				head = fmt.Sprintf("Task %s is %s.", t.ID, po.Task.Status)
			}
			return processToolResult(head, po.Task, po)
		}
	}
	body, _ := json.MarshalIndent(t, "", "  ")
	return tool.Result{Content: tool.Text(head + "\n" + string(body)).Content, Data: map[string]any{"task": t}}
}

// processToolResult renders a read of a process task's output; t is its
// state at the read.
func processToolResult(head string, t Task, po ProcessOutput) tool.Result {
	var b strings.Builder
	b.WriteString(head)
	if t.Description != "" {
		fmt.Fprintf(&b, "\nCommand: %s", t.Description)
	}
	if t.Done() {
		var pr ProcessResult
		_ = json.Unmarshal(t.Result, &pr)
		switch {
		case pr.Signal != "":
			fmt.Fprintf(&b, "\nKilled by signal: %s", pr.Signal)
		case len(t.Result) > 0:
			fmt.Fprintf(&b, "\nExit code: %d", pr.ExitCode)
		case t.Error != "":
			fmt.Fprintf(&b, "\nError: %s", t.Error)
		}
	}
	if po.Skipped > 0 {
		fmt.Fprintf(&b, "\n[%d earlier bytes of the output written since the last read are left out: a read shows the latest %d bytes, and a command's last %d KiB are kept]", po.Skipped, ToolReadMax, ProcessOutputCap>>10)
	}
	switch {
	case po.Output != "":
		fmt.Fprintf(&b, "\nOutput since the last read:\n%s", strings.TrimRight(po.Output, "\n"))
	case t.Done():
		b.WriteString("\nNo output since the last read.")
	default:
		b.WriteString("\nNo new output yet.")
	}
	if !t.Done() {
		b.WriteString("\nIt is still running: call task_output again for what it writes next (timeoutMs waits for it to end), or stop it with task_kill.")
	}
	view := withoutOutput(t)
	return tool.Result{Content: tool.Text(b.String()).Content,
		Data: map[string]any{"task": view, "output": po.Output, "skipped": po.Skipped}}
}

// withoutOutput is t without a process's kept output in its result: the
// model reads output with task_output, and a wait on many tasks or a
// tool event should not carry up to ProcessOutputCap bytes of each.
func withoutOutput(t Task) Task {
	if t.Kind != KindProcess || len(t.Result) == 0 {
		return t
	}
	var pr ProcessResult
	if json.Unmarshal(t.Result, &pr) != nil {
		return t
	}
	raw, err := json.Marshal(struct {
		PID      int    `json:"pid"`
		ExitCode int    `json:"exitCode"`
		Signal   string `json:"signal,omitempty"`
	}{pr.PID, pr.ExitCode, pr.Signal})
	if err == nil {
		t.Result = raw
	}
	return t
}
