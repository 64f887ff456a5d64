package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/tool"
)

func lastPid(t *testing.T, state string) int {
	t.Helper()
	pids := readLines(t, filepath.Join(state, "pids"))
	if len(pids) == 0 {
		t.Fatal("the test server wrote no pid")
	}
	pid, err := strconv.Atoi(pids[len(pids)-1])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func count(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if l == s {
			n++
		}
	}
	return n
}

// A server killed during a call that is not read-only: the call fails
// once, saying so, is never sent again, and the server comes back with
// its tools.
func TestStdioServerKilledMidCall(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	m, reg := startManager(t, Options{}, stdioServer(t, "t", state, nil))
	if st := statusOf(m, "t"); st.State != StateConnected {
		t.Fatalf("state %s (%s), want connected", st.State, st.Error)
	}
	done := make(chan tool.Result, 1)
	go func() { done <- call(t, reg, "mcp__t__hang", `{}`) }()
	eventually(t, "the hang call to reach the server", func() bool { return count(readLines(t, filepath.Join(state, "calls")), "hang") == 1 })
	first := lastPid(t, state)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var res tool.Result
	select {
	case res = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not end when its server died")
	}
	text := res.TextOf()
	if !res.IsError || !strings.Contains(text, `MCP server "t" disconnected during mcp__t__hang`) || !strings.Contains(text, "not repeated") {
		t.Fatalf("result = %v %q, want an error saying the server disconnected and the call was not repeated", res.IsError, text)
	}
	eventually(t, "the server to be restarted", func() bool {
		return len(readLines(t, filepath.Join(state, "pids"))) >= 2 && statusOf(m, "t").State == StateConnected
	})
	if !hasTool(reg, "mcp__t__echo") || !hasTool(reg, "mcp__t__hang") {
		t.Fatalf("tools after the restart: %v", names(reg))
	}
	if got := call(t, reg, "mcp__t__echo", `{"text":"back"}`); got.IsError || got.TextOf() != "echo: back" {
		t.Fatalf("echo after the restart = %q", got.TextOf())
	}
	if n := count(readLines(t, filepath.Join(state, "calls")), "hang"); n != 1 {
		t.Fatalf("the hang call reached the server %d times, want exactly once", n)
	}
}

// A read-only call whose server died under it is sent once more on the
// next connection, within its deadline.
func TestReadOnlyCallRepeatedAfterReconnect(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	_, reg := startManager(t, Options{}, stdioServer(t, "t", state, nil))
	done := make(chan tool.Result, 1)
	go func() { done <- call(t, reg, "mcp__t__read_hang", `{}`) }()
	eventually(t, "the first read to reach the server", func() bool {
		_, err := os.Stat(filepath.Join(state, "read_hang"))
		return err == nil
	})
	if err := syscall.Kill(lastPid(t, state), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.IsError || res.TextOf() != "read on the second connection" {
			t.Fatalf("result = %v %q, want the answer of the second connection", res.IsError, res.TextOf())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the read-only call did not finish")
	}
	if n := count(readLines(t, filepath.Join(state, "calls")), "read_hang"); n != 2 {
		t.Fatalf("read_hang reached the server %d times, want 2", n)
	}
}

// While a server is down its tools stay listed and answer a clear error;
// when it can start again they work again.
func TestDownServerAnswersClearError(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	refuse := filepath.Join(state, "refuse")
	srv := stdioServer(t, "t", state, nil)
	// The server refuses to start while the marker file exists.
	srv.Config.Command = "/bin/sh"
	exe := srv.Raw.Command
	srv.Config.Args = []string{"-c", `[ -e "$0" ] && { echo refusing >&2; exit 3; }; exec "$1" -test.run='^$'`, refuse, exe}
	m, reg := startManager(t, Options{}, srv)
	if err := os.WriteFile(refuse, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(lastPid(t, state), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the server to be seen down", func() bool { return statusOf(m, "t").State == StateReconnecting })
	res := call(t, reg, "mcp__t__echo", `{"text":"x"}`)
	if !res.IsError || !strings.Contains(res.TextOf(), `MCP server "t" is unavailable`) || !strings.Contains(res.TextOf(), "reconnecting") {
		t.Fatalf("call while down = %v %q, want a clear unavailable error", res.IsError, res.TextOf())
	}
	if st := statusOf(m, "t"); !strings.Contains(st.Error+st.Stderr, "refusing") && !strings.Contains(st.Error, "closed") {
		t.Logf("status while down: %+v", st)
	}
	if err := os.Remove(refuse); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the server to come back", func() bool { return statusOf(m, "t").State == StateConnected })
	if res := call(t, reg, "mcp__t__echo", `{"text":"again"}`); res.IsError || res.TextOf() != "echo: again" {
		t.Fatalf("echo after recovery = %q", res.TextOf())
	}
}

func isAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	// A zombie (exited, not yet reaped by whoever inherited it) is dead.
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// Close stops the server's whole process group, grandchildren included.
func TestCloseKillsProcessGroup(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	m, reg := startManager(t, Options{}, stdioServer(t, "t", state, nil))
	res := call(t, reg, "mcp__t__spawn", `{}`)
	child, err := strconv.Atoi(res.TextOf())
	if err != nil {
		t.Fatalf("spawn = %q", res.TextOf())
	}
	server := lastPid(t, state)
	if !isAlive(child) {
		t.Fatal("the grandchild is not running")
	}
	m.Close()
	eventually(t, "the server and its grandchild to be gone", func() bool { return !isAlive(server) && !isAlive(child) })
	if hasTool(reg, "mcp__t__echo") {
		t.Fatal("Close left the server's tools registered")
	}
}

// A stdio server gets the scrubbed tool environment plus its own env, in
// the workspace.
func TestStdioEnvironment(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	ws := t.TempDir()
	srv := stdioServer(t, "t", state, map[string]string{"SERVER_VAR": "from-config"})
	base := append(os.Environ(), "WEFT_BEARER_TOKEN=should-not-leak-1234", "OPENAI_API_KEY=sk-should-not-leak-1234", "PLAIN_VAR=plain")
	set := secret.NewSet()
	if err := set.Withhold("ANTHROPIC_API_KEY", "sk-ant-withheld-value-123"); err != nil {
		t.Fatal(err)
	}
	base = append(base, "COPY_OF_KEY=sk-ant-withheld-value-123")
	_, reg := startManager(t, Options{Workspace: ws, BaseEnv: base, Secrets: set, ExtraEnv: []string{"SETTINGS_VAR=from-settings"}}, srv)
	res := call(t, reg, "mcp__t__env", `{"names":["WEFT_BEARER_TOKEN","OPENAI_API_KEY","COPY_OF_KEY","PLAIN_VAR","SERVER_VAR","SETTINGS_VAR"]}`)
	out := res.TextOf()
	for _, want := range []string{
		`WEFT_BEARER_TOKEN="" set=false`, `OPENAI_API_KEY="" set=false`, `COPY_OF_KEY="" set=false`,
		`PLAIN_VAR="plain" set=true`, `SERVER_VAR="from-config" set=true`, `SETTINGS_VAR="from-settings" set=true`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("environment report lacks %s:\n%s", want, out)
		}
	}
	real, _ := filepath.EvalSymlinks(ws)
	if !strings.Contains(out, "cwd="+real) && !strings.Contains(out, "cwd="+ws) {
		t.Errorf("the server did not start in the workspace:\n%s", out)
	}
}

// A server that cannot start is reported with its stderr.
func TestStartFailureReported(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	srv := stdioServer(t, "t", state, map[string]string{"WEFT_MCP_TEST_CRASH_AT_START": "1"})
	m, reg := startManager(t, Options{NoReconnect: true}, srv)
	st := statusOf(m, "t")
	if st.State != StateFailed || !strings.Contains(st.Error, "crashing on purpose") {
		t.Fatalf("status = %+v, want failed with the server's stderr", st)
	}
	if hasTool(reg, "mcp__t__echo") {
		t.Fatal("a server that never started has tools")
	}
	for _, name := range []string{ListResourcesTool, ReadResourceTool} {
		if !hasTool(reg, name) {
			t.Errorf("%s is not registered", name)
		}
	}
}

func slowServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "slow", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "slow", InputSchema: objectSchema}, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
			return textResult("finally"), nil
		}
	})
	s.AddTool(&sdk.Tool{Name: "echo", InputSchema: objectSchema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult("echo: " + argText(req)), nil
		})
	return s
}

// A call past the server's timeout ends with the framework's timeout
// result, and the server stays usable.
func TestSlowCallTimesOut(t *testing.T) {
	t.Parallel()
	h := newHTTPTestServer(t, slowServer())
	srv := httpServer("s", h.url())
	srv.Raw.Timeout, srv.Config.Timeout = 300, 300
	_, reg := startManager(t, Options{}, srv)
	spec, ok := reg.Get("mcp__s__slow")
	if !ok {
		t.Fatal("mcp__s__slow is not registered")
	}
	if got := spec.Spec().Timeout; got != 300*time.Millisecond {
		t.Fatalf("Meta.Timeout = %s, want the server's 300ms", got)
	}
	start := time.Now()
	res := call(t, reg, "mcp__s__slow", `{}`)
	if !res.IsError || !strings.Contains(res.TextOf(), "timed out after 300ms") || res.Data["timed_out"] != true {
		t.Fatalf("result = %v %q %v, want a timeout", res.IsError, res.TextOf(), res.Data)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the timeout took %s", d)
	}
	if res := call(t, reg, "mcp__s__echo", `{"text":"still here"}`); res.TextOf() != "echo: still here" {
		t.Fatalf("echo after the timeout = %q", res.TextOf())
	}
}

// A streamable HTTP server that goes away and comes back (new process,
// old session unknown) is reconnected and its tools work again.
func TestHTTPServerRestart(t *testing.T) {
	t.Parallel()
	h := newHTTPTestServer(t, slowServer())
	m, reg := startManager(t, Options{}, httpServer("s", h.url()))
	h.stop()
	res := call(t, reg, "mcp__s__echo", `{"text":"x"}`)
	if !res.IsError {
		t.Fatalf("echo to a stopped server succeeded: %q", res.TextOf())
	}
	h.restart(slowServer())
	eventually(t, "the server to be reconnected", func() bool {
		return statusOf(m, "s").State == StateConnected && !call(t, reg, "mcp__s__echo", `{"text":"y"}`).IsError
	})
}

// notifications/tools/list_changed adds, replaces and removes tools in the
// registry while the session goes on.
func TestToolListChanges(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "changing", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "first", Description: "v1", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return textResult("first"), nil
	})
	h := newHTTPTestServer(t, s)
	m, reg := startManager(t, Options{}, httpServer("c", h.url()))
	if !hasTool(reg, "mcp__c__first") {
		t.Fatalf("tools = %v", names(reg))
	}
	s.AddTool(&sdk.Tool{Name: "second", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return textResult("second"), nil
	})
	eventually(t, "the added tool", func() bool { return hasTool(reg, "mcp__c__second") })
	if res := call(t, reg, "mcp__c__second", `{}`); res.TextOf() != "second" {
		t.Fatalf("second = %q", res.TextOf())
	}
	s.AddTool(&sdk.Tool{Name: "first", Description: "v2", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return textResult("first v2"), nil
	})
	eventually(t, "the changed description", func() bool {
		tl, ok := reg.Get("mcp__c__first")
		return ok && tl.Spec().Description == "v2"
	})
	if got := names(reg); slices.Index(got, "mcp__c__first") > slices.Index(got, "mcp__c__second") {
		t.Fatalf("a replaced tool moved: %v", got)
	}
	s.RemoveTools("first")
	eventually(t, "the removed tool to go", func() bool { return !hasTool(reg, "mcp__c__first") })
	if st := statusOf(m, "c"); st.Tools != 1 {
		t.Fatalf("status tools = %d, want 1", st.Tools)
	}
}

func names(reg *tool.Registry) []string {
	var out []string
	for _, s := range reg.Specs() {
		out = append(out, s.Name)
	}
	return out
}

// Permission rules written for MCP tools (Claude Code's mcp__server__*,
// seed 001's Mcp(server__*)) decide about these tools like any other.
func TestPermissionRulesApplyToMCPTools(t *testing.T) {
	t.Parallel()
	h := newHTTPTestServer(t, slowServer())
	_, reg := startManager(t, Options{}, httpServer("github", h.url()), httpServer("other", h.url()))
	mustRules := func(list ...string) []permission.Rule {
		var out []permission.Rule
		for _, r := range list {
			pr, err := permission.ParseRule(r)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, pr)
		}
		return out
	}
	tests := []struct {
		name  string
		rules permission.RuleSet
		mode  permission.Mode
		tool  string
		allow bool
		stage string
	}{
		{"deny glob", permission.RuleSet{Deny: mustRules("mcp__github__*")}, permission.ModeBypass, "mcp__github__slow", false, "deny_rule"},
		{"deny server", permission.RuleSet{Deny: mustRules("mcp__github")}, permission.ModeBypass, "mcp__github__echo", false, "deny_rule"},
		{"deny Mcp()", permission.RuleSet{Deny: mustRules("Mcp(github__*)")}, permission.ModeBypass, "mcp__github__echo", false, "deny_rule"},
		{"deny spares other server", permission.RuleSet{Deny: mustRules("mcp__github__*")}, permission.ModeBypass, "mcp__other__slow", true, "mode"},
		{"allow rule", permission.RuleSet{Allow: mustRules("Mcp(github__slow)")}, permission.ModeDefault, "mcp__github__slow", true, "allow_rule"},
		{"not read-only asks by default", permission.RuleSet{}, permission.ModeDefault, "mcp__github__slow", false, "human"},
		{"read-only hint runs", permission.RuleSet{}, permission.ModeDefault, "mcp__github__echo", true, "mode"},
		{"ask rule beats the hint", permission.RuleSet{Ask: mustRules("mcp__github__*")}, permission.ModeDefault, "mcp__github__echo", false, "human"},
		{"plan mode refuses", permission.RuleSet{}, permission.ModePlan, "mcp__github__slow", false, "mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, ok := reg.Get(tt.tool)
			if !ok {
				t.Fatalf("%s is not registered: %v", tt.tool, names(reg))
			}
			p := &policy.Policy{Mode: tt.mode, Rules: tt.rules, Workspace: t.TempDir(), Validate: reg.Validate}
			nobody := func(context.Context, policy.Call, string) (bool, string) { return false, "nobody to ask" }
			v := p.Before(context.Background(), policy.Call{ToolUseID: "1", Tool: tt.tool, Input: json.RawMessage(`{}`), Spec: tl.Spec()}, nobody, nil)
			if v.Allow != tt.allow || v.Stage != tt.stage {
				t.Fatalf("verdict allow=%v stage=%s (%s), want allow=%v stage=%s", v.Allow, v.Stage, v.Reason, tt.allow, tt.stage)
			}
		})
	}
}

// Output goes through the framework: registered secrets are redacted and
// the output cap applies.
func TestResultRedactedAndCapped(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "leaky", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "leak", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return textResult("token=tok-very-secret-42 " + strings.Repeat("x", 500)), nil
	})
	h := newHTTPTestServer(t, s)
	_, reg := startManager(t, Options{OutputCap: 100}, httpServer("l", h.url()))
	set := secret.NewSet()
	if err := set.Set("TOKEN", "tok-very-secret-42"); err != nil {
		t.Fatal(err)
	}
	res := reg.Execute(context.Background(), &tool.Call{ID: "1", Name: "mcp__l__leak", Input: json.RawMessage(`{}`), Secrets: set})
	out := res.TextOf()
	if strings.Contains(out, "tok-very-secret-42") || !strings.Contains(out, "[SECRET:TOKEN]") {
		t.Fatalf("secret not redacted: %q", out)
	}
	if res.Truncated == 0 || !strings.Contains(out, "output truncated") {
		t.Fatalf("output cap not applied: truncated=%d %q", res.Truncated, out)
	}
}

// Tools whose names collide after sanitising, or whose schemas weft will
// not compile, are skipped and reported; the rest register.
func TestToolProblemsReported(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "odd", Version: "1"}, nil)
	ok := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return textResult("ok"), nil }
	s.AddTool(&sdk.Tool{Name: "a.b", InputSchema: objectSchema}, ok)
	s.AddTool(&sdk.Tool{Name: "a_b", InputSchema: objectSchema}, ok)
	s.AddTool(&sdk.Tool{Name: "remote_ref", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"https://example.com/schema.json"}}}`)}, ok)
	s.AddTool(&sdk.Tool{Name: "fine", InputSchema: objectSchema}, ok)
	h := newHTTPTestServer(t, s)
	m, reg := startManager(t, Options{}, httpServer("o", h.url()))
	st := statusOf(m, "o")
	if !hasTool(reg, "mcp__o__fine") || hasTool(reg, "mcp__o__remote_ref") {
		t.Fatalf("tools = %v", names(reg))
	}
	joined := strings.Join(st.Problems, "\n")
	if !strings.Contains(joined, "mcp__o__a_b is already used") || !strings.Contains(joined, "external $ref") {
		t.Fatalf("problems = %q", st.Problems)
	}
	if st.Tools != 2 {
		t.Fatalf("tools registered = %d, want 2 (a.b or a_b, and fine)", st.Tools)
	}
}

// Annotations become tool.Meta.
func TestAnnotationsMapToMeta(t *testing.T) {
	t.Parallel()
	f, tr := false, true
	s := sdk.NewServer(&sdk.Implementation{Name: "ann", Version: "1"}, nil)
	ok := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return textResult("ok"), nil }
	s.AddTool(&sdk.Tool{Name: "reader", InputSchema: objectSchema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, ok)
	s.AddTool(&sdk.Tool{Name: "adder", InputSchema: objectSchema, Annotations: &sdk.ToolAnnotations{DestructiveHint: &f}}, ok)
	s.AddTool(&sdk.Tool{Name: "deleter", InputSchema: objectSchema, Annotations: &sdk.ToolAnnotations{DestructiveHint: &tr}}, ok)
	s.AddTool(&sdk.Tool{Name: "plain", InputSchema: objectSchema}, ok)
	h := newHTTPTestServer(t, s)
	_, reg := startManager(t, Options{CallTimeout: 7 * time.Second}, httpServer("a", h.url()))
	tests := []struct {
		tool                  string
		readOnly, destructive bool
		effect                tool.Effect
	}{
		{"reader", true, false, tool.EffectRead},
		{"adder", false, false, tool.EffectExternal},
		{"deleter", false, true, tool.EffectExternal},
		{"plain", false, true, tool.EffectExternal},
	}
	for _, tt := range tests {
		tl, ok := reg.Get("mcp__a__" + tt.tool)
		if !ok {
			t.Fatalf("%s missing", tt.tool)
		}
		m := tl.Spec().Meta
		if m.ReadOnly != tt.readOnly || m.Destructive != tt.destructive || m.Effect != tt.effect || m.Timeout != 7*time.Second {
			t.Errorf("%s: meta = %+v", tt.tool, m)
		}
	}
}

// Close while servers are still connecting returns, stops them and leaves
// no tools behind.
func TestCloseDuringStart(t *testing.T) {
	t.Parallel()
	for i, delay := range []time.Duration{0, 5 * time.Millisecond, 30 * time.Millisecond, 80 * time.Millisecond} {
		state := t.TempDir()
		reg := &tool.Registry{}
		m := NewManager(reg, Options{Workspace: t.TempDir()})
		started := make(chan struct{})
		go func() {
			defer close(started)
			_ = m.Start(context.Background(), []Server{stdioServer(t, "t", state, nil)})
		}()
		time.Sleep(delay)
		closed := make(chan struct{})
		go func() { m.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: Close did not return", i)
		}
		<-started
		if hasTool(reg, "mcp__t__echo") {
			t.Errorf("round %d: tools left after Close", i)
		}
		for _, p := range readLines(t, filepath.Join(state, "pids")) {
			pid, _ := strconv.Atoi(p)
			eventually(t, "the server process to be gone", func() bool { return !isAlive(pid) })
		}
	}
}
