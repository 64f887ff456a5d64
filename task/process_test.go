package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weft-run/weft/policy/secret"
)

// pollOutput reads the task's output until the text read so far contains
// want; it returns everything read.
func pollOutput(t *testing.T, r *Registry, id, want string) string {
	t.Helper()
	var got strings.Builder
	deadline := time.Now().Add(long)
	for {
		po, err := r.ReadOutput(id, 1<<20)
		if err != nil {
			t.Fatalf("ReadOutput(%s): %v", id, err)
		}
		got.WriteString(po.Output)
		if strings.Contains(got.String(), want) {
			return got.String()
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the output after %v: %q", want, long, got.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// processGone waits until no process has pid (a zombie counts as gone).
func processGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(long)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("process %d is still running", pid)
}

// TestReadOutputIsIncremental: each read returns what the process wrote
// since the previous one, while it runs and after it ended; the last read
// is empty.
func TestReadOutputIsIncremental(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t, nil, Options{})
	stdin, gate, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	cmd := exec.Command("sh", "-c", "echo one; read x; echo two; exit 4")
	cmd.Stdin = stdin
	sub, err := r.SubmitProcess(context.Background(), "", cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := pollOutput(t, r, sub.ID, "one\n"); got != "one\n" {
		t.Fatalf("first read %q", got)
	}
	if po, err := r.ReadOutput(sub.ID, 100); err != nil || po.Output != "" || po.Task.Done() {
		t.Fatalf("a read with nothing new = %+v, %v", po, err)
	}
	gate.Close() // read x returns
	end := mustEnd(t, r, sub.ID)
	po, err := r.ReadOutput(sub.ID, 100)
	if err != nil || po.Output != "two\n" || po.Skipped != 0 || po.Task.Status != StatusFailed {
		t.Fatalf("read after the end = %+v, %v", po, err)
	}
	if pr := processResult(t, end); pr.ExitCode != 4 || pr.Output != "one\ntwo\n" {
		t.Fatalf("result = %+v", pr)
	}
	if po, _ := r.ReadOutput(sub.ID, 100); po.Output != "" {
		t.Fatalf("read again = %+v", po)
	}
}

// TestReadOutputBounds: a read returns the latest bytes when more was
// written than it may return or than the task keeps, and says how much it
// skipped; a character is never cut.
func TestReadOutputBounds(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t, nil, Options{})
	tests := []struct {
		name        string
		script      string
		max         int
		want        string
		wantSkipped int64
	}{
		{"beyond max", "printf 0123456789", 4, "6789", 6},
		{"beyond the kept output", fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x; printf END", ProcessOutputCap+100), ProcessOutputCap + 500,
			strings.Repeat("x", ProcessOutputCap-3) + "END", 103},
		// "é" is 2 bytes: a cut in its middle moves on to the next rune.
		{"cut inside a character", "printf 'aéé'", 3, "é", 3},
	}
	for _, tt := range tests {
		sub, err := r.SubmitProcess(context.Background(), tt.name, exec.Command("sh", "-c", tt.script), nil)
		if err != nil {
			t.Fatal(err)
		}
		mustEnd(t, r, sub.ID)
		po, err := r.ReadOutput(sub.ID, tt.max)
		if err != nil || po.Output != tt.want || po.Skipped != tt.wantSkipped {
			t.Errorf("%s: read %q (%d bytes) skipped %d, %v; want %d bytes skipped %d", tt.name, clip(po.Output), len(po.Output), po.Skipped, err, len(tt.want), tt.wantSkipped)
		}
	}
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:20] + "…" + s[len(s)-20:]
	}
	return s
}

// TestTailBufferHoldsBackAPartialCharacter: while a process runs, a read
// never ends in the middle of a character; the rest of it comes with the
// next read. After the end, what is there is returned.
func TestTailBufferHoldsBackAPartialCharacter(t *testing.T) {
	t.Parallel()
	b := &tailBuffer{max: 100, red: (*secret.Set)(nil).NewStream()}
	euro := "€" // 3 bytes
	_, _ = b.Write([]byte("a" + euro[:2]))
	text, skipped, next := b.since(0, 100, false)
	if text != "a" || skipped != 0 || next != 1 {
		t.Fatalf("read = %q %d %d", text, skipped, next)
	}
	_, _ = b.Write([]byte(euro[2:] + "b"))
	if text, _, next = b.since(next, 100, false); text != euro+"b" || next != 5 {
		t.Fatalf("read = %q %d", text, next)
	}
	_, _ = b.Write([]byte(euro[:1]))
	if text, _, _ = b.since(next, 100, true); text != "\uFFFD" {
		t.Fatalf("final read = %q", text)
	}
}

// TestReadOutputErrors: only a process whose output the registry keeps can
// be read.
func TestReadOutputErrors(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t, newMemRunner(testWorkflows(nil, nil)), Options{})
	wf, err := r.SubmitWorkflow(context.Background(), "echo", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	own := exec.Command("sh", "-c", "echo mine")
	own.Stdout = io.Discard
	proc, err := r.SubmitProcess(context.Background(), "", own, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id   string
		max  int
		want error
	}{
		{"task_nope", 10, ErrUnknownTask},
		{wf.ID, 10, ErrInvalid},
		{proc.ID, 10, ErrInvalid},
		{proc.ID, 0, ErrInvalid},
	}
	for _, tt := range tests {
		if _, err := r.ReadOutput(tt.id, tt.max); !errors.Is(err, tt.want) {
			t.Errorf("ReadOutput(%s, %d) = %v, want %v", tt.id, tt.max, err, tt.want)
		}
	}
}

// TestKillProcessKillsItsChildren: a shell's "cmd &" ignores SIGINT, so
// the cooperative step ends the shell but not its child; killing the task
// must still leave nothing of its process group running, whether the
// child holds the task's output open or not.
func TestKillProcessKillsItsChildren(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
	}{
		{"holding the output", "sleep 60 & echo $!; wait"},
		{"output elsewhere", "sleep 60 >/dev/null 2>&1 & echo $!; wait"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newTestRegistry(t, nil, Options{})
			sub, err := r.SubmitProcess(context.Background(), "", exec.Command("sh", "-c", tt.script), nil)
			if err != nil {
				t.Fatal(err)
			}
			line := pollOutput(t, r, sub.ID, "\n")
			child, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatalf("no pid in %q", line)
			}
			if err := r.Kill(sub.ID); err != nil {
				t.Fatal(err)
			}
			if got := mustEnd(t, r, sub.ID); got.Status != StatusCancelled {
				t.Fatalf("task = %+v", got)
			}
			processGone(t, child)
		})
	}
}

// TestMaxProcesses: at most MaxProcesses process tasks run at once, even
// when submissions race; a slot frees when a task ends.
func TestMaxProcesses(t *testing.T) {
	t.Parallel()
	const maxProcs = 3
	r := newTestRegistry(t, nil, Options{MaxProcesses: maxProcs})
	var mu sync.Mutex
	var started []string
	var refused int
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sub, err := r.SubmitProcess(context.Background(), "", exec.Command("sleep", "60"), nil)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				started = append(started, sub.ID)
			case errors.Is(err, ErrTooMany) && strings.Contains(err.Error(), "task_kill"):
				refused++
			default:
				t.Errorf("submit: %v", err)
			}
		}()
	}
	wg.Wait()
	if len(started) != maxProcs || refused != 10-maxProcs {
		t.Fatalf("%d started, %d refused; want %d and %d", len(started), refused, maxProcs, 10-maxProcs)
	}
	if _, err := r.SubmitProcess(context.Background(), "", exec.Command("/nonexistent/weft-test"), nil); !errors.Is(err, ErrTooMany) {
		t.Fatalf("a submission beyond the bound: %v", err)
	}
	if err := r.Kill(started[0]); err != nil {
		t.Fatal(err)
	}
	mustEnd(t, r, started[0])
	// A process that fails to start gives its slot back at once.
	if _, err := r.SubmitProcess(context.Background(), "", exec.Command("/nonexistent/weft-test"), nil); err == nil || errors.Is(err, ErrTooMany) {
		t.Fatalf("a start that fails: %v", err)
	}
	sub, err := r.SubmitProcess(context.Background(), "", exec.Command("sleep", "60"), nil)
	if err != nil {
		t.Fatalf("after a task ended and a start failed: %v", err)
	}
	started = append(started, sub.ID)
	for _, id := range started[1:] {
		_ = r.Kill(id)
	}
}

// TestProcessUsesTheCallersSecrets: secrets given with the submission
// (a tool call's) are passed to the process by name and redacted from its
// output, also when the registry has none of its own, and the description
// shows no value.
func TestProcessUsesTheCallersSecrets(t *testing.T) {
	t.Parallel()
	const value = "zqKp2WmXv4Rt8LnB"
	set := secret.NewSet()
	if err := set.Set("CALL_TOKEN", value); err != nil {
		t.Fatal(err)
	}
	r := newTestRegistry(t, nil, Options{})
	sub, err := r.SubmitProcess(context.Background(), "uses "+value, exec.Command("sh", "-c", `echo "token=$CALL_TOKEN"`), set)
	if err != nil {
		t.Fatal(err)
	}
	tk := mustEnd(t, r, sub.ID)
	po, _ := r.ReadOutput(sub.ID, 1000)
	if po.Output != "token=[SECRET:CALL_TOKEN]\n" || strings.Contains(string(tk.Result), value) {
		t.Fatalf("read %q, result %s", po.Output, tk.Result)
	}
	if strings.Contains(sub.Description, value) || !strings.Contains(sub.Description, "[SECRET:CALL_TOKEN]") {
		t.Fatalf("description %q", sub.Description)
	}
}
