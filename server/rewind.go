package server

import (
	"errors"
	"net/http"

	"github.com/weft-run/weft/runtime"
)

// handleRewind cuts a session's conversation back:
// POST /v1/sessions/{id}/rewind with {"to_seq": N} (undo every turn that
// started after event N) or {"messages": N} (keep the first N messages).
// The event log stays append-only: a session_rewound event records the cut
// and seqs go on. 409 while a turn runs or messages wait; 400 for a
// position that does not exist or a cut that would end the conversation
// with a user message.
func (s *Server) handleRewind(w http.ResponseWriter, r *http.Request) {
	var q runtime.RewindTo
	if !decodeBody(w, r, &q) {
		return
	}
	d, err := s.rt.Rewind(r.Context(), r.PathValue("id"), q)
	var invalid *runtime.InvalidError
	switch {
	case errors.As(err, &invalid):
		writeError(w, http.StatusBadRequest, errInvalidRequest, invalid.Error())
		return
	case errors.Is(err, runtime.ErrBusy):
		writeError(w, http.StatusConflict, errConflict, "the session has a turn running or messages queued; cancel it or wait for its done, then rewind")
		return
	case err != nil:
		s.writeRuntimeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		runtime.RewindData
		Seq int64 `json:"seq"`
	}{d, d.Seq})
}
