package permission

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/weft-run/weft/tool"
)

// pathFixture is a real workspace for the path tests: rules compare paths
// as the tools will open them, so the links must exist.
type pathFixture struct {
	base, ws, out string
	wsLink        string // a symlink to ws, used as the workspace in some cases
	wd            string // the test's working directory, resolved (/proc/self/cwd)
}

func newPathFixture(t *testing.T) pathFixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := pathFixture{base: base, ws: base + "/ws", out: base + "/out", wsLink: base + "/wslink"}
	for _, d := range []string{f.ws + "/src", f.ws + "/secrets", f.ws + "/sub", f.out + "/store", f.ws + "/.git/hooks", f.ws + "/.weft", f.ws + "/.claude"} {
		mustDo(t, os.MkdirAll(d, 0o755))
	}
	for name, content := range map[string]string{
		"ws/.env": "K=1\n", "ws/secrets/key": "k\n", "ws/src/a.go": "package a\n", "ws/other.txt": "o\n",
		"out/x": "x\n", "out/store/k": "k\n", "ws/.git/config": "[core]\n", "ws/.weft/settings.json": "{}\n",
	} {
		mustDo(t, os.WriteFile(filepath.Join(base, name), []byte(content), 0o600))
	}
	for link, target := range map[string]string{
		"ws/env-link":        ".env",
		"ws/secrets-link":    "secrets",
		"ws/src/other-link":  "../other.txt",
		"ws/src/out-link":    "../../out/x",
		"ws/out-dir":         "../out",
		"ws/vault":           "../out/store",
		"ws/dangling-out":    "../out/new.txt",
		"ws/loop-a":          "loop-b",
		"ws/loop-b":          "loop-a",
		"ws/cfg":             ".git/config",
		"ws/hooks-link":      ".git/hooks",
		"ws/settings-link":   ".weft/settings.json",
		"ws/dotdot-link":     "../out",
		"wslink":             "ws",
		"ws/sub/parent-link": "..",
	} {
		mustDo(t, os.Symlink(target, filepath.Join(base, link)))
	}
	wd, err := os.Getwd()
	mustDo(t, err)
	if f.wd, err = filepath.EvalSymlinks(wd); err != nil {
		t.Fatal(err)
	}
	return f
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestEvaluateResolvedPaths: a rule about a file holds however the path to
// it is spelled: links, "..", /proc/self/root, /proc/self/cwd,
// /proc/<pid>/root, /proc/self/fd/N, /dev/fd/N; allow rules and "inside the
// workspace" see only where a path really leads.
func TestEvaluateResolvedPaths(t *testing.T) {
	t.Parallel()
	f := newPathFixture(t)
	env, err := os.Open(f.ws + "/.env")
	mustDo(t, err)
	t.Cleanup(func() { env.Close() })
	fd := strconv.Itoa(int(env.Fd()))
	pid := strconv.Itoa(os.Getpid())

	denyEnv := rules(t, nil, nil, []string{"Read(./.env)", "Edit(./.env)", "Read(./secrets/**)", "Read(./vault/**)"})
	allowSrc := rules(t, []string{"Edit(./src/**)", "Read(./src/**)"}, nil, nil)
	askSecrets := rules(t, []string{"Edit"}, []string{"Edit(./secrets/**)"}, nil)

	tests := []struct {
		name string
		rs   RuleSet
		ws   string // default f.ws
		tool string
		in   map[string]any
		want string // default plan auto bypass
	}{
		// Deny rules match the path as typed or resolved, in every mode.
		{"proc self root", denyEnv, "", "Read", map[string]any{"file_path": "/proc/self/root" + f.ws + "/.env"}, "deny deny deny deny"},
		{"proc thread-self root", denyEnv, "", "Read", map[string]any{"file_path": "/proc/thread-self/root" + f.ws + "/.env"}, "deny deny deny deny"},
		{"proc pid root", denyEnv, "", "Read", map[string]any{"file_path": "/proc/" + pid + "/root" + f.ws + "/.env"}, "deny deny deny deny"},
		{"proc self fd", denyEnv, "", "Read", map[string]any{"file_path": "/proc/self/fd/" + fd}, "deny deny deny deny"},
		{"dev fd", denyEnv, "", "Read", map[string]any{"file_path": "/dev/fd/" + fd}, "deny deny deny deny"},
		{"proc self root, grep", denyEnv, "", "Grep", map[string]any{"pattern": "K", "path": "/proc/self/root" + f.ws + "/.env"}, "deny deny deny deny"},
		{"proc self root, edit", denyEnv, "", "Edit", map[string]any{"file_path": "/proc/self/root" + f.ws + "/.env", "old_string": "1", "new_string": "2"}, "deny deny deny deny"},
		{"symlink to the file", denyEnv, "", "Read", map[string]any{"file_path": "env-link"}, "deny deny deny deny"},
		{"symlink to the dir", denyEnv, "", "Read", map[string]any{"file_path": "secrets-link/key"}, "deny deny deny deny"},
		{"link then dotdot is lexical", denyEnv, "", "Read", map[string]any{"file_path": "out-dir/../.env"}, "deny deny deny deny"},
		{"parent link", denyEnv, "", "Read", map[string]any{"file_path": "sub/parent-link/.env"}, "deny deny deny deny"},
		{"rule names a link: its target is covered", denyEnv, "", "Read", map[string]any{"file_path": f.out + "/store/k"}, "deny deny deny deny"},
		{"workspace given as a link, real path typed", denyEnv, "wslink", "Read", map[string]any{"file_path": f.ws + "/.env"}, "deny deny deny deny"},
		{"workspace given as a link, relative", denyEnv, "wslink", "Read", map[string]any{"file_path": ".env"}, "deny deny deny deny"},
		{"unrelated file still runs", denyEnv, "", "Read", map[string]any{"file_path": "/proc/self/root" + f.ws + "/other.txt"}, "allow allow allow allow"},
		// /proc/self/cwd is the process's directory: the test's.
		{"proc self cwd", rules(t, nil, nil, []string{"Read(./doc.go)"}), "wd", "Read", map[string]any{"file_path": "/proc/self/cwd/doc.go"}, "deny deny deny deny"},
		{"proc pid cwd", rules(t, nil, nil, []string{"Read(./doc.go)"}), "wd", "Read", map[string]any{"file_path": "/proc/" + pid + "/cwd/doc.go"}, "deny deny deny deny"},
		// A loop cannot be resolved: a deny rule might match, so it does.
		{"loop under a deny rule", denyEnv, "", "Read", map[string]any{"file_path": "loop-a"}, "deny deny deny deny"},
		// Ask rules likewise.
		{"ask rule through a link", askSecrets, "", "Edit", map[string]any{"file_path": "secrets-link/key", "old_string": "k", "new_string": "j"}, "ask ask ask allow"},
		// Allow rules: only where the path really leads counts.
		{"allow covers the real path", allowSrc, "", "Edit", map[string]any{"file_path": "src/a.go", "old_string": "a", "new_string": "b"}, "allow allow allow allow"},
		{"allow through a proc path", allowSrc, "", "Edit", map[string]any{"file_path": "/proc/self/root" + f.ws + "/src/a.go", "old_string": "a", "new_string": "b"}, "allow allow allow allow"},
		{"allow not borrowed by a link", allowSrc, "", "Edit", map[string]any{"file_path": "src/other-link", "old_string": "o", "new_string": "p"}, "ask deny allow allow"},
		{"allow not borrowed by a link out", allowSrc, "", "Edit", map[string]any{"file_path": "src/out-link", "old_string": "x", "new_string": "y"}, "ask deny ask allow"},
		// Auto mode judges "inside the workspace" on the real path.
		{"auto: link pointing out", RuleSet{}, "", "Edit", map[string]any{"file_path": "out-dir/x", "old_string": "x", "new_string": "y"}, "ask deny ask allow"},
		{"auto: dangling link pointing out", RuleSet{}, "", "Write", map[string]any{"file_path": "dangling-out", "content": "x"}, "ask deny ask allow"},
		{"auto: proc path into the workspace", RuleSet{}, "", "Write", map[string]any{"file_path": "/proc/self/root" + f.ws + "/new.txt", "content": "x"}, "ask deny allow allow"},
		{"auto: workspace given as a link", RuleSet{}, "wslink", "Write", map[string]any{"file_path": f.ws + "/new.txt", "content": "x"}, "ask deny allow allow"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := f.ws
			switch tc.ws {
			case "wslink":
				ws = f.wsLink
			case "wd":
				ws = f.wd
			}
			meta := metaWrite
			if tc.tool == "Read" || tc.tool == "Grep" {
				meta = metaRead
			}
			raw, _ := json.Marshal(tc.in)
			checkModes(t, tc.rs, Call{Tool: tc.tool, Input: raw, Meta: meta, Workspace: ws, Home: f.base + "/home"}, tc.want)
		})
	}
}

// TestEvaluateProtected: writes to weft's settings, hooks and plugins and to
// .git ask in every mode but bypass, whatever allow rules say, unless a rule
// names the file exactly; so do Bash redirections to them.
func TestEvaluateProtected(t *testing.T) {
	t.Parallel()
	f := newPathFixture(t)
	home := f.base + "/home"
	broad := rules(t, []string{"Edit(**)", "Write(./**)", "Write(~/**)", "Write(//etc/**)", "Bash(echo:*)", "Bash(tee:*)", "Bash(git status)"}, nil, nil)
	exact := rules(t, []string{"Edit(./.git/config)", "Write(./.weft/settings.json)", "Bash(echo:*)"}, nil, nil)
	write := func(p string) (string, map[string]any) {
		return "Write", map[string]any{"file_path": p, "content": "x"}
	}
	edit := func(p string) (string, map[string]any) {
		return "Edit", map[string]any{"file_path": p, "old_string": "a", "new_string": "b"}
	}
	tests := []struct {
		name      string
		rs        RuleSet
		tool      string
		in        map[string]any
		protected []string
		want      string // default plan auto bypass
	}{
		{name: "project settings", rs: RuleSet{}, want: "ask deny ask allow"},
		{name: "project settings, broad allow", rs: broad, want: "ask deny ask allow"},
		{name: "local settings", rs: broad, want: "ask deny ask allow"},
		{name: "claude settings", rs: broad, want: "ask deny ask allow"},
		{name: "claude local settings", rs: broad, want: "ask deny ask allow"},
		{name: "weft hooks dir", rs: broad, want: "ask deny ask allow"},
		{name: "claude hooks dir", rs: broad, want: "ask deny ask allow"},
		{name: "weft plugins", rs: broad, want: "ask deny ask allow"},
		{name: "git config", rs: broad, want: "ask deny ask allow"},
		{name: "git hook", rs: broad, want: "ask deny ask allow"},
		{name: "git file of a worktree", rs: broad, want: "ask deny ask allow"},
		{name: "nested repo config", rs: broad, want: "ask deny ask allow"},
		{name: "link to git config", rs: broad, want: "ask deny ask allow"},
		{name: "link to hooks dir", rs: broad, want: "ask deny ask allow"},
		{name: "link to settings", rs: broad, want: "ask deny ask allow"},
		{name: "proc path to git config", rs: broad, want: "ask deny ask allow"},
		{name: "user settings", rs: broad, want: "ask deny ask allow"},
		{name: "user claude settings", rs: broad, want: "ask deny ask allow"},
		{name: "user gitconfig", rs: broad, want: "ask deny ask allow"},
		{name: "configured settings file", rs: broad, protected: []string{"/etc/weft/settings.json"}, want: "ask deny ask allow"},
		{name: "configured plugin dir", rs: broad, protected: []string{"plugins-here"}, want: "ask deny ask allow"},
		{name: "exact rule allows git config", rs: exact, want: "allow allow allow allow"},
		{name: "exact rule allows settings", rs: exact, want: "allow allow allow allow"},
		{name: "exact rule does not cover a hook", rs: exact, want: "ask deny ask allow"},
		{name: "bash redirect to git config", rs: broad, want: "ask deny ask allow"},
		{name: "bash redirect to settings through a link", rs: broad, want: "ask deny ask allow"},
		{name: "bash redirect, exact rule", rs: exact, want: "allow allow allow allow"},
		{name: "gitignore is not protected", rs: RuleSet{}, want: "ask deny allow allow"},
		{name: "github workflows are not protected", rs: RuleSet{}, want: "ask deny allow allow"},
		{name: "reading git config runs", rs: RuleSet{}, want: "allow allow allow allow"},
		{name: "weft runs dir is not protected", rs: RuleSet{}, want: "ask deny allow allow"},
	}
	inputs := map[string]func() (string, map[string]any){
		"project settings":                 func() (string, map[string]any) { return write(".weft/settings.json") },
		"project settings, broad allow":    func() (string, map[string]any) { return edit(".weft/settings.json") },
		"local settings":                   func() (string, map[string]any) { return write(".weft/settings.local.json") },
		"claude settings":                  func() (string, map[string]any) { return write(".claude/settings.json") },
		"claude local settings":            func() (string, map[string]any) { return write(".claude/settings.local.json") },
		"weft hooks dir":                   func() (string, map[string]any) { return write(".weft/hooks/guard.sh") },
		"claude hooks dir":                 func() (string, map[string]any) { return write(".claude/hooks/guard.sh") },
		"weft plugins":                     func() (string, map[string]any) { return write(home + "/.weft/plugins/p/hooks/hooks.json") },
		"git config":                       func() (string, map[string]any) { return edit(".git/config") },
		"git hook":                         func() (string, map[string]any) { return write(".git/hooks/pre-commit") },
		"git file of a worktree":           func() (string, map[string]any) { return write("sub/.git") },
		"nested repo config":               func() (string, map[string]any) { return write("vendor/x/.git/config") },
		"link to git config":               func() (string, map[string]any) { return edit("cfg") },
		"link to hooks dir":                func() (string, map[string]any) { return write("hooks-link/post-checkout") },
		"link to settings":                 func() (string, map[string]any) { return edit("settings-link") },
		"proc path to git config":          func() (string, map[string]any) { return edit("/proc/self/root" + f.ws + "/.git/config") },
		"user settings":                    func() (string, map[string]any) { return write("~/.weft/settings.json") },
		"user claude settings":             func() (string, map[string]any) { return write(home + "/.claude/settings.json") },
		"user gitconfig":                   func() (string, map[string]any) { return write("~/.gitconfig") },
		"configured settings file":         func() (string, map[string]any) { return write("/etc/weft/settings.json") },
		"configured plugin dir":            func() (string, map[string]any) { return write("plugins-here/p/hooks/hooks.json") },
		"exact rule allows git config":     func() (string, map[string]any) { return edit(".git/config") },
		"exact rule allows settings":       func() (string, map[string]any) { return write(".weft/settings.json") },
		"exact rule does not cover a hook": func() (string, map[string]any) { return write(".git/hooks/pre-commit") },
		"bash redirect to git config": func() (string, map[string]any) {
			return "Bash", map[string]any{"command": "echo '[core]fsmonitor=./x' > .git/config"}
		},
		"bash redirect to settings through a link": func() (string, map[string]any) {
			return "Bash", map[string]any{"command": "echo '{}' >> settings-link"}
		},
		"bash redirect, exact rule": func() (string, map[string]any) {
			return "Bash", map[string]any{"command": "echo x > .weft/settings.json"}
		},
		"gitignore is not protected":         func() (string, map[string]any) { return write(".gitignore") },
		"github workflows are not protected": func() (string, map[string]any) { return write(".github/workflows/ci.yml") },
		"reading git config runs":            func() (string, map[string]any) { return "Read", map[string]any{"file_path": ".git/config"} },
		"weft runs dir is not protected":     func() (string, map[string]any) { return write(".weft/runs/r1/out.txt") },
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mk, ok := inputs[tc.name]
			if !ok {
				t.Fatalf("no input for %q", tc.name)
			}
			name, in := mk()
			meta := map[string]tool.Meta{"Bash": metaBash, "Read": metaRead}[name]
			if meta == (tool.Meta{}) {
				meta = metaWrite
			}
			raw, _ := json.Marshal(in)
			c := Call{Tool: name, Input: raw, Meta: meta, Workspace: f.ws, Home: home, Protected: tc.protected}
			checkModes(t, tc.rs, c, tc.want)
			if d := Evaluate(tc.rs, ModeAuto, c); d.Verdict == Ask && d.Stage != StageProtected && !strings.HasPrefix(tc.name, "gitignore") {
				t.Errorf("auto mode asks at stage %s (%s), want %s", d.Stage, d.Reason, StageProtected)
			}
		})
	}
}

// TestReadVerdict is what Grep and Glob ask about each file they find.
func TestReadVerdict(t *testing.T) {
	t.Parallel()
	f := newPathFixture(t)
	rs := rules(t, nil, []string{"Read(./src/**)"}, []string{"Read(./.env)", "Read(./secrets/**)", "Read(./vault/**)", "Edit(./other.txt)"})
	c := Call{Workspace: f.ws, Home: f.base + "/home"}
	tests := []struct {
		path string
		want Verdict
	}{
		{f.ws + "/.env", Deny},
		{f.ws + "/env-link", Deny},
		{f.ws + "/secrets/key", Deny},
		{f.ws + "/secrets-link/key", Deny},
		{f.out + "/store/k", Deny},
		{f.ws + "/src/a.go", Ask},
		{f.ws + "/other.txt", Allow}, // an Edit rule says nothing about reading
		{f.ws + "/sub/x", Allow},
		{"/proc/self/root" + f.ws + "/.env", Deny},
		{".env", Deny},
	}
	for _, tc := range tests {
		if got := ReadVerdict(rs, c, tc.path); got != tc.want {
			t.Errorf("ReadVerdict(%s) = %s, want %s", tc.path, got, tc.want)
		}
	}
}

// TestResolvedInput: file tools run with the path the rules judged.
func TestResolvedInput(t *testing.T) {
	t.Parallel()
	f := newPathFixture(t)
	tests := []struct {
		tool  string
		in    string
		want  string // "" when nothing is replaced
		field string
	}{
		{"Read", `{"file_path":"env-link"}`, f.ws + "/.env", "file_path"},
		{"Read", `{"file_path":"/proc/self/root` + f.ws + `/.env","offset":2}`, f.ws + "/.env", "file_path"},
		{"Write", `{"file_path":"dangling-out","content":"x"}`, f.out + "/new.txt", "file_path"},
		{"Edit", `{"file_path":"src/a.go","old_string":"a","new_string":"b"}`, f.ws + "/src/a.go", "file_path"},
		{"Grep", `{"pattern":"x","path":"secrets-link"}`, f.ws + "/secrets", "path"},
		{"Glob", `{"pattern":"*.go","path":"src"}`, f.ws + "/src", "path"},
		{"Read", `{"file_path":"` + f.ws + `/.env"}`, "", ""},
		{"Grep", `{"pattern":"x"}`, "", ""},
		{"mcp__fs__read", `{"path":"env-link"}`, "", ""},
	}
	for _, tc := range tests {
		got, ok := ResolvedInput(Call{Tool: tc.tool, Input: json.RawMessage(tc.in), Workspace: f.ws})
		if tc.want == "" {
			if ok {
				t.Errorf("%s %s: replaced with %s, want unchanged", tc.tool, tc.in, got)
			}
			continue
		}
		var m map[string]any
		if !ok || json.Unmarshal(got, &m) != nil || m[tc.field] != tc.want {
			t.Errorf("%s %s: got %s (ok=%v), want %s = %s", tc.tool, tc.in, got, ok, tc.field, tc.want)
		}
		var orig map[string]any
		_ = json.Unmarshal([]byte(tc.in), &orig)
		for k, v := range orig {
			if k != tc.field && m[k] != v {
				t.Errorf("%s: field %s changed from %v to %v", tc.tool, k, v, m[k])
			}
		}
	}
}
