package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/policy/permission"
)

// createFlow stores an unpublished workflow whose one step notes
// prefix + inputs.text, and returns its id.
func createFlow(ra *runsAPI, prefix string) string {
	ra.t.Helper()
	wf := ra.doJSON("POST", "/v1/workflows", map[string]any{"name": "Noter", "description": "notes the text",
		"inputSchema": rawJSON(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		"plan":        rawJSON(fmt.Sprintf(`{"steps":[{"id":"n","tool":"note","args":{"text":"%s{{inputs.text}}"}}]}`, prefix))}, http.StatusCreated)
	return wf["id"].(string)
}

// TestCreateFlowSession: POST /v1/sessions with workflow_tool binds the
// session to a workflow (shown on GET); what is not a binding to an
// existing workflow is refused.
func TestCreateFlowSession(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	id := createFlow(a, "")
	created := a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "dock", "workflow_tool": map[string]string{"workflow_id": id}}, http.StatusCreated)
	want := map[string]any{"workflow_id": id, "tool_name": "run_current_flow"}
	if created["session_id"] != "dock" || fmt.Sprint(created["workflow_tool"]) != fmt.Sprint(want) {
		t.Fatalf("created %v", created)
	}
	if got := a.doJSON("GET", "/v1/sessions/dock", nil, http.StatusOK); fmt.Sprint(got["workflow_tool"]) != fmt.Sprint(want) {
		t.Fatalf("GET %v", got)
	}
	if got := a.doJSON("POST", "/v1/sessions", nil, http.StatusCreated); got["workflow_tool"] != nil {
		t.Fatalf("a plain session is bound: %v", got)
	}
	tests := []struct {
		name   string
		body   string
		status int
		typ    string
	}{
		{"no workflow_id", `{"workflow_tool":{}}`, 400, errInvalidRequest},
		{"not a workflow id", `{"workflow_tool":{"workflow_id":"../etc"}}`, 400, errInvalidRequest},
		{"workflow id not a string", `{"workflow_tool":{"workflow_id":5}}`, 400, errInvalidRequest},
		{"other tool name", `{"workflow_tool":{"workflow_id":"` + id + `","tool_name":"Bash"}}`, 400, errInvalidRequest},
		{"unknown field", `{"workflow_tool":{"workflow_id":"` + id + `","revision":1}}`, 400, errInvalidRequest},
		{"unknown top-level field", `{"workflow":{"workflow_id":"` + id + `"}}`, 400, errInvalidRequest},
		{"no such workflow", `{"workflow_tool":{"workflow_id":"wf_000000000000"}}`, 404, errNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			decodeErr(t, a.do("POST", "/v1/sessions", tc.body), tc.status, tc.typ)
		})
	}
	// None of the refused requests left a session behind.
	if got := a.doJSON("GET", "/v1/sessions", nil, http.StatusOK)["sessions"].([]any); len(got) != 2 {
		t.Fatalf("sessions: %v", got)
	}

	off := newRunsAPI(t, runsOptions{noRuns: true})
	decodeErr(t, off.do("POST", "/v1/sessions", `{"workflow_tool":{"workflow_id":"wf_000000000000"}}`), http.StatusServiceUnavailable, errInternal)
}

// TestRunCurrentFlow: a scripted model in a bound session calls
// run_current_flow; the call asks like any tool call, then runs the
// stored revision (draft: never published) as a recorded run with
// workflowId set, whose own write step runs without asking again (the
// caller approved the call). An update between two calls is what the
// second runs; a deleted workflow is an error result, not a failed turn.
func TestRunCurrentFlow(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{mode: permission.ModeDefault})
	id := createFlow(a, "")
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "dock", "workflow_tool": map[string]string{"workflow_id": id}}, http.StatusCreated)

	call := func(callID, text string, ask bool) sseEvent {
		t.Helper()
		a.provider.Push(
			llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock(callID, "run_current_flow", `{"text":"`+text+`"}`)}},
			llmtest.Text("Done."),
		)
		c := a.openSSE("POST", "/v1/sessions/dock/messages", map[string]any{"prompt": "run it with " + text})
		var evs []sseEvent
		if ask {
			evs = c.readUntil("permission_request")
			pr := evs[len(evs)-1]
			if pr.field("tool_name") != "run_current_flow" {
				t.Fatalf("permission_request %s", pr.Data)
			}
			a.doJSON("POST", "/v1/sessions/dock/permissions/"+pr.field("id").(string), map[string]any{"allow": true}, http.StatusOK)
		}
		evs = append(evs, c.readUntilDone()...)
		for _, ev := range evs {
			if ev.Event == "tool_result" {
				return ev
			}
		}
		t.Fatalf("no tool_result in %s", eventTypes(evs))
		return sseEvent{}
	}
	type output struct {
		RunID  string          `json:"runId"`
		Status string          `json:"status"`
		Result json.RawMessage `json:"result"`
	}
	check := func(res sseEvent, revision float64, wantNote string) {
		t.Helper()
		var out output
		if res.field("is_error") != false || json.Unmarshal([]byte(res.field("output").(string)), &out) != nil || out.Status != "completed" {
			t.Fatalf("tool_result %s", res.Data)
		}
		data, _ := res.field("data").(map[string]any)
		if data["runId"] != out.RunID || data["workflowId"] != id || data["revision"] != revision {
			t.Fatalf("tool_result data %v (output %+v)", data, out)
		}
		if r := a.doJSON("GET", "/v1/runs/"+out.RunID, nil, http.StatusOK); r["workflowId"] != id {
			t.Fatalf("run %v", r)
		}
		if got := a.tools.notes(); len(got) == 0 || got[len(got)-1] != wantNote {
			t.Fatalf("notes %v, want the last to be %q", got, wantNote)
		}
	}

	check(call("c1", "one", true), 1, "one")
	// The model was offered the flow's input schema and name.
	reqs := a.provider.Requests()
	i := slices.IndexFunc(reqs[0].Tools, func(s llm.ToolSpec) bool { return s.Name == "run_current_flow" })
	if i < 0 || !strings.Contains(reqs[0].Tools[i].Description, `"Noter"`) || !strings.Contains(string(reqs[0].Tools[i].InputSchema), `"required":["text"]`) {
		t.Fatalf("tools offered: %+v", reqs[0].Tools)
	}

	a.doJSON("PATCH", "/v1/workflows/"+id, map[string]any{"revision": 1,
		"plan": rawJSON(`{"steps":[{"id":"n","tool":"note","args":{"text":"v2 {{inputs.text}}"}}]}`)}, http.StatusOK)
	a.doJSON("PUT", "/v1/sessions/dock/permissions", map[string]any{"allow": []string{"run_current_flow"}}, http.StatusOK)
	check(call("c2", "two", false), 2, "v2 two")

	a.doJSON("DELETE", "/v1/workflows/"+id, nil, http.StatusOK)
	res := call("c3", "three", false)
	if res.field("is_error") != true || !strings.Contains(res.field("output").(string), "no longer exists") {
		t.Fatalf("call of a deleted workflow: %s", res.Data)
	}
	if got := a.tools.notes(); len(got) != 2 {
		t.Fatalf("notes %v", got)
	}
	// run_current_flow is no tool of the server's: a plan cannot name it.
	decodeErr(t, a.do("POST", "/v1/runs", `{"goal":"g","workflow":{"steps":[{"tool":"run_current_flow"}]}}`), http.StatusBadRequest, errInvalidRequest)
}

// TestRenameSession: PATCH /v1/sessions/{id} sets and clears the title
// (listed and shown), keeps the session's permissions, and refuses what
// is not a title.
func TestRenameSession(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "s1"}, http.StatusCreated)
	a.doJSON("PUT", "/v1/sessions/s1/permissions", map[string]any{"allow": []string{"Read"}}, http.StatusOK)
	got := a.doJSON("PATCH", "/v1/sessions/s1", map[string]any{"title": "  Fix the build ✓ "}, http.StatusOK)
	if got["title"] != "Fix the build ✓" || got["session_id"] != "s1" {
		t.Fatalf("renamed %v", got)
	}
	list := a.doJSON("GET", "/v1/sessions", nil, http.StatusOK)["sessions"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["title"] != "Fix the build ✓" {
		t.Fatalf("list %v", list)
	}
	if p := a.doJSON("GET", "/v1/sessions/s1/permissions", nil, http.StatusOK); !strings.Contains(fmt.Sprint(p), "Read") {
		t.Fatalf("the rename lost the session's permissions: %v", p)
	}
	// A permissions change keeps the title too.
	a.doJSON("PUT", "/v1/sessions/s1/permissions", map[string]any{"allow": []string{"Grep"}}, http.StatusOK)
	if g := a.doJSON("GET", "/v1/sessions/s1", nil, http.StatusOK); g["title"] != "Fix the build ✓" {
		t.Fatalf("after a permissions change: %v", g)
	}
	if g := a.doJSON("PATCH", "/v1/sessions/s1", `{"title":""}`, http.StatusOK); g["title"] != "" {
		t.Fatalf("cleared %v", g)
	}
	tests := []struct {
		name   string
		path   string
		body   string
		status int
		typ    string
	}{
		{"no title", "/v1/sessions/s1", `{}`, 400, errInvalidRequest},
		{"title not a string", "/v1/sessions/s1", `{"title":5}`, 400, errInvalidRequest},
		{"newline", "/v1/sessions/s1", `{"title":"a\nb"}`, 400, errInvalidRequest},
		{"escape", "/v1/sessions/s1", `{"title":"a\u001b[31m"}`, 400, errInvalidRequest},
		{"too long", "/v1/sessions/s1", `{"title":"` + strings.Repeat("é", 201) + `"}`, 400, errInvalidRequest},
		{"unknown field", "/v1/sessions/s1", `{"title":"x","metadata":{}}`, 400, errInvalidRequest},
		{"unknown session", "/v1/sessions/nope", `{"title":"x"}`, 404, errNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			decodeErr(t, a.do("PATCH", tc.path, tc.body), tc.status, tc.typ)
		})
	}
	if g := a.doJSON("GET", "/v1/sessions/s1", nil, http.StatusOK); g["title"] != "" {
		t.Fatalf("a refused rename changed the title: %v", g)
	}
}

// TestRenameRacesPermissions: a rename and a permissions change of the
// same session at the same time both stick (each rewrites the session's
// header: without serializing them one would write back what it read
// before the other's change).
func TestRenameRacesPermissions(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	for i := range 20 {
		id := fmt.Sprint("race", i)
		a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": id}, http.StatusCreated)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			resp := a.do("PATCH", "/v1/sessions/"+id, map[string]any{"title": "T"})
			resp.Body.Close()
		}()
		go func() {
			defer wg.Done()
			resp := a.do("PUT", "/v1/sessions/"+id+"/permissions", map[string]any{"allow": []string{"Read"}})
			resp.Body.Close()
		}()
		wg.Wait()
		if g := a.doJSON("GET", "/v1/sessions/"+id, nil, http.StatusOK); g["title"] != "T" {
			t.Fatalf("round %d: the title was lost: %v", i, g)
		}
		// The stored header, which the next start reads.
		if s, err := a.db.GetSession(context.Background(), id); err != nil || !strings.Contains(string(s.Metadata), "Read") {
			t.Fatalf("round %d: the permissions were lost: %s, %v", i, s.Metadata, err)
		}
	}
}
