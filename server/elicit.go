package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/tool/mcp"
)

// handleElicitation answers an MCP server's request for input, announced
// by an elicitation_request event: {"action": "accept"|"decline"|"cancel",
// "content": {...}} (content only with accept, fitting the requested
// schema). 404 for an unknown (or expired) request, 409 for a second
// answer, 400 for a malformed one. The WebSocket does not answer them.
func (s *Server) handleElicitation(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	if !decodeBody(w, r, &q) {
		return
	}
	resp := mcp.ElicitResponse{Action: q.Action}
	if len(q.Content) > 0 && string(q.Content) != "null" {
		if err := json.Unmarshal(q.Content, &resp.Content); err != nil || resp.Content == nil {
			writeError(w, http.StatusBadRequest, errInvalidRequest, "content must be a JSON object")
			return
		}
	}
	id, eid := r.PathValue("id"), r.PathValue("eid")
	if _, err := s.rt.GetSession(r.Context(), id); err != nil {
		s.writeRuntimeError(w, r, err)
		return
	}
	err := s.rt.AnswerElicitation(id, eid, resp)
	var invalid *record.InvalidError
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	case errors.As(err, &invalid):
		writeError(w, http.StatusBadRequest, errInvalidRequest, invalid.Error())
	case errors.Is(err, session.ErrNotFound):
		writeError(w, http.StatusNotFound, errNotFound, "elicitation "+quote(eid)+" not found (unknown, expired or its turn ended)")
	case errors.Is(err, session.ErrAnswered):
		writeError(w, http.StatusConflict, errConflict, "elicitation "+quote(eid)+" was already answered")
	default:
		s.writeRuntimeError(w, r, err)
	}
}
