package builtin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weft-run/weft/tool"
)

func newTestBash(t *testing.T, env ...string) (*bashTool, string) {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	return NewBash(Config{Workspace: ws, Env: env}).(*bashTool), ws
}

// bashPidGone waits until pid no longer exists (a killed child is reaped
// by init once its parent shell is gone).
func bashPidGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		// A zombie still answers kill(0); check its state.
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("process %d is still running", pid)
}

// bashFirstPid reads the pid a command printed on its first line.
func bashFirstPid(t *testing.T, out string) int {
	t.Helper()
	line, _, _ := strings.Cut(out, "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("no pid on the first line of %q", out)
	}
	return pid
}

func TestBashResults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		command  string
		want     string
		exitCode int
	}{
		{name: "stdout", command: "echo hello", want: "hello"},
		{name: "no output", command: "true", want: "(no output)"},
		{name: "exit code", command: "echo out; exit 3", want: "out\nExit code: 3", exitCode: 3},
		{name: "exit code without output", command: "exit 1", want: "Exit code: 1", exitCode: 1},
		{name: "interleaving", command: "echo one; echo two >&2; echo three; echo four >&2", want: "one\ntwo\nthree\nfour"},
		{name: "trailing newlines trimmed", command: "printf 'a\\n\\n\\n'", want: "a"},
		{name: "no trailing newline", command: "printf abc", want: "abc"},
		{name: "stdin is empty", command: "cat; echo done", want: "done"},
		{name: "killed by signal", command: "kill -9 $$", want: "Exit code: 137", exitCode: 137},
		{name: "pipes", command: "printf 'b\\na\\n' | sort", want: "a\nb"},
	}
	bash, _ := newTestBash(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := wsTestRun(t, bash, nil, wsJSON(map[string]any{"command": tc.command}))
			if res.IsError {
				t.Fatalf("IsError for %q: %s", tc.command, res.TextOf())
			}
			if got := res.TextOf(); got != tc.want {
				t.Fatalf("output %q, want %q", got, tc.want)
			}
			if got := res.Data["exit_code"]; got != tc.exitCode {
				t.Fatalf("exit_code %v, want %d", got, tc.exitCode)
			}
			if res.Data["timed_out"] != false {
				t.Fatalf("timed_out = %v", res.Data["timed_out"])
			}
		})
	}
}

func TestBashWorkspaceAndEnv(t *testing.T) {
	t.Parallel()
	bash, ws := newTestBash(t, "WEFT_BASH_TEST=from-config", "HOME=/weft-home")
	res := wsTestRun(t, bash, nil, `{"command": "pwd; echo \"$PWD\"; echo $WEFT_BASH_TEST; echo $HOME; test -n \"$PATH\" && echo path-set"}`)
	want := ws + "\n" + ws + "\nfrom-config\n/weft-home\npath-set"
	if got := res.TextOf(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestBashTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	bash, _ := newTestBash(t)
	start := time.Now()
	res := wsTestRun(t, bash, nil, `{"command": "sleep 30 & echo $!; wait", "timeout": 300}`)
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("timeout took %v", el)
	}
	if !res.IsError || res.Data["timed_out"] != true {
		t.Fatalf("want a timed-out error result, got %+v", res)
	}
	if !strings.Contains(res.TextOf(), "timed out after 300ms") {
		t.Fatalf("result does not say it timed out: %q", res.TextOf())
	}
	bashPidGone(t, bashFirstPid(t, res.TextOf()))
}

func TestBashCancelKillsProcessGroup(t *testing.T) {
	t.Parallel()
	bash, _ := newTestBash(t)
	ctx, cancel := context.WithCancel(context.Background())
	pids := make(chan string, 1)
	call := &tool.Call{
		Input: []byte(`{"command": "sleep 30 & echo $!; sleep 40"}`), Session: tool.NewSession(),
		Progress: func(line string) {
			select {
			case pids <- line:
			default:
			}
		},
	}
	go func() {
		<-pids
		cancel()
	}()
	start := time.Now()
	res, err := bash.Run(ctx, call)
	must(t, err)
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("cancel took %v", el)
	}
	if !res.IsError || res.Data["cancelled"] != true {
		t.Fatalf("want a cancelled error result, got %+v", res)
	}
	bashPidGone(t, bashFirstPid(t, res.TextOf()))
}

func TestBashContextDeadlineIsTimeout(t *testing.T) {
	t.Parallel()
	bash, _ := newTestBash(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res := wsTestRunCtx(t, ctx, bash, nil, `{"command": "sleep 30"}`)
	if !res.IsError || res.Data["timed_out"] != true || !strings.Contains(res.TextOf(), "timed out after") {
		t.Fatalf("got %+v", res)
	}
}

func TestBashAlreadyCancelled(t *testing.T) {
	t.Parallel()
	bash, ws := newTestBash(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := wsTestRunCtx(t, ctx, bash, nil, `{"command": "touch started"}`)
	if !res.IsError {
		t.Fatalf("want an error result, got %q", res.TextOf())
	}
	if _, err := os.Stat(filepath.Join(ws, "started")); err == nil {
		t.Fatal("the command ran although ctx was cancelled")
	}
}

func TestBashSigtermIgnoredGetsKilled(t *testing.T) {
	t.Parallel()
	bash, _ := newTestBash(t)
	bash.killGrace = 200 * time.Millisecond
	start := time.Now()
	res := wsTestRun(t, bash, nil, `{"command": "trap '' TERM; sleep 30 & echo $!; wait", "timeout": 200}`)
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("took %v", el)
	}
	if res.Data["timed_out"] != true {
		t.Fatalf("not timed out: %+v", res)
	}
	bashPidGone(t, bashFirstPid(t, res.TextOf()))
}

func TestBashBackgroundHoldingOutputIsStopped(t *testing.T) {
	t.Parallel()
	bash, _ := newTestBash(t)
	bash.detachGrace = 200 * time.Millisecond
	start := time.Now()
	res := wsTestRun(t, bash, nil, `{"command": "sleep 30 & echo $!"}`)
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("took %v", el)
	}
	if res.IsError || res.Data["exit_code"] != 0 {
		t.Fatalf("unexpected result %+v", res)
	}
	if !strings.Contains(res.TextOf(), "Background processes still attached") {
		t.Fatalf("no note about stopped background processes: %q", res.TextOf())
	}
	bashPidGone(t, bashFirstPid(t, res.TextOf()))
}

func TestBashDetachedBackgroundSurvives(t *testing.T) {
	t.Parallel()
	bash, _ := newTestBash(t)
	res := wsTestRun(t, bash, nil, `{"command": "nohup sleep 30 > /dev/null 2>&1 & echo $!"}`)
	pid := bashFirstPid(t, res.TextOf())
	defer syscall.Kill(pid, syscall.SIGKILL)
	if strings.Contains(res.TextOf(), "Background") {
		t.Fatalf("detached process reported as stopped: %q", res.TextOf())
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("detached process %d is gone: %v", pid, err)
	}
}

func TestBashLongOutputKeepsHeadAndTail(t *testing.T) {
	t.Parallel()
	bash, _ := newTestBash(t)
	res := wsTestRun(t, bash, nil, `{"command": "echo FIRST; seq 1 100000; echo LAST >&2; exit 2"}`)
	out := res.TextOf()
	if len(out) > 31000 {
		t.Fatalf("output is %d bytes", len(out))
	}
	if !strings.HasPrefix(out, "FIRST\n1\n2\n") || !strings.HasSuffix(out, "99999\n100000\nLAST\nExit code: 2") {
		t.Fatalf("head or tail missing:\n%s...%s", out[:50], out[len(out)-50:])
	}
	if !strings.Contains(out, "bytes of output omitted") {
		t.Fatal("no omission marker")
	}
	// Cut at line boundaries: every line around the marker is whole.
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.HasPrefix(l, "...") || l == "FIRST" || l == "LAST" || strings.HasPrefix(l, "Exit code") {
			continue
		}
		if _, err := strconv.Atoi(l); err != nil {
			t.Fatalf("broken line %q", l)
		}
	}
}

func TestBashOutputBuffer(t *testing.T) {
	t.Parallel()
	o := newBashOutput(10)
	for _, s := range []string{"ab", "cdefgh", "ijklmnopqrstuvwxyz"} {
		o.Write([]byte(s))
	}
	if got, want := o.String(), "abcde\n... [16 bytes of output omitted] ...\n\nvwxyz"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	small := newBashOutput(10)
	small.Write([]byte("0123456789"))
	if got := small.String(); got != "0123456789" {
		t.Fatalf("got %q", got)
	}
}

func TestBashProgressStreamsLines(t *testing.T) {
	t.Parallel()
	bash, _ := newTestBash(t)
	var mu sync.Mutex
	var lines []string
	call := &tool.Call{
		Input: []byte(`{"command": "echo one; sleep 0.1; echo two >&2; printf 'three\\r\\nfour'"}`), Session: tool.NewSession(),
		Progress: func(s string) {
			mu.Lock()
			lines = append(lines, s)
			mu.Unlock()
		},
	}
	if _, err := bash.Run(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(lines, "|"); got != "one|two|three|four" {
		t.Fatalf("progress lines %q", got)
	}
}

func TestBashTimeoutArgument(t *testing.T) {
	t.Parallel()
	bash, _ := newTestBash(t)
	res := wsTestRun(t, bash, nil, `{"command": "sleep 0.5; echo done", "timeout": 5000}`)
	if res.IsError || res.TextOf() != "done" {
		t.Fatalf("got %+v", res)
	}
}

func TestBashMissingWorkspace(t *testing.T) {
	t.Parallel()
	bash := NewBash(Config{Workspace: filepath.Join(t.TempDir(), "missing")})
	res := wsTestRun(t, bash, nil, `{"command": "true"}`)
	if !res.IsError || !strings.Contains(res.TextOf(), "missing") {
		t.Fatalf("got %+v", res)
	}
}

// TestBashNoLeaks runs commands that time out, get cancelled and leave
// background processes, then checks that no goroutine of the tool is
// left. It does not call t.Parallel, so it runs while no other test of the
// package does.
func TestBashNoLeaks(t *testing.T) {
	bash, _ := newTestBash(t)
	bash.detachGrace = 100 * time.Millisecond
	bash.killGrace = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	wsTestRunCtx(t, ctx, bash, nil, `{"command": "sleep 10"}`)
	wsTestRun(t, bash, nil, `{"command": "sleep 10", "timeout": 100}`)
	wsTestRun(t, bash, nil, `{"command": "sleep 10 &"}`)
	wsTestRun(t, bash, nil, `{"command": "echo hi"}`)

	deadline := time.Now().Add(3 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "builtin.bashPump") && !strings.Contains(stacks, "builtin.(*bashTool)") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines left behind:\n%s", stacks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBashSpec(t *testing.T) {
	t.Parallel()
	s := NewBash(Config{}).Spec()
	if s.Name != "Bash" || s.ReadOnly || s.ConcurrencySafe || s.Effect != tool.EffectExecute ||
		s.Permission != tool.ClassBash || s.Timeout != 10*time.Minute || s.OutputCap != 32000 {
		t.Fatalf("unexpected spec meta: %+v", s.Meta)
	}
}
