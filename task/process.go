package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

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
// credentials, plus the secrets of Options.Secrets. When cmd has neither Stdout nor Stderr, their
// combined output is kept (the last ProcessOutputCap bytes) in the
// result. The task completes when the process exits 0 and fails
// otherwise; Kill sends the group SIGINT, then SIGTERM, then SIGKILL.
// ctx's values reach nothing here; it is accepted for symmetry and checked
// before starting.
func (r *Registry) SubmitProcess(ctx context.Context, description string, cmd *exec.Cmd) (Task, error) {
	if cmd == nil || cmd.Process != nil {
		return Task{}, errors.New("submit process: need a command that has not been started")
	}
	if err := ctx.Err(); err != nil {
		return Task{}, err
	}
	if r.isClosed() {
		return Task{}, ErrClosed
	}
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
	cmd.Env = secret.ToolEnv(base, r.opt.Secrets)
	var out *tailBuffer
	if cmd.Stdout == nil && cmd.Stderr == nil {
		out = &tailBuffer{max: ProcessOutputCap, red: r.opt.Secrets.NewStream()}
		cmd.Stdout, cmd.Stderr = out, out
	}
	if cmd.WaitDelay == 0 {
		// A background child that keeps the pipe open must not hold the
		// task open once the process itself has exited.
		cmd.WaitDelay = 2 * time.Second
	}
	if description == "" {
		// Listed to clients and the model: no registered value in clear.
		description = r.opt.Secrets.Redact(cmd.String())
	}
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
	return r.snapshot(e), nil
}

// tailBuffer keeps the last max bytes written to it, redacted before they
// are cut: a cut inside a secret would leave its end in clear.
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
