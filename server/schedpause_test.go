package server

import (
	"net/http"
	"testing"
)

// TestPauseSchedule: PATCH /v1/schedules/{id} pauses and resumes (shown
// by GET and by ?active=true); resuming a spent one-shot and bodies that
// do not say active are refused; an unknown id is 404.
func TestPauseSchedule(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	wf := a.doJSON("POST", "/v1/workflows", `{"name":"echo","plan":{"steps":[{"id":"e","tool":"echo","args":{"text":"x"}}]}}`, http.StatusCreated)
	id := wf["id"].(string)
	a.doJSON("POST", "/v1/workflows/"+id+"/publish", nil, http.StatusOK)
	sid := a.doJSON("POST", "/v1/schedules", `{"workflowId":"`+id+`","intervalSeconds":3600}`, http.StatusCreated)["id"].(string)

	for _, step := range []struct {
		path   string
		active bool
		listed float64
	}{
		{"/v1/schedules/", false, 0},
		{"/api/agent/schedules/", false, 0},
		{"/v1/schedules/", true, 1},
	} {
		if got := a.doJSON("PATCH", step.path+sid, map[string]any{"active": step.active}, http.StatusOK); got["active"] != step.active || got["id"] != sid {
			t.Fatalf("PATCH active=%v: %v", step.active, got)
		}
		if got := a.doJSON("GET", "/v1/schedules/"+sid, nil, http.StatusOK); got["active"] != step.active {
			t.Fatalf("GET after active=%v: %v", step.active, got)
		}
		if m := a.doJSON("GET", "/v1/schedules?active=true", nil, http.StatusOK); m["count"] != step.listed {
			t.Fatalf("active schedules after active=%v: %v", step.active, m)
		}
	}
	once := a.doJSON("POST", "/v1/schedules", `{"workflowId":"`+id+`","intervalSeconds":60,"recurring":false,"runImmediately":true}`, http.StatusCreated)
	tests := []struct {
		name   string
		id     string
		body   string
		status int
		typ    string
	}{
		{"no active", sid, `{}`, 400, errInvalidRequest},
		{"active not a bool", sid, `{"active":"no"}`, 400, errInvalidRequest},
		{"unknown field", sid, `{"active":true,"intervalSeconds":1}`, 400, errInvalidRequest},
		{"unknown schedule", "sched_000000000000", `{"active":false}`, 404, errNotFound},
	}
	if once["active"] != false {
		t.Fatalf("a one-shot that ran at creation is still active: %v", once)
	}
	tests = append(tests, tests[0])
	tests[len(tests)-1].name, tests[len(tests)-1].id, tests[len(tests)-1].body = "spent one-shot", once["id"].(string), `{"active":true}`
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			decodeErr(t, a.do("PATCH", "/v1/schedules/"+tc.id, tc.body), tc.status, tc.typ)
		})
	}
	off := newRunsAPI(t, runsOptions{noRuns: true})
	decodeErr(t, off.do("PATCH", "/v1/schedules/"+sid, `{"active":false}`), http.StatusServiceUnavailable, errInternal)
}
