package llm_test

import (
	"errors"
	"testing"

	"github.com/weft-run/weft/llm"
)

// record runs fn against a Framer and returns every event it emitted.
func record(fn func(f *llm.Framer)) []llm.Event {
	var evs []llm.Event
	f := llm.NewFramer(func(ev llm.Event) bool { evs = append(evs, ev); return true })
	fn(f)
	return evs
}

func kinds(evs []llm.Event) []llm.EventKind {
	out := make([]llm.EventKind, len(evs))
	for i, ev := range evs {
		out[i] = ev.Kind
	}
	return out
}

func TestFramer(t *testing.T) {
	t.Parallel()
	S, D, P, M, U, O := llm.EventBlockStart, llm.EventBlockDelta, llm.EventBlockStop, llm.EventMessageDone, llm.EventUsage, llm.EventOutcome
	tests := []struct {
		name      string
		run       func(f *llm.Framer)
		kinds     []llm.EventKind
		status    llm.Status
		text      string
		toolInput string
	}{
		{
			name: "text",
			run: func(f *llm.Framer) {
				i, _ := f.Start(llm.Block{Type: llm.BlockText})
				f.Delta(i, "Hel")
				f.Delta(i, "lo")
				f.Stop(i)
				f.Finish(llm.Outcome{Status: llm.StatusCompleted, StopReason: llm.StopEndTurn})
			},
			kinds: []llm.EventKind{S, D, D, P, M, U, O}, status: llm.StatusCompleted, text: "Hello",
		},
		{
			name: "open blocks are closed on finish",
			run: func(f *llm.Framer) {
				i, _ := f.Start(llm.Block{Type: llm.BlockText})
				f.Delta(i, "cut")
				f.Fail("p", &llm.Error{Category: llm.CategoryNetwork, Message: "connection reset"})
			},
			kinds: []llm.EventKind{S, D, P, M, U, O}, status: llm.StatusTimeout, text: "cut",
		},
		{
			name: "interleaved tool calls",
			run: func(f *llm.Framer) {
				a, _ := f.Start(llm.Block{Type: llm.BlockToolUse, ToolUseID: "a", ToolName: "x"})
				f.Delta(a, `{"k":`)
				b, _ := f.Start(llm.Block{Type: llm.BlockToolUse, ToolUseID: "b", ToolName: "y"})
				f.Delta(b, `{}`)
				f.Delta(a, `1}`)
				f.Stop(b)
				f.Stop(a)
				f.Finish(llm.Outcome{Status: llm.StatusCompleted, StopReason: llm.StopToolUse})
			},
			kinds: []llm.EventKind{S, D, S, D, D, P, P, M, U, O}, status: llm.StatusCompleted, toolInput: `{"k":1}`,
		},
		{
			name: "tool call with no arguments gets an empty object",
			run: func(f *llm.Framer) {
				i, _ := f.Start(llm.Block{Type: llm.BlockToolUse, ToolUseID: "a", ToolName: "x"})
				f.Stop(i)
				f.Finish(llm.Outcome{Status: llm.StatusCompleted})
			},
			kinds: []llm.EventKind{S, P, M, U, O}, status: llm.StatusCompleted, toolInput: `{}`,
		},
		{
			name: "unfinished tool arguments make a completed outcome malformed",
			run: func(f *llm.Framer) {
				i, _ := f.Start(llm.Block{Type: llm.BlockToolUse, ToolUseID: "a", ToolName: "x"})
				f.Delta(i, `{"k":`)
				f.Finish(llm.Outcome{Status: llm.StatusCompleted, StopReason: llm.StopToolUse})
			},
			kinds: []llm.EventKind{S, D, P, M, U, O}, status: llm.StatusMalformed, toolInput: `{"k":`,
		},
		{
			name: "deltas to unknown or closed blocks are dropped",
			run: func(f *llm.Framer) {
				i, _ := f.Start(llm.Block{Type: llm.BlockText})
				f.Delta(7, "ghost")
				f.Stop(i)
				f.Delta(i, "late")
				f.Stop(i)
				f.Finish(llm.Outcome{})
				f.Finish(llm.Outcome{Status: llm.StatusFailed}) // idempotent
			},
			kinds: []llm.EventKind{S, P, M, U, O}, status: llm.StatusCompleted,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			evs := record(tt.run)
			got := kinds(evs)
			if len(got) != len(tt.kinds) {
				t.Fatalf("kinds = %v, want %v", got, tt.kinds)
			}
			for i := range got {
				if got[i] != tt.kinds[i] {
					t.Fatalf("kinds = %v, want %v", got, tt.kinds)
				}
			}
			last := evs[len(evs)-1]
			if last.Outcome.Status != tt.status {
				t.Errorf("status = %q, want %q (%s)", last.Outcome.Status, tt.status, last.Outcome.Message)
			}
			var msg *llm.Message
			for _, ev := range evs {
				if ev.Kind == llm.EventMessageDone {
					msg = ev.Message
				}
			}
			if got := msg.Text(); got != tt.text {
				t.Errorf("text = %q, want %q", got, tt.text)
			}
			if tt.toolInput != "" {
				if uses := msg.ToolUses(); len(uses) == 0 || string(uses[0].Input) != tt.toolInput {
					t.Errorf("tool input = %+v, want %s", uses, tt.toolInput)
				}
			}
			// Every stop event carries the same block the message holds.
			for _, ev := range evs {
				if ev.Kind == llm.EventBlockStop && ev.Block.Type != msg.Content[ev.Index].Type {
					t.Errorf("stop %d type %q != message block %q", ev.Index, ev.Block.Type, msg.Content[ev.Index].Type)
				}
			}
		})
	}
}

func TestFramerConsumerStops(t *testing.T) {
	t.Parallel()
	n := 0
	f := llm.NewFramer(func(llm.Event) bool { n++; return n < 2 })
	i, ok := f.Start(llm.Block{Type: llm.BlockText})
	if !ok {
		t.Fatal("first event refused")
	}
	if f.Delta(i, "a") {
		t.Fatal("Delta reported true after the consumer stopped")
	}
	f.Delta(i, "b")
	f.Finish(llm.Outcome{})
	if n != 2 || !f.Stopped() {
		t.Fatalf("yield called %d times after stop, Stopped=%v", n, f.Stopped())
	}
}

func TestFramerMetaAndCollect(t *testing.T) {
	t.Parallel()
	seq := func(yield func(llm.Event) bool) {
		f := llm.NewFramer(yield)
		i, _ := f.Start(llm.Block{Type: llm.BlockThinking})
		f.Delta(i, "hmm")
		f.SetMeta(i, "anthropic.signature", "sig")
		f.Stop(i)
		f.SetUsage(llm.Usage{InputTokens: 3, OutputTokens: 4})
		f.Finish(llm.Outcome{Status: llm.StatusCompleted, StopReason: llm.StopEndTurn})
	}
	r := llm.Collect(seq)
	if r.Message.Role != llm.RoleAssistant || len(r.Message.Content) != 1 {
		t.Fatalf("message = %+v", r.Message)
	}
	b := r.Message.Content[0]
	if b.Text != "hmm" || b.MetaValue("anthropic.signature") != "sig" {
		t.Errorf("thinking block = %+v", b)
	}
	if r.Usage.OutputTokens != 4 || r.Outcome.StopReason != llm.StopEndTurn {
		t.Errorf("usage/outcome = %+v %+v", r.Usage, r.Outcome)
	}
	var e *llm.Error
	if errors.As(r.Outcome.Err, &e) {
		t.Errorf("completed outcome carries an error: %v", e)
	}
}

func TestStatusRetryable(t *testing.T) {
	t.Parallel()
	for s, want := range map[llm.Status]bool{
		llm.StatusCompleted: false, llm.StatusAborted: false, llm.StatusAuth: false,
		// failed is a request the provider refused: sending it again
		// unchanged cannot succeed (issue 14).
		llm.StatusTimeout: true, llm.StatusMalformed: true, llm.StatusFailed: false,
	} {
		if s.Retryable() != want {
			t.Errorf("%s.Retryable() = %v", s, !want)
		}
	}
}
