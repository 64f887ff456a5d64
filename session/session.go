// Package session is the session service for long-lived front doors (the
// HTTP server, the WebSocket, the UI): it owns the sessions, persists
// their conversation and every event to the store, runs one turn at a time
// per session in the background, and asks a running turn's questions
// (permission requests, checkpoints) through the approval broker it shares
// with the run service. Front doors only call this package (and package
// run); none of them touches the store or the agent directly.
package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/compact"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/eventlog"
	"github.com/weft-run/weft/internal/approval"
	"github.com/weft-run/weft/internal/lease"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/prompt"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/turnend"
	"github.com/weft-run/weft/vision"
)

// Errors front doors map onto statuses (errors.Is).
var (
	ErrNotFound = record.ErrNotFound   // unknown session or permission request
	ErrExists   = record.ErrExists     // session id taken
	ErrAnswered = approval.ErrAnswered // a second answer
	ErrClosed   = record.ErrClosed
	// ErrBusy: the session has a turn running or messages queued (a
	// rewind must wait for them).
	ErrBusy = errors.New("the session has a turn running or messages queued")
	// ErrInvalidCursor: a list cursor this server did not hand out.
	ErrInvalidCursor = record.ErrInvalidCursor
	ErrForbidden     = record.ErrForbidden
)

// The store's types front doors see, named here so that a front door
// depends on the runtime alone and never imports the store (DESIGN.md:
// the transport knows nothing about storage).
type (
	Event       = event.Event
	Session     = record.Session
	ListOptions = record.ListOptions
	SessionPage = record.SessionPage
)

// DefaultPermissionTimeout is how long a permission request waits for an
// answer before it counts as denied.
const DefaultPermissionTimeout = approval.DefaultTimeout

// ModelResolver turns a model spec ("provider:model") into a provider.
// *registry.Registry implements it.
type ModelResolver interface {
	Resolve(spec string) (llm.Provider, llm.ModelInfo, error)
}

// Store is what the session service needs of a store: session headers,
// their conversations, their event logs and the turn framing. A
// store.Store satisfies it.
type Store interface {
	store.Sessions
	store.Messages
	store.Events
	store.Turns
}

// Config is a session service. Store and Models are required.
type Config struct {
	Store        Store
	Models       ModelResolver
	DefaultModel string
	// Tools is the tool set every session gets; nil means none.
	Tools *tool.Registry
	// System is the default system prompt: the whole prompt without
	// Prompt; with Prompt, text standing in for the bundle's own sections
	// (--system), as agent.Config.System.
	System string
	// Prompt, when set, builds every turn's system prompt afresh
	// (agent.Config.Prompt): the bundle for the turn's model or the
	// request's bundle, AGENTS.md and the file memory as they are now.
	Prompt *prompt.Builder
	// Vision describes images for the turn's model when it cannot see
	// them (agent.Config.Vision).
	Vision *vision.Describer
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
	// IdleEvict is how long a session's in-memory state (conversation,
	// tool state, permissions) outlives its last use; it is reloaded from
	// the store on the next use. 0 means DefaultIdleEvict.
	IdleEvict time.Duration
	// MaxLiveSessions bounds the sessions held in memory; past it the
	// least recently used idle ones are evicted. 0 means
	// DefaultMaxLiveSessions.
	MaxLiveSessions int
	// Observer receives what each turn's agent does (model calls, tool
	// calls, permission decisions; package observe); nil means none.
	Observer observe.Observer
	// Usage, when set, keeps every model call's usage and cost (the cost
	// history behind GET /v1/usage), and restores a session's totals when
	// a turn resumes it.
	Usage UsageStore
	// Budget is every turn's default budget (agent.Config.Budget): the
	// limits count the turn; a breach ends it with stop_reason "budget".
	Budget agent.Budget
	// Approvals is the broker of the questions turns ask (permission
	// requests, checkpoints); the run service may share it. nil means a
	// broker of the session service's own.
	Approvals *approval.Broker
	// Context and CompactModel manage every session's context window
	// (agent.Config.Context, agent.Config.CompactModel; compact.go).
	// CompactModel is a model spec as DefaultModel; "" means the turn's
	// model writes the summaries.
	Context      compact.Config
	CompactModel string
	// ContextWindow overrides every model's window (agent.Config);
	// MaxContextMessages bounds the messages a request carries.
	ContextWindow, MaxContextMessages int

	// Leases, Commands and Notifier, all set, run the service as one of
	// several nodes sharing the store (cluster.go): a session's turns run
	// on the node holding its lease, other nodes pass it their messages
	// and answers as commands, and readers follow the store's
	// announcements. Unset, the service is the store's only user.
	Leases   *lease.Keeper
	Commands store.Commands
	Notifier store.Notifier
	// TurnEnd is told of every finished turn (memory extraction, the
	// consolidation check, suggestions events; package turnend); nil
	// means nothing runs after a turn.
	TurnEnd *turnend.Pipeline
}

// Defaults of the session state's eviction (Config.IdleEvict,
// Config.MaxLiveSessions).
const (
	DefaultIdleEvict       = 10 * time.Minute
	DefaultMaxLiveSessions = 10_000
)

// TurnOptions override the agent per turn (the HTTP API's request fields).
type TurnOptions struct {
	Model         string   `json:"model,omitempty"`
	SystemPrompt  string   `json:"system_prompt,omitempty"`
	MaxTurns      int      `json:"max_turns,omitempty"`
	StopSequences []string `json:"stop_sequences,omitempty"`
	Thinking      string   `json:"thinking,omitempty"`
	// Bundle picks Config.Prompt's bundle for this turn, "family/scenario"
	// (prompt.ParseKey; the HTTP API's "bundle" and X-Weft-Bundle). An
	// unknown key falls back as prompt.Registry.Resolve does; a malformed
	// one fails the turn's Send.
	Bundle string `json:"bundle,omitempty"`
	// MaxBudgetUSD and MaxTokensTotal replace Config.Budget's limits for
	// this turn when set (0: none).
	MaxBudgetUSD   *float64 `json:"max_budget_usd,omitempty"`
	MaxTokensTotal *int     `json:"max_tokens_total,omitempty"`
}

// Service owns the live sessions.
type Service struct {
	cfg       Config
	log       *slog.Logger
	elog      *eventlog.Log
	approvals *approval.Broker
	// elicits holds the requested schema of each open elicitation (by
	// scope and id), to check an answer's content (elicit.go).
	elicits sync.Map

	mu        sync.Mutex
	live      map[string]*live // sessions with state in memory
	lastSweep time.Time        // of the idle sessions (evictLocked)
	closed    bool
	turns     sync.WaitGroup
	shutdown  context.Context
	stop      context.CancelFunc
	now       func() time.Time

	polMu sync.RWMutex
	base  *policy.Policy // the server-wide policy; replaced whole, never mutated
	// The policy's hooks and secrets, which no API call replaces, for
	// reading without polMu.
	hooks   *hook.Manager
	secrets *secret.Set

	// flows makes run_current_flow for sessions bound to a workflow.
	flows flowTools
	// metaMu serializes the read-modify-writes of session headers (title,
	// permissions in the metadata), which UpdateSession replaces whole.
	metaMu sync.Mutex

	// cl is set when the service is one of several nodes (cluster.go);
	// background counts its goroutines.
	cl         *cluster
	background sync.WaitGroup
}

// live is a session's in-memory state: its agent session (history), the
// turn queue and the pending permission requests. It belongs to one
// incarnation of the session: a session deleted and created again with the
// same id gets a new one, and nothing of the old one reaches the new
// session (w is bound to the old incarnation's event log, and gone stops
// conversation writes).
type live struct {
	id    string
	scope string           // in the approval broker
	w     *eventlog.Writer // every event of this incarnation goes through it
	// sendMu makes appending a message's user_message event and queueing
	// it one step, so that messages run in the order of their seqs; a
	// rewind holds it too, so that no message starts meanwhile.
	sendMu  sync.Mutex
	mu      sync.Mutex
	history []llm.Message
	loaded  bool
	stored  bool           // the store holds history as it is (see saveHistory)
	tools   *agent.Session // nil until the first turn; keeps tool state (reads, todos)
	writer  *eventWriter   // the running turn's, nil between turns
	running bool
	// turnDone: the running turn has published its done (it is only
	// saving and flushing); idle is closed when running goes false.
	turnDone bool
	idle     chan struct{}
	queue    []queued
	cancel   context.CancelFunc
	// override is the session's own permissions on top of the server's
	// (nil until loaded from the session's metadata).
	override *sessionPolicy
	// budgetQ are the running turn's budget questions, opened when their
	// event is published and taken by the approver (budgetask.go).
	budgetQ map[string]*approval.Ticket
	// stats is what Stats has read of the event log so far.
	stats statsCursor

	// storeMu orders conversation writes with deletion: once gone is set
	// (and storeMu taken once), no write of this incarnation starts.
	storeMu sync.Mutex
	gone    atomic.Bool

	// Eviction bookkeeping, under Service.mu: pins counts callers using
	// the state (rt.session to rt.release), lastUsed is when the last one
	// let go.
	pins     int
	lastUsed time.Time

	// Several nodes (cluster.go): held is the session's lease while this
	// node holds it (under mu; ownMu serializes taking it), fenced is set
	// once it was lost (nothing more is written), wake wakes the owner
	// loop, consumed maps the message commands consumed to their seqs,
	// ownedTo is the last seq when this node handed the lease back.
	ownMu    sync.Mutex
	held     *lease.Held
	fenced   atomic.Bool
	wake     chan struct{}
	consumed map[int64]int64
	ownedTo  int64
}

type queued struct {
	seq  int64 // of its user_message event
	text string
	opt  TurnOptions
}

// New starts a runtime over cfg.Store.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Models == nil {
		return nil, errors.New("session: Config.Store and Config.Models are required")
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
	if cfg.Approvals == nil {
		cfg.Approvals = approval.New()
	}
	if cfg.IdleEvict <= 0 {
		cfg.IdleEvict = DefaultIdleEvict
	}
	if cfg.MaxLiveSessions <= 0 {
		cfg.MaxLiveSessions = DefaultMaxLiveSessions
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
	rt := &Service{cfg: cfg, log: log, approvals: cfg.Approvals, elog: eventlog.New(sessionEvents(cfg.Store), eventlog.Options{Logger: log, Redact: redactor(base.Secrets)}),
		live: map[string]*live{}, shutdown: ctx, stop: stop, now: time.Now, base: &base, hooks: base.Hooks, secrets: base.Secrets}
	rt.lastSweep = rt.now()
	if cfg.Leases != nil && cfg.Commands != nil && cfg.Notifier != nil {
		// Start-up recovery is the first takeover sweep: it leaves alone
		// the sessions other nodes hold.
		rt.cl = &cluster{keeper: cfg.Leases, cmds: cfg.Commands, notifier: cfg.Notifier, waiters: map[int64]chan struct{}{}}
		if err := rt.startCluster(); err != nil {
			stop()
			return nil, err
		}
		return rt, nil
	}
	if err := rt.recoverTurns(context.Background()); err != nil {
		stop()
		return nil, err
	}
	return rt, nil
}

// NewSessionID is "sess_" and 12 hex digits.
func NewSessionID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "sess_" + hex.EncodeToString(b[:])
}

// CreateSession stores a new session; id "" generates one.
func (rt *Service) CreateSession(ctx context.Context, id string) (record.Session, error) {
	if id == "" {
		id = NewSessionID()
	}
	return rt.CreateSessionWith(ctx, id, CreateOptions{})
}

// GetSession returns a session's header.
func (rt *Service) GetSession(ctx context.Context, id string) (record.Session, error) {
	sess, err := rt.cfg.Store.GetSession(ctx, id)
	if err == nil {
		// Readers see only stored events, so the store's last seq is
		// never behind what a client saw; the event log's watermark is
		// the same or older, and is taken for good measure.
		sess.LastSeq = max(sess.LastSeq, rt.elog.LastSeq(id))
	}
	return sess, err
}

// ListSessions pages through sessions.
func (rt *Service) ListSessions(ctx context.Context, opt record.ListOptions) (record.SessionPage, error) {
	return rt.cfg.Store.ListSessions(ctx, opt)
}

// DeleteSession cancels a running turn, ends the session's event readers
// and deletes it with its history and events. Nothing of the deleted
// session's turn reaches a session created later with the same id: its
// events go to the closed incarnation (and fail), and its conversation
// writes stop before the store forgets the session.
func (rt *Service) DeleteSession(ctx context.Context, id string) error {
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
		l.gone.Store(true)
		rt.approvals.Forget(l.scope)
		// A conversation write in progress finishes before the delete;
		// none starts after.
		l.storeMu.Lock()
		l.storeMu.Unlock() //nolint:staticcheck // a barrier, not a critical section
	}
	// Readers end with ErrSessionClosed before the store forgets the
	// session, rather than meeting ErrNotFound halfway through.
	if _, err := rt.cfg.Store.GetSession(ctx, id); err != nil {
		return err
	}
	rt.elog.CloseSession(id)
	if l != nil {
		l.w.Close()
	}
	if err := rt.cfg.Store.DeleteSession(ctx, id); err != nil {
		return err
	}
	rt.fireHook(hook.SessionEnd, id, nil)
	return nil
}

// Subscribe returns a reader of the session's events after seq `after`
// (0 replays everything), replaying from the store and then following live.
func (rt *Service) Subscribe(sessionID string, after int64) *eventlog.Reader {
	return rt.elog.Subscribe(sessionID, after)
}

// Messages returns the conversation the model sees.
func (rt *Service) Messages(ctx context.Context, sessionID string) ([]llm.Message, error) {
	return rt.cfg.Store.LoadMessages(ctx, sessionID)
}

// Send appends a user message to the session and runs a turn on it in the
// background, after any turn already running (messages are consumed in
// order). It returns the seq of the message's user_message event, which is
// in the store when Send returns: an accepted message survives a crash
// (after a restart it is in the conversation with its turn ended as
// interrupted, or reported with message_dropped). The turn's own events
// start with a message_consumed event whose message_seq is that seq and
// end with the next done; a message dropped by Cancel gets a
// message_dropped event instead. A client streams its turn by reading
// after seq-1, skipping to its message_consumed.
func (rt *Service) Send(ctx context.Context, sessionID, text string, opt TurnOptions) (int64, error) {
	// Checked here, not when the turn starts: the caller learns of a
	// malformed key, where an unknown one falls back (prompt.Registry).
	if _, err := prompt.ParseKey(opt.Bundle); err != nil {
		return 0, err
	}
	if rt.cl != nil {
		return rt.clusterSend(ctx, sessionID, text, opt)
	}
	// A session in memory exists: only DeleteSession removes one, and it
	// forgets the state first (and this runtime is the database's only
	// writer). Otherwise the store says.
	l := rt.known(sessionID)
	if l == nil {
		if _, err := rt.cfg.Store.GetSession(ctx, sessionID); err != nil {
			return 0, err
		}
		var err error
		if l, err = rt.session(sessionID); err != nil {
			return 0, err
		}
	}
	defer rt.release(l)
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	evs, err := rt.appendTo(ctx, l, event.UserMessage, map[string]any{"text": rt.redact(text)})
	if err != nil {
		if errors.Is(err, eventlog.ErrSessionClosed) {
			return 0, ErrNotFound // deleted meanwhile
		}
		return 0, err
	}
	l.mu.Lock()
	if l.gone.Load() {
		l.mu.Unlock()
		return 0, ErrNotFound
	}
	l.queue = append(l.queue, queued{seq: evs[0].Seq, text: text, opt: opt})
	start := !l.running
	if start {
		l.running = true
		l.idle = make(chan struct{})
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
func (rt *Service) Cancel(sessionID string) bool {
	if rt.cl != nil && rt.ownedLocally(sessionID) == nil {
		res, err := rt.remote(sessionID, cmdCancel, struct{}{})
		return err == nil && res.Running
	}
	rt.mu.Lock()
	l := rt.live[sessionID]
	rt.mu.Unlock()
	if l == nil {
		return false
	}
	return rt.cancelLive(l)
}

func (rt *Service) cancelLive(l *live) bool {
	if rt.cl != nil {
		// The owner does not hand the lease back while the dropped
		// messages are recorded.
		l.sendMu.Lock()
		defer l.sendMu.Unlock()
	}
	l.mu.Lock()
	dropped := l.queue
	l.queue = nil
	running := l.cancel != nil
	if running {
		l.cancel()
	}
	l.mu.Unlock()
	rt.dropped(l, dropped, "cancelled")
	return running
}

// dropped records queued messages that will never run.
func (rt *Service) dropped(l *live, qs []queued, reason string) {
	if l.fenced.Load() {
		return // the next holder of the lease runs them
	}
	for _, q := range qs {
		if _, err := rt.appendTo(context.Background(), l, event.MessageDropped, MessageData{MessageSeq: q.seq, Reason: reason}); err != nil {
			rt.log.Error("recording a dropped message failed", "session", l.id, "error", err)
		}
	}
}

// MessageData is the payload of message_consumed and message_dropped.
type MessageData struct {
	MessageSeq int64  `json:"message_seq"`
	Reason     string `json:"reason,omitempty"`
	// MessagesBefore, on message_consumed, is the number of conversation
	// messages before the turn: where a rewind to a seq before it cuts,
	// and how a restart after a crash knows whether the turn's message
	// is in the conversation yet. Absent when the conversation could not
	// be read.
	MessagesBefore *int `json:"messages_before,omitempty"`
}

// Answer answers a pending permission request (or checkpoint) of the
// session, once: ErrAnswered for a second answer, ErrNotFound for an
// unknown one.
func (rt *Service) Answer(sessionID, requestID string, allow bool, reason string) error {
	return rt.answerAt(sessionID, cmdAnswer, answerCmd{RequestID: requestID, Allow: allow, Reason: reason},
		func(l *live) error { return rt.answerLive(l, requestID, allow, reason) })
}

func (rt *Service) answerLive(l *live, requestID string, allow bool, reason string) error {
	if !allow && reason == "" {
		reason = "the user denied this tool call"
	}
	// An elicitation is answered with its content (AnswerElicitation),
	// never with a bare allow.
	return rt.approvals.AnswerIf(l.scope, requestID, approval.Answer{Allow: allow, Reason: reason}, func(p approval.Pending) error {
		if p.Kind == approval.Elicitation {
			return ErrNotFound
		}
		return nil
	})
}

// incarnations numbers the live states, for their approval scopes.
var incarnations atomic.Uint64

// newScope is a live state's scope in the approval broker: its questions
// belong to this incarnation of the session (as its state does), and
// never meet a run's (the broker is shared; run ids and session ids may
// be alike).
func newScope(sessionID string) string {
	return "session/" + sessionID + "#" + strconv.FormatUint(incarnations.Add(1), 10)
}

// Shutdown stops accepting turns, cancels running ones at their next safe
// point (tools are cancelled, the history is repaired and saved) and waits
// for them, or for ctx.
func (rt *Service) Shutdown(ctx context.Context) error {
	rt.mu.Lock()
	rt.closed = true
	rt.mu.Unlock()
	rt.stop()
	done := make(chan struct{})
	go func() { rt.turns.Wait(); rt.background.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	// Events of the runtime's own (dropped messages) may still be on
	// their way to the store.
	return rt.elog.FlushAll(ctx)
}

// session returns the session's in-memory state, pinned (it is not
// evicted until the matching release).
func (rt *Service) session(id string) (*live, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return nil, ErrClosed
	}
	now := rt.now()
	rt.evictLocked(now)
	l := rt.live[id]
	if l == nil {
		l = &live{id: id, w: rt.elog.Writer(id), scope: newScope(id), wake: make(chan struct{}, 1)}
		rt.live[id] = l
	}
	l.pins++
	l.lastUsed = now
	return l, nil
}

// known is session for a session already in memory, nil otherwise.
func (rt *Service) known(id string) *live {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	l := rt.live[id]
	if l == nil || rt.closed {
		return nil
	}
	l.pins++
	l.lastUsed = rt.now()
	return l
}

// release unpins what session returned.
func (rt *Service) release(l *live) {
	rt.mu.Lock()
	l.pins--
	l.lastUsed = rt.now()
	rt.mu.Unlock()
}

// evictLocked drops idle sessions' state: those unused for IdleEvict, and,
// past MaxLiveSessions, the least recently used idle ones (down to nine
// tenths of it, so that the scan is not repeated at every call). A session
// is idle when nobody holds it, no turn runs or waits and no permission
// request is open. The sweep runs at most every IdleEvict/2 unless the
// bound is exceeded, so it costs nothing per call. The caller holds rt.mu.
func (rt *Service) evictLocked(now time.Time) {
	over := len(rt.live) >= rt.cfg.MaxLiveSessions
	if !over && now.Sub(rt.lastSweep) < rt.cfg.IdleEvict/2 {
		return
	}
	rt.lastSweep = now
	var idle []*live
	for _, l := range rt.live {
		if l.pins > 0 {
			continue
		}
		l.mu.Lock()
		busy := l.running || len(l.queue) > 0 || len(rt.approvals.Pending(l.scope)) > 0 || l.writer != nil
		l.mu.Unlock()
		switch {
		case busy:
		case now.Sub(l.lastUsed) >= rt.cfg.IdleEvict:
			rt.evictOne(l)
		case over:
			idle = append(idle, l)
		}
	}
	if keep := rt.cfg.MaxLiveSessions * 9 / 10; len(rt.live) > keep && len(idle) > 0 {
		slices.SortFunc(idle, func(a, b *live) int { return a.lastUsed.Compare(b.lastUsed) })
		for _, l := range idle[:min(len(idle), len(rt.live)-keep)] {
			rt.evictOne(l)
		}
	}
}

// evictOne forgets an idle session's state; the caller holds rt.mu.
func (rt *Service) evictOne(l *live) {
	delete(rt.live, l.id)
	l.w.Close()
	// As before the broker: an evicted session's answered ids are gone
	// with its state (an answer to one is not found).
	rt.approvals.Forget(l.scope)
}

// appendTo appends one event of the session's incarnation l and waits
// until it is stored.
func (rt *Service) appendTo(ctx context.Context, l *live, typ string, data any) ([]event.Event, error) {
	if l.fenced.Load() {
		return nil, errFenced
	}
	b, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	return l.w.Append(ctx, event.Event{Type: typ, Data: b})
}

// sessionEvents is the store's session event log as the event log reads
// it: a session's last seq is in its header.
func sessionEvents(st Store) eventlog.Store {
	return eventlog.WithLastSeq(st, func(ctx context.Context, id string) (int64, error) {
		s, err := st.GetSession(ctx, id)
		return s.LastSeq, err
	})
}

// Active counts the sessions with a turn running or messages queued (the
// weft_sessions_active gauge).
func (rt *Service) Active() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	n := 0
	for _, l := range rt.live {
		l.mu.Lock()
		if l.running || len(l.queue) > 0 {
			n++
		}
		l.mu.Unlock()
	}
	return n
}
