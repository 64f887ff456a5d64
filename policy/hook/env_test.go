package hook

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestEnvAndStdin checks seed 000's env builder table and the stdin
// envelope, as a script sees them.
func TestEnvAndStdin(t *testing.T) {
	t.Parallel()
	bigInput, _ := json.Marshal(map[string]string{"file_path": "big.txt", "content": strings.Repeat("x", 300<<10)})
	tests := []struct {
		name      string
		in        Input
		wantEnv   map[string]string
		noEnv     []string
		wantStdin map[string]any
	}{
		{
			name: "pre_tool_use",
			in: Input{Event: PreToolUse, SessionID: "sess", ToolName: "Bash", ToolUseID: "toolu_1",
				ToolInput: json.RawMessage(`{"command":"ls"}`), PermissionMode: "default",
				Extra: map[string]any{"transcript_path": "/t.jsonl"}},
			wantEnv: map[string]string{"HOOK_TYPE": "pre_tool_use", "TOOL_NAME": "Bash", "TOOL_INPUT": `{"command":"ls"}`, "SESSION_ID": "sess"},
			noEnv:   []string{"TOOL_OUTPUT", "MODEL"},
			wantStdin: map[string]any{
				"hook_event_name": "PreToolUse", "weft_event": "pre_tool_use", "session_id": "sess",
				"tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": map[string]any{"command": "ls"},
				"permission_mode": "default", "transcript_path": "/t.jsonl",
			},
		},
		{
			name: "post_tool_use",
			in: Input{Event: PostToolUse, ToolName: "Read", ToolInput: json.RawMessage(`{"file_path":"a"}`),
				ToolResponse: json.RawMessage(`"line one\nline two"`)},
			wantEnv: map[string]string{"HOOK_TYPE": "post_tool_use", "TOOL_NAME": "Read", "TOOL_OUTPUT": "line one\nline two", "TOOL_IS_ERROR": "false"},
			wantStdin: map[string]any{"hook_event_name": "PostToolUse", "tool_response": "line one\nline two",
				"tool_input": map[string]any{"file_path": "a"}},
		},
		{
			name: "post_tool_use_failure",
			in: Input{Event: PostToolUseFailure, ToolName: "Bash", IsError: true,
				ToolResponse: json.RawMessage(`{"error":"exit 1"}`)},
			wantEnv:   map[string]string{"TOOL_OUTPUT": `{"error":"exit 1"}`, "TOOL_IS_ERROR": "true"},
			wantStdin: map[string]any{"hook_event_name": "PostToolUseFailure", "is_error": true},
		},
		{
			name:      "pre_sampling",
			in:        Input{Event: PreSampling, Model: "anthropic:claude-x", Turn: 3, MessageCount: 7},
			wantEnv:   map[string]string{"HOOK_TYPE": "pre_sampling", "MODEL": "anthropic:claude-x", "TURN": "3", "MESSAGE_COUNT": "7"},
			wantStdin: map[string]any{"hook_event_name": "pre_sampling", "model": "anthropic:claude-x", "turn": float64(3)},
		},
		{
			name: "post_sampling",
			in: Input{Event: PostSampling, Model: "m", Turn: 1, InputTokens: 10, OutputTokens: 20,
				StopReason: "end_turn", ResponsePreview: strings.Repeat("a", 900)},
			wantEnv: map[string]string{"INPUT_TOKENS": "10", "OUTPUT_TOKENS": "20", "STOP_REASON": "end_turn",
				"RESPONSE_PREVIEW": strings.Repeat("a", PreviewLimit)},
			wantStdin: map[string]any{"response_preview": strings.Repeat("a", PreviewLimit), "output_tokens": float64(20)},
		},
		{
			name:      "session_end",
			in:        Input{Event: SessionEnd, SessionID: "s9", Reason: "logout"},
			wantEnv:   map[string]string{"HOOK_TYPE": "session_end", "SESSION_ID": "s9"},
			wantStdin: map[string]any{"hook_event_name": "SessionEnd", "reason": "logout"},
		},
		{
			name:      "permission_request",
			in:        Input{Event: PermissionRequest, ToolName: "Write", Reason: "outside workspace"},
			wantEnv:   map[string]string{"TOOL_NAME": "Write", "PERMISSION_REASON": "outside workspace"},
			wantStdin: map[string]any{"hook_event_name": "PermissionRequest", "reason": "outside workspace"},
		},
		{
			name:      "notification",
			in:        Input{Event: Notification, Message: "needs approval", Level: "warn"},
			wantEnv:   map[string]string{"NOTIFICATION_MESSAGE": "needs approval", "NOTIFICATION_LEVEL": "warn"},
			wantStdin: map[string]any{"hook_event_name": "Notification", "message": "needs approval", "level": "warn"},
		},
		{
			name:      "task_completed",
			in:        Input{Event: TaskCompleted, TaskID: "t1", TaskDescription: "nightly report"},
			wantEnv:   map[string]string{"HOOK_TYPE": "task_completed", "TASK_ID": "t1", "TASK_DESCRIPTION": "nightly report"},
			wantStdin: map[string]any{"hook_event_name": "TaskCompleted", "task_id": "t1", "task_description": "nightly report"},
		},
		{
			name:      "run_error has no Claude name",
			in:        Input{Event: RunError, Reason: "provider down"},
			wantEnv:   map[string]string{"HOOK_TYPE": "run_error"},
			wantStdin: map[string]any{"hook_event_name": "run_error", "weft_event": "run_error"},
		},
		{
			// Linux refuses a 300 KiB variable; a hook that only observes
			// still starts, with TOOL_INPUT empty and named in
			// WEFT_HOOK_OMITTED, and stdin carries everything. (A gate,
			// pre_tool_use, refuses the call instead: TestHookInputWhole.)
			name:    "huge tool input",
			in:      Input{Event: PostToolUse, ToolName: "Write", ToolInput: bigInput},
			wantEnv: map[string]string{"TOOL_NAME": "Write", "TOOL_INPUT": "", OmittedEnv: "TOOL_INPUT"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			root := filepath.Join(dir, "root")
			cwd := filepath.Join(dir, "cwd")
			out := filepath.Join(dir, "out")
			p := script(t, dir, "dump.sh", `env > "`+out+`.env"; cat > "`+out+`.stdin"; pwd > "`+out+`.pwd"`)
			script(t, cwd, ".keep", "")
			m, logs := newTestManager(t, Options{ProjectRoot: root})
			if err := m.Register(Def{Name: "dump", Event: tt.in.Event, Command: p, Env: []string{"EXTRA_VAR=1", "HOOK_TYPE=spoofed"}}); err != nil {
				t.Fatal(err)
			}
			tt.in.Cwd = cwd
			m.Run(context.Background(), tt.in)
			if strings.Contains(logs.String(), "level=WARN") {
				t.Fatalf("hook failed:\n%s", logs)
			}
			env := envMap(readFile(t, out+".env"))
			want := map[string]string{
				"PROJECT_ROOT": root, "CLAUDE_PROJECT_DIR": root, "CWD": cwd, "EXTRA_VAR": "1",
				"PLATFORM": runtime.GOOS, "ARCH": runtime.GOARCH, "HOOK_TYPE": string(tt.in.Event),
			}
			for k, v := range tt.wantEnv {
				want[k] = v
			}
			for k, v := range want {
				if strings.Contains(v, "\n") { // env output splits lines; compare the first
					v, _, _ = strings.Cut(v, "\n")
				}
				if env[k] != v {
					t.Errorf("env %s = %q, want %q", k, env[k], v)
				}
			}
			for _, k := range tt.noEnv {
				if _, ok := env[k]; ok {
					t.Errorf("env %s set for %s", k, tt.in.Event)
				}
			}
			if got := strings.TrimSpace(readFile(t, out+".pwd")); got != cwd {
				t.Errorf("working directory %q, want Input.Cwd %q", got, cwd)
			}
			var stdin map[string]any
			if err := json.Unmarshal([]byte(readFile(t, out+".stdin")), &stdin); err != nil {
				t.Fatalf("stdin is not JSON: %v", err)
			}
			if stdin["cwd"] != cwd {
				t.Errorf("stdin cwd = %v", stdin["cwd"])
			}
			for k, v := range tt.wantStdin {
				if g, _ := json.Marshal(stdin[k]); string(g) != mustJSON(t, v) {
					t.Errorf("stdin[%q] = %s, want %s", k, g, mustJSON(t, v))
				}
			}
			if tt.name == "huge tool input" {
				if got := stdin["tool_input"].(map[string]any)["content"].(string); len(got) != 300<<10 {
					t.Errorf("stdin tool_input content has %d bytes, want all of it", len(got))
				}
				if v, ok := env["TOOL_INPUT"]; !ok || v != "" {
					t.Errorf("TOOL_INPUT env has %d bytes (set=%v), want it set empty, never cut", len(v), ok)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
