package builtin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/tool"
)

func TestGlob(t *testing.T) {
	t.Parallel()
	ws := newTestWS(t, map[string]string{
		"main.go":              "",
		"go.mod":               "",
		"cmd/app/main.go":      "",
		"cmd/app/main_test.go": "",
		"pkg/a/a.go":           "",
		"pkg/a/b/deep.go":      "",
		"web/x.ts":             "",
		"web/y.tsx":            "",
		".hidden/h.go":         "",
		".git/config.go":       "",
		"sub/.git/inner.go":    "",
		"node_modules/m/i.js":  "",
		"space dir/f.go":       "",
	})
	must(t, os.Symlink("pkg/a/a.go", filepath.Join(ws, "link.go")))
	must(t, os.Symlink("pkg", filepath.Join(ws, "linkdir.go")))
	must(t, os.Symlink("missing.go", filepath.Join(ws, "dangling.go")))
	// Distinct mtimes, newest first: the order below is the expected one.
	order := []string{"cmd/app/main.go", "pkg/a/a.go", "main.go", "pkg/a/b/deep.go", "web/x.ts", "web/y.tsx", "cmd/app/main_test.go", ".hidden/h.go", "space dir/f.go", "node_modules/m/i.js", "go.mod"}
	now := time.Now()
	for i, name := range order {
		ts := now.Add(-time.Duration(i) * time.Minute)
		must(t, os.Chtimes(filepath.Join(ws, name), ts, ts))
	}
	abs := func(names ...string) string {
		for i, n := range names {
			names[i] = filepath.Join(ws, n)
		}
		return strings.Join(names, "\n")
	}
	tests := []struct {
		name    string
		input   map[string]any
		want    string
		isError bool
	}{
		{name: "top-level only", input: map[string]any{"pattern": "*.go"}, want: abs("link.go", "main.go")}, // link.go has a.go's mtime
		{name: "recursive, newest first", input: map[string]any{"pattern": "**/*.go"},
			want: abs("cmd/app/main.go", "link.go", "pkg/a/a.go", "main.go", "pkg/a/b/deep.go", "cmd/app/main_test.go", ".hidden/h.go", "space dir/f.go")},
		{name: "literal prefix", input: map[string]any{"pattern": "cmd/*/main.go"}, want: abs("cmd/app/main.go")},
		{name: "double star in the middle", input: map[string]any{"pattern": "pkg/**/*.go"}, want: abs("pkg/a/a.go", "pkg/a/b/deep.go")},
		{name: "braces", input: map[string]any{"pattern": "**/*.{ts,tsx}"}, want: abs("web/x.ts", "web/y.tsx")},
		{name: "path argument", input: map[string]any{"pattern": "**/*.go", "path": "pkg"}, want: abs("pkg/a/a.go", "pkg/a/b/deep.go")},
		{name: "absolute path argument", input: map[string]any{"pattern": "*.go", "path": filepath.Join(ws, "pkg/a")}, want: abs("pkg/a/a.go")},
		{name: "absolute pattern", input: map[string]any{"pattern": filepath.Join(ws, "pkg") + "/**/deep.go"}, want: abs("pkg/a/b/deep.go")},
		{name: "dot slash", input: map[string]any{"pattern": "./web/*.ts"}, want: abs("web/x.ts")},
		{name: "node_modules is searched", input: map[string]any{"pattern": "**/*.js"}, want: abs("node_modules/m/i.js")},
		{name: "exact name", input: map[string]any{"pattern": "go.mod"}, want: abs("go.mod")},
		{name: "no match", input: map[string]any{"pattern": "**/*.rs"}, want: "No files found"},
		{name: "invalid pattern", input: map[string]any{"pattern": "[a-"}, isError: true, want: `invalid glob pattern "[a-"`},
		{name: "outside", input: map[string]any{"pattern": "*", "path": "/etc"}, isError: true},
		{name: "escape via pattern", input: map[string]any{"pattern": "../**/*.go"}, isError: true},
		{name: "path is a file", input: map[string]any{"pattern": "*", "path": "main.go"}, isError: true},
		{name: "missing path", input: map[string]any{"pattern": "*", "path": "nope"}, isError: true},
	}
	gl := NewGlob(Config{Workspace: ws})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := wsTestRun(t, gl, nil, wsJSON(tc.input))
			if res.IsError != tc.isError {
				t.Fatalf("IsError = %v: %s", res.IsError, res.TextOf())
			}
			if tc.isError {
				if tc.want != "" && !strings.Contains(res.TextOf(), tc.want) {
					t.Fatalf("got %q", res.TextOf())
				}
				return
			}
			if got := res.TextOf(); got != tc.want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestGlobSameMtimeSortsByPath(t *testing.T) {
	t.Parallel()
	ws := newTestWS(t, map[string]string{"b.txt": "", "a.txt": "", "c.txt": ""})
	ts := time.Now()
	for _, n := range []string{"a.txt", "b.txt", "c.txt"} {
		must(t, os.Chtimes(filepath.Join(ws, n), ts, ts))
	}
	res := wsTestRun(t, NewGlob(Config{Workspace: ws}), nil, `{"pattern": "*.txt"}`)
	want := strings.Join([]string{filepath.Join(ws, "a.txt"), filepath.Join(ws, "b.txt"), filepath.Join(ws, "c.txt")}, "\n")
	if res.TextOf() != want {
		t.Fatalf("got %q", res.TextOf())
	}
}

func TestGlobCap(t *testing.T) {
	t.Parallel()
	// A short root, so that 1000 paths fit the output budget.
	ws, err := os.MkdirTemp("/tmp", "wg")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(ws) })
	ws, err = filepath.EvalSymlinks(ws)
	must(t, err)
	must(t, os.Mkdir(filepath.Join(ws, "d"), 0o755))
	for i := range 1005 {
		must(t, os.WriteFile(filepath.Join(ws, fmt.Sprintf("d/%04d", i)), nil, 0o644))
	}
	res := wsTestRun(t, NewGlob(Config{Workspace: ws}), nil, `{"pattern": "d/*"}`)
	lines := strings.Split(res.TextOf(), "\n")
	if len(lines) != 1001 {
		t.Fatalf("%d lines", len(lines))
	}
	if last := lines[1000]; last != "(Showing the 1000 most recently modified of 1005 matching files. Use a more specific pattern or path to see the rest.)" {
		t.Fatalf("last line %q", last)
	}
	if res.Data["matches"] != 1005 {
		t.Fatalf("data %v", res.Data)
	}
}

func TestGlobBudget(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	long := strings.Repeat("n", 200)
	for i := range 300 {
		files[fmt.Sprintf("%s%03d", long, i)] = ""
	}
	ws := newTestWS(t, files)
	out := wsTestRun(t, NewGlob(Config{Workspace: ws}), nil, `{"pattern": "*"}`).TextOf()
	if len(out) > globOutputCap {
		t.Fatalf("output %d bytes", len(out))
	}
	if !strings.Contains(out, "matching files. Use a more specific pattern") {
		t.Fatal("no truncation note")
	}
}

func TestGlobCancelled(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 2000 {
		files[fmt.Sprintf("d%d/f.txt", i)] = ""
	}
	ws := newTestWS(t, files)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := wsTestRunCtx(t, ctx, NewGlob(Config{Workspace: ws}), nil, `{"pattern": "**/*.txt"}`)
	if !res.IsError || !strings.Contains(res.TextOf(), "context canceled") {
		t.Fatalf("got %+v", res.TextOf())
	}
}

func TestGlobSpec(t *testing.T) {
	t.Parallel()
	s := NewGlob(Config{}).Spec()
	if s.Name != "Glob" || !s.ReadOnly || !s.ConcurrencySafe || s.Effect != tool.EffectRead || s.Permission != tool.ClassReadOnly {
		t.Fatalf("unexpected spec meta: %+v", s.Meta)
	}
}
