package server

// The WebSocket front door, GET /v1/ws, speaks seed 002's protocol.
//
// Client messages (JSON text frames):
//
//	{"type":"create","session_id":"...","start":N}  attach (creating the session when needed)
//	{"type":"chat","message":"...","thinking":"off|low|medium|high","model":"...",
//	 "max_budget_usd":0.5,"max_tokens_total":N}     the limits are optional, as on POST .../messages
//	                                                 (absent: the server's default, 0: none)
//	{"type":"stop"}                                  cancel the running turn (and drop queued messages)
//	{"type":"ping"}                                  answered by {"type":"pong"}
//	{"type":"pong"}                                  ignored
//	{"type":"permission","request_id":"...","allow":true,"reason":"..."}  (extension)
//	{"type":"permission","request_id":"budget_...","allow":true,"max_budget_usd":0.5}  (extension: a budget_request)
//
// Server events all carry seq, source (client | ai | system) and type. Every
// event derived from the session's event log carries that event's seq, so a
// client that remembers the highest seq it has processed reconnects with
// {"type":"create","session_id":...,"start":seq} and continues without a gap
// or a duplicate. One log event can yield several WebSocket events (a
// user_message yields message_sent and, behind a running turn,
// message_queued); they share its seq. Log events without a WebSocket
// counterpart (turn_start, text, thinking, turn_end, todos) send nothing, but
// resuming after them is still exact because positions are log seqs.
// Events that are not in the log (the session acknowledgement, pong, errors
// about a client message) carry seq 0.
//
// The mapping from the log:
//
//	user_message      -> message_sent {message_id, content} (+ message_queued)
//	message_consumed  -> message_consumed {message_id, content}: its turn starts
//	message_dropped   -> message_dropped {message_id, content, reason}: it will never run
//	                     (a stop, POST .../cancel or a shutdown emptied the queue)
//	text_delta        -> chunk {content}
//	thinking_delta    -> thinking {content}
//	tool_use          -> tool_execution {message: tool name, content: input JSON, phase "start"}
//	tool_progress     -> tool_execution {message: tool name, content: detail, phase "progress"}
//	tool_result       -> tool_execution {message: tool name, content: output summary, phase "result", is_error}
//	subagent_start    -> tool_execution {message: "Agent", content: description, subagent_id,
//	                     tool_use_id and parent_tool_use_id: the parent's call, phase "subagent_start"}
//	subagent_event    -> for the sub-agent's tool_use, tool_progress and tool_result: the tool_execution
//	                     above (phase start, progress, result) with subagent_id and parent_tool_use_id
//	subagent_end      -> tool_execution {message: "Agent", content: result or error, subagent_id,
//	                     tool_use_id and parent_tool_use_id, phase "subagent_end", is_error unless completed}
//	ask_user          -> ask_user {questions}
//	permission_request-> permission_request {id, tool_name, input, message, tool_use_id}
//	checkpoint        -> checkpoint {id, tool_name, input, message, tool_use_id}: answered
//	                     like a permission request
//	budget_request    -> budget_request {id, message, budget: the event's payload}: answered
//	                     like a permission request, with max_budget_usd / max_tokens_total
//	                     for the new limits when allowed (server.BudgetAnswer)
//	retry             -> retry {message}: the model call failed and is retried; discard the
//	                     chunk and thinking events received since the last event of another type
//	done              -> done {done: true, stop_reason}
//	error             -> error {message}
//
// message_id is the seq of the message's user_message event. What became
// of a message is translated one to one from the runtime's own
// message_consumed and message_dropped events, never guessed from the turns
// around it. message_queued says that the message waits: it was sent while
// a turn ran or other messages waited.
//
// create without start replays the session from its first event. create with
// start reads the log from the beginning too, sending nothing up to start, so
// that it knows which messages are pending; a start beyond the last event is
// lowered to it (the acknowledgement says so), since skipping seqs not yet
// written would hide them when they are.
//
// Replies that are not in the log: create is acknowledged with
// {"type":"session","session_id","start","created"} (before any replayed
// event; a create for the already attached session without start changes
// nothing and is acknowledged without start); a ping with pong; a client
// mistake with {"type":"error","code":<seed 000 error type>,"message"}, and
// the connection stays open.
//
// Permission requests are answered either with the permission message above
// or through POST /v1/sessions/{id}/permissions/{request_id}.
//
// Authentication is the middleware's: a browser cannot set headers on a
// WebSocket, so ?token= is accepted on this path. Cross-origin pages are
// refused unless their origin is one of the CORS origins.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/eventlog"
	"github.com/weft-run/weft/session"
)

// Defaults of wsOptions.
const (
	wsKeepAlive    = 15 * time.Second
	wsWriteTimeout = 30 * time.Second
	// wsReadLimit fits a prompt of MaxPromptChars in four-byte characters
	// with room for the JSON around it.
	wsReadLimit = 4*MaxPromptChars + 64<<10
	// wsSummaryBytes caps the tool output a tool_execution event carries:
	// a chat UI shows a summary, the full output is in the SSE streams.
	wsSummaryBytes = 4 << 10
)

// wsOptions tunes a WebSocket connection; zero fields take the defaults.
type wsOptions struct {
	// KeepAlive is the interval of protocol pings; a peer that does not
	// answer one within the interval is disconnected.
	KeepAlive time.Duration
	// WriteTimeout bounds one frame write. A client that does not take a
	// frame in this long is disconnected (it resumes with start).
	WriteTimeout time.Duration
	// ReadLimit bounds one client message, in bytes.
	ReadLimit int64
	// OriginPatterns are the origins allowed besides the request's own host
	// (coder/websocket's patterns: "host" or "scheme://host"; the CORS
	// setting's origins fit); "*" allows any origin. A browser page from
	// another origin is refused otherwise, like with CORS.
	OriginPatterns []string
}

func (o wsOptions) withDefaults() wsOptions {
	if o.KeepAlive <= 0 {
		o.KeepAlive = wsKeepAlive
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = wsWriteTimeout
	}
	if o.ReadLimit <= 0 {
		o.ReadLimit = wsReadLimit
	}
	return o
}

// handleWS upgrades GET /v1/ws. Authentication happened in the middleware
// (browsers cannot set headers on a WebSocket, so it accepts ?token= here).
// The connection ends with 1001 going away when the server closes.
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	// The origin guard has refused foreign origins with the error JSON
	// already; the library checks again, with the origins written the way
	// the guard compares them.
	anyOrigin, allowed := s.corsOrigins()
	var origins []string
	if anyOrigin {
		origins = append(origins, "*")
	}
	for o := range allowed {
		// The library matches patterns with filepath.Match: an IPv6
		// origin's brackets must not read as a character class.
		origins = append(origins, globEscaper.Replace(o))
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.closing, cancel)()
	s.streamsActive.Add(1)
	defer s.streamsActive.Add(-1)
	acceptWS(w, r.WithContext(ctx), s.rt, s.log, wsOptions{OriginPatterns: origins, KeepAlive: s.keepalive})
}

var globEscaper = strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`, `*`, `\*`, `?`, `\?`)

// acceptWS upgrades the request and serves the connection until it ends.
func acceptWS(w http.ResponseWriter, r *http.Request, rt *session.Service, log *slog.Logger, opt wsOptions) {
	if !headerHasToken(r.Header, "Connection", "upgrade") || !headerHasToken(r.Header, "Upgrade", "websocket") {
		// Accept would answer in plain text; every error of the API is JSON.
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "websocket")
		writeError(w, http.StatusUpgradeRequired, errInvalidRequest, "this endpoint speaks WebSocket: send a WebSocket upgrade request")
		return
	}
	ao := &websocket.AcceptOptions{OriginPatterns: opt.OriginPatterns}
	for _, p := range opt.OriginPatterns {
		if p == "*" {
			ao.InsecureSkipVerify = true
		}
	}
	c, err := websocket.Accept(w, r, ao)
	if err != nil {
		// Accept has answered (bad origin, bad handshake).
		if log != nil {
			log.Debug("websocket upgrade refused", "error", err)
		}
		return
	}
	serveWS(r.Context(), rt, log, c, opt)
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// wsConn is one WebSocket connection. Three goroutines serve it, whatever
// the traffic: the reader (the caller of serveWS) handles client messages and
// answers them directly; the writer follows the attached session's event log
// at the client's pace, so a slow client only falls behind in the log and
// never holds up a turn or another reader; the keepalive pings. Memory is
// bounded: the writer holds one event (or one store batch) at a time and the
// reader one message.
type wsConn struct {
	rt  *session.Service
	log *slog.Logger
	c   *websocket.Conn
	opt wsOptions

	// session is the attached session; only the reader goroutine uses it.
	session string

	mu sync.Mutex
	// next is an attachment the writer has not picked up yet.
	next *wsAttach
	// sub is the subscription the writer is reading; closing it wakes the
	// writer from Next when a new attachment arrives.
	sub  *eventlog.Reader
	wake chan struct{} // capacity 1: "next changed"
}

// wsAttach is a subscription handed from the reader to the writer.
type wsAttach struct {
	session string
	created bool
	start   int64 // events up to here only rebuild the translator's state
	sub     *eventlog.Reader
}

// serveWS serves c until the client leaves, the connection fails or ctx
// ends (then it closes with 1001 going away).
func serveWS(ctx context.Context, rt *session.Service, log *slog.Logger, c *websocket.Conn, opt wsOptions) {
	if log == nil {
		log = slog.Default()
	}
	opt = opt.withDefaults()
	c.SetReadLimit(opt.ReadLimit)
	w := &wsConn{rt: rt, log: log, c: c, opt: opt, wake: make(chan struct{}, 1)}

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	closed := make(chan struct{})
	// Whatever ends the connection cancels ctx; closing with a handshake
	// then unblocks the reader.
	context.AfterFunc(ctx, func() {
		defer close(closed)
		code, reason := websocket.StatusNormalClosure, ""
		if parent.Err() != nil {
			code, reason = websocket.StatusGoingAway, "server shutting down"
		}
		_ = c.Close(code, reason)
	})

	var wg sync.WaitGroup
	wg.Go(func() {
		defer cancel()
		if err := w.writeLoop(ctx); err != nil && ctx.Err() == nil {
			log.Debug("websocket write failed", "error", err)
		}
	})
	wg.Go(func() { w.keepAlive(ctx, cancel) })
	w.readLoop(ctx)
	cancel()
	wg.Wait()
	<-closed
	w.mu.Lock()
	if w.next != nil {
		w.next.sub.Close()
		w.next = nil
	}
	w.mu.Unlock()
}

// keepAlive pings at the interval; a missing pong ends the connection.
func (w *wsConn) keepAlive(ctx context.Context, cancel context.CancelFunc) {
	t := time.NewTicker(w.opt.KeepAlive)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Not derived from ctx: a cancelled ctx in the middle of a frame
		// makes the library drop the connection instead of closing it.
		pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), w.opt.KeepAlive)
		err := w.c.Ping(pctx)
		pcancel()
		if err != nil {
			if ctx.Err() == nil {
				w.log.Debug("websocket keepalive failed", "error", err)
				cancel()
			}
			return
		}
	}
}

// wsRequest is any client message.
type wsRequest struct {
	Type      string `json:"type"`
	SessionID wsID   `json:"session_id"`
	Start     *int64 `json:"start"`
	Message   string `json:"message"`
	Thinking  string `json:"thinking"`
	Model     string `json:"model"`
	RequestID string `json:"request_id"`
	Allow     *bool  `json:"allow"`
	Reason    string `json:"reason"`
	// chat: the turn's limits (absent: the server's default, 0: none);
	// permission: the new limits when a budget_request is allowed.
	BudgetFields
}

// wsID is a session id sent as a string or, as in seed 002's examples, a
// number.
type wsID string

func (id *wsID) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*id = wsID(s)
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	if _, err := strconv.ParseInt(string(b), 10, 64); err != nil {
		// The decoder adds the field name.
		return &json.UnmarshalTypeError{Value: jsonValueKind(b), Type: reflect.TypeFor[string]()}
	}
	*id = wsID(b)
	return nil
}

// jsonValueKind names the kind of a JSON value for an error message.
func jsonValueKind(b []byte) string {
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

// wsEvent is any server event.
type wsEvent struct {
	Seq    int64  `json:"seq"`
	Source string `json:"source"`
	Type   string `json:"type"`

	MessageID int64           `json:"message_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	Message   string          `json:"message,omitempty"`
	Questions json.RawMessage `json:"questions,omitempty"`
	Done      bool            `json:"done,omitempty"`

	// Extensions.
	StopReason string          `json:"stop_reason,omitempty"` // done
	Reason     string          `json:"reason,omitempty"`      // message_dropped
	Code       string          `json:"code,omitempty"`        // error: seed 000's error type for client mistakes
	ID         string          `json:"id,omitempty"`          // permission_request
	ToolName   string          `json:"tool_name,omitempty"`   // permission_request
	Input      json.RawMessage `json:"input,omitempty"`       // permission_request
	ToolUseID  string          `json:"tool_use_id,omitempty"` // tool_execution, permission_request
	Phase      string          `json:"phase,omitempty"`       // tool_execution: start | progress | result
	IsError    bool            `json:"is_error,omitempty"`    // tool_execution
	SessionID  string          `json:"session_id,omitempty"`  // session
	Start      *int64          `json:"start,omitempty"`       // session
	Created    bool            `json:"created,omitempty"`     // session
	Budget     json.RawMessage `json:"budget,omitempty"`      // budget_request: its whole payload
	// suggestions: the follow-up prompts the turn-end pipeline proposed
	// after a turn's done (event.Suggestions).
	Suggestions []string `json:"suggestions,omitempty"`

	// A sub-agent's tool_execution (ws_subagent.go): which sub-agent, and
	// the parent's Agent call.
	SubagentID string `json:"subagent_id,omitempty"`
	ParentTool string `json:"parent_tool_use_id,omitempty"`
}

const (
	srcClient = "client"
	srcAI     = "ai"
	srcSystem = "system"
)

func (w *wsConn) readLoop(ctx context.Context) {
	// Reads are not bound to ctx: a cancelled read drops the connection
	// without a close frame, while ending ctx closes it properly.
	rctx := context.WithoutCancel(ctx)
	for {
		_, b, err := w.c.Read(rctx)
		if err != nil {
			if ctx.Err() == nil {
				if s := websocket.CloseStatus(err); s == websocket.StatusNormalClosure || s == websocket.StatusGoingAway {
					w.log.Debug("websocket closed by the client", "status", s)
				} else {
					w.log.Debug("websocket read failed", "error", err)
				}
			}
			return
		}
		var req wsRequest
		if err := decodeJSON(bytes.NewReader(b), &req); err != nil {
			w.fail(ctx, errInvalidRequest, err.Error())
			continue
		}
		w.handle(ctx, &req)
	}
}

func (w *wsConn) handle(ctx context.Context, req *wsRequest) {
	switch req.Type {
	case "create":
		w.create(ctx, req)
	case "chat":
		w.chat(ctx, req)
	case "stop":
		if w.session == "" {
			w.fail(ctx, errInvalidRequest, "no session: send create first")
			return
		}
		w.rt.Cancel(w.session)
	case "ping":
		w.reply(ctx, wsEvent{Source: srcSystem, Type: "pong"})
	case "pong":
	case "permission":
		w.permission(ctx, req)
	case "":
		w.fail(ctx, errInvalidRequest, `message without "type"`)
	default:
		w.fail(ctx, errInvalidRequest, "unknown message type "+quote(req.Type)+" (want create, chat, stop, ping, pong or permission)")
	}
}

// create attaches the connection to a session, creating it when the id is
// empty or unknown. It is idempotent: a create for the attached session
// without start keeps the position, so clients may send it before every
// chat.
func (w *wsConn) create(ctx context.Context, req *wsRequest) {
	id := string(req.SessionID)
	if id != "" && !validSessionID(id) {
		// The same rule as POST /v1/sessions: the id ends up in URL paths,
		// logs and headers.
		w.fail(ctx, errInvalidRequest, sessionIDRule)
		return
	}
	if req.Start != nil && *req.Start < 0 {
		w.fail(ctx, errInvalidRequest, "start must be >= 0")
		return
	}
	if id != "" && id == w.session && req.Start == nil {
		w.reply(ctx, wsEvent{Source: srcSystem, Type: "session", SessionID: id})
		return
	}
	var (
		sess    session.Session
		created bool
		err     error
	)
	if id != "" {
		sess, err = w.rt.GetSession(ctx, id)
	}
	if id == "" || errors.Is(err, session.ErrNotFound) {
		sess, err = w.rt.CreateSession(ctx, id)
		created = err == nil
		if errors.Is(err, session.ErrExists) {
			// Created by someone else meanwhile: attach to it.
			sess, err = w.rt.GetSession(ctx, id)
		}
	}
	if err != nil {
		w.runtimeFailure(ctx, err, "session "+quote(id))
		return
	}
	var start int64
	if req.Start != nil {
		// Beyond the end the log would hide events appended later.
		start = min(*req.Start, sess.LastSeq)
	}
	// The writer replays from the beginning, quietly up to start, so that
	// it knows which messages are pending when it resumes.
	a := &wsAttach{session: sess.ID, created: created, start: start, sub: w.rt.Subscribe(sess.ID, 0)}
	w.session = sess.ID
	w.mu.Lock()
	if w.next != nil {
		w.next.sub.Close()
	}
	w.next = a
	if w.sub != nil {
		w.sub.Close()
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *wsConn) chat(ctx context.Context, req *wsRequest) {
	if w.session == "" {
		w.fail(ctx, errInvalidRequest, "no session: send create first")
		return
	}
	if strings.TrimSpace(req.Message) == "" {
		w.fail(ctx, errInvalidRequest, "message is required")
		return
	}
	if n := utf8.RuneCountInString(req.Message); n > MaxPromptChars {
		w.fail(ctx, errInvalidRequest, fmt.Sprintf("message is %d characters; the limit is %d", n, MaxPromptChars))
		return
	}
	thinking := req.Thinking
	switch thinking {
	case "", "low", "medium", "high", "xhigh":
	case "off", "none":
		thinking = "none"
	default:
		w.fail(ctx, errInvalidRequest, "thinking must be off, low, medium or high, not "+quote(req.Thinking))
		return
	}
	if err := req.BudgetFields.Validate(); err != nil {
		w.fail(ctx, errInvalidRequest, err.Error())
		return
	}
	_, err := w.rt.Send(ctx, w.session, req.Message, session.TurnOptions{Model: req.Model, Thinking: thinking,
		MaxBudgetUSD: req.MaxBudgetUSD, MaxTokensTotal: req.MaxTokensTotal})
	if err != nil {
		w.runtimeFailure(ctx, err, "session "+quote(w.session))
	}
}

func (w *wsConn) permission(ctx context.Context, req *wsRequest) {
	switch {
	case w.session == "":
		w.fail(ctx, errInvalidRequest, "no session: send create first")
		return
	case req.RequestID == "":
		w.fail(ctx, errInvalidRequest, "request_id is required")
		return
	case req.Allow == nil:
		w.fail(ctx, errInvalidRequest, "allow is required")
		return
	}
	var err error
	if isBudgetRequest(req.RequestID) {
		d, derr := BudgetAnswer{Allow: req.Allow, MaxBudgetUSD: deref(req.MaxBudgetUSD), MaxTokensTotal: deref(req.MaxTokensTotal), Reason: req.Reason}.Decision()
		if derr != nil {
			w.fail(ctx, errInvalidRequest, derr.Error())
			return
		}
		err = w.rt.AnswerBudget(w.session, req.RequestID, d)
	} else if deref(req.MaxBudgetUSD) != 0 || deref(req.MaxTokensTotal) != 0 {
		w.fail(ctx, errInvalidRequest, "max_budget_usd and max_tokens_total only answer a budget_request")
		return
	} else {
		err = w.rt.Answer(w.session, req.RequestID, *req.Allow, req.Reason)
	}
	if err != nil {
		what := "permission request " + quote(req.RequestID)
		if errors.Is(err, session.ErrNotFound) {
			w.fail(ctx, errNotFound, what+" not found (unknown, expired or its turn ended)")
			return
		}
		w.runtimeFailure(ctx, err, what)
	}
}

// runtimeFailure reports a runtime error about what; unexpected errors are
// logged and reported without internals.
func (w *wsConn) runtimeFailure(ctx context.Context, err error, what string) {
	switch {
	case errors.Is(err, session.ErrNotFound):
		w.fail(ctx, errNotFound, what+" not found")
	case errors.Is(err, session.ErrExists):
		w.fail(ctx, errConflict, what+" already exists")
	case errors.Is(err, session.ErrAnswered):
		w.fail(ctx, errConflict, what+" was already answered")
	case errors.Is(err, session.ErrClosed):
		w.fail(ctx, errInternal, "the server is shutting down")
	case ctx.Err() != nil:
	default:
		w.log.Error("websocket request failed", "session", w.session, "error", err)
		w.fail(ctx, errInternal, "internal error")
	}
}

// fail sends an error about a client message.
func (w *wsConn) fail(ctx context.Context, code, msg string) {
	w.reply(ctx, wsEvent{Source: srcSystem, Type: "error", Code: code, Message: msg})
}

// reply sends an event from the reader goroutine (the library serialises
// it with the writer's frames). A failure ends the connection by itself.
func (w *wsConn) reply(ctx context.Context, ev wsEvent) {
	_ = w.write(ctx, ev)
}

func (w *wsConn) write(ctx context.Context, ev wsEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	// Not derived from ctx's cancellation: see keepAlive.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.opt.WriteTimeout)
	defer cancel()
	return w.c.Write(wctx, websocket.MessageText, b)
}

// takeAttach hands a pending attachment to the writer.
func (w *wsConn) takeAttach() *wsAttach {
	w.mu.Lock()
	defer w.mu.Unlock()
	a := w.next
	if a != nil {
		w.next = nil
		w.sub = a.sub
	}
	return a
}

// writeLoop follows the attached session's log and sends what it maps to.
func (w *wsConn) writeLoop(ctx context.Context) error {
	var (
		cur *wsAttach
		tr  wsTranslator
	)
	defer func() {
		if cur != nil {
			cur.sub.Close()
		}
	}()
	for {
		if a := w.takeAttach(); a != nil {
			if cur != nil {
				cur.sub.Close()
			}
			cur, tr = a, wsTranslator{quietThrough: a.start}
			start := a.start
			if err := w.write(ctx, wsEvent{Source: srcSystem, Type: "session", SessionID: a.session,
				Start: &start, Created: a.created}); err != nil {
				return err
			}
		}
		if cur == nil {
			select {
			case <-w.wake:
				continue
			case <-ctx.Done():
				return nil
			}
		}
		ev, err := cur.sub.Next(ctx)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return nil
			case errors.Is(err, eventlog.ErrClosed):
				// Replaced by a new attachment, picked up next.
			case errors.Is(err, eventlog.ErrSessionClosed), errors.Is(err, session.ErrNotFound):
				// The second: a store read between the deletion and the
				// log closing the session.
				if err := w.write(ctx, wsEvent{Source: srcSystem, Type: "error", Code: errNotFound,
					Message: "session " + quote(cur.session) + " was deleted"}); err != nil {
					return err
				}
			default:
				w.log.Error("websocket: reading the event log failed", "session", cur.session, "error", err)
				if err := w.write(ctx, wsEvent{Source: srcSystem, Type: "error", Code: errInternal,
					Message: "reading the session's events failed; reconnect with start to resume"}); err != nil {
					return err
				}
			}
			cur.sub.Close()
			cur = nil
			continue
		}
		for _, out := range tr.apply(ev) {
			if err := w.write(ctx, out); err != nil {
				return err
			}
		}
	}
}

// wsTranslator turns a session's log into WebSocket events. It keeps the
// messages sent and not yet consumed or dropped, for message_queued and
// for the content of message_consumed and message_dropped.
type wsTranslator struct {
	// quietThrough: events up to this seq update the state but send nothing.
	quietThrough int64
	// inRun: between a message_consumed and its done.
	inRun   bool
	pending []wsPending
	out     []wsEvent
}

type wsPending struct {
	seq  int64
	text string
}

// apply folds ev into the state and returns the events to send; the slice
// is reused by the next call.
func (t *wsTranslator) apply(ev session.Event) []wsEvent {
	t.out = t.out[:0]
	t.fold(ev)
	if ev.Seq <= t.quietThrough {
		return nil
	}
	return t.out
}

func (t *wsTranslator) emit(e wsEvent) { t.out = append(t.out, e) }

// take removes the pending message with seq from the queue and returns its
// text. When it is consumed, the older messages still pending are removed
// too: the runtime runs messages in order, so those died with a process
// that crashed before it could record what became of them.
func (t *wsTranslator) take(seq int64, consumed bool) string {
	for i, p := range t.pending {
		if p.seq == seq {
			if consumed {
				t.pending = append(t.pending[:0], t.pending[i+1:]...)
			} else {
				t.pending = append(t.pending[:i], t.pending[i+1:]...)
			}
			return p.text
		}
	}
	return ""
}

func (t *wsTranslator) fold(ev session.Event) {
	seq := ev.Seq
	switch ev.Type {
	case event.UserMessage:
		var d struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		t.emit(wsEvent{Seq: seq, Source: srcClient, Type: "message_sent", MessageID: seq, Content: d.Text})
		if t.inRun || len(t.pending) > 0 {
			t.emit(wsEvent{Seq: seq, Source: srcClient, Type: "message_queued", MessageID: seq, Content: d.Text})
		}
		t.pending = append(t.pending, wsPending{seq: seq, text: d.Text})
		return
	case event.MessageConsumed, event.MessageDropped:
		// The runtime's own record of what became of a message: a turn
		// starts on it, or it will never run (a cancel or a shutdown
		// dropped it from the queue).
		var d session.MessageData
		if json.Unmarshal(ev.Data, &d) != nil || d.MessageSeq <= 0 {
			return
		}
		consumed := ev.Type == event.MessageConsumed
		text := t.take(d.MessageSeq, consumed)
		if consumed {
			t.inRun = true
			t.emit(wsEvent{Seq: seq, Source: srcClient, Type: event.MessageConsumed, MessageID: d.MessageSeq, Content: text})
		} else {
			t.emit(wsEvent{Seq: seq, Source: srcSystem, Type: event.MessageDropped, MessageID: d.MessageSeq, Content: text, Reason: d.Reason})
		}
		return
	}

	if t.foldSubagent(ev) {
		return
	}
	switch ev.Type {
	case "text_delta", "thinking_delta":
		var d agent.TextData
		if json.Unmarshal(ev.Data, &d) != nil || d.Text == "" {
			return
		}
		typ := "chunk"
		if ev.Type == "thinking_delta" {
			typ = "thinking"
		}
		t.emit(wsEvent{Seq: seq, Source: srcAI, Type: typ, Content: d.Text})
	case "tool_use":
		var d agent.ToolUseData
		if json.Unmarshal(ev.Data, &d) != nil {
			return
		}
		t.emit(wsEvent{Seq: seq, Source: srcAI, Type: "tool_execution", Message: d.ToolName,
			Content: summary(string(d.Input)), ToolUseID: d.ID, Phase: "start"})
	case "tool_progress":
		var d agent.ToolProgressData
		if json.Unmarshal(ev.Data, &d) != nil {
			return
		}
		t.emit(wsEvent{Seq: seq, Source: srcAI, Type: "tool_execution", Message: d.ToolName,
			Content: summary(d.Detail), ToolUseID: d.ID, Phase: "progress"})
	case "tool_result":
		var d struct {
			ID       string `json:"id"`
			ToolName string `json:"tool_name"`
			Output   string `json:"output"`
			IsError  bool   `json:"is_error"`
		}
		if json.Unmarshal(ev.Data, &d) != nil {
			return
		}
		t.emit(wsEvent{Seq: seq, Source: srcAI, Type: "tool_execution", Message: d.ToolName,
			Content: summary(d.Output), ToolUseID: d.ID, Phase: "result", IsError: d.IsError})
	case "ask_user":
		var d struct {
			Payload json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(ev.Data, &d) != nil {
			return
		}
		t.emit(wsEvent{Seq: seq, Source: srcAI, Type: "ask_user", Questions: d.Payload})
	case event.PermissionRequest:
		var d event.PermissionRequestData
		if json.Unmarshal(ev.Data, &d) != nil {
			return
		}
		t.emit(wsEvent{Seq: seq, Source: srcSystem, Type: "permission_request", ID: d.ID, ToolName: d.ToolName,
			Input: d.Input, Message: d.Message, ToolUseID: d.ToolUse})
	case event.Checkpoint:
		var d event.CheckpointData
		if json.Unmarshal(ev.Data, &d) != nil {
			return
		}
		t.emit(wsEvent{Seq: seq, Source: srcSystem, Type: "checkpoint", ID: d.ID, ToolName: d.ToolName,
			Input: d.Input, Message: d.Message, ToolUseID: d.ToolCallID})
	case string(agent.EventBudgetRequest):
		var d agent.BudgetRequest
		if json.Unmarshal(ev.Data, &d) != nil {
			return
		}
		t.emit(wsEvent{Seq: seq, Source: srcSystem, Type: "budget_request", ID: d.ID, Message: d.Message, Budget: ev.Data})
	case event.Suggestions:
		var d event.SuggestionsData
		if json.Unmarshal(ev.Data, &d) != nil || len(d.Suggestions) == 0 {
			return
		}
		t.emit(wsEvent{Seq: seq, Source: srcAI, Type: event.Suggestions, Suggestions: d.Suggestions})
	case "retry":
		var d agent.RetryData
		_ = json.Unmarshal(ev.Data, &d)
		t.emit(wsEvent{Seq: seq, Source: srcSystem, Type: "retry", Message: d.Error})
	case "error":
		var d agent.ErrorData
		_ = json.Unmarshal(ev.Data, &d)
		t.emit(wsEvent{Seq: seq, Source: srcSystem, Type: "error", Message: d.Error})
	case "done":
		var d agent.DoneData
		_ = json.Unmarshal(ev.Data, &d)
		t.inRun = false
		t.emit(wsEvent{Seq: seq, Source: srcAI, Type: "done", Done: true, StopReason: d.StopReason})
	}
}

// summary cuts s to wsSummaryBytes on a character boundary.
func summary(s string) string {
	if len(s) <= wsSummaryBytes {
		return s
	}
	cut := wsSummaryBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d more bytes)", len(s)-cut)
}
