// Package server is weft's HTTP front door: the /v1 API of seed 000 (REST,
// Server-Sent Events, and a WebSocket) over a session.Service. It holds no
// state of its own beyond rate-limit counters: sessions, turns, events and
// permission requests all live in the runtime, so any number of clients can
// follow one session and a restarted server carries on where it stopped.
//
// Every streamed frame is
//
//	id: <seq>
//	event: <type>
//	data: <json>
//
// where seq is the event's per-session sequence number, so a client that
// lost its connection resumes with GET /v1/sessions/{id}/events and
// Last-Event-ID (or ?after=) without gap or duplicate.
package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-run/weft/checkpoint"
	"github.com/weft-run/weft/run"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/tool"
)

// Config configures a Server. Runtime is required.
type Config struct {
	Runtime *session.Service
	// Runs serves plan-and-execute runs and saved workflows (/v1/runs,
	// /v1/workflows and seed 001's /api/agent, /api/workflows); nil
	// answers those routes with 503.
	Runs *run.Service
	// Background serves background tasks and schedules (/v1/tasks,
	// /v1/schedules and seed 001's /api/agent paths); nil answers 503.
	Background *run.Background
	// Tools are listed by GET /v1/tools; nil lists the runtime's tool set
	// as it is at each request (published workflows come and go).
	Tools []tool.Spec
	// Usage answers GET /v1/usage (the cost history, usage.go); nil
	// answers 503.
	Usage UsageSource
	// Keys answers GET /v1/keys (the API key pools, keys.go); nil
	// answers 503.
	Keys KeySource
	// Cluster answers GET /v1/nodes and names the node and its store in
	// GET /v1/health (nodes.go); nil answers 503 and leaves them out.
	Cluster Cluster
	// BearerToken, when set, is required on every request but health
	// checks and CORS preflights.
	BearerToken string
	// CORSOrigins are the origins echoed in Access-Control-Allow-Origin:
	// exact origins ("http://localhost:3000") or "*" for any. They are
	// also the only origins besides the server's own from which a browser
	// may send a state-changing request or open the WebSocket.
	CORSOrigins []string
	// AllowedHosts are Host header values accepted besides loopback names
	// (localhost, *.localhost) and IP addresses: a name ("weft.internal",
	// any port), ".example.com" for a domain and its subdomains, or "*"
	// for any. Without a BearerToken the Host is always checked (a page
	// must not reach the server by DNS rebinding); with one, only when
	// AllowedHosts is set.
	AllowedHosts []string
	// RateLimit is requests per minute per client IP: 0 means 60, a
	// negative value turns rate limiting off. It counts authenticated
	// requests except event-stream and WebSocket opens (reconnects must
	// never be refused: EventSource gives up for good on a 429); requests that
	// fail authentication have a budget of their own.
	RateLimit int
	// BodyReadTimeout bounds how long a client may take to send a request
	// body, from the end of its headers: 0 means DefaultBodyReadTimeout,
	// a negative value none. Streams are not affected: the deadline is
	// lifted once the body has been read.
	BodyReadTimeout time.Duration
	// ReadHeaderTimeout bounds how long a client may take to send request
	// headers (HTTPServer); 0 means DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers (HTTPServer); 0
	// means DefaultMaxHeaderBytes. Larger requests get a 431.
	MaxHeaderBytes int
	// MaxConns bounds the connections open at once (Listener): 0 means
	// DefaultMaxConns(), from the process's file descriptor limit, a
	// negative value no bound. Connections over it are answered 503.
	MaxConns int
	// MaxConnsPerIP bounds one client IP's connections (Listener); 0 or
	// less means no bound. Behind a proxy, and on loopback, every client
	// has the same IP, so it is off by default.
	MaxConnsPerIP int
	// Keepalive is the SSE heartbeat interval; 0 means 15s.
	Keepalive time.Duration
	// Logger receives one line per request and the errors; nil means
	// slog.Default().
	Logger  *slog.Logger
	Version string
	// UI, when set, serves every path outside /v1/ and /api/ (the web UI,
	// package web). Those two prefixes always reach the API, whatever the
	// UI would answer. The UI's requests get recovery, logging and the
	// Host check, but neither the bearer token (its files are public: the
	// UI asks for the token and its API calls carry it) nor the rate limit
	// (loading the page is a dozen requests).
	UI http.Handler
	// Metrics, when set, is served at GET /metrics, behind the same
	// authentication as the API (weft serve --metrics: Prometheus).
	Metrics http.Handler
	// MCP, when set, is weft's MCP server (streamable HTTP), served at
	// /mcp behind the same guards and bearer token as the API.
	MCP http.Handler
	// Checkpoints, when set, serves the workspace checkpoints of the
	// sessions (checkpoints.go); nil answers those routes with 503.
	Checkpoints *checkpoint.Workspace
	// MCPServers lists the MCP servers weft is a client of (GET
	// /v1/mcp/servers, mcp.go); nil lists none.
	MCPServers MCPSource
}

// DefaultRateLimit is requests per minute per client IP.
const DefaultRateLimit = 60

// DefaultKeepalive is the SSE heartbeat interval (seed 000).
const DefaultKeepalive = 15 * time.Second

// Server serves the /v1 API. Create it with New.
type Server struct {
	cfg       Config
	rt        *session.Service
	log       *slog.Logger
	keepalive time.Duration
	limiter   *rateLimiter // authenticated requests
	failures  *rateLimiter // requests that fail authentication
	toolsBody []byte
	mux       *http.ServeMux
	handler   http.Handler

	// The last health check (see health).
	healthMu  sync.Mutex
	healthAt  time.Time
	healthErr error

	// closing is cancelled by Close: every open stream (SSE, WebSocket)
	// ends cleanly when it is.
	closing context.Context
	// streams counts the SSE streams being served: Close waits for them
	// to deliver what exists (the done events of cancelled turns) before
	// the caller closes what they read from.
	streams      sync.WaitGroup
	closeStreams context.CancelFunc
	// streamsActive counts the SSE streams and WebSocket connections
	// open now (StreamsActive).
	streamsActive atomic.Int64
}

// New returns a server over cfg.Runtime. It panics without one: that is a
// programming error, not a condition to handle.
func New(cfg Config) *Server {
	if cfg.Runtime == nil {
		panic("server: Config.Runtime is required")
	}
	s := &Server{cfg: cfg, rt: cfg.Runtime, log: cfg.Logger, keepalive: cfg.Keepalive}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.keepalive <= 0 {
		s.keepalive = DefaultKeepalive
	}
	switch {
	case cfg.RateLimit == 0:
		s.limiter = newRateLimiter(DefaultRateLimit, time.Minute)
		s.failures = newRateLimiter(DefaultRateLimit, time.Minute)
	case cfg.RateLimit > 0:
		s.limiter = newRateLimiter(cfg.RateLimit, time.Minute)
		s.failures = newRateLimiter(cfg.RateLimit, time.Minute)
	}
	s.toolsBody = renderTools(cfg.Tools)
	s.closing, s.closeStreams = context.WithCancel(context.Background())

	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", s.handleHealth)
	mux.HandleFunc("GET /v1/tools", s.handleTools)
	mux.HandleFunc("POST /v1/agent/run", s.handleRun)
	mux.HandleFunc("POST /v1/sessions", s.handleCreateSession)
	mux.HandleFunc("GET /v1/sessions", s.handleListSessions)
	mux.HandleFunc("GET /v1/sessions/{id}", s.handleGetSession)
	mux.HandleFunc("DELETE /v1/sessions/{id}", s.handleDeleteSession)
	mux.HandleFunc("PATCH /v1/sessions/{id}", s.handlePatchSession) // sessionmeta.go
	mux.HandleFunc("POST /v1/sessions/{id}/messages", s.handleMessages)
	mux.HandleFunc("GET /v1/sessions/{id}/events", s.handleEvents)
	mux.HandleFunc("POST /v1/sessions/{id}/permissions/{request_id}", s.handlePermission)
	mux.HandleFunc("POST /v1/sessions/{id}/elicitations/{eid}", s.handleElicitation) // elicit.go
	mux.HandleFunc("POST /v1/sessions/{id}/cancel", s.handleCancel)
	mux.HandleFunc("POST /v1/sessions/{id}/rewind", s.handleRewind)
	s.registerCompactRoutes(mux)
	mux.HandleFunc("GET /v1/ws", s.handleWS)
	mux.HandleFunc("GET /v1/settings/permissions", s.handleGetServerPermissions)
	mux.HandleFunc("PUT /v1/settings/permissions", s.handlePutServerPermissions)
	mux.HandleFunc("GET /v1/sessions/{id}/permissions", s.handleGetSessionPermissions)
	mux.HandleFunc("PUT /v1/sessions/{id}/permissions", s.handlePutSessionPermissions)
	mux.HandleFunc("GET /v1/hooks", s.handleListHooks) // sessionmeta.go
	mux.HandleFunc("GET /v1/plugin-hooks", s.handleListPlugins)
	mux.HandleFunc("POST /v1/plugin-hooks/{id}/trust", s.handleTrustPlugin)
	mux.HandleFunc("DELETE /v1/plugin-hooks/{id}/trust", s.handleTrustPlugin)
	mux.HandleFunc("GET /v1/audit", s.handleAudit)
	mux.Handle("GET /v1/usage", UsageHandler(cfg.Usage))          // usage.go
	mux.Handle("GET /v1/keys", KeysHandler(cfg.Keys))             // keys.go
	mux.Handle("GET /v1/mcp/servers", MCPHandler(cfg.MCPServers)) // mcp.go
	mux.Handle("GET /v1/nodes", NodesHandler(cfg.Cluster))        // nodes.go
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	if cfg.MCP != nil {
		mux.Handle("/mcp", cfg.MCP)
	}
	s.registerRunRoutes(mux)
	s.registerTaskRoutes(mux)
	s.registerCheckpointRoutes(mux)
	s.mux = mux

	s.handler = chain(http.HandlerFunc(s.route), s.recoverer, s.logger, s.bodyDeadline, s.hostGuard,
		s.cors, s.originGuard, s.auth, s.rateLimit)
	if cfg.UI != nil {
		api := s.handler
		ui := chain(cfg.UI, s.recoverer, s.logger, s.hostGuard)
		s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if apiPath(r.URL.Path) || (cfg.Metrics != nil && r.URL.Path == "/metrics") || (cfg.MCP != nil && r.URL.Path == "/mcp") {
				api.ServeHTTP(w, r)
				return
			}
			ui.ServeHTTP(w, r)
		})
	}
	return s
}

// apiPath reports whether a path belongs to the API (/v1 and seed 001's
// /api), which the UI never shadows: an unknown API path is the API's 404,
// never the UI's page.
func apiPath(p string) bool {
	for _, prefix := range []string{"/v1", "/api"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok && (rest == "" || rest[0] == '/') {
			return true
		}
	}
	return false
}

// Handler returns the API (and the UI, when Config.UI is set): the routes
// wrapped in the middleware chain,
// outermost first: panic recovery, request logging with X-Request-ID, the
// body read deadline, the Host check, CORS (which answers preflights),
// the cross-origin check, bearer auth, rate limiting. Serve it with
// HTTPServer on Listener for the connection-level limits too.
func (s *Server) Handler() http.Handler { return s.handler }

// Close ends every open event stream and WebSocket cleanly. Call it on
// shutdown after the session service's Shutdown (so that turn streams get
// their done event first) and before or while http.Server.Shutdown waits:
// a stream that follows a session live never ends by itself. It returns
// once the streams have delivered what exists (bounded), so that the
// store they read from may close after it. Close is idempotent;
// requests after it still work, but streams they open end at once.
func (s *Server) Close() {
	s.closeStreams()
	// Each stream drains for at most closeDrainTimeout after this; the
	// caller then closes the store and event log they read from.
	done := make(chan struct{})
	go func() { s.streams.Wait(); close(done) }()
	t := time.NewTimer(closeDrainTimeout + time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("event streams still open after the drain timeout")
	}
}

// route dispatches to the mux, answering unknown paths and wrong methods
// with the error JSON instead of the mux's plain text.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := *r
		probe.Method = m
		if _, p := s.mux.Handler(&probe); p != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		writeError(w, http.StatusNotFound, errNotFound, "no such endpoint: "+r.Method+" "+quote(r.URL.Path))
		return
	}
	allowed := strings.Join(append(allow, http.MethodOptions), ", ")
	w.Header().Set("Allow", allowed)
	writeError(w, http.StatusMethodNotAllowed, errInvalidRequest, r.Method+" is not allowed on "+quote(r.URL.Path)+"; use "+allowed)
}

type toolJSON struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// renderTools renders GET /v1/tools.
func renderTools(specs []tool.Spec) []byte {
	out := struct {
		Tools []toolJSON `json:"tools"`
		Count int        `json:"count"`
	}{Tools: make([]toolJSON, 0, len(specs)), Count: len(specs)}
	for _, sp := range specs {
		schema := sp.InputSchema
		if len(schema) == 0 || !json.Valid(schema) {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out.Tools = append(out.Tools, toolJSON{Name: sp.Name, Description: sp.Description, InputSchema: schema})
	}
	b, err := json.Marshal(out)
	if err != nil {
		b = []byte(`{"tools":[],"count":0}`)
	}
	return append(b, '\n')
}
