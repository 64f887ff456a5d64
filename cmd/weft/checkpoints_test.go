package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
)

// TestChatUndoBinary: in weft chat, the agent's Write and its sed -i
// through Bash are checkpointed; /checkpoints lists them, /undo takes them
// back one by one (the new file removed, the edit reverted), /restore ID
// redoes; then weft checkpoints list|diff|restore work on the same store
// from the shell, a conflict exits 3 until --force.
func TestChatUndoBinary(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "checkpoints")
	fake := llmtest.NewOpenAI(t)
	fake.Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_1", "Write", `{"file_path":"new.txt","content":"hello\n"}`)}},
		llmtest.Text("Wrote new.txt."),
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_2", "Bash", `{"command":"sed -i s/alpha/beta/ notes.txt"}`)}},
		llmtest.Text("Edited notes."),
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_3", "Bash", `{"command":"cat notes.txt"}`)}},
		llmtest.Text("Read it."),
	)
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + fake.URL + "/v1", "WEFT_WORKSPACE=" + ws, "WEFT_CHECKPOINT_DIR=" + store}
	in := "write a file\nedit notes\nread notes\n/checkpoints\n/undo\n/undo\n/undo\n/exit\n"
	r := runBinary(t, env, in, "chat", "--yes", "--model", "openai:gpt-4.1", "--audit-log", "off")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(ws, p))
		if err != nil {
			return "(" + err.Error() + ")"
		}
		return string(b)
	}
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); !os.IsNotExist(err) || read("notes.txt") != "alpha\n" {
		t.Fatalf("after two /undo: new.txt %v, notes.txt %q\n%s", err, read("notes.txt"), r.stderr)
	}
	for _, want := range []string{"turn 1  Bash  a new.txt", "turn 1  Write  (first)", "restored checkpoint", "modified notes.txt", "deleted new.txt", "nothing to undo"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("chat output lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Count(r.stderr, "Bash  ") != 1 {
		t.Errorf("the read-only cat got a checkpoint:\n%s", r.stderr)
	}

	list := runBinary(t, env, "", "checkpoints", "list", "--json")
	if list.code != 0 {
		t.Fatalf("list: %s", list.stderr)
	}
	var cps []struct {
		ID, Tool, Restores string
	}
	if err := json.Unmarshal([]byte(list.stdout), &cps); err != nil {
		t.Fatalf("list --json: %v: %s", err, list.stdout)
	}
	// Two undos, the Bash call, the Write.
	if len(cps) != 4 || cps[3].Tool != "Write" || cps[2].Tool != "Bash" || cps[0].Restores == "" {
		t.Fatalf("list = %+v", cps)
	}
	// Undo the first undo (which took back the sed): the sed again.
	firstUndo := cps[1].ID
	diff := runBinary(t, env, "", "checkpoints", "diff", firstUndo)
	if diff.code != 0 || !strings.Contains(diff.stdout, "+beta") || !strings.Contains(diff.stdout, "-alpha") {
		t.Fatalf("diff: %d\n%s\n%s", diff.code, diff.stdout, diff.stderr)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runBinary(t, env, "", "checkpoints", "restore", firstUndo)
	if res.code != 3 || !strings.Contains(res.stderr, "notes.txt") || read("notes.txt") != "mine\n" {
		t.Fatalf("restore over a user's edit: exit %d, notes %q\n%s", res.code, read("notes.txt"), res.stderr)
	}
	res = runBinary(t, env, "", "checkpoints", "restore", "--force", firstUndo)
	if res.code != 0 || read("notes.txt") != "beta\n" {
		t.Fatalf("forced restore: exit %d, notes %q\n%s%s", res.code, read("notes.txt"), res.stdout, res.stderr)
	}
	if bad := runBinary(t, env, "", "checkpoints", "restore", "zzzz"); bad.code == 0 || !strings.Contains(bad.stderr, "no such checkpoint") {
		t.Fatalf("restore of a bad id: %d %s", bad.code, bad.stderr)
	}
}
