package task

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/weft-run/weft/policy/secret"
)

// TestProcessTaskEnvironmentIsScrubbed: a process task started for the
// model inherits neither weft's own variables nor provider keys (issue
// 12), but keeps the rest of the environment and the variables its caller
// set. Not parallel: it sets the process environment.
func TestProcessTaskEnvironmentIsScrubbed(t *testing.T) {
	t.Setenv("WEFT_BEARER_TOKEN", "bearer-0a1b2c3d4e5f")
	t.Setenv("OPENAI_API_KEY", "sk-openai-0a1b2c3d4e")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "gateway-0a1b2c3d4e5f")
	t.Setenv("TASK_ENV_TEST_KEPT", "kept-value")
	r := newTestRegistry(t, nil, Options{})
	tests := []struct {
		name string
		env  []string // the caller's cmd.Env; nil inherits the process's
		want string
	}{
		{"inherited", nil, "[][][]kept-value[]\n"},
		{"caller's env", []string{"WEFT_BEARER_TOKEN=bearer-0a1b2c3d4e5f", "OPENAI_API_KEY=sk-openai-0a1b2c3d4e", "CALLER=set"}, "[][][][set]\n"},
	}
	for _, tt := range tests {
		cmd := exec.Command("sh", "-c", `echo "[$WEFT_BEARER_TOKEN][$OPENAI_API_KEY][$ANTHROPIC_AUTH_TOKEN]$TASK_ENV_TEST_KEPT[$CALLER]"`)
		cmd.Env = tt.env
		sub, err := r.SubmitProcess(context.Background(), tt.name, cmd, nil)
		if err != nil {
			t.Fatal(err)
		}
		if pr := processResult(t, mustEnd(t, r, sub.ID)); pr.Output != tt.want {
			t.Errorf("%s: output %q, want %q", tt.name, pr.Output, tt.want)
		}
	}
}

// TestProcessOutputIsRedactedBeforeItIsCut: the kept tail of a process's
// output starts wherever the cap falls; a secret straddling that point
// must not leave its end in clear. Redaction comes first, then the cap.
func TestProcessOutputIsRedactedBeforeItIsCut(t *testing.T) {
	t.Parallel()
	const value = "zqKp2WmXv4Rt8LnB"
	set := secret.NewSet()
	if err := set.Set("PROC_TOKEN", value); err != nil {
		t.Fatal(err)
	}
	r := newTestRegistry(t, nil, Options{Secrets: set})
	tests := []struct{ name, script string }{
		// The cap keeps the last ProcessOutputCap bytes: the value's first
		// 6 bytes fall before them.
		{"at the cut", fmt.Sprintf("printf %s; head -c %d /dev/zero | tr '\\0' y", value, ProcessOutputCap-len(value)+6)},
		{"whole", "echo before " + value + " after"},
		{"split across writes", fmt.Sprintf("printf %s; sleep 0.1; printf '%s after\\n'", value[:5], value[5:])},
		{"pass-through variable", `echo "$PROC_TOKEN"`},
	}
	for _, tt := range tests {
		sub, err := r.SubmitProcess(context.Background(), tt.name, exec.Command("sh", "-c", tt.script), nil)
		if err != nil {
			t.Fatal(err)
		}
		tk := mustEnd(t, r, sub.ID)
		if w := leakedWindow(string(tk.Result), value, 5); w != "" {
			t.Errorf("%s: the result shows %q of the secret: %.200s", tt.name, w, tk.Result)
		}
		if tt.name != "at the cut" && !strings.Contains(string(tk.Result), "[SECRET:PROC_TOKEN]") {
			t.Errorf("%s: no redaction marker in %s", tt.name, tk.Result)
		}
	}
}

// leakedWindow returns the first run of n bytes of value found in s, or "".
func leakedWindow(s, value string, n int) string {
	for i := 0; i+n <= len(value); i++ {
		if strings.Contains(s, value[i:i+n]) {
			return value[i : i+n]
		}
	}
	return ""
}
