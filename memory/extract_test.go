package memory

import (
	"testing"

	"github.com/weft-run/weft/llm"
)

// TestDefaultCodeExtractorSpan: a user's preference or decision is a cue
// to extract sooner; file changes and tool output are not (nearly every
// coding turn has them, and each extraction is a model run).
func TestDefaultCodeExtractorSpan(t *testing.T) {
	edit := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolUse, ToolName: "Edit", ToolUseID: "t1"}}}
	output := llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("t1", false, llm.Text("always returns nil; never panics"))}}
	for _, tc := range []struct {
		name string
		msgs []llm.Message
		want bool
	}{
		{"preference", []llm.Message{llm.UserText("From now on use pnpm, not npm.")}, true},
		{"remember", []llm.Message{llm.UserText("Remember that the staging DB is read-only.")}, true},
		{"plain request", []llm.Message{llm.UserText("Fix the failing test in parser.go.")}, false},
		{"files changed", []llm.Message{llm.UserText("Rename foo to bar."), edit, output}, false},
		{"cue words in tool output only", []llm.Message{llm.UserText("Read the docs."), output}, false},
	} {
		if got := (&DefaultCodeExtractor{}).ShouldExtractSpan(tc.msgs); got != tc.want {
			t.Errorf("%s: ShouldExtractSpan = %v, want %v", tc.name, got, tc.want)
		}
	}
}
