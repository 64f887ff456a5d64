package agent

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/tool"
)

// TestObserverHooksAllocateNothingWhenOff: every report the loop makes per
// model call and per tool call returns before building any data when
// the agent has no observer (or Noop): they sit on the hot path.
func TestObserverHooksAllocateNothingWhenOff(t *testing.T) {
	for _, obs := range []observe.Observer{nil, observe.Noop{}} {
		a, err := New(Config{Provider: noProvider{}, Model: "m", Observer: obs})
		if err != nil {
			t.Fatal(err)
		}
		r := &run{a: a, s: a.NewSession(), ctx: context.Background()}
		call := llm.ToolUse("id", "Read", nil)
		spec := tool.Spec{Name: "Read"}
		v := policy.Verdict{Allow: true, Stage: "mode"}
		res := tool.Text("x")
		n := testing.AllocsPerRun(100, func() {
			r.observeDecision(call, spec, v, time.Second)
			r.observeTool(call, spec, observe.OutcomeOK, time.Millisecond)
			r.observeRetry(RetryData{}, false)
			r.observeBreaker("note", 3)
			_, end := r.toolSpan(r.ctx, call, spec)
			end(&res)
			r.end()
			// No budget: the check and the accounting after a call are free.
			r.checkBudget()
			r.afterCall(llm.Usage{InputTokens: 1}, 0)
		})
		if n != 0 {
			t.Errorf("observer %T: %v allocations per call, want 0", obs, n)
		}
	}
}

type noProvider struct{}

func (noProvider) Name() string { return "none" }
func (noProvider) Stream(context.Context, *llm.Request) iter.Seq[llm.Event] {
	return func(func(llm.Event) bool) {}
}
