package server

import (
	"errors"
	"net/http"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/tool/workflow"
)

// workflowToolJSON is a session's binding to a workflow, which its turns
// run as run_current_flow (the Flows builder's chat dock).
type workflowToolJSON struct {
	WorkflowID string `json:"workflow_id"`
	// ToolName is set in answers: the name the model calls.
	ToolName string `json:"tool_name,omitempty"`
}

func workflowToolOf(s session.Session) *workflowToolJSON {
	id := session.WorkflowToolOf(s)
	if id == "" {
		return nil
	}
	return &workflowToolJSON{WorkflowID: id, ToolName: workflow.CurrentName}
}

// validWorkflowID accepts what run.NewWorkflowID makes ("wf_" and hex),
// with room to grow, and nothing a path or a log line would mind.
func validWorkflowID(id string) bool {
	if len(id) < 4 || len(id) > 64 || id[:3] != "wf_" {
		return false
	}
	for i := 3; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// checkWorkflowTool checks a session's workflow_tool at creation and
// returns its workflow id, or writes the error and returns "".
func (s *Server) checkWorkflowTool(w http.ResponseWriter, r *http.Request, q workflowToolJSON) string {
	if q.ToolName != "" && q.ToolName != workflow.CurrentName {
		writeError(w, http.StatusBadRequest, errInvalidRequest, "workflow_tool.tool_name can only be "+workflow.CurrentName)
		return ""
	}
	if !validWorkflowID(q.WorkflowID) {
		writeError(w, http.StatusBadRequest, errInvalidRequest, "workflow_tool.workflow_id must be a workflow id (wf_...)")
		return ""
	}
	if s.cfg.Runs == nil {
		writeError(w, http.StatusServiceUnavailable, errInternal, "plan-and-execute runs and workflows are not enabled on this server")
		return ""
	}
	if _, err := s.cfg.Runs.GetWorkflow(r.Context(), q.WorkflowID); err != nil {
		if errors.Is(err, record.ErrNotFound) {
			writeError(w, http.StatusNotFound, errNotFound, "workflow "+quote(q.WorkflowID)+" not found")
			return ""
		}
		s.writeRuntimeError(w, r, err)
		return ""
	}
	return q.WorkflowID
}

// handlePatchSession changes what a client may change of a session: its
// title ({"title": "..."}; "" clears it). It answers the session.
func (s *Server) handlePatchSession(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Title *string `json:"title"`
	}
	if !decodeBody(w, r, &q) {
		return
	}
	if q.Title == nil {
		writeError(w, http.StatusBadRequest, errInvalidRequest, "title is required (\"\" clears it)")
		return
	}
	sess, err := s.rt.SetTitle(r.Context(), r.PathValue("id"), *q.Title)
	if err != nil {
		var inv *record.InvalidError
		if errors.As(err, &inv) {
			writeError(w, http.StatusBadRequest, errInvalidRequest, inv.Error())
			return
		}
		s.writeRuntimeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toSessionJSON(sess))
}

// handleListHooks lists the configured hooks (settings and plugins) with
// what each runs, secrets redacted (session.HookInfo).
func (s *Server) handleListHooks(w http.ResponseWriter, r *http.Request) {
	hs := s.rt.Hooks()
	if hs == nil {
		hs = []session.HookInfo{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"hooks": hs, "count": len(hs)})
}
