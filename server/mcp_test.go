package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/mcp"
)

// toolsMCP serves, on loopback, an MCP server with the given read-only
// tools; it returns the server's URL.
func toolsMCP(t *testing.T, names ...string) string {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "docs", Version: "1"}, nil)
	for _, n := range names {
		s.AddTool(&sdk.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: n}}}, nil
			})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil), ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// closedURL is a loopback URL nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/mcp"
}

// TestMCPServersEndpoint: GET /v1/mcp/servers lists every configured
// server with its state (a real server connected with its tools, one that
// cannot be reached failed with its error, an unapproved project server
// and one with a broken configuration disabled with the reason), behind
// the bearer token, and no secret written in a configuration shows, not
// even in an error that repeats the URL.
func TestMCPServersEndpoint(t *testing.T) {
	t.Parallel()
	const secretQ, secretPW, secretArg = "qs-5ecret-value", "pw-5ecret-value", "arg-5ecret-value"
	up := strings.Replace(toolsMCP(t, "search", "get"), "http://", "http://me:"+secretPW+"@", 1) + "?key=" + secretQ
	down := closedURL(t) + "?token=" + secretQ
	cfg := func(url string) mcp.ServerConfig {
		return mcp.ServerConfig{Type: mcp.TypeHTTP, URL: url, Headers: map[string]string{"Authorization": "Bearer " + secretArg}}
	}
	stdio := mcp.ServerConfig{Command: "./tools.sh", Args: []string{"--api-key", secretArg, "--verbose", "--token=" + secretArg, "--env=${HOME}"},
		Env: map[string]string{"TOOLS_TOKEN": secretArg}}
	configured := []mcp.Server{
		{Name: "docs", Scope: mcp.ScopeUser, Path: "/home/me/.weft/mcp.json", Raw: cfg(up), Config: cfg(up)},
		{Name: "down", Scope: mcp.ScopeCLI, Path: "cli.json", Raw: cfg(down), Config: cfg(down)},
		{Name: "repo-tools", Scope: mcp.ScopeProject, Path: ".mcp.json", Raw: stdio, Config: stdio},
		{Name: "broken", Scope: mcp.ScopeProject, Path: ".mcp.json", Raw: mcp.ServerConfig{Type: "carrier-pigeon"}, Err: errors.New(`unknown type "carrier-pigeon"`)},
	}
	list := &MCPList{}
	setup := func(reg *tool.Registry, _ *session.Service) {
		m := mcp.NewManager(reg, mcp.Options{Workspace: t.TempDir(), StartTimeout: 20 * time.Second, MinBackoff: time.Hour})
		t.Cleanup(func() { m.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Start(ctx, configured[:2]); err != nil {
			t.Fatal(err)
		}
		list.Set(configured, map[string]string{"repo-tools": "not approved"}, m, nil)
	}
	a := newAPI(t, apiOptions{token: "tok", setup: setup, config: func(c *Config) { c.MCPServers = list }})

	if resp := a.do("GET", "/v1/mcp/servers", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the token: %d, want 401", resp.StatusCode)
	}
	resp := a.do("GET", "/v1/mcp/servers", nil, "Authorization", "Bearer tok")
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/mcp/servers: %d %s", resp.StatusCode, raw)
	}
	for _, s := range []string{secretQ, secretPW, secretArg} {
		if strings.Contains(string(raw), s) {
			t.Fatalf("a secret of the configuration shows: %s", raw)
		}
	}
	var out MCPServersResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	byName := map[string]MCPServerInfo{}
	var names []string
	for _, s := range out.Servers {
		byName[s.Name] = s
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"docs", "down", "repo-tools", "broken"}) {
		t.Fatalf("servers %v, want the configuration's order", names)
	}
	docs := byName["docs"]
	if docs.State != MCPConnected || docs.Tools != 2 || !slices.Equal(docs.ToolNames, []string{"mcp__docs__get", "mcp__docs__search"}) ||
		docs.Transport != "http" || docs.Scope != "user" || !slices.Equal(docs.Headers, []string{"Authorization"}) {
		t.Fatalf("docs: %+v", docs)
	}
	if !strings.Contains(docs.URL, "me:***@") || !strings.Contains(docs.URL, "key=***") {
		t.Fatalf("docs URL %q: want the password and query masked", docs.URL)
	}
	dn := byName["down"]
	if dn.State != MCPFailed || dn.Error == "" || dn.Tools != 0 || dn.ToolNames == nil || len(dn.ToolNames) != 0 {
		t.Fatalf("down: %+v", dn)
	}
	rt := byName["repo-tools"]
	if rt.State != MCPDisabled || rt.Reason != "not approved" || rt.Command != "./tools.sh" || !slices.Equal(rt.Env, []string{"TOOLS_TOKEN"}) ||
		!slices.Equal(rt.Args, []string{"--api-key", "***", "--verbose", "--token=***", "--env=${HOME}"}) {
		t.Fatalf("repo-tools: %+v", rt)
	}
	if b := byName["broken"]; b.State != MCPDisabled || !strings.Contains(b.Error, "carrier-pigeon") {
		t.Fatalf("broken: %+v", b)
	}
}

// TestMCPServersNone: a server with no MCP configuration (no source, or
// one not set yet because weft serve is still starting) lists none.
func TestMCPServersNone(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]MCPSource{"nil": nil, "unset list": &MCPList{}} {
		a := newAPI(t, apiOptions{config: func(c *Config) { c.MCPServers = src }})
		out := a.doJSON("GET", "/v1/mcp/servers", nil, http.StatusOK)
		if s, ok := out["servers"].([]any); !ok || len(s) != 0 {
			t.Fatalf("%s: %v, want servers: []", name, out)
		}
	}
}

// TestMaskMCP: the values of credential-named options, URL passwords and
// query values are masked; ${VAR} references and other arguments are not.
func TestMaskMCP(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args, want []string
	}{
		{[]string{"-y", "server-x", "--port", "8080"}, []string{"-y", "server-x", "--port", "8080"}},
		{[]string{"--token", "abc"}, []string{"--token", "***"}},
		{[]string{"--api-key=abc", "--API_KEY", "x"}, []string{"--api-key=***", "--API_KEY", "***"}},
		{[]string{"--password", "--verbose"}, []string{"--password", "--verbose"}},
		{[]string{"--secret=${MY_SECRET}"}, []string{"--secret=${MY_SECRET}"}},
		{[]string{"--secret=${A}x${B}"}, []string{"--secret=***"}},
		{[]string{"Bearer abc.def"}, []string{"Bearer ***"}},
		{[]string{"-auth", "u:p", "tail"}, []string{"-auth", "***", "tail"}},
	} {
		if got := maskArgs(c.args); !slices.Equal(got, c.want) {
			t.Errorf("maskArgs(%q) = %q, want %q", c.args, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"https://mcp.example.com/sse", "https://mcp.example.com/sse"},
		{"https://u:p@mcp.example.com/x?a=1&b=${B}#frag", "https://u:***@mcp.example.com/x?a=***&b=${B}"},
		{"https://tok123@mcp.example.com/", "https://***@mcp.example.com/"},
		{"http://[::1:bad", "***"},
	} {
		if got := maskURL(c.in); got != c.want {
			t.Errorf("maskURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	in := MCPServerInfo{URL: "https://h/x?k=s3cr3t", Args: []string{"--key", "longsecret"}, Error: `GET https://h/x?k=s3cr3t: refused; args longsecret`}
	if got := maskMCP(in); strings.Contains(got.Error, "s3cr3t") || strings.Contains(got.Error, "longsecret") {
		t.Errorf("the error repeats a secret: %q", got.Error)
	}
}
