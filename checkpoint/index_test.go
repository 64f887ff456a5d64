package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestIndexDiff: the list of changed files a snapshot reads from the two
// index files (no git process) is exactly what git diff-tree says between
// the trees, through adds, edits, deletes, a mode change, a symlink, a
// file that becomes a directory and a .gitignore that drops files already
// in the snapshot; and every snapshot after the first takes that path.
func TestIndexDiff(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	put(t, ws, "a.txt", "a\n")
	put(t, ws, "dir/b.txt", "b\n")
	put(t, ws, "run.sh", "echo hi\n")
	put(t, ws, ".gitignore", "*.log\n")
	w, err := openStore(t, Options{}).Workspace(ws)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tree := func() string {
		t.Helper()
		w.mu.Lock()
		defer w.mu.Unlock()
		tr, err := w.tree(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	prev := tree()
	for _, step := range []struct {
		name   string
		change func()
	}{
		{"edit", func() { put(t, ws, "a.txt", "a, edited\n") }},
		{"add, and an ignored file", func() { put(t, ws, "c/d.txt", "d\n"); put(t, ws, "x.log", "log\n") }},
		{"delete", func() { os.Remove(filepath.Join(ws, "dir", "b.txt")) }},
		{"mode", func() { os.Chmod(filepath.Join(ws, "run.sh"), 0o755) }},
		{"symlink", func() { os.Symlink("a.txt", filepath.Join(ws, "link")) }},
		{"file to directory", func() { os.Remove(filepath.Join(ws, "run.sh")); put(t, ws, "run.sh/inner", "i\n") }},
		{"gitignore drops files", func() { put(t, ws, ".gitignore", "*.log\nc/\n") }},
		{"nothing", func() {}},
	} {
		step.change()
		cur := tree()
		w.mu.Lock()
		fast, ok := w.diffs[[2]string{prev, cur}]
		clear(w.diffs)
		slow, err := w.diff(ctx, prev, cur)
		w.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if prev == cur {
			if step.name != "nothing" {
				t.Fatalf("%s: the tree did not change", step.name)
			}
			continue
		}
		if !ok {
			t.Fatalf("%s: the snapshot did not read the diff from the index", step.name)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s: from the index %+v, git diff-tree %+v", step.name, fast, slow)
		}
		prev = cur
	}
}

// TestIndexEntriesRefuses: what indexEntries does not read is refused,
// not misread.
func TestIndexEntriesRefuses(t *testing.T) {
	t.Parallel()
	for _, b := range [][]byte{
		nil,
		[]byte("DIRC"),
		append([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x00"), make([]byte, 20)...), // version 4
		append([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x05"), make([]byte, 20)...), // 5 entries, none there
		append([]byte("XXXX\x00\x00\x00\x02\x00\x00\x00\x00"), make([]byte, 20)...),
	} {
		if _, _, ok := indexEntries(b, nil); ok {
			t.Errorf("%q was read", b)
		}
	}
}
