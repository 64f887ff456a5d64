package hook

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// commentedRM is a Bash call whose dangerous part comes after a comment of n
// bytes.
func commentedRM(n int) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"command": "# " + strings.Repeat("x", n) + "\nrm -rf /tmp/victim"})
	return b
}

// TestHookInputWhole: a guard hook reading $TOOL_INPUT sees all of it or
// the call does not run. Before, TOOL_INPUT was cut at 32 KiB, so a long
// comment before "rm -rf" got a command past a guard.
func TestHookInputWhole(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		event  Event
		input  json.RawMessage
		want   Verdict
		reason string // in the outcome's reason
		ran    bool   // the script ran
		// what the script saw of TOOL_INPUT, in bytes; -1 to skip
		envLen     int
		omitted    string
		hugeReason bool // PERMISSION_REASON over the limit
	}{
		{name: "small", event: PreToolUse, input: commentedRM(10), want: Deny, reason: "guard saw rm -rf", ran: true, envLen: len(commentedRM(10))},
		{name: "33 KB comment", event: PreToolUse, input: commentedRM(33 << 10), want: Deny, reason: "guard saw rm -rf", ran: true, envLen: len(commentedRM(33 << 10))},
		{name: "100 KB comment", event: PreToolUse, input: commentedRM(100 << 10), want: Deny, reason: "guard saw rm -rf", ran: true, envLen: len(commentedRM(100 << 10))},
		{name: "just under the limit", event: PreToolUse, input: commentedRM(maxEnvString - len("TOOL_INPUT=") - 1 - len(commentedRM(0))), want: Deny, reason: "guard saw rm -rf", ran: true, envLen: maxEnvString - len("TOOL_INPUT=") - 1},
		{name: "just over the limit", event: PreToolUse, input: commentedRM(maxEnvString - len("TOOL_INPUT=") - len(commentedRM(0))), want: Deny, reason: "too large for the environment of hook guard", ran: false, envLen: -1},
		{name: "200 KB comment", event: PreToolUse, input: commentedRM(200 << 10), want: Deny, reason: "too large for the environment of hook guard", ran: false, envLen: -1},
		{name: "NUL byte cannot be passed", event: PreToolUse, input: json.RawMessage("{\"command\":\"ls\x00rm -rf /\"}"), want: Deny, reason: "too large for the environment", ran: false, envLen: -1},
		// A hook answering for the person is not asked; the person is.
		{name: "permission request with a huge reason", event: PermissionRequest, input: commentedRM(10), hugeReason: true, want: NoOpinion, reason: "", ran: false, envLen: -1},
		// An observer is not a gate: it runs with the variable empty and
		// named in WEFT_HOOK_OMITTED; stdin has everything.
		{name: "observer of a huge call", event: PostToolUse, input: commentedRM(200 << 10), want: NoOpinion, reason: "", ran: true, envLen: 0, omitted: "TOOL_INPUT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ran := filepath.Join(dir, "ran")
			// A guard as users write them: it greps the variable, not stdin.
			guard := script(t, dir, "guard.sh", `touch "`+ran+`"
printf %s "$TOOL_INPUT" | wc -c | tr -d ' ' > "`+ran+`.len"
printf %s "$WEFT_HOOK_OMITTED" > "`+ran+`.omitted"
cat > "`+ran+`.stdin"
case "$TOOL_INPUT" in *"rm -rf"*) echo "guard saw rm -rf" >&2; exit 2;; esac
exit 0`)
			// A permission_request guard as users write them: it approves
			// unless the reason mentions rm.
			if tc.event == PermissionRequest {
				guard = script(t, dir, "approve.sh", `touch "`+ran+`"
case "$PERMISSION_REASON" in *rm*) exit 0;; esac
echo '{"hookSpecificOutput":{"decision":{"behavior":"allow"}}}'`)
			}
			m, logs := newTestManager(t, Options{})
			if err := m.Register(Def{Name: "guard", Event: tc.event, Command: guard}); err != nil {
				t.Fatal(err)
			}
			in := Input{Event: tc.event, ToolName: "Bash", ToolInput: tc.input, Cwd: dir}
			if tc.hugeReason {
				in.Reason = "asks for approval of " + strings.Repeat("x", 200<<10) + " rm -rf /"
			}
			out := m.Run(context.Background(), in)
			if tc.hugeReason && !logs.warned("too large", "the person is asked") {
				t.Errorf("no warning that the hook was skipped:\n%s", logs)
			}
			if out.Verdict != tc.want || !strings.Contains(out.Reason, tc.reason) {
				t.Fatalf("verdict %q (%s), want %q with %q", out.Verdict, out.Reason, tc.want, tc.reason)
			}
			_, err := os.Stat(ran)
			if (err == nil) != tc.ran {
				t.Fatalf("script ran = %v, want %v", err == nil, tc.ran)
			}
			if !tc.ran {
				return
			}
			if tc.envLen >= 0 {
				if got := strings.TrimSpace(readFile(t, ran+".len")); got != itoa(tc.envLen) {
					t.Errorf("TOOL_INPUT had %s bytes, want %d", got, tc.envLen)
				}
			}
			if got := readFile(t, ran+".omitted"); got != tc.omitted {
				t.Errorf("WEFT_HOOK_OMITTED = %q, want %q", got, tc.omitted)
			}
			var env map[string]any
			if err := json.Unmarshal([]byte(readFile(t, ran+".stdin")), &env); err != nil {
				t.Fatalf("stdin: %v", err)
			}
			if got, _ := json.Marshal(env["tool_input"]); len(got) < len(tc.input)-8 {
				t.Errorf("stdin tool_input has %d bytes, want all %d", len(got), len(tc.input))
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestHookOmittedNotShadowed: a variable left out for its size is set
// empty, so a TOOL_INPUT in weft's own environment cannot stand in for it.
func TestHookOmittedNotShadowed(t *testing.T) {
	t.Setenv("TOOL_INPUT", `{"command":"ls"}`)
	dir := t.TempDir()
	out := filepath.Join(dir, "seen")
	p := script(t, dir, "dump.sh", `printf %s "$TOOL_INPUT" > "`+out+`"`)
	m, logs := newTestManager(t, Options{})
	if err := m.Register(Def{Name: "dump", Event: PostToolUse, Command: p}); err != nil {
		t.Fatal(err)
	}
	m.Run(context.Background(), Input{Event: PostToolUse, ToolName: "Bash", ToolInput: commentedRM(200 << 10), Cwd: dir})
	if strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("hook failed:\n%s", logs)
	}
	if got := readFile(t, out); got != "" {
		t.Fatalf("the hook saw TOOL_INPUT=%q from weft's environment", got)
	}
}
