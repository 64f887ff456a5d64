package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/task"
	"github.com/weft-run/weft/tool"
)

// backgroundTools is a tool registry with Bash taking run_in_background
// into tasks and the task tools reading them, as weft run and chat wire
// it; secrets are the calls' secrets (the tasks' registry has none of its
// own, so that only the call's can redact).
type backgroundTools struct {
	t       *testing.T
	reg     *tool.Registry
	tasks   *task.Registry
	ws      string
	secrets *secret.Set
}

func newBackgroundTools(t *testing.T, opt task.Options, env ...string) *backgroundTools {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	if opt.TermGrace == 0 {
		opt.TermGrace = 100 * time.Millisecond
	}
	if opt.KillGrace == 0 {
		opt.KillGrace = 100 * time.Millisecond
	}
	tasks := task.NewRegistry(nil, opt)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tasks.Close(ctx); err != nil {
			t.Errorf("closing the tasks: %v", err)
		}
	})
	reg, err := tool.NewRegistry(append([]tool.Tool{NewBash(Config{Workspace: ws, Env: env, Background: tasks})}, tasks.Tools()...)...)
	must(t, err)
	return &backgroundTools{t: t, reg: reg, tasks: tasks, ws: ws}
}

func (b *backgroundTools) exec(name string, input any) tool.Result {
	b.t.Helper()
	raw, err := json.Marshal(input)
	must(b.t, err)
	return b.reg.Execute(context.Background(), &tool.Call{ID: "call_1", Name: name, Input: raw, Secrets: b.secrets})
}

// start runs command with run_in_background and returns the task's id.
func (b *backgroundTools) start(command string) string {
	b.t.Helper()
	res := b.exec("Bash", map[string]any{"command": command, "run_in_background": true})
	id, _ := res.Data["task_id"].(string)
	if res.IsError || id == "" || !strings.Contains(res.TextOf(), id) || !strings.Contains(res.TextOf(), "task_output") {
		b.t.Fatalf("Bash in the background: %v %s", res.IsError, res.TextOf())
	}
	return id
}

// read calls task_output until its output so far contains want, and
// returns all of it.
func (b *backgroundTools) read(id, want string) string {
	b.t.Helper()
	var got strings.Builder
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := b.exec("task_output", map[string]any{"taskId": id})
		if res.IsError {
			b.t.Fatalf("task_output: %s", res.TextOf())
		}
		got.WriteString(res.Data["output"].(string))
		if strings.Contains(got.String(), want) {
			return got.String()
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("no %q in the output: %q", want, got.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBashBackgroundThroughTheFramework: a command given
// run_in_background returns at once with a task id; task_output waits for
// it and returns its output and exit code, and a second read has nothing
// new.
func TestBashBackgroundThroughTheFramework(t *testing.T) {
	t.Parallel()
	b := newBackgroundTools(t, task.Options{})
	start := time.Now()
	id := b.start("sleep 0.2; echo done; pwd")
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("the call took %v: it waited for the command", el)
	}
	res := b.exec("task_output", map[string]any{"taskId": id, "timeoutMs": 10000})
	text := res.TextOf()
	if res.IsError || !strings.Contains(text, "Task "+id+" is completed.") || !strings.Contains(text, "Exit code: 0") ||
		!strings.Contains(text, "Output since the last read:\ndone\n"+b.ws) {
		t.Fatalf("task_output: %s", text)
	}
	if tk := res.Data["task"].(task.Task); tk.Description != "sleep 0.2; echo done; pwd" || strings.Contains(string(tk.Result), "done") {
		t.Fatalf("task in the data = %+v (the output belongs in \"output\" only)", tk)
	}
	res = b.exec("task_output", map[string]any{"taskId": id})
	if res.IsError || !strings.Contains(res.TextOf(), "No output since the last read.") {
		t.Fatalf("second read: %s", res.TextOf())
	}
	res = b.exec("task_list", map[string]any{})
	if !strings.Contains(res.TextOf(), id+"  completed  process  sleep 0.2; echo done; pwd") {
		t.Fatalf("task_list: %s", res.TextOf())
	}
}

// TestBashBackgroundReadsAreIncremental: while the command runs each
// read returns what is new, and the model is told it still runs; task_wait
// reports the exit without repeating the output.
func TestBashBackgroundReadsAreIncremental(t *testing.T) {
	t.Parallel()
	b := newBackgroundTools(t, task.Options{})
	id := b.start("echo one; while [ ! -e go ]; do sleep 0.01; done; echo two; exit 3")
	if got := b.read(id, "one\n"); got != "one\n" {
		t.Fatalf("first reads: %q", got)
	}
	res := b.exec("task_output", map[string]any{"taskId": id, "timeoutMs": 50})
	if !strings.Contains(res.TextOf(), "still running after 50 ms") || !strings.Contains(res.TextOf(), "No new output yet.") ||
		!strings.Contains(res.TextOf(), "call task_output again") {
		t.Fatalf("read while running: %s", res.TextOf())
	}
	must(t, os.WriteFile(filepath.Join(b.ws, "go"), nil, 0o644))
	res = b.exec("task_wait", map[string]any{"ids": []string{id}, "timeoutMs": 10000})
	if res.IsError || !strings.HasPrefix(res.TextOf(), "1 of 1 tasks have ended. Read a command's output with task_output.") ||
		!strings.Contains(res.TextOf(), `"exitCode": 3`) || strings.Contains(res.TextOf(), `"output"`) {
		t.Fatalf("task_wait: %s", res.TextOf())
	}
	res = b.exec("task_output", map[string]any{"taskId": id})
	if !strings.Contains(res.TextOf(), "is failed.") || !strings.Contains(res.TextOf(), "Exit code: 3") ||
		!strings.HasSuffix(res.TextOf(), "Output since the last read:\ntwo") {
		t.Fatalf("read after the end: %s", res.TextOf())
	}
}

// TestBashBackgroundKillStopsTheGroup: task_kill stops a background
// command and every process it started.
func TestBashBackgroundKillStopsTheGroup(t *testing.T) {
	t.Parallel()
	b := newBackgroundTools(t, task.Options{})
	id := b.start("sleep 60 & a=$!; sleep 60 >/dev/null & echo $a $!; sleep 60")
	out := b.read(id, "\n")
	var pids []int
	for _, f := range strings.Fields(out) {
		pid, err := strconv.Atoi(f)
		must(t, err)
		pids = append(pids, pid)
	}
	res := b.exec("task_kill", map[string]any{"taskId": id})
	if res.IsError || !strings.Contains(res.TextOf(), "is cancelled") {
		t.Fatalf("task_kill: %s", res.TextOf())
	}
	tk, err := b.tasks.Get(id)
	must(t, err)
	var pr task.ProcessResult
	must(t, json.Unmarshal(tk.Result, &pr))
	for _, pid := range append(pids, pr.PID) {
		bashPidGone(t, pid)
	}
}

// TestBashBackgroundEnvironmentIsScrubbed: a background command gets the
// environment a foreground one gets: no weft settings or provider keys,
// the settings' env, the call's secrets by name, the workspace. Not
// parallel: it sets the process environment.
func TestBashBackgroundEnvironmentIsScrubbed(t *testing.T) {
	t.Setenv("WEFT_BEARER_TOKEN", "bearer-0a1b2c3d4e5f")
	t.Setenv("OPENAI_API_KEY", "sk-openai-0a1b2c3d4e")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "gateway-0a1b2c3d4e5f")
	t.Setenv("BG_ENV_TEST_KEPT", "kept-value")
	b := newBackgroundTools(t, task.Options{}, "FROM_SETTINGS=settings-value")
	b.secrets = secret.NewSet()
	must(t, b.secrets.Set("BG_PASSED", "passed-0a1b2c3d4e5f"))
	id := b.start("env; echo END")
	out := b.read(id, "END\n")
	for _, hidden := range []string{"WEFT_BEARER_TOKEN", "bearer-0a1b", "OPENAI_API_KEY", "sk-openai", "ANTHROPIC_AUTH_TOKEN", "gateway-0a1b", "passed-0a1b"} {
		if strings.Contains(out, hidden) {
			t.Errorf("the background command sees %s:\n%s", hidden, out)
		}
	}
	for _, want := range []string{"BG_ENV_TEST_KEPT=kept-value", "FROM_SETTINGS=settings-value", "BG_PASSED=[SECRET:BG_PASSED]", "PWD=" + b.ws, "PATH="} {
		if !strings.Contains(out, want) {
			t.Errorf("the background command lacks %s:\n%s", want, out)
		}
	}
}

// TestBashBackgroundOutputIsRedacted: a background command's output is
// redacted with the call's secrets before it is kept, whether a value
// comes whole, split across writes, or where the kept output is cut.
func TestBashBackgroundOutputIsRedacted(t *testing.T) {
	t.Parallel()
	const value = "zqKp2WmXv4Rt8LnB"
	b := newBackgroundTools(t, task.Options{})
	b.secrets = secret.NewSet()
	must(t, b.secrets.Set("BG_TOKEN", value))
	tests := []struct {
		name, script string
		marker       bool
	}{
		{"whole", `echo "token $BG_TOKEN"`, true},
		{"split across writes", fmt.Sprintf("printf %s; sleep 0.1; printf '%s after\\n'", value[:5], value[5:]), true},
		// The kept output is the last task.ProcessOutputCap bytes: the
		// value's first 6 bytes fall before them.
		{"at the cut", fmt.Sprintf("printf %s; head -c %d /dev/zero | tr '\\0' y", value, task.ProcessOutputCap-len(value)+6), false},
	}
	for _, tt := range tests {
		id := b.start(tt.script)
		res := b.exec("task_output", map[string]any{"taskId": id, "timeoutMs": 10000})
		tk, err := b.tasks.Get(id)
		must(t, err)
		// The output as the model reads it and as the task keeps it (the
		// command line in the description holds the split value's pieces
		// as written).
		out, _ := res.Data["output"].(string)
		for _, s := range []string{out, string(tk.Result)} {
			for i := 0; i+5 <= len(value); i++ {
				if strings.Contains(s, value[i:i+5]) {
					t.Errorf("%s: %q of the secret in %.200q", tt.name, value[i:i+5], s)
					break
				}
			}
		}
		if tt.marker && !strings.Contains(out, "[SECRET:BG_TOKEN]") {
			t.Errorf("%s: no marker in %s", tt.name, res.TextOf())
		}
	}
}

// TestBashBackgroundBounded: beyond the registry's bound on running
// processes, a background command is refused with a clear result.
func TestBashBackgroundBounded(t *testing.T) {
	t.Parallel()
	b := newBackgroundTools(t, task.Options{MaxProcesses: 1})
	b.start("sleep 60")
	res := b.exec("Bash", map[string]any{"command": "sleep 60", "run_in_background": true})
	if !res.IsError || !strings.Contains(res.TextOf(), "too many background processes") || !strings.Contains(res.TextOf(), "task_kill") {
		t.Fatalf("second command: %v %s", res.IsError, res.TextOf())
	}
}

// TestBashWithoutBackground: a Bash built without Config.Background does
// not offer run_in_background, the framework refuses the field, and the
// tool itself refuses it if it gets it anyway.
func TestBashWithoutBackground(t *testing.T) {
	t.Parallel()
	plain := NewBash(Config{Workspace: t.TempDir()})
	with := NewBash(Config{Workspace: t.TempDir(), Background: task.NewRegistry(nil, task.Options{})})
	for _, tc := range []struct {
		tl   tool.Tool
		want bool
	}{{plain, false}, {with, true}} {
		s := tc.tl.Spec()
		has := strings.Contains(string(s.InputSchema), "run_in_background")
		if has != tc.want || strings.Contains(s.Description, "run_in_background") != tc.want {
			t.Errorf("background %v: schema or description mentions run_in_background: %v", tc.want, has)
		}
	}
	reg, err := tool.NewRegistry(plain)
	must(t, err)
	marker := filepath.Join(t.TempDir(), "ran")
	res := reg.Execute(context.Background(), &tool.Call{ID: "c", Name: "Bash",
		Input: json.RawMessage(fmt.Sprintf(`{"command":"touch %s","run_in_background":true}`, marker))})
	if !res.IsError || !strings.Contains(res.TextOf(), "run_in_background") {
		t.Fatalf("framework: %v %s", res.IsError, res.TextOf())
	}
	res = wsTestRun(t, plain, nil, fmt.Sprintf(`{"command":"touch %s","run_in_background":true}`, marker))
	if !res.IsError || !strings.Contains(res.TextOf(), "run_in_background is not available here") {
		t.Fatalf("tool: %v %s", res.IsError, res.TextOf())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran")
	}
}

// TestBashBackgroundLongOutput: a read of more output than one result
// holds shows the newest, says how much it left out, and is not cut again
// by the framework's cap (which would cut the newest).
func TestBashBackgroundLongOutput(t *testing.T) {
	t.Parallel()
	b := newBackgroundTools(t, task.Options{})
	id := b.start("head -c 40000 /dev/zero | tr '\\0' x; echo END")
	res := b.exec("task_output", map[string]any{"taskId": id, "timeoutMs": 10000})
	text := res.TextOf()
	want := fmt.Sprintf("[%d earlier bytes of the output written since the last read are left out", 40004-task.ToolReadMax)
	if res.IsError || res.Truncated != 0 || !strings.Contains(text, want) || !strings.HasSuffix(text, "xxxxEND") ||
		res.Data["output"] != strings.Repeat("x", task.ToolReadMax-4)+"END\n" {
		t.Fatalf("task_output (truncated %d): %.300s ... %s", res.Truncated, text, text[max(0, len(text)-100):])
	}
}
