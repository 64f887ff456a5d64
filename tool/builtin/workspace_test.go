package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-run/weft/tool"
)

// wsFixture builds a workspace with a symlink inside it, symlinks pointing
// out, an outside directory and an extra allowed directory, all under one
// resolved temp dir.
type wsFixture struct {
	base, ws, outside, extra string
}

func newWSFixture(t testing.TB) wsFixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := wsFixture{
		base:    base,
		ws:      filepath.Join(base, "ws"),
		outside: filepath.Join(base, "outside"),
		extra:   filepath.Join(base, "extra"),
	}
	for _, d := range []string{f.ws, f.outside, f.extra, filepath.Join(f.ws, "sub", "deep")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(f.ws, "a.txt"), []byte("a\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(f.outside, "secret.txt"), []byte("s\n"), 0o644))
	must(t, os.Symlink(filepath.Join(f.outside, "secret.txt"), filepath.Join(f.ws, "link-out-file")))
	must(t, os.Symlink(f.outside, filepath.Join(f.ws, "link-out-dir")))
	must(t, os.Symlink("../outside", filepath.Join(f.ws, "link-out-rel")))
	must(t, os.Symlink("sub", filepath.Join(f.ws, "link-in")))
	must(t, os.Symlink(filepath.Join(f.outside, "new.txt"), filepath.Join(f.ws, "dangling-out")))
	must(t, os.Symlink("sub/new.txt", filepath.Join(f.ws, "dangling-in")))
	must(t, os.Symlink("loop2", filepath.Join(f.ws, "loop1")))
	must(t, os.Symlink("loop1", filepath.Join(f.ws, "loop2")))
	return f
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestWorkspaceResolve(t *testing.T) {
	t.Parallel()
	f := newWSFixture(t)
	// The workspace reached through a symlink, as /tmp is on some systems.
	wsLink := filepath.Join(f.base, "wslink")
	must(t, os.Symlink(f.ws, wsLink))

	tests := []struct {
		name   string
		ws     string
		extra  []string
		in     string
		want   string // resolved path; "" when an error is expected
		errHas string
	}{
		{name: "relative", in: "a.txt", want: "ws/a.txt"},
		{name: "dot", in: ".", want: "ws"},
		{name: "absolute inside", in: filepath.Join(f.ws, "a.txt"), want: "ws/a.txt"},
		{name: "dotdot inside", in: "sub/../a.txt", want: "ws/a.txt"},
		{name: "dotdot escape", in: "../outside/secret.txt", errHas: "outside the workspace"},
		{name: "deep dotdot escape", in: "sub/deep/../../../outside", errHas: "outside the workspace"},
		{name: "absolute outside", in: filepath.Join(f.outside, "secret.txt"), errHas: "outside the workspace"},
		{name: "root", in: "/", errHas: "outside the workspace"},
		{name: "etc passwd", in: "/etc/passwd", errHas: "outside the workspace"},
		{name: "symlink file out", in: "link-out-file", errHas: "resolves to " + filepath.Join(f.outside, "secret.txt")},
		{name: "symlink dir out", in: "link-out-dir/secret.txt", errHas: "outside the workspace"},
		{name: "relative symlink out", in: "link-out-rel/secret.txt", errHas: "outside the workspace"},
		{name: "new file under symlink out", in: "link-out-dir/new/file.txt", errHas: "outside the workspace"},
		{name: "symlink within", in: "link-in/deep", want: "ws/sub/deep"},
		{name: "new nested file", in: "new/dir/file.go", want: "ws/new/dir/file.go"},
		{name: "new file in symlinked dir", in: "link-in/new.go", want: "ws/sub/new.go"},
		{name: "dangling symlink out", in: "dangling-out", errHas: "outside the workspace"},
		{name: "dangling symlink in", in: "dangling-in", want: "ws/sub/new.txt"},
		{name: "symlink loop", in: "loop1", errHas: "too many levels"},
		{name: "empty", in: "", errHas: "empty"},
		{name: "nul byte", in: "a\x00b", errHas: "NUL"},
		{name: "extra dir", extra: []string{f.extra}, in: filepath.Join(f.extra, "x.txt"), want: "extra/x.txt"},
		{name: "extra dir relative", extra: []string{"../extra"}, in: filepath.Join(f.extra, "x.txt"), want: "extra/x.txt"},
		{name: "extra dir listed in error", extra: []string{f.extra}, in: filepath.Join(f.outside, "x"), errHas: "allowed directories (" + f.extra + ")"},
		{name: "prefix sibling is outside", in: f.ws + "2/x", errHas: "outside the workspace"},
		{name: "workspace via symlink, relative", ws: wsLink, in: "a.txt", want: "ws/a.txt"},
		{name: "workspace via symlink, absolute", ws: wsLink, in: filepath.Join(wsLink, "sub"), want: "ws/sub"},
		{name: "workspace via symlink, escape", ws: wsLink, in: "../outside", errHas: "outside the workspace (" + f.ws + ")"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := tc.ws
			if ws == "" {
				ws = f.ws
			}
			c := wsFrom(Config{Workspace: ws, ExtraDirs: tc.extra})
			got, err := c.resolve(tc.in)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("resolve(%q) = %q, want error containing %q", tc.in, got, tc.errHas)
				}
				if !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("resolve(%q) error %q, want it to contain %q", tc.in, err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("resolve(%q): %v", tc.in, err)
			}
			if want := filepath.Join(f.base, tc.want); got != want {
				t.Fatalf("resolve(%q) = %q, want %q", tc.in, got, want)
			}
		})
	}
}

func TestWorkspaceOutsideErrorType(t *testing.T) {
	t.Parallel()
	f := newWSFixture(t)
	_, err := wsFrom(Config{Workspace: f.ws}).resolve("link-out-file")
	var oe *wsOutsideError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v is not a *wsOutsideError", err)
	}
	if oe.Workspace != f.ws || oe.Resolved != filepath.Join(f.outside, "secret.txt") {
		t.Fatalf("unexpected error fields: %+v", oe)
	}
}

func TestWorkspaceDefaultsToWorkingDirectory(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	must(t, err)
	wd, err = filepath.EvalSymlinks(wd)
	must(t, err)
	got, err := wsFrom(Config{}).resolve("workspace.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wd, "workspace.go"); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestWorkspaceDirMissing(t *testing.T) {
	t.Parallel()
	_, err := wsFrom(Config{Workspace: filepath.Join(t.TempDir(), "nope")}).dir()
	if err == nil {
		t.Fatal("dir() of a missing workspace succeeded")
	}
}

// FuzzWorkspaceResolve checks that resolve never panics and never returns a
// path outside the workspace or the extra directory.
func FuzzWorkspaceResolve(f *testing.F) {
	fx := newWSFixture(f)
	for _, s := range []string{
		"a.txt", "../outside", "link-out-dir/x", "link-in/../../outside", "/", "//", ".",
		"sub/./deep/../..", "dangling-out", "loop1/x", "../extra/y", "~", "a/\x00", "link-out-rel/../ws/a.txt",
		fx.outside, fx.ws + "/../outside/secret.txt", fx.extra + "/../ws/sub",
	} {
		f.Add(s)
	}
	c := wsFrom(Config{Workspace: fx.ws, ExtraDirs: []string{fx.extra}})
	f.Fuzz(func(t *testing.T, p string) {
		got, err := c.resolve(p)
		if err != nil {
			return
		}
		if !filepath.IsAbs(got) || filepath.Clean(got) != got {
			t.Fatalf("resolve(%q) = %q: not clean and absolute", p, got)
		}
		if !wsWithin(fx.ws, got) && !wsWithin(fx.extra, got) {
			t.Fatalf("resolve(%q) = %q: outside the roots", p, got)
		}
		// Whatever exists at the result must really be there, not behind
		// a symlink pointing out.
		if real, err := filepath.EvalSymlinks(got); err == nil && !wsWithin(fx.ws, real) && !wsWithin(fx.extra, real) {
			t.Fatalf("resolve(%q) = %q, which really is %q", p, got, real)
		}
	})
}

// wsTestRun runs a tool directly with a JSON input, as the framework
// would after validation, and fails the test on a Go error.
func wsTestRun(t testing.TB, tl tool.Tool, sess *tool.Session, input string) tool.Result {
	t.Helper()
	return wsTestRunCtx(t, context.Background(), tl, sess, input)
}

func wsTestRunCtx(t testing.TB, ctx context.Context, tl tool.Tool, sess *tool.Session, input string) tool.Result {
	t.Helper()
	if sess == nil {
		sess = tool.NewSession()
	}
	call := &tool.Call{
		ID: "call-1", Name: tl.Spec().Name, Input: json.RawMessage(input), Session: sess,
		Progress: func(string) {}, Notify: func(string, any) {},
	}
	res, err := tl.Run(ctx, call)
	if err != nil {
		t.Fatalf("%s.Run(%s): %v", tl.Spec().Name, input, err)
	}
	return res
}

// wsJSON encodes v for a tool input.
func wsJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestWorkspaceToolSchemas checks the hand-written schemas of the file and
// shell tools with the framework's validator: each is an object schema
// closed to unknown arguments, accepting what Claude Code's tools accept.
func TestWorkspaceToolSchemas(t *testing.T) {
	t.Parallel()
	cfg := Config{Workspace: t.TempDir()}
	tests := []struct {
		tool    tool.Tool
		valid   []string
		invalid []string
	}{
		{NewBash(cfg),
			[]string{`{"command": "ls"}`, `{"command": "ls", "timeout": 600000, "description": "List files"}`},
			[]string{`{}`, `{"command": ""}`, `{"command": "ls", "timeout": 600001}`, `{"command": "ls", "timeout": 0}`, `{"command": "ls", "cwd": "/"}`, `{"command": 1}`}},
		{NewRead(cfg),
			[]string{`{"file_path": "a"}`, `{"file_path": "/a", "offset": 10, "limit": 5}`, `{"file_path": "a", "offset": 0}`},
			[]string{`{}`, `{"file_path": "a", "limit": 0}`, `{"file_path": "a", "offset": -1}`, `{"file_path": "a", "pages": "1"}`}},
		{NewWrite(cfg),
			[]string{`{"file_path": "a", "content": ""}`},
			[]string{`{"file_path": "a"}`, `{"content": "x"}`, `{"file_path": "a", "content": "x", "mode": 1}`}},
		{NewEdit(cfg),
			[]string{`{"file_path": "a", "old_string": "x", "new_string": "y"}`, `{"file_path": "a", "old_string": "", "new_string": "y", "replace_all": true}`},
			[]string{`{"file_path": "a", "old_string": "x"}`, `{"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": "yes"}`, `{"file_path": "a", "old_string": "x", "new_string": "y", "edits": []}`}},
		{NewGlob(cfg),
			[]string{`{"pattern": "**/*.go"}`, `{"pattern": "*", "path": "src"}`},
			[]string{`{}`, `{"pattern": ""}`, `{"pattern": "*", "limit": 3}`}},
		{NewGrep(cfg),
			[]string{`{"pattern": "x"}`, `{"pattern": "x", "path": "p", "glob": "*.go", "type": "go", "output_mode": "content", "-i": true, "-n": false, "-A": 1, "-B": 2, "-C": 3, "head_limit": 10, "multiline": true}`},
			[]string{`{}`, `{"pattern": ""}`, `{"pattern": "x", "output_mode": "lines"}`, `{"pattern": "x", "-A": -1}`, `{"pattern": "x", "-r": true}`}},
	}
	for _, tc := range tests {
		spec := tc.tool.Spec()
		var schema struct {
			Type                 string         `json:"type"`
			Properties           map[string]any `json:"properties"`
			Required             []string       `json:"required"`
			AdditionalProperties *bool          `json:"additionalProperties"`
		}
		if err := json.Unmarshal(spec.InputSchema, &schema); err != nil {
			t.Fatalf("%s: schema is not JSON: %v", spec.Name, err)
		}
		if schema.Type != "object" || len(schema.Properties) == 0 || len(schema.Required) == 0 ||
			schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s: schema must be a closed object with required properties: %s", spec.Name, spec.InputSchema)
		}
		if spec.Description == "" {
			t.Errorf("%s: no description", spec.Name)
		}
		for _, in := range tc.valid {
			if err := tool.ValidateInput(spec, json.RawMessage(in)); err != nil {
				t.Errorf("%s: %s rejected: %v", spec.Name, in, err)
			}
		}
		for _, in := range tc.invalid {
			if err := tool.ValidateInput(spec, json.RawMessage(in)); err == nil {
				t.Errorf("%s: %s accepted", spec.Name, in)
			}
		}
	}
}
