package main

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRunsWorkflowsWithoutKey: the main job on the embedded defaults,
// with no model and no key, saves a workflow and runs it to completion
// (workflows need no model), lists the background tasks, and accepts and
// lists a schedule.
func TestServeRunsWorkflowsWithoutKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, nil, "--db", filepath.Join(dir, "weft.db"), "--workspace", dir)
	wf := p.expect("POST", "/v1/workflows", `{"name":"read notes",
		"inputSchema":{"type":"object","properties":{"file":{"type":"string"}},"required":["file"]},
		"plan":{"steps":[
			{"id":"read","tool":"Read","args":{"file_path":"{{inputs.file}}"}},
			{"id":"find","tool":"Grep","args":{"pattern":"beta","path":"{{inputs.file}}"},"dependsOn":["read"]}
		]}}`, 201)
	id := wf["id"].(string)
	missing := p.expect("POST", "/v1/workflows/"+id+"/run", `{"inputs":{}}`, 400)
	if !strings.Contains(missing["error"].(map[string]any)["message"].(string), "file") {
		t.Fatalf("missing input not named: %v", missing)
	}
	run := p.expect("POST", "/v1/workflows/"+id+"/run", `{"inputs":{"file":"notes.txt"}}`, 200)
	runID, _ := run["runId"].(string)
	if runID == "" {
		t.Fatalf("run %v", run)
	}
	resp := p.request("GET", "/v1/runs/"+runID+"/events?after=0", "")
	fs, err := frames(t, resp, func(f frame) bool { return f.event == "complete" || f.event == "error" })
	resp.Body.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	names := eventNames(fs)
	if !strings.HasSuffix(names, "complete") || strings.Count(names, "step_complete") != 2 {
		t.Fatalf("run events: %s\n%v", names, fs)
	}
	got := p.expect("GET", "/v1/runs/"+runID, "", 200)
	if !strings.Contains(toJSON(t, got), "alpha") {
		t.Fatalf("step results lack the file's content: %v", got)
	}

	if m := p.expect("GET", "/v1/tasks", "", 200); m["count"] != float64(0) {
		t.Fatalf("tasks %v", m)
	}
	// A schedule fires in the background: only a published workflow can.
	p.expect("POST", "/v1/schedules", `{"workflowId":"`+id+`","inputs":{"file":"notes.txt"},"intervalSeconds":3600}`, 400)
	p.expect("POST", "/v1/workflows/"+id+"/publish", "", 200)
	sc := p.expect("POST", "/v1/schedules", `{"workflowId":"`+id+`","inputs":{"file":"notes.txt"},"intervalSeconds":3600}`, 201)
	if sc["active"] != true {
		t.Fatalf("schedule %v", sc)
	}
	p.expect("POST", "/v1/schedules", `{"workflowId":"`+id+`","intervalSeconds":5}`, 400)
	if m := p.expect("GET", "/api/agent/schedules", "", 200); m["count"] != float64(1) {
		t.Fatalf("schedules %v", m)
	}
	tools := toJSON(t, p.expect("GET", "/v1/tools", "", 200))
	for _, name := range []string{"task_submit_workflow", "task_wait", "task_schedule"} {
		if !strings.Contains(tools, name) {
			t.Errorf("GET /v1/tools lacks %s", name)
		}
	}
	p.stop()
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
