package server

import "net/http"

// handlePatchSchedule pauses or resumes a schedule: {"active": false}
// pauses it (it keeps its slot and expiry), {"active": true} resumes it,
// skipping the slots missed meanwhile. Resuming what is over (expired, a
// one-shot that ran) is 400; over the active limit 409.
func (s *Server) handlePatchSchedule(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Active *bool `json:"active"`
	}
	if !decodeBody(w, r, &q) {
		return
	}
	if q.Active == nil {
		writeError(w, http.StatusBadRequest, errInvalidRequest, "active is required (true or false)")
		return
	}
	sc, err := s.cfg.Background.Schedules.SetActive(r.Context(), r.PathValue("id"), *q.Active)
	if err != nil {
		s.writeTaskError(w, r, err, "schedule")
		return
	}
	writeJSON(w, http.StatusOK, sc)
}
