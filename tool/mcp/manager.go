package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/tool"
)

// Defaults of Options.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultCallTimeout  = 60 * time.Second
	DefaultMinBackoff   = 500 * time.Millisecond
	DefaultMaxBackoff   = 30 * time.Second
)

// Options configures a Manager. The zero value works: servers start in the
// current directory with the scrubbed process environment, calls time out
// after DefaultCallTimeout, and elicitations are declined.
type Options struct {
	// Workspace is where stdio servers start and the root the servers are
	// told about; Roots are further directories they are told about.
	Workspace string
	Roots     []string
	// BaseEnv is the environment stdio servers start from (nil:
	// os.Environ()); it is scrubbed with secret.ToolEnv like a Bash
	// command's, and ExtraEnv (the settings' env) is added, then the
	// server's own "env".
	BaseEnv  []string
	ExtraEnv []string
	Secrets  *secret.Set
	// Elicit shows a server's request for input to the person; nil
	// declines every request.
	Elicit ElicitFunc
	// Tokens holds OAuth tokens of HTTP servers (weft mcp login); nil
	// means none.
	Tokens *TokenStore
	Logger *slog.Logger
	// StartTimeout bounds connecting to one server (MCP_TIMEOUT in
	// Claude Code); CallTimeout is a tool call's default deadline
	// (MCP_TOOL_TIMEOUT), overridden per server by "timeout".
	StartTimeout time.Duration
	CallTimeout  time.Duration
	// OutputCap is each MCP tool's tool.Meta.OutputCap (0: the
	// framework's default).
	OutputCap int
	// MinBackoff and MaxBackoff bound the delay between reconnection
	// attempts, which doubles from the first to the second (with jitter).
	MinBackoff, MaxBackoff time.Duration
	// NoReconnect makes each server one attempt (weft mcp list).
	NoReconnect bool
	// HTTPClient is the base client of HTTP and SSE servers (nil:
	// http.DefaultClient's transport).
	HTTPClient *http.Client
	// Version is reported to servers as the client's version.
	Version string
}

// State is a server's connection state.
type State string

const (
	StateConnecting   State = "connecting"
	StateConnected    State = "connected"
	StateReconnecting State = "reconnecting"
	StateFailed       State = "failed"
	StateNeedsLogin   State = "needs-login"
	StateClosed       State = "closed"
)

// Manager connects to MCP servers and keeps their tools in a registry.
type Manager struct {
	reg  *tool.Registry
	opts Options
	log  *slog.Logger

	ctx    context.Context // the manager's lifetime
	cancel context.CancelFunc
	wg     sync.WaitGroup

	regMu sync.Mutex // serialises registry edits across servers

	mu       sync.Mutex
	servers  []*server
	byName   map[string]*server
	builtins bool // ListMcpResources and ReadMcpResource registered
	closed   bool
}

// NewManager returns a manager that registers tools in reg.
func NewManager(reg *tool.Registry, opts Options) *Manager {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(DefaultMaxBackoff, opts.MinBackoff)
	}
	if opts.BaseEnv == nil {
		opts.BaseEnv = os.Environ()
	}
	if opts.Workspace == "" {
		opts.Workspace, _ = os.Getwd()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{reg: reg, opts: opts, log: log, ctx: ctx, cancel: cancel, byName: map[string]*server{}}
}

// Start connects to servers, all at once, and returns when each has
// connected or failed its first attempt (each bounded by StartTimeout, or
// ctx). Servers with a configuration error are listed, not started.
// Failed servers keep being retried in the background unless
// Options.NoReconnect. The resource tools (ListMcpResources,
// ReadMcpResource) are registered with the first server.
func (m *Manager) Start(ctx context.Context, servers []Server) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return errors.New("mcp: manager is closed")
	}
	var started []*server
	for _, cfg := range servers {
		if _, dup := m.byName[cfg.Name]; dup {
			continue
		}
		s := newServer(m, cfg)
		m.servers = append(m.servers, s)
		m.byName[cfg.Name] = s
		if cfg.Err != nil {
			s.setState(StateFailed, cfg.Err)
			continue
		}
		started = append(started, s)
	}
	addBuiltins := !m.builtins && len(m.servers) > 0
	m.builtins = m.builtins || addBuiltins
	// Added under the lock that Close takes before it waits: an Add
	// racing a Wait at zero is a misuse of WaitGroup.
	m.wg.Add(2 * len(started))
	m.mu.Unlock()
	if addBuiltins {
		m.regMu.Lock()
		for _, t := range m.resourceTools() {
			if err := m.reg.Add(t); err != nil {
				m.log.Warn("mcp: cannot register the resource tools", "error", err)
			}
		}
		m.regMu.Unlock()
	}
	firsts := make([]chan struct{}, len(started))
	for i, s := range started {
		firsts[i] = make(chan struct{})
		go func() { defer m.wg.Done(); s.run(firsts[i]) }()
		go func() { defer m.wg.Done(); s.refresher() }()
	}
	for _, f := range firsts {
		select {
		case <-f:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close disconnects every server (stopping stdio servers' process
// groups), unregisters their tools and waits for the background work.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	servers := slices.Clone(m.servers)
	m.mu.Unlock()
	m.cancel()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); s.shutdown() }()
	}
	wg.Wait()
	m.wg.Wait()
	return nil
}

// ServerStatus is what weft mcp list shows about a server.
type ServerStatus struct {
	Name      string `json:"name"`
	Scope     Scope  `json:"scope"`
	Source    string `json:"source"`
	Transport string `json:"transport"`
	State     State  `json:"state"`
	Error     string `json:"error,omitempty"`
	Tools     int    `json:"tools"`
	// ToolNames are the tools' names in weft's registry, sorted.
	ToolNames []string `json:"tool_names,omitempty"`
	Prompts   int      `json:"prompts"`
	Resources bool     `json:"resources"`
	// Problems are tools that could not be registered (a name taken, a
	// schema weft cannot compile), one line each.
	Problems []string `json:"problems,omitempty"`
	// RetryIn is how long until the next connection attempt, while
	// reconnecting.
	RetryIn time.Duration `json:"retry_in,omitempty"`
	Stderr  string        `json:"stderr,omitempty"`
}

// Status reports every server, in the order they were started.
func (m *Manager) Status() []ServerStatus {
	m.mu.Lock()
	servers := slices.Clone(m.servers)
	m.mu.Unlock()
	out := make([]ServerStatus, 0, len(servers))
	for _, s := range servers {
		out = append(out, s.status())
	}
	return out
}

// WaitConnected waits until the named server is connected (or ctx ends).
func (m *Manager) WaitConnected(ctx context.Context, name string) error {
	m.mu.Lock()
	s := m.byName[name]
	m.mu.Unlock()
	if s == nil {
		return fmt.Errorf("no MCP server %q", name)
	}
	_, err := s.waitSession(ctx)
	return err
}

func (m *Manager) server(name string) *server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byName[name]
}

func (m *Manager) connectedServers() []*server {
	m.mu.Lock()
	servers := slices.Clone(m.servers)
	m.mu.Unlock()
	return servers
}

// server is one configured server and its connection.
type server struct {
	m      *Manager
	cfg    Server
	client *sdk.Client
	stderr *tailBuffer

	refresh chan struct{} // coalesced list_changed signals

	mu        sync.Mutex
	state     State
	err       error
	sess      *sdk.ClientSession
	cancelSes context.CancelFunc // ends the session's context
	up        chan struct{}      // closed while connected
	retryAt   time.Time
	tools     map[string]*remoteTool // our names in the registry
	problems  []string
	prompts   []*sdk.Prompt
	resources bool
	inflight  map[uint64]inflightCall
	progress  map[string]func(string)
	seq       uint64
}

type inflightCall struct {
	ctx  context.Context
	call *tool.Call
}

func newServer(m *Manager, cfg Server) *server {
	s := &server{m: m, cfg: cfg, state: StateConnecting, up: make(chan struct{}),
		refresh: make(chan struct{}, 1), tools: map[string]*remoteTool{},
		inflight: map[uint64]inflightCall{}, progress: map[string]func(string){},
		stderr: &tailBuffer{max: 4096}}
	version := m.opts.Version
	if version == "" {
		version = "dev"
	}
	s.client = sdk.NewClient(&sdk.Implementation{Name: "weft", Version: version}, &sdk.ClientOptions{
		Logger:                      m.log.With("mcp_server", cfg.Name),
		ElicitationHandler:          s.elicit,
		ToolListChangedHandler:      func(context.Context, *sdk.ToolListChangedRequest) { s.requestRefresh() },
		PromptListChangedHandler:    func(context.Context, *sdk.PromptListChangedRequest) { s.requestRefresh() },
		ProgressNotificationHandler: s.onProgress,
	})
	var roots []*sdk.Root
	for _, dir := range append([]string{m.opts.Workspace}, m.opts.Roots...) {
		if dir == "" {
			continue
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			continue
		}
		roots = append(roots, &sdk.Root{URI: "file://" + filepath.ToSlash(abs), Name: filepath.Base(abs)})
	}
	s.client.AddRoots(roots...)
	return s
}

func (s *server) setState(st State, err error) {
	s.mu.Lock()
	s.state, s.err = st, err
	s.mu.Unlock()
}

func (s *server) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ServerStatus{Name: s.cfg.Name, Scope: s.cfg.Scope, Source: s.cfg.Path, Transport: s.cfg.Transport(),
		State: s.state, Tools: len(s.tools), Prompts: len(s.prompts), Resources: s.resources,
		Problems: slices.Clone(s.problems)}
	for name := range s.tools {
		st.ToolNames = append(st.ToolNames, name)
	}
	slices.Sort(st.ToolNames)
	if s.err != nil {
		st.Error = s.err.Error()
	}
	if s.state == StateReconnecting && !s.retryAt.IsZero() {
		st.RetryIn = max(0, time.Until(s.retryAt)).Round(time.Millisecond)
	}
	if s.state != StateConnected {
		st.Stderr = strings.TrimSpace(s.stderr.String())
	}
	return st
}

// run connects, waits for the connection to end and reconnects, with
// exponential backoff between attempts, until the manager closes. first
// is closed after the first attempt.
func (s *server) run(first chan struct{}) {
	m := s.m
	signal := sync.OnceFunc(func() { close(first) })
	defer signal()
	delay := m.opts.MinBackoff
	for {
		sess, cancel, err := s.connect()
		if err == nil {
			err = s.attach(sess, cancel)
		}
		if err == nil {
			signal()
			since := time.Now()
			waitErr := sess.Wait()
			if m.ctx.Err() != nil {
				return
			}
			s.detach(sess, waitErr)
			// A connection that lasted resets the backoff; one that dies
			// right after the handshake (a crash loop) does not.
			if time.Since(since) >= m.opts.MaxBackoff {
				delay = m.opts.MinBackoff
			}
		} else {
			if m.ctx.Err() != nil {
				return
			}
			var nl *NeedsLoginError
			if errors.As(err, &nl) {
				s.setState(StateNeedsLogin, err)
				signal()
				return // nothing changes until someone logs in
			}
			s.mu.Lock()
			s.state, s.err = StateFailed, err
			if len(s.tools) > 0 {
				s.state = StateReconnecting
			}
			s.mu.Unlock()
			m.log.Warn("mcp: cannot connect", "server", s.cfg.Name, "error", err)
			signal()
		}
		if m.opts.NoReconnect {
			return
		}
		d := delay/2 + rand.N(delay/2+1) // jitter: half to all of delay
		s.mu.Lock()
		if s.state == StateFailed && len(s.tools) == 0 {
			// Never connected: still retried (the command may appear, the
			// server may come up), and listed as failed meanwhile.
			s.retryAt = time.Now().Add(d)
		} else {
			s.state = StateReconnecting
			s.retryAt = time.Now().Add(d)
		}
		s.mu.Unlock()
		select {
		case <-m.ctx.Done():
			return
		case <-time.After(d):
		}
		delay = min(delay*2, m.opts.MaxBackoff)
	}
}

// connect opens a session, bounded by StartTimeout. The session's context
// lives until cancel (an SSE stream is bound to it, so it must outlive the
// handshake).
func (s *server) connect() (*sdk.ClientSession, context.CancelFunc, error) {
	m := s.m
	t, err := s.transport()
	if err != nil {
		return nil, nil, err
	}
	s.stderr.Reset()
	ctx, cancel := context.WithCancel(m.ctx)
	timer := time.AfterFunc(m.opts.StartTimeout, cancel)
	sess, err := s.client.Connect(ctx, t, nil)
	stopped := timer.Stop()
	if err != nil || !stopped {
		cancel()
		if sess != nil {
			_ = sess.Close()
		}
		if !stopped {
			err = fmt.Errorf("no answer to the MCP handshake within %s", m.opts.StartTimeout)
		}
		var nl *NeedsLoginError
		if !errors.As(err, &nl) {
			if tail := lastLines(s.stderr.String(), 5); tail != "" {
				err = fmt.Errorf("%w\nserver stderr:\n%s", err, tail)
			}
		}
		return nil, nil, err
	}
	return sess, cancel, nil
}

// attach lists what the connected server offers and makes it current.
func (s *server) attach(sess *sdk.ClientSession, cancel context.CancelFunc) error {
	ctx, stop := context.WithTimeout(s.m.ctx, s.m.opts.StartTimeout)
	defer stop()
	tools, prompts, hasResources, err := s.list(ctx, sess)
	if err != nil {
		_ = sess.Close()
		cancel()
		return err
	}
	s.mu.Lock()
	if s.m.ctx.Err() != nil {
		// Close ran while this connection was being set up: shutdown saw
		// no session to close, so this one must not become current (run
		// would wait on it forever).
		s.mu.Unlock()
		_ = sess.Close()
		cancel()
		return errors.New("mcp: manager closed")
	}
	s.sess, s.cancelSes = sess, cancel
	s.state, s.err = StateConnected, nil
	s.retryAt = time.Time{}
	s.prompts, s.resources = prompts, hasResources
	select {
	case <-s.up:
	default:
		close(s.up)
	}
	s.mu.Unlock()
	s.syncTools(tools)
	s.m.log.Info("mcp: connected", "server", s.cfg.Name, "tools", len(tools))
	return nil
}

// list fetches the server's tools, prompts and whether it has resources.
func (s *server) list(ctx context.Context, sess *sdk.ClientSession) ([]*sdk.Tool, []*sdk.Prompt, bool, error) {
	caps := &sdk.ServerCapabilities{}
	if ir := sess.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	var tools []*sdk.Tool
	if caps.Tools != nil {
		for t, err := range sess.Tools(ctx, nil) {
			if err != nil {
				return nil, nil, false, fmt.Errorf("listing tools: %w", err)
			}
			tools = append(tools, t)
		}
	}
	var prompts []*sdk.Prompt
	if caps.Prompts != nil {
		for p, err := range sess.Prompts(ctx, nil) {
			if err != nil {
				// Prompts are a convenience; a server that lists them
				// badly still serves its tools.
				s.m.log.Warn("mcp: listing prompts failed", "server", s.cfg.Name, "error", err)
				break
			}
			prompts = append(prompts, p)
		}
	}
	return tools, prompts, caps.Resources != nil, nil
}

// detach marks the server down after its connection ended.
func (s *server) detach(sess *sdk.ClientSession, err error) {
	s.mu.Lock()
	if s.sess == sess {
		s.sess = nil
		if s.cancelSes != nil {
			s.cancelSes()
			s.cancelSes = nil
		}
		s.up = make(chan struct{})
	}
	if err == nil || errors.Is(err, sdk.ErrConnectionClosed) {
		err = errors.New("the connection closed")
	}
	if tail := lastLines(s.stderr.String(), 5); tail != "" && s.cfg.Transport() == TypeStdio {
		err = fmt.Errorf("%w (server stderr: %s)", err, strings.ReplaceAll(tail, "\n", " | "))
	}
	s.state, s.err = StateReconnecting, err
	s.mu.Unlock()
	_ = sess.Close()
	s.m.log.Warn("mcp: server disconnected; reconnecting", "server", s.cfg.Name, "error", err)
}

// lost is called when a call found the connection broken: the session is
// closed so that run notices at once and reconnects.
func (s *server) lost(sess *sdk.ClientSession, err error) {
	s.mu.Lock()
	current := s.sess == sess
	if current {
		s.state, s.err = StateReconnecting, err
	}
	s.mu.Unlock()
	if current {
		go sess.Close()
	}
}

// session returns the current session, or an error saying why there is
// none.
func (s *server) session() (*sdk.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != nil && s.state == StateConnected {
		return s.sess, nil
	}
	return nil, s.downError()
}

// downError words why the server cannot take a call; s.mu is held.
func (s *server) downError() error {
	why := "it is not connected"
	if s.err != nil {
		why = firstLine(s.err.Error())
	}
	switch s.state {
	case StateNeedsLogin:
		return fmt.Errorf("MCP server %q needs authorization: run `weft mcp login %s`", s.cfg.Name, s.cfg.Name)
	case StateClosed:
		return fmt.Errorf("MCP server %q has been shut down", s.cfg.Name)
	case StateReconnecting, StateConnecting:
		next := ""
		if !s.retryAt.IsZero() {
			next = fmt.Sprintf("; next attempt in %s", max(0, time.Until(s.retryAt)).Round(100*time.Millisecond))
		}
		return fmt.Errorf("MCP server %q is unavailable (%s); weft is reconnecting%s. Try again later", s.cfg.Name, why, next)
	}
	return fmt.Errorf("MCP server %q is unavailable: %s", s.cfg.Name, why)
}

// waitSession waits until the server is connected.
func (s *server) waitSession(ctx context.Context) (*sdk.ClientSession, error) {
	for {
		s.mu.Lock()
		if s.sess != nil && s.state == StateConnected {
			sess := s.sess
			s.mu.Unlock()
			return sess, nil
		}
		if s.state == StateNeedsLogin || s.state == StateClosed || (s.state == StateFailed && s.m.opts.NoReconnect) {
			err := s.downError()
			s.mu.Unlock()
			return nil, err
		}
		up := s.up
		s.mu.Unlock()
		select {
		case <-up:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.m.ctx.Done():
			return nil, errors.New("mcp: manager closed")
		}
	}
}

func (s *server) shutdown() {
	s.mu.Lock()
	sess := s.sess
	s.sess = nil
	s.state, s.err = StateClosed, nil
	cancel := s.cancelSes
	s.mu.Unlock()
	if sess != nil {
		_ = sess.Close()
	}
	if cancel != nil {
		cancel()
	}
	s.m.regMu.Lock()
	for name := range s.tools {
		s.m.reg.Remove(name)
	}
	s.m.regMu.Unlock()
}

func (s *server) requestRefresh() {
	select {
	case s.refresh <- struct{}{}:
	default:
	}
}

// refresher re-lists the server's tools and prompts after list_changed
// notifications, off the SDK's notification goroutine.
func (s *server) refresher() {
	for {
		select {
		case <-s.m.ctx.Done():
			return
		case <-s.refresh:
		}
		sess, err := s.session()
		if err != nil {
			continue // the next connection lists afresh
		}
		ctx, cancel := context.WithTimeout(s.m.ctx, s.m.opts.StartTimeout)
		tools, prompts, res, err := s.list(ctx, sess)
		cancel()
		if err != nil {
			s.m.log.Warn("mcp: refreshing the tool list failed", "server", s.cfg.Name, "error", err)
			continue
		}
		s.mu.Lock()
		current := s.sess == sess
		if current {
			s.prompts, s.resources = prompts, res
		}
		s.mu.Unlock()
		if current {
			s.syncTools(tools)
			s.m.log.Info("mcp: tool list changed", "server", s.cfg.Name, "tools", len(tools))
		}
	}
}

// syncTools makes the registry hold exactly the server's current tools:
// new ones are added, changed ones replaced in place (the order the model
// sees is kept), vanished ones removed. A tool whose name is taken (by
// another server's, or by two of this server's that sanitise alike) or
// whose schema does not compile is skipped and reported.
func (s *server) syncTools(list []*sdk.Tool) {
	m := s.m
	var problems []string
	want := make([]*remoteTool, 0, len(list))
	seen := map[string]string{}
	for _, t := range list {
		if t == nil {
			continue
		}
		rt, err := newRemoteTool(s, t)
		if err != nil {
			problems = append(problems, fmt.Sprintf("tool %q: %v", t.Name, err))
			continue
		}
		if other, dup := seen[rt.spec.Name]; dup {
			problems = append(problems, fmt.Sprintf("tool %q: its name %s is already used by the server's tool %q; skipped", t.Name, rt.spec.Name, other))
			continue
		}
		seen[rt.spec.Name] = t.Name
		want = append(want, rt)
	}
	m.regMu.Lock()
	defer m.regMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == StateClosed {
		return
	}
	for name := range s.tools {
		if _, keep := seen[name]; !keep {
			m.reg.Remove(name)
			delete(s.tools, name)
		}
	}
	for _, rt := range want {
		old, ours := s.tools[rt.spec.Name]
		var err error
		switch {
		case ours && old.remote == rt.remote && reflect.DeepEqual(old.spec, rt.spec):
			continue
		case ours:
			err = m.reg.Replace(rt)
		default:
			err = m.reg.Add(rt)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("tool %q: %v", rt.remote, err))
			if ours {
				m.reg.Remove(rt.spec.Name)
				delete(s.tools, rt.spec.Name)
			}
			continue
		}
		s.tools[rt.spec.Name] = rt
	}
	s.problems = problems
	for _, p := range problems {
		m.log.Warn("mcp: tool skipped", "server", s.cfg.Name, "problem", p)
	}
}

// callTool runs one call on the server. A call the connection broke under
// fails with an error saying so and is not sent again, unless the tool is
// read-only (repeating a read changes nothing): then it is sent once more
// on the next connection, within the call's deadline.
func (s *server) callTool(ctx context.Context, t *remoteTool, call *tool.Call) (tool.Result, error) {
	sess, err := s.session()
	if err != nil {
		return tool.Errorf("%s", err.Error()), nil
	}
	res, err := s.send(ctx, sess, t, call)
	if err == nil {
		return mapResult(res), nil
	}
	if ctx.Err() != nil {
		return tool.Result{}, ctx.Err() // the framework words timeouts and cancellations
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return tool.Errorf("MCP server %q refused %s: %s", s.cfg.Name, t.remote, rpcErr.Message), nil
	}
	s.lost(sess, err)
	if t.spec.ReadOnly {
		if sess2, werr := s.waitSession(ctx); werr == nil {
			res, err2 := s.send(ctx, sess2, t, call)
			if err2 == nil {
				return mapResult(res), nil
			}
			if ctx.Err() != nil {
				return tool.Result{}, ctx.Err()
			}
			err = err2
		}
		return tool.Errorf("MCP server %q disconnected during %s (%s), and again when the read-only call was repeated", s.cfg.Name, t.spec.Name, firstLine(err.Error())), nil
	}
	return tool.Errorf("MCP server %q disconnected during %s (%s). The call was not repeated: it may or may not have taken effect; weft is reconnecting", s.cfg.Name, t.spec.Name, firstLine(err.Error())), nil
}

func (s *server) send(ctx context.Context, sess *sdk.ClientSession, t *remoteTool, call *tool.Call) (*sdk.CallToolResult, error) {
	s.mu.Lock()
	s.seq++
	id := s.seq
	s.inflight[id] = inflightCall{ctx: ctx, call: call}
	token := fmt.Sprintf("weft-%d", id)
	if call.Progress != nil {
		s.progress[token] = call.Progress
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.inflight, id)
		delete(s.progress, token)
		s.mu.Unlock()
	}()
	params := &sdk.CallToolParams{Name: t.remote, Arguments: call.Input}
	params.SetProgressToken(token)
	return sess.CallTool(ctx, params)
}

func (s *server) onProgress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	token, _ := req.Params.ProgressToken.(string)
	s.mu.Lock()
	f := s.progress[token]
	s.mu.Unlock()
	if f == nil {
		return
	}
	p := req.Params
	line := fmt.Sprintf("progress %g", p.Progress)
	if p.Total > 0 {
		line = fmt.Sprintf("progress %g/%g", p.Progress, p.Total)
	}
	if p.Message != "" {
		line += ": " + p.Message
	}
	f(line)
}

// transport builds the transport for one connection attempt.
func (s *server) transport() (sdk.Transport, error) {
	m := s.m
	c := s.cfg.Config
	switch c.Type {
	case TypeStdio:
		var envList []string
		for k, v := range c.Env {
			envList = append(envList, k+"="+v)
		}
		slices.Sort(envList)
		var env []string
		if s.cfg.Scope == ScopeProject {
			// A project's own env passes the same filter as the settings'
			// env: no withheld credential under another name.
			env = secret.ToolEnv(m.opts.BaseEnv, m.opts.Secrets, m.opts.ExtraEnv, envList)
		} else {
			env = append(secret.ToolEnv(m.opts.BaseEnv, m.opts.Secrets, m.opts.ExtraEnv), envList...)
		}
		return &stdioTransport{command: c.Command, args: c.Args, dir: m.opts.Workspace, env: env, stderr: s.stderr}, nil
	case TypeHTTP:
		return &sdk.StreamableClientTransport{Endpoint: c.URL, HTTPClient: s.httpClient(), MaxRetries: 3,
			OAuthHandler: m.opts.Tokens.handler(s.cfg)}, nil
	case TypeSSE:
		return &sdk.SSEClientTransport{Endpoint: c.URL, HTTPClient: s.httpClient()}, nil
	}
	return nil, fmt.Errorf("unknown transport %q", c.Type)
}

func (s *server) httpClient() *http.Client {
	base := http.DefaultTransport
	if hc := s.m.opts.HTTPClient; hc != nil && hc.Transport != nil {
		base = hc.Transport
	}
	if len(s.cfg.Config.Headers) == 0 {
		return &http.Client{Transport: base}
	}
	return &http.Client{Transport: &headerTransport{base: base, headers: s.cfg.Config.Headers}}
}

// headerTransport adds a server's configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
