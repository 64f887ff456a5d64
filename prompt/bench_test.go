package prompt_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/prompt"
)

// BenchmarkBuild is the cost the system prompt adds to every model call
// of a session whose files did not change: stat calls for the instruction
// and skill files, the memoised dynamic sections, the assembly.
func BenchmarkBuild(b *testing.B) {
	l := newLayout(b)
	write(b, filepath.Join(l.repo, "AGENTS.md"), strings.Repeat("A project rule.\n", 500))
	write(b, filepath.Join(l.ws, "CLAUDE.md"), strings.Repeat("A package rule.\n", 100))
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		write(b, filepath.Join(l.home, ".weft", "skills", n, "SKILL.md"), skillFile(n, "Skill "+n+".", "body"))
	}
	tools := []llm.ToolSpec{{Name: "Bash"}, {Name: "Read"}, {Name: "Write"}, {Name: "Edit"}, {Name: "Glob"}, {Name: "Grep"}, {Name: prompt.SkillToolName}}
	bld := prompt.New(prompt.Config{Workspace: l.ws, Home: l.home, Logger: discard()})
	req := prompt.Request{Model: "claude-sonnet-4-5", Provider: "anthropic", Tools: tools}
	ctx := context.Background()
	if p := bld.Build(ctx, req); len(p.Skills) != 5 || len(p.Instructions) != 2 {
		b.Fatalf("setup: %d skills, %d instruction files", len(p.Skills), len(p.Instructions))
	}
	b.ReportAllocs()
	for b.Loop() {
		bld.Build(ctx, req)
	}
}
