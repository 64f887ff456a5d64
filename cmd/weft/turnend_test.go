package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/memory"
)

// turnEndOff turns the turn-end pipeline off for the tests that script a
// fake model call by call: suggestions and memory extraction would make
// calls of their own. Tests of the pipeline turn it on again (a later
// entry or key wins).
var turnEndOff = []string{"WEFT_SUGGESTIONS=false", "WEFT_NO_EXTRACT_MEMORY=true", "WEFT_NO_DREAM=true"}

func turnEndOffEnv(k string) string {
	for _, kv := range turnEndOff {
		if name, v, _ := strings.Cut(kv, "="); name == k {
			return v
		}
	}
	return ""
}

// TestChatPrintsSuggestions: weft chat shows the follow-up suggestions
// after the answer and before the next prompt.
func TestChatPrintsSuggestions(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t).Push(
		llmtest.Text("Added the --verbose flag."),
		llmtest.Text("1. Run the tests\n2. Document the flag"),
	)
	env := map[string]string{"HOME": t.TempDir(), "WEFT_WORKSPACE": t.TempDir(), "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL + "/v1",
		"WEFT_SUGGESTIONS": "true"}
	stdout, stderr, err := run(t, env, "add a verbose flag\n/exit\n", "chat", "--yes", "--model", "openai:gpt-4.1")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	answer := strings.Index(stdout, "Added the --verbose flag.")
	first := strings.Index(stdout, "→ Run the tests")
	if answer < 0 || first < answer || !strings.Contains(stdout, "→ Document the flag") {
		t.Fatalf("stdout lacks the suggestions after the answer:\n%s", stdout)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "follow-up prompts") {
		t.Fatalf("%d requests; the second should be the suggestions call", len(reqs))
	}
	// --suggestions=false: no call, nothing printed.
	fake2 := llmtest.NewOpenAI(t).Push(llmtest.Text("Done."))
	env["OPENAI_BASE_URL"] = fake2.URL + "/v1"
	stdout, _, err = run(t, env, "hi\n/exit\n", "chat", "--yes", "--suggestions=false", "--model", "openai:gpt-4.1")
	if err != nil || strings.Contains(stdout, "→") || len(fake2.Requests()) != 1 {
		t.Fatalf("with --suggestions=false: %v, %d requests\n%s", err, len(fake2.Requests()), stdout)
	}
}

// TestRunExtractsMemory: after weft run's answer the extraction
// sub-agent writes a project memory, and weft run waits for it before it
// exits; its try to write outside memory is refused and audited.
func TestRunExtractsMemory(t *testing.T) {
	t.Parallel()
	home, ws, outside := t.TempDir(), t.TempDir(), t.TempDir()
	memDir := memory.ProjectDir(home, ws)
	entry := "---\nname: check-command\ndescription: how to check the build\ntype: project\n---\n\nAlways run `make check` before committing.\n"
	fake := llmtest.NewOpenAI(t).Push(
		llmtest.Text("Noted: make check before every commit."),
		// The extraction agent: one write outside memory (refused), one inside.
		toolCall("x1", "Write", map[string]string{"file_path": filepath.Join(outside, "evil.md"), "content": entry}),
		toolCall("x2", "Write", map[string]string{"file_path": filepath.Join(memDir, "check-command.md"), "content": entry}),
		llmtest.Text("Saved check-command."),
	)
	env := map[string]string{"HOME": home, "WEFT_WORKSPACE": ws, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL + "/v1",
		"WEFT_NO_EXTRACT_MEMORY": "false"}
	if _, stderr, err := run(t, env, "", "run", "--model", "openai:gpt-4.1", "From now on always run make check before committing."); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	b, err := os.ReadFile(filepath.Join(memDir, "check-command.md"))
	if err != nil || !bytes.Equal(b, []byte(entry)) {
		t.Fatalf("the extracted memory: %q, %v (%d requests)", b, err, len(fake.Requests()))
	}
	if _, err := os.Stat(filepath.Join(outside, "evil.md")); err == nil {
		t.Fatal("the extraction agent wrote outside memory")
	}
	audit, _ := os.ReadFile(filepath.Join(home, ".weft", "audit.jsonl"))
	if !bytes.Contains(audit, []byte(`"memory_confine"`)) || !bytes.Contains(audit, []byte("evil.md")) {
		t.Fatalf("the refused write is not in the audit log:\n%s", audit)
	}
}
