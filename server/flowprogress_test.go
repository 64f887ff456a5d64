package server

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/tool/workflow"
)

// TestRunCurrentFlowProgress: run_current_flow reports its run's id as a
// tool_progress line as soon as the run exists, before the tool_result,
// so that a client (the builder's chat dock) can follow the run's steps
// while the call waits; the id is the result's, and the run's own event
// stream is there to follow.
func TestRunCurrentFlowProgress(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{mode: permission.ModeDefault})
	id := createFlow(a, "")
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "dock", "workflow_tool": map[string]string{"workflow_id": id}}, http.StatusCreated)
	a.doJSON("PUT", "/v1/sessions/dock/permissions", map[string]any{"allow": []string{"run_current_flow"}}, http.StatusOK)
	a.provider.Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("c1", "run_current_flow", `{"text":"one"}`)}},
		llmtest.Text("Done."),
	)
	evs := a.openSSE("POST", "/v1/sessions/dock/messages", map[string]any{"prompt": "run it"}).readUntilDone()
	var progressRun, resultRun string
	for _, ev := range evs {
		switch ev.Event {
		case "tool_progress":
			if ev.field("id") != "c1" || ev.field("tool_name") != "run_current_flow" {
				t.Fatalf("tool_progress %s", ev.Data)
			}
			if resultRun != "" {
				t.Fatalf("tool_progress after the tool_result: %s", eventTypes(evs))
			}
			var ok bool
			if progressRun, ok = workflow.ParseStarted(ev.field("detail").(string)); !ok {
				t.Fatalf("tool_progress detail %q: not a run start", ev.field("detail"))
			}
		case "tool_result":
			var out struct {
				RunID string `json:"runId"`
			}
			if err := json.Unmarshal([]byte(ev.field("output").(string)), &out); err != nil || out.RunID == "" {
				t.Fatalf("tool_result %s", ev.Data)
			}
			resultRun = out.RunID
		}
	}
	if progressRun == "" || progressRun != resultRun {
		t.Fatalf("progress named run %q, the result %q (events %s)", progressRun, resultRun, eventTypes(evs))
	}
	runEvs := a.openSSE("GET", "/v1/runs/"+progressRun+"/events", nil).readUntil("complete")
	if len(runEvs) == 0 {
		t.Fatal("no events in the run's stream")
	}
}

// TestParseStarted: only StartedProgress lines name a run.
func TestParseStarted(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		line, want string
		ok         bool
	}{
		{workflow.StartedProgress("run_0123abcd"), "run_0123abcd", true},
		{"workflow run  started", "", false},
		{"workflow run a b started", "", false},
		{"step 1 started", "", false},
		{"workflow run run_1 completed", "", false},
	} {
		got, ok := workflow.ParseStarted(c.line)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseStarted(%q) = %q, %v; want %q, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}
