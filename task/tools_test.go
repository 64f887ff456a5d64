package task

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/weft-run/weft/tool"
)

func execTool(t *testing.T, reg *tool.Registry, name, input string) tool.Result {
	t.Helper()
	return reg.Execute(context.Background(), &tool.Call{ID: "call_1", Name: name, Input: json.RawMessage(input)})
}

func TestToolsEndToEnd(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	r := newTestRegistry(t, newMemRunner(testWorkflows(release, nil)), Options{})
	reg, err := tool.NewRegistry(r.Tools()...)
	if err != nil {
		t.Fatal(err)
	}

	res := execTool(t, reg, "task_submit_workflow", `{"workflowId":"echo","inputs":{"big":12345678901234567890,"s":"x"}}`)
	echo, ok := res.Data["task"].(Task)
	if res.IsError || !ok || !strings.Contains(res.TextOf(), echo.ID) {
		t.Fatalf("submit: %+v", res)
	}
	res = execTool(t, reg, "task_output", fmt.Sprintf(`{"taskId":%q,"timeoutMs":10000}`, echo.ID))
	got := res.Data["task"].(Task)
	if res.IsError || got.Status != StatusCompleted || string(got.Result) != `{"big":12345678901234567890,"s":"x"}` {
		t.Fatalf("output: %+v", res)
	}
	if !strings.Contains(res.TextOf(), `"status": "completed"`) {
		t.Fatalf("output text: %s", res.TextOf())
	}

	res = execTool(t, reg, "task_submit_workflow", `{"workflowId":"gate"}`)
	gate := res.Data["task"].(Task)
	res = execTool(t, reg, "task_output", fmt.Sprintf(`{"taskId":%q,"timeoutMs":10}`, gate.ID))
	if res.IsError || !strings.Contains(res.TextOf(), "still running after 10 ms") {
		t.Fatalf("output of a running task: %+v", res.TextOf())
	}
	res = execTool(t, reg, "task_wait", fmt.Sprintf(`{"ids":[%q,%q],"mode":"any","timeoutMs":10000}`, echo.ID, gate.ID))
	if res.IsError || !strings.HasPrefix(res.TextOf(), "1 of 2 tasks have ended.") {
		t.Fatalf("wait any: %s", res.TextOf())
	}
	res = execTool(t, reg, "task_list", `{}`)
	if res.IsError || !strings.Contains(res.TextOf(), gate.ID+"  running  workflow") || len(res.Data["tasks"].([]Task)) != 2 {
		t.Fatalf("list: %s", res.TextOf())
	}
	res = execTool(t, reg, "task_kill", fmt.Sprintf(`{"taskId":%q}`, gate.ID))
	if res.IsError || !strings.Contains(res.TextOf(), "is cancelled") {
		t.Fatalf("kill: %s", res.TextOf())
	}
	res = execTool(t, reg, "task_kill", fmt.Sprintf(`{"taskId":%q}`, gate.ID))
	if res.IsError || !strings.Contains(res.TextOf(), "already ended (cancelled)") {
		t.Fatalf("kill again: %s", res.TextOf())
	}
	res = execTool(t, reg, "task_wait", fmt.Sprintf(`{"ids":[%q,%q]}`, echo.ID, gate.ID))
	if res.IsError || !strings.HasPrefix(res.TextOf(), "2 of 2 tasks have ended.") {
		t.Fatalf("wait all: %s", res.TextOf())
	}
	close(release)
}

func TestToolErrors(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t, newMemRunner(testWorkflows(nil, nil)), Options{})
	reg, err := tool.NewRegistry(r.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 21)
	for i := range ids {
		ids[i] = fmt.Sprintf("task_%d", i)
	}
	many, _ := json.Marshal(map[string]any{"ids": ids})
	tests := []struct {
		tool, input, want string
	}{
		{"task_submit_workflow", `{"workflowId":"missing"}`, `workflow "missing" not found`},
		{"task_submit_workflow", `{"inputs":{}}`, "workflowId"},
		{"task_output", `{"taskId":"task_nope"}`, `unknown task "task_nope"`},
		{"task_output", `{"taskId":"task_nope","timeoutMs":-5}`, "timeoutMs must not be negative"},
		{"task_wait", string(many), "21 task ids given; wait on at most 20"},
		{"task_wait", `{"ids":[]}`, "no task ids given"},
		{"task_wait", `{"ids":["task_a"],"mode":"some"}`, `mode "some": use "any" or "all"`},
		{"task_wait", `{"ids":["task_a"]}`, "unknown task: task_a"},
		{"task_kill", `{"taskId":"task_nope"}`, `unknown task "task_nope"`},
	}
	for _, tt := range tests {
		res := execTool(t, reg, tt.tool, tt.input)
		if !res.IsError || !strings.Contains(res.TextOf(), tt.want) {
			t.Errorf("%s %s: %v %q, want an error containing %q", tt.tool, tt.input, res.IsError, res.TextOf(), tt.want)
		}
	}
}

func TestToolMeta(t *testing.T) {
	t.Parallel()
	readOnly := map[string]bool{"task_submit_workflow": false, "task_output": true, "task_wait": true, "task_kill": false, "task_list": true}
	tests := []struct {
		name   string
		runner WorkflowRunner
		want   int
	}{
		{"with workflows", newMemRunner(testWorkflows(nil, nil)), 5},
		// No runner (weft run and chat): no task_submit_workflow, a tool
		// that could only fail.
		{"processes only", nil, 4},
	}
	for _, tt := range tests {
		r := newTestRegistry(t, tt.runner, Options{})
		tools := r.Tools()
		if len(tools) != tt.want {
			t.Fatalf("%s: %d tools, want %d", tt.name, len(tools), tt.want)
		}
		for _, tl := range tools {
			s := tl.Spec()
			want, ok := readOnly[s.Name]
			if !ok || s.ReadOnly != want || s.ConcurrencySafe != want || s.Description == "" {
				t.Errorf("%s: read-only %v concurrency-safe %v, want %v", s.Name, s.ReadOnly, s.ConcurrencySafe, want)
			}
			if want && s.Timeout <= MaxToolWait && s.Name != "task_list" {
				t.Errorf("%s: timeout %v shorter than the longest wait", s.Name, s.Timeout)
			}
			if (s.Name == "task_output" || s.Name == "task_kill") && s.OutputCap <= ToolReadMax {
				t.Errorf("%s: output cap %d would cut the newest output", s.Name, s.OutputCap)
			}
			if s.Name == "task_submit_workflow" && tt.runner == nil {
				t.Errorf("task_submit_workflow offered without workflows")
			}
		}
	}
}
