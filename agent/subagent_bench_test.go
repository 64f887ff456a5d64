package agent_test

import (
	"context"
	"fmt"
	"iter"
	"testing"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/tool"
)

// instant is a provider that answers every request at once with the same
// short text: the model call costs next to nothing, so what a benchmark
// measures is weft's own work around it.
type instant struct{}

func (instant) Name() string { return "instant" }
func (instant) Stream(context.Context, *llm.Request) iter.Seq[llm.Event] {
	return func(yield func(llm.Event) bool) {
		f := llm.NewFramer(yield)
		i, ok := f.Start(llm.Block{Type: llm.BlockText, Text: "done"})
		if !ok || !f.Stop(i) {
			return
		}
		f.SetUsage(llm.Usage{InputTokens: 100, OutputTokens: 2})
		f.Finish(llm.Outcome{Status: llm.StatusCompleted, StopReason: llm.StopEndTurn})
	}
}

// BenchmarkSubagent compares one run of a fresh session (baseline) with
// one run of a sub-agent spawned for it (spawn: Spawn, Run, Close, with
// the subagent_* events and the cost roll-up) with all of the parent's 40
// tools, and one with half of them picked by globs (spawn-filtered: a
// smaller request, so it may come out cheaper than the baseline). The
// difference between spawn and baseline is what spawning adds beyond the
// sub-agent's model calls.
func BenchmarkSubagent(b *testing.B) {
	var tools []tool.Tool
	for i := range 40 {
		tools = append(tools, echoTool(fmt.Sprintf("Tool%02d", i), i%2 == 0, nil))
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		b.Fatal(err)
	}
	info := llm.ModelInfo{ID: "m", Provider: "instant", MaxOutputTokens: 1000, InputPrice: 1, OutputPrice: 2}
	a, err := agent.New(agent.Config{Provider: instant{}, Model: "m", ModelInfo: &info, Tools: reg,
		SubagentEvents: func(agent.Event) {}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, err := range a.NewSession().Run(ctx, "go") {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	for _, bc := range []struct {
		name     string
		patterns []string
	}{{"spawn", nil}, {"spawn-filtered", []string{"Tool0*", "Tool1*"}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			parent := a.NewSession()
			for b.Loop() {
				sa, err := parent.Spawn(ctx, agent.SpawnConfig{Type: "explore", Description: "look", Tools: bc.patterns})
				if err != nil {
					b.Fatal(err)
				}
				for _, err := range sa.Run(ctx, "go") {
					if err != nil {
						b.Fatal(err)
					}
				}
				_ = sa.Close()
			}
		})
	}
}
