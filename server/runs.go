package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/weft-run/weft/eventlog"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/run"
	"github.com/weft-run/weft/session"
)

// Plan-and-execute runs (seed 001's AI agent) and saved workflows, under
// /v1 and under seed 001's own paths, which share the handlers so that a
// client written for that API works unchanged. Without Config.Runs every
// one of these routes answers 503 with the error JSON.

// registerRunRoutes adds the run and workflow routes to mux.
func (s *Server) registerRunRoutes(mux *http.ServeMux) {
	h := func(pattern string, f http.HandlerFunc) { mux.HandleFunc(pattern, s.needRuns(f)) }
	for _, p := range []struct{ run, runs, agent string }{
		// run: one run's actions; runs: history; agent: the rest.
		{"/v1/runs/{id}", "/v1/runs", "/v1/runs"},
		{"/api/agent/{id}", "/api/agent/runs", "/api/agent"},
	} {
		h("POST "+p.run+"/approve", s.handleApproveRun)
		h("POST "+p.run+"/cancel", s.handleCancelRun)
		h("GET "+p.runs, s.handleListRuns)
		h("GET "+p.runs+"/{id}", s.handleGetRun)
		h("POST "+p.runs+"/{id}/resume", s.handleResumeRun)
		h("POST "+p.runs+"/{id}/fork", s.handleForkRun)
		h("POST "+p.runs+"/{id}/rewind", s.handleRewindRun)
		h("POST "+p.runs+"/{id}/permissions/{request_id}", s.handleRunPermission)
		h("POST "+p.agent+"/batch", s.handleBatch)
	}
	h("POST /v1/runs", s.handleCreateRun)
	h("POST /api/agent/run", s.handleCreateRun)
	h("GET /v1/runs/{id}/events", s.handleRunEvents)
	h("GET /api/agent/stream", s.handleRunEvents)
	h("GET /v1/agent/tools", s.handleAgentTools)
	h("GET /api/agent/tools", s.handleAgentTools)
	for _, prefix := range []string{"/v1/workflows", "/api/workflows"} {
		h("POST "+prefix, s.handleCreateWorkflow)
		h("GET "+prefix, s.handleListWorkflows)
		h("GET "+prefix+"/{id}", s.handleGetWorkflow)
		h("PUT "+prefix+"/{id}", s.handleUpdateWorkflow)
		h("PATCH "+prefix+"/{id}", s.handleUpdateWorkflow)
		h("DELETE "+prefix+"/{id}", s.handleDeleteWorkflow)
		h("POST "+prefix+"/{id}/copy", s.handleCopyWorkflow)
		h("POST "+prefix+"/{id}/publish", s.handlePublishWorkflow)
		h("DELETE "+prefix+"/{id}/publish", s.handlePublishWorkflow)
		h("POST "+prefix+"/{id}/unpublish", s.handlePublishWorkflow)
		h("POST "+prefix+"/{id}/run", s.handleRunWorkflow)
	}
}

// needRuns answers 503 when the server has no run manager.
func (s *Server) needRuns(f http.HandlerFunc) http.HandlerFunc {
	return s.enabled(s.cfg.Runs != nil, "plan-and-execute runs and workflows are not enabled on this server", f)
}

// enabled answers 503 with msg for every request when on is false: routes
// of an optional part of the server stay known (no 404) but say why they
// cannot serve.
func (s *Server) enabled(on bool, msg string, f http.HandlerFunc) http.HandlerFunc {
	if on {
		return f
	}
	return func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusServiceUnavailable, errInternal, msg)
	}
}

// runErrorDetail is the error JSON with what a client needs to fix a
// refused plan or inputs in one go.
type runErrorDetail struct {
	Type     string            `json:"type"`
	Message  string            `json:"message"`
	Problems []run.PlanProblem `json:"problems,omitempty"`
	Inputs   []string          `json:"inputProblems,omitempty"`
	Missing  []string          `json:"missing,omitempty"`
}

// writeRunError maps the run manager's errors onto statuses; what names
// the addressed thing ("run", "workflow") for not-found messages.
func (s *Server) writeRunError(w http.ResponseWriter, r *http.Request, err error, what string) {
	var (
		ve  *run.ValidationError
		ie  *run.InputsError
		inv *record.InvalidError
		pe  *run.PostureError
		ce  *run.ConflictError
	)
	detail := runErrorDetail{Message: err.Error()}
	status := 0
	switch {
	case errors.As(err, &ve):
		status, detail.Type, detail.Problems = http.StatusBadRequest, errInvalidRequest, ve.Problems
		detail.Message = "the plan is invalid:\n" + err.Error()
	case errors.As(err, &ie):
		status, detail.Type, detail.Inputs, detail.Missing = http.StatusBadRequest, errInvalidRequest, ie.Problems, ie.Missing
	case errors.As(err, &inv):
		status, detail.Type = http.StatusBadRequest, errInvalidRequest
	case errors.As(err, &pe), errors.Is(err, session.ErrForbidden):
		status, detail.Type = http.StatusForbidden, errPermission
	case errors.As(err, &ce), errors.Is(err, run.ErrNoGate), errors.Is(err, session.ErrAnswered), errors.Is(err, run.ErrConflict):
		status, detail.Type = http.StatusConflict, errConflict
	case errors.Is(err, session.ErrNotFound):
		status, detail.Type = http.StatusNotFound, errNotFound
		detail.Message = what + " " + quote(r.PathValue("id")) + " not found"
		if what == "permission request" {
			detail.Message = "permission request " + quote(r.PathValue("request_id")) + " not found (unknown, expired or its run ended)"
		}
	default:
		s.writeRuntimeError(w, r, err)
		return
	}
	writeJSON(w, status, struct {
		Error runErrorDetail `json:"error"`
	}{detail})
}

// runIDJSON is what the run-starting endpoints answer (seed 001: runId).
type runIDJSON struct {
	RunID  string `json:"runId"`
	Status string `json:"status"`
}

func (s *Server) handleCreateRun(w http.ResponseWriter, r *http.Request) {
	var q run.RunRequest
	if !decodeBody(w, r, &q) {
		return
	}
	run, err := s.cfg.Runs.CreateRun(r.Context(), q)
	if err != nil {
		s.writeRunError(w, r, err, "run")
		return
	}
	writeJSON(w, http.StatusOK, runIDJSON{RunID: run.ID, Status: run.Status})
}

func (s *Server) handleBatch(w http.ResponseWriter, r *http.Request) {
	var q run.BatchRequest
	if !decodeBody(w, r, &q) {
		return
	}
	batchID, ids, err := s.cfg.Runs.Batch(r.Context(), q)
	if err != nil {
		s.writeRunError(w, r, err, "run")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"batchId": batchID, "runIds": ids})
}

// handleListRuns pages through runs, newest first: ?q= (goal, summary and
// error), ?status=, ?limit= (1 to 500, default 50), ?cursor=.
func (s *Server) handleListRuns(w http.ResponseWriter, r *http.Request) {
	qv := r.URL.Query()
	q := run.RunQuery{Q: qv.Get("q"), Status: qv.Get("status"), Cursor: qv.Get("cursor")}
	if v := qv.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			writeError(w, http.StatusBadRequest, errInvalidRequest, "limit must be an integer from 1 to 500")
			return
		}
		q.Limit = n
	}
	page, err := s.cfg.Runs.ListRuns(r.Context(), q)
	if err != nil {
		if errors.Is(err, session.ErrInvalidCursor) {
			writeError(w, http.StatusBadRequest, errInvalidRequest, "cursor is not one this server handed out")
			return
		}
		s.writeRunError(w, r, err, "run")
		return
	}
	runs := page.Runs
	if runs == nil {
		runs = []run.Run{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": runs, "nextCursor": page.NextCursor, "hasMore": page.NextCursor != ""})
}

func (s *Server) handleGetRun(w http.ResponseWriter, r *http.Request) {
	d, err := s.cfg.Runs.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeRunError(w, r, err, "run")
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// handleRunEvents streams a run's events (GET /v1/runs/{id}/events, or
// seed 001's GET /api/agent/stream?runId=) from the Last-Event-ID header
// or ?after= (0 or none replays everything), following live. The stream
// ends after the event that ends the run (complete, error, cancelled,
// interrupted), unless the run went on after it (resumed or rewound).
func (s *Server) handleRunEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" {
		if id = r.URL.Query().Get("runId"); id == "" {
			writeError(w, http.StatusBadRequest, errInvalidRequest, "runId is required")
			return
		}
	}
	after, err := parsePosition(r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after"))
	if err != nil {
		writeError(w, http.StatusBadRequest, errInvalidRequest, err.Error())
		return
	}
	last, err := s.cfg.Runs.LastSeq(r.Context(), id)
	if err != nil {
		if errors.Is(err, session.ErrNotFound) {
			writeError(w, http.StatusNotFound, errNotFound, "run "+quote(id)+" not found")
			return
		}
		s.writeRuntimeError(w, r, err)
		return
	}
	if after > last {
		writeError(w, http.StatusBadRequest, errInvalidRequest,
			fmt.Sprintf("position %d is past the run's last event (%d)", after, last))
		return
	}
	rd := s.cfg.Runs.Subscribe(id, after)
	defer rd.Close()
	st := s.startSSE(w, r)
	defer st.close()
	for {
		ev, err := s.nextRunEvent(st, id, rd)
		if err != nil {
			if st.ctx.Err() == nil && st.client.Err() == nil && !errors.Is(err, eventlog.ErrClosed) && !errors.Is(err, eventlog.ErrSessionClosed) {
				s.log.Error("reading run events failed", "run", id, "position", rd.Position(), "error", err)
			}
			return
		}
		if st.event(ev) != nil {
			return
		}
		if run.TerminalRunEvent(ev.Type) {
			if last, err := s.cfg.Runs.LastSeq(st.client, id); err != nil || last <= ev.Seq {
				return
			}
		}
	}
}

// nextRunEvent is next (sse.go) for run streams: once the server closes, a
// stream first delivers the events that exist (the interrupted events of
// the runs the shutdown stopped), then ends.
func (s *Server) nextRunEvent(st *sseStream, runID string, rd *eventlog.Reader) (session.Event, error) {
	ev, err := rd.Next(st.ctx)
	if err == nil || st.client.Err() != nil || s.closing.Err() == nil {
		return ev, err
	}
	if st.drainTo < 0 {
		st.drainTo = 0
		if last, lerr := s.cfg.Runs.LastSeq(st.client, runID); lerr == nil {
			st.drainTo = last
		}
	}
	if rd.Position() >= st.drainTo {
		return ev, err
	}
	ctx, cancel := context.WithTimeout(st.client, closeDrainTimeout)
	defer cancel()
	return rd.Next(ctx)
}

// handleApproveRun opens the run's approval gate: no body approves what
// waits as it is; a body with "steps" is an edited plan, validated, then
// adopted (plan gate only); {"stepId": "..."} approves one waiting step.
func (s *Server) handleApproveRun(w http.ResponseWriter, r *http.Request) {
	raw, ok := readBody(w, r)
	if !ok {
		return
	}
	var a run.Approval
	if t := bytes.TrimSpace(raw); len(t) > 0 && string(t) != "null" {
		// One strict decode: the plan is the body itself ({"steps": ...}),
		// so a misspelt step field ("dependOn") is refused rather than
		// silently run without its dependency.
		var q struct {
			run.Plan
			StepID string `json:"stepId"`
		}
		if err := decodeJSON(bytes.NewReader(t), &q); err != nil {
			msg := err.Error()
			if bytes.Contains(t, []byte(`"steps"`)) {
				msg = "the edited plan: " + msg
			}
			writeError(w, http.StatusBadRequest, errInvalidRequest, msg)
			return
		}
		a.StepID = q.StepID
		if q.Steps != nil {
			p := q.Plan
			a.Plan = &p
		}
	}
	id := r.PathValue("id")
	if err := s.cfg.Runs.Approve(r.Context(), id, a); err != nil {
		s.writeRunError(w, r, err, "run")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"runId": id, "status": "approved"})
}

// readBody reads a whole (bounded) JSON request body.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if !requireJSON(w, r) {
		return nil, false
	}
	if r.ContentLength > MaxBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, errInvalidRequest, tooLargeMessage)
		return nil, false
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		writeBodyError(w, err)
		return nil, false
	}
	return raw, true
}

// handleCancelRun cancels a run cooperatively: it stops at its next safe
// point, ends with a cancelled event, and never sends complete.
func (s *Server) handleCancelRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.cfg.Runs.LastSeq(r.Context(), id); err != nil {
		s.writeRunError(w, r, err, "run")
		return
	}
	status := "not_running"
	if s.cfg.Runs.CancelRun(id) {
		status = "cancelled"
	}
	writeJSON(w, http.StatusOK, map[string]string{"runId": id, "status": status})
}

// handleRunPermission answers a run's permission_request, checkpoint or
// budget_request (a "budget_..." id: {"allow": true, "max_budget_usd":
// ..., "max_tokens_total": ...} goes on with new limits; see budget.go).
func (s *Server) handleRunPermission(w http.ResponseWriter, r *http.Request) {
	a, ok := decodeApprovalAnswer(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if _, err := s.cfg.Runs.LastSeq(r.Context(), id); err != nil {
		s.writeRunError(w, r, err, "run")
		return
	}
	var err error
	if a.budget != nil {
		err = s.cfg.Runs.AnswerBudget(id, a.requestID, *a.budget)
	} else {
		err = s.cfg.Runs.AnswerPermission(id, a.requestID, a.allow, a.reason)
	}
	if err != nil {
		s.writeRunError(w, r, err, "permission request")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleResumeRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.cfg.Runs.ResumeRun(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeRunError(w, r, err, "run")
		return
	}
	writeJSON(w, http.StatusOK, runIDJSON{RunID: run.ID, Status: run.Status})
}

func (s *Server) handleForkRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.cfg.Runs.ForkRun(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeRunError(w, r, err, "run")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"runId": run.ID, "status": run.Status, "parentId": run.ParentID})
}

func (s *Server) handleRewindRun(w http.ResponseWriter, r *http.Request) {
	var q struct {
		KeepSteps *int `json:"keepSteps"`
	}
	if !decodeBody(w, r, &q) {
		return
	}
	if q.KeepSteps == nil {
		writeError(w, http.StatusBadRequest, errInvalidRequest, "keepSteps is required: how many of the plan's first steps keep their results")
		return
	}
	run, err := s.cfg.Runs.RewindRun(r.Context(), r.PathValue("id"), *q.KeepSteps)
	if err != nil {
		s.writeRunError(w, r, err, "run")
		return
	}
	writeJSON(w, http.StatusOK, runIDJSON{RunID: run.ID, Status: run.Status})
}

// agentToolJSON is seed 001's tool shape.
type agentToolJSON struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// handleAgentTools lists the tools plan steps can call (seed 001: a bare
// array).
func (s *Server) handleAgentTools(w http.ResponseWriter, r *http.Request) {
	specs := s.cfg.Runs.Tools()
	out := make([]agentToolJSON, 0, len(specs))
	for _, sp := range specs {
		schema := sp.InputSchema
		if len(schema) == 0 || !json.Valid(schema) {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out = append(out, agentToolJSON{Name: sp.Name, Description: sp.Description, InputSchema: schema})
	}
	writeJSON(w, http.StatusOK, out)
}
