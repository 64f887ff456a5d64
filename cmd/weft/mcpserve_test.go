package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// publishNotesWorkflow saves and publishes a workflow that reads a file and
// greps it, and returns its tool name.
func publishNotesWorkflow(t *testing.T, p *serveProc, header ...string) string {
	t.Helper()
	wf := p.expect("POST", "/v1/workflows", `{"name":"read notes","description":"finds beta in a file",
		"inputSchema":{"type":"object","properties":{"file":{"type":"string"}},"required":["file"]},
		"plan":{"steps":[
			{"id":"read","tool":"Read","args":{"file_path":"{{inputs.file}}"}},
			{"id":"find","tool":"Grep","args":{"pattern":"beta","path":"{{inputs.file}}","output_mode":"content"},"dependsOn":["read"]}
		]}}`, 201, header...)
	id := wf["id"].(string)
	p.expect("POST", "/v1/workflows/"+id+"/publish", "", 200, header...)
	return "run_workflow_" + id
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func callText(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func listNames(t *testing.T, cs *sdk.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return strings.Join(names, ",")
}

// TestServeMCP: weft serve --mcp exposes the published workflows at /mcp
// behind the bearer token, and a workflow called through MCP runs.
func TestServeMCP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const token = "mcp-test-token-0123456789abcdef"
	p := startServe(t, nil, "--db", filepath.Join(dir, "weft.db"), "--workspace", dir, "--mcp",
		"--bearer-token", token, "--permission-mode", "bypass", "--mcp-tools", "Glob")
	auth := []string{"Authorization", "Bearer " + token}
	name := publishNotesWorkflow(t, p, auth...)

	// Without the token: 401, as the API.
	resp := p.request("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/mcp without the token: %d", resp.StatusCode)
	}

	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: p.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("connecting: %v\n%s", err, p.log())
	}
	defer cs.Close()
	if got := listNames(t, cs); got != "Glob,"+name && got != name+",Glob" {
		t.Fatalf("tools %q, want the workflow and Glob only", got)
	}
	out, isErr := callText(t, cs, name, map[string]any{"file": "notes.txt"})
	if isErr || !strings.Contains(out, "beta") {
		t.Fatalf("workflow through MCP: error %v, %q", isErr, out)
	}
	// A tool that is not exposed is unknown to the client: a protocol
	// error, and nothing runs.
	if res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "Bash", Arguments: map[string]any{"command": "touch pwned"}}); err == nil && !res.IsError {
		t.Fatal("Bash was callable through MCP")
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Fatal("Bash ran through MCP")
	}
}

// TestMCPServeStdio: `weft mcp serve` on a database a weft serve wrote,
// checked with the Go SDK's client and, when the reference packages are
// installed (.ci/run), with the official MCP Inspector's CLI.
func TestMCPServeStdio(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "weft.db")
	p := startServe(t, nil, "--db", db, "--workspace", dir)
	name := publishNotesWorkflow(t, p)
	// While weft serve holds the database, mcp serve refuses with a clear
	// message; after it stops, mcp serve opens it.
	held := exec.Command(weftBinary(t), "mcp", "serve", "--db", db, "--workspace", dir)
	held.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	if out, err := held.CombinedOutput(); err == nil || !strings.Contains(string(out), "weft serve") {
		t.Fatalf("mcp serve on a held database: %v\n%s", err, out)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()

	cmd := exec.Command(weftBinary(t), "mcp", "serve", "--db", db, "--workspace", dir, "--permission-mode", "bypass")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := listNames(t, cs); got != name {
		t.Fatalf("tools %q, want %q", got, name)
	}
	if out, isErr := callText(t, cs, name, map[string]any{"file": "notes.txt"}); isErr || !strings.Contains(out, "beta") {
		t.Fatalf("workflow through stdio MCP: error %v, %q", isErr, out)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}

	// The official MCP Inspector's CLI, as a second real client. The
	// workflow reads only, so the default mode runs it without asking.
	modules := os.Getenv("WEFT_MCP_NODE_MODULES")
	if modules == "" {
		t.Log("WEFT_MCP_NODE_MODULES unset (npm ci in .ci/mcp): the MCP Inspector check is skipped")
		return
	}
	inspector := filepath.Join(modules, ".bin", "mcp-inspector")
	run := func(args ...string) string {
		t.Helper()
		full := append([]string{"--cli", weftBinary(t), "mcp", "serve", "--db", db, "--workspace", dir}, args...)
		ic := exec.Command(inspector, full...)
		ic.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := ic.CombinedOutput()
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run("--method", "tools/list"); !strings.Contains(out, name) || !strings.Contains(out, "inputSchema") {
		t.Fatalf("inspector tools/list:\n%s", out)
	}
	if out := run("--method", "tools/call", "--tool-name", name, "--tool-arg", "file=notes.txt"); !strings.Contains(out, "notes.txt:2:beta") {
		t.Fatalf("inspector tools/call:\n%s", out)
	}
}
