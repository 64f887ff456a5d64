package hook

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseEvent(t *testing.T) {
	t.Parallel()
	for _, e := range Events() {
		for _, name := range []string{string(e), strings.ToUpper(string(e)), e.ClaudeName()} {
			if name == "" {
				continue
			}
			got, err := ParseEvent(name)
			if err != nil || got != e {
				t.Errorf("ParseEvent(%q) = %q, %v; want %q", name, got, err, e)
			}
		}
	}
	claude := map[string]Event{
		"PreToolUse": PreToolUse, "PostToolUse": PostToolUse, "PostToolUseFailure": PostToolUseFailure,
		"UserPromptSubmit": UserPromptSubmit, "Stop": Stop, "SubagentStop": SubagentStop,
		"SessionStart": SessionStart, "SessionEnd": SessionEnd, "Notification": Notification,
		"PreCompact": PreCompact, "PermissionRequest": PermissionRequest,
		"RunComplete": RunComplete, "pre-sampling": PreSampling,
	}
	for name, want := range claude {
		if got, err := ParseEvent(name); err != nil || got != want {
			t.Errorf("ParseEvent(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	for _, bad := range []string{"", "PreToolUze", "tool", "pre tool use", "__"} {
		if _, err := ParseEvent(bad); !errors.Is(err, ErrUnknownEvent) {
			t.Errorf("ParseEvent(%q) error = %v, want ErrUnknownEvent", bad, err)
		}
	}
	if n := len(Events()); n != 19 {
		t.Errorf("%d events, want 14 seed + 2 run + 3 Claude Code", n)
	}
	for _, e := range []Event{PreSampling, PostSampling, RunComplete, RunError} {
		if e.ClaudeName() != "" {
			t.Errorf("%s has Claude name %q", e, e.ClaudeName())
		}
	}
}

func TestEnvelopeIsRobust(t *testing.T) {
	t.Parallel()
	in := Input{
		Event: Notification, SessionID: "s", Cwd: "/w",
		ToolInput: json.RawMessage(`{not json`),
		Message:   "hello",
		Extra: map[string]any{
			"hook_event_name": "Spoofed", "weft_event": "x", "message": "spoofed",
			"title": "T", "bad": func() {}, "n": 3,
		},
	}
	var got map[string]any
	if err := json.Unmarshal(in.envelope(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"hook_event_name": "Notification", "weft_event": "notification", "message": "hello",
		"title": "T", "n": float64(3), "tool_input": "{not json", "session_id": "s", "cwd": "/w",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("envelope[%q] = %#v, want %#v", k, got[k], v)
		}
	}
	if _, ok := got["bad"]; ok {
		t.Error("an unencodable Extra value was kept")
	}
	long := strings.Repeat("é", 400) // 800 bytes
	pv := Input{Event: PostSampling, ResponsePreview: long}
	if err := json.Unmarshal(pv.envelope(), &got); err != nil {
		t.Fatal(err)
	}
	if p := got["response_preview"].(string); len(p) != PreviewLimit || !strings.HasPrefix(long, p) {
		t.Errorf("preview cut to %d bytes, want %d on a character boundary", len(p), PreviewLimit)
	}
}
