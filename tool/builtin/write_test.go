package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/tool"
)

// wsTestRead reads path through the Read tool so the session has seen it.
func wsTestRead(t *testing.T, ws string, sess *tool.Session, path string) {
	t.Helper()
	if res := wsTestRun(t, NewRead(Config{Workspace: ws}), sess, wsJSON(map[string]any{"file_path": path})); res.IsError {
		t.Fatalf("Read %s: %s", path, res.TextOf())
	}
}

// wsTestTouch changes a file behind the session's back, with an mtime
// that surely differs from the one recorded.
func wsTestTouch(t *testing.T, p, content string) {
	t.Helper()
	must(t, os.WriteFile(p, []byte(content), 0o644))
	future := time.Now().Add(time.Hour)
	must(t, os.Chtimes(p, future, future))
}

func wsTestContent(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	return string(b)
}

// wsTestNoTemps fails if a temp file of an atomic write was left in dir.
func wsTestNoTemps(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".weft-") {
			t.Fatalf("temp file %s left behind", e.Name())
		}
	}
}

func TestWriteNewFile(t *testing.T) {
	t.Parallel()
	ws := newTestWS(t, nil)
	wr := NewWrite(Config{Workspace: ws})
	sess := tool.NewSession()
	res := wsTestRun(t, wr, sess, `{"file_path": "a/b/c.txt", "content": "one\ntwo\n"}`)
	p := filepath.Join(ws, "a/b/c.txt")
	if res.IsError || res.TextOf() != "Wrote 2 lines to "+p {
		t.Fatalf("got %+v", res)
	}
	if got := wsTestContent(t, p); got != "one\ntwo\n" {
		t.Fatalf("content %q", got)
	}
	fi, err := os.Stat(p)
	must(t, err)
	if want := 0o666 &^ writeUmask(); fi.Mode().Perm() != want {
		t.Fatalf("mode %v, want %v", fi.Mode().Perm(), want)
	}
	if st, ok := sess.ReadStamp(p); !ok || !wsSameStamp(st, fi) {
		t.Fatal("written file not marked read")
	}
	wsTestNoTemps(t, filepath.Dir(p))

	// The session wrote it, so it may overwrite it without reading.
	res = wsTestRun(t, wr, sess, `{"file_path": "a/b/c.txt", "content": "three"}`)
	if res.IsError || res.TextOf() != "Updated "+p+" (1 line)" || wsTestContent(t, p) != "three" {
		t.Fatalf("overwrite: %+v", res)
	}
}

func TestWriteExistingFile(t *testing.T) {
	t.Parallel()
	ws := newTestWS(t, map[string]string{"f.txt": "old\n", "dir/x": "x"})
	p := filepath.Join(ws, "f.txt")
	must(t, os.Chmod(p, 0o751))
	wr := NewWrite(Config{Workspace: ws})
	sess := tool.NewSession()

	res := wsTestRun(t, wr, sess, `{"file_path": "f.txt", "content": "new\n"}`)
	if !res.IsError || res.TextOf() != "File has not been read yet. Read it first before writing to it." {
		t.Fatalf("unread overwrite: %+v", res)
	}
	if wsTestContent(t, p) != "old\n" {
		t.Fatal("refused write changed the file")
	}

	wsTestRead(t, ws, sess, "f.txt")
	res = wsTestRun(t, wr, sess, `{"file_path": "f.txt", "content": "new\n"}`)
	if res.IsError || wsTestContent(t, p) != "new\n" {
		t.Fatalf("write after read: %+v", res)
	}
	fi, err := os.Stat(p)
	must(t, err)
	if fi.Mode().Perm() != 0o751 {
		t.Fatalf("mode not preserved: %v", fi.Mode().Perm())
	}

	wsTestTouch(t, p, "changed elsewhere\n")
	res = wsTestRun(t, wr, sess, `{"file_path": "f.txt", "content": "mine\n"}`)
	if !res.IsError || !strings.Contains(res.TextOf(), "was modified since it was read") {
		t.Fatalf("stale overwrite: %+v", res)
	}
	if wsTestContent(t, p) != "changed elsewhere\n" {
		t.Fatal("refused write changed the file")
	}

	if res := wsTestRun(t, wr, sess, `{"file_path": "dir", "content": ""}`); !res.IsError || !strings.Contains(res.TextOf(), "is a directory") {
		t.Fatalf("directory: %+v", res)
	}
	if res := wsTestRun(t, wr, sess, `{"file_path": "dir/x/y", "content": ""}`); !res.IsError {
		t.Fatalf("file as parent directory: %+v", res)
	}
	wsTestNoTemps(t, ws)
}

func TestWriteThroughSymlink(t *testing.T) {
	t.Parallel()
	ws := newTestWS(t, map[string]string{"real.txt": "r\n"})
	must(t, os.Symlink("real.txt", filepath.Join(ws, "link.txt")))
	sess := tool.NewSession()
	wsTestRead(t, ws, sess, "link.txt")
	res := wsTestRun(t, NewWrite(Config{Workspace: ws}), sess, `{"file_path": "link.txt", "content": "via link\n"}`)
	if res.IsError {
		t.Fatal(res.TextOf())
	}
	if wsTestContent(t, filepath.Join(ws, "real.txt")) != "via link\n" {
		t.Fatal("target not updated")
	}
	if fi, err := os.Lstat(filepath.Join(ws, "link.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced")
	}
}

func TestWriteConfined(t *testing.T) {
	t.Parallel()
	f := newWSFixture(t)
	wr := NewWrite(Config{Workspace: f.ws})
	for _, p := range []string{"../outside/new.txt", "link-out-dir/new.txt", "dangling-out", filepath.Join(f.outside, "x")} {
		res := wsTestRun(t, wr, nil, wsJSON(map[string]any{"file_path": p, "content": "x"}))
		if !res.IsError || !strings.Contains(res.TextOf(), "outside the workspace") {
			t.Fatalf("%s: %+v", p, res)
		}
	}
	if _, err := os.Stat(filepath.Join(f.outside, "new.txt")); err == nil {
		t.Fatal("a file was created outside the workspace")
	}
}

func TestWriteCountLines(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"": 0, "a": 1, "a\n": 1, "a\nb": 2, "\n\n": 2} {
		if got := writeCountLines(in); got != want {
			t.Errorf("writeCountLines(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestWriteSpec(t *testing.T) {
	t.Parallel()
	s := NewWrite(Config{}).Spec()
	if s.Name != "Write" || s.ReadOnly || s.ConcurrencySafe || s.Effect != tool.EffectWrite || s.Permission != tool.ClassFile {
		t.Fatalf("unexpected spec meta: %+v", s.Meta)
	}
}
