package builtin

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/weft-run/weft/tool"
)

func TestEdit(t *testing.T) {
	t.Parallel()
	const goSrc = "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"
	tests := []struct {
		name    string
		content string // initial content of f.txt
		input   map[string]any
		want    string   // content afterwards
		has     []string // in the result text
		isError bool
	}{
		{
			name: "single replacement", content: goSrc,
			input: map[string]any{"old_string": "println(\"hi\")", "new_string": "println(\"hello\")"},
			want:  "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n",
			has:   []string{"     3\tfunc main() {\n     4\t\tprintln(\"hello\")\n     5\t}"},
		},
		{
			name: "multi-line replacement", content: goSrc,
			input: map[string]any{"old_string": "func main() {\n\tprintln(\"hi\")\n}", "new_string": "func main() {}"},
			want:  "package main\n\nfunc main() {}\n",
		},
		{
			name: "deletion", content: "a\nb\nc\n",
			input: map[string]any{"old_string": "b\n", "new_string": ""},
			want:  "a\nc\n",
		},
		{
			name: "not unique", content: "x = 1\nx = 1\nx = 1\n",
			input:   map[string]any{"old_string": "x = 1", "new_string": "x = 2"},
			want:    "x = 1\nx = 1\nx = 1\n",
			has:     []string{"old_string occurs 3 times", "add more surrounding context", "replace_all"},
			isError: true,
		},
		{
			name: "replace all", content: "foo(1)\nbar\nfoo(2)\n",
			input: map[string]any{"old_string": "foo", "new_string": "baz", "replace_all": true},
			want:  "baz(1)\nbar\nbaz(2)\n",
			has:   []string{"replaced 2 occurrences"},
		},
		{
			name: "identical strings", content: "a\n",
			input:   map[string]any{"old_string": "a", "new_string": "a"},
			want:    "a\n",
			has:     []string{"identical"},
			isError: true,
		},
		{
			name: "absent", content: goSrc,
			input:   map[string]any{"old_string": "fmt.Println", "new_string": "x"},
			want:    goSrc,
			has:     []string{"old_string was not found in", "Read the file again"},
			isError: true,
		},
		{
			name: "absent but matches up to whitespace", content: goSrc,
			input:   map[string]any{"old_string": "func main() {\n    println(\"hi\")", "new_string": "x"},
			want:    goSrc,
			has:     []string{"it matches when whitespace is ignored", "indentation"},
			isError: true,
		},
		{
			name: "absent because of line-number prefixes", content: goSrc,
			input:   map[string]any{"old_string": "     3\tfunc main() {\n     4\t\tprintln(\"hi\")", "new_string": "x"},
			want:    goSrc,
			has:     []string{"line-number prefixes"},
			isError: true,
		},
		{
			name: "crlf file edited with lf strings", content: "one\r\ntwo\r\nthree\r\n",
			input: map[string]any{"old_string": "one\ntwo", "new_string": "uno\ndos"},
			want:  "uno\r\ndos\r\nthree\r\n",
		},
		{
			name: "empty old_string on a non-empty file", content: "a\n",
			input:   map[string]any{"old_string": "", "new_string": "b"},
			want:    "a\n",
			has:     []string{"old_string is empty"},
			isError: true,
		},
		{
			name: "empty old_string fills an empty file", content: "",
			input: map[string]any{"old_string": "", "new_string": "filled\n"},
			want:  "filled\n",
		},
		{
			name: "binary file", content: "a\x00b",
			input:   map[string]any{"old_string": "a", "new_string": "c"},
			want:    "a\x00b",
			has:     []string{"binary"},
			isError: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := newTestWS(t, map[string]string{"f.txt": tc.content})
			p := filepath.Join(ws, "f.txt")
			sess := tool.NewSession()
			fi, err := os.Stat(p)
			must(t, err)
			// Reading through Read would refuse the binary case; mark it
			// directly.
			sess.MarkRead(p, wsStamp(fi))
			in := map[string]any{"file_path": "f.txt"}
			for k, v := range tc.input {
				in[k] = v
			}
			res := wsTestRun(t, NewEdit(Config{Workspace: ws}), sess, wsJSON(in))
			if res.IsError != tc.isError {
				t.Fatalf("IsError = %v: %s", res.IsError, res.TextOf())
			}
			if got := wsTestContent(t, p); got != tc.want {
				t.Fatalf("content %q, want %q", got, tc.want)
			}
			for _, h := range tc.has {
				if !strings.Contains(res.TextOf(), h) {
					t.Fatalf("result %q does not contain %q", res.TextOf(), h)
				}
			}
			if !tc.isError {
				nfi, err := os.Stat(p)
				must(t, err)
				if st, ok := sess.ReadStamp(p); !ok || !wsSameStamp(st, nfi) {
					t.Fatal("edited file not marked read")
				}
			}
			wsTestNoTemps(t, ws)
		})
	}
}

func TestEditRequiresFreshRead(t *testing.T) {
	t.Parallel()
	ws := newTestWS(t, map[string]string{"f.txt": "alpha\nbeta\n"})
	p := filepath.Join(ws, "f.txt")
	must(t, os.Chmod(p, 0o600))
	ed := NewEdit(Config{Workspace: ws})
	sess := tool.NewSession()
	in := `{"file_path": "f.txt", "old_string": "beta", "new_string": "gamma"}`

	res := wsTestRun(t, ed, sess, in)
	if !res.IsError || res.TextOf() != "File has not been read yet. Read it first before editing it." {
		t.Fatalf("unread: %+v", res)
	}

	wsTestRead(t, ws, sess, "f.txt")
	wsTestTouch(t, p, "alpha\nbeta\nmore\n")
	res = wsTestRun(t, ed, sess, in)
	if !res.IsError || res.TextOf() != p+" was modified since it was read; Read it again before editing it." {
		t.Fatalf("stale: %+v", res)
	}

	wsTestRead(t, ws, sess, "f.txt")
	if res = wsTestRun(t, ed, sess, in); res.IsError {
		t.Fatal(res.TextOf())
	}
	// A second edit right after the first needs no new Read.
	if res = wsTestRun(t, ed, sess, `{"file_path": "f.txt", "old_string": "more", "new_string": "less"}`); res.IsError {
		t.Fatal(res.TextOf())
	}
	if got := wsTestContent(t, p); got != "alpha\ngamma\nless\n" {
		t.Fatalf("content %q", got)
	}
	fi, err := os.Stat(p)
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode not preserved: %v", fi.Mode().Perm())
	}
}

func TestEditCreatesFile(t *testing.T) {
	t.Parallel()
	ws := newTestWS(t, nil)
	ed := NewEdit(Config{Workspace: ws})
	sess := tool.NewSession()
	res := wsTestRun(t, ed, sess, `{"file_path": "new/dir/f.go", "old_string": "", "new_string": "package f\n"}`)
	p := filepath.Join(ws, "new/dir/f.go")
	if res.IsError || res.TextOf() != "Created "+p+" (1 line)" || wsTestContent(t, p) != "package f\n" {
		t.Fatalf("got %+v", res)
	}
	// And it can be edited straight away.
	if res := wsTestRun(t, ed, sess, `{"file_path": "new/dir/f.go", "old_string": "f", "new_string": "g"}`); res.IsError {
		t.Fatal(res.TextOf())
	}
	res = wsTestRun(t, ed, sess, `{"file_path": "missing.go", "old_string": "x", "new_string": "y"}`)
	if !res.IsError || !strings.Contains(res.TextOf(), "File does not exist") {
		t.Fatalf("missing: %+v", res)
	}
}

func TestEditConfined(t *testing.T) {
	t.Parallel()
	f := newWSFixture(t)
	res := wsTestRun(t, NewEdit(Config{Workspace: f.ws}), nil, `{"file_path": "link-out-file", "old_string": "s", "new_string": "t"}`)
	if !res.IsError || !strings.Contains(res.TextOf(), "outside the workspace") {
		t.Fatalf("got %+v", res)
	}
}

func TestEditSnippet(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := 1; i <= 100; i++ {
		lines = append(lines, "l"+strconv.Itoa(i))
	}
	s := strings.Join(lines, "\n") + "\n"
	at := strings.Index(s, "l50\n")
	got := editSnippet(s, at, len("l50\n"))
	want := "    46\tl46\n    47\tl47\n    48\tl48\n    49\tl49\n    50\tl50\n    51\tl51\n    52\tl52\n    53\tl53\n    54\tl54"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	// A long inserted region is abbreviated.
	at = strings.Index(s, "l1\n")
	got = editSnippet(s, at, strings.Index(s, "l90\n"))
	if !strings.Contains(got, "[48 more changed lines]") || !strings.HasSuffix(got, "    93\tl93") {
		t.Fatalf("got:\n%s", got)
	}
	if got := editSnippet("", 0, 0); got != "     1\t" {
		t.Fatalf("empty: %q", got)
	}
}

func TestEditSpec(t *testing.T) {
	t.Parallel()
	s := NewEdit(Config{}).Spec()
	if s.Name != "Edit" || s.ReadOnly || s.ConcurrencySafe || s.Effect != tool.EffectWrite || s.Permission != tool.ClassFile {
		t.Fatalf("unexpected spec meta: %+v", s.Meta)
	}
}
