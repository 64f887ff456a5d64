package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseAndResolve(t *testing.T) {
	t.Parallel()
	user, err := ParseFile(ScopeUser, "/home/u/.weft/mcp.json", []byte(`{"mcpServers": {
		"github": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}},
		"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/src"]}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	project, err := ParseFile(ScopeProject, "/ws/.mcp.json", []byte(`{"mcpServers": {
		"fs": {"command": "node", "args": ["server.js", "${ROOT:-.}"], "env": {"LEVEL": "${LEVEL:-info}"}},
		"events": {"type": "sse", "url": "http://localhost:9000/sse", "unknownKey": true}
	}, "someOtherKey": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	servers := Resolve([]Source{user, project}, env(map[string]string{"GH_TOKEN": "ghp_x", "HOME": "/home/u"}))
	byName := map[string]Server{}
	for _, s := range servers {
		byName[s.Name] = s
		if s.Err != nil {
			t.Errorf("%s: %v", s.Name, s.Err)
		}
	}
	if len(servers) != 3 || servers[0].Name != "events" || servers[2].Name != "github" {
		t.Fatalf("servers = %+v, want events, fs, github sorted", servers)
	}
	if gh := byName["github"]; gh.Config.Headers["Authorization"] != "Bearer ghp_x" || gh.Raw.Headers["Authorization"] != "Bearer ${GH_TOKEN}" || gh.Transport() != TypeHTTP {
		t.Errorf("github = %+v", gh)
	}
	fs := byName["fs"]
	if fs.Scope != ScopeProject || fs.Config.Command != "node" || fs.Config.Args[1] != "." || fs.Config.Env["LEVEL"] != "info" {
		t.Errorf("fs: the project's definition should replace the user's, expanded: %+v", fs)
	}
	if ev := byName["events"]; ev.Config.Type != TypeSSE {
		t.Errorf("events type = %q", ev.Config.Type)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		scope  Scope
		server string
		cfg    string
		env    map[string]string
		want   string // "" = valid
	}{
		{"stdio ok", ScopeUser, "ok", `{"command":"x"}`, nil, ""},
		{"http implied by url", ScopeUser, "ok", `{"url":"https://x/mcp"}`, nil, ""},
		{"missing variable", ScopeUser, "s", `{"command":"x","args":["${NOPE}"]}`, nil, "environment variable NOPE is not set"},
		{"default used", ScopeUser, "s", `{"command":"x","args":["${NOPE:-d}"]}`, nil, ""},
		{"empty counts as unset", ScopeUser, "s", `{"command":"${EMPTY}"}`, map[string]string{"EMPTY": ""}, "EMPTY is not set"},
		{"project may not read provider keys", ScopeProject, "s", `{"command":"x","env":{"K":"${OPENAI_API_KEY}"}}`, map[string]string{"OPENAI_API_KEY": "sk-1"}, "may not read OPENAI_API_KEY"},
		{"project may not read weft settings", ScopeProject, "s", `{"type":"http","url":"https://x/${WEFT_BEARER_TOKEN}"}`, map[string]string{"WEFT_BEARER_TOKEN": "t"}, "may not read WEFT_BEARER_TOKEN"},
		{"user may pass a key on", ScopeUser, "s", `{"command":"x","env":{"K":"${OPENAI_API_KEY}"}}`, map[string]string{"OPENAI_API_KEY": "sk-1"}, ""},
		{"no command", ScopeUser, "s", `{"args":["a"]}`, nil, `needs "command"`},
		{"http without url", ScopeUser, "s", `{"type":"http"}`, nil, `needs "url"`},
		{"unknown type", ScopeUser, "s", `{"type":"ws","url":"ws://x"}`, nil, `unknown type "ws"`},
		{"bad url scheme", ScopeUser, "s", `{"type":"http","url":"file:///etc/passwd"}`, nil, "want an http:// or https:// URL"},
		{"double underscore name", ScopeUser, "a__b", `{"command":"x"}`, nil, "server name"},
		{"name with space", ScopeUser, "a b", `{"command":"x"}`, nil, "server name"},
		{"negative timeout", ScopeUser, "s", `{"command":"x","timeout":-1}`, nil, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := ParseFile(tt.scope, "f.json", []byte(`{"mcpServers":{"`+tt.server+`":`+tt.cfg+`}}`))
			if err != nil {
				t.Fatal(err)
			}
			s := Resolve([]Source{src}, env(tt.env))[0]
			switch {
			case tt.want == "" && s.Err != nil:
				t.Fatalf("unexpected error: %v", s.Err)
			case tt.want != "" && (s.Err == nil || !strings.Contains(s.Err.Error(), tt.want)):
				t.Fatalf("error = %v, want it to mention %q", s.Err, tt.want)
			}
		})
	}
}

func TestParseFileErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ data, want string }{
		{"{\n\"mcpServers\": {\n\"a\": {\"command\": \"x\",}\n}}", "line 3"},
		{`{"mcpServers": []}`, "want an object of servers"},
		{`{"mcpServers": {"a": {"args": "not-a-list"}}}`, "mcpServers.a.args"},
	} {
		if _, err := ParseFile(ScopeUser, "f.json", []byte(tt.data)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseFile(%q) = %v, want %q", tt.data, err, tt.want)
		}
	}
	if src, err := ParseFile(ScopeUser, "f.json", []byte(`{"permissions": {}}`)); err != nil || len(src.Servers) != 0 {
		t.Errorf("a file without mcpServers: %v %v", src, err)
	}
	if _, err := LoadFile(ScopeUser, filepath.Join(t.TempDir(), "none.json"), true); err != nil {
		t.Errorf("optional missing file: %v", err)
	}
	if _, err := LoadFile(ScopeCLI, filepath.Join(t.TempDir(), "none.json"), false); err == nil {
		t.Error("a missing --mcp-config file is not an error")
	}
}

func TestHashIgnoresFormatting(t *testing.T) {
	t.Parallel()
	a, _ := ParseFile(ScopeProject, "a", []byte(`{"mcpServers":{"s":{"command":"x","env":{"A":"1","B":"2"}}}}`))
	b, _ := ParseFile(ScopeProject, "b", []byte("{\"mcpServers\":{\"s\":{\n \"env\":{\"B\":\"2\",\"A\":\"1\"},\n \"command\":\"x\"}}}"))
	c, _ := ParseFile(ScopeProject, "c", []byte(`{"mcpServers":{"s":{"command":"y","env":{"A":"1","B":"2"}}}}`))
	ha := Resolve([]Source{a}, nil)[0].Hash()
	if hb := Resolve([]Source{b}, nil)[0].Hash(); ha != hb {
		t.Error("reformatting changed the hash")
	}
	if hc := Resolve([]Source{c}, nil)[0].Hash(); ha == hc {
		t.Error("a different command kept the hash")
	}
}

func TestDecideAndApprovals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := OpenApprovals(filepath.Join(dir, "weft", "mcp-approvals.json"))
	ws := t.TempDir()
	src, _ := ParseFile(ScopeProject, filepath.Join(ws, ".mcp.json"), []byte(`{"mcpServers":{"p":{"command":"x"},"q":{"command":"y"}}}`))
	servers := Resolve([]Source{src}, nil)
	p, q := servers[0], servers[1]
	user := Server{Name: "u", Scope: ScopeUser}
	tests := []struct {
		name string
		s    Server
		ps   ProjectSettings
		want Approval
	}{
		{"user scope", user, ProjectSettings{}, Approved},
		{"pending", p, ProjectSettings{}, Pending},
		{"enable all", p, ProjectSettings{EnableAll: true}, Approved},
		{"enabled list", p, ProjectSettings{Enabled: []string{"p"}}, Approved},
		{"disabled beats enable all", p, ProjectSettings{EnableAll: true, Disabled: []string{"p"}}, Rejected},
	}
	for _, tt := range tests {
		if d := Decide(tt.s, ws, tt.ps, store); d.Approval != tt.want {
			t.Errorf("%s: %s (%s), want %s", tt.name, d.Approval, d.Reason, tt.want)
		}
	}
	if err := store.Set(ws, p, true); err != nil {
		t.Fatal(err)
	}
	if err := store.Set(ws, q, false); err != nil {
		t.Fatal(err)
	}
	if d := Decide(p, ws, ProjectSettings{}, store); d.Approval != Approved {
		t.Errorf("after approval: %+v", d)
	}
	if d := Decide(q, ws, ProjectSettings{}, store); d.Approval != Rejected {
		t.Errorf("after rejection: %+v", d)
	}
	if d := Decide(p, t.TempDir(), ProjectSettings{}, store); d.Approval != Pending {
		t.Errorf("an approval leaked to another workspace: %+v", d)
	}
	changed, _ := ParseFile(ScopeProject, filepath.Join(ws, ".mcp.json"), []byte(`{"mcpServers":{"p":{"command":"x","args":["--evil"]}}}`))
	if d := Decide(Resolve([]Source{changed}, nil)[0], ws, ProjectSettings{}, store); d.Approval != Pending || !strings.Contains(d.Reason, "changed") {
		t.Errorf("a changed configuration kept its approval: %+v", d)
	}
	st, err := os.Stat(store.path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("approvals file mode %v, want 0600", st.Mode().Perm())
	}
}

func TestToolName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 80)
	tests := []struct{ server, tool, want string }{
		{"github", "create_issue", "mcp__github__create_issue"},
		{"fs", "read.file/now", "mcp__fs__read_file_now"},
		{"s", "", "mcp__s___"},
		{"s", "naïve", "mcp__s__na_ve"},
	}
	for _, tt := range tests {
		if got := ToolName(tt.server, tt.tool); got != tt.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
		}
	}
	a, b := ToolName("s", long+"a"), ToolName("s", long+"b")
	if len(a) != 64 || len(b) != 64 || a == b || !strings.HasPrefix(a, "mcp__s__xxx") {
		t.Errorf("long names: %q %q", a, b)
	}
}

func TestFieldsAndParse(t *testing.T) {
	t.Parallel()
	fields, err := Fields([]byte(`{"type":"object","required":["name","age"],"properties":{
		"name":{"type":"string","title":"Name","minLength":2},
		"age":{"type":"integer","minimum":0,"maximum":150},
		"agree":{"type":"boolean"},
		"color":{"type":"string","enum":["red","green"],"enumNames":["Red","Green"]},
		"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]},
		"score":{"type":"number"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	byName := map[string]Field{}
	for _, f := range fields {
		order = append(order, f.Name)
		byName[f.Name] = f
	}
	if strings.Join(order, ",") != "age,name,agree,color,score,size" {
		t.Fatalf("order = %v, want required first", order)
	}
	tests := []struct {
		field, in string
		want      any
		err       string
	}{
		{"name", "Al", "Al", ""},
		{"name", "A", nil, "at least 2 characters"},
		{"age", "42", int64(42), ""},
		{"age", "4.5", nil, "whole number"},
		{"age", "200", nil, "at most 150"},
		{"age", "x", nil, "want a number"},
		{"agree", "yes", true, ""},
		{"agree", "n", false, ""},
		{"agree", "maybe", nil, "yes or no"},
		{"color", "Green", "green", ""},
		{"color", "1", "red", ""},
		{"color", "blue", nil, "one of red, green"},
		{"size", "Large", "l", ""},
		{"score", "2.5", 2.5, ""},
	}
	for _, tt := range tests {
		got, err := byName[tt.field].Parse(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s(%q) error = %v, want %q", tt.field, tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s(%q) = %#v, %v; want %#v", tt.field, tt.in, got, err, tt.want)
		}
	}
}

func TestPromptArgs(t *testing.T) {
	t.Parallel()
	two := Prompt{Command: "mcp__s__p", Arguments: []PromptArgument{{Name: "city", Required: true}, {Name: "units"}}}
	one := Prompt{Command: "mcp__s__q", Arguments: []PromptArgument{{Name: "text", Required: true}}}
	tests := []struct {
		p    Prompt
		in   string
		want map[string]string
		err  string
	}{
		{two, `Paris metric`, map[string]string{"city": "Paris", "units": "metric"}, ""},
		{two, `"New York"`, map[string]string{"city": "New York"}, ""},
		{two, `units=imperial Oslo`, map[string]string{"city": "Oslo", "units": "imperial"}, ""},
		{two, ``, nil, "missing city"},
		{two, `a b c`, nil, "too many arguments"},
		{two, `"open`, nil, "unclosed quote"},
		{one, `the whole rest of the line`, map[string]string{"text": "the whole rest of the line"}, ""},
	}
	for _, tt := range tests {
		got, err := promptArgs(tt.p, tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || len(got) != len(tt.want) {
			t.Errorf("%q = %v, %v; want %v", tt.in, got, err, tt.want)
			continue
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%q: %s = %q, want %q", tt.in, k, got[k], v)
			}
		}
	}
}
