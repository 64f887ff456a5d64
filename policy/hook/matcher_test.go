package hook

import (
	"context"
	"sync/atomic"
	"testing"
)

func TestMatchers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		matcher string
		event   Event
		subject string // tool name, or Extra source/trigger
		noExtra bool   // leave Extra["source"]/["trigger"] unset
		want    bool
	}{
		{matcher: "", event: PreToolUse, subject: "Bash", want: true},
		{matcher: "*", event: PreToolUse, subject: "anything", want: true},
		{matcher: "Bash", event: PreToolUse, subject: "Bash", want: true},
		{matcher: "Bash", event: PreToolUse, subject: "bash", want: false},
		{matcher: "Bash", event: PreToolUse, subject: "BashOutput", want: false},
		{matcher: "Edit|Write", event: PostToolUse, subject: "Write", want: true},
		{matcher: "Edit|Write", event: PostToolUse, subject: "Read", want: false},
		{matcher: "Edit|MultiEdit|Write", event: PostToolUseFailure, subject: "MultiEdit", want: true},
		{matcher: "mcp__.*", event: PreToolUse, subject: "mcp__github__create_issue", want: true},
		{matcher: "mcp__.*", event: PreToolUse, subject: "xmcp__github", want: false},
		{matcher: "mcp__memory__.*", event: PermissionRequest, subject: "mcp__github__x", want: false},
		{matcher: "Notebook.*", event: PermissionDenied, subject: "NotebookEdit", want: true},
		{matcher: "Web(Fetch|Search)", event: PreToolUse, subject: "WebSearch", want: true},
		{matcher: "Web(Fetch|Search)", event: PreToolUse, subject: "WebSearchX", want: false},
		{matcher: "Bash", event: PreToolUse, subject: "", want: false},
		// Events without a subject ignore the matcher.
		{matcher: "Bash", event: Notification, subject: "", want: true},
		{matcher: "Bash", event: Stop, subject: "", want: true},
		// session_start matches its source, pre_compact its trigger.
		{matcher: "startup", event: SessionStart, subject: "startup", want: true},
		{matcher: "startup", event: SessionStart, subject: "resume", want: false},
		{matcher: "startup|resume", event: SessionStart, subject: "resume", want: true},
		{matcher: "startup", event: SessionStart, noExtra: true, want: true},
		{matcher: "manual", event: PreCompact, subject: "auto", want: false},
		{matcher: "auto", event: PreCompact, subject: "auto", want: true},
	}
	for _, tt := range tests {
		t.Run(string(tt.event)+"/"+tt.matcher+"/"+tt.subject, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			m, _ := newTestManager(t, Options{})
			err := m.Register(Def{Event: tt.event, Matcher: tt.matcher, Func: func(context.Context, Input) (Outcome, error) {
				calls.Add(1)
				return Outcome{}, nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			in := Input{Event: tt.event}
			switch {
			case tt.event.isToolEvent():
				in.ToolName = tt.subject
			case tt.noExtra:
			case tt.event == SessionStart:
				in.Extra = map[string]any{"source": tt.subject}
			case tt.event == PreCompact:
				in.Extra = map[string]any{"trigger": tt.subject}
			}
			m.Run(context.Background(), in)
			if got := calls.Load() == 1; got != tt.want {
				t.Errorf("ran = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRegisterValidates(t *testing.T) {
	t.Parallel()
	f := func(context.Context, Input) (Outcome, error) { return Outcome{}, nil }
	bad := []Def{
		{Event: "pre_tool_uze", Command: "true"},
		{Event: PreToolUse},
		{Event: PreToolUse, Command: "true", URL: "http://x"},
		{Event: PreToolUse, Command: "true", Func: f},
		{Event: PreToolUse, Command: "   "},
		{Event: PreToolUse, URL: "localhost:8080/hook"},
		{Event: PreToolUse, URL: "ftp://example.com/x"},
		{Event: PreToolUse, Command: "true", Matcher: "Bash("},
		{Event: PreToolUse, Command: "true", Timeout: -1},
	}
	for _, d := range bad {
		m, _ := newTestManager(t, Options{})
		good := Def{Name: "good", Event: PreToolUse, Command: "true"}
		if err := m.Register(good, d); err == nil {
			t.Errorf("Register(%+v) succeeded", d)
		}
		if len(m.Defs()) != 0 {
			t.Errorf("a failed Register registered %d hooks", len(m.Defs()))
		}
	}
}
