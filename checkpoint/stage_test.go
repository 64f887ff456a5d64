package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/audit"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/builtin"
)

// harness runs tool calls the way the agent does: through the policy's
// pipeline (Before), the tool registry (Execute) and the finishers
// (After), with the checkpoint stage installed.
type harness struct {
	t     *testing.T
	ws    string
	store *Store
	pol   *policy.Policy
	reg   *tool.Registry
	sess  *tool.Session
	audit *memSink
	turn  int
	n     int
}

type memSink struct {
	mu      sync.Mutex
	entries []audit.Entry
}

func (m *memSink) Write(e audit.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = append(m.entries, e)
	return nil
}

func (m *memSink) Close() error { return nil }

func (m *memSink) last() audit.Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.entries[len(m.entries)-1]
}

func newHarness(t *testing.T, ws string, opts Options) *harness {
	t.Helper()
	store := openStore(t, opts)
	reg, err := tool.NewRegistry(builtin.Tools(builtin.Config{Workspace: ws})...)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := Install(nil, &Stage{Store: store, Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	pol := &policy.Policy{Mode: permission.ModeBypass, Workspace: ws, Validate: reg.Validate, Pipeline: pl, Audit: sink}
	return &harness{t: t, ws: ws, store: store, pol: pol, reg: reg, sess: tool.NewSession(), audit: sink, turn: 1}
}

// call runs one tool call and returns its result and the checkpoint the
// stage noted for it ("" for none).
func (h *harness) call(name string, input any) (tool.Result, string) {
	h.t.Helper()
	in, err := json.Marshal(input)
	if err != nil {
		h.t.Fatal(err)
	}
	t, ok := h.reg.Get(name)
	if !ok {
		h.t.Fatalf("no tool %s", name)
	}
	h.n++
	c := policy.Call{ToolUseID: fmt.Sprintf("call_%d", h.n), Tool: name, Input: in, Spec: t.Spec(), Turn: h.turn}
	ctx := context.Background()
	v := h.pol.Before(ctx, c, nil, nil)
	if !v.Allow {
		h.t.Fatalf("%s refused: %s", name, v.Reason)
	}
	res := h.reg.Execute(ctx, &tool.Call{ID: c.ToolUseID, Name: name, Input: v.Input, Session: h.sess})
	h.pol.After(ctx, c, v, &res)
	if res.IsError {
		h.t.Fatalf("%s failed: %s", name, res.TextOf())
	}
	if e := h.audit.last().Extra[NoteCheckpointError]; e != "" {
		h.t.Fatalf("%s: checkpoint error: %s", name, e)
	}
	return res, v.Notes[NoteCheckpoint]
}

func (h *harness) workspace() *Workspace {
	h.t.Helper()
	w, err := h.store.Workspace(h.ws)
	if err != nil {
		h.t.Fatal(err)
	}
	return w
}

// TestPipelineCheckpoints is the proof through the real pipeline
// and tool registry: a Write, an Edit and a sed -i through Bash each get a
// checkpoint, read-only commands do not; each undo brings the files back
// byte for byte (a new file removed, a deleted one restored, the
// executable bit kept); an undo can be undone; the workspace's own .git is
// byte for byte unchanged throughout; excluded paths are never in a
// checkpoint.
func TestPipelineCheckpoints(t *testing.T) {
	t.Parallel()
	ws := newRepoWorkspace(t, map[string]string{
		"main.go":    "package main\n\nfunc main() {}\n",
		"notes.txt":  "alpha\nbeta\n",
		"run.sh":     "#!/bin/sh\necho hi\n",
		".gitignore": "secret.env\n",
	})
	if err := os.Chmod(filepath.Join(ws, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	put(t, ws, "secret.env", "TOKEN=1\n")                         // .gitignore'd
	put(t, ws, "node_modules/dep/index.js", "module.exports=1\n") // a default exclude
	put(t, ws, "big.txt", strings.Repeat("x", 2048))              // over the test's size limit
	if err := os.WriteFile(filepath.Join(ws, "blob.bin"), []byte("ELF\x00\x01\x02"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitBefore := gitDirState(t, ws)
	h := newHarness(t, ws, Options{MaxFileSize: 1024})
	w := h.workspace()

	states := []map[string]string{fileState(t, ws, false)}
	// 1. Write a new file.
	_, id1 := h.call("Write", map[string]any{"file_path": "new.txt", "content": "brand new\n"})
	states = append(states, fileState(t, ws, false))
	// 2. Edit an existing one (after reading it, as Edit requires).
	h.turn++
	if _, id := h.call("Read", map[string]any{"file_path": "main.go"}); id != "" {
		t.Fatalf("Read got checkpoint %s", id)
	}
	_, id2 := h.call("Edit", map[string]any{"file_path": "main.go", "old_string": "func main() {}", "new_string": "func main() { println(1) }"})
	states = append(states, fileState(t, ws, false))
	// 3. sed -i through Bash, and a deletion and a mode change with it.
	h.turn++
	for _, cmd := range []string{"ls -la", "cat notes.txt | grep alpha", "git log --oneline -1"} {
		if _, id := h.call("Bash", map[string]any{"command": cmd}); id != "" {
			t.Fatalf("%q got checkpoint %s", cmd, id)
		}
	}
	_, id3 := h.call("Bash", map[string]any{"command": "sed -i 's/alpha/ALPHA/' notes.txt && rm run.sh && chmod +x notes.txt"})
	states = append(states, fileState(t, ws, false))

	ids := []string{id1, id2, id3}
	for i, id := range ids {
		if id == "" {
			t.Fatalf("call %d got no checkpoint", i+1)
		}
		for _, other := range ids[:i] {
			if id == other {
				t.Fatalf("call %d reused checkpoint %s of an earlier turn", i+1, id)
			}
		}
	}
	list, err := w.List(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].ID != id3 || list[1].ID != id2 || list[2].ID != id1 {
		t.Fatalf("list = %+v, want %s %s %s", list, id3, id2, id1)
	}
	if list[0].Tool != "Bash" || list[0].Turn != 3 || list[0].ToolCallID == "" || list[1].Tool != "Edit" || !list[2].First {
		t.Fatalf("records = %+v", list)
	}
	// What changed before the Bash call's checkpoint: the Edit.
	if f := list[0].Files; len(f) != 1 || f[0] != (FileChange{Path: "main.go", Status: "modified"}) {
		t.Fatalf("files changed before checkpoint 3 = %+v", f)
	}
	if f := list[1].Files; len(f) != 1 || f[0] != (FileChange{Path: "new.txt", Status: "added"}) {
		t.Fatalf("files changed before checkpoint 2 = %+v", f)
	}
	// Excluded paths are in no checkpoint.
	for _, cp := range list {
		files, err := w.lsTree(context.Background(), cp.tree)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"secret.env", "node_modules/dep/index.js", "big.txt", "blob.bin", ".git/HEAD"} {
			if _, ok := files[p]; ok {
				t.Fatalf("checkpoint %s holds excluded %s", cp.ID, p)
			}
		}
		if _, ok := files["main.go"]; !ok {
			t.Fatalf("checkpoint %s lacks main.go: %v", cp.ID, files)
		}
	}

	// Undo three times: each brings back the state before the last change.
	var undos []*Checkpoint
	for i := 3; i >= 1; i-- {
		r, err := w.Undo(context.Background(), "s1", RestoreOptions{})
		if err != nil {
			t.Fatalf("undo %d: %v", i, err)
		}
		if r.Checkpoint.ID != ids[i-1] || r.Undo == nil {
			t.Fatalf("undo %d restored %+v, want %s", i, r, ids[i-1])
		}
		undos = append(undos, r.Undo)
		if d := diffStates(states[i-1], fileState(t, ws, false)); len(d) > 0 {
			t.Fatalf("after undo %d these differ from before call %d: %v", i, i, d)
		}
	}
	if _, err := w.Undo(context.Background(), "s1", RestoreOptions{}); !errors.Is(err, ErrNothingToUndo) {
		t.Fatalf("a fourth undo: %v", err)
	}
	// The first undo can itself be undone: back to the end.
	if _, err := w.Restore(context.Background(), "s1", undos[0].ID, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := diffStates(states[3], fileState(t, ws, false)); len(d) > 0 {
		t.Fatalf("after undoing the undos these differ from the end state: %v", d)
	}
	if d := diffStates(gitBefore, gitDirState(t, ws)); len(d) > 0 {
		t.Fatalf("the workspace's .git changed: %v", d)
	}
	// The audit entry names the checkpoint.
	if got := h.audit.entries[len(h.audit.entries)-1]; got.ToolName != "Bash" || got.Extra[NoteCheckpoint] != id3 {
		t.Fatalf("audit entry = %+v", got)
	}
}

// TestCheckpointPerChange: within one turn, every call that follows a
// change gets a checkpoint of its own (the state right before it), and a
// call after one that changed nothing reuses the turn's checkpoint.
func TestCheckpointPerChange(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	put(t, ws, "keep/x.txt", "x\n")
	h := newHarness(t, ws, Options{})
	_, a := h.call("Write", map[string]any{"file_path": "a.txt", "content": "a\n"})
	_, b := h.call("Write", map[string]any{"file_path": "b.txt", "content": "b\n"})
	_, c := h.call("Bash", map[string]any{"command": "mkdir -p keep"})
	_, d := h.call("Bash", map[string]any{"command": "mkdir -p keep"})
	if a == "" || b == "" || a == b || c == b {
		t.Fatalf("checkpoints %q %q %q: each call after a change needs its own", a, b, c)
	}
	if d != c {
		t.Fatalf("a call after one that changed nothing got %q, want the turn's %q", d, c)
	}
	list, err := h.workspace().List(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("%d checkpoints, want 3: %+v", len(list), list)
	}
	// Undo takes back b.txt only, then a.txt.
	for _, gone := range []string{"b.txt", "a.txt"} {
		if _, err := h.workspace().Undo(context.Background(), "s1", RestoreOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(ws, gone)); !os.IsNotExist(err) {
			t.Fatalf("%s is still there after an undo: %v", gone, err)
		}
	}
}

// TestFinishAfterCancel: a call whose context was cancelled (Ctrl-C while
// it ran) still gets its after-record, so a person's later edit of the
// same file is a conflict for an undo, not taken for the agent's.
func TestFinishAfterCancel(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	put(t, ws, "a.txt", "orig\n")
	h := newHarness(t, ws, Options{})
	tl, _ := h.reg.Get("Bash")
	c := policy.Call{ToolUseID: "call_x", Tool: "Bash", Input: []byte(`{"command":"echo agent > a.txt"}`), Spec: tl.Spec(), Turn: 1}
	v := h.pol.Before(context.Background(), c, nil, nil)
	if !v.Allow || v.Notes[NoteCheckpoint] == "" {
		t.Fatalf("verdict %+v", v)
	}
	put(t, ws, "a.txt", "agent\n") // what the call did before it was stopped
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := tool.Result{IsError: true}
	h.pol.After(ctx, c, v, &res)
	put(t, ws, "a.txt", "person\n")
	_, err := h.workspace().Undo(context.Background(), "s1", RestoreOptions{})
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("undo over the person's edit after a cancelled call: %v", err)
	}
}
