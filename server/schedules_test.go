package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestScheduleForAWorkflowThatCannotRun: POST /v1/schedules refuses, with
// 400 and the reason, a schedule whose workflow is unknown, unpublished or
// refuses the inputs, instead of accepting it and failing at every firing.
func TestScheduleForAWorkflowThatCannotRun(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	wf := a.doJSON("POST", "/v1/workflows", `{"name":"echo","inputSchema":{"type":"object","properties":{"word":{"type":"string"}},"required":["word"]},
		"plan":{"steps":[{"id":"e","tool":"echo","args":{"text":"{{inputs.word}}"}}]}}`, http.StatusCreated)
	id := wf["id"].(string)
	publish := func() { a.doJSON("POST", "/v1/workflows/"+id+"/publish", nil, http.StatusOK) }
	tests := []struct {
		name, body, want string
		missing          string
		before           func()
	}{
		{name: "unknown workflow", body: `{"workflowId":"wf_000000000000","inputs":{"word":"x"},"intervalSeconds":60}`, want: `workflow "wf_000000000000" not found`},
		{name: "unpublished workflow", body: `{"workflowId":"` + id + `","inputs":{"word":"x"},"intervalSeconds":60}`, want: "is not published"},
		{name: "missing input", body: `{"workflowId":"` + id + `","intervalSeconds":60}`, want: `missing required input "word"`, missing: "word", before: publish},
	}
	for _, tc := range tests {
		if tc.before != nil {
			tc.before()
		}
		e := decodeErrProblems(t, a.do("POST", "/v1/schedules", tc.body), http.StatusBadRequest)
		if e.Type != errInvalidRequest || !strings.Contains(e.Message, tc.want) || strings.Join(e.Missing, ",") != tc.missing {
			t.Fatalf("%s: error %+v, want %s naming %q", tc.name, e, errInvalidRequest, tc.want)
		}
	}
	if m := a.doJSON("GET", "/v1/schedules", nil, http.StatusOK); m["count"] != float64(0) {
		t.Fatalf("refused schedules were kept: %v", m)
	}
	sc := a.doJSON("POST", "/v1/schedules", `{"workflowId":"`+id+`","inputs":{"word":"x"},"intervalSeconds":60}`, http.StatusCreated)
	if _, ok := sc["lastError"]; ok {
		t.Fatalf("a new schedule shows an error: %v", sc)
	}

	// A firing that failed since shows on the schedule.
	stored, err := a.db.GetSchedule(context.Background(), sc["id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	stored.LastError, stored.LastErrorAt = `workflow "`+id+`" is not published: publish it to run it in the background`, time.Now()
	if err := a.db.UpdateSchedule(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	list := a.doJSON("GET", "/v1/schedules", nil, http.StatusOK)["schedules"].([]any)
	if got := list[0].(map[string]any); !strings.Contains(got["lastError"].(string), "is not published") || got["lastErrorAt"] == nil {
		t.Fatalf("GET /v1/schedules shows %v", got)
	}
}
