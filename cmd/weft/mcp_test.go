package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/mcp"
)

// mcpTestServer is an MCP server on loopback (the Go SDK's streamable
// HTTP handler) with an echo tool and a prompt.
func mcpTestServer(t *testing.T) string {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "cli-test", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "echo", Description: "echoes text", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "poke", Description: "not read-only", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "poked"}}}, nil
		})
	s.AddPrompt(&sdk.Prompt{Name: "review", Description: "asks for a review", Arguments: []*sdk.PromptArgument{{Name: "file", Required: true}}},
		func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "Please review " + req.Params.Arguments["file"] + " carefully."}}}}, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

type listed struct {
	Servers []struct {
		Name     string `json:"name"`
		Scope    string `json:"scope"`
		Approval string `json:"approval"`
		Reason   string `json:"approval_reason"`
		State    string `json:"state"`
		Tools    int    `json:"tools"`
		Prompts  int    `json:"prompts"`
		Error    string `json:"error"`
	} `json:"servers"`
}

func mcpList(t *testing.T, env map[string]string, args ...string) listed {
	t.Helper()
	out, errOut, err := run(t, env, "", append([]string{"mcp", "list", "--json"}, args...)...)
	if err != nil {
		t.Fatalf("mcp list: %v\n%s", err, errOut)
	}
	var l listed
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return l
}

// weft mcp list / approve / reject: project servers wait for approval,
// which is remembered per workspace and configuration.
func TestMCPListApproveReject(t *testing.T) {
	t.Parallel()
	url := mcpTestServer(t)
	home, ws := t.TempDir(), t.TempDir()
	env := map[string]string{"HOME": home, "WEFT_WORKSPACE": ws}
	writeJSON(t, filepath.Join(home, ".weft", "mcp.json"), map[string]any{"mcpServers": map[string]any{"mine": map[string]any{"type": "http", "url": url}}})
	project := map[string]any{"mcpServers": map[string]any{"proj": map[string]any{"type": "http", "url": url}}}
	writeJSON(t, filepath.Join(ws, ".mcp.json"), project)

	l := mcpList(t, env)
	if len(l.Servers) != 2 {
		t.Fatalf("servers = %+v", l.Servers)
	}
	mine, proj := l.Servers[0], l.Servers[1]
	if mine.Name != "mine" || mine.Approval != "approved" || mine.State != "connected" || mine.Tools != 2 || mine.Prompts != 1 {
		t.Errorf("user server = %+v", mine)
	}
	if proj.Name != "proj" || proj.Scope != "project" || proj.Approval != "pending" || proj.State != "not started" {
		t.Errorf("project server = %+v", proj)
	}
	if _, _, err := run(t, env, "", "mcp", "approve", "mine"); err == nil || !strings.Contains(err.Error(), "only project servers need approval") {
		t.Errorf("approving a user server: %v", err)
	}
	if out, _, err := run(t, env, "", "mcp", "approve", "proj"); err != nil || !strings.Contains(out, `MCP server "proj" approved`) {
		t.Fatalf("approve: %v %s", err, out)
	}
	if p := mcpList(t, env).Servers[1]; p.Approval != "approved" || p.State != "connected" {
		t.Errorf("after approve: %+v", p)
	}
	st, err := os.Stat(filepath.Join(home, ".weft", "mcp-approvals.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("approvals file: %v %v", st, err)
	}
	// The repository changes the server: it is asked about again.
	project["mcpServers"].(map[string]any)["proj"].(map[string]any)["headers"] = map[string]string{"X-Extra": "1"}
	writeJSON(t, filepath.Join(ws, ".mcp.json"), project)
	if p := mcpList(t, env).Servers[1]; p.Approval != "pending" || !strings.Contains(p.Reason, "changed") {
		t.Errorf("after the configuration changed: %+v", p)
	}
	if _, _, err := run(t, env, "", "mcp", "reject", "proj"); err != nil {
		t.Fatal(err)
	}
	if p := mcpList(t, env).Servers[1]; p.Approval != "rejected" {
		t.Errorf("after reject: %+v", p)
	}
	// The repository's own settings cannot approve its servers; the
	// person's can.
	writeJSON(t, filepath.Join(ws, ".weft", "settings.json"), map[string]any{"enableAllProjectMcpServers": true})
	project["mcpServers"].(map[string]any)["other"] = map[string]any{"type": "http", "url": url}
	writeJSON(t, filepath.Join(ws, ".mcp.json"), project)
	if p := mcpList(t, env).Servers[1]; p.Name != "other" || p.Approval != "pending" {
		t.Errorf("project settings approved a project server: %+v", p)
	}
	writeJSON(t, filepath.Join(home, ".weft", "settings.json"), map[string]any{"enabledMcpjsonServers": []string{"other"}})
	if p := mcpList(t, env).Servers[1]; p.Approval != "approved" || !strings.Contains(p.Reason, "enabledMcpjsonServers") {
		t.Errorf("user settings did not approve: %+v", p)
	}
	if _, _, err := run(t, env, "", "mcp", "approve", "nope"); err == nil || !strings.Contains(err.Error(), `no MCP server "nope"; configured: mine, other, proj`) {
		t.Errorf("unknown server: %v", err)
	}
}

func TestMCPListInvalidConfig(t *testing.T) {
	t.Parallel()
	home, ws := t.TempDir(), t.TempDir()
	env := map[string]string{"HOME": home, "WEFT_WORKSPACE": ws}
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"bad": map[string]any{"command": "x", "args": []string{"${WEFT_TEST_UNSET_VAR}"}}}})
	l := mcpList(t, env, "--mcp-config", cfg)
	if len(l.Servers) != 1 || l.Servers[0].State != "failed" || !strings.Contains(l.Servers[0].Error, "WEFT_TEST_UNSET_VAR is not set") {
		t.Errorf("servers = %+v", l.Servers)
	}
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, env, "", "mcp", "list", "--mcp-config", cfg); err == nil || !strings.Contains(err.Error(), cfg) {
		t.Errorf("a broken --mcp-config: %v", err)
	}
}

// weft run with --mcp-config: the model calls an MCP tool through the
// same policy as any tool; deny rules written for MCP tools hold.
func TestRunWithMCPTools(t *testing.T) {
	t.Parallel()
	url := mcpTestServer(t)
	cfg := filepath.Join(t.TempDir(), "servers.json")
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"s": map[string]any{"type": "http", "url": url}}})
	deny := filepath.Join(t.TempDir(), "settings.json")
	writeJSON(t, deny, map[string]any{"permissions": map[string]any{"deny": []string{"mcp__s__*"}}})
	tests := []struct {
		name   string
		call   string
		extra  []string
		stdout []string
		absent string
	}{
		{"read-only tool runs unasked", `{"text":"hi"}`, nil, []string{"echo: hi"}, ""},
		{"a deny rule on the server", `{"text":"hi"}`, []string{"--settings", deny}, []string{"Permission denied"}, "echo: hi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.NewOpenAI(t)
			fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_1", "mcp__s__echo", tt.call)}},
				llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("done")}, Usage: llm.Usage{InputTokens: 5, OutputTokens: 1}})
			env := map[string]string{"HOME": t.TempDir(), "WEFT_WORKSPACE": t.TempDir(), "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL + "/v1"}
			args := append([]string{"run", "--model", "openai:gpt-4.1", "--mcp-config", cfg}, tt.extra...)
			out, errOut, err := run(t, env, "", append(args, "use the tool")...)
			if err != nil {
				t.Fatalf("%v\n%s\n%s", err, out, errOut)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			if tt.absent != "" && strings.Contains(out, tt.absent) {
				t.Errorf("stdout has %q:\n%s", tt.absent, out)
			}
			// The model was offered the server's tools with their schemas.
			req := fake.Requests()[0].JSON()
			var offered []string
			for _, tl := range req["tools"].([]any) {
				offered = append(offered, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
			}
			joined := strings.Join(offered, " ")
			for _, want := range []string{"mcp__s__echo", "mcp__s__poke", mcp.ListResourcesTool, mcp.ReadResourceTool} {
				if !strings.Contains(joined, want) {
					t.Errorf("the model was not offered %s: %s", want, joined)
				}
			}
		})
	}
}

// Without a terminal an unapproved project server is skipped, saying how
// to approve it.
func TestRunSkipsUnapprovedProjectServer(t *testing.T) {
	t.Parallel()
	url := mcpTestServer(t)
	ws := t.TempDir()
	writeJSON(t, filepath.Join(ws, ".mcp.json"), map[string]any{"mcpServers": map[string]any{"proj": map[string]any{"type": "http", "url": url}}})
	fake := llmtest.NewOpenAI(t)
	fake.Push(llmtest.Text("ok"))
	env := map[string]string{"HOME": t.TempDir(), "WEFT_WORKSPACE": ws, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL + "/v1"}
	_, errOut, err := run(t, env, "", "run", "--model", "openai:gpt-4.1", "hi")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, `MCP server "proj"`) || !strings.Contains(errOut, "weft mcp approve proj") {
		t.Errorf("stderr = %q", errOut)
	}
	if strings.Contains(string(fake.Requests()[0].Body), "mcp__proj__") {
		t.Error("an unapproved project server's tools were offered")
	}
}

// weft chat: /mcp__server__prompt sends the prompt's text; /help lists it.
func TestChatMCPPrompt(t *testing.T) {
	t.Parallel()
	url := mcpTestServer(t)
	cfg := filepath.Join(t.TempDir(), "servers.json")
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"s": map[string]any{"type": "http", "url": url}}})
	fake := llmtest.NewOpenAI(t)
	fake.Push(llmtest.Text("Reviewed."))
	env := map[string]string{"HOME": t.TempDir(), "WEFT_WORKSPACE": t.TempDir(), "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL + "/v1"}
	out, errOut, err := run(t, env, "/help\n/mcp__s__review\n/mcp__s__nope\n/mcp__s__review main.go\n/exit\n", "chat", "--model", "openai:gpt-4.1", "--mcp-config", cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(out, "/mcp__s__review <file>  asks for a review") {
		t.Errorf("/help does not list the prompt:\n%s", out)
	}
	if !strings.Contains(errOut, "missing file; usage: /mcp__s__review <file>") || !strings.Contains(errOut, "unknown command /mcp__s__nope") {
		t.Errorf("stderr = %s", errOut)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "Please review main.go carefully.") {
		t.Fatalf("requests = %d; first body: %s", len(reqs), func() string {
			if len(reqs) > 0 {
				return string(reqs[0].Body)
			}
			return ""
		}())
	}
	if !strings.Contains(out, "Reviewed.") {
		t.Errorf("stdout = %s", out)
	}
}

// The terminal form for an MCP server's request for input.
func TestElicitPrompt(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","required":["name"],"properties":{
		"name":{"type":"string","title":"Your name"},
		"age":{"type":"integer","minimum":0},
		"color":{"type":"string","enum":["red","green"]},
		"subscribe":{"type":"boolean","default":false}}}`)
	tests := []struct {
		name, input string
		want        mcp.ElicitResponse
		out         []string
	}{
		{"accept with re-asks", "?\na\n\nAda\nold\n36\n3\ngreen\n\n",
			mcp.ElicitResponse{Action: mcp.ActionAccept, Content: map[string]any{"name": "Ada", "age": int64(36), "color": "green", "subscribe": false}},
			[]string{`MCP server "s" asks: Tell me`, "(required)", "(want a number)", "(want one of red, green (or its number))", "1=red, 2=green"}},
		{"decline", "d\n", mcp.ElicitResponse{Action: mcp.ActionDecline}, nil},
		{"cancel", "c\n", mcp.ElicitResponse{Action: mcp.ActionCancel}, nil},
		{"end of input cancels", "a\n", mcp.ElicitResponse{Action: mcp.ActionCancel}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			ap := newApprover(newLineReader(strings.NewReader(tt.input)), &out)
			got, err := ap.elicit(context.Background(), mcp.ElicitRequest{Server: "s", Message: "Tell me", Mode: "form", Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(tt.want)
			if string(gb) != string(wb) {
				t.Errorf("answer = %s, want %s\n%s", gb, wb, out.String())
			}
			for _, s := range tt.out {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
		})
	}
	var out strings.Builder
	if got, _ := newApprover(nil, &out).elicit(context.Background(), mcp.ElicitRequest{Server: "s"}); got.Action != mcp.ActionDecline {
		t.Errorf("without a terminal: %+v", got)
	}
}

// On a terminal a pending project server is asked about once; the answer
// is remembered.
func TestAskProjectServer(t *testing.T) {
	t.Parallel()
	url := mcpTestServer(t)
	home, ws := t.TempDir(), t.TempDir()
	writeJSON(t, filepath.Join(ws, ".mcp.json"), map[string]any{"mcpServers": map[string]any{
		"yes": map[string]any{"type": "http", "url": url, "headers": map[string]string{"Authorization": "Bearer ${TOKEN}"}},
		"no":  map[string]any{"command": "npx", "args": []string{"-y", "some-server"}}}})
	env := environ{getenv: func(k string) string { return map[string]string{"HOME": home, "TOKEN": "t0k"}[k] }}
	var out strings.Builder
	env.stderr = &out
	st, err := loadMCP(env, ws, nil, mcpFlags{})
	if err != nil {
		t.Fatal(err)
	}
	lines := newLineReader(strings.NewReader("maybe\nn\ny\n"))
	reg := &tool.Registry{}
	m, err := mcpStart(env, st, reg, nil, nil, nil, lines, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, ok := reg.Get("mcp__yes__echo"); !ok {
		t.Errorf("the approved server's tools are missing; output:\n%s", out.String())
	}
	for _, s := range []string{"command: npx -y some-server", "header: Authorization: Bearer ${TOKEN}", "[y]es, remember"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("prompt lacks %q:\n%s", s, out.String())
		}
	}
	for _, s := range st.servers {
		want := map[string]mcp.Approval{"yes": mcp.Approved, "no": mcp.Rejected}[s.Name]
		if d := st.decide(s); d.Approval != want {
			t.Errorf("%s remembered as %s, want %s", s.Name, d.Approval, want)
		}
	}
}

// weft tools lists the MCP servers' tools with their schemas.
func TestToolsListsMCPTools(t *testing.T) {
	t.Parallel()
	url := mcpTestServer(t)
	cfg := filepath.Join(t.TempDir(), "servers.json")
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"s": map[string]any{"type": "http", "url": url}}})
	out, errOut, err := run(t, map[string]string{"HOME": t.TempDir()}, "", "tools", "--json", "--mcp-config", cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var got struct {
		Tools []struct {
			Name        string          `json:"name"`
			ReadOnly    bool            `json:"read_only"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range got.Tools {
		if tl.Name == "mcp__s__echo" {
			found = true
			if !tl.ReadOnly || !strings.Contains(string(tl.InputSchema), `"text"`) {
				t.Errorf("mcp__s__echo = %+v", tl)
			}
		}
	}
	if !found {
		t.Errorf("mcp__s__echo not listed:\n%s", out)
	}
}
