package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/weft-run/weft/run"
	"github.com/weft-run/weft/tool/workflow"
)

// workflowJSON is a saved workflow as the API shows it, without its
// canvas, which workflowBytes splices in byte for byte (encoding/json
// would re-encode it).
type workflowJSON struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	Plan        json.RawMessage `json:"plan"`
	Published   bool            `json:"published"`
	// ToolName is the tool the workflow is while published.
	ToolName  string    `json:"toolName,omitempty"`
	Revision  int       `json:"revision"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// workflowBytes renders a workflow with its canvas exactly as it was
// saved: whitespace, key order and all.
func workflowBytes(wf run.Workflow) []byte {
	j := workflowJSON{ID: wf.ID, Name: wf.Name, Description: wf.Description, InputSchema: wf.InputSchema,
		Plan: wf.Plan, Published: wf.Published, Revision: wf.Revision, CreatedAt: wf.CreatedAt.UTC(), UpdatedAt: wf.UpdatedAt.UTC()}
	if len(j.Plan) == 0 {
		j.Plan = json.RawMessage("null")
	}
	if wf.Published {
		j.ToolName = workflow.ToolName(wf.ID)
	}
	b, err := json.Marshal(j)
	if err != nil {
		// The stored JSON fields were valid when saved; a failure here is
		// a corrupt row, shown rather than hidden.
		b, _ = json.Marshal(map[string]string{"id": wf.ID, "error": "the stored workflow cannot be encoded"})
	}
	if c := wf.Canvas; len(c) > 0 && json.Valid(c) {
		b = append(b[:len(b)-1], `,"canvas":`...)
		b = append(b, c...)
		b = append(b, '}')
	}
	return b
}

// writeWorkflow answers with one workflow and its revision as the ETag.
func writeWorkflow(w http.ResponseWriter, status int, wf run.Workflow) {
	w.Header().Set("ETag", strconv.Quote(strconv.Itoa(wf.Revision)))
	writeRawJSON(w, status, workflowBytes(wf))
}

func writeRawJSON(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// decodeWorkflow decodes a workflow's body. Its plan is kept as sent for
// the runtime to validate, but a field the runner does not know is refused
// here like any other unknown field: a misspelt "dependsOn" would run a
// step without waiting for the one it names.
func decodeWorkflow(w http.ResponseWriter, r *http.Request) (run.WorkflowInput, bool) {
	var q run.WorkflowInput
	if !decodeBody(w, r, &q) {
		return q, false
	}
	for name, raw := range map[string]json.RawMessage{"plan": q.Plan, "workflow": q.Workflow} {
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
			var p run.Plan
			if err := decodeJSON(bytes.NewReader(t), &p); err != nil && strings.HasPrefix(err.Error(), "unknown field ") {
				writeError(w, http.StatusBadRequest, errInvalidRequest, name+": "+err.Error())
				return q, false
			}
		}
	}
	return q, true
}

func (s *Server) handleCreateWorkflow(w http.ResponseWriter, r *http.Request) {
	q, ok := decodeWorkflow(w, r)
	if !ok {
		return
	}
	wf, err := s.cfg.Runs.CreateWorkflow(r.Context(), q)
	if err != nil {
		s.writeRunError(w, r, err, "workflow")
		return
	}
	w.Header().Set("Location", strings.TrimSuffix(r.URL.Path, "/")+"/"+wf.ID)
	writeWorkflow(w, http.StatusCreated, wf)
}

// handleListWorkflows lists saved workflows by name; ?published=true keeps
// the published ones.
func (s *Server) handleListWorkflows(w http.ResponseWriter, r *http.Request) {
	published := false
	if v := r.URL.Query().Get("published"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, errInvalidRequest, "published must be true or false")
			return
		}
		published = b
	}
	wfs, err := s.cfg.Runs.ListWorkflows(r.Context(), published)
	if err != nil {
		s.writeRunError(w, r, err, "workflow")
		return
	}
	var b bytes.Buffer
	b.WriteString(`{"workflows":[`)
	for i, wf := range wfs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(workflowBytes(wf))
	}
	b.WriteString(`],"count":`)
	b.WriteString(strconv.Itoa(len(wfs)))
	b.WriteByte('}')
	writeRawJSON(w, http.StatusOK, b.Bytes())
}

func (s *Server) handleGetWorkflow(w http.ResponseWriter, r *http.Request) {
	wf, err := s.cfg.Runs.GetWorkflow(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeRunError(w, r, err, "workflow")
		return
	}
	writeWorkflow(w, http.StatusOK, wf)
}

// ifMatch reads an If-Match revision: "3", W/"3" or 3; "*" or none is 0
// (any revision).
func ifMatch(w http.ResponseWriter, r *http.Request) (int, bool) {
	v := strings.TrimSpace(r.Header.Get("If-Match"))
	if v == "" || v == "*" {
		return 0, true
	}
	v = strings.Trim(strings.TrimPrefix(v, "W/"), `"`)
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		writeError(w, http.StatusBadRequest, errInvalidRequest, "If-Match must be a workflow revision (the ETag it was read with)")
		return 0, false
	}
	return n, true
}

// handleUpdateWorkflow changes a workflow (PUT and PATCH alike: fields
// left out keep their value). A revision in If-Match or the body that is
// not the stored one is a 409.
func (s *Server) handleUpdateWorkflow(w http.ResponseWriter, r *http.Request) {
	rev, ok := ifMatch(w, r)
	if !ok {
		return
	}
	q, ok := decodeWorkflow(w, r)
	if !ok {
		return
	}
	wf, err := s.cfg.Runs.UpdateWorkflow(r.Context(), r.PathValue("id"), q, rev)
	if err != nil {
		s.writeRunError(w, r, err, "workflow")
		return
	}
	writeWorkflow(w, http.StatusOK, wf)
}

func (s *Server) handleDeleteWorkflow(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Runs.DeleteWorkflow(r.Context(), r.PathValue("id")); err != nil {
		s.writeRunError(w, r, err, "workflow")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "deleted"})
}

// handleCopyWorkflow duplicates a workflow as an unpublished one, named
// {"name"} or "<name> (copy)".
func (s *Server) handleCopyWorkflow(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Name string `json:"name"`
	}
	if !decodeBody(w, r, &q) {
		return
	}
	wf, err := s.cfg.Runs.CopyWorkflow(r.Context(), r.PathValue("id"), q.Name)
	if err != nil {
		s.writeRunError(w, r, err, "workflow")
		return
	}
	w.Header().Set("Location", strings.TrimSuffix(r.URL.Path, "/"+r.PathValue("id")+"/copy")+"/"+wf.ID)
	writeWorkflow(w, http.StatusCreated, wf)
}

// handlePublishWorkflow: POST .../publish publishes ({"published": false}
// unpublishes); DELETE .../publish and POST .../unpublish unpublish.
func (s *Server) handlePublishWorkflow(w http.ResponseWriter, r *http.Request) {
	rev, ok := ifMatch(w, r)
	if !ok {
		return
	}
	var q struct {
		Published *bool `json:"published"`
		Revision  int   `json:"revision"`
	}
	if !decodeBody(w, r, &q) {
		return
	}
	publish := r.Method == http.MethodPost && !strings.HasSuffix(r.URL.Path, "/unpublish")
	if publish && q.Published != nil {
		publish = *q.Published
	}
	if rev == 0 {
		rev = q.Revision
	}
	wf, err := s.cfg.Runs.PublishWorkflow(r.Context(), r.PathValue("id"), publish, rev)
	if err != nil {
		s.writeRunError(w, r, err, "workflow")
		return
	}
	writeWorkflow(w, http.StatusOK, wf)
}

// handleRunWorkflow runs a saved workflow with {inputs, files?, config?}.
func (s *Server) handleRunWorkflow(w http.ResponseWriter, r *http.Request) {
	var q run.WorkflowRunRequest
	if !decodeBody(w, r, &q) {
		return
	}
	run, err := s.cfg.Runs.RunWorkflow(r.Context(), r.PathValue("id"), q)
	if err != nil {
		s.writeRunError(w, r, err, "workflow")
		return
	}
	writeJSON(w, http.StatusOK, runIDJSON{RunID: run.ID, Status: run.Status})
}
