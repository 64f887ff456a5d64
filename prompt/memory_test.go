package prompt_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/memory"
	"github.com/weft-run/weft/prompt"
)

func memoryStore(tb testing.TB, entries int) *memory.FileStore {
	tb.Helper()
	home := tb.TempDir()
	s, err := memory.NewFileStore(memory.FileStoreConfig{Home: home, Workspace: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range entries {
		scope := memory.ScopeProject
		if i%2 == 0 {
			scope = memory.ScopeUser
		}
		if _, _, _, err := s.Remember(context.Background(), scope, memory.Entry{Name: fmt.Sprintf("fact-%02d", i),
			Description: fmt.Sprintf("fact number %d", i), Body: fmt.Sprintf("MEMORY-FACT-%02d: ", i) + strings.Repeat("detail ", 100)}); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

// TestMemorySection: the memory is in the prompt's first (stable) block,
// in every bundle, a custom one without a memory section included; its
// bytes stay the same between builds while the memory does not change,
// and a new memory shows in the next build.
func TestMemorySection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	custom := prompt.NewBundleFromFunc(func() []*prompt.Section { return []*prompt.Section{prompt.StaticSection("intro", "CUSTOM-BUNDLE")} }, nil)
	for _, tc := range []struct {
		name string
		key  prompt.BundleKey
	}{{"default", prompt.DefaultKey}, {"chinese", prompt.KeyFor("qwen", "programming")}, {"custom", prompt.KeyFor("acme", "support")}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mem := memoryStore(t, 2)
			reg := prompt.NewRegistry()
			reg.Register(prompt.KeyFor("acme", "support"), custom)
			b := prompt.New(prompt.Config{Bundles: reg, Key: tc.key, Home: t.TempDir(), Memory: mem, Logger: discard()})
			req := prompt.Request{Model: "m", Tools: []llm.ToolSpec{{Name: "memory_remember"}}}
			p := b.Build(ctx, req)
			if len(p.Blocks) != 1 {
				t.Fatalf("%d blocks", len(p.Blocks))
			}
			first := p.Blocks[0].Text
			for _, want := range []string{"<memory>", "MEMORY-FACT-00", "MEMORY-FACT-01", "</memory>"} {
				if !strings.Contains(first, want) {
					t.Fatalf("first block lacks %q:\n%s", want, first)
				}
			}
			if again := b.Build(ctx, req).Blocks[0].Text; again != first {
				t.Fatal("the stable block changed without a memory write")
			}
			if _, _, _, err := mem.Remember(ctx, "", memory.Entry{Name: "late", Body: "LATE-FACT"}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.Build(ctx, req).Blocks[0].Text, "LATE-FACT") {
				t.Fatal("a new memory is not in the next build")
			}
		})
	}
}

// BenchmarkMemoryInjection is the cost memory adds to the system prompt
// of every model call, with 20 entries (about 14 KB) in the two scopes:
// "cached" is a call within the 30 s TTL (the usual turn), "reread" one
// after it or after a write, when the directories are read again.
func BenchmarkMemoryInjection(b *testing.B) {
	ctx := context.Background()
	req := prompt.Request{Model: "claude-sonnet-4-5", Provider: "anthropic", Tools: []llm.ToolSpec{{Name: "Read"}, {Name: "memory_remember"}}}
	b.Run("none", func(b *testing.B) {
		bld := prompt.New(prompt.Config{Workspace: b.TempDir(), Home: b.TempDir(), Logger: discard()})
		b.ReportAllocs()
		for b.Loop() {
			bld.Build(ctx, req)
		}
	})
	b.Run("cached", func(b *testing.B) {
		mem := memoryStore(b, 20)
		bld := prompt.New(prompt.Config{Workspace: b.TempDir(), Home: b.TempDir(), Memory: mem, Logger: discard()})
		if !strings.Contains(bld.Build(ctx, req).Text(), "MEMORY-FACT-19") {
			b.Fatal("setup: memory not injected")
		}
		b.ReportAllocs()
		for b.Loop() {
			bld.Build(ctx, req)
		}
	})
	b.Run("reread", func(b *testing.B) {
		mem := memoryStore(b, 20)
		// A TTL of 1ns re-reads the directories on every build.
		s, err := memory.NewFileStore(memory.FileStoreConfig{UserDir: mem.Dir(memory.ScopeUser).Path(), ProjectDir: mem.Dir(memory.ScopeProject).Path(), PromptTTL: 1})
		if err != nil {
			b.Fatal(err)
		}
		bld := prompt.New(prompt.Config{Workspace: b.TempDir(), Home: b.TempDir(), Memory: s, Logger: discard()})
		if !strings.Contains(bld.Build(ctx, req).Text(), "MEMORY-FACT-19") {
			b.Fatal("setup: memory not injected")
		}
		b.ReportAllocs()
		for b.Loop() {
			bld.Build(ctx, req)
		}
	})
}
