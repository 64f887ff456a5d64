package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/audit"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/session"

	"github.com/weft-run/weft/internal/sse"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/registry"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool"
)

// apiOptions configure a test server; the zero value is a server with no
// auth, no rate limit and the note tool, over the OpenAI fake.
type apiOptions struct {
	token     string
	cors      []string
	rateLimit int // 0: off in tests (the default 60 would trip busy tests)
	keepalive time.Duration
	mode      string // permission mode; "" = default
	noModel   bool   // no default model configured
	dbPath    string // "" = a fresh file in a temp dir
	fake      *llmtest.Server
	// anthropic, when set, serves "anthropic:..." models (the OpenAI
	// protocol cannot report a stop sequence).
	anthropic *llmtest.Server
	// config adjusts the server's Config before New.
	config func(*Config)
	// real serves the API as weft serve does: HTTPServer on Listener.
	real bool
	// permTimeout is the session service's PermissionTimeout (0: default).
	permTimeout time.Duration
	// setup runs once the session service exists, before the server
	// (MCP servers' tools join reg there, as in weft serve).
	setup func(reg *tool.Registry, rt *session.Service)
	// apiKeys, when set, pools these keys for the OpenAI fake.
	apiKeys []string
	// session adjusts the session service's Config before session.New.
	session func(*session.Config)
}

// api is the real handler on a loopback server over a runtime with a
// SQLite store and the OpenAI fake.
type api struct {
	t     *testing.T
	url   string
	srv   *httptest.Server
	s     *Server
	rt    *session.Service
	db    *sqlite.DB
	fake  *llmtest.Server
	logs  *logBuffer
	notes *noteTool
	path  string
}

func newAPI(t *testing.T, o apiOptions) *api {
	t.Helper()
	a := &api{t: t, logs: &logBuffer{}, notes: &noteTool{}}
	a.fake = o.fake
	if a.fake == nil {
		a.fake = llmtest.NewOpenAI(t)
	}
	a.path = o.dbPath
	if a.path == "" {
		a.path = filepath.Join(t.TempDir(), "weft.db")
	}
	db, err := sqlite.Open(context.Background(), a.path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a.db = db
	reg, err := tool.NewRegistry(a.notes.tool())
	if err != nil {
		t.Fatal(err)
	}
	providers := map[string]registry.ProviderConfig{"openai": {BaseURL: a.fake.URL + "/v1", APIKey: "k"}}
	if len(o.apiKeys) > 0 {
		providers["openai"] = registry.ProviderConfig{BaseURL: a.fake.URL + "/v1", APIKeys: o.apiKeys}
	}
	if o.anthropic != nil {
		providers["anthropic"] = registry.ProviderConfig{BaseURL: o.anthropic.URL, APIKey: "k"}
	}
	models := registry.New(registry.Config{Providers: providers, Getenv: func(string) string { return "" }})
	model := "openai:gpt-4.1"
	if o.noModel {
		model = ""
	}
	log := slog.New(slog.NewTextHandler(a.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	scfg := session.Config{Store: db, Models: models, DefaultModel: model, Tools: reg,
		Policy: &policy.Policy{Mode: permission.Mode(o.mode), Audit: audit.NewStoreSink(db)}, Audits: db, Logger: log,
		PermissionTimeout: o.permTimeout}
	if o.session != nil {
		o.session(&scfg)
	}
	rt, err := session.New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	a.rt = rt
	if o.setup != nil {
		o.setup(reg, rt)
	}
	rl := o.rateLimit
	if rl == 0 {
		rl = -1
	}
	cfg := Config{Runtime: rt, Tools: reg.Specs(), BearerToken: o.token, CORSOrigins: o.cors,
		RateLimit: rl, Keepalive: o.keepalive, Logger: log, Version: "test", Keys: models}
	if o.config != nil {
		o.config(&cfg)
	}
	a.s = New(cfg)
	if o.real {
		a.srv = httptest.NewUnstartedServer(nil)
		a.srv.Config = a.s.HTTPServer()
		a.srv.Listener = a.s.Listener(a.srv.Listener)
		a.srv.Start()
	} else {
		a.srv = httptest.NewServer(a.s.Handler())
	}
	a.url = a.srv.URL
	t.Cleanup(a.close)
	return a
}

// close shuts down like weft serve: turns, then streams, then
// connections, then the database. It is idempotent.
func (a *api) close() {
	if a.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.rt.Shutdown(ctx); err != nil {
		a.t.Errorf("runtime shutdown: %v", err)
	}
	a.s.Close()
	a.srv.Close()
	if err := a.db.Close(); err != nil {
		a.t.Errorf("closing the database: %v", err)
	}
	a.srv = nil
}

// do sends a request; body may be nil, a string or a value to marshal.
func (a *api) do(method, path string, body any, header ...string) *http.Response {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	return resp
}

// doJSON sends a request, checks the status and decodes the JSON answer.
func (a *api) doJSON(method, path string, body any, wantStatus int, header ...string) map[string]any {
	a.t.Helper()
	resp := a.do(method, path, body, header...)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantStatus {
		a.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, resp.StatusCode, wantStatus, raw)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		a.t.Fatalf("%s %s: Content-Type %q, want JSON", method, path, ct)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		a.t.Fatalf("%s %s: body is not a JSON object: %v: %s", method, path, err, raw)
	}
	return m
}

// decodeErr checks that resp is the error JSON with the status and type,
// and returns its message.
func decodeErr(t *testing.T, resp *http.Response, status int, typ string) string {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, raw)
	}
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("error body is not JSON: %v: %s", err, raw)
	}
	if e.Error.Type != typ || e.Error.Message == "" {
		t.Fatalf("error %+v, want type %s with a message", e.Error, typ)
	}
	if resp.Header.Get("X-Request-ID") == "" {
		t.Errorf("error response without X-Request-ID")
	}
	return e.Error.Message
}

// sseEvent is one frame of a stream.
type sseEvent struct {
	ID    string
	Event string
	Data  json.RawMessage
}

func (e sseEvent) field(name string) any {
	var m map[string]any
	_ = json.Unmarshal(e.Data, &m)
	return m[name]
}

// sseConn is a real SSE client over one response.
type sseConn struct {
	t    *testing.T
	resp *http.Response
	rd   *sse.Reader
}

// openSSE sends the request and checks that it opened an event stream.
func (a *api) openSSE(method, path string, body any, header ...string) *sseConn {
	a.t.Helper()
	resp := a.do(method, path, body, header...)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		a.t.Fatalf("%s %s: status %d, Content-Type %q: %s", method, path, resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	c := &sseConn{t: a.t, resp: resp, rd: sse.NewReader(resp.Body)}
	a.t.Cleanup(c.close)
	return c
}

func (c *sseConn) close() {
	c.resp.Body.Close()
}

// next returns the next frame (io.EOF at a clean end of stream).
func (c *sseConn) next() (sseEvent, error) {
	ev, err := c.rd.Next()
	if err != nil {
		return sseEvent{}, err
	}
	return sseEvent{ID: string(ev.ID), Event: string(ev.Name), Data: json.RawMessage(append([]byte(nil), ev.Data...))}, nil
}

// readUntil reads frames until one of type typ (included).
func (c *sseConn) readUntil(typ string) []sseEvent {
	c.t.Helper()
	var out []sseEvent
	for {
		ev, err := c.next()
		if err != nil {
			c.t.Fatalf("stream ended before %q (%v) after %s", typ, err, eventTypes(out))
		}
		out = append(out, ev)
		if ev.Event == typ {
			return out
		}
	}
}

// readUntilDone reads a turn stream to its done event and checks that the
// stream ends right after it.
func (c *sseConn) readUntilDone() []sseEvent {
	c.t.Helper()
	evs := c.readUntil("done")
	if ev, err := c.next(); !errors.Is(err, io.EOF) {
		c.t.Fatalf("turn stream goes on after done: %+v, %v", ev, err)
	}
	return evs
}

func eventTypes(evs []sseEvent) string {
	var b strings.Builder
	for i, e := range evs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(e.Event)
	}
	return b.String()
}

// logBuffer collects the server's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// noteTool is a tool that is not read-only, so that in default mode every
// call asks through a permission_request. It records what it wrote.
type noteTool struct {
	mu    sync.Mutex
	notes []string
}

func (n *noteTool) tool() tool.Tool {
	type in struct {
		Text string `json:"text" jsonschema:"the note"`
	}
	return tool.Func("write_note", "Writes a note.", tool.Meta{Effect: tool.EffectWrite},
		func(ctx context.Context, x in, call *tool.Call) (tool.Result, error) {
			n.mu.Lock()
			n.notes = append(n.notes, x.Text)
			n.mu.Unlock()
			return tool.Text("noted: " + x.Text), nil
		})
}

func (n *noteTool) written() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.notes...)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
