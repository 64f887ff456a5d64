// Package app is weft's composition root: it opens the store, builds the
// session and run services over one approval broker, the background tasks
// and schedules, and the HTTP server, and shuts them down in order. `weft
// serve` is flag parsing around it; a program that wants "weft serve
// inside it" uses it the same way (see the example).
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/compact"
	"github.com/weft-run/weft/internal/approval"
	"github.com/weft-run/weft/internal/lease"
	"github.com/weft-run/weft/memory"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/audit"
	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/prompt"
	"github.com/weft-run/weft/run"
	"github.com/weft-run/weft/schedule"
	"github.com/weft-run/weft/server"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/redact"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/builtin"
	"github.com/weft-run/weft/turnend"
	"github.com/weft-run/weft/vision"
)

// Config is a weft server: the struct `weft serve`'s flags, WEFT_* env and
// config file map onto, plus what an embedder gives instead (a store, a
// tool registry). Models is required; everything else has a default.
type Config struct {
	// Store is the store to use; nil means open DB. A given store is the
	// caller's: Shutdown does not close it.
	Store store.Store
	// DB names the store to open when Store is nil: a SQLite file path
	// (OpenStore). "" means "./weft.db".
	DB string

	// Models resolves model specs; DefaultModel is the one used when a
	// request names none ("" means every request must name one).
	Models       session.ModelResolver
	DefaultModel string

	// Workspace is the directory the builtin tools work in; "" means the
	// current directory.
	Workspace string
	// Tools is the tool registry every session and run gets; nil means
	// the builtin tools over ToolConfig (Workspace when its own is "").
	// The background tools (task_*, schedules) and, with Memory, the
	// memory tools are added to it.
	Tools *tool.Registry
	// ToolConfig is the builtin tools' configuration; with it, Bash is
	// replaced by one that starts run_in_background commands as the
	// server's background tasks.
	ToolConfig builtin.Config
	// System is the default system prompt (session.Config.System): the
	// whole prompt without Prompt, weft's sections' stand-in with it.
	System string
	// Prompt builds each turn's system prompt (session.Config.Prompt);
	// Vision describes images for models that cannot see them.
	Prompt *prompt.Builder
	Vision *vision.Describer
	// Policy is the server-wide posture; nil means the default mode.
	// Its secrets are redacted from the store and every event; its audit
	// sink gets the store's audit trail added.
	Policy *policy.Policy
	// AllowBypass lets API callers choose the bypass mode.
	AllowBypass bool
	// MaxTurns bounds model calls per turn (0: the agent's default).
	MaxTurns int
	// PermissionTimeout is how long a permission request waits (0:
	// approval.DefaultTimeout).
	PermissionTimeout time.Duration
	// Context, CompactModel, ContextWindow and MaxContextMessages manage
	// every session's context window (session.Config's fields of the same
	// names).
	Context                           compact.Config
	CompactModel                      string
	ContextWindow, MaxContextMessages int
	// Budget is every session turn's and every run's default budget (a
	// request's max_budget_usd / max_tokens_total replace its limits).
	Budget agent.Budget
	// Memory enables cross-session memory: the memory tools, and relevant
	// memories given to the planner.
	Memory bool
	// TurnEnd is the turn-end pipeline every session turn ends with
	// (package turnend: memory extraction, consolidation, suggestions
	// events); with no step on, none runs. Its Audit defaults to the
	// policy's sink (the store's audit trail included), its Logger to
	// Logger; Shutdown stops it.
	TurnEnd turnend.Config
	// Observer receives what the sessions' turns and the runs do (observe.Observer;
	// promobs.Metrics turns it into the weft_* series); nil means none.
	Observer observe.Observer
	// Gauges, when set, gets the gauges only the application knows
	// (weft_sessions_active, weft_streams_active,
	// weft_eventlog_lag_events); promobs.Metrics implements it.
	Gauges interface {
		GaugeFunc(name, help string, fn func() float64) error
	}

	// Addr is where Run listens ("" means 127.0.0.1:8080).
	Addr string
	// Server is the HTTP server's configuration (bearer token, CORS,
	// allowed hosts, rate limit, timeouts, connection bounds, UI,
	// metrics, version); its service fields are filled in by New.
	Server server.Config

	// NodeID names this process among the nodes sharing the store ("":
	// the host name and a random suffix); LeaseTTL is how long its claims
	// on work (a session's turns, a run, the scheduler) outlive it when it
	// dies without a word (0: lease.DefaultTTL).
	NodeID   string
	LeaseTTL time.Duration

	// ShutdownTimeout bounds Run's shutdown after its context ends (0:
	// 30s).
	ShutdownTimeout time.Duration
	Logger          *slog.Logger
}

// DefaultShutdownTimeout bounds Run's graceful shutdown.
const DefaultShutdownTimeout = 30 * time.Second

// App is a built weft server. Serve or Run it, or mount Handler in a
// server of your own; Shutdown it either way.
type App struct {
	cfg      Config
	log      *slog.Logger
	Store    store.Store
	Tools    *tool.Registry
	Sessions *session.Service
	Runs     *run.Service
	// Background holds the background tasks and schedules.
	Background *run.Background
	Server     *server.Server
	// Leases claims this node's work: from the store when it is shared by
	// several nodes (store.Leases), in memory otherwise.
	Leases *lease.Keeper

	cluster *cluster // this node among the store's (cluster.go)

	closeStore func() error // when New opened the store
	turnEnd    *turnend.Pipeline
	hooks      *hook.Manager

	mu       sync.Mutex
	extra    []closer // AtShutdown's, in the order registered
	shutOnce sync.Once
	shutErr  error
}

type closer struct {
	name string
	fn   func(context.Context) error
}

// The services take the store through interfaces of their own; a
// store.Store satisfies every one of them.
var (
	_ schedule.Store = store.Store(nil)
	_ memory.Store   = store.Store(nil)
	_ audit.Store    = store.Store(nil)
)

// New builds the server: store, services, background work, HTTP handler.
// Nothing is listening yet. When a step fails, everything already started
// is stopped and closed again before New returns the error.
func New(ctx context.Context, cfg Config) (_ *App, err error) {
	if cfg.Models == nil {
		return nil, errors.New("app: Config.Models is required")
	}
	a := &App{cfg: cfg, log: cfg.Logger}
	if a.log == nil {
		a.log = slog.Default()
	}
	defer func() {
		if err != nil {
			_ = a.stop(context.WithoutCancel(ctx))
		}
	}()
	pol := policy.Policy{}
	if cfg.Policy != nil {
		pol = *cfg.Policy
	}

	st := cfg.Store
	if st == nil {
		dsn := cfg.DB
		if dsn == "" {
			dsn = "./weft.db"
		}
		opened, err := OpenStore(ctx, dsn)
		if err != nil {
			return nil, err
		}
		a.closeStore, st = opened.Close, opened
	}
	nodeID := cfg.NodeID
	if nodeID == "" {
		nodeID = DefaultNodeID()
	}
	if ls, ok := st.(store.Leases); ok {
		a.Leases = lease.NewKeeper(ls, nodeID, cfg.LeaseTTL, a.log)
	} else {
		a.Leases = lease.NewKeeper(lease.NewLocal(), nodeID, cfg.LeaseTTL, a.log)
	}
	// Sessions' commands and announcements, from the store itself (they
	// carry ids, and messages the session service redacts).
	cmds, _ := st.(store.Commands)
	notifier, _ := st.(store.Notifier)
	if f, ok := st.(store.SessionFence); ok && cmds != nil && notifier != nil {
		// A node that lost a session's lease cannot append to it.
		f.FenceSessions(session.LeasePrefix, nodeID)
	}
	if a.cluster, err = newCluster(ctx, st, a.Leases, cfg.Addr, cfg.Server.Version, a.log); err != nil {
		return nil, fmt.Errorf("app: registering node %s: %w", nodeID, err)
	}
	if pol.Secrets != nil {
		// Everything below gets only this: no row it writes holds a
		// secret (the event logs redact events before their readers see
		// them too).
		st = redact.Store(st, pol.Secrets)
	}
	a.Store = st
	if pol.Audit != nil {
		pol.Audit = audit.Composite{pol.Audit, audit.NewStoreSink(st)}
	} else {
		pol.Audit = audit.NewStoreSink(st)
	}
	a.hooks = pol.Hooks

	tools := cfg.Tools
	toolCfg := cfg.ToolConfig
	if toolCfg.Workspace == "" {
		toolCfg.Workspace = cfg.Workspace
	}
	if toolCfg.Workspace == "" {
		toolCfg.Workspace = "."
	}
	if toolCfg.Workspace, err = filepath.Abs(toolCfg.Workspace); err != nil {
		return nil, err
	}
	if tools == nil {
		if tools, err = tool.NewRegistry(builtin.Tools(toolCfg)...); err != nil {
			return nil, err
		}
		tools.SetLogger(a.log)
	}
	a.Tools = tools

	approvals := approval.New() // one broker: the sessions' questions and the runs' gates
	te := cfg.TurnEnd
	if te.Audit == nil {
		te.Audit = pol.Audit
	}
	if te.Logger == nil {
		te.Logger = a.log
	}
	a.turnEnd = turnend.New(te)
	a.Sessions, err = session.New(session.Config{Store: st, Models: cfg.Models, DefaultModel: cfg.DefaultModel, Tools: tools,
		System: cfg.System, Prompt: cfg.Prompt, Vision: cfg.Vision, Policy: &pol, AllowBypass: cfg.AllowBypass, Audits: st, MaxTurns: cfg.MaxTurns,
		PermissionTimeout: cfg.PermissionTimeout, Approvals: approvals, Observer: cfg.Observer, Logger: a.log,
		Usage: st, Budget: cfg.Budget,
		TurnEnd: a.turnEnd,
		Context: cfg.Context, CompactModel: cfg.CompactModel, ContextWindow: cfg.ContextWindow, MaxContextMessages: cfg.MaxContextMessages,
		Leases: a.Leases, Commands: cmds, Notifier: notifier})
	if err != nil {
		return nil, err
	}
	if cfg.Gauges != nil {
		sessions := a.Sessions
		if err := cfg.Gauges.GaugeFunc("sessions_active", "Sessions with a turn running or messages queued.",
			func() float64 { return float64(sessions.Active()) }); err != nil {
			return nil, err
		}
	}

	var memories func(context.Context, string) []string
	if cfg.Memory {
		mem := memory.New(st, memory.Options{})
		for _, t := range mem.Tools() {
			if err := tools.Add(t); err != nil {
				return nil, err
			}
		}
		log := a.log
		memories = func(ctx context.Context, goal string) []string {
			found, err := mem.Relevant(ctx, memory.UserFrom(ctx), goal, 5)
			if err != nil {
				log.Warn("reading memories for the planner failed", "error", err)
			}
			return found
		}
	}
	// Runs, tasks and schedules outlive ctx: Shutdown stops them.
	base := context.WithoutCancel(ctx)
	a.Runs, err = run.New(base, run.Config{Runs: st, Workflows: st, Audits: st, Tools: tools,
		Models: cfg.Models, DefaultModel: cfg.DefaultModel, Policy: a.Sessions.ServerPolicy, AllowBypass: cfg.AllowBypass,
		PermissionTimeout: cfg.PermissionTimeout, Approvals: approvals,
		SharedDirRoot: filepath.Join(toolCfg.Workspace, ".weft", "runs"), Memories: memories, Logger: a.log,
		Budget: cfg.Budget, Usage: st, Observer: cfg.Observer,
		Leases: a.Leases, Shared: a.cluster.nodes != nil})
	if err != nil {
		return nil, err
	}
	if notifier != nil && cmds != nil {
		// Runs' streams on this node follow the runs other nodes run.
		follow, stopFollow := context.WithCancel(base)
		if err := a.Runs.FollowStore(follow, notifier); err != nil {
			stopFollow()
			return nil, err
		}
		a.AtShutdown("run streams", func(context.Context) error { stopFollow(); return nil })
	}
	a.Sessions.SetFlowTools(a.Runs)
	a.Background, err = run.NewBackground(base, run.BackgroundConfig{Runs: a.Runs, Schedules: st,
		Hooks: a.Sessions.FireHook, Secrets: a.Sessions.Secrets(), Logger: a.log,
		Leases: a.Leases, Swap: a.cluster.swapper(pol.Secrets), Poll: a.cluster.poll()})
	if err != nil {
		return nil, err
	}
	for _, t := range append(a.Background.Tasks.Tools(), a.Background.Schedules.Tool()) {
		if err := tools.Add(t); err != nil {
			return nil, err
		}
	}
	// Bash's run_in_background starts tasks of the server's registry,
	// which exists only now (it needs the runs, which need the tools):
	// Bash is replaced in its place, before anything can call it.
	if _, ok := tools.Get("Bash"); ok {
		toolCfg.Background = a.Background.Tasks
		if err := tools.Replace(builtin.NewBash(toolCfg)); err != nil {
			return nil, err
		}
	}

	scfg := cfg.Server
	scfg.Runtime, scfg.Runs, scfg.Background = a.Sessions, a.Runs, a.Background
	if scfg.Cluster == nil {
		scfg.Cluster = a.cluster
	}
	if scfg.Usage == nil {
		scfg.Usage = st
	}
	if scfg.Keys == nil {
		// The registry reports its key pools (GET /v1/keys); another
		// resolver has none to show.
		if ks, ok := cfg.Models.(server.KeySource); ok {
			scfg.Keys = ks
		}
	}
	if scfg.Logger == nil {
		scfg.Logger = a.log
	}
	a.Server = server.New(scfg)
	if err := a.registerGauges(cfg.Gauges); err != nil {
		return nil, err
	}
	return a, nil
}

// OpenStore opens the store dsn names: a postgres:// or postgresql:// URL
// is a PostgreSQL database (store/postgres; `-tags nopostgres` leaves it
// out), anything else a SQLite file path (or "sqlite://" and one).
func OpenStore(ctx context.Context, dsn string) (store.Store, error) {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		st, err := openPostgres(ctx, dsn)
		if err != nil {
			return nil, fmt.Errorf("app: store %s: %w", redactDSN(dsn), err)
		}
		return st, nil
	}
	db, err := sqlite.Open(ctx, strings.TrimPrefix(dsn, "sqlite://"), sqlite.Options{})
	if err != nil {
		return nil, err
	}
	return db, nil
}

// redactDSN drops a DSN's password from an error message.
func redactDSN(dsn string) string {
	if at := strings.LastIndex(dsn, "@"); at >= 0 {
		if i := strings.Index(dsn, "://"); i >= 0 && i < at {
			return dsn[:i+3] + "…" + dsn[at:]
		}
	}
	return dsn
}

// AtShutdown registers fn to run at Shutdown after the services have
// stopped and before the hooks are waited for and the store closes (an
// MCP client whose tools turns may call until then). They run in the
// reverse order of registration.
func (a *App) AtShutdown(name string, fn func(context.Context) error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.extra = append(a.extra, closer{name, fn})
}

// Handler is the HTTP API (and UI), for a server of the caller's own.
func (a *App) Handler() http.Handler { return a.Server.Handler() }

// Serve serves ln until ctx ends or Shutdown, then shuts down (within
// Config.ShutdownTimeout). It returns nil after a clean shutdown.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	// Header and body timeouts, and no ReadTimeout or WriteTimeout: event
	// streams last as long as their clients, each frame write has its
	// own deadline instead. The listener bounds connections and answers
	// net/http's own errors in the error JSON.
	hs := a.Server.HTTPServer()
	a.cluster.setAddr(ln.Addr().String())
	ln = a.Server.Listener(ln)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		// Serve only returns early on a listener failure.
		_ = a.Shutdown(context.WithoutCancel(ctx))
		return err
	case <-ctx.Done():
	}
	timeout := a.cfg.ShutdownTimeout
	if timeout <= 0 {
		timeout = DefaultShutdownTimeout
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	// Stop accepting first, while the services stop; then wait for the
	// connections (the event streams end with the services).
	httpDone := make(chan error, 1)
	go func() { httpDone <- hs.Shutdown(sctx) }()
	err := a.Shutdown(sctx)
	if herr := <-httpDone; herr != nil {
		a.log.Warn("connections did not drain in time; closing them", "error", herr)
		_ = hs.Close()
	}
	if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}

// Run listens on Config.Addr and serves until ctx ends.
func (a *App) Run(ctx context.Context) error {
	addr := a.cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = a.Shutdown(context.WithoutCancel(ctx))
		return err
	}
	return a.Serve(ctx, ln)
}

// Shutdown stops everything New started, in order: background tasks and
// schedules, runs, turns (cancelled at a safe point; their streams get
// their done event), the event streams, what AtShutdown registered, the
// hooks still running, and the store (when New opened it). A step that
// does not finish within ctx is logged and the next one runs. Later calls
// return the first one's result.
func (a *App) Shutdown(ctx context.Context) error {
	a.shutOnce.Do(func() { a.shutErr = a.stop(ctx) })
	return a.shutErr
}

func (a *App) stop(ctx context.Context) error {
	a.mu.Lock()
	extra := a.extra
	a.extra = nil
	a.mu.Unlock()
	var errs []error
	step := func(name string, err error) {
		if err != nil {
			a.log.Warn("shutdown step did not finish", "step", name, "error", err)
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	// Background tasks and runs first: they may be waiting on turns'
	// tools no more; then turns, cancelled at a safe point (their turn
	// streams get their done event); then the streams that follow
	// sessions live, which never end by themselves.
	if a.Background != nil {
		step("background tasks", a.Background.Close(ctx))
	}
	if a.Runs != nil {
		step("runs", a.Runs.Shutdown(ctx))
	}
	if a.Sessions != nil {
		step("turns", a.Sessions.Shutdown(ctx))
	}
	// After the turns (the last one may have started its pipeline): a
	// cancelled extraction is redone another time, a cancelled dream is
	// rolled back.
	a.turnEnd.Close()
	if a.Server != nil {
		a.Server.Close()
	}
	for i := len(extra) - 1; i >= 0; i-- {
		step(extra[i].name, extra[i].fn(ctx))
	}
	// The last run_complete and observer hooks were started by the stops
	// above; they finish (each under its own timeout) before the store
	// closes.
	if a.hooks != nil {
		step("hooks", a.hooks.Close(ctx))
	}
	if a.cluster != nil {
		step("leaving the cluster", a.cluster.leave(ctx))
	}
	if a.closeStore != nil {
		step("store", a.closeStore())
	}
	return errors.Join(errs...)
}

// DefaultNodeID is a node id for a process that was given none: the host
// name and a random suffix, so that two processes on one host differ.
func DefaultNodeID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}
