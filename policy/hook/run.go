package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"
)

// outputLimit bounds what is kept of a hook's stdout, stderr or HTTP body.
const outputLimit = 1 << 20

// pipeGrace is how long a finished command's background children may keep
// its stdout or stderr open before we stop reading. Everything the command
// itself wrote is already in the pipe when it exits, so this only bounds
// the wait for processes it left behind (a hook that starts a notifier
// with "&").
const pipeGrace = 500 * time.Millisecond

// runCommand runs d.Command with /bin/sh -c in its own process group, the
// envelope on stdin, and reads the verdict from the exit code and stdout.
func (m *Manager) runCommand(ctx context.Context, d *Def, in Input) (Outcome, error) {
	hookEnv, omitted := in.env(m.projectRoot)
	if len(omitted) > 0 {
		// The hook cannot be shown all it is asked to judge: a gate fails
		// closed rather than pass an input it never saw, and a hook that
		// answers for the person is not asked (the person is).
		switch {
		case in.Event.gates():
			return Outcome{Verdict: Deny, Reason: envTooLarge(d, in, omitted)}, nil
		case in.Event == PermissionRequest:
			return Outcome{}, errors.New(envTooLarge(d, in, omitted) + "; the person is asked instead")
		}
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", d.Command)
	cmd.Dir = d.Dir
	if cmd.Dir == "" {
		cmd.Dir = in.Cwd
	}
	// Later entries win, so the hook variables cannot be shadowed.
	cmd.Env = slices.Concat(os.Environ(), d.Env, hookEnv)
	cmd.Stdin = bytes.NewReader(in.envelope())
	var stdout, stderr capped
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The whole group: a hook's children must not outlive its timeout.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = pipeGrace
	start := time.Now()
	runErr := cmd.Run()

	if cmd.ProcessState == nil {
		if errors.Is(runErr, syscall.E2BIG) && in.Event.gates() {
			// The environment as a whole is over the kernel's limit.
			return Outcome{Verdict: Deny, Reason: envTooLarge(d, in, nil)}, nil
		}
		// (For permission_request the error below leaves the call to the
		// person.)
		return Outcome{}, fmt.Errorf("cannot start: %w", runErr)
	}
	parsed, isJSON := parseOutput(stdout.Bytes())
	// A deny in stdout JSON is an explicit decision: it holds whatever
	// happened to the process afterwards.
	if isJSON && parsed.Verdict == Deny {
		return Outcome{Verdict: Deny, Reason: parsed.Reason, Stop: parsed.Stop, StopReason: parsed.StopReason}, nil
	}
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Outcome{}, fmt.Errorf("timed out after %s; its process group was killed", time.Since(start).Round(time.Millisecond))
		}
		return Outcome{}, err
	}
	code := cmd.ProcessState.ExitCode()
	switch code {
	case 0:
		if isJSON {
			return parsed, nil
		}
		if text := strings.TrimSpace(stdout.String()); text != "" && in.Event.plainStdoutIsContext() {
			return Outcome{AdditionalContext: text}, nil
		}
		return Outcome{}, nil
	case 2:
		return Outcome{Verdict: Deny, Reason: firstLine(stderr.String())}, nil
	case -1:
		return Outcome{}, fmt.Errorf("%s (stderr: %q)", cmd.ProcessState, firstLine(stderr.String()))
	}
	return Outcome{}, fmt.Errorf("exit status %d (stderr: %q)", code, firstLine(stderr.String()))
}

// envTooLarge says why a hook's input cannot be passed to it in full.
func envTooLarge(d *Def, in Input, omitted []string) string {
	what := "its environment is"
	if len(omitted) > 0 {
		what = strings.Join(omitted, ", ") + " is"
	}
	size := len(in.ToolInput)
	msg := fmt.Sprintf("the input of this %s call (%d bytes) is too large for the environment of hook %s (%s over the %d-byte limit of one variable, or the environment as a whole is), so the hook could not check it",
		nonEmpty(in.ToolName, string(in.Event)), size, d.Name, what, maxEnvString)
	if in.Event.gates() {
		msg += " and the call is denied; make the change in smaller calls"
	}
	return msg
}

func nonEmpty(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// runHTTP POSTs the envelope to d.URL. A 2xx response is read like the
// stdout of a command that exited 0; any other status or a transport error
// fails open.
func (m *Manager) runHTTP(ctx context.Context, d *Def, in Input) (Outcome, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(in.envelope()))
	if err != nil {
		return Outcome{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	allowed := map[string]bool{}
	for _, k := range d.HeaderEnv {
		allowed[k] = true
	}
	for k, v := range d.Headers {
		req.Header.Set(k, os.Expand(v, func(name string) string {
			if allowed[name] {
				return os.Getenv(name)
			}
			return ""
		}))
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return Outcome{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, outputLimit))
	if err != nil {
		return Outcome{}, fmt.Errorf("reading response: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Outcome{}, fmt.Errorf("HTTP %s", resp.Status)
	}
	if parsed, ok := parseOutput(body); ok {
		return parsed, nil
	}
	if text := strings.TrimSpace(string(body)); text != "" && in.Event.plainStdoutIsContext() {
		return Outcome{AdditionalContext: text}, nil
	}
	return Outcome{}, nil
}

// runFunc calls d.Func, turning a panic into an error and giving up on it
// when ctx is done (a callback that ignores ctx then finishes on its own).
func runFunc(ctx context.Context, d *Def, in Input) (Outcome, error) {
	type result struct {
		o   Outcome
		err error
	}
	ch := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- result{err: fmt.Errorf("panic: %v\n%s", p, debug.Stack())}
			}
		}()
		o, err := d.Func(ctx, in)
		ch <- result{o, err}
	}()
	select {
	case r := <-ch:
		return r.o, r.err
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Outcome{}, fmt.Errorf("timed out after %s", d.timeout())
		}
		return Outcome{}, ctx.Err()
	}
}

// parseOutput reads a hook's stdout (or HTTP body) as the JSON Claude Code
// and FengYu hooks print. ok is false when it is not a JSON object; fields
// of the wrong type or with unknown values are ignored, one by one, so a
// hook's deny is not lost because another field was malformed.
func parseOutput(b []byte) (o Outcome, ok bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return Outcome{}, false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return Outcome{}, false
	}
	var verdicts []Verdict
	var reasons []string
	verdicts = append(verdicts, verdictOf(str(top, "decision")), verdictOf(str(top, "permissionDecision")))
	if spec := obj(top, "hookSpecificOutput"); spec != nil {
		verdicts = append(verdicts, verdictOf(str(spec, "permissionDecision")))
		reasons = append(reasons, str(spec, "permissionDecisionReason"))
		if in := object(spec["updatedInput"]); in != nil {
			o.UpdatedInput = in
		}
		o.AdditionalContext = str(spec, "additionalContext")
		// PermissionRequest's answer: {"decision": {"behavior": "allow|deny", ...}}.
		if dec := obj(spec, "decision"); dec != nil {
			verdicts = append(verdicts, verdictOf(str(dec, "behavior")))
			reasons = append(reasons, str(dec, "message"))
			if in := object(dec["updatedInput"]); in != nil {
				o.UpdatedInput = in
			}
		}
	}
	reasons = append(reasons, str(top, "reason"))
	if o.UpdatedInput == nil {
		o.UpdatedInput = object(top["updatedInput"])
	}
	if o.AdditionalContext == "" {
		o.AdditionalContext = str(top, "additionalContext")
	}
	var cont bool
	if raw, found := top["continue"]; found && json.Unmarshal(raw, &cont) == nil && !cont {
		o.Stop = true
		o.StopReason = str(top, "stopReason")
	}
	switch {
	case slices.Contains(verdicts, Deny):
		o.Verdict = Deny
	case slices.Contains(verdicts, Ask):
		o.Verdict = Ask
	case slices.Contains(verdicts, Allow):
		o.Verdict = Allow
	}
	for _, r := range reasons {
		if r != "" {
			o.Reason = r
			break
		}
	}
	return o, true
}

// verdictOf maps the decision words of Claude Code (current and legacy)
// and FengYu to a Verdict; anything else is no opinion.
func verdictOf(s string) Verdict {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "allow", "approve":
		return Allow
	case "deny", "block":
		return Deny
	case "ask":
		return Ask
	}
	return NoOpinion
}

func str(m map[string]json.RawMessage, key string) string {
	var s string
	if raw, ok := m[key]; ok && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

func obj(m map[string]json.RawMessage, key string) map[string]json.RawMessage {
	var o map[string]json.RawMessage
	if raw, ok := m[key]; ok && json.Unmarshal(raw, &o) == nil {
		return o
	}
	return nil
}

// object returns raw when it is a JSON object, else nil.
func object(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		return nil
	}
	return slices.Clone(raw)
}

// firstLine is the first non-blank line of s.
func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if t := strings.TrimSpace(line); t != "" {
			return t
		}
	}
	return ""
}

// capped keeps the first outputLimit bytes written and discards the rest
// (still reporting success, so the writer is never blocked).
type capped struct{ buf bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := outputLimit - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) Bytes() []byte  { return c.buf.Bytes() }
func (c *capped) String() string { return c.buf.String() }
