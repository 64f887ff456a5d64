package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/tool"
)

// agentCall runs fn as one agent call: a checkpoint before it, the record of
// how it left the workspace after.
func agentCall(t *testing.T, w *Workspace, session string, turn int, fn func()) Checkpoint {
	t.Helper()
	ctx := context.Background()
	cp, err := w.Snapshot(ctx, Meta{Session: session, Turn: turn, Tool: "Bash", ToolCallID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	fn()
	if err := w.Settle(ctx, session, cp.ID, "c"); err != nil {
		t.Fatal(err)
	}
	return cp
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRestoreConflicts: a restore takes back only the files the agent
// changed: a person's edit of another file stays; a person's later edit of
// a file the agent changed is a conflict that names it and leaves
// everything as it was, until forced; the forced restore is undoable and
// brings the person's edit back.
func TestRestoreConflicts(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	put(t, ws, "agent.txt", "v1\n")
	put(t, ws, "mine.txt", "m1\n")
	w, err := openStore(t, Options{}).Workspace(ws)
	must(t, err)
	cp := agentCall(t, w, "s", 1, func() { put(t, ws, "agent.txt", "v2\n") })
	put(t, ws, "mine.txt", "m2\n") // the person, on a file the agent never touched

	r, err := w.Undo(context.Background(), "s", RestoreOptions{})
	must(t, err)
	if r.Checkpoint.ID != cp.ID || len(r.Files) != 1 || r.Files[0].Path != "agent.txt" {
		t.Fatalf("undo = %+v", r)
	}
	for p, want := range map[string]string{"agent.txt": "v1\n", "mine.txt": "m2\n"} {
		if b, _ := os.ReadFile(filepath.Join(ws, p)); string(b) != want {
			t.Fatalf("%s = %q, want %q", p, b, want)
		}
	}
	// Redo (restore the undo's checkpoint), then the person edits the
	// agent's file: undoing again is a conflict.
	_, err = w.Restore(context.Background(), "s", r.Undo.ID, RestoreOptions{})
	must(t, err)
	put(t, ws, "agent.txt", "person\n")
	before := fileState(t, ws, false)
	_, err = w.Restore(context.Background(), "s", cp.ID, RestoreOptions{})
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Files) != 1 || ce.Files[0] != "agent.txt" {
		t.Fatalf("restore over a person's edit: %v", err)
	}
	if d := diffStates(before, fileState(t, ws, false)); len(d) > 0 {
		t.Fatalf("a refused restore changed %v", d)
	}
	d, err := w.Diff(context.Background(), "s", cp.ID)
	must(t, err)
	if len(d.Files) != 1 || !d.Files[0].Conflict || !strings.Contains(d.Patch, "-person") || !strings.Contains(d.Patch, "+v1") {
		t.Fatalf("diff = %+v", d)
	}
	forced, err := w.Restore(context.Background(), "s", cp.ID, RestoreOptions{Force: true})
	must(t, err)
	if b, _ := os.ReadFile(filepath.Join(ws, "agent.txt")); string(b) != "v1\n" {
		t.Fatalf("forced restore left %q", b)
	}
	_, err = w.Restore(context.Background(), "s", forced.Undo.ID, RestoreOptions{})
	must(t, err)
	if d := diffStates(before, fileState(t, ws, false)); len(d) > 0 {
		t.Fatalf("undoing the forced restore did not bring back %v", d)
	}
}

// TestExcludedNeverSnapshotted: dependencies, virtual environments,
// caches, build outputs, compiled files, binaries, files over the size
// limit, nested repositories and the .gitignore's paths are in no
// checkpoint; a path .gitignore takes in later leaves the next one.
func TestExcludedNeverSnapshotted(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	put(t, ws, ".gitignore", "*.log\n")
	put(t, ws, "src/main.go", "package main\n")
	put(t, ws, "notes.md", "n\n")
	excluded := []string{"node_modules/x/index.js", ".venv/lib/site.py", "__pycache__/m.cpython.pyc", "pkg/__pycache__/a.pyc",
		"build/out.txt", "dist/app.js", "target/debug/x", "lib.so", "app.exe", "x.o", "debug.log", "sub/deep/trace.log",
		"nested/file.txt", "big.txt", "bin.dat"}
	must(t, os.MkdirAll(filepath.Join(ws, "nested"), 0o755))
	gitIn(t, filepath.Join(ws, "nested"), "init", "-q") // a repository of its own
	for _, p := range excluded {
		put(t, ws, p, "x\n")
	}
	put(t, ws, "big.txt", strings.Repeat("b", 5000))
	must(t, os.WriteFile(filepath.Join(ws, "bin.dat"), []byte{1, 2, 0, 3}, 0o644))
	w, err := openStore(t, Options{MaxFileSize: 4096}).Workspace(ws)
	must(t, err)
	cp := agentCall(t, w, "s", 1, func() { put(t, ws, "notes.md", "n2\n") })
	files, err := w.lsTree(context.Background(), cp.tree)
	must(t, err)
	for _, p := range append(excluded, "nested/.git/HEAD") {
		if _, ok := files[p]; ok {
			t.Errorf("checkpoint holds excluded %s", p)
		}
	}
	for _, p := range []string{".gitignore", "src/main.go", "notes.md"} {
		if _, ok := files[p]; !ok {
			t.Errorf("checkpoint lacks %s: %v", p, files)
		}
	}
	// .gitignore now ignores notes.md: the next checkpoint leaves it out.
	cp2 := agentCall(t, w, "s", 2, func() { put(t, ws, ".gitignore", "*.log\nnotes.md\n") })
	cp3 := agentCall(t, w, "s", 3, func() { put(t, ws, "src/main.go", "package main // 2\n") })
	if cp2.ID == cp3.ID {
		t.Fatal("no new checkpoint")
	}
	files, err = w.lsTree(context.Background(), cp3.tree)
	must(t, err)
	if _, ok := files["notes.md"]; ok {
		t.Errorf("a path .gitignore took in is still in the next checkpoint")
	}
}

// TestHostilePaths: names with newlines, quotes, leading dashes, spaces
// and non-UTF-8 bytes go in and come back byte for byte; a symlink is kept
// as a symlink (its target never read or followed); a directory the agent
// replaced with a symlink to outside the workspace is put back without a
// write outside; a directory a person swapped for such a symlink makes a
// forced restore fail for that file rather than write through it.
func TestHostilePaths(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	outside := t.TempDir()
	put(t, outside, "victim.txt", "outside\n")
	names := []string{"new\nline.txt", "-rf", "--force", "quote\"d 'name'.txt", "sp ace/x.txt", "bad\xff\xfe.txt", "a\\b.txt", "sub/f.txt"}
	for _, n := range names {
		put(t, ws, n, "orig "+n)
	}
	must(t, os.Symlink(filepath.Join(outside, "victim.txt"), filepath.Join(ws, "link")))
	start := fileState(t, ws, false)
	outsideStart := fileState(t, outside, false)
	w, err := openStore(t, Options{}).Workspace(ws)
	must(t, err)

	agentCall(t, w, "s", 1, func() {
		for _, n := range names {
			put(t, ws, n, "changed")
		}
		must(t, os.Remove(filepath.Join(ws, "link")))
		must(t, os.Symlink("/etc/passwd", filepath.Join(ws, "link")))
		must(t, os.RemoveAll(filepath.Join(ws, "sub")))
		must(t, os.Symlink(outside, filepath.Join(ws, "sub")))
	})
	_, err = w.Undo(context.Background(), "s", RestoreOptions{})
	must(t, err)
	if d := diffStates(start, fileState(t, ws, false)); len(d) > 0 {
		t.Fatalf("after the undo these differ: %q", d)
	}
	if d := diffStates(outsideStart, fileState(t, outside, false)); len(d) > 0 {
		t.Fatalf("the undo wrote outside the workspace: %q", d)
	}

	// The agent changes sub/f.txt; a person then swaps sub for a symlink
	// to outside, with a victim file of the same name there.
	cp := agentCall(t, w, "s", 2, func() { put(t, ws, "sub/f.txt", "agent") })
	must(t, os.RemoveAll(filepath.Join(ws, "sub")))
	must(t, os.Symlink(outside, filepath.Join(ws, "sub")))
	put(t, outside, "f.txt", "outside f\n")
	outsideNow := fileState(t, outside, false)
	_, err = w.Restore(context.Background(), "s", cp.ID, RestoreOptions{Force: true})
	if err == nil {
		t.Fatal("a restore through a symlink out of the workspace succeeded")
	}
	if d := diffStates(outsideNow, fileState(t, outside, false)); len(d) > 0 {
		t.Fatalf("the restore wrote outside the workspace: %q", d)
	}
}

// TestHostileSessionIDs: a session id from a client cannot name a ref
// outside its workspace's namespace, or the store's HEAD.
func TestHostileSessionIDs(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	put(t, ws, "a.txt", "a\n")
	s := openStore(t, Options{})
	w, err := s.Workspace(ws)
	must(t, err)
	head, err := os.ReadFile(filepath.Join(s.gitDir, "HEAD"))
	must(t, err)
	for i, id := range []string{"../../HEAD", "refs/heads/main", "a b", "x\ny", "..", "@{1}", "HEAD", strings.Repeat("z", 300)} {
		agentCall(t, w, id, i+1, func() { put(t, ws, "a.txt", id) })
		list, err := w.List(context.Background(), id)
		must(t, err)
		if len(list) != 1 || list[0].Session != id {
			t.Fatalf("session %q lists %+v", id, list)
		}
	}
	out, err := w.git("").run(context.Background(), nil, "for-each-ref", "--format=%(refname)")
	must(t, err)
	for _, ref := range strings.Fields(string(out)) {
		if !strings.HasPrefix(ref, "refs/weft/"+w.key+"/") {
			t.Errorf("ref %s is outside the workspace's namespace", ref)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(s.gitDir, "HEAD")); string(b) != string(head) {
		t.Errorf("the store's HEAD changed: %q", b)
	}
}

// TestTooManyFiles: a workspace with more files than MaxFiles (weft
// started in a home directory) is refused rather than copied into the
// store, and the stage then stops trying for that workspace: the call
// runs, the audit notes why there is no checkpoint.
func TestTooManyFiles(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	for i := range 30 {
		put(t, ws, filepath.Join("d", strings.Repeat("x", i+1)), "x")
	}
	w, err := openStore(t, Options{MaxFiles: 10}).Workspace(ws)
	must(t, err)
	if _, err := w.Snapshot(context.Background(), Meta{Session: "s", Turn: 1}); !errors.Is(err, ErrTooManyFiles) {
		t.Fatalf("snapshot of 30 files with MaxFiles 10: %v", err)
	}
	h := newHarness(t, ws, Options{MaxFiles: 10})
	for range 2 {
		h.n++
		in := []byte(`{"file_path":"new.txt","content":"x"}`)
		tl, _ := h.reg.Get("Write")
		v := h.pol.Before(context.Background(), policyCall(h.n, "Write", in, tl), nil, nil)
		if !v.Allow || v.Notes[NoteCheckpoint] != "" || !strings.Contains(v.Notes[NoteCheckpointError], "too many files") {
			t.Fatalf("verdict %+v", v)
		}
	}
}

func policyCall(n int, name string, in []byte, t tool.Tool) policy.Call {
	return policy.Call{ToolUseID: fmt.Sprintf("call_%d", n), Tool: name, Input: in, Spec: t.Spec(), Turn: 1}
}

// TestRacingProcesses: two stores on one directory (two weft processes)
// checkpoint the same workspace at once, in one session and in two: no
// error, no checkpoint lost (the ref moves by compare-and-swap), and a
// lock left by a killed git is swept when a store opens.
func TestRacingProcesses(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	dir := filepath.Join(t.TempDir(), "checkpoints")
	put(t, ws, "a.txt", "a\n")
	var ws2 [2]*Workspace
	for i := range ws2 {
		w, err := openStore(t, Options{Dir: dir}).Workspace(ws)
		must(t, err)
		ws2[i] = w
	}
	const n = 6
	errs := make(chan error, 2*n)
	done := make(chan struct{})
	for i, w := range ws2 {
		go func() {
			defer func() { done <- struct{}{} }()
			for k := range n {
				put(t, ws, fmt.Sprintf("p%d-%d.txt", i, k), "x")
				_, err := w.Snapshot(context.Background(), Meta{Session: "shared", Turn: 100*i + k})
				errs <- err
			}
		}()
	}
	<-done
	<-done
	close(errs)
	for err := range errs {
		must(t, err)
	}
	list, err := ws2[0].List(context.Background(), "shared")
	must(t, err)
	if len(list) != 2*n {
		t.Fatalf("%d checkpoints in the shared session, want %d", len(list), 2*n)
	}
	// A stale lock on the session's ref, as git killed mid-update leaves.
	lock := filepath.Join(dir, "store.git", "refs", "weft", ws2[0].Key(), "shared.lock")
	must(t, os.WriteFile(lock, nil, 0o600))
	old := time.Now().Add(-time.Hour)
	must(t, os.Chtimes(lock, old, old))
	w, err := openStore(t, Options{Dir: dir}).Workspace(ws)
	must(t, err)
	put(t, ws, "b.txt", "b\n")
	if _, err := w.Snapshot(context.Background(), Meta{Session: "shared", Turn: 999}); err != nil {
		t.Fatalf("snapshot after a stale lock: %v", err)
	}
}
