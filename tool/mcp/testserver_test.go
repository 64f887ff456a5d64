package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-run/weft/tool"
)

// The test binary doubles as a stdio MCP server (the fault cases need a
// process to kill): with WEFT_MCP_TEST_SERVER=stdio it serves and exits.
func TestMain(m *testing.M) {
	if os.Getenv("WEFT_MCP_TEST_SERVER") == "stdio" {
		os.Exit(runStdioTestServer())
	}
	stopGrace = 300 * time.Millisecond
	os.Exit(m.Run())
}

var objectSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)

func textResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func argText(req *sdk.CallToolRequest) string {
	var in struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(req.Params.Arguments, &in)
	return in.Text
}

// runStdioTestServer serves the fault-case tools on stdin/stdout. State
// (calls made, pids) goes to files under $WEFT_MCP_TEST_STATE.
func runStdioTestServer() int {
	state := os.Getenv("WEFT_MCP_TEST_STATE")
	record := func(name, line string) {
		f, err := os.OpenFile(filepath.Join(state, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
	record("pids", strconv.Itoa(os.Getpid()))
	fmt.Fprintln(os.Stderr, "test server starting")
	if os.Getenv("WEFT_MCP_TEST_CRASH_AT_START") != "" {
		fmt.Fprintln(os.Stderr, "test server: crashing on purpose")
		return 3
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "weft-test", Version: "1"}, nil)
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true}
	s.AddTool(&sdk.Tool{Name: "echo", Description: "echoes text", InputSchema: objectSchema, Annotations: ro},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult("echo: " + argText(req)), nil
		})
	s.AddTool(&sdk.Tool{Name: "hang", Description: "records the call and never answers", InputSchema: objectSchema},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			record("calls", "hang")
			<-ctx.Done()
			return nil, ctx.Err()
		})
	s.AddTool(&sdk.Tool{Name: "read_hang", Description: "hangs the first time, answers the second", InputSchema: objectSchema, Annotations: ro},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			record("calls", "read_hang")
			marker := filepath.Join(state, "read_hang")
			if _, err := os.Stat(marker); err != nil {
				os.WriteFile(marker, nil, 0o600)
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return textResult("read on the second connection"), nil
		})
	s.AddTool(&sdk.Tool{Name: "env", Description: "reports environment variables", InputSchema: json.RawMessage(`{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"}}}}`), Annotations: ro},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct{ Names []string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			var b strings.Builder
			for _, n := range in.Names {
				v, ok := os.LookupEnv(n)
				fmt.Fprintf(&b, "%s=%q set=%v\n", n, v, ok)
			}
			wd, _ := os.Getwd()
			fmt.Fprintf(&b, "cwd=%s\n", wd)
			return textResult(b.String()), nil
		})
	s.AddTool(&sdk.Tool{Name: "spawn", Description: "starts a grandchild that sleeps", InputSchema: objectSchema},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			cmd := exec.Command("sleep", "60")
			if err := cmd.Start(); err != nil {
				return nil, err
			}
			record("children", strconv.Itoa(cmd.Process.Pid))
			return textResult(strconv.Itoa(cmd.Process.Pid)), nil
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
	}
	return 0
}

// stdioServer is the configuration of the re-executed test binary as a
// stdio server.
func stdioServer(t testing.TB, name, state string, env map[string]string) Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{"WEFT_MCP_TEST_SERVER": "stdio", "WEFT_MCP_TEST_STATE": state}
	for k, v := range env {
		e[k] = v
	}
	cfg := ServerConfig{Command: exe, Args: []string{"-test.run=^$"}, Env: e}
	return Server{Name: name, Scope: ScopeCLI, Path: "test", Raw: cfg, Config: withType(cfg, TypeStdio)}
}

func withType(c ServerConfig, typ string) ServerConfig {
	c.Type = typ
	return c
}

func httpServer(name, url string) Server {
	cfg := ServerConfig{Type: TypeHTTP, URL: url}
	return Server{Name: name, Scope: ScopeCLI, Path: "test", Raw: cfg, Config: cfg}
}

// httpTestServer is an in-process streamable HTTP MCP server on loopback
// that can be stopped and started again on the same address.
type httpTestServer struct {
	t      *testing.T
	srv    *sdk.Server
	addr   string
	mu     sync.Mutex
	hs     *http.Server
	sealed bool
}

func newHTTPTestServer(t *testing.T, srv *sdk.Server) *httpTestServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &httpTestServer{t: t, srv: srv, addr: ln.Addr().String()}
	h.serve(ln)
	t.Cleanup(h.stop)
	return h
}

func (h *httpTestServer) url() string { return "http://" + h.addr + "/mcp" }

func (h *httpTestServer) serve(ln net.Listener) {
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return h.srv }, nil)
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	h.mu.Lock()
	h.hs = hs
	h.mu.Unlock()
	go hs.Serve(ln)
}

func (h *httpTestServer) stop() {
	h.mu.Lock()
	hs := h.hs
	h.hs = nil
	h.mu.Unlock()
	if hs != nil {
		hs.Close()
	}
}

// restart serves again on the same address, with a fresh server (the old
// sessions are gone, as after a real restart).
func (h *httpTestServer) restart(srv *sdk.Server) {
	h.t.Helper()
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", h.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	h.srv = srv
	h.serve(ln)
}

// startManager starts servers into a fresh registry and closes them at
// the end of the test.
func startManager(t *testing.T, opts Options, servers ...Server) (*Manager, *tool.Registry) {
	t.Helper()
	reg := &tool.Registry{}
	if opts.Workspace == "" {
		opts.Workspace = t.TempDir()
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff, opts.MaxBackoff = 50*time.Millisecond, 400*time.Millisecond
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 20 * time.Second
	}
	m := NewManager(reg, opts)
	t.Cleanup(func() { m.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := m.Start(ctx, servers); err != nil {
		t.Fatal(err)
	}
	return m, reg
}

func call(t *testing.T, reg *tool.Registry, name, input string) tool.Result {
	t.Helper()
	return reg.Execute(context.Background(), &tool.Call{ID: "call-1", Name: name, Input: json.RawMessage(input)})
}

// eventually polls cond for up to 20 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hasTool(reg *tool.Registry, name string) bool {
	_, ok := reg.Get(name)
	return ok
}

func statusOf(m *Manager, name string) ServerStatus {
	for _, s := range m.Status() {
		if s.Name == name {
			return s
		}
	}
	return ServerStatus{}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}
