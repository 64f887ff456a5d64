package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/weft-run/weft/run"
	"github.com/weft-run/weft/session"
)

// Background tasks and schedules (seed 001), under /v1 and seed 001's
// /api/agent paths. Without Config.Background they answer 503.

func (s *Server) registerTaskRoutes(mux *http.ServeMux) {
	h := func(pattern string, f http.HandlerFunc) { mux.HandleFunc(pattern, s.needBackground(f)) }
	for _, prefix := range []string{"/v1", "/api/agent"} {
		h("GET "+prefix+"/tasks", s.handleListTasks)
		h("GET "+prefix+"/tasks/{id}", s.handleGetTask)
		h("POST "+prefix+"/tasks/{id}/kill", s.handleKillTask)
		h("POST "+prefix+"/schedules", s.handleCreateSchedule)
		h("GET "+prefix+"/schedules", s.handleListSchedules)
		h("GET "+prefix+"/schedules/{id}", s.handleGetSchedule)
		h("DELETE "+prefix+"/schedules/{id}", s.handleDeleteSchedule)
		h("PATCH "+prefix+"/schedules/{id}", s.handlePatchSchedule) // schedpause.go
	}
}

func (s *Server) needBackground(f http.HandlerFunc) http.HandlerFunc {
	return s.enabled(s.cfg.Background != nil, "background tasks and schedules are not enabled on this server", f)
}

func (s *Server) handleListTasks(w http.ResponseWriter, r *http.Request) {
	ts := s.cfg.Background.Tasks.List()
	if ts == nil {
		ts = []run.Task{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": ts, "count": len(ts)})
}

func (s *Server) handleGetTask(w http.ResponseWriter, r *http.Request) {
	t, err := s.cfg.Background.Tasks.Get(r.PathValue("id"))
	if err != nil {
		s.writeTaskError(w, r, err, "task")
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// handleKillTask cancels a task cooperatively, escalating to SIGTERM and
// SIGKILL for process tasks; it answers once the task has stopped (or
// with its state after killWait).
func (s *Server) handleKillTask(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.cfg.Background.Tasks.Kill(id); err != nil {
		s.writeTaskError(w, r, err, "task")
		return
	}
	// Kill returns at once; wait for the task to end (the escalation to
	// SIGKILL is bounded), so the answer says how it ended.
	t, err := s.cfg.Background.Tasks.Output(r.Context(), id, killWait)
	if err != nil {
		s.writeTaskError(w, r, err, "task")
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// killWait bounds how long POST .../kill waits for the task to end: the
// task registry's default escalation (cancel, SIGTERM, SIGKILL) fits.
const killWait = 20 * time.Second

func (s *Server) handleCreateSchedule(w http.ResponseWriter, r *http.Request) {
	var q run.ScheduleRequest
	if !decodeBody(w, r, &q) {
		return
	}
	sc, err := s.cfg.Background.Schedules.Create(r.Context(), q)
	if err != nil {
		s.writeTaskError(w, r, err, "schedule")
		return
	}
	writeJSON(w, http.StatusCreated, sc)
}

func (s *Server) handleListSchedules(w http.ResponseWriter, r *http.Request) {
	active := r.URL.Query().Get("active") == "true"
	list, err := s.cfg.Background.Schedules.List(r.Context(), active)
	if err != nil {
		s.writeTaskError(w, r, err, "schedule")
		return
	}
	if list == nil {
		list = []run.Schedule{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedules": list, "count": len(list)})
}

func (s *Server) handleGetSchedule(w http.ResponseWriter, r *http.Request) {
	sc, err := s.cfg.Background.Schedules.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeTaskError(w, r, err, "schedule")
		return
	}
	writeJSON(w, http.StatusOK, sc)
}

func (s *Server) handleDeleteSchedule(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Background.Schedules.Delete(r.Context(), r.PathValue("id")); err != nil {
		s.writeTaskError(w, r, err, "schedule")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "deleted"})
}

func (s *Server) writeTaskError(w http.ResponseWriter, r *http.Request, err error, what string) {
	switch {
	case errors.Is(err, run.ErrUnknownTask), errors.Is(err, session.ErrNotFound):
		writeError(w, http.StatusNotFound, errNotFound, what+" "+quote(r.PathValue("id"))+" not found")
	case errors.Is(err, run.ErrInvalidSchedule):
		writeError(w, http.StatusBadRequest, errInvalidRequest, err.Error())
	case errors.Is(err, run.ErrTooManyActive):
		writeError(w, http.StatusConflict, errConflict, err.Error())
	default:
		// Submitting a workflow: its inputs and existence are the run
		// manager's errors.
		s.writeRunError(w, r, err, what)
	}
}
