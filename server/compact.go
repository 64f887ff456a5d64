package server

import (
	"errors"
	"net/http"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/session"
)

// The context window's routes (issue 14), registered apart so that they
// move with the runtime's restructuring as one piece.
func (s *Server) registerCompactRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/sessions/{id}/compact", s.handleCompact)
	mux.HandleFunc("GET /v1/sessions/{id}/messages", s.handleConversation)
}

// handleCompact summarises a session's conversation now: POST
// /v1/sessions/{id}/compact with an optional {"instructions": "..."} for
// the summary. 200 {"compactions": [...], "messages": N}, each compaction
// also a compaction event in the session's log; 409 while a turn runs or
// messages wait.
func (s *Server) handleCompact(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Instructions string `json:"instructions"`
	}
	if r.ContentLength != 0 && !decodeBody(w, r, &q) {
		return
	}
	d, err := s.rt.Compact(r.Context(), r.PathValue("id"), q.Instructions)
	var invalid *record.InvalidError
	switch {
	case errors.As(err, &invalid):
		writeError(w, http.StatusBadRequest, errInvalidRequest, invalid.Error())
		return
	case errors.Is(err, session.ErrBusy):
		writeError(w, http.StatusConflict, errConflict, "the session has a turn running or messages queued; cancel it or wait for its done, then compact")
		return
	case err != nil:
		s.writeRuntimeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// handleConversation returns a session's conversation: GET
// /v1/sessions/{id}/messages is what the model is sent (every compaction
// applied); ?all=true is the whole history, the messages compactions
// replaced included, with a marker message (role "compaction") where each
// one happened. Rewinding by "messages" counts the whole history.
func (s *Server) handleConversation(w http.ResponseWriter, r *http.Request) {
	all := r.URL.Query().Get("all") == "true"
	msgs, err := s.rt.ConversationView(r.Context(), r.PathValue("id"), all)
	if err != nil {
		s.writeRuntimeError(w, r, err)
		return
	}
	if msgs == nil {
		msgs = []llm.Message{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": msgs})
}
