package hook

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func bashInput(dir, command string) Input {
	in, _ := json.Marshal(map[string]string{"command": command})
	return Input{Event: PreToolUse, SessionID: "s1", Cwd: dir, ToolName: "Bash", ToolInput: in, ToolUseID: "tu1"}
}

func TestCommandExitCodes(t *testing.T) {
	t.Parallel()
	const name = "guard"
	const fallback = "blocked by hook guard"
	tests := []struct {
		name        string
		body        string
		command     string // run directly instead of a script with body
		event       Event
		dir         string // "" = the temp dir; "missing" = a directory that does not exist
		wantVerdict Verdict
		wantReason  string
		wantContext string
		wantStop    bool
		wantWarn    string // a WARN line mentioning the hook and this text
	}{
		{name: "exit 0 silent", body: "exit 0", wantVerdict: NoOpinion},
		{name: "exit 0 plain text ignored", body: "echo hello; exit 0", wantVerdict: NoOpinion},
		{name: "exit 0 malformed json ignored", body: `echo '{"decision": "deny"'; exit 0`, wantVerdict: NoOpinion},
		{name: "exit 0 json allow", body: `echo '{"decision":"allow","reason":"fine"}'`, wantVerdict: Allow, wantReason: "fine"},
		{name: "exit 0 json approve, the legacy word", body: `echo '{"decision":"approve"}'`, wantVerdict: Allow},
		{name: "exit 0 json deny", body: `echo '{"decision":"deny","reason":"no rm"}'`, wantVerdict: Deny, wantReason: "no rm"},
		{name: "exit 0 json block without reason", body: `echo '{"decision":"block"}'`, wantVerdict: Deny, wantReason: fallback},
		{name: "exit 0 json ask", body: `echo '{"permissionDecision":"ask","reason":"check first"}'`, wantVerdict: Ask, wantReason: "check first"},
		{name: "exit 0 json decision is case-insensitive", body: `echo '{"decision":"DENY"}'`, wantVerdict: Deny, wantReason: fallback},
		{name: "exit 0 json unknown decision", body: `echo '{"decision":"maybe"}'`, wantVerdict: NoOpinion},
		{name: "exit 0 json with surrounding whitespace", body: `printf '\n  {"decision":"allow"}  \n\n'`, wantVerdict: Allow},
		{
			name:        "claude hookSpecificOutput deny",
			body:        `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"protected file"}}'`,
			wantVerdict: Deny, wantReason: "protected file",
		},
		{
			name:        "claude hookSpecificOutput allow",
			body:        `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"safe"},"suppressOutput":true}'`,
			wantVerdict: Allow, wantReason: "safe",
		},
		{
			name:        "claude hookSpecificOutput ask",
			body:        `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}'`,
			wantVerdict: Ask,
		},
		{
			name:        "claude PermissionRequest decision object",
			event:       PermissionRequest,
			body:        `echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"not today"}}}'`,
			wantVerdict: Deny, wantReason: "not today",
		},
		{
			name:        "deny wins over allow in one output",
			body:        `echo '{"decision":"approve","hookSpecificOutput":{"permissionDecision":"deny"}}'`,
			wantVerdict: Deny, wantReason: fallback,
		},
		{
			name:        "wrong-typed field does not hide a deny",
			body:        `echo '{"decision":"deny","reason":"r","updatedInput":"oops","continue":"no"}'`,
			wantVerdict: Deny, wantReason: "r",
		},
		{name: "continue false", body: `echo '{"continue":false,"stopReason":"enough"}'`, wantVerdict: NoOpinion, wantStop: true},
		{name: "exit 1 fails open", body: "echo broken >&2; exit 1", wantVerdict: NoOpinion, wantWarn: "exit status 1"},
		{name: "exit 1 json allow fails open", body: `echo '{"decision":"allow"}'; exit 1`, wantVerdict: NoOpinion, wantWarn: "exit status 1"},
		{name: "exit 1 json deny denies", body: `echo '{"decision":"deny","reason":"json says no"}'; exit 1`, wantVerdict: Deny, wantReason: "json says no"},
		{name: "exit 3 json deny denies", body: `echo '{"permissionDecision":"deny"}'; exit 3`, wantVerdict: Deny, wantReason: fallback},
		{name: "exit 2 with stderr", body: "printf '\\n  first reason  \\nsecond\\n' >&2; exit 2", wantVerdict: Deny, wantReason: "first reason"},
		{name: "exit 2 without stderr", body: "exit 2", wantVerdict: Deny, wantReason: fallback},
		{name: "exit 2 with json reason", body: `echo '{"decision":"deny","reason":"from json"}'; echo "from stderr" >&2; exit 2`, wantVerdict: Deny, wantReason: "from json"},
		{name: "exit 2 ignores json allow", body: `echo '{"decision":"allow"}'; echo "stderr wins" >&2; exit 2`, wantVerdict: Deny, wantReason: "stderr wins"},
		{name: "exit 3 fails open", body: "exit 3", wantVerdict: NoOpinion, wantWarn: "exit status 3"},
		{name: "exit 127 command not found fails open", body: "no-such-command-weft-test", wantVerdict: NoOpinion, wantWarn: "exit status 127"},
		{name: "crashing script fails open", body: "kill -SEGV $$", wantVerdict: NoOpinion, wantWarn: "exit status 139"},
		{name: "crashing shell fails open", command: "kill -SEGV $$", wantVerdict: NoOpinion, wantWarn: "signal: segmentation fault"},
		{name: "json deny then crash denies", body: `echo '{"decision":"deny","reason":"said no"}'; kill -KILL $$`, wantVerdict: Deny, wantReason: "said no"},
		{name: "cannot start fails open", body: "exit 0", dir: "missing", wantVerdict: NoOpinion, wantWarn: "cannot start"},
		{name: "exit 0 plain text on pre_tool_use is not context", body: "echo some text", wantVerdict: NoOpinion},
		{name: "exit 0 plain text on user_prompt_submit is context", event: UserPromptSubmit, body: "echo 'branch: main'", wantContext: "branch: main"},
		{name: "exit 0 plain text on session_start is context", event: SessionStart, body: "echo ' ready '", wantContext: "ready"},
		{name: "exit 1 plain text on user_prompt_submit is not context", event: UserPromptSubmit, body: "echo text; exit 1", wantWarn: "exit status 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := script(t, dir, "hook.sh", tt.body)
			m, logs := newTestManager(t, Options{})
			def := Def{Name: name, Event: PreToolUse, Command: path}
			if tt.command != "" {
				def.Command = tt.command
			}
			if tt.event != "" {
				def.Event = tt.event
			}
			if tt.dir == "missing" {
				def.Dir = filepath.Join(dir, "missing")
			}
			if err := m.Register(def); err != nil {
				t.Fatal(err)
			}
			in := bashInput(dir, "ls")
			in.Event = def.Event
			got := m.Run(context.Background(), in)
			if got.Verdict != tt.wantVerdict || got.Reason != tt.wantReason {
				t.Errorf("got verdict %q reason %q, want %q %q", got.Verdict, got.Reason, tt.wantVerdict, tt.wantReason)
			}
			if got.AdditionalContext != tt.wantContext {
				t.Errorf("context %q, want %q", got.AdditionalContext, tt.wantContext)
			}
			if got.Stop != tt.wantStop {
				t.Errorf("stop %v, want %v", got.Stop, tt.wantStop)
			}
			if tt.wantStop && got.StopReason != "enough" {
				t.Errorf("stop reason %q", got.StopReason)
			}
			if got.Verdict != NoOpinion && got.Hook != name {
				t.Errorf("hook %q, want %q", got.Hook, name)
			}
			if tt.wantWarn != "" && !logs.warned("hook="+name, tt.wantWarn) {
				t.Errorf("no warning naming the hook and %q in logs:\n%s", tt.wantWarn, logs)
			}
			if tt.wantWarn == "" && strings.Contains(logs.String(), "level=WARN") {
				t.Errorf("unexpected warning:\n%s", logs)
			}
		})
	}
}

func TestUpdatedInputChains(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seen := filepath.Join(dir, "seen.json")
	m, _ := newTestManager(t, Options{})
	err := m.Register(
		Def{Name: "rewrite", Event: PreToolUse, Command: script(t, dir, "a.sh",
			`cat >/dev/null; echo '{"updatedInput":{"command":"ls -la"}}'`)},
		Def{Name: "observe", Event: PreToolUse, Command: script(t, dir, "b.sh", `cat > "`+seen+`"`)},
		Def{Name: "rewrite-again", Event: PreToolUse, Command: script(t, dir, "c.sh",
			`cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"ls -la /tmp"}}}'`)},
		Def{Name: "not-an-object", Event: PreToolUse, Command: script(t, dir, "d.sh", `echo '{"updatedInput":[1,2]}'`)},
	)
	if err != nil {
		t.Fatal(err)
	}
	got := m.Run(context.Background(), bashInput(dir, "rm -rf /"))
	var env struct {
		ToolInput map[string]string `json:"tool_input"`
	}
	if err := json.Unmarshal([]byte(readFile(t, seen)), &env); err != nil {
		t.Fatal(err)
	}
	if env.ToolInput["command"] != "ls -la" {
		t.Errorf("second hook saw %v, want the first hook's rewrite", env.ToolInput)
	}
	if string(got.UpdatedInput) != `{"command":"ls -la /tmp"}` {
		t.Errorf("UpdatedInput = %s", got.UpdatedInput)
	}
	if got.Verdict != Allow || got.Hook != "rewrite-again" {
		t.Errorf("verdict %q by %q", got.Verdict, got.Hook)
	}
}

func TestCombining(t *testing.T) {
	t.Parallel()
	const (
		silent = "exit 0"
		allow  = `echo '{"decision":"allow","reason":"ok"}'`
		ask    = `echo '{"decision":"ask","reason":"please check"}'`
		deny   = `echo nope >&2; exit 2`
		ctx1   = `echo '{"additionalContext":"one"}'`
		ctx2   = `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"two"}}'`
		stop   = `echo '{"continue":false,"stopReason":"halt"}'`
	)
	tests := []struct {
		name        string
		bodies      []string
		wantVerdict Verdict
		wantHook    int // index of the deciding hook, -1 none
		wantReason  string
		wantRan     int // how many hooks ran
		wantContext string
		wantStop    bool
	}{
		{name: "none", bodies: nil, wantVerdict: NoOpinion, wantHook: -1},
		{name: "all silent", bodies: []string{silent, silent}, wantVerdict: NoOpinion, wantHook: -1, wantRan: 2},
		{name: "first allow reported", bodies: []string{silent, allow, allow}, wantVerdict: Allow, wantHook: 1, wantReason: "ok", wantRan: 3},
		{name: "ask beats allow", bodies: []string{allow, ask, allow}, wantVerdict: Ask, wantHook: 1, wantReason: "please check", wantRan: 3},
		{name: "deny beats ask", bodies: []string{ask, deny}, wantVerdict: Deny, wantHook: 1, wantReason: "nope", wantRan: 2},
		{name: "deny stops later hooks", bodies: []string{allow, deny, silent, deny}, wantVerdict: Deny, wantHook: 1, wantReason: "nope", wantRan: 2},
		{name: "context joined", bodies: []string{ctx1, silent, ctx2}, wantVerdict: NoOpinion, wantHook: -1, wantRan: 3, wantContext: "one\ntwo"},
		{name: "continue false from any hook", bodies: []string{silent, stop, allow}, wantVerdict: Allow, wantHook: 2, wantReason: "ok", wantRan: 3, wantStop: true},
		{name: "failing hook is skipped", bodies: []string{"exit 1", ask}, wantVerdict: Ask, wantHook: 1, wantReason: "please check", wantRan: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ran := filepath.Join(dir, "ran")
			m, _ := newTestManager(t, Options{})
			for i, body := range tt.bodies {
				p := script(t, dir, "h"+strconv.Itoa(i)+".sh", `echo `+strconv.Itoa(i)+` >> "`+ran+`"`+"\n"+body)
				if err := m.Register(Def{Name: "h" + strconv.Itoa(i), Event: PreToolUse, Command: p}); err != nil {
					t.Fatal(err)
				}
			}
			got := m.Run(context.Background(), bashInput(dir, "ls"))
			wantHook := ""
			if tt.wantHook >= 0 {
				wantHook = "h" + strconv.Itoa(tt.wantHook)
			}
			if got.Verdict != tt.wantVerdict || got.Hook != wantHook || got.Reason != tt.wantReason {
				t.Errorf("got %q by %q (%q), want %q by %q (%q)", got.Verdict, got.Hook, got.Reason, tt.wantVerdict, wantHook, tt.wantReason)
			}
			n := 0
			if b, err := os.ReadFile(ran); err == nil {
				n = strings.Count(string(b), "\n")
			}
			if n != tt.wantRan {
				t.Errorf("%d hooks ran, want %d", n, tt.wantRan)
			}
			if got.AdditionalContext != tt.wantContext || got.Stop != tt.wantStop {
				t.Errorf("context %q stop %v, want %q %v", got.AdditionalContext, got.Stop, tt.wantContext, tt.wantStop)
			}
			if tt.wantStop && got.StopReason != "halt" {
				t.Errorf("stop reason %q", got.StopReason)
			}
		})
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	m, logs := newTestManager(t, Options{})
	err := m.Register(Def{
		Name: "slow", Event: PreToolUse, Timeout: 200 * time.Millisecond,
		Command: script(t, dir, "slow.sh", `sleep 30 & echo $! > "`+pidFile+`"; echo '{"decision":"allow"}'; sleep 30`),
	})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got := m.Run(context.Background(), bashInput(dir, "ls"))
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("Run took %s with a 200ms hook timeout", elapsed)
	}
	if got.Verdict != NoOpinion {
		t.Errorf("verdict %q, want fail open", got.Verdict)
	}
	if !logs.warned("hook=slow", "timed out") {
		t.Errorf("no timeout warning:\n%s", logs)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, pidFile)))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the hook's background child to be killed", func() bool { return processGone(pid) })
}

func TestTimeoutAfterJSONDenyStillDenies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m, _ := newTestManager(t, Options{})
	err := m.Register(Def{
		Name: "deny-then-hang", Event: PreToolUse, Timeout: 200 * time.Millisecond,
		Command: script(t, dir, "h.sh", `echo '{"decision":"deny","reason":"decided"}'; exec sleep 30`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Run(context.Background(), bashInput(dir, "ls")); got.Verdict != Deny || got.Reason != "decided" {
		t.Errorf("got %q %q, want the printed deny", got.Verdict, got.Reason)
	}
}

func TestCallerCancellationStopsHooks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "second-ran")
	m, logs := newTestManager(t, Options{})
	err := m.Register(
		Def{Name: "hang", Event: PreToolUse, Command: script(t, dir, "a.sh", "exec sleep 30")},
		Def{Name: "second", Event: PreToolUse, Command: "touch " + marker},
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	got := m.Run(ctx, bashInput(dir, "ls"))
	if time.Since(start) > 2*time.Second || got.Verdict != NoOpinion {
		t.Errorf("Run after cancel: %+v in %s", got, time.Since(start))
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a hook started after the caller's context was done")
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("cancellation logged as a hook failure:\n%s", logs)
	}
}

func TestBackgroundChildDoesNotHoldRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m, _ := newTestManager(t, Options{})
	pidFile := filepath.Join(dir, "child.pid")
	// The child keeps stdout open long after the hook exits.
	err := m.Register(Def{Name: "notifier", Event: Notification,
		Command: script(t, dir, "n.sh", `sleep 20 & echo $! > "`+pidFile+`"; echo '{"decision":"allow"}'`)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, pidFile))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	start := time.Now()
	got := m.Run(context.Background(), Input{Event: Notification, Cwd: dir, Message: "hi"})
	if elapsed := time.Since(start); elapsed > pipeGrace+2*time.Second {
		t.Errorf("Run waited %s for a background child", elapsed)
	}
	if got.Verdict != Allow {
		t.Errorf("verdict %q: output written before exit was lost", got.Verdict)
	}
}

func TestAsyncHooks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	done := filepath.Join(dir, "done")
	m, logs := newTestManager(t, Options{})
	err := m.Register(
		Def{Name: "bg", Event: PostToolUse, Async: true, Timeout: 10 * time.Second,
			Command: script(t, dir, "bg.sh", `cat > "`+done+`.tmp"; while [ ! -f "`+gate+`" ]; do sleep 0.01; done; mv "`+done+`.tmp" "`+done+`"; exit 2`)},
		Def{Name: "bg-fails", Event: PostToolUse, Async: true, Command: "exit 5"},
		Def{Name: "sync", Event: PostToolUse, Command: `echo '{"additionalContext":"sync ran"}'`},
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := Input{Event: PostToolUse, Cwd: dir, ToolName: "Bash", ToolResponse: json.RawMessage(`"out"`)}
	got := m.Run(ctx, in)
	cancel() // the caller moving on must not kill async hooks
	if got.Verdict != NoOpinion || got.AdditionalContext != "sync ran" {
		t.Errorf("got %+v: an async hook's exit 2 must not decide", got)
	}
	if _, err := os.Stat(done); err == nil {
		t.Fatal("Run waited for the async hook")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m.Wait()
	if !strings.Contains(readFile(t, done), `"hook_event_name":"PostToolUse"`) {
		t.Error("async hook did not get the envelope")
	}
	if !logs.warned("hook=bg-fails", "exit status 5") {
		t.Errorf("async failure not logged:\n%s", logs)
	}
}

func TestAsyncHookTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m, logs := newTestManager(t, Options{})
	if err := m.Register(Def{Name: "bg-slow", Event: Stop, Async: true, Timeout: 100 * time.Millisecond,
		Command: "exec sleep 30"}); err != nil {
		t.Fatal(err)
	}
	m.Run(context.Background(), Input{Event: Stop, Cwd: dir})
	start := time.Now()
	m.Wait()
	if time.Since(start) > 2*time.Second {
		t.Errorf("async hook outlived its timeout: %s", time.Since(start))
	}
	if !logs.warned("hook=bg-slow", "timed out") {
		t.Errorf("async timeout not logged:\n%s", logs)
	}
}
