package policy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/tool"
)

// claudeSettings is a settings.json as Claude Code documents it, with keys
// weft has no use for (model, statusLine) that must not stop it loading.
const claudeSettings = `{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "model": "claude-sonnet-4-5",
  "permissions": {
    "allow": [
      "Bash(npm run test:*)",
      "Bash(git diff:*)",
      "Read(~/.zshrc)"
    ],
    "ask": ["Bash(git push:*)"],
    "deny": [
      "Bash(curl:*)",
      "Read(./.env)",
      "Read(./secrets/**)",
      "WebFetch(domain:evil.example)"
    ],
    "defaultMode": "acceptEdits",
    "additionalDirectories": ["../docs/"]
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [{"type": "command", "command": "HOOK", "timeout": 30}]
      }
    ]
  },
  "env": {"FOO": "bar"},
  "statusLine": {"type": "command", "command": "echo hi"}
}`

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A Claude Code settings.json with a hook script works unchanged: its
// rules decide, and its hook blocks what the script blocks.
func TestClaudeCodeSettingsWorkUnchanged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hookScript := filepath.Join(dir, "guard.sh")
	// The kind of script people write for Claude Code: read the JSON on
	// stdin, block "rm" with exit 2 and a reason on stderr.
	writeFile(t, hookScript, `#!/bin/sh
input=$(cat)
case "$input" in
  *'"tool_name":"Bash"'*'rm '*) echo "rm is not allowed here" >&2; exit 2 ;;
esac
exit 0
`)
	if err := os.Chmod(hookScript, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "settings.json")
	writeFile(t, path, strings.Replace(claudeSettings, "HOOK", hookScript, 1))
	src, err := policy.LoadFile(policy.ScopeCLI, path, false)
	if err != nil {
		t.Fatal(err)
	}
	m := policy.Merge(src)
	if m.Mode != permission.Mode("auto") || m.Env["FOO"] != "bar" || len(m.ExtraDirs) != 1 || len(m.Hooks) != 1 {
		t.Fatalf("merged = %+v", m)
	}
	hooks := hook.NewManager(hook.Options{})
	if err := hooks.Register(m.Hooks...); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	pol := &policy.Policy{Mode: m.Mode, Rules: m.Rules, Workspace: ws, Hooks: hooks}
	bash := tool.Spec{Name: "Bash", Meta: tool.Meta{Effect: tool.EffectExecute, Permission: tool.ClassBash}}
	webfetch := tool.Spec{Name: "WebFetch", Meta: tool.Meta{ReadOnly: true, Effect: tool.EffectRead, Permission: tool.ClassWebFetch}}
	asked := func(context.Context, policy.Call, string) (bool, string) { return false, "asked" }
	tests := []struct {
		spec  tool.Spec
		input string
		want  string // allowed | asked | the denial's stage
	}{
		{bash, `{"command":"npm run test -- --watch"}`, "allowed"},
		{bash, `{"command":"git diff HEAD"}`, "allowed"},
		{bash, `{"command":"git push origin main"}`, "asked"},
		{bash, `{"command":"curl https://x.example"}`, "deny_rule"},
		{bash, `{"command":"npm run test && curl x"}`, "deny_rule"},
		{bash, `{"command":"rm notes.txt"}`, "hook"},
		{bash, `{"command":"ls"}`, "asked"},
		{webfetch, `{"url":"https://api.evil.example/x"}`, "deny_rule"},
		{webfetch, `{"url":"https://example.org/"}`, "allowed"},
	}
	for _, tt := range tests {
		v := pol.Before(context.Background(), policy.Call{Tool: tt.spec.Name, Input: json.RawMessage(tt.input), Spec: tt.spec}, asked, nil)
		got := "allowed"
		switch {
		case !v.Allow && v.Stage == "human":
			got = "asked"
		case !v.Allow:
			got = v.Stage
		}
		if got != tt.want {
			t.Errorf("%s %s: %s (%+v), want %s", tt.spec.Name, tt.input, got, v, tt.want)
		}
	}
}

func TestSettingsErrorsNameFileAndLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, want string
	}{
		{"bad rule", "{\n  \"permissions\": {\n    \"allow\": [\n      \"Bash(ls)\",\n      \"Bash(foo:*bar)\"\n    ]\n  }\n}", "settings.json:5: permissions.allow entry 2"},
		{"bad deny", `{"permissions": {"deny": ["Bash(("]}}`, "permissions.deny entry 1"},
		{"bad mode", `{"permissions": {"defaultMode": "yolo"}}`, "defaultMode"},
		{"syntax", "{\n\"permissions\": [}", "line 2"},
		{"bad hook event", `{"hooks": {"NoSuchEvent": []}}`, "NoSuchEvent"},
		{"wrong type", `{"permissions": {"allow": "Bash"}}`, "permissions.allow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "settings.json")
			writeFile(t, path, tt.body)
			_, err := policy.LoadFile(policy.ScopeProject, path, true)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "settings.json") {
				t.Fatalf("err = %v, want it to contain %q and the file name", err, tt.want)
			}
		})
	}
}

func TestScopesMerge(t *testing.T) {
	t.Parallel()
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, policy.UserPath(home), `{"permissions": {"allow": ["Bash(git:*)"], "defaultMode": "plan"}, "env": {"A": "user", "B": "user"}}`)
	writeFile(t, policy.ProjectPath(ws), `{"permissions": {"deny": ["Bash(git push:*)"], "defaultMode": "acceptEdits"}, "env": {"B": "project"}}`)
	cli := filepath.Join(t.TempDir(), "cli.json")
	writeFile(t, cli, `{"permissions": {"allow": ["Bash(git push:*)"]}}`)
	srcs, err := policy.LoadScopes(home, ws, cli)
	if err != nil {
		t.Fatal(err)
	}
	m := policy.Merge(srcs...)
	if m.Mode != permission.Mode("auto") {
		t.Fatalf("mode = %q: the project's beats the user's", m.Mode)
	}
	if m.Env["A"] != "user" || m.Env["B"] != "project" {
		t.Fatalf("env = %v", m.Env)
	}
	spec := tool.Meta{Effect: tool.EffectExecute, Permission: tool.ClassBash}
	d := permission.Evaluate(m.Rules, m.Mode, permission.Call{Tool: "Bash", Input: json.RawMessage(`{"command":"git push origin"}`), Meta: spec, Workspace: ws})
	if d.Verdict != permission.Verdict("deny") {
		t.Fatalf("the project's deny must win over the CLI's allow: %+v", d)
	}
	d = permission.Evaluate(m.Rules, m.Mode, permission.Call{Tool: "Bash", Input: json.RawMessage(`{"command":"git status"}`), Meta: spec, Workspace: ws})
	if d.Verdict != permission.Verdict("allow") {
		t.Fatalf("the user's allow applies: %+v", d)
	}
	if _, err := policy.LoadScopes(home, ws, filepath.Join(ws, "missing.json")); err == nil {
		t.Fatal("a missing --settings file must be an error")
	}
	if srcs, err := policy.LoadScopes(t.TempDir(), t.TempDir(), ""); err != nil || len(srcs) != 2 {
		t.Fatalf("missing user and project files are fine: %v %v", srcs, err)
	}
}

func TestRenderRoundTrips(t *testing.T) {
	t.Parallel()
	in := policy.Permissions{Allow: []string{"Bash(git:*)", "Read"}, Ask: []string{}, Deny: []string{"WebFetch(domain:x.example)"}, DefaultMode: "plan"}
	rs, mode, err := policy.ParsePermissions("api", in)
	if err != nil {
		t.Fatal(err)
	}
	out := policy.Render(rs, mode, nil)
	a, _ := json.Marshal(in)
	b, _ := json.Marshal(out)
	if string(a) != string(b) {
		t.Fatalf("render = %s, want %s", b, a)
	}
}

func TestSecretScanningSettings(t *testing.T) {
	t.Parallel()
	custom := `{"secretScanning": {"rules": [{"id": "acme", "pattern": "ACME-[0-9]{8}", "keywords": ["acme-"]}], "exemptPaths": ["fixtures/"]}}`
	src, err := policy.Parse(policy.ScopeProject, "settings.json", []byte(custom))
	if err != nil {
		t.Fatal(err)
	}
	g := policy.Merge(src).Guard
	if m, _ := g.Scan("main.go", `key := "ACME-83920175"`); len(m) != 1 {
		t.Fatalf("custom rule: %v", m)
	}
	if m, _ := g.Scan("fixtures/key.txt", `ACME-83920175`); len(m) != 0 {
		t.Fatalf("exempt path scanned: %v", m)
	}
	if m, _ := g.Scan("main.go", `aws_key = "AKIA`+"Z4QWPX7RMN2BVL5T"+`"`); len(m) == 0 {
		t.Fatal("the builtin rules must stay on next to custom ones")
	}
	off, err := policy.Parse(policy.ScopeCLI, "cli.json", []byte(`{"secretScanning": {"enabled": false}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := policy.Merge(src, off).Guard.Scan("main.go", `ACME-83920175`); len(m) != 0 {
		t.Fatal("a higher scope turned scanning off")
	}
	if _, err := policy.Parse(policy.ScopeCLI, "bad.json", []byte(`{"secretScanning": {"rules": [{"id": "x", "pattern": "("}]}}`)); err == nil || !strings.Contains(err.Error(), "secretScanning") {
		t.Fatalf("err = %v", err)
	}
}
