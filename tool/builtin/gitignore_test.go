package builtin

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestIgnoreLevels pins the rules' semantics: deepest directory first,
// last matching rule within it, repository roots as a boundary, "dir/**",
// "[!x]", escapes, trailing spaces and .git/info/exclude.
func TestIgnoreLevels(t *testing.T) {
	t.Parallel()
	root := &ignoreLevel{dir: "/r", isRepo: true, rules: parseIgnore(
		"# comment\n*.txt\n!keep.txt\nout/\n/top.md\ncache/**\n!cache/kept\n[!a]*.log\n\\#hash\n\\!bang\ntrailing\\ \nspaces   \ncrlf\r\n")}
	sub := &ignoreLevel{dir: "/r/sub", rules: parseIgnore("!*.txt\nkeep.txt\n"), parent: root}
	inner := &ignoreLevel{dir: "/r/sub/repo", isRepo: true, parent: sub}
	tests := []struct {
		lvl   *ignoreLevel
		path  string
		isDir bool
		want  bool
	}{
		{root, "/r/a.txt", false, true},
		{root, "/r/keep.txt", false, false},
		{root, "/r/x/a.txt", false, true},
		{root, "/r/out", true, true},
		{root, "/r/out", false, false}, // out/ is for directories only
		{root, "/r/x/out", true, true},
		{root, "/r/top.md", false, true},
		{root, "/r/x/top.md", false, false},
		{root, "/r/cache", true, false}, // cache/** is what is inside cache
		{root, "/r/cache/x", false, true},
		{root, "/r/cache/kept", false, false},
		{root, "/r/b.log", false, true},
		{root, "/r/a.log", false, false},
		{root, "/r/#hash", false, true},
		{root, "/r/!bang", false, true},
		{root, "/r/trailing ", false, true},
		{root, "/r/spaces", false, true},
		{root, "/r/crlf", false, true},
		{root, "/r/comment", false, false},
		{sub, "/r/sub/a.txt", false, false}, // the deeper negation wins
		{sub, "/r/sub/keep.txt", false, true},
		{sub, "/r/sub/out", true, true},
		{inner, "/r/sub/repo/out", true, false}, // rules above a repository root stop
		{inner, "/r/sub/repo/a.txt", false, false},
		{(*ignoreLevel)(nil), "/r/a.txt", false, false},
	}
	for _, tc := range tests {
		if got := tc.lvl.ignored(tc.path, tc.isDir); got != tc.want {
			t.Errorf("ignored(%s, dir=%v) at %s = %v, want %v", tc.path, tc.isDir, tc.lvl.dir, got, tc.want)
		}
	}
}

// TestIgnoreInfoExclude: a repository's .git/info/exclude applies, below
// its .gitignore.
func TestIgnoreInfoExclude(t *testing.T) {
	t.Parallel()
	ws := newTestWS(t, map[string]string{
		".git/info/exclude": "*.local\nsecret.*\n",
		".gitignore":        "!secret.keep\n",
		"a.local":           "",
		"secret.keep":       "",
		"secret.txt":        "",
		"sub/b.local":       "",
	})
	lvl := enterDir(ws, mustReadDir(t, ws), nil)
	for p, want := range map[string]bool{"a.local": true, "sub/b.local": true, "secret.txt": true, "secret.keep": false} {
		if got := lvl.ignored(filepath.Join(ws, p), false); got != want {
			t.Errorf("ignored(%s) = %v, want %v", p, got, want)
		}
	}
}

// FuzzParseIgnore checks that any .gitignore text parses and matches any
// path without panicking.
func FuzzParseIgnore(f *testing.F) {
	for _, s := range []string{"*.log\n!keep.log\n", "build/\n/root\n", "a/**/b\n**\n", "\\#x\n\\!y\ntrailing\\ \n", "[a-\n{a,b}\n", "dir/**\n", "[!a]\n"} {
		f.Add(s, "a/b/c.log", true)
	}
	f.Fuzz(func(t *testing.T, text, rel string, isDir bool) {
		lvl := &ignoreLevel{dir: "/w", rules: parseIgnore(text)}
		lvl.skip(filepath.Join("/w", rel), filepath.Base(rel), isDir)
	})
}

func mustReadDir(t *testing.T, dir string) []os.DirEntry {
	t.Helper()
	entries, err := os.ReadDir(dir)
	must(t, err)
	return entries
}

// TestGlobGitignore: Glob leaves out what .gitignore files (nested, with
// negations) and .git/info/exclude ignore, as Grep does, and searches an
// ignored directory it is pointed at.
func TestGlobGitignore(t *testing.T) {
	t.Parallel()
	ws := newTestWS(t, map[string]string{
		".git/HEAD":            "",
		".git/info/exclude":    "*.local\n",
		".gitignore":           "build/\n*.log\n!keep.log\ncache/**\n!cache/kept.txt\n",
		"main.go":              "",
		"debug.log":            "",
		"keep.log":             "",
		"a.local":              "",
		"build/out.go":         "",
		"sub/build/deep.go":    "",
		"cache/x.txt":          "",
		"cache/kept.txt":       "",
		"nested/.gitignore":    "*.txt\n!important.txt\n",
		"nested/notes.txt":     "",
		"nested/important.txt": "",
		"nested/code.go":       "",
		".github/ci.yml":       "",
		"node_modules/m/i.js":  "",
	})
	list := func(names ...string) []string {
		for i, n := range names {
			names[i] = filepath.Join(ws, n)
		}
		return names
	}
	tests := []struct {
		name  string
		input map[string]any
		want  []string
	}{
		{"everything", map[string]any{"pattern": "**/*"}, list(".github/ci.yml", ".gitignore", "cache/kept.txt", "keep.log", "main.go",
			"nested/.gitignore", "nested/code.go", "nested/important.txt", "node_modules/m/i.js")},
		{"logs", map[string]any{"pattern": "**/*.log"}, list("keep.log")},
		{"nested negation", map[string]any{"pattern": "nested/*.txt"}, list("nested/important.txt")},
		{"info exclude", map[string]any{"pattern": "*.local"}, nil},
		{"explicit ignored dir", map[string]any{"pattern": "*.go", "path": "build"}, list("build/out.go")},
		{"explicit ignored prefix", map[string]any{"pattern": "sub/build/*.go"}, list("sub/build/deep.go")},
		{"ignored dir by pattern", map[string]any{"pattern": "**/build/*.go"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := wsTestRun(t, NewGlob(Config{Workspace: ws}), nil, wsJSON(tc.input))
			var got []string
			if out := res.TextOf(); out != "No files found" {
				got = strings.Split(out, "\n")
			}
			sort.Strings(got)
			want := append([]string(nil), tc.want...)
			sort.Strings(want)
			if res.IsError || strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("got (error=%v):\n%s\nwant:\n%s", res.IsError, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestGrepInfoExclude: both Grep backends honour .git/info/exclude.
func TestGrepInfoExclude(t *testing.T) {
	t.Parallel()
	ws := newTestWS(t, map[string]string{
		".git/info/exclude": "*.local\n/scratch/\n",
		"a.go":              "needle\n",
		"b.local":           "needle\n",
		"scratch/c.txt":     "needle\n",
		"sub/scratch/d.txt": "needle\n",
	})
	want := filepath.Join(ws, "a.go") + ":1\n" + filepath.Join(ws, "sub/scratch/d.txt") + ":1\n\nFound 2 matching lines across 2 files."
	for _, forceGo := range []bool{true, false} {
		if !forceGo {
			grepRG(t)
		}
		res := wsTestRun(t, &grepTool{ws: wsFrom(Config{Workspace: ws}), forceGo: forceGo}, nil, `{"pattern": "needle", "output_mode": "count"}`)
		if got := res.TextOf(); got != want {
			t.Errorf("forceGo=%v: got:\n%s\nwant:\n%s", forceGo, got, want)
		}
	}
}
