package hook

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	type want struct {
		name, matcher, command, url string
		event                       Event
		timeout                     time.Duration
		async                       bool
	}
	tests := []struct {
		name string
		data string
		want []want
	}{
		{name: "empty", data: ``},
		{name: "null", data: `null`},
		{name: "empty object", data: `{}`},
		{
			name: "claude hooks object",
			data: `{
  "PreToolUse": [
    {"matcher": "Bash", "hooks": [
      {"type": "command", "command": "check.sh", "timeout": 30},
      {"type": "http", "url": "http://127.0.0.1:9/hook", "headers": {"Authorization": "Bearer $T"}, "allowedEnvVars": ["T"]}
    ]},
    {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "fmt.sh", "async": true}]}
  ],
  "Stop": [{"hooks": [{"type": "command", "command": "notify.sh", "timeout": 0.5}]}]
}`,
			want: []want{
				{name: "settings.json/PreToolUse[0]", event: PreToolUse, matcher: "Bash", command: "check.sh", timeout: 30 * time.Second},
				{name: "settings.json/PreToolUse[1]", event: PreToolUse, matcher: "Bash", url: "http://127.0.0.1:9/hook"},
				{name: "settings.json/PreToolUse[2]", event: PreToolUse, matcher: "Edit|Write", command: "fmt.sh", async: true},
				{name: "settings.json/Stop[0]", event: Stop, command: "notify.sh", timeout: 500 * time.Millisecond},
			},
		},
		{
			name: "whole settings file with seed event names",
			data: `{"permissions": {"allow": ["Bash(ls)"]}, "env": {"A": "1"},
  "hooks": {"pre_tool_use": [{"matcher": "*", "hooks": [{"type": "command", "command": "a"}]}],
            "run_complete": [{"hooks": [{"command": "b"}]}]}}`,
			want: []want{
				{name: "settings.json/pre_tool_use[0]", event: PreToolUse, matcher: "*", command: "a"},
				{name: "settings.json/run_complete[0]", event: RunComplete, command: "b"},
			},
		},
		{
			name: "fengyu flat list",
			data: `[
  {"name": "gate", "event": "pre_tool_use", "matcher": "execute_command", "type": "command", "command": "gate.sh", "timeoutSeconds": 5, "enabled": true},
  {"name": "off", "event": "pre_tool_use", "type": "command", "command": "x", "enabled": false},
  {"name": "audit", "event": "PostToolUse", "type": "http", "url": "https://audit.example/hook"},
  {"event": "run_error", "type": "command", "command": "page.sh", "timeout": 2}
]`,
			want: []want{
				{name: "gate", event: PreToolUse, matcher: "execute_command", command: "gate.sh", timeout: 5 * time.Second},
				{name: "audit", event: PostToolUse, url: "https://audit.example/hook"},
				{name: "settings.json/run_error[3]", event: RunError, command: "page.sh", timeout: 2 * time.Second},
			},
		},
		{
			name: "flat list under hooks",
			data: `{"hooks": [{"name": "n", "event": "stop", "command": "s"}]}`,
			want: []want{{name: "n", event: Stop, command: "s"}},
		},
		{
			name: "disabled entries in claude shape are skipped",
			data: `{"Notification": [{"hooks": [{"type": "command", "command": "a", "enabled": false}, {"type": "command", "command": "b"}]}]}`,
			want: []want{{name: "settings.json/Notification[0]", event: Notification, command: "b"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defs, err := ParseConfig("settings.json", json.RawMessage(tt.data), "src")
			if err != nil {
				t.Fatal(err)
			}
			if len(defs) != len(tt.want) {
				t.Fatalf("%d defs, want %d: %+v", len(defs), len(tt.want), defs)
			}
			for i, w := range tt.want {
				d := defs[i]
				got := want{name: d.Name, event: d.Event, matcher: d.Matcher, command: d.Command, url: d.URL, timeout: d.Timeout, async: d.Async}
				if got != w {
					t.Errorf("def %d = %+v, want %+v", i, got, w)
				}
				if d.Source != "src" {
					t.Errorf("def %d source %q", i, d.Source)
				}
			}
			for _, d := range defs {
				if d.URL == "http://127.0.0.1:9/hook" && (d.Headers["Authorization"] != "Bearer $T" || len(d.HeaderEnv) != 1 || d.HeaderEnv[0] != "T") {
					t.Errorf("http headers not kept unexpanded: %+v", d)
				}
			}
			// Whatever ParseConfig accepts, Register accepts.
			m, _ := newTestManager(t, Options{})
			if err := m.Register(defs...); err != nil {
				t.Errorf("Register rejected parsed defs: %v", err)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want string // substring after "settings.json: "
	}{
		{name: "not json", data: `{"PreToolUse": [`, want: "unexpected end of JSON"},
		{name: "scalar", data: `42`, want: "JSON object or array"},
		{name: "unknown claude event", data: `{"PreToolUze": []}`, want: `PreToolUze: unknown hook event "PreToolUze"`},
		{name: "unknown event under hooks", data: `{"hooks": {"Stop": [], "Nope": []}}`, want: `hooks.Nope: unknown hook event`},
		{name: "event not a list", data: `{"Stop": {"hooks": []}}`, want: "Stop: want a list of {matcher, hooks}"},
		{name: "unknown type", data: `{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "a"}, {"type": "script", "command": "b"}]}]}`, want: `PreToolUse[0].hooks[1]: unknown hook type "script"`},
		{name: "prompt type unsupported", data: `{"Stop": [{"hooks": [{"type": "prompt", "prompt": "are we done?"}]}]}`, want: `Stop[0].hooks[0]: hook type "prompt" is not supported`},
		{name: "bad matcher", data: `{"PreToolUse": [{"matcher": "Bash(", "hooks": [{"type": "command", "command": "a"}]}]}`, want: `PreToolUse[0]: bad matcher "Bash("`},
		{name: "command missing", data: `{"PreToolUse": [{"hooks": [{"type": "command"}]}]}`, want: `PreToolUse[0].hooks[0]: type "command" needs a non-empty "command"`},
		{name: "type missing", data: `{"PreToolUse": [{"hooks": [{"timeout": 3}]}]}`, want: `missing "type"`},
		{name: "timeout wrong type", data: `{"PreToolUse": [{"hooks": [{"type": "command", "command": "a", "timeout": "60"}]}]}`, want: `PreToolUse[0].hooks[0]: json`},
		{name: "negative timeout", data: `{"PreToolUse": [{"hooks": [{"type": "command", "command": "a", "timeout": -1}]}]}`, want: "timeout -1 out of range"},
		{name: "http without url", data: `{"PreToolUse": [{"hooks": [{"type": "http"}]}]}`, want: `type "http" needs a "url"`},
		{name: "http relative url", data: `{"PreToolUse": [{"hooks": [{"type": "http", "url": "/hook"}]}]}`, want: "want an absolute http or https URL"},
		{name: "flat missing event", data: `[{"name": "x", "command": "a"}]`, want: `[0] (x): missing event`},
		{name: "flat unknown event", data: `[{"command": "a", "type": "command", "event": "pre_tool"}, {}]`, want: `[0]: unknown hook event "pre_tool"`},
		{name: "flat bad matcher", data: `[{"name": "ok", "event": "stop", "command": "a"}, {"name": "m", "event": "pre_tool_use", "matcher": "[", "command": "a"}]`, want: `[1] (m): bad matcher`},
		{name: "flat both command and url", data: `[{"event": "stop", "command": "a", "url": "http://x"}]`, want: `missing "type"`},
		{name: "hooks not a container", data: `{"hooks": "yes"}`, want: "hooks: want a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defs, err := ParseConfig("settings.json", json.RawMessage(tt.data), "")
			if err == nil {
				t.Fatalf("no error; defs %+v", defs)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Src != "settings.json" {
				t.Errorf("error %T %v is not a *ConfigError naming the file", err, err)
			}
			if !strings.HasPrefix(err.Error(), "settings.json: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestClaudeCodeSettingsUnchanged parses a .claude/settings.json written
// the way Claude Code's documentation shows, with its hook scripts, and
// runs it.
func TestClaudeCodeSettingsUnchanged(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	settings := `{
  "permissions": {
    "allow": ["Bash(npm run lint)", "Read(~/.zshrc)"],
    "deny": ["Read(./.env)"]
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/validate-bash.sh"
          }
        ]
      },
      {
        "matcher": "Edit|MultiEdit|Write",
        "hooks": [
          {
            "type": "command",
            "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/protect-files.sh",
            "timeout": 10
          }
        ]
      }
    ],
    "PostToolUse": [
      {
        "matcher": "Edit|MultiEdit|Write",
        "hooks": [
          {
            "type": "command",
            "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/log-edit.sh"
          }
        ]
      }
    ],
    "UserPromptSubmit": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "echo \"Current branch: main\""
          }
        ]
      }
    ],
    "SessionStart": [
      {
        "matcher": "startup",
        "hooks": [
          {
            "type": "command",
            "command": "echo 'Reminder: run the tests before committing.'"
          }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/stop-check.sh"
          }
        ]
      }
    ]
  }
}`
	writeFile(t, filepath.Join(project, ".claude", "settings.json"), settings)
	// Reads the envelope from stdin and blocks with exit 2 (the documented
	// Bash validator, written with sed instead of jq).
	script(t, project, ".claude/hooks/validate-bash.sh", `
INPUT=$(cat)
COMMAND=$(printf '%s' "$INPUT" | sed -n 's/.*"command":"\([^"]*\)".*/\1/p')
case "$COMMAND" in
  *"rm -rf"*) echo "Blocked: rm -rf is not allowed here" >&2; exit 2 ;;
esac
exit 0`)
	// Answers with Claude Code's current JSON shape.
	script(t, project, ".claude/hooks/protect-files.sh", `
INPUT=$(cat)
case "$INPUT" in
  *'"file_path":"'*'.env"'*)
    printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Protected file: .env"}}'
    ;;
esac
exit 0`)
	script(t, project, ".claude/hooks/log-edit.sh", `
INPUT=$(cat)
printf '%s\n' "$INPUT" | sed -n 's/.*"file_path":"\([^"]*\)".*/\1/p' >> "$CLAUDE_PROJECT_DIR/edits.log"`)
	// A Stop hook that keeps the agent going while stop_hook_active is false.
	script(t, project, ".claude/hooks/stop-check.sh", `
INPUT=$(cat)
case "$INPUT" in
  *'"stop_hook_active":true'*) exit 0 ;;
esac
echo '{"decision": "block", "reason": "Tests have not been run yet."}'`)

	data, err := os.ReadFile(filepath.Join(project, ".claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	defs, err := ParseConfig(".claude/settings.json", data, "")
	if err != nil {
		t.Fatal(err)
	}
	m, logs := newTestManager(t, Options{ProjectRoot: project})
	if err := m.ReplaceSource("", defs); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tool := func(ev Event, name, input string) Input {
		return Input{Event: ev, SessionID: "abc", Cwd: project, ToolName: name, ToolInput: json.RawMessage(input), ToolUseID: "toolu_01"}
	}
	tests := []struct {
		name        string
		in          Input
		wantVerdict Verdict
		wantReason  string
		wantHook    string
		wantContext string
	}{
		{name: "dangerous bash", in: tool(PreToolUse, "Bash", `{"command":"rm -rf build"}`),
			wantVerdict: Deny, wantReason: "Blocked: rm -rf is not allowed here", wantHook: ".claude/settings.json/PreToolUse[0]"},
		{name: "harmless bash", in: tool(PreToolUse, "Bash", `{"command":"ls -la"}`)},
		{name: "protected write", in: tool(PreToolUse, "Write", `{"file_path":"`+project+`/.env","content":"X=1"}`),
			wantVerdict: Deny, wantReason: "Protected file: .env", wantHook: ".claude/settings.json/PreToolUse[1]"},
		{name: "ordinary edit", in: tool(PreToolUse, "Edit", `{"file_path":"main.go","old_string":"a","new_string":"b"}`)},
		{name: "read is not matched", in: tool(PreToolUse, "Read", `{"file_path":".env"}`)},
		{name: "post edit logs", in: tool(PostToolUse, "Write", `{"file_path":"notes.md","content":""}`)},
		{name: "prompt context", in: Input{Event: UserPromptSubmit, SessionID: "abc", Cwd: project, Prompt: "fix the bug"},
			wantContext: "Current branch: main"},
		{name: "startup context", in: Input{Event: SessionStart, SessionID: "abc", Cwd: project, Extra: map[string]any{"source": "startup"}},
			wantContext: "Reminder: run the tests before committing."},
		{name: "resume is not startup", in: Input{Event: SessionStart, SessionID: "abc", Cwd: project, Extra: map[string]any{"source": "resume"}}},
		{name: "stop blocked", in: Input{Event: Stop, SessionID: "abc", Cwd: project, Extra: map[string]any{"stop_hook_active": false}},
			wantVerdict: Deny, wantReason: "Tests have not been run yet.", wantHook: ".claude/settings.json/Stop[0]"},
		{name: "stop allowed once active", in: Input{Event: Stop, SessionID: "abc", Cwd: project, Extra: map[string]any{"stop_hook_active": true}}},
	}
	for _, tt := range tests {
		got := m.Run(ctx, tt.in)
		if got.Verdict != tt.wantVerdict || got.Reason != tt.wantReason || got.Hook != tt.wantHook || got.AdditionalContext != tt.wantContext {
			t.Errorf("%s: got %+v, want %q %q by %q, context %q", tt.name, got, tt.wantVerdict, tt.wantReason, tt.wantHook, tt.wantContext)
		}
	}
	if got := readFile(t, filepath.Join(project, "edits.log")); got != "notes.md\n" {
		t.Errorf("edits.log = %q", got)
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("hooks failed:\n%s", logs)
	}
}
