package server

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestTasksAndSchedules: a workflow submitted in the background shows in
// GET /v1/tasks, can be killed, and schedules are created, listed, read and
// deleted with the errors of seed 001's limits.
func TestTasksAndSchedules(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	wf := a.doJSON("POST", "/v1/workflows", `{"name":"hold","plan":{"steps":[{"id":"h","tool":"hold","args":{"text":"x"}}]}}`, http.StatusCreated)
	id := wf["id"].(string)
	a.doJSON("POST", "/v1/workflows/"+id+"/publish", nil, http.StatusOK)

	task, err := a.bg.Tasks.SubmitWorkflow(context.Background(), id, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/tasks", "/api/agent/tasks"} {
		if m := a.doJSON("GET", path, nil, http.StatusOK); m["count"] != float64(1) {
			t.Fatalf("GET %s = %v", path, m)
		}
	}
	if m := a.doJSON("GET", "/v1/tasks/"+task.ID, nil, http.StatusOK); m["status"] != "running" || m["workflowId"] != id {
		t.Fatalf("task %v", m)
	}
	decodeErr(t, a.do("GET", "/v1/tasks/nope", nil), http.StatusNotFound, errNotFound)
	decodeErr(t, a.do("POST", "/v1/tasks/nope/kill", nil), http.StatusNotFound, errNotFound)
	if m := a.doJSON("POST", "/v1/tasks/"+task.ID+"/kill", nil, http.StatusOK); m["status"] != "cancelled" {
		t.Fatalf("killed task %v", m)
	}

	decodeErr(t, a.do("POST", "/v1/schedules", `{"workflowId":"`+id+`","intervalSeconds":30}`), http.StatusBadRequest, errInvalidRequest)
	decodeErr(t, a.do("POST", "/v1/schedules", `{"workflowId":"`+id+`","intervalSeconds":"soon"}`), http.StatusBadRequest, errInvalidRequest)
	sc := a.doJSON("POST", "/api/agent/schedules", `{"workflowId":"`+id+`","intervalSeconds":120,"recurring":false}`, http.StatusCreated)
	sid := sc["id"].(string)
	if sc["recurring"] != false || sc["active"] != true || sc["intervalSeconds"] != float64(120) {
		t.Fatalf("schedule %v", sc)
	}
	exp, _ := time.Parse(time.RFC3339Nano, sc["expiresAt"].(string))
	if d := time.Until(exp); d < 6*24*time.Hour || d > 7*24*time.Hour+time.Minute {
		t.Fatalf("expires in %s, want 7 days", d)
	}
	if m := a.doJSON("GET", "/v1/schedules", nil, http.StatusOK); m["count"] != float64(1) {
		t.Fatalf("schedules %v", m)
	}
	a.doJSON("GET", "/v1/schedules/"+sid, nil, http.StatusOK)
	a.doJSON("DELETE", "/v1/schedules/"+sid, nil, http.StatusOK)
	decodeErr(t, a.do("GET", "/v1/schedules/"+sid, nil), http.StatusNotFound, errNotFound)
	decodeErr(t, a.do("DELETE", "/v1/schedules/"+sid, nil), http.StatusNotFound, errNotFound)
}

func TestBackgroundDisabled(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	decodeErr(t, a.do("GET", "/v1/tasks", nil), http.StatusServiceUnavailable, errInternal)
	decodeErr(t, a.do("POST", "/v1/schedules", `{}`), http.StatusServiceUnavailable, errInternal)
}
