package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// canvasBytes is a UI graph with the spacing and key order a canvas
// library might produce: it must come back exactly so.
const canvasBytes = `{"nodes": [ {"id":"n1",  "position": {"y": 2, "x": 1}, "data": {"label":"Echo \u00e9"}} ],
  "edges":[],"viewport":{"zoom":1.5,"x":0,"y":0}}`

// TestWorkflowsCRUD: create, read, list, update with revision checks,
// copy, publish/unpublish (the tool appears and goes at once) and delete;
// the canvas is kept byte for byte throughout.
func TestWorkflowsCRUD(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	create := fmt.Sprintf(`{"name":"Echo it","description":"echoes {{inputs.text}}",
		"inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},
		"plan":{"steps":[{"id":"e","tool":"echo","args":{"text":"{{inputs.text}}"}}]},
		"canvas":%s}`, canvasBytes)
	resp := a.do("POST", "/v1/workflows", create)
	status, raw := resp.StatusCode, readAllBody(t, resp)
	if status != http.StatusCreated || resp.Header.Get("ETag") != `"1"` || !strings.HasPrefix(resp.Header.Get("Location"), "/v1/workflows/wf_") {
		t.Fatalf("create: %d %v %s", status, resp.Header, raw)
	}
	var wf map[string]any
	if err := json.Unmarshal(raw, &wf); err != nil {
		t.Fatal(err)
	}
	id := wf["id"].(string)
	if wf["revision"] != float64(1) || wf["published"] != false || wf["toolName"] != nil {
		t.Fatalf("created %s", raw)
	}
	for _, path := range []string{"/v1/workflows/" + id, "/api/workflows/" + id, "/v1/workflows"} {
		if st, body := a.raw("GET", path, nil); st != http.StatusOK || !bytes.Contains(body, []byte(`"canvas":`+canvasBytes)) {
			t.Fatalf("GET %s: %d; canvas not kept byte for byte: %s", path, st, body)
		}
	}

	decodeErr(t, a.do("PUT", "/v1/workflows/"+id, `{"name":"x"}`, "If-Match", `"5"`), http.StatusConflict, errConflict)
	decodeErr(t, a.do("PATCH", "/v1/workflows/"+id, `{"name":"x","revision":7}`), http.StatusConflict, errConflict)
	decodeErr(t, a.do("PUT", "/v1/workflows/"+id, `{"name":"x"}`, "If-Match", `nope`), http.StatusBadRequest, errInvalidRequest)
	up := a.doJSON("PATCH", "/v1/workflows/"+id, `{"name":"Echo it twice","revision":1}`, http.StatusOK)
	if up["revision"] != float64(2) || up["name"] != "Echo it twice" || up["description"] != "echoes {{inputs.text}}" {
		t.Fatalf("updated %v", up)
	}
	if _, body := a.raw("GET", "/v1/workflows/"+id, nil); !bytes.Contains(body, []byte(`"canvas":`+canvasBytes)) {
		t.Fatalf("an update that left the canvas out changed it: %s", body)
	}
	up = a.doJSON("PUT", "/v1/workflows/"+id, `{"canvas":{"nodes":[]}}`, http.StatusOK, "If-Match", `W/"2"`)
	if up["revision"] != float64(3) || fmt.Sprint(up["canvas"]) != "map[nodes:[]]" {
		t.Fatalf("canvas update %v", up)
	}

	cp := a.doJSON("POST", "/api/workflows/"+id+"/copy", nil, http.StatusCreated)
	cid := cp["id"].(string)
	if cid == id || cp["name"] != "Echo it twice (copy)" || cp["revision"] != float64(1) || cp["published"] != false {
		t.Fatalf("copy %v", cp)
	}
	named := a.doJSON("POST", "/v1/workflows/"+id+"/copy", map[string]string{"name": "Mine"}, http.StatusCreated)
	if named["name"] != "Mine" {
		t.Fatalf("named copy %v", named)
	}

	tool := "run_workflow_" + id
	pub := a.doJSON("POST", "/v1/workflows/"+id+"/publish", nil, http.StatusOK)
	if pub["published"] != true || pub["toolName"] != tool {
		t.Fatalf("published %v", pub)
	}
	registered, ok := a.reg.Get(tool)
	if !ok || !strings.Contains(string(registered.Spec().InputSchema), `"required":["text"]`) {
		t.Fatalf("%s not registered with the workflow's input schema (%v)", tool, ok)
	}
	if m := a.doJSON("GET", "/v1/workflows?published=true", nil, http.StatusOK); m["count"] != float64(1) {
		t.Fatalf("published list %v", m)
	}
	a.doJSON("DELETE", "/v1/workflows/"+id+"/publish", nil, http.StatusOK)
	if _, ok := a.reg.Get(tool); ok {
		t.Fatal("the tool outlived unpublishing")
	}
	a.doJSON("PATCH", "/v1/workflows/"+id, `{"published":true}`, http.StatusOK)
	if _, ok := a.reg.Get(tool); !ok {
		t.Fatal("publishing through an update did not register the tool")
	}
	a.doJSON("DELETE", "/v1/workflows/"+id, nil, http.StatusOK)
	if _, ok := a.reg.Get(tool); ok {
		t.Fatal("the tool outlived its workflow")
	}
	decodeErr(t, a.do("GET", "/v1/workflows/"+id, nil), http.StatusNotFound, errNotFound)
	decodeErr(t, a.do("DELETE", "/v1/workflows/"+id, nil), http.StatusNotFound, errNotFound)
	if m := a.doJSON("GET", "/api/workflows", nil, http.StatusOK); m["count"] != float64(2) {
		t.Fatalf("list after delete %v", m)
	}
}

func readAllBody(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestWorkflowSaveChecks: saving refuses undeclared {{inputs.x}}, more
// than 64 steps, unknown and workflow tools, bad schemas and canvases.
func TestWorkflowSaveChecks(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	steps := make([]string, 65)
	for i := range steps {
		steps[i] = `{"tool":"echo","args":{"text":"x"}}`
	}
	tests := []struct {
		name, body, msg string
	}{
		{"undeclared input", `{"name":"w","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}},
			"plan":{"steps":[{"id":"s","tool":"echo","args":{"text":"{{inputs.a}} {{inputs.b}}"}}]}}`, `step 0 ("s"): args /text: {{inputs.b}}: input "b" is not declared`},
		{"no schema", `{"name":"w","plan":{"steps":[{"tool":"echo","args":{"text":"{{inputs.a}}"}}]}}`, `input "a" is not declared`},
		{"65 steps", `{"name":"w","plan":{"steps":[` + strings.Join(steps, ",") + `]}}`, "more than the limit of 64"},
		{"workflow tool", `{"name":"w","plan":{"steps":[{"tool":"run_workflow_wf_x"}]}}`, "unknown tool"},
		{"no name", `{"plan":{"steps":[{"tool":"echo","args":{"text":"x"}}]}}`, "name is required"},
		{"no plan", `{"name":"w"}`, "plan is required"},
		{"schema not object", `{"name":"w","inputSchema":{"type":"string"},"plan":{"steps":[{"tool":"echo","args":{"text":"x"}}]}}`, `type "object"`},
		{"required undeclared", `{"name":"w","inputSchema":{"type":"object","required":["q"]},"plan":{"steps":[{"tool":"echo","args":{"text":"x"}}]}}`, `requires "q"`},
	}
	for _, tc := range tests {
		resp := a.do("POST", "/v1/workflows", tc.body)
		e := decodeErrProblems(t, resp, http.StatusBadRequest)
		if !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s: %q does not say %q", tc.name, e.Message, tc.msg)
		}
	}
	if m := a.doJSON("GET", "/v1/workflows", nil, http.StatusOK); m["count"] != float64(0) {
		t.Fatalf("refused workflows were stored: %v", m)
	}
}

// TestWorkflowRunInputs: POST .../run checks required inputs and basic
// types, listing every problem in one 400; omitted optional inputs get
// their default, and one without a default cannot be spliced into text
// (400 naming it).
func TestWorkflowRunInputs(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	wf := a.doJSON("POST", "/api/workflows", `{"name":"join","inputSchema":{"type":"object","properties":{
		"a":{"type":"string"},"b":{"type":"integer"},"c":{"type":"integer","default":5},"d":{"type":"string"}},"required":["a","b"]},
		"plan":{"steps":[{"tool":"echo","args":{"text":"{{inputs.a}}-{{inputs.b}}-{{inputs.c}}-{{inputs.d}}"}}]}}`, http.StatusCreated)
	id := wf["id"].(string)
	e := decodeErrProblems(t, a.do("POST", "/v1/workflows/"+id+"/run", `{"inputs":{}}`), http.StatusBadRequest)
	if !slices.Equal(e.Missing, []string{"a", "b"}) || !strings.Contains(e.Message, `"a"`) || !strings.Contains(e.Message, `"b"`) {
		t.Fatalf("missing inputs: %+v", e)
	}
	e = decodeErrProblems(t, a.do("POST", "/v1/workflows/"+id+"/run", `{"inputs":{"a":1,"b":"two","c":1.5}}`), http.StatusBadRequest)
	if len(e.InputProblems) != 3 || !strings.Contains(e.Message, `input "b" must be integer, not string`) {
		t.Fatalf("wrong types: %+v", e)
	}
	decodeErr(t, a.do("POST", "/v1/workflows/wf_nope/run", `{}`), http.StatusNotFound, errNotFound)
	e = decodeErrProblems(t, a.do("POST", "/api/workflows/"+id+"/run", `{"inputs":{"a":"x","b":2}}`), http.StatusBadRequest)
	if len(e.InputProblems) != 1 || !strings.Contains(e.Message, `input "d" was not given`) {
		t.Fatalf("an omitted optional input used in text: %+v", e)
	}
	m := a.doJSON("POST", "/api/workflows/"+id+"/run", `{"inputs":{"a":"x","b":2,"d":"y"}}`, http.StatusOK)
	run := a.wait(m["runId"].(string))
	if run.Status != "completed" || run.WorkflowID != id || run.Goal != "Run workflow join" {
		t.Fatalf("run %+v", run)
	}
	if d := a.doJSON("GET", "/v1/runs/"+run.ID, nil, http.StatusOK); d["result"] != "x-2-5-y" {
		t.Fatalf("result %v", d["result"])
	}
}
