package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weft-run/weft/llm/llmtest"
)

var taskIDPattern = regexp.MustCompile(`task_[0-9a-f]{12}`)

// reactiveModel is the OpenAI fake answering from the conversation so
// far: a scripted model cannot know a task id in advance, and this one
// reads it from the tool result the way a model would. next gets the
// text of the last tool message ("" before any) and returns the answer.
func reactiveModel(t *testing.T, next func(lastTool string) llmtest.Script) (url string, fake *llmtest.Server) {
	t.Helper()
	fake = llmtest.NewOpenAI(t)
	inner := fake.Config.Handler
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		last := ""
		for _, m := range req.Messages {
			if m.Role == "tool" {
				var s string
				if json.Unmarshal(m.Content, &s) != nil {
					s = string(m.Content)
				}
				last = s
			}
		}
		fake.Push(next(last))
		r.Body = io.NopCloser(bytes.NewReader(body))
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	return front.URL, fake
}

func toolCall(id, name string, input any) llmtest.Script {
	raw, _ := json.Marshal(input)
	return llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock(id, name, string(raw))}}
}

// TestRunBackgroundCommand: in weft run the model starts a command in the
// background, gets its task id at once, and reads the command's output
// with task_output; a command still running when weft run exits is
// killed with it; without approval nothing starts.
func TestRunBackgroundCommand(t *testing.T) {
	t.Parallel()
	t.Run("started and read back", func(t *testing.T) {
		t.Parallel()
		ws := t.TempDir()
		url, fake := reactiveModel(t, func(last string) llmtest.Script {
			switch {
			case last == "":
				return toolCall("call_bg", "Bash", map[string]any{"command": "sleep 0.2; echo done", "run_in_background": true})
			case strings.Contains(last, "running in the background as task"):
				return toolCall("call_out", "task_output", map[string]any{"taskId": taskIDPattern.FindString(last), "timeoutMs": 10000})
			default:
				return llmtest.Text("The background command printed: ", strings.TrimSpace(last[strings.LastIndex(last, "\n"):]))
			}
		})
		r := runBinary(t, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + url + "/v1", "WEFT_WORKSPACE=" + ws},
			"", "run", "--yes", "--format", "stream-json", "--model", "openai:gpt-4.1", "start it in the background and read it")
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		var results []string
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var ev map[string]any
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			if ev["type"] == "tool_result" {
				results = append(results, fmt.Sprint(ev["output"]))
			}
		}
		if len(results) != 2 {
			t.Fatalf("tool results %q\n%s", results, r.stdout)
		}
		id := taskIDPattern.FindString(results[0])
		if id == "" || !strings.Contains(results[0], "task_output") {
			t.Errorf("Bash result %q", results[0])
		}
		if !strings.Contains(results[1], "Task "+id+" is completed.") || !strings.Contains(results[1], "Exit code: 0") ||
			!strings.HasSuffix(results[1], "Output since the last read:\ndone") {
			t.Errorf("task_output result %q", results[1])
		}
		if !strings.Contains(r.stdout, "The background command printed: done") {
			t.Errorf("final answer missing:\n%s", r.stdout)
		}
		// The model was offered the field and the task tools (but no
		// workflow submission: weft run has no workflows).
		body := string(fake.Requests()[0].Body)
		for _, want := range []string{"run_in_background", `"task_output"`, `"task_kill"`, `"task_list"`, `"task_wait"`} {
			if !strings.Contains(body, want) {
				t.Errorf("the request offers no %s", want)
			}
		}
		if strings.Contains(body, "task_submit_workflow") {
			t.Error("weft run offers task_submit_workflow")
		}
	})

	t.Run("killed when weft run exits", func(t *testing.T) {
		t.Parallel()
		ws := t.TempDir()
		url, _ := reactiveModel(t, func(last string) llmtest.Script {
			switch {
			case last == "":
				return toolCall("call_bg", "Bash", map[string]any{"command": "echo $$ > pid; sleep 60 & echo $! > child; echo ready; wait", "run_in_background": true})
			case strings.Contains(last, "ready"):
				return llmtest.Text("Left it running.")
			default: // poll until it is up
				return toolCall("call_out", "task_output", map[string]any{"taskId": taskIDPattern.FindString(last), "timeoutMs": 100})
			}
		})
		r := runBinary(t, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + url + "/v1", "WEFT_WORKSPACE=" + ws},
			"", "run", "--yes", "--model", "openai:gpt-4.1", "start a server")
		if r.code != 0 || !strings.Contains(r.stdout, "Left it running.") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		for _, name := range []string{"pid", "child"} {
			pid := readPid(t, filepath.Join(ws, name))
			if !gone(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("%s %d still runs after weft run exited", name, pid)
			}
		}
	})

	t.Run("a deny rule refuses it under --yes", func(t *testing.T) {
		t.Parallel()
		ws := t.TempDir()
		settings := filepath.Join(t.TempDir(), "settings.json")
		if err := os.WriteFile(settings, []byte(`{"permissions": {"deny": ["Bash(touch:*)"]}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		fake := llmtest.NewOpenAI(t)
		fake.Push(toolCall("call_bg", "Bash", map[string]any{"command": "touch started", "run_in_background": true}), llmtest.Text("Refused."))
		r := runBinary(t, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + fake.URL + "/v1", "WEFT_WORKSPACE=" + ws},
			"", "run", "--yes", "--settings", settings, "--model", "openai:gpt-4.1", "start it")
		if !strings.Contains(r.stdout, "Bash(touch:*)") || strings.Contains(r.stdout, "running in the background") {
			t.Errorf("stdout: %s", r.stdout)
		}
		if _, err := os.Stat(filepath.Join(ws, "started")); err == nil {
			t.Error("a denied background command ran")
		}
	})

	t.Run("task hooks fire", func(t *testing.T) {
		t.Parallel()
		ws := t.TempDir()
		settings := filepath.Join(t.TempDir(), "settings.json")
		hookCmd := `echo "$HOOK_TYPE $TASK_ID" >> ` + filepath.Join(ws, "hooks.log")
		conf, _ := json.Marshal(map[string]any{"hooks": map[string]any{
			"TaskCreated":   []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": hookCmd}}}},
			"TaskCompleted": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": hookCmd}}}},
		}})
		if err := os.WriteFile(settings, conf, 0o644); err != nil {
			t.Fatal(err)
		}
		url, _ := reactiveModel(t, func(last string) llmtest.Script {
			switch {
			case last == "":
				return toolCall("call_bg", "Bash", map[string]any{"command": "echo hi", "run_in_background": true})
			case strings.Contains(last, "running in the background as task"):
				return toolCall("call_out", "task_output", map[string]any{"taskId": taskIDPattern.FindString(last), "timeoutMs": 10000})
			default:
				return llmtest.Text("Done.")
			}
		})
		r := runBinary(t, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + url + "/v1", "WEFT_WORKSPACE=" + ws},
			"", "run", "--yes", "--settings", settings, "--model", "openai:gpt-4.1", "start it")
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		// weft run waits for the hooks before it exits.
		log, err := os.ReadFile(filepath.Join(ws, "hooks.log"))
		id := taskIDPattern.FindString(string(log))
		if err != nil || id == "" || !strings.Contains(r.stdout, id) ||
			!strings.Contains(string(log), "task_created "+id+"\n") || !strings.Contains(string(log), "task_completed "+id+"\n") {
			t.Fatalf("hooks.log %q (%v)", log, err)
		}
	})

	t.Run("denied without approval", func(t *testing.T) {
		t.Parallel()
		ws := t.TempDir()
		fake := llmtest.NewOpenAI(t)
		fake.Push(toolCall("call_bg", "Bash", map[string]any{"command": "touch started", "run_in_background": true}), llmtest.Text("Could not."))
		r := runBinary(t, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + fake.URL + "/v1", "WEFT_WORKSPACE=" + ws},
			"", "run", "--model", "openai:gpt-4.1", "start it")
		// The transcript (and an approval prompt) says where it would run.
		if !strings.Contains(r.stdout, "● Bash(touch started) in the background") ||
			!strings.Contains(r.stdout, "Permission denied") || strings.Contains(r.stdout, "running in the background") {
			t.Errorf("stdout: %s", r.stdout)
		}
		if _, err := os.Stat(filepath.Join(ws, "started")); err == nil {
			t.Error("the background command ran without approval")
		}
	})
}

// readPid reads a pid a command wrote, waiting briefly for the file.
func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s: %q %v", path, b, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gone reports whether pid has ended (a zombie counts), waiting briefly:
// a process killed as weft exits is reaped by init.
func gone(pid int) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// TestServeBackgroundCommand: under weft serve a model's background
// command is a task of the server's registry (listed at /v1/tasks, read
// with task_output) and outlives the turn that started it, until the
// server stops, which kills it.
func TestServeBackgroundCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, fake := reactiveModel(t, func(last string) llmtest.Script {
		switch {
		case last == "":
			return toolCall("call_bg", "Bash", map[string]any{"command": "echo $$ > pid; sleep 60 & echo $! > child; echo ready; wait", "run_in_background": true})
		case strings.Contains(last, "ready"):
			return llmtest.Text("It is up.")
		default:
			return toolCall("call_out", "task_output", map[string]any{"taskId": taskIDPattern.FindString(last), "timeoutMs": 100})
		}
	})
	p := startServe(t, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + url + "/v1"},
		"--db", filepath.Join(dir, "weft.db"), "--workspace", dir, "--model", "openai:gpt-4.1", "--permission-mode", "bypass")
	p.expect("POST", "/v1/sessions", `{"session_id":"s"}`, 201)
	resp := p.request("POST", "/v1/sessions/s/messages", `{"prompt":"start the server"}`)
	fs, err := frames(t, resp, nil)
	resp.Body.Close()
	if !errors.Is(err, io.EOF) || !strings.Contains(fs[len(fs)-1].data, "end_turn") {
		t.Fatalf("turn: %v %s\n%s", err, eventNames(fs), p.log())
	}
	if body := string(fake.Requests()[0].Body); !strings.Contains(body, "run_in_background") {
		t.Error("weft serve's Bash offers no run_in_background")
	}
	tasks := p.expect("GET", "/v1/tasks", "", 200)
	list, _ := tasks["tasks"].([]any)
	if len(list) != 1 {
		t.Fatalf("tasks %v", tasks)
	}
	tk := list[0].(map[string]any)
	if tk["kind"] != "process" || tk["status"] != "running" || !strings.Contains(fmt.Sprint(tk["description"]), "echo ready") {
		t.Fatalf("task %v", tk)
	}
	pids := []int{readPid(t, filepath.Join(dir, "pid")), readPid(t, filepath.Join(dir, "child"))}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("process %d ended with the turn: %v", pid, err)
		}
	}
	p.stop()
	for _, pid := range pids {
		if !gone(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("process %d still runs after weft serve stopped", pid)
		}
	}
}
