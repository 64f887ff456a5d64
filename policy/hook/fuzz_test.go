package hook

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParseConfig: no panic, deterministic, and everything it accepts
// registers.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		``, `null`, `{}`, `[]`, `42`, `{"hooks": null}`,
		`{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "a", "timeout": 3}]}]}`,
		`{"hooks": {"Stop": [{"hooks": [{"type": "http", "url": "http://127.0.0.1:1/x", "headers": {"A": "$B"}}]}]}}`,
		`[{"name": "n", "event": "pre_tool_use", "matcher": "mcp__.*", "type": "command", "command": "x", "timeoutSeconds": 1.5, "enabled": true}]`,
		`[{"event": "stop", "type": "prompt"}]`,
		`{"PreToolUse": [{"matcher": "(", "hooks": []}]}`,
		`{"hooks": [{"event": "run_error", "url": "https://h/"}]}`,
		`{"PreToolUse": [{"hooks": [{"type": "command", "command": "a", "timeout": 1e300}]}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defs, err := ParseConfig("f.json", json.RawMessage(data), "p")
		again, err2 := ParseConfig("f.json", json.RawMessage(data), "p")
		if (err == nil) != (err2 == nil) || len(defs) != len(again) {
			t.Fatalf("not deterministic: %v / %v", err, err2)
		}
		if err != nil {
			return
		}
		for i := range defs {
			if defs[i].Name != again[i].Name || !reflect.DeepEqual(defs[i].Headers, again[i].Headers) {
				t.Fatalf("not deterministic at %d", i)
			}
		}
		m := NewManager(Options{})
		if err := m.Register(defs...); err != nil {
			t.Fatalf("ParseConfig accepted what Register rejects: %v", err)
		}
	})
}

// FuzzParseOutput: hook stdout never panics the parser and always maps to
// a known verdict.
func FuzzParseOutput(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `not json`, `{"decision":"block","reason":"r"}`,
		`{"hookSpecificOutput":{"permissionDecision":"deny","updatedInput":{"a":1},"decision":{"behavior":"allow"}}}`,
		`{"continue":false,"stopReason":"x"}`, `{"decision":7,"updatedInput":[],"continue":"no"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, ok := parseOutput(data)
		switch o.Verdict {
		case NoOpinion, Allow, Deny, Ask:
		default:
			t.Fatalf("verdict %q", o.Verdict)
		}
		if !ok && !reflect.DeepEqual(o, Outcome{}) {
			t.Fatalf("non-JSON output produced %+v", o)
		}
		if len(o.UpdatedInput) > 0 && !json.Valid(o.UpdatedInput) {
			t.Fatalf("invalid updatedInput %q", o.UpdatedInput)
		}
	})
}
