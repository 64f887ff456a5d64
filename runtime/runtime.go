// Package runtime runs agent sessions for long-lived front doors (the HTTP
// server, the WebSocket, later the UI): it owns the sessions, persists
// their conversation and every event to the store, runs one turn at a time
// per session in the background, and brokers permission requests between
// a running turn and whoever answers them. Front doors only call this
// package; none of them touches the store or the agent directly.
package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/eventlog"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/tool"
)

// Errors front doors map onto statuses (errors.Is).
var (
	ErrNotFound = store.ErrNotFound // unknown session or permission request
	ErrExists   = store.ErrExists   // session id taken
	ErrAnswered = errors.New("permission request already answered")
	ErrClosed   = errors.New("runtime is shutting down")
	// ErrInvalidCursor: a list cursor this server did not hand out.
	ErrInvalidCursor = store.ErrInvalidCursor
)

// The store's types front doors see, named here so that a front door
// depends on the runtime alone and never imports the store (DESIGN.md:
// the transport knows nothing about storage).
type (
	Event       = store.Event
	Session     = store.Session
	ListOptions = store.ListOptions
	SessionPage = store.SessionPage
)

// DefaultPermissionTimeout is how long a permission request waits for an
// answer before it counts as denied.
const DefaultPermissionTimeout = 5 * time.Minute

// ModelResolver turns a model spec ("provider:model") into a provider.
// *registry.Registry implements it.
type ModelResolver interface {
	Resolve(spec string) (llm.Provider, llm.ModelInfo, error)
}

// Config is a runtime. Store, Models and DefaultModel are required.
type Config struct {
	Store        store.Store
	Models       ModelResolver
	DefaultModel string
	// Tools is the tool set every session gets; nil means none.
	Tools *tool.Registry
	// System is the default system prompt.
	System string
	// Policy is the server-wide posture every session starts from (mode,
	// rules, hooks, audit, secrets); sessions may add their own rules and
	// mode on top (SetSessionPermissions). nil means the zero policy:
	// default mode, so every tool that is not read-only asks.
	Policy *policy.Policy
	// AllowBypass lets API callers choose the bypass mode; the person
	// starting the server enables it explicitly (seed 004: bypass is
	// never reached by accident).
	AllowBypass bool
	// Audits, when the store keeps an audit trail, serves Audit.
	Audits            store.Audits
	PermissionTimeout time.Duration // 0 means DefaultPermissionTimeout
	MaxTurns          int           // 0 means agent.DefaultMaxTurns
	Retry             agent.RetryPolicy
	Logger            *slog.Logger
}

// TurnOptions override the agent per turn (the HTTP API's request fields).
type TurnOptions struct {
	Model         string   `json:"model,omitempty"`
	SystemPrompt  string   `json:"system_prompt,omitempty"`
	MaxTurns      int      `json:"max_turns,omitempty"`
	StopSequences []string `json:"stop_sequences,omitempty"`
	Thinking      string   `json:"thinking,omitempty"`
}

// Runtime owns the live sessions.
type Runtime struct {
	cfg  Config
	log  *slog.Logger
	elog *eventlog.Log

	mu       sync.Mutex
	live     map[string]*live // sessions with state in memory
	closed   bool
	turns    sync.WaitGroup
	shutdown context.Context
	stop     context.CancelFunc

	polMu sync.RWMutex
	base  *policy.Policy // the server-wide policy; replaced whole, never mutated
	// The policy's hooks and secrets, which no API call replaces, for
	// reading without polMu.
	hooks   *hook.Manager
	secrets *secret.Set
}

// live is a session's in-memory state: its agent session (history), the
// turn queue and the pending permission requests.
type live struct {
	id string
	// sendMu makes appending a message's user_message event and queueing
	// it one step, so that messages run in the order of their seqs.
	sendMu  sync.Mutex
	mu      sync.Mutex
	history []llm.Message
	loaded  bool
	stored  bool           // the store holds history as it is (see saveHistory)
	tools   *agent.Session // nil until the first turn; keeps tool state (reads, todos)
	writer  *eventWriter   // the running turn's, nil between turns
	running bool
	queue   []queued
	cancel  context.CancelFunc
	perms   map[string]*permRequest
	// override is the session's own permissions on top of the server's
	// (nil until loaded from the session's metadata).
	override *sessionPolicy
	// answeredIDs remembers answered requests after they close, so that a
	// second answer is a conflict rather than "not found".
	answeredIDs map[string]bool
}

type queued struct {
	seq  int64 // of its user_message event
	text string
	opt  TurnOptions
}

type permRequest struct {
	id       string
	answer   chan agent.Decision
	answered bool
}

// New starts a runtime over cfg.Store.
func New(cfg Config) (*Runtime, error) {
	if cfg.Store == nil || cfg.Models == nil {
		return nil, errors.New("runtime: Config.Store and Config.Models are required")
	}
	if cfg.Policy == nil {
		cfg.Policy = &policy.Policy{}
	}
	if cfg.Policy.Mode == permission.ModeBypass {
		cfg.AllowBypass = true
	}
	if cfg.PermissionTimeout <= 0 {
		cfg.PermissionTimeout = DefaultPermissionTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, stop := context.WithCancel(context.Background())
	base := *cfg.Policy
	if base.Mode == "" {
		base.Mode = permission.ModeDefault
	}
	return &Runtime{cfg: cfg, log: log, elog: eventlog.New(cfg.Store, eventlog.Options{Logger: log, Redact: redactor(base.Secrets)}),
		live: map[string]*live{}, shutdown: ctx, stop: stop, base: &base, hooks: base.Hooks, secrets: base.Secrets}, nil
}

// NewSessionID is "sess_" and 12 hex digits.
func NewSessionID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "sess_" + hex.EncodeToString(b[:])
}

// CreateSession stores a new session; id "" generates one.
func (rt *Runtime) CreateSession(ctx context.Context, id string) (store.Session, error) {
	if id == "" {
		id = NewSessionID()
	}
	sess, err := rt.cfg.Store.CreateSession(ctx, store.Session{ID: id})
	if err == nil {
		rt.fireHook(hook.SessionStart, id, func(in *hook.Input) { in.Extra = map[string]any{"source": "startup"} })
	}
	return sess, err
}

// GetSession returns a session's header.
func (rt *Runtime) GetSession(ctx context.Context, id string) (store.Session, error) {
	sess, err := rt.cfg.Store.GetSession(ctx, id)
	if err == nil {
		// Events reach readers before the store has them.
		sess.LastSeq = max(sess.LastSeq, rt.elog.LastSeq(id))
	}
	return sess, err
}

// ListSessions pages through sessions.
func (rt *Runtime) ListSessions(ctx context.Context, opt store.ListOptions) (store.SessionPage, error) {
	return rt.cfg.Store.ListSessions(ctx, opt)
}

// DeleteSession cancels a running turn, ends the session's event readers
// and deletes it with its history and events.
func (rt *Runtime) DeleteSession(ctx context.Context, id string) error {
	rt.mu.Lock()
	l := rt.live[id]
	delete(rt.live, id)
	rt.mu.Unlock()
	if l != nil {
		l.mu.Lock()
		l.queue = nil
		if l.cancel != nil {
			l.cancel()
		}
		l.mu.Unlock()
	}
	// Readers end with ErrSessionClosed before the store forgets the
	// session, rather than meeting ErrNotFound halfway through.
	if _, err := rt.cfg.Store.GetSession(ctx, id); err != nil {
		return err
	}
	rt.elog.CloseSession(id)
	if err := rt.cfg.Store.DeleteSession(ctx, id); err != nil {
		return err
	}
	rt.fireHook(hook.SessionEnd, id, nil)
	return nil
}

// Subscribe returns a reader of the session's events after seq `after`
// (0 replays everything), replaying from the store and then following live.
func (rt *Runtime) Subscribe(sessionID string, after int64) *eventlog.Reader {
	return rt.elog.Subscribe(sessionID, after)
}

// Messages returns the conversation the model sees.
func (rt *Runtime) Messages(ctx context.Context, sessionID string) ([]llm.Message, error) {
	return rt.cfg.Store.LoadMessages(ctx, sessionID)
}

// Send appends a user message to the session and runs a turn on it in the
// background, after any turn already running (messages are consumed in
// order). It returns the seq of the message's user_message event. The
// turn's own events start with a message_consumed event whose message_seq
// is that seq and end with the next done; a message dropped by Cancel gets
// a message_dropped event instead. A client streams its turn by reading
// after seq-1, skipping to its message_consumed.
func (rt *Runtime) Send(ctx context.Context, sessionID, text string, opt TurnOptions) (int64, error) {
	if _, err := rt.cfg.Store.GetSession(ctx, sessionID); err != nil {
		return 0, err
	}
	l, err := rt.session(sessionID)
	if err != nil {
		return 0, err
	}
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	evs, err := rt.append(ctx, sessionID, "user_message", map[string]any{"text": rt.redact(text)})
	if err != nil {
		return 0, err
	}
	l.mu.Lock()
	l.queue = append(l.queue, queued{seq: evs[0].Seq, text: text, opt: opt})
	start := !l.running
	if start {
		l.running = true
	}
	l.mu.Unlock()
	if start {
		rt.turns.Add(1)
		go rt.drain(l)
	}
	return evs[0].Seq, nil
}

// Cancel stops the session's running turn (cooperatively: tools are
// cancelled, the history is repaired) and drops queued messages, each
// recorded with a message_dropped event. It reports whether a turn was
// running.
func (rt *Runtime) Cancel(sessionID string) bool {
	rt.mu.Lock()
	l := rt.live[sessionID]
	rt.mu.Unlock()
	if l == nil {
		return false
	}
	l.mu.Lock()
	dropped := l.queue
	l.queue = nil
	running := l.cancel != nil
	if running {
		l.cancel()
	}
	l.mu.Unlock()
	rt.dropped(sessionID, dropped, "cancelled")
	return running
}

// dropped records queued messages that will never run.
func (rt *Runtime) dropped(sessionID string, qs []queued, reason string) {
	for _, q := range qs {
		if _, err := rt.append(context.Background(), sessionID, "message_dropped", MessageData{MessageSeq: q.seq, Reason: reason}); err != nil {
			rt.log.Error("recording a dropped message failed", "session", sessionID, "error", err)
		}
	}
}

// MessageData is the payload of message_consumed and message_dropped.
type MessageData struct {
	MessageSeq int64  `json:"message_seq"`
	Reason     string `json:"reason,omitempty"`
}

// Answer answers a pending permission request of the session.
func (rt *Runtime) Answer(sessionID, requestID string, allow bool, reason string) error {
	rt.mu.Lock()
	l := rt.live[sessionID]
	rt.mu.Unlock()
	if l == nil {
		return ErrNotFound
	}
	l.mu.Lock()
	p := l.perms[requestID]
	if p == nil {
		answered := l.answeredIDs[requestID]
		l.mu.Unlock()
		if answered {
			return ErrAnswered
		}
		return ErrNotFound
	}
	if p.answered {
		l.mu.Unlock()
		return ErrAnswered
	}
	p.answered = true
	if l.answeredIDs == nil {
		l.answeredIDs = map[string]bool{}
	}
	l.answeredIDs[requestID] = true
	l.mu.Unlock()
	d := agent.Decision{Allow: allow, Reason: reason}
	if !allow && reason == "" {
		d.Reason = "the user denied this tool call"
	}
	p.answer <- d // buffered: the waiting turn may have timed out meanwhile
	return nil
}

// Shutdown stops accepting turns, cancels running ones at their next safe
// point (tools are cancelled, the history is repaired and saved) and waits
// for them, or for ctx.
func (rt *Runtime) Shutdown(ctx context.Context) error {
	rt.mu.Lock()
	rt.closed = true
	rt.mu.Unlock()
	rt.stop()
	done := make(chan struct{})
	go func() { rt.turns.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	// Events of the runtime's own (dropped messages) may still be on
	// their way to the store.
	return rt.elog.FlushAll(ctx)
}

func (rt *Runtime) session(id string) (*live, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return nil, ErrClosed
	}
	l := rt.live[id]
	if l == nil {
		l = &live{id: id, perms: map[string]*permRequest{}}
		rt.live[id] = l
	}
	return l, nil
}

// append persists one event of the session.
func (rt *Runtime) append(ctx context.Context, sessionID, typ string, data any) ([]store.Event, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	return rt.elog.Append(ctx, sessionID, store.Event{Type: typ, Data: b})
}
