package agent

import (
	"context"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
)

// TestSubagentRunsForgetTheirCancel: a long-lived sub-agent given many
// prompts keeps no state per finished run.
func TestSubagentRunsForgetTheirCancel(t *testing.T) {
	t.Parallel()
	const n = 5
	var scripts []llmtest.Script
	for range n {
		scripts = append(scripts, llmtest.Text("ok"))
	}
	a, err := New(Config{Provider: llmtest.NewScripted("scripted", scripts...), Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := a.NewSession().Spawn(context.Background(), SpawnConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		for range sa.Run(context.Background(), "go") {
		}
	}
	sa.mu.Lock()
	left := len(sa.cancels)
	sa.mu.Unlock()
	if left != 0 || sa.Last().Status != SubagentCompleted {
		t.Fatalf("%d cancel functions kept after %d finished runs; last %+v", left, n, sa.Last())
	}
}
