package mcp

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/tool"
)

// The reference servers from the npm registry, installed by .ci/run
// (npm ci in .ci/mcp) and found through WEFT_MCP_NODE_MODULES; plain
// `go test ./...` skips these tests.
const npmEnv = "WEFT_MCP_NODE_MODULES"

func npmBin(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv(npmEnv)
	if dir == "" {
		t.Skipf("%s is not set: the tests against the npm reference servers run under .ci/run (or: cd .ci/mcp && npm ci; export %s=$PWD/node_modules)", npmEnv, npmEnv)
	}
	bin := filepath.Join(dir, ".bin", name)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is set but %s is missing: %v", npmEnv, bin, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("%s is set but node is not installed", npmEnv)
	}
	return bin
}

func npmServer(name, command string, args ...string) Server {
	cfg := ServerConfig{Command: command, Args: args}
	return Server{Name: name, Scope: ScopeCLI, Path: "test", Raw: cfg, Config: withType(cfg, TypeStdio)}
}

// everythingChecks exercises server-everything through the registry:
// tools, list_changed (it registers its elicitation tools only after
// the handshake), images, resources, prompts and elicitation.
func everythingChecks(t *testing.T, m *Manager, reg *tool.Registry, name string) {
	p := "mcp__" + name + "__"
	eventually(t, "the tools server-everything adds after the handshake (list_changed)", func() bool {
		return hasTool(reg, p+"trigger-elicitation-request")
	})
	if res := call(t, reg, p+"echo", `{"message":"hello"}`); res.IsError || res.TextOf() != "Echo: hello" {
		t.Errorf("echo = %v %q", res.IsError, res.TextOf())
	}
	if res := call(t, reg, p+"echo", `{}`); !res.IsError || !strings.Contains(res.TextOf(), `missing required property "message"`) {
		t.Errorf("echo without its argument = %q (weft validates against the server's schema)", res.TextOf())
	}
	if res := call(t, reg, p+"get-sum", `{"a":2,"b":3}`); !strings.Contains(res.TextOf(), "is 5") {
		t.Errorf("get-sum = %q", res.TextOf())
	}
	if tl, _ := reg.Get(p + "get-sum"); !tl.Spec().ReadOnly {
		t.Error("get-sum's readOnlyHint did not make it read-only")
	}
	res := call(t, reg, p+"get-tiny-image", `{}`)
	images := 0
	for _, b := range res.Content {
		if b.Type == llm.BlockImage && b.MediaType == "image/png" && len(b.Data) > 0 {
			images++
		}
	}
	if images != 1 {
		t.Errorf("get-tiny-image gave %d images: %+v", images, res.Content)
	}
	list := call(t, reg, ListResourcesTool, `{"server":"`+name+`"}`)
	var listed []listedResource
	if err := json.Unmarshal([]byte(list.TextOf()), &listed); err != nil || len(listed) == 0 {
		t.Fatalf("ListMcpResources = %q", list.TextOf())
	}
	var uri string
	for _, r := range listed {
		if strings.HasPrefix(r.URI, "demo://resource/static/document/") && strings.HasSuffix(r.URI, ".md") {
			uri = r.URI
			break
		}
	}
	if uri == "" {
		t.Fatalf("no static document among %d resources", len(listed))
	}
	if res := call(t, reg, ReadResourceTool, `{"server":"`+name+`","uri":"`+uri+`"}`); res.IsError || len(res.TextOf()) < 20 {
		t.Errorf("ReadMcpResource(%s) = %v %q", uri, res.IsError, res.TextOf())
	}
	text, err := m.RunPrompt(context.Background(), "/"+p+"args-prompt Paris")
	if err != nil || text != "What's weather in Paris?" {
		t.Errorf("args-prompt = %q, %v", text, err)
	}
	if text, err := m.RunPrompt(context.Background(), "/"+p+"simple-prompt"); err != nil || !strings.Contains(text, "simple prompt") {
		t.Errorf("simple-prompt = %q, %v", text, err)
	}
	res = call(t, reg, p+"trigger-elicitation-request", `{}`)
	if res.IsError || !strings.Contains(res.TextOf(), "User provided the requested information") || !strings.Contains(res.TextOf(), "Ada") {
		t.Errorf("elicitation = %v %q", res.IsError, res.TextOf())
	}
}

func acceptAda(_ context.Context, req ElicitRequest) (ElicitResponse, error) {
	fields, err := Fields(req.Schema)
	if err != nil {
		return ElicitResponse{}, err
	}
	content := map[string]any{}
	for _, f := range fields {
		if f.Required {
			content[f.Name] = "Ada"
		}
	}
	return ElicitResponse{Action: ActionAccept, Content: content}, nil
}

func TestEverythingServerStdio(t *testing.T) {
	t.Parallel()
	bin := npmBin(t, "mcp-server-everything")
	m, reg := startManager(t, Options{Elicit: acceptAda}, npmServer("everything", bin, "stdio"))
	if st := statusOf(m, "everything"); st.State != StateConnected {
		t.Fatalf("status = %+v", st)
	}
	everythingChecks(t, m, reg, "everything")
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestEverythingServerStreamableHTTP(t *testing.T) {
	t.Parallel()
	bin := npmBin(t, "mcp-server-everything")
	port := freePort(t)
	cmd := exec.Command(bin, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	eventually(t, "the streamable HTTP server to listen", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	m, reg := startManager(t, Options{Elicit: acceptAda}, httpServer("everything", "http://"+addr+"/mcp"))
	if st := statusOf(m, "everything"); st.State != StateConnected {
		t.Fatalf("status = %+v", st)
	}
	everythingChecks(t, m, reg, "everything")
}

// server-filesystem confined to a temporary directory: reads inside work,
// reads outside are refused by the server, and path rules see the call.
func TestFilesystemServer(t *testing.T) {
	t.Parallel()
	bin := npmBin(t, "mcp-server-filesystem")
	dir := t.TempDir()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "note.txt"), []byte("inside the sandbox\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, reg := startManager(t, Options{Workspace: real}, npmServer("fs", bin, real))
	if res := call(t, reg, "mcp__fs__read_text_file", `{"path":"`+filepath.Join(real, "note.txt")+`"}`); res.IsError || !strings.Contains(res.TextOf(), "inside the sandbox") {
		t.Errorf("read inside = %v %q", res.IsError, res.TextOf())
	}
	if res := call(t, reg, "mcp__fs__read_text_file", `{"path":"`+outside+`"}`); !res.IsError || strings.Contains(res.TextOf(), "outside\n") {
		t.Errorf("read outside = %v %q, want the server's refusal", res.IsError, res.TextOf())
	}
	if res := call(t, reg, "mcp__fs__list_directory", `{"path":"`+real+`"}`); !strings.Contains(res.TextOf(), "note.txt") {
		t.Errorf("list_directory = %q", res.TextOf())
	}
	w, _ := reg.Get("mcp__fs__write_file")
	r, _ := reg.Get("mcp__fs__read_text_file")
	if w == nil || r == nil || w.Spec().ReadOnly || !w.Spec().Destructive || !r.Spec().ReadOnly {
		t.Errorf("annotations not mapped: write=%+v read=%+v", w, r)
	}
}
