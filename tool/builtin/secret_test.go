package builtin

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/tool"
)

// fakeToken returns a GitHub-token-shaped string, generated so that no
// token-shaped literal sits in the source.
func fakeToken(seed uint64) string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	r := rand.New(rand.NewPCG(seed, 1))
	b := []byte("ghp_")
	for range 36 {
		b = append(b, alnum[r.IntN(len(alnum))])
	}
	return string(b)
}

// fakePEM returns an RSA private key block with a random body.
func fakePEM(seed uint64) (head, body, foot string) {
	const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	r := rand.New(rand.NewPCG(seed, 2))
	var sb strings.Builder
	for range 4 {
		for range 64 {
			sb.WriteByte(b64[r.IntN(len(b64))])
		}
		sb.WriteByte('\n')
	}
	return "-----BEGIN RSA PRIVATE KEY-----\n", sb.String(), "-----END RSA PRIVATE KEY-----\n"
}

// checkBlocked asserts a result blocked by the secret scan, naming no rule.
func checkBlocked(t *testing.T, res tool.Result, toolName string, n int) {
	t.Helper()
	text := res.TextOf()
	if !res.IsError || !strings.HasPrefix(text, toolName+" blocked: ") || !strings.Contains(text, "read them from the environment") {
		t.Fatalf("not blocked: %+v", res)
	}
	want := "contains 1 secret (a key, token or password)"
	if n != 1 {
		want = "contains " + string(rune('0'+n)) + " secrets (keys, tokens or passwords)"
	}
	if !strings.Contains(text, want) {
		t.Fatalf("%q does not say %q", text, want)
	}
	if got := res.Data["secret_detected"]; got != n {
		t.Fatalf("secret_detected %v (%T), want %d", got, got, n)
	}
	for _, r := range secret.BuiltinRules() {
		if strings.Contains(text, r.ID) || strings.Contains(text, r.Description) {
			t.Fatalf("message names rule %s: %q", r.ID, text)
		}
	}
	if strings.Contains(strings.ToLower(text), "github") || strings.Contains(text, "ghp_") {
		t.Fatalf("message hints at the rule or shows the secret: %q", text)
	}
}

func TestWriteSecretScan(t *testing.T) {
	t.Parallel()
	tok, tok2 := fakeToken(1), fakeToken(2)
	exempt := &secret.DefaultGuard{ExemptPaths: []string{"testdata/"}}
	tests := []struct {
		name    string
		guard   secret.Guard
		path    string
		content string
		blocked int // secrets reported; 0 = written
	}{
		{"default guard blocks", nil, "cfg/app.env", "GITHUB_TOKEN=" + tok + "\n", 1},
		{"two secrets", nil, "app.env", "A=" + tok + "\nB=" + tok2 + "\n", 2},
		{"private key", nil, "id_rsa", func() string { h, b, f := fakePEM(3); return h + b + f }(), 1},
		{"clean content", nil, "main.go", "package main\n\nvar token = os.Getenv(\"TOKEN\")\n", 0},
		{"noop guard", secret.NoopGuard{}, "app.env", "GITHUB_TOKEN=" + tok + "\n", 0},
		{"exempt path", exempt, "pkg/testdata/fixture.env", "GITHUB_TOKEN=" + tok + "\n", 0},
		{"not exempt", exempt, "pkg/data/fixture.env", "GITHUB_TOKEN=" + tok + "\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := newTestWS(t, nil)
			wr := NewWrite(Config{Workspace: ws, Guard: tt.guard})
			res := wsTestRun(t, wr, nil, wsJSON(map[string]any{"file_path": tt.path, "content": tt.content}))
			p := filepath.Join(ws, tt.path)
			if tt.blocked == 0 {
				if res.IsError || wsTestContent(t, p) != tt.content {
					t.Fatalf("not written: %+v", res)
				}
				return
			}
			checkBlocked(t, res, "Write", tt.blocked)
			if _, err := os.Stat(filepath.Dir(p)); tt.path != filepath.Base(tt.path) && err == nil {
				t.Fatal("the parent directory was created")
			}
			if _, err := os.Stat(p); err == nil {
				t.Fatal("the file was written")
			}
			wsTestNoTemps(t, ws)
		})
	}
}

func TestWriteSecretKeepsOldContent(t *testing.T) {
	t.Parallel()
	ws := newTestWS(t, map[string]string{"app.env": "DEBUG=1\n"})
	sess := tool.NewSession()
	p := filepath.Join(ws, "app.env")
	wsTestRead(t, ws, sess, p)
	res := wsTestRun(t, NewWrite(Config{Workspace: ws}), sess, wsJSON(map[string]any{"file_path": p, "content": "TOKEN=" + fakeToken(4) + "\n"}))
	checkBlocked(t, res, "Write", 1)
	if got := wsTestContent(t, p); got != "DEBUG=1\n" {
		t.Fatalf("content %q", got)
	}
	wsTestNoTemps(t, ws)
}

func TestEditSecretScan(t *testing.T) {
	t.Parallel()
	tok, tok2 := fakeToken(5), fakeToken(6)
	head, body, foot := fakePEM(7)
	broken := &secret.DefaultGuard{Rules: []secret.Rule{{ID: "no-pattern"}}}
	tests := []struct {
		name    string
		guard   secret.Guard
		path    string
		initial string // "" with create: the file does not exist
		create  bool
		input   map[string]any
		blocked int
		failed  bool // the scan itself failed
	}{
		{name: "adds a secret", initial: "TOKEN=\nDEBUG=1\n",
			input: map[string]any{"old_string": "TOKEN=\n", "new_string": "TOKEN=" + tok + "\n"}, blocked: 1},
		{name: "completes an assignment", initial: "token = \"PLACEHOLDER\"\n",
			input: map[string]any{"old_string": "PLACEHOLDER", "new_string": tok}, blocked: 1},
		{name: "rotates an existing secret", initial: "TOKEN=" + tok + "\n",
			input: map[string]any{"old_string": tok, "new_string": tok2}, blocked: 1},
		{name: "unrelated edit next to an existing secret", initial: "TOKEN=" + tok + "\nDEBUG=1\n",
			input: map[string]any{"old_string": "DEBUG=1", "new_string": "DEBUG=0"}},
		{name: "removes a secret", initial: "TOKEN=" + tok + "\nDEBUG=1\n",
			input: map[string]any{"old_string": "TOKEN=" + tok + "\n", "new_string": ""}},
		{name: "replace_all", initial: "A=KEY\nB=1\nC=KEY\n",
			input: map[string]any{"old_string": "KEY", "new_string": tok, "replace_all": true}, blocked: 2},
		{name: "adds the body of a key block", initial: head + foot,
			input: map[string]any{"old_string": foot, "new_string": body + foot}, blocked: 1},
		{name: "creates a file", path: "new/app.env", create: true,
			input: map[string]any{"old_string": "", "new_string": "TOKEN=" + tok + "\n"}, blocked: 1},
		{name: "fills an empty file", initial: "",
			input: map[string]any{"old_string": "", "new_string": "TOKEN=" + tok + "\n"}, blocked: 1},
		{name: "noop guard", guard: secret.NoopGuard{}, initial: "TOKEN=\n",
			input: map[string]any{"old_string": "TOKEN=\n", "new_string": "TOKEN=" + tok + "\n"}},
		{name: "exempt path", guard: &secret.DefaultGuard{ExemptPaths: []string{"**/*.env"}}, path: "conf/app.env", initial: "TOKEN=\n",
			input: map[string]any{"old_string": "TOKEN=\n", "new_string": "TOKEN=" + tok + "\n"}},
		{name: "broken guard fails closed", guard: broken, initial: "a\n",
			input: map[string]any{"old_string": "a", "new_string": "b"}, failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := tt.path
			if path == "" {
				path = "app.env"
			}
			files := map[string]string{}
			if !tt.create {
				files[path] = tt.initial
			}
			ws := newTestWS(t, files)
			p := filepath.Join(ws, path)
			sess := tool.NewSession()
			if !tt.create {
				wsTestRead(t, ws, sess, p)
			}
			tt.input["file_path"] = p
			res := wsTestRun(t, NewEdit(Config{Workspace: ws, Guard: tt.guard}), sess, wsJSON(tt.input))
			switch {
			case tt.failed:
				if !res.IsError || !strings.Contains(res.TextOf(), "Edit blocked: the secret scan failed") {
					t.Fatalf("got %+v", res)
				}
			case tt.blocked > 0:
				checkBlocked(t, res, "Edit", tt.blocked)
				if !strings.Contains(res.TextOf(), "new_string looks like") {
					t.Fatalf("got %q", res.TextOf())
				}
			default:
				if res.IsError {
					t.Fatalf("edit refused: %s", res.TextOf())
				}
				return
			}
			if tt.create {
				if _, err := os.Stat(filepath.Dir(p)); err == nil {
					t.Fatal("created the directory of a blocked file")
				}
				return
			}
			if got := wsTestContent(t, p); got != tt.initial {
				t.Fatalf("file changed to %q", got)
			}
			wsTestNoTemps(t, filepath.Dir(p))
		})
	}
}

func TestToolsShareGuardConfig(t *testing.T) {
	t.Parallel()
	ws := newTestWS(t, nil)
	content := wsJSON(map[string]any{"file_path": "a.env", "content": "T=" + fakeToken(8) + "\n"})
	for _, tl := range Tools(Config{Workspace: ws, Guard: secret.NoopGuard{}}) {
		if tl.Spec().Name == "Write" {
			if res := wsTestRun(t, tl, nil, content); res.IsError {
				t.Fatalf("Tools ignored Config.Guard: %s", res.TextOf())
			}
		}
	}
}
