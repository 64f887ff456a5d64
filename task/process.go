package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/weft-run/weft/policy/secret"
)

// ProcessOutputCap is how much of a process task's combined output its
// result keeps: the last bytes, where the outcome usually is.
const ProcessOutputCap = 64 << 10

// ProcessResult is the Result of a process task.
type ProcessResult struct {
	PID      int    `json:"pid"`
	ExitCode int    `json:"exitCode"` // -1 when killed by a signal
	Signal   string `json:"signal,omitempty"`
	Output   string `json:"output"`
	// Dropped is how many bytes of output went before Output began.
	Dropped int64 `json:"dropped,omitempty"`
}

// SubmitProcess starts cmd (not yet started) in its own process group and
// returns its task at once. Its environment is cmd.Env (the process's
// when nil) through secret.ToolEnv: never weft's own variables or
// credentials, plus the secrets passed through by name. secrets are the
// caller's (a tool call's, tool.Call.Secrets); nil means Options.Secrets.
// When cmd has neither Stdout nor Stderr, their combined output is
// redacted with those secrets and kept (the last ProcessOutputCap bytes):
// ReadOutput reads it as it comes, and the result holds it once the
// process has exited. The task completes when the process exits 0 and
// fails otherwise; Kill sends the group SIGINT, then SIGTERM, then
// SIGKILL. At most Options.MaxProcesses run at once (ErrTooMany). ctx's
// values reach nothing here; it is accepted for symmetry and checked
// before starting.
func (r *Registry) SubmitProcess(ctx context.Context, description string, cmd *exec.Cmd, secrets *secret.Set) (Task, error) {
	if cmd == nil || cmd.Process != nil {
		return Task{}, errors.New("submit process: need a command that has not been started")
	}
	if err := ctx.Err(); err != nil {
		return Task{}, err
	}
	if secrets == nil {
		secrets = r.opt.Secrets
	}
	if err := r.takeSlot(); err != nil {
		return Task{}, err
	}
	started := false
	defer func() {
		if !started {
			r.releaseSlot()
		}
	}()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Its own group, so that signals reach whatever it starts as well.
	cmd.SysProcAttr.Setpgid = true
	// Never weft's own settings or credentials, whoever built cmd.
	base := cmd.Env
	if base == nil {
		base = os.Environ()
	}
	cmd.Env = secret.ToolEnv(base, secrets)
	var out *tailBuffer
	if cmd.Stdout == nil && cmd.Stderr == nil {
		out = &tailBuffer{max: ProcessOutputCap, red: secrets.NewStream()}
		cmd.Stdout, cmd.Stderr = out, out
	}
	if cmd.WaitDelay == 0 {
		// A background child that keeps the pipe open must not hold the
		// task open once the process itself has exited.
		cmd.WaitDelay = 2 * time.Second
	}
	if description == "" {
		description = cmd.String()
	}
	// Listed to clients and the model: no registered value in clear.
	description = secrets.Redact(description)
	if err := cmd.Start(); err != nil {
		return Task{}, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	pgid := cmd.Process.Pid
	signal := func(sig syscall.Signal) error { return syscall.Kill(-pgid, sig) }
	e := &entry{
		t:      Task{Kind: KindProcess, Description: description},
		stop:   func() { _ = signal(syscall.SIGINT) },
		signal: signal,
		// Nothing to cancel: the process is stopped by signals alone.
		abandon: func() {},
		slot:    true,
		out:     out,
	}
	work := func() outcome {
		err := cmd.Wait()
		res := ProcessResult{PID: pgid, ExitCode: -1}
		if ps := cmd.ProcessState; ps != nil {
			res.ExitCode = ps.ExitCode()
			if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				res.Signal = ws.Signal().String()
			}
		}
		if out != nil {
			res.Output, res.Dropped = out.String()
		}
		raw, _ := json.Marshal(res)
		switch {
		case err == nil:
			return outcome{status: StatusCompleted, result: raw}
		case res.Signal != "":
			return outcome{status: StatusFailed, result: raw, err: "killed by signal: " + res.Signal}
		default:
			return outcome{status: StatusFailed, result: raw, err: err.Error()}
		}
	}
	if err := r.start(e, work); err != nil {
		_ = signal(syscall.SIGKILL)
		_ = cmd.Wait()
		return Task{}, err
	}
	started = true // the slot is the task's now; finish releases it
	return r.snapshot(e), nil
}

// StartProcess is SubmitProcess for a caller that needs only the task's
// id: the Bash tool's run_in_background (builtin.Background).
func (r *Registry) StartProcess(ctx context.Context, description string, cmd *exec.Cmd, secrets *secret.Set) (string, error) {
	t, err := r.SubmitProcess(ctx, description, cmd, secrets)
	return t.ID, err
}

// takeSlot reserves one of Options.MaxProcesses before a process starts,
// so that racing submissions cannot start more than the bound.
func (r *Registry) takeSlot() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if r.procs >= r.opt.MaxProcesses {
		return fmt.Errorf("%w: %d are running, the most allowed; wait for one to end (task_wait) or stop one (task_kill)", ErrTooMany, r.procs)
	}
	r.procs++
	return nil
}

func (r *Registry) releaseSlot() {
	r.mu.Lock()
	r.procs--
	r.mu.Unlock()
}

// ProcessOutput is one read of a process task's output.
type ProcessOutput struct {
	Task Task
	// Output is what the process wrote since the previous read (the first
	// read: since it started), redacted: the latest max bytes of it at
	// most.
	Output string
	// Skipped is how many bytes written since the previous read are not in
	// Output: beyond what the task keeps (ProcessOutputCap) or beyond max.
	Skipped int64
}

// ReadOutput returns what a process task wrote since the previous
// ReadOutput of it, at most max bytes (the latest), and moves the read
// position to its end, so that each read returns what is new. Output never
// ends inside a character still being written: its rest comes with the
// next read. ErrUnknownTask; ErrInvalid for a task whose output is not
// kept (a workflow, or a process whose caller took its output).
func (r *Registry) ReadOutput(id string, max int) (ProcessOutput, error) {
	if max <= 0 {
		return ProcessOutput{}, fmt.Errorf("%w: read at least one byte", ErrInvalid)
	}
	e, err := r.lookup(id)
	if err != nil {
		return ProcessOutput{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.out == nil {
		return ProcessOutput{}, fmt.Errorf("%w: task %s has no output to read", ErrInvalid, id)
	}
	// Once the task is done its output is complete (the result's String
	// flushed what redaction held back): a cut character at the end never
	// completes.
	text, skipped, next := e.out.since(e.read, max, e.t.Done())
	e.read = next
	return ProcessOutput{Task: e.t, Output: text, Skipped: skipped}, nil
}

// tailBuffer keeps the last max bytes written to it, redacted before they
// are cut: a cut inside a secret would leave its end in clear. Offsets
// count every byte it kept after redaction, dropped since or not.
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	red     *secret.Stream
	buf     []byte
	dropped int64
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.keep(b.red.Write(string(p)))
	return len(p), nil
}

func (b *tailBuffer) keep(s string) {
	b.buf = append(b.buf, s...)
	if over := len(b.buf) - b.max; over > 0 {
		b.dropped += int64(over)
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
}

// String returns the output, with what redaction still held back, once the
// process has exited.
func (b *tailBuffer) String() (string, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.keep(b.red.Flush())
	return string(b.buf), b.dropped
}

// since returns the output from offset from on, at most limit bytes (the
// latest), how many bytes from there it leaves out, and the offset after
// it. Unless final, an incomplete UTF-8 sequence at the end is left for
// the next read; a cut start moves on to the next character.
func (b *tailBuffer) since(from int64, limit int, final bool) (string, int64, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	end := b.dropped + int64(len(b.buf))
	if !final {
		end -= int64(partialRune(b.buf))
	}
	from = min(from, end)
	start := max(from, b.dropped, end-int64(limit))
	if start > from {
		for start < end && !utf8.RuneStart(b.buf[start-b.dropped]) {
			start++
		}
	}
	text := strings.ToValidUTF8(string(b.buf[start-b.dropped:end-b.dropped]), "\uFFFD")
	return text, start - from, end
}

// partialRune is how many bytes at the end of p begin a UTF-8 sequence that
// is not complete yet.
func partialRune(p []byte) int {
	for n := 1; n < utf8.UTFMax && n <= len(p); n++ {
		c := p[len(p)-n]
		if !utf8.RuneStart(c) {
			continue
		}
		if c >= utf8.RuneSelf && !utf8.FullRune(p[len(p)-n:]) {
			return n
		}
		return 0
	}
	return 0
}
