package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
)

// TestRunSubagentBinary: weft run with a project agent type
// (.weft/agents/scout.md): the model's Agent call runs a sub-agent with
// the type's prompt and tools; the text transcript shows its progress
// indented under the Agent call, and stream-json carries subagent_start,
// subagent_event (flat) and subagent_end with seed 000's fields.
func TestRunSubagentBinary(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	for p, body := range map[string]string{
		".git/HEAD":               "ref: refs/heads/main\n",
		"notes.txt":               "TODO: ship it\n",
		".weft/agents/scout.md":   "---\nname: scout\ndescription: Reads files and reports what they say.\ntools: Read, Grep\n---\nSCOUT-PROMPT: read what you are pointed at.\n",
		".claude/agents/bad.md":   "no front matter\n",
		".claude/agents/other.md": "---\nname: other\ndescription: Another type, from Claude Code's directory.\n---\nOTHER-PROMPT\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scripts := []llmtest.Script{
		{Blocks: []llmtest.Block{llmtest.ToolBlock("call_agent", "Agent", `{"description":"scan notes","prompt":"read notes.txt","subagent_type":"scout"}`)}},
		{Blocks: []llmtest.Block{llmtest.ToolBlock("call_read", "Read", `{"file_path":"`+filepath.Join(ws, "notes.txt")+`"}`)}},
		llmtest.Text("The notes say: ship it."),
		llmtest.Text("Done: ship it."),
	}
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, r cliResult)
	}{
		{"text", []string{"run", "--yes", "check the notes"}, func(t *testing.T, r cliResult) {
			for _, want := range []string{
				"● Agent(scan notes)",
				`  ↳ scout sub-agent "scan notes" started (gpt-4.1)`,
				"    [scan notes] ● Read(",
				"    [scan notes]   ⎿ ",
				`  ↳ sub-agent "scan notes" completed in `,
				"  ⎿ The notes say: ship it.",
				"Done: ship it.",
			} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
				}
			}
		}},
		{"stream-json", []string{"run", "--yes", "--format", "stream-json", "check the notes"}, func(t *testing.T, r cliResult) {
			byType := map[string][]map[string]any{}
			sc := bufio.NewScanner(strings.NewReader(r.stdout))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var ev map[string]any
				if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
					t.Fatalf("line %q: %v", sc.Text(), err)
				}
				typ, _ := ev["type"].(string)
				byType[typ] = append(byType[typ], ev)
			}
			start, end := byType["subagent_start"], byType["subagent_end"]
			if len(start) != 1 || len(end) != 1 {
				t.Fatalf("%d subagent_start, %d subagent_end:\n%s", len(start), len(end), r.stdout)
			}
			id := start[0]["subagent_id"]
			if id == nil || start[0]["description"] != "scan notes" || start[0]["cwd"] != ws || start[0]["model"] != "gpt-4.1" || start[0]["start_time_ms"] == nil {
				t.Errorf("subagent_start = %v", start[0])
			}
			if end[0]["subagent_id"] != id || end[0]["status"] != "completed" || end[0]["result"] != "The notes say: ship it." || end[0]["duration_ms"] == nil {
				t.Errorf("subagent_end = %v", end[0])
			}
			read := false
			for _, ev := range byType["subagent_event"] {
				if ev["subagent_id"] != id {
					t.Errorf("subagent_event of another sub-agent: %v", ev)
				}
				if ev["event_type"] == "tool_result" && ev["tool_name"] == "Read" && strings.Contains(ev["output"].(string), "TODO: ship it") {
					read = true
				}
			}
			if !read {
				t.Errorf("no flat subagent_event for the sub-agent's Read: %v", byType["subagent_event"])
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.NewOpenAI(t)
			fake.Push(scripts...)
			env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + fake.URL + "/v1", "WEFT_WORKSPACE=" + ws}
			r := runBinary(t, env, "", append(tt.args, "--model", "openai:gpt-4.1")...)
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			tt.check(t, r)
			reqs := fake.Requests()
			if len(reqs) != 4 {
				t.Fatalf("%d requests", len(reqs))
			}
			// The parent's Agent tool lists the project's types; the
			// sub-agent's requests have the type's prompt and tools.
			if !strings.Contains(string(reqs[0].Body), "scout: Reads files") || !strings.Contains(string(reqs[0].Body), "other: Another type") {
				t.Errorf("the Agent tool's description lacks the project's types: %.2000s", reqs[0].Body)
			}
			for _, req := range reqs[1:3] {
				body := string(req.Body)
				if !strings.Contains(body, "SCOUT-PROMPT") || strings.Contains(body, "check the notes") ||
					strings.Contains(body, `"name":"Agent"`) || strings.Contains(body, `"name":"Bash"`) || !strings.Contains(body, `"name":"Read"`) {
					t.Errorf("a sub-agent request: %.3000s", body)
				}
			}
		})
	}
}

// TestMaxSubagentsFlag: a negative cap is refused before anything runs.
func TestMaxSubagentsFlag(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + fake.URL + "/v1", "WEFT_WORKSPACE=" + t.TempDir()}
	r := runBinary(t, env, "", "run", "--max-subagents", "-1", "--model", "openai:gpt-4.1", "hi")
	if r.code == 0 || !strings.Contains(r.stderr, "--max-subagents -1") || len(fake.Requests()) != 0 {
		t.Fatalf("exit %d, stderr %q, %d requests", r.code, r.stderr, len(fake.Requests()))
	}
}
