package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/weft-run/weft/checkpoint"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/session"
)

// This file is the workspace checkpoints' API (Config.Checkpoints):
//
//	GET  /v1/sessions/{id}/checkpoints                 the session's, newest first
//	GET  /v1/sessions/{id}/checkpoints/{cid}/diff      what a restore would do
//	POST /v1/sessions/{id}/checkpoints/{cid}/restore   {"force": bool, "conversation": bool}
//
// A session sees only its own checkpoints: the session id picks the chain
// in the store, and an id of another session's checkpoint is a 404.

func (s *Server) registerCheckpointRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/sessions/{id}/checkpoints", s.handleListCheckpoints)
	mux.HandleFunc("GET /v1/sessions/{id}/checkpoints/{cid}/diff", s.handleCheckpointDiff)
	mux.HandleFunc("POST /v1/sessions/{id}/checkpoints/{cid}/restore", s.handleCheckpointRestore)
}

// checkpoints returns the workspace's checkpoints for a request on a
// session that exists, or answers it (503 when checkpoints are off).
func (s *Server) checkpoints(w http.ResponseWriter, r *http.Request) (*checkpoint.Workspace, bool) {
	if s.cfg.Checkpoints == nil {
		writeError(w, http.StatusServiceUnavailable, errInternal, "workspace checkpoints are off on this server (weft serve --no-checkpoints, or no git)")
		return nil, false
	}
	if _, err := s.rt.GetSession(r.Context(), r.PathValue("id")); err != nil {
		s.writeRuntimeError(w, r, err)
		return nil, false
	}
	return s.cfg.Checkpoints, true
}

func (s *Server) writeCheckpointError(w http.ResponseWriter, r *http.Request, err error) {
	var conflict *checkpoint.ConflictError
	switch {
	case errors.As(err, &conflict):
		writeJSON(w, http.StatusConflict, struct {
			Error     errorDetail `json:"error"`
			Conflicts []string    `json:"conflicts"`
		}{errorDetail{Type: errConflict, Message: conflict.Error()}, conflict.Files})
	case errors.Is(err, checkpoint.ErrNotFound):
		writeError(w, http.StatusNotFound, errNotFound, "checkpoint "+quote(r.PathValue("cid"))+" not found in session "+quote(r.PathValue("id")))
	default:
		s.writeRuntimeError(w, r, err)
	}
}

func (s *Server) handleListCheckpoints(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.checkpoints(w, r)
	if !ok {
		return
	}
	list, err := ws.List(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeCheckpointError(w, r, err)
		return
	}
	if list == nil {
		list = []checkpoint.Checkpoint{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": list})
}

func (s *Server) handleCheckpointDiff(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.checkpoints(w, r)
	if !ok {
		return
	}
	d, err := ws.Diff(r.Context(), r.PathValue("id"), r.PathValue("cid"))
	if err != nil {
		s.writeCheckpointError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// restoreRequest is the body of a restore (optional: none restores only
// the files, refusing conflicts).
type restoreRequest struct {
	// Force overwrites files changed since the agent last touched them.
	Force bool `json:"force"`
	// Conversation also rewinds the session's conversation to before the
	// turn whose tool call the checkpoint came before.
	Conversation bool `json:"conversation"`
}

// restoreResponse is a restore's answer: the files, and the rewind when
// one was asked for.
type restoreResponse struct {
	checkpoint.Restored
	Rewind *session.RewindData `json:"rewind,omitempty"`
}

// handleCheckpointRestore restores a checkpoint of the session. With
// conversation, the conversation is rewound first (refused with 409 while
// a turn runs, before any file is touched), to before the prompt of the
// turn that made the call the checkpoint came before: the model forgets
// the turn whose changes are taken back. Conflicts are checked before the
// rewind, so a refused restore leaves the conversation as it was.
func (s *Server) handleCheckpointRestore(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.checkpoints(w, r)
	if !ok {
		return
	}
	var q restoreRequest
	if r.ContentLength != 0 && !decodeBody(w, r, &q) {
		return
	}
	id, cid := r.PathValue("id"), r.PathValue("cid")
	var rewind *session.RewindData
	if q.Conversation {
		d, err := ws.Diff(r.Context(), id, cid)
		if err != nil {
			s.writeCheckpointError(w, r, err)
			return
		}
		var conflicts []string
		for _, f := range d.Files {
			if f.Conflict {
				conflicts = append(conflicts, f.Path)
			}
		}
		if len(conflicts) > 0 && !q.Force {
			s.writeCheckpointError(w, r, &checkpoint.ConflictError{ID: d.Checkpoint.ID, Files: conflicts})
			return
		}
		keep, found, err := s.turnStart(r.Context(), id, d.Checkpoint.ToolCallID)
		if err != nil {
			s.writeRuntimeError(w, r, err)
			return
		}
		if !found {
			writeError(w, http.StatusConflict, errConflict, "the conversation no longer has the tool call of checkpoint "+quote(cid)+" (rewound already?); restore the files without \"conversation\"")
			return
		}
		rd, err := s.rt.Rewind(r.Context(), id, session.RewindTo{Messages: &keep})
		var invalid *record.InvalidError
		switch {
		case errors.Is(err, session.ErrBusy):
			writeError(w, http.StatusConflict, errConflict, "the session has a turn running or messages queued; cancel it or wait for its done, then restore")
			return
		case errors.As(err, &invalid):
			writeError(w, http.StatusBadRequest, errInvalidRequest, invalid.Error())
			return
		case err != nil:
			s.writeRuntimeError(w, r, err)
			return
		}
		rewind = &rd
	}
	res, err := ws.Restore(r.Context(), id, cid, checkpoint.RestoreOptions{Force: q.Force})
	if err != nil && res.Undo == nil {
		s.writeCheckpointError(w, r, err)
		return
	}
	if err != nil {
		// Partly done: the files it changed are in res, and res.Undo
		// takes them back; what failed is in the log.
		s.log.Error("checkpoint restore incomplete", "session", id, "checkpoint", cid, "error", err)
		writeJSON(w, http.StatusInternalServerError, struct {
			restoreResponse
			Error errorDetail `json:"error"`
		}{restoreResponse{res, rewind}, errorDetail{Type: errInternal, Message: "the restore was incomplete: " + err.Error()}})
		return
	}
	writeJSON(w, http.StatusOK, restoreResponse{res, rewind})
}

// turnStart finds the message count that rewinds the session's
// conversation to before the turn of tool call callID: the index of the
// user prompt (a user message that is not only tool results) before the
// assistant message holding the call.
func (s *Server) turnStart(ctx context.Context, sessionID, callID string) (int, bool, error) {
	if callID == "" {
		return 0, false, nil
	}
	msgs, err := s.rt.Messages(ctx, sessionID)
	if err != nil {
		return 0, false, err
	}
	at := -1
	for i, m := range msgs {
		if m.Role != llm.RoleAssistant {
			continue
		}
		for _, b := range m.Content {
			if b.Type == llm.BlockToolUse && b.ToolUseID == callID {
				at = i
			}
		}
	}
	if at < 0 {
		return 0, false, nil
	}
	for i := at - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser && !onlyToolResults(msgs[i]) {
			return i, true, nil
		}
	}
	return 0, true, nil
}

func onlyToolResults(m llm.Message) bool {
	if len(m.Content) == 0 {
		return false
	}
	for _, b := range m.Content {
		if b.Type != llm.BlockToolResult {
			return false
		}
	}
	return true
}
