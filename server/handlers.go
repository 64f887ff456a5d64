package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/session"
)

// healthTimeout bounds the store check of GET /v1/health.
const healthTimeout = 2 * time.Second

// healthTTL is how long a store check answers GET /v1/health: the endpoint
// needs no token, and the check waits for the store's write connection, so
// a flood of health checks must not become a flood of store calls.
const healthTTL = time.Second

// health checks the runtime at most once per healthTTL; concurrent
// callers share one check. The check does not depend on any caller's
// connection, whose end would otherwise be taken for the store's failure.
func (s *Server) health(ctx context.Context) error {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	if !s.healthAt.IsZero() && time.Since(s.healthAt) < healthTTL {
		return s.healthErr
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healthTimeout)
	defer cancel()
	s.healthErr = s.rt.Health(rctx)
	s.healthAt = time.Now()
	if s.healthErr != nil && !errors.Is(s.healthErr, session.ErrClosed) {
		s.log.Error("health check failed", "request_id", requestID(ctx), "error", s.healthErr)
	}
	return s.healthErr
}

// handleHealth answers 200 {"status":"ok"} when the runtime and its store
// answer, and 503 {"status":"unavailable", "error":{...}} when they do not
// (or the server is shutting down), so that a load balancer or an
// orchestrator stops sending work to it. What failed is logged, not shown.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	now := time.Now().UTC().Format(time.RFC3339)
	if err := s.health(r.Context()); err != nil {
		msg := "the store is unavailable"
		if errors.Is(err, session.ErrClosed) {
			msg = "the server is shutting down"
		}
		w.Header().Set("Retry-After", "5")
		body := map[string]any{
			"status": "unavailable", "timestamp": now, "version": s.cfg.Version,
			"error": errorDetail{Type: errInternal, Message: msg},
		}
		s.addNodeFields(body, false)
		writeJSON(w, http.StatusServiceUnavailable, body)
		return
	}
	body := map[string]any{
		"status":    "ok",
		"timestamp": now,
		"version":   s.cfg.Version,
	}
	s.addNodeFields(body, true)
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) handleTools(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if s.cfg.Tools == nil {
		_, _ = w.Write(renderTools(s.rt.ToolSpecs()))
		return
	}
	_, _ = w.Write(s.toolsBody)
}

// turnRequest is the body of POST /v1/agent/run and
// POST /v1/sessions/{id}/messages.
type turnRequest struct {
	Prompt        string   `json:"prompt"`
	Model         string   `json:"model"`
	SystemPrompt  string   `json:"system_prompt"`
	MaxTurns      int      `json:"max_turns"`
	StopSequences []string `json:"stop_sequences"`
	// Thinking is none, low, medium, high or xhigh (the WebSocket's chat
	// option, accepted here too).
	Thinking string `json:"thinking"`
	// Bundle picks the system prompt's bundle, "family/scenario"; the
	// X-Weft-Bundle header gives it when the body does not (bundle.go).
	Bundle string `json:"bundle"`
	// The turn's budget, in place of the server's default (budget.go).
	BudgetFields
}

// validate returns what is wrong with the request, "" when nothing.
func (q *turnRequest) validate() string {
	switch {
	case strings.TrimSpace(q.Prompt) == "":
		return "prompt is required"
	case len(q.Prompt) > MaxPromptChars && utf8.RuneCountInString(q.Prompt) > MaxPromptChars:
		return fmt.Sprintf("prompt is %d characters long; the maximum is 100,000", utf8.RuneCountInString(q.Prompt))
	case q.MaxTurns < 0:
		return "max_turns must be a positive integer"
	}
	for i, seq := range q.StopSequences {
		if seq == "" {
			return fmt.Sprintf("stop_sequences[%d] is empty", i)
		}
	}
	if _, ok := llm.ParseThinkingLevel(q.Thinking); !ok {
		return fmt.Sprintf("thinking %s: want none, low, medium, high or xhigh", quote(q.Thinking))
	}
	if err := q.BudgetFields.Validate(); err != nil {
		return err.Error()
	}
	return ""
}

func (q *turnRequest) options() session.TurnOptions {
	return session.TurnOptions{Model: q.Model, SystemPrompt: q.SystemPrompt, MaxTurns: q.MaxTurns,
		StopSequences: q.StopSequences, Thinking: q.Thinking, Bundle: q.Bundle,
		MaxBudgetUSD: q.MaxBudgetUSD, MaxTokensTotal: q.MaxTokensTotal}
}

func (s *Server) decodeTurn(w http.ResponseWriter, r *http.Request) (turnRequest, bool) {
	var q turnRequest
	if !decodeBody(w, r, &q) {
		return q, false
	}
	msg := q.validate()
	if msg == "" {
		msg = q.bundleFrom(r.Header)
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, errInvalidRequest, msg)
		return q, false
	}
	return q, true
}

// handleRun runs one prompt in a session created for it, streaming the
// turn. The session's id is in the X-Session-ID header and in the first
// frame (event "metadata", id 0: resuming after 0 replays the whole run),
// so that its permission requests can be answered and a dropped stream
// resumed like any session's.
func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	q, ok := s.decodeTurn(w, r)
	if !ok {
		return
	}
	sess, err := s.rt.CreateSession(r.Context(), "")
	if err != nil {
		s.writeRuntimeError(w, r, err)
		return
	}
	seq, err := s.rt.Send(r.Context(), sess.ID, q.Prompt, q.options())
	if err != nil {
		// Nothing ran in it: do not leave an empty session behind.
		_ = s.rt.DeleteSession(context.WithoutCancel(r.Context()), sess.ID)
		s.writeRuntimeError(w, r, err)
		return
	}
	w.Header().Set("X-Session-ID", sess.ID)
	s.streamTurn(w, r, sess.ID, seq, true)
}

// handleMessages sends a message to a session and streams its turn.
func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	q, ok := s.decodeTurn(w, r)
	if !ok {
		return
	}
	seq, err := s.rt.Send(r.Context(), id, q.Prompt, q.options())
	if err != nil {
		s.writeRuntimeError(w, r, err)
		return
	}
	w.Header().Set("X-Session-ID", id)
	s.streamTurn(w, r, id, seq, false)
}

// streamTurn streams the turn of the message whose user_message event is
// msgSeq: that event, then (skipping the rest of turns queued before it)
// its message_consumed and every event up to its done, or the
// message_dropped that says it will not run. The client going away ends
// only the stream: the turn runs on and is recorded.
func (s *Server) streamTurn(w http.ResponseWriter, r *http.Request, id string, msgSeq int64, meta bool) {
	rd := s.rt.Subscribe(id, msgSeq-1)
	defer rd.Close()
	st := s.startSSE(w, r)
	defer st.close()
	if meta {
		data, _ := json.Marshal(map[string]string{"session_id": id})
		if st.frame(msgSeq-1, "metadata", data) != nil {
			return
		}
	}
	started := false
	for {
		ev, err := s.next(st, id, rd)
		if err != nil {
			s.readFailed(st, id, rd, err)
			return
		}
		switch {
		case started:
		case ev.Seq == msgSeq:
			// The message itself.
		case ev.Type == event.MessageConsumed || ev.Type == event.MessageDropped:
			var m session.MessageData
			if json.Unmarshal(ev.Data, &m) != nil || m.MessageSeq != msgSeq {
				continue // another message's
			}
			if ev.Type == event.MessageDropped {
				_ = st.event(ev)
				return
			}
			started = true
		default:
			continue // a turn that was queued before this one
		}
		if st.event(ev) != nil {
			return
		}
		if started && ev.Type == event.Done {
			return
		}
	}
}

// handleEvents streams a session's events from a position, replaying what
// the client missed and then following live until the client goes away.
// The position is the Last-Event-ID header (what EventSource sends when it
// reconnects) or else ?after=; 0 or none replays everything.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	after, err := parsePosition(r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after"))
	if err != nil {
		writeError(w, http.StatusBadRequest, errInvalidRequest, err.Error())
		return
	}
	sess, err := s.rt.GetSession(r.Context(), id)
	if err != nil {
		s.writeRuntimeError(w, r, err)
		return
	}
	if after > sess.LastSeq {
		// Following from there would silently skip the events up to it.
		writeError(w, http.StatusBadRequest, errInvalidRequest,
			fmt.Sprintf("position %d is past the session's last event (%d)", after, sess.LastSeq))
		return
	}
	rd := s.rt.Subscribe(id, after)
	defer rd.Close()
	st := s.startSSE(w, r)
	defer st.close()
	for {
		ev, err := s.next(st, id, rd)
		if err != nil {
			s.readFailed(st, id, rd, err)
			return
		}
		if st.event(ev) != nil {
			return
		}
	}
}

// parsePosition reads a stream position: the Last-Event-ID header wins
// over the after parameter, because EventSource reconnects to the same URL
// (after= and all) and adds the header with where it actually got to.
func parsePosition(lastEventID, after string) (int64, error) {
	v, what := strings.TrimSpace(lastEventID), "Last-Event-ID"
	if v == "" {
		v, what = strings.TrimSpace(after), "after"
	}
	if v == "" {
		return 0, nil
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, fmt.Errorf("%s %s is not an event seq (a non-negative integer)", what, quote(v))
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %s is out of range", what, quote(v))
	}
	return n, nil
}

// sessionJSON is a session as the API shows it.
type sessionJSON struct {
	SessionID    string    `json:"session_id"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	MessageCount int       `json:"message_count"`
	// LastSeq is the seq of the session's last event: where a client that
	// has seen everything resumes from.
	LastSeq int64 `json:"last_seq"`
	// Title is the name users gave the session (PATCH), "" if none.
	Title string `json:"title"`
	// WorkflowTool is the workflow the session runs as run_current_flow.
	WorkflowTool *workflowToolJSON `json:"workflow_tool,omitempty"`
}

func toSessionJSON(s session.Session) sessionJSON {
	return sessionJSON{SessionID: s.ID, CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC(),
		MessageCount: s.MessageCount, LastSeq: s.LastSeq, Title: s.Title, WorkflowTool: workflowToolOf(s)}
}

// sessionIDRule is what validSessionID accepts, as an error message.
const sessionIDRule = "session_id must be 1 to 128 letters, digits, '-', '_', '.' or ':', starting with a letter or digit"

// validSessionID keeps client-chosen ids usable as one URL path segment
// and safe in logs. Every front door that creates sessions checks it.
func validSessionID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case (c == '-' || c == '_' || c == '.' || c == ':') && i > 0:
		default:
			return false
		}
	}
	return true
}

func (s *Server) handleCreateSession(w http.ResponseWriter, r *http.Request) {
	var q struct {
		SessionID    string            `json:"session_id"`
		WorkflowTool *workflowToolJSON `json:"workflow_tool"`
	}
	if !decodeBody(w, r, &q) {
		return
	}
	if q.SessionID != "" && !validSessionID(q.SessionID) {
		writeError(w, http.StatusBadRequest, errInvalidRequest, sessionIDRule)
		return
	}
	var opt session.CreateOptions
	if q.WorkflowTool != nil {
		if opt.WorkflowTool = s.checkWorkflowTool(w, r, *q.WorkflowTool); opt.WorkflowTool == "" {
			return
		}
	}
	sess, err := s.rt.CreateSessionWith(r.Context(), q.SessionID, opt)
	if err != nil {
		if errors.Is(err, session.ErrExists) {
			writeError(w, http.StatusConflict, errConflict, "session "+quote(q.SessionID)+" already exists")
			return
		}
		s.writeRuntimeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+sess.ID)
	writeJSON(w, http.StatusCreated, struct {
		SessionID    string            `json:"session_id"`
		CreatedAt    time.Time         `json:"created_at"`
		WorkflowTool *workflowToolJSON `json:"workflow_tool,omitempty"`
	}{sess.ID, sess.CreatedAt.UTC(), workflowToolOf(sess)})
}

// handleListSessions pages through sessions, newest first: ?limit= (1 to
// 500, default 50) and ?cursor= from the previous page's next_cursor.
func (s *Server) handleListSessions(w http.ResponseWriter, r *http.Request) {
	qv := r.URL.Query()
	opt := session.ListOptions{Cursor: qv.Get("cursor")}
	if v := qv.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			writeError(w, http.StatusBadRequest, errInvalidRequest, "limit must be an integer from 1 to 500")
			return
		}
		opt.Limit = n
	}
	page, err := s.rt.ListSessions(r.Context(), opt)
	if err != nil {
		if errors.Is(err, session.ErrInvalidCursor) {
			writeError(w, http.StatusBadRequest, errInvalidRequest, "cursor is not one this server handed out")
			return
		}
		s.writeRuntimeError(w, r, err)
		return
	}
	out := struct {
		Sessions   []sessionJSON `json:"sessions"`
		NextCursor string        `json:"next_cursor,omitempty"`
		HasMore    bool          `json:"has_more"`
	}{Sessions: make([]sessionJSON, 0, len(page.Sessions)), NextCursor: page.NextCursor, HasMore: page.NextCursor != ""}
	for _, ss := range page.Sessions {
		out.Sessions = append(out.Sessions, toSessionJSON(ss))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleGetSession(w http.ResponseWriter, r *http.Request) {
	sess, err := s.rt.GetSession(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeRuntimeError(w, r, err)
		return
	}
	st, err := s.rt.Stats(r.Context(), sess.ID)
	if err != nil {
		s.writeRuntimeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sessionWithUsage{toSessionJSON(sess), st})
}

// sessionWithUsage is GET /v1/sessions/{id}'s answer: the session and
// what it has used (session.Stats; the list shows sessions without it,
// which would cost a scan per session).
type sessionWithUsage struct {
	sessionJSON
	Usage session.Stats `json:"usage"`
}

func (s *Server) handleDeleteSession(w http.ResponseWriter, r *http.Request) {
	if err := s.rt.DeleteSession(r.Context(), r.PathValue("id")); err != nil {
		s.writeRuntimeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "deleted"})
}

// handlePermission answers a permission_request event of the session.
func (s *Server) handlePermission(w http.ResponseWriter, r *http.Request) {
	a, ok := decodeApprovalAnswer(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if _, err := s.rt.GetSession(r.Context(), id); err != nil {
		if errors.Is(err, session.ErrNotFound) {
			writeError(w, http.StatusNotFound, errNotFound, "session "+quote(id)+" not found")
			return
		}
		s.writeRuntimeError(w, r, err)
		return
	}
	var err error
	if a.budget != nil {
		err = s.rt.AnswerBudget(id, a.requestID, *a.budget)
	} else {
		err = s.rt.Answer(id, a.requestID, a.allow, a.reason)
	}
	if err != nil {
		s.writeRuntimeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleCancel cancels the session's running turn cooperatively (its tools
// are cancelled and the history repaired; the turn ends with done,
// stop_reason "cancelled") and drops queued messages.
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.rt.GetSession(r.Context(), id); err != nil {
		s.writeRuntimeError(w, r, err)
		return
	}
	status := "not_running"
	if s.rt.Cancel(id) {
		status = "cancelled"
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": status})
}
