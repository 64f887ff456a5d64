package builtin

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/tool"
)

// newTestWS returns a resolved temp workspace holding files (name ->
// content).
func newTestWS(t testing.TB, files map[string]string) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	for name, content := range files {
		p := filepath.Join(ws, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return ws
}

func readNumbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestRead(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 2500)
	ws := newTestWS(t, map[string]string{
		"a.txt":          "first\nsecond\n",
		"noeol.txt":      "one\ntwo",
		"crlf.txt":       "one\r\ntwo\r\n",
		"five.txt":       readNumbered(1, 5),
		"big.txt":        readNumbered(1, 2500),
		"long.txt":       long + "\nshort\n",
		"empty.txt":      "",
		"blank.txt":      "\n",
		"tab.go":         "func f() {\n\treturn\n}\n",
		"nul.dat2":       "abc\x00def",
		"latin1.txt":     "caf\xe9\n",
		"prog.exe":       "MZ this looks like text",
		"sub/nested.txt": "n\n",
		"dir/x/y.txt":    "y\n",
		"unicode.txt":    "héllo wörld ✓\n",
	})
	tests := []struct {
		name    string
		input   map[string]any
		want    string // exact text; "" to skip
		has     []string
		isError bool
	}{
		{name: "whole file", input: map[string]any{"file_path": "a.txt"}, want: "     1\tfirst\n     2\tsecond"},
		{name: "absolute path", input: map[string]any{"file_path": filepath.Join(ws, "a.txt")}, want: "     1\tfirst\n     2\tsecond"},
		{name: "no final newline", input: map[string]any{"file_path": "noeol.txt"}, want: "     1\tone\n     2\ttwo"},
		{name: "crlf shown without cr", input: map[string]any{"file_path": "crlf.txt"}, want: "     1\tone\n     2\ttwo"},
		{name: "tabs kept", input: map[string]any{"file_path": "tab.go"}, want: "     1\tfunc f() {\n     2\t\treturn\n     3\t}"},
		{name: "unicode", input: map[string]any{"file_path": "unicode.txt"}, want: "     1\théllo wörld ✓"},
		{name: "offset and limit", input: map[string]any{"file_path": "five.txt", "offset": 2, "limit": 2},
			want: "     2\tline 2\n     3\tline 3\n... 2 more lines; use offset=4 to read on"},
		{name: "offset to end", input: map[string]any{"file_path": "five.txt", "offset": 4}, want: "     4\tline 4\n     5\tline 5"},
		{name: "offset zero means start", input: map[string]any{"file_path": "five.txt", "offset": 0, "limit": 1},
			want: "     1\tline 1\n... 4 more lines; use offset=2 to read on"},
		{name: "limit exactly the rest", input: map[string]any{"file_path": "five.txt", "offset": 3, "limit": 3}, want: "     3\tline 3\n     4\tline 4\n     5\tline 5"},
		{name: "default limit 2000", input: map[string]any{"file_path": "big.txt"},
			has: []string{"     1\tline 1\n", "  2000\tline 2000\n... 500 more lines; use offset=2001 to read on"}},
		{name: "offset past end", input: map[string]any{"file_path": "five.txt", "offset": 9}, isError: true, has: []string{"has 5 lines; offset 9 is past the end"}},
		{name: "long line truncated", input: map[string]any{"file_path": "long.txt"},
			want: "     1\t" + long[:2000] + " ... [line truncated: 2500 bytes in total]\n     2\tshort"},
		{name: "empty file", input: map[string]any{"file_path": "empty.txt"}, has: []string{"empty.txt exists but is empty."}},
		{name: "one blank line", input: map[string]any{"file_path": "blank.txt"}, want: "     1\t"},
		{name: "nul bytes refused", input: map[string]any{"file_path": "nul.dat2"}, isError: true,
			has: []string{"nul.dat2 is a binary file (7 bytes); Read shows text files and images"}},
		{name: "invalid utf-8 refused", input: map[string]any{"file_path": "latin1.txt"}, isError: true, has: []string{"is a binary file"}},
		{name: "binary extension refused", input: map[string]any{"file_path": "prog.exe"}, isError: true, has: []string{"is a binary file"}},
		{name: "directory", input: map[string]any{"file_path": "sub"}, isError: true, has: []string{"is a directory", "Glob", "ls"}},
		{name: "missing with suggestion", input: map[string]any{"file_path": "nested.txt"}, isError: true,
			has: []string{"File does not exist: " + filepath.Join(ws, "nested.txt"), "Did you mean " + filepath.Join(ws, "sub/nested.txt") + "?"}},
		{name: "missing without suggestion", input: map[string]any{"file_path": "dir/nope.txt"}, isError: true,
			want: "File does not exist: " + filepath.Join(ws, "dir/nope.txt")},
		{name: "outside workspace", input: map[string]any{"file_path": "/etc/hostname"}, isError: true, has: []string{"outside the workspace"}},
		{name: "dotdot escape", input: map[string]any{"file_path": "../x"}, isError: true, has: []string{"outside the workspace"}},
	}
	rd := NewRead(Config{Workspace: ws})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := wsTestRun(t, rd, nil, wsJSON(tc.input))
			got := res.TextOf()
			if res.IsError != tc.isError {
				t.Fatalf("IsError = %v, want %v: %s", res.IsError, tc.isError, got)
			}
			if tc.want != "" && got != tc.want {
				t.Fatalf("got:\n%q\nwant:\n%q", got, tc.want)
			}
			for _, h := range tc.has {
				if !strings.Contains(got, h) {
					t.Fatalf("got:\n%s\nwant it to contain %q", got, h)
				}
			}
		})
	}
}

func TestReadOutputBudget(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("y", 100)
	ws := newTestWS(t, map[string]string{"wide.txt": strings.Repeat(line+"\n", 1500)})
	res := wsTestRun(t, NewRead(Config{Workspace: ws}), nil, `{"file_path": "wide.txt"}`)
	out := res.TextOf()
	if len(out) > readBudget+200 {
		t.Fatalf("output is %d bytes", len(out))
	}
	last := out[strings.LastIndexByte(out, '\n')+1:]
	// 108 bytes per rendered line: the budget fits 555 of them.
	if last != "... 945 more lines (output size limit reached); use offset=556 to read on" {
		t.Fatalf("last line %q", last)
	}
}

func TestReadMarksSession(t *testing.T) {
	t.Parallel()
	ws := newTestWS(t, map[string]string{"a.txt": "hello\n", "empty.txt": "", "five.txt": readNumbered(1, 5)})
	rd := NewRead(Config{Workspace: ws})
	sess := tool.NewSession()
	for _, in := range []string{`{"file_path": "a.txt"}`, `{"file_path": "empty.txt"}`, `{"file_path": "five.txt", "offset": 2, "limit": 1}`} {
		if res := wsTestRun(t, rd, sess, in); res.IsError {
			t.Fatal(res.TextOf())
		}
	}
	for _, name := range []string{"a.txt", "empty.txt", "five.txt"} {
		p := filepath.Join(ws, name)
		st, ok := sess.ReadStamp(p)
		if !ok {
			t.Fatalf("%s not marked read", name)
		}
		fi, err := os.Stat(p)
		must(t, err)
		if !wsSameStamp(st, fi) {
			t.Fatalf("%s stamp %+v does not match the file", name, st)
		}
	}
	// A refused read records nothing.
	must(t, os.WriteFile(filepath.Join(ws, "bin"), []byte{0, 1, 2}, 0o644))
	wsTestRun(t, rd, sess, `{"file_path": "bin"}`)
	if _, ok := sess.ReadStamp(filepath.Join(ws, "bin")); ok {
		t.Fatal("binary file marked read")
	}
}

func TestReadImage(t *testing.T) {
	t.Parallel()
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.RGBA{R: 255, A: 255})
	var buf bytes.Buffer
	must(t, png.Encode(&buf, img))
	gif := []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")
	ws := newTestWS(t, map[string]string{
		"pic.png":     buf.String(),
		"no-ext":      buf.String(), // sniffed, not guessed from the name
		"anim.gif":    string(gif),
		"fake.png":    "not an image at all\n",
		"huge.png":    buf.String() + strings.Repeat("\x00", readMaxImage),
		"photo.webp":  "RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00",
		"scan.bmp.gz": "\x1f\x8b",
	})
	rd := NewRead(Config{Workspace: ws})
	sess := tool.NewSession()
	for _, tc := range []struct{ name, media string }{{"pic.png", "image/png"}, {"no-ext", "image/png"}, {"anim.gif", "image/gif"}, {"photo.webp", "image/webp"}} {
		res := wsTestRun(t, rd, sess, wsJSON(map[string]any{"file_path": tc.name}))
		if res.IsError || len(res.Content) != 2 {
			t.Fatalf("%s: %+v", tc.name, res)
		}
		if res.Content[0].Type != llm.BlockText || !strings.Contains(res.Content[0].Text, tc.media) {
			t.Fatalf("%s: text block %+v", tc.name, res.Content[0])
		}
		data, _ := os.ReadFile(filepath.Join(ws, tc.name))
		if b := res.Content[1]; b.Type != llm.BlockImage || b.MediaType != tc.media || !bytes.Equal(b.Data, data) {
			t.Fatalf("%s: image block type=%s media=%s len=%d", tc.name, b.Type, b.MediaType, len(b.Data))
		}
		if _, ok := sess.ReadStamp(filepath.Join(ws, tc.name)); !ok {
			t.Fatalf("%s not marked read", tc.name)
		}
	}
	if res := wsTestRun(t, rd, nil, `{"file_path": "fake.png"}`); res.IsError || res.TextOf() != "     1\tnot an image at all" {
		t.Fatalf("fake.png: %+v", res)
	}
	if res := wsTestRun(t, rd, nil, `{"file_path": "huge.png"}`); !res.IsError || !strings.Contains(res.TextOf(), "Read shows images up to") {
		t.Fatalf("huge.png: %+v", res)
	}
	if res := wsTestRun(t, rd, nil, `{"file_path": "scan.bmp.gz"}`); !res.IsError || !strings.Contains(res.TextOf(), "binary") {
		t.Fatalf("scan.bmp.gz: %+v", res)
	}
}

func TestReadLooksBinary(t *testing.T) {
	t.Parallel()
	euro := "€" // three bytes
	tests := []struct {
		name     string
		head     string
		complete bool
		want     bool
	}{
		{"text", "hello\n", true, false},
		{"nul", "he\x00llo", true, true},
		{"invalid", "caf\xe9!", true, true},
		{"rune cut at the sniff boundary", "abc" + euro[:2], false, false},
		{"rune cut at the end of a whole file", "abc" + euro[:2], true, true},
		{"invalid before the boundary", "\xff" + "abc" + euro[:1], false, true},
	}
	for _, tc := range tests {
		if got := readLooksBinary([]byte(tc.head), tc.complete); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestReadSpec(t *testing.T) {
	t.Parallel()
	s := NewRead(Config{}).Spec()
	if s.Name != "Read" || !s.ReadOnly || !s.ConcurrencySafe || s.Effect != tool.EffectRead || s.Permission != tool.ClassReadOnly {
		t.Fatalf("unexpected spec meta: %+v", s.Meta)
	}
}
