package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/memory"
)

// lastToolOutput is the content of the last tool message of an OpenAI
// request body.
func lastToolOutput(req llmtest.Request) string {
	out := ""
	for _, m := range req.JSON()["messages"].([]any) {
		if mm := m.(map[string]any); mm["role"] == "tool" {
			out = fmt.Sprint(mm["content"])
		}
	}
	return out
}

// TestRunFileMemoryAcrossSessions: what the agent remembers in one weft
// run reaches the system prompt of the next one (the provider's fake sees
// it), and after a few days with a freshness note; a secret is refused;
// --no-memory has neither tools nor section.
func TestRunFileMemoryAcrossSessions(t *testing.T) {
	t.Parallel()
	home, ws := t.TempDir(), t.TempDir()
	session := func(t *testing.T, extra []string, scripts ...llmtest.Script) *llmtest.Server {
		t.Helper()
		fake := llmtest.NewOpenAI(t).Push(scripts...)
		env := map[string]string{"HOME": home, "WEFT_WORKSPACE": ws, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL + "/v1"}
		if _, stderr, err := run(t, env, "", append(append([]string{"run", "--yes", "--model", "openai:gpt-4.1"}, extra...), "go")...); err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		return fake
	}

	// Session 1 remembers a fact (project scope, the default in a workspace).
	fake := session(t, nil,
		toolCall("call_1", "memory_remember", map[string]any{"name": "test-command", "description": "how to run the tests",
			"type": "project", "content": "Run the tests with `make check-FACT-7731`."}),
		llmtest.Text("Noted."))
	sys, tools := systemAndTools(t, fake.Requests()[0])
	for _, want := range []string{"memory_remember", "memory_search", "memory_forget"} {
		if !strings.Contains(strings.Join(tools, " "), want) {
			t.Fatalf("tools %v lack %s", tools, want)
		}
	}
	if strings.Contains(sys, "<memory>") {
		t.Fatal("a memory section before anything was remembered")
	}
	if out := lastToolOutput(fake.Requests()[1]); !strings.Contains(out, `Saved project memory "test-command"`) {
		t.Fatalf("tool result %q", out)
	}
	entry := filepath.Join(memory.ProjectDir(home, ws), "test-command.md")
	if _, err := os.Stat(entry); err != nil {
		t.Fatal(err)
	}

	// Session 2 sees it in its system prompt, fresh.
	fake = session(t, nil, llmtest.Text("ok"))
	sys, _ = systemAndTools(t, fake.Requests()[0])
	if !strings.Contains(sys, "make check-FACT-7731") || !strings.Contains(sys, `<memory_file scope="project" name="test-command" type="project"`) {
		t.Fatalf("the next session's prompt lacks the memory:\n%s", sys)
	}
	if strings.Contains(sys, "<system-reminder>") {
		t.Fatal("a fresh memory has a freshness note")
	}

	// weft chat has the tools and the section too: it sees the fact, and
	// what it remembers (in the user scope) reaches the next weft run.
	chatFake := llmtest.NewOpenAI(t).Push(
		toolCall("call_c", "memory_remember", map[string]any{"name": "chat-fact", "scope": "user", "content": "CHAT-FACT-9902"}),
		llmtest.Text("ok"))
	env := map[string]string{"HOME": home, "WEFT_WORKSPACE": ws, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": chatFake.URL + "/v1"}
	if _, stderr, err := run(t, env, "remember this\n/exit\n", "chat", "--yes", "--model", "openai:gpt-4.1"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if sys, _ := systemAndTools(t, chatFake.Requests()[0]); !strings.Contains(sys, "make check-FACT-7731") {
		t.Fatalf("chat's prompt lacks the memory:\n%s", sys)
	}
	if _, err := os.Stat(filepath.Join(memory.UserDir(home), "chat-fact.md")); err != nil {
		t.Fatalf("chat did not write user memory: %v", err)
	}

	// Three days later it carries the freshness note.
	old := time.Now().Add(-72 * time.Hour)
	if err := os.Chtimes(entry, old, old); err != nil {
		t.Fatal(err)
	}
	fake = session(t, nil, llmtest.Text("ok"))
	sys, _ = systemAndTools(t, fake.Requests()[0])
	if !strings.Contains(sys, "<system-reminder>This memory is 3 days old.") || !strings.Contains(sys, "CHAT-FACT-9902") {
		t.Fatalf("no freshness note:\n%s", sys)
	}

	// A secret is refused, and nothing reaches the disk or the next prompt.
	token := "ghp_" + strings.Repeat("aB3dE6gH9j", 4)[:36]
	fake = session(t, nil,
		toolCall("call_2", "memory_remember", map[string]any{"name": "ci-token", "content": "The CI token is " + token}),
		llmtest.Text("ok"))
	if out := lastToolOutput(fake.Requests()[1]); !strings.Contains(out, "secret") || strings.Contains(out, token) {
		t.Fatalf("tool result %q", out)
	}
	if _, err := os.Stat(filepath.Join(memory.ProjectDir(home, ws), "ci-token.md")); !os.IsNotExist(err) {
		t.Fatalf("the secret was written: %v", err)
	}

	// A hostile name stays inside the memory directory.
	fake = session(t, nil,
		toolCall("call_3", "memory_remember", map[string]any{"name": "../../../../escape", "content": "x"}),
		llmtest.Text("ok"))
	if out := lastToolOutput(fake.Requests()[1]); !strings.Contains(out, "invalid memory name") {
		t.Fatalf("tool result %q", out)
	}

	// --no-memory: no tools, no section.
	fake = session(t, []string{"--no-memory"}, llmtest.Text("ok"))
	sys, tools = systemAndTools(t, fake.Requests()[0])
	if strings.Contains(sys, "FACT-7731") || strings.Contains(strings.Join(tools, " "), "memory_") {
		t.Fatalf("--no-memory: tools %v, prompt has memory: %v", tools, strings.Contains(sys, "FACT-7731"))
	}
}

// TestServeFileMemory: weft serve (without --memory) offers the memory
// tools and puts the memory in the system prompt of its sessions.
func TestServeFileMemory(t *testing.T) {
	t.Parallel()
	home, ws := t.TempDir(), t.TempDir()
	fs, err := memory.NewFileStore(memory.FileStoreConfig{Home: home, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := fs.Remember(t.Context(), memory.ScopeUser, memory.Entry{Name: "greeting", Body: "Greet the user as SERVE-FACT-42."}); err != nil {
		t.Fatal(err)
	}
	fake := llmtest.NewOpenAI(t).Push(llmtest.Text("hi"))
	env := []string{"HOME=" + home, "OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + fake.URL + "/v1"}
	p := startServe(t, env, "--model", "openai:gpt-4.1", "--db", filepath.Join(t.TempDir(), "weft.db"), "--workspace", ws)
	defer p.stop()
	var listed struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	resp := p.request("GET", "/v1/tools", "")
	if err := json.NewDecoder(resp.Body).Decode(&listed); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	names := ""
	for _, tl := range listed.Tools {
		names += tl.Name + " "
	}
	if !strings.Contains(names, "memory_remember") || !strings.Contains(names, "memory_forget") {
		t.Fatalf("serve's tools: %s", names)
	}
	p.expect("POST", "/v1/sessions", `{"session_id":"s"}`, 201)
	resp = p.request("POST", "/v1/sessions/s/messages", `{"prompt":"hello"}`)
	_, _ = frames(t, resp, nil)
	resp.Body.Close()
	waitForRequests(t, fake, 1)
	sys, _ := systemAndTools(t, fake.Requests()[0])
	if !strings.Contains(sys, "SERVE-FACT-42") {
		t.Fatalf("serve's system prompt lacks the memory:\n%s", sys)
	}
}

// TestRunMemorySyncAcrossMachines: with WEFT_MEMORY_REMOTE, what one
// machine's weft run remembers in the user scope is pushed to the remote
// (a local bare repository) and pulled into another machine's next
// session's prompt.
func TestRunMemorySyncAcrossMachines(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (.ci/run installs it)")
	}
	bare := filepath.Join(t.TempDir(), "memory.git")
	cmd := exec.Command("git", "init", "-q", "--bare", bare)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	session := func(t *testing.T, home string, extra map[string]string, scripts ...llmtest.Script) (*llmtest.Server, error) {
		fake := llmtest.NewOpenAI(t).Push(scripts...)
		env := map[string]string{"HOME": home, "WEFT_WORKSPACE": t.TempDir(), "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL + "/v1",
			"WEFT_MEMORY_REMOTE": bare}
		for k, v := range extra {
			env[k] = v
		}
		_, _, err := run(t, env, "", "run", "--yes", "--model", "openai:gpt-4.1", "go")
		return fake, err
	}
	laptop, desktop := t.TempDir(), t.TempDir()
	if _, err := session(t, laptop, nil,
		toolCall("c1", "memory_remember", map[string]any{"name": "editor", "scope": "user", "content": "SYNCED-FACT-5150"}),
		llmtest.Text("ok")); err != nil {
		t.Fatal(err)
	}
	fake, err := session(t, desktop, nil, llmtest.Text("ok"))
	if err != nil {
		t.Fatal(err)
	}
	if sys, _ := systemAndTools(t, fake.Requests()[0]); !strings.Contains(sys, "SYNCED-FACT-5150") {
		t.Fatalf("the other machine's prompt lacks the synced memory:\n%s", sys)
	}
	if _, err := session(t, t.TempDir(), map[string]string{"WEFT_MEMORY_CONFLICT": "yolo"}); err == nil || !strings.Contains(err.Error(), "WEFT_MEMORY_CONFLICT") {
		t.Fatalf("a bad policy: %v", err)
	}
}
