package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/tool"
)

const (
	bashDefaultTimeout = 2 * time.Minute
	bashMaxTimeout     = 10 * time.Minute
	// bashOutputLimit is where Bash cuts the middle out of long output; the
	// tail usually holds the error, so it is kept as well as the head.
	bashOutputLimit = 30000
	// bashProgressLine caps one streamed progress line.
	bashProgressLine = 2000
)

// bashDescription is Bash's description; background is whether it takes
// run_in_background.
func bashDescription(background bool) string {
	d := `Executes a shell command (bash -c) in the workspace and returns its output, stdout and stderr interleaved as they were written.

- Each call runs in a fresh shell in the workspace directory: cd and variables do not carry over to the next call. Stdin is empty, so use non-interactive flags.
- The default timeout is 2 minutes; pass timeout (milliseconds, at most 600000) for longer commands. On timeout the command and every process it started are killed.
- A non-zero exit status is reported as a last line "Exit code: N"; read it like any other output.
- Output longer than 30000 characters is cut in the middle: the start and the end are kept.
- A secret the user registered is in the environment by name: where output shows [SECRET:NAME], use $NAME in commands (its value is never shown).
`
	if background {
		d += `- run_in_background: true starts the command as a background task and returns at once with its task id, for servers, watchers and long builds; timeout does not apply to it. task_output reads what it wrote since the previous read (and its exit code once it has ended; timeoutMs waits for that), task_wait waits for it, task_kill stops it with every process it started, task_list lists the tasks. It is stopped when weft stops. Do not use "&" for this.
- Background processes (cmd &) still attached to the output when the command finishes are stopped.
`
	} else {
		d += "- Background processes (cmd &) still attached to the output when the command finishes are stopped. To leave one running, redirect its output: nohup cmd > out.log 2>&1 &\n"
	}
	return d + `- Prefer the Read, Grep, Glob, Edit and Write tools over cat, grep, find, sed and echo redirection.
- Quote paths that contain spaces; chain dependent commands with &&.`
}

var bashSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "The command to execute"},
    "timeout": {"type": "integer", "minimum": 1, "maximum": 600000, "description": "Optional timeout in milliseconds (max 600000, default 120000)"},
    "description": {"type": "string", "description": "Clear, concise description of what this command does in 5-10 words"}
  },
  "required": ["command"],
  "additionalProperties": false
}`)

// bashBackgroundSchema is bashSchema with run_in_background, offered only
// when Config.Background is set: a model shown the field where it cannot
// work would use it and fail.
var bashBackgroundSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "The command to execute"},
    "timeout": {"type": "integer", "minimum": 1, "maximum": 600000, "description": "Optional timeout in milliseconds (max 600000, default 120000); not for run_in_background"},
    "description": {"type": "string", "description": "Clear, concise description of what this command does in 5-10 words"},
    "run_in_background": {"type": "boolean", "description": "Set to true to run this command in the background and return at once with its task id. Read its output later with task_output."}
  },
  "required": ["command"],
  "additionalProperties": false
}`)

// Background starts commands as background tasks, for Bash's
// run_in_background; *task.Registry implements it. The model reads such a
// command's output with task_output and stops it with task_kill, tools the
// same registry provides.
type Background interface {
	// StartProcess starts cmd, built and not yet started (its own process
	// group, its environment from secret.ToolEnv, the workspace as its
	// directory, no output set), as a background task and returns the
	// task's id at once. secrets are the call's: its output is redacted
	// with them before any of it is kept. The process must not end with
	// ctx: it outlives the call.
	StartProcess(ctx context.Context, description string, cmd *exec.Cmd, secrets *secret.Set) (taskID string, err error)
}

type bashTool struct {
	cfg   Config
	ws    wsConfine
	shell string
	// killGrace is how long a process group gets between SIGTERM and
	// SIGKILL; detachGrace how long output may stay open after the shell
	// exited before the processes holding it are stopped.
	killGrace   time.Duration
	detachGrace time.Duration
}

// NewBash returns the Bash tool: runs a command with bash -c (sh -c where
// bash is missing) in the workspace, in its own process group.
func NewBash(cfg Config) tool.Tool {
	return &bashTool{
		cfg:         cfg,
		ws:          wsFrom(cfg),
		shell:       bashShell(),
		killGrace:   2 * time.Second,
		detachGrace: time.Second,
	}
}

func bashShell() string {
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	if p, err := exec.LookPath("sh"); err == nil {
		return p
	}
	return "/bin/sh"
}

func (t *bashTool) Spec() tool.Spec {
	schema := bashSchema
	if t.cfg.Background != nil {
		schema = bashBackgroundSchema
	}
	return tool.Spec{
		Name:        "Bash",
		Description: bashDescription(t.cfg.Background != nil),
		InputSchema: schema,
		Meta: tool.Meta{
			Effect:     tool.EffectExecute,
			Permission: tool.ClassBash,
			Timeout:    bashMaxTimeout,
			OutputCap:  32000,
		},
	}
}

type bashInput struct {
	Command         string `json:"command"`
	Timeout         *int64 `json:"timeout"`
	Description     string `json:"description"`
	RunInBackground bool   `json:"run_in_background"`
}

// bashStop says why Bash killed the process group.
type bashStop int

const (
	bashNotStopped bashStop = iota
	bashTimedOut
	bashCancelled
	bashDetached // the shell exited, background processes held the output
)

func (t *bashTool) Run(ctx context.Context, call *tool.Call) (tool.Result, error) {
	var in bashInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("invalid input: %v", err), nil
	}
	if strings.TrimSpace(in.Command) == "" {
		return tool.Errorf("command is empty"), nil
	}
	timeout := bashDefaultTimeout
	if in.Timeout != nil && *in.Timeout > 0 {
		timeout = min(time.Duration(*in.Timeout)*time.Millisecond, bashMaxTimeout)
	}
	dir, err := t.ws.dir()
	if err != nil {
		return tool.Errorf("%v", err), nil
	}
	if err := ctx.Err(); err != nil {
		return tool.Errorf("command not started: %v", err), nil
	}
	if in.RunInBackground {
		return t.runBackground(ctx, call, in, dir), nil
	}
	progress := call.Progress
	if progress == nil {
		progress = func(string) {}
	}

	// One pipe for stdout and stderr keeps their relative order exactly as
	// the command wrote it.
	r, w, err := os.Pipe()
	if err != nil {
		return tool.Result{}, fmt.Errorf("bash: %w", err)
	}
	cmd := t.command(in.Command, dir, call)
	cmd.Stdout = w
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return tool.Errorf("cannot start %s: %v", t.shell, err), nil
	}
	w.Close()
	pgid := cmd.Process.Pid

	out := newBashOutput(bashOutputLimit)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		bashPump(r, call.Secrets.NewStream(), out, progress)
	}()
	waitDone := make(chan struct{})
	go func() {
		defer close(waitDone)
		_ = cmd.Wait() // the exit status is read from ProcessState
	}()

	start := time.Now()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	// A ctx deadline (the framework's bound on the tool) is a timeout too.
	ctxStop := func() bashStop {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			timeout = time.Since(start).Round(time.Millisecond)
			return bashTimedOut
		}
		return bashCancelled
	}
	stop := bashNotStopped
	select {
	case <-waitDone:
		detach := time.NewTimer(t.detachGrace)
		select {
		case <-readerDone:
		case <-detach.C:
			stop = bashDetached
		case <-timer.C:
			stop = bashTimedOut
		case <-ctx.Done():
			stop = ctxStop()
		}
		detach.Stop()
	case <-timer.C:
		stop = bashTimedOut
	case <-ctx.Done():
		stop = ctxStop()
	}
	if stop != bashNotStopped {
		t.killGroup(pgid, waitDone, readerDone)
		select {
		case <-readerDone:
		case <-time.After(t.killGrace):
			// A process that left the group (setsid) still holds the
			// pipe; stop reading rather than hang.
			_ = r.SetReadDeadline(time.Now())
		}
	}
	<-waitDone
	<-readerDone
	r.Close()

	code := bashExitCode(cmd.ProcessState)
	text := strings.TrimRight(out.String(), "\n")
	var notes []string
	res := tool.Result{Data: map[string]any{"exit_code": code, "timed_out": stop == bashTimedOut}}
	switch stop {
	case bashTimedOut:
		res.IsError = true
		notes = append(notes, fmt.Sprintf("Command timed out after %s; it was killed with every process it started.", timeout))
	case bashCancelled:
		res.IsError = true
		res.Data["cancelled"] = true
		notes = append(notes, "Command was cancelled; it was killed with every process it started.")
	case bashDetached:
		notes = append(notes, "Background processes still attached to the output were stopped when the command finished. To leave a process running, redirect its output: nohup cmd > out.log 2>&1 &")
	}
	if code != 0 && stop != bashTimedOut && stop != bashCancelled {
		notes = append(notes, fmt.Sprintf("Exit code: %d", code))
	}
	if text == "" && len(notes) == 0 {
		text = "(no output)"
	}
	if len(notes) > 0 {
		if text != "" {
			text += "\n"
		}
		text += strings.Join(notes, "\n")
	}
	res.Content = tool.Text(text).Content
	return res, nil
}

// command is the shell that runs command in dir, in its own process group,
// with the tool environment: the same for a command in the foreground and
// one in the background.
func (t *bashTool) command(command, dir string, call *tool.Call) *exec.Cmd {
	cmd := exec.Command(t.shell, "-c", command)
	cmd.Dir = dir
	// Never weft's own settings or credentials: only the settings' env,
	// the call's variables and the secrets passed through by name.
	cmd.Env = append(secret.ToolEnv(os.Environ(), call.Secrets, t.cfg.Env, call.Env), "PWD="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// runBackground starts the command as a background task and returns its
// id. The policy decided on this call as on any other Bash call (the tool
// runs only after it allowed it); the task outlives the call, so the
// process is not tied to ctx.
func (t *bashTool) runBackground(ctx context.Context, call *tool.Call, in bashInput, dir string) tool.Result {
	if t.cfg.Background == nil {
		return tool.Errorf("run_in_background is not available here: run the command in the foreground, or leave it running with nohup cmd > out.log 2>&1 &")
	}
	desc := strings.TrimSpace(in.Description)
	if desc == "" {
		desc = in.Command
	}
	id, err := t.cfg.Background.StartProcess(ctx, desc, t.command(in.Command, dir, call), call.Secrets)
	if err != nil {
		return tool.Errorf("command not started in the background: %v", err)
	}
	text := fmt.Sprintf("Command running in the background as task %s. "+
		"Read its output with task_output {\"taskId\": %q} (each read returns what it wrote since the previous one; timeoutMs waits for it to end); stop it with task_kill.", id, id)
	return tool.Result{Content: tool.Text(text).Content, Data: map[string]any{"task_id": id, "background": true}}
}

// killGroup stops the whole process group: SIGTERM, then SIGKILL after the
// grace period for whatever is left.
func (t *bashTool) killGroup(pgid int, waitDone, readerDone <-chan struct{}) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	grace := time.NewTimer(t.killGrace)
	for waitDone != nil || readerDone != nil {
		select {
		case <-waitDone:
			waitDone = nil
		case <-readerDone:
			readerDone = nil
		case <-grace.C:
			waitDone, readerDone = nil, nil
		}
	}
	grace.Stop()
	// Unconditionally: members that ignore SIGTERM and no longer hold the
	// pipe would otherwise survive.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	// The shell itself, in case it moved to another group: Run waits for it.
	_ = syscall.Kill(pgid, syscall.SIGKILL)
}

func bashExitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// bashPump copies the command's output into out and reports each complete
// line as progress. Everything is redacted as it is read, before out keeps
// its head and tail and before progress lines are cut: a cut inside a
// secret would leave a piece of it that no later redaction recognises. red
// holds back a tail that may be the start of a value split across reads.
func bashPump(r *os.File, red *secret.Stream, out *bashOutput, progress func(string)) {
	buf := make([]byte, 32*1024)
	var partial []byte
	emit := func(line []byte) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > bashProgressLine {
			line = bashCutRunes(line, bashProgressLine)
		}
		progress(string(line))
	}
	for {
		n, err := r.Read(buf)
		var chunk []byte
		if n > 0 {
			chunk = []byte(red.Write(string(buf[:n])))
		}
		if err != nil {
			chunk = append(chunk, red.Flush()...)
		}
		if len(chunk) > 0 {
			out.Write(chunk)
			for {
				i := bytes.IndexByte(chunk, '\n')
				if i < 0 {
					break
				}
				if len(partial) > 0 {
					partial = append(partial, chunk[:i]...)
					emit(partial)
					partial = partial[:0]
				} else {
					emit(chunk[:i])
				}
				chunk = chunk[i+1:]
			}
			if len(partial)+len(chunk) > 64*1024 {
				emit(append(partial, chunk...))
				partial = partial[:0]
			} else {
				partial = append(partial, chunk...)
			}
		}
		if err != nil {
			if len(partial) > 0 {
				emit(partial)
			}
			return
		}
	}
}

func bashCutRunes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}

// bashOutput keeps the first and last limit/2 bytes of a stream of any
// length, so a command printing gigabytes costs bounded memory.
type bashOutput struct {
	limit int
	head  []byte
	tail  []byte
	total int64
}

func newBashOutput(limit int) *bashOutput { return &bashOutput{limit: limit} }

func (o *bashOutput) headCap() int { return o.limit / 2 }
func (o *bashOutput) tailCap() int { return o.limit - o.limit/2 }

func (o *bashOutput) Write(p []byte) {
	o.total += int64(len(p))
	if room := o.headCap() - len(o.head); room > 0 {
		k := min(room, len(p))
		o.head = append(o.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return
	}
	o.tail = append(o.tail, p...)
	// Trim lazily: copying on every write would be quadratic.
	if len(o.tail) > 2*o.tailCap() {
		o.tail = append(o.tail[:0], o.tail[len(o.tail)-o.tailCap():]...)
	}
}

func (o *bashOutput) String() string {
	tail := o.tail
	if len(tail) > o.tailCap() {
		tail = tail[len(tail)-o.tailCap():]
	}
	omitted := o.total - int64(len(o.head)) - int64(len(tail))
	if omitted <= 0 {
		return strings.ToValidUTF8(string(o.head)+string(tail), "\uFFFD")
	}
	head := o.head
	// Cut at line boundaries when one is near, so neither side starts or
	// ends mid-line (or mid-rune).
	if i := bytes.LastIndexByte(head, '\n'); i >= 0 && len(head)-i < 2000 {
		omitted += int64(len(head) - i - 1)
		head = head[:i+1]
	}
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < 2000 {
		omitted += int64(i + 1)
		tail = tail[i+1:]
	}
	s := string(head) + fmt.Sprintf("\n... [%d bytes of output omitted] ...\n\n", omitted) + string(tail)
	return strings.ToValidUTF8(s, "\uFFFD")
}
