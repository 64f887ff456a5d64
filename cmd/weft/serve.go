package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/app"
	"github.com/weft-run/weft/compact"
	"github.com/weft-run/weft/internal/lease"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/cassette"
	"github.com/weft-run/weft/llm/registry"
	"github.com/weft-run/weft/mcpserver"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/observe/promobs"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/server"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/builtin"
	"github.com/weft-run/weft/tool/mcp"
	"github.com/weft-run/weft/web"
)

// serveShutdownTimeout bounds a graceful shutdown: turns get this long to
// reach a safe point, connections to drain.
const serveShutdownTimeout = 30 * time.Second

// serveFlags are weft serve's settings.
type serveFlags struct {
	modelFlags
	config         string
	addr           string
	db             string
	workspace      string
	provider       string
	bearerToken    string
	cors           string
	allowedHosts   string
	rateLimit      int
	bodyTimeout    time.Duration
	maxConns       int
	maxConnsPerIP  int
	permissionMode string
	keepalive      time.Duration
	system         string
	maxTurns       int
	logLevel       string
	memory         bool
	metrics        bool
	noUI           bool
	uiDir          string
	// serveMCP mounts weft's MCP server at /mcp; mcpTools adds builtin
	// tools to what it exposes (mcpserve.go).
	serveMCP bool
	mcpTools string
	// Every turn's default budget (budget.go).
	maxBudgetUSD   float64
	maxTokensTotal int
	// stdio: `weft mcp serve`, MCP on stdin/stdout instead of HTTP.
	stdio bool
	// nodeID and leaseTTL name this node among those sharing a PostgreSQL
	// store and bound how long its claims outlive it (app.Config).
	nodeID   string
	leaseTTL time.Duration
	policyFlags
	promptFlags
	mcp mcpFlags
	// context is the context window's management (contextflags.go).
	context contextFlags
	// turnEnd configures the turn-end pipeline (turnend.go).
	turnEnd turnEndFlags
}

func newServeCmd(env environ) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the /v1 HTTP API (REST, SSE and WebSocket) over durable sessions in SQLite",
		Long: `serve runs weft's HTTP API: one-shot runs, sessions whose every event is
stored in SQLite and can be replayed or followed live by any number of
clients (resume with Last-Event-ID), permission requests answered over HTTP,
and a WebSocket. See the README's "weft serve" section for curl examples.

Every flag can also be set in the environment as WEFT_<NAME> (upper case,
dashes as underscores: WEFT_BEARER_TOKEN, WEFT_RATE_LIMIT) and in a config
file given with --config (or WEFT_CONFIG). A flag beats the environment,
which beats the file, which beats the default.

The config file is either a JSON object or lines of "name = value" (or
"name: value"); names are the flag names, "#" starts a comment and values
may be quoted:

  # weft.conf
  addr = 0.0.0.0:8080
  db = /var/lib/weft/weft.db
  model = anthropic:claude-sonnet-4-5
  bearer-token = "change me"
  cors = http://localhost:3000, http://localhost:5173

The server starts without any model or API key: the model is resolved per
turn (the default from --model, or the request's "model"), so a turn that
cannot get one ends with an error event saying why.

SIGINT or SIGTERM shut it down gracefully: no new connections, running
turns are cancelled at a safe point (their streams get their done event),
event streams end, the database is closed, and weft exits 0.`,
		Example: `  weft serve --model anthropic:claude-sonnet-4-5
  WEFT_BEARER_TOKEN=secret weft serve --addr 0.0.0.0:8080 --cors '*'
  weft serve --config /etc/weft.conf`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.load(cmd.Flags(), env.getenv); err != nil {
				return err
			}
			return f.run(cmd.Context(), env)
		},
	}
	f.register(cmd.Flags())
	return cmd
}

func (f *serveFlags) register(fs *pflag.FlagSet) {
	f.modelFlags.register(fs)
	fs.StringVar(&f.config, "config", "", "config file: JSON or name = value lines (see above)")
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "address to listen on (port 0 picks a free one)")
	fs.StringVar(&f.db, "db", "./weft.db", "SQLite database file (created, migrated at start; WAL mode), or a postgres:// URL of a PostgreSQL database (migrated at start)")
	fs.StringVarP(&f.workspace, "workspace", "w", "", "directory the tools work in and are confined to (default: current directory)")
	fs.StringVar(&f.provider, "provider", "", "provider of --model when it names none (anthropic, openai, gemini, ollama, ...)")
	fs.StringVar(&f.bearerToken, "bearer-token", "", "require Authorization: Bearer <token> on every request but /v1/health")
	fs.StringVar(&f.cors, "cors", "", "allowed CORS origins, comma-separated, or * for any; the only origins besides the server's own from which a browser may change anything or open the WebSocket")
	fs.StringVar(&f.allowedHosts, "allowed-hosts", "", "Host header values accepted besides localhost, *.localhost and IP addresses, comma-separated: a name, .domain for it and its subdomains, or * for any (checked without --bearer-token always, with one only when set)")
	fs.IntVar(&f.rateLimit, "rate-limit", server.DefaultRateLimit, "authenticated requests per minute per client IP, event-stream and WebSocket opens not counted (0 turns the limit off)")
	fs.DurationVar(&f.bodyTimeout, "body-timeout", server.DefaultBodyReadTimeout, "how long a client may take to send a request body")
	fs.IntVar(&f.maxConns, "max-conns", 0, "connections open at once; more are answered 503 (default: 3/4 of the file descriptor limit)")
	fs.IntVar(&f.maxConnsPerIP, "max-conns-per-ip", 0, "connections open at once per client IP (default 0: no limit; on loopback or behind a proxy every client has the same IP)")
	fs.StringVar(&f.permissionMode, "permission-mode", "", "default (every tool that is not read-only asks through a permission_request) | plan (read-only tools only) | auto (file edits in the workspace run, the rest asks) | bypass (ask nothing; only this flag or a settings file enables it) (default: the settings' defaultMode, else default)")
	f.policyFlags.register(fs, "audit log (JSON lines) of every tool-call decision, besides the database; \"off\" for none (default ~/.weft/audit.jsonl)")
	fs.DurationVar(&f.keepalive, "keepalive", server.DefaultKeepalive, "SSE heartbeat interval")
	fs.StringVar(&f.system, "system", "", "default system prompt in place of weft's own (the project's AGENTS.md/CLAUDE.md, the skills and --append-system still follow it)")
	f.promptFlags.register(fs)
	fs.IntVar(&f.maxTurns, "max-turns", 0, "default maximum model calls per turn (default 200)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug | info | warn | error")
	f.mcp.register(fs)
	f.context.register(fs)
	f.turnEnd.register(fs)
	fs.BoolVar(&f.metrics, "metrics", false, "serve Prometheus metrics at GET /metrics (behind --bearer-token like the API; series in docs/operations.md)")
	fs.BoolVar(&f.memory, "memory", false, "cross-session memory (experimental): memory_remember/search/list/forget tools, and relevant memories given to the planner")
	fs.BoolVar(&f.noUI, "no-ui", false, "do not serve the web UI at / (the API only)")
	fs.Float64Var(&f.maxBudgetUSD, "max-budget-usd", 0, "default budget of every session turn and every run in US dollars at list prices (0: none); a request's max_budget_usd replaces it; a breach nobody allows ends the turn with stop_reason \"budget\" (a run with status \"budget\")")
	fs.IntVar(&f.maxTokensTotal, "max-tokens-total", 0, "default limit on all tokens of a session turn's or a run's model calls (0: none); a request's max_tokens_total replaces it")
	fs.BoolVar(&f.serveMCP, "mcp", false, "serve weft as an MCP server at /mcp (streamable HTTP, behind --bearer-token like the API): published workflows as tools (docs/mcp.md)")
	fs.StringVar(&f.mcpTools, "mcp-tools", "", "builtin tools the MCP server exposes besides the workflows, comma-separated (e.g. Read,Grep,Glob), under the server's policy; \"\" for none")
	fs.StringVar(&f.nodeID, "node-id", "", "this node's name among the weft serve nodes sharing a PostgreSQL database (GET /v1/nodes, lease holders; default: the host name and a random suffix)")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", lease.DefaultTTL, "how long this node's claims on work (a session's turns, a run, the scheduler) outlive it when it dies without a word: another node takes the work over after it; it renews them every third of it")
	fs.StringVar(&f.uiDir, "ui-dir", "", "serve the web UI from this directory (a development build, e.g. web/dist) instead of the embedded one")
}

// envName is the environment variable of a flag.
func envName(flag string) string {
	return "WEFT_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// load fills every flag not given on the command line from the
// environment, then from the config file.
func (f *serveFlags) load(fs *pflag.FlagSet, getenv func(string) string) error {
	path := f.config
	if !fs.Changed("config") {
		path = getenv(envName("config"))
	}
	var file map[string]string
	if path != "" {
		var err error
		if file, err = readServeConfig(path); err != nil {
			return err
		}
		for name := range file {
			if fl := fs.Lookup(name); fl == nil || name == "config" || name == "help" {
				return fmt.Errorf("config %s: unknown setting %q", path, name)
			}
		}
	}
	var err error
	fs.VisitAll(func(fl *pflag.Flag) {
		if err != nil || fl.Changed || fl.Name == "config" || fl.Name == "help" {
			return
		}
		if v := getenv(envName(fl.Name)); v != "" {
			if serr := fs.Set(fl.Name, v); serr != nil {
				err = fmt.Errorf("%s=%q: %w", envName(fl.Name), v, serr)
			}
			return
		}
		if v, ok := file[fl.Name]; ok {
			if serr := fs.Set(fl.Name, v); serr != nil {
				err = fmt.Errorf("config %s: %s = %q: %w", path, fl.Name, v, serr)
			}
		}
	})
	return err
}

// readServeConfig reads a JSON object or "name = value" lines into flag
// names and values. Names may use underscores for dashes.
func readServeConfig(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	out := map[string]string{}
	norm := func(k string) string { return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(k)), "_", "-") }
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && trimmed[0] == '{' {
		var m map[string]json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
		for k, v := range m {
			s, err := configValue(v)
			if err != nil {
				return nil, fmt.Errorf("config %s: %s: %w", path, k, err)
			}
			out[norm(k)] = s
		}
		return out, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			return nil, fmt.Errorf("config %s:%d: want name = value, got %q", path, n, line)
		}
		k, v := norm(line[:i]), strings.TrimSpace(line[i+1:])
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		} else if j := strings.Index(v, " #"); j >= 0 {
			v = strings.TrimSpace(v[:j]) // a trailing comment after an unquoted value
		}
		out[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return out, nil
}

// configValue renders a JSON value as the flag's string form: strings as
// they are, numbers and booleans as written, arrays comma-joined.
func configValue(v json.RawMessage) (string, error) {
	var x any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return "", err
	}
	switch t := x.(type) {
	case string:
		return t, nil
	case json.Number:
		return t.String(), nil
	case bool:
		return strconv.FormatBool(t), nil
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			s, ok := e.(string)
			if !ok {
				return "", errors.New("want an array of strings")
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	}
	return "", errors.New("want a string, number, boolean or array of strings")
}

// modelSpec is the default model: --provider and --model combined, else
// what the API keys in the environment suggest, else none.
func (f *serveFlags) modelSpec(getenv func(string) string) (string, error) {
	spec := strings.TrimSpace(f.model)
	if f.provider != "" {
		if spec == "" {
			return "", errors.New("--provider needs --model (e.g. --provider ollama --model llama3.3)")
		}
		if p, _, err := registry.ParseSpec(spec); err != nil || !strings.EqualFold(p, f.provider) || !strings.Contains(spec, ":") {
			spec = f.provider + ":" + spec
		}
	}
	if spec == "" {
		spec = defaultModel(getenv)
	}
	return spec, nil
}

// registry builds the model registry: environment-aware, with --base-url
// and --api-key applying to the default model's provider, and the
// cassette, if any, as its HTTP client.
func (f *serveFlags) registry(spec string, getenv func(string) string) (*registry.Registry, func() error, error) {
	closeFn := func() error { return nil }
	cfg, err := f.modelFlags.registryConfig(getenv)
	if err != nil {
		return nil, closeFn, err
	}
	if f.baseURL != "" || f.apiKey != "" {
		if spec == "" {
			return nil, closeFn, errors.New("--base-url and --api-key apply to the default model's provider: set --model too")
		}
		name, _, err := registry.ParseSpec(spec)
		if err != nil {
			return nil, closeFn, err
		}
		cfg.Providers[name] = registry.ProviderConfig{BaseURL: f.baseURL, APIKey: f.apiKey}
	}
	if f.cassette != "" {
		mode, err := cassette.ParseMode(f.cassetteMode)
		if err != nil {
			return nil, closeFn, fmt.Errorf("--cassette-mode: %w", err)
		}
		c, err := cassette.Open(f.cassette, mode)
		if err != nil {
			return nil, closeFn, err
		}
		closeFn = c.Close
		cfg.HTTPClient = c.Client(nil)
		if c.Mode() == cassette.Replay {
			for _, name := range registry.BuiltinNames() {
				pc := cfg.Providers[name]
				if pc.APIKey == "" {
					pc.APIKey = "cassette-replay"
				}
				cfg.Providers[name] = pc
			}
		}
	}
	return registry.New(cfg), closeFn, nil
}

func (f *serveFlags) run(ctx context.Context, env environ) (err error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	log := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: level}))
	if f.keepalive <= 0 {
		return fmt.Errorf("--keepalive %s: want a positive duration", f.keepalive)
	}
	if f.maxTurns < 0 {
		return fmt.Errorf("--max-turns %d: want a positive number", f.maxTurns)
	}
	if f.bodyTimeout <= 0 {
		return fmt.Errorf("--body-timeout %s: want a positive duration", f.bodyTimeout)
	}
	if f.maxConns < 0 || f.maxConnsPerIP < 0 {
		return errors.New("--max-conns and --max-conns-per-ip: want a positive number (or 0 for the default)")
	}
	ws := f.workspace
	if ws == "" {
		if ws, err = os.Getwd(); err != nil {
			return err
		}
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return err
	}
	if st, err := os.Stat(ws); err != nil || !st.IsDir() {
		return fmt.Errorf("workspace %q is not a directory", ws)
	}
	spec, err := f.modelSpec(env.getenv)
	if err != nil {
		return err
	}
	models, closeModels, err := f.registry(spec, env.getenv)
	if err != nil {
		return err
	}
	defer closeModels()
	set, err := f.policyFlags.secretSet(env, map[string]string{"WEFT_BEARER_TOKEN": f.bearerToken, "WEFT_API_KEY": f.apiKey})
	if err != nil {
		return err
	}
	// From here on no log line carries a secret's value.
	log = slog.New(secret.NewHandler(log.Handler(), set))
	// The audit trail also goes to the store: app.New adds its sink.
	bp, err := f.policyFlags.build(env, ws, nil, f.permissionMode, userAuditPath(env), nil, set, log)
	if err != nil {
		return err
	}
	defer func() {
		// Normally a no-op: the app's shutdown closed the hooks already.
		hctx, cancel := context.WithTimeout(context.Background(), serveShutdownTimeout)
		defer cancel()
		if herr := bp.pol.Hooks.Close(hctx); herr != nil {
			log.Warn("hooks did not finish in time", "error", herr)
		}
		if cerr := bp.close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing the audit log: %w", cerr)
		}
	}()
	toolCfg := builtin.Config{Workspace: ws, ExtraDirs: bp.pol.ExtraDirs, Env: bp.toolEnv(), Guard: bp.merged.Guard}
	memTools, err := f.serveMemory(env, ws, bp.merged.Guard, set, log) // file memory (docs/memory.md)
	if err != nil {
		return err
	}
	pb, err := f.promptFlags.builder(env, ws, log)
	if err != nil {
		return err
	}
	describer, err := f.promptFlags.describer(models, log)
	if err != nil {
		return err
	}
	// The default model decides whether describe_image is offered;
	// without a key it is still unknown here, and that is fine.
	var defInfo llm.ModelInfo
	if spec != "" {
		if _, info, err := models.Resolve(spec); err == nil {
			defInfo = info
		}
	}
	tools, err := tool.NewRegistry(append(append(builtin.Tools(toolCfg), promptTools(pb, toolCfg, defInfo, describer)...), append(memTools, compact.Recall())...)...)
	if err != nil {
		return err
	}
	tools.SetLogger(log)
	// Every turn's agent builds its system prompt with pb (the bundle for
	// the turn's model or the request's "bundle", AGENTS.md and the file
	// memory as they are at that turn); --system stands in for weft's own
	// sections, as in weft run.
	cors, hosts := splitList(f.cors), splitList(f.allowedHosts)
	rateLimit := f.rateLimit
	if rateLimit <= 0 {
		rateLimit = -1 // the server's "off"
	}
	ui, err := f.ui()
	if err != nil {
		return err
	}
	var metrics http.Handler
	var obs observe.Observer
	var gauges *promobs.Metrics
	if f.metrics {
		m, err := promobs.New(nil)
		if err != nil {
			return err
		}
		metrics, obs, gauges = m.Handler(), m, m
	}

	acfg := app.Config{DB: f.db, Models: models, DefaultModel: spec, Workspace: ws,
		Tools: tools, ToolConfig: toolCfg, System: f.system, Prompt: pb, Vision: describer, Policy: bp.pol, AllowBypass: bp.explicitBypass,
		MaxTurns: f.maxTurns, Memory: f.memory, Observer: obs, Addr: f.addr, ShutdownTimeout: serveShutdownTimeout, Logger: log,
		NodeID: f.nodeID, LeaseTTL: f.leaseTTL,
		Server: server.Config{BearerToken: f.bearerToken, Metrics: metrics,
			CORSOrigins: cors, AllowedHosts: hosts, RateLimit: rateLimit, BodyReadTimeout: f.bodyTimeout,
			MaxConns: f.maxConns, MaxConnsPerIP: f.maxConnsPerIP, Keepalive: f.keepalive, Version: version(), UI: ui,
			Checkpoints: bp.ckptWorkspace()}}
	if gauges != nil {
		acfg.Gauges = gauges
	}
	if f.maxBudgetUSD < 0 || math.IsNaN(f.maxBudgetUSD) || math.IsInf(f.maxBudgetUSD, 0) || f.maxTokensTotal < 0 {
		return fmt.Errorf("--max-budget-usd %v / --max-tokens-total %d: want non-negative amounts", f.maxBudgetUSD, f.maxTokensTotal)
	}
	if f.leaseTTL < time.Second {
		// Renewals every third of it must outpace a loaded database.
		return fmt.Errorf("--lease-ttl %v: want at least 1s", f.leaseTTL)
	}
	acfg.Budget = agent.Budget{MaxUSD: f.maxBudgetUSD, MaxTokens: f.maxTokensTotal}
	if err := f.context.appConfig(env, &acfg); err != nil {
		return err
	}
	if acfg.TurnEnd, err = f.turnEnd.serveConfig(models, acfg.CompactModel, f.promptFlags.mem, log); err != nil {
		return err
	}
	// The MCP server's handler is built once the app exists (it needs the
	// tools and the sessions' policy); the route is fixed now.
	var mcpHandler lateHandler
	if f.serveMCP {
		acfg.Server.MCP = &mcpHandler
	}
	// GET /v1/mcp/servers lists the MCP servers once they are started below.
	mcpList := &server.MCPList{}
	acfg.Server.MCPServers = mcpList
	a, err := app.New(ctx, acfg)
	if err != nil {
		if f.stdio && errors.Is(err, sqlite.ErrLocked) {
			return fmt.Errorf("%w\n(while a weft serve holds the database, point the MCP client at that server's /mcp instead: weft serve --mcp)", err)
		}
		return err
	}
	// The Agent tool: sub-agents run within the turn's tool call (their
	// events are in the turn's stream); background ones are tasks of the
	// server's registry (GET /v1/tasks), which exists only now.
	subs := subagentManager(env, ws, a.Background.Tasks, models, log)
	a.AtShutdown("sub-agents", func(context.Context) error { subs.Close(); return nil })
	for _, t := range subs.Tools() {
		if err = tools.Add(t); err != nil {
			return errors.Join(err, a.Shutdown(context.WithoutCancel(ctx)))
		}
	}
	// MCP servers' tools join the registry every front door uses. No
	// terminal: unapproved project servers are skipped, and a session's
	// client answers elicitations over the HTTP API (docs/mcp.md).
	mcpSetup, err := loadMCP(env, ws, bp.sources, f.mcp)
	if err == nil {
		if a.Sessions != nil {
			mcpSetup.elicit = a.Sessions.Elicit
		}
		var mcpServers *mcp.Manager
		if mcpServers, err = mcpStart(env, mcpSetup, tools, bp.pol.ExtraDirs, bp.toolEnv(), set, nil, nil, log); err == nil && mcpServers != nil {
			// After the turns stop: they may call the servers' tools until then.
			a.AtShutdown("mcp servers", func(context.Context) error { return mcpServers.Close() })
		}
		if err == nil {
			mcpList.Set(mcpSetup.servers, mcpSetup.notStarted(), mcpServers, set.Redact)
		}
	}
	if err == nil && f.serveMCP {
		var ms *mcpserver.Server
		if ms, err = f.mcpServer(a, log); err == nil {
			mcpHandler.set(ms.Handler())
		}
	}
	if err == nil && f.stdio {
		return f.serveStdio(ctx, env, a, log)
	}
	var ln net.Listener
	if err == nil {
		ln, err = net.Listen("tcp", f.addr)
	}
	if err != nil {
		return errors.Join(err, a.Shutdown(context.WithoutCancel(ctx)))
	}
	if spec == "" {
		fmt.Fprintln(env.stderr, "weft serve: no default model (--model, or an API key in the environment): requests must name one in \"model\"")
	} else {
		fmt.Fprintf(env.stderr, "weft serve: default model %s\n", spec)
	}
	if f.bearerToken == "" && !isLoopback(ln.Addr()) {
		fmt.Fprintln(env.stderr, "weft serve: warning: listening beyond loopback without --bearer-token")
	}
	if f.bearerToken == "" && slices.Contains(cors, "*") {
		fmt.Fprintln(env.stderr, "weft serve: warning: --cors '*' without --bearer-token lets any web page you visit drive this server")
	}
	if f.bearerToken != "" && len(f.bearerToken) < minTokenLen {
		fmt.Fprintf(env.stderr, "weft serve: warning: the bearer token is shorter than %d characters: use a long random one (openssl rand -hex 32)\n", minTokenLen)
	}
	if f.serveMCP {
		fmt.Fprintf(env.stderr, "weft serve: MCP server at http://%s/mcp\n", ln.Addr())
	}
	if ui != nil {
		fmt.Fprintf(env.stderr, "weft serve: web UI at http://%s/\n", ln.Addr())
	}
	// Last: scripts (and the tests) take this line as "ready".
	fmt.Fprintf(env.stderr, "weft serve: listening on http://%s (database %s, workspace %s)\n", ln.Addr(), storeDisplay(f.db), ws)

	// Serve shuts down when serveCtx ends: after the signal, once the
	// line saying so is out.
	serveCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	served := make(chan struct{})
	defer close(served)
	go func() {
		select {
		case <-ctx.Done():
			fmt.Fprintln(env.stderr, "weft serve: shutting down")
			stop()
		case <-served:
		}
	}()
	if err := a.Serve(serveCtx, ln); err != nil {
		return err
	}
	fmt.Fprintln(env.stderr, "weft serve: stopped")
	return nil
}

// ui is the web UI handler: the embedded build, a directory's (--ui-dir),
// or none (--no-ui).
func (f *serveFlags) ui() (http.Handler, error) {
	switch {
	case f.noUI && f.uiDir != "":
		return nil, errors.New("--no-ui and --ui-dir contradict each other: pick one")
	case f.noUI:
		return nil, nil
	case f.uiDir != "":
		return web.DirHandler(f.uiDir)
	}
	return web.Handler(), nil
}

// minTokenLen: shorter bearer tokens get a warning. The rate limit does
// not stop guessing (see server.Config.RateLimit); length does.
const minTokenLen = 20

// splitList splits a comma-separated flag value.
func splitList(v string) []string {
	var out []string
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
