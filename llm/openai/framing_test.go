package openai_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/weft-run/weft/llm"
)

// checkFraming asserts the strict grammar of a provider stream:
//
//	(BlockStart BlockDelta* BlockStop)* MessageDone UsageReport OutcomeReport
//
// with blocks indexed in start order, deltas and stops only for open blocks
// of the started type, each stopped block equal to its start plus its
// deltas, the message equal to the stopped blocks, and every non-completed
// outcome carrying a message and an *llm.Error. It returns the collected
// result.
func checkFraming(events []llm.Event) (llm.Result, error) {
	var (
		res     llm.Result
		starts  []llm.Block
		acc     []*bytes.Buffer
		open    []bool
		stopped []llm.Block
		phase   int // 0 blocks, 1 after message, 2 after usage, 3 after outcome
		fail    = func(i int, format string, a ...any) (llm.Result, error) {
			return res, fmt.Errorf("event %d: "+format, append([]any{i}, a...)...)
		}
		nOpen    int
		gotFinal bool
	)
	for i, ev := range events {
		if phase == 3 {
			return fail(i, "%s after the outcome", ev.Kind)
		}
		switch ev.Kind {
		case llm.EventBlockStart, llm.EventBlockDelta, llm.EventBlockStop:
			if phase != 0 {
				return fail(i, "%s after message_done", ev.Kind)
			}
		}
		switch ev.Kind {
		case llm.EventBlockStart:
			if ev.Index != len(starts) {
				return fail(i, "block_start index %d, want %d", ev.Index, len(starts))
			}
			switch ev.Block.Type {
			case llm.BlockText, llm.BlockThinking, llm.BlockToolUse:
			default:
				return fail(i, "block_start of type %q", ev.Block.Type)
			}
			starts = append(starts, ev.Block)
			acc = append(acc, &bytes.Buffer{})
			open = append(open, true)
			stopped = append(stopped, llm.Block{})
			nOpen++
		case llm.EventBlockDelta:
			if ev.Index < 0 || ev.Index >= len(starts) || !open[ev.Index] {
				return fail(i, "delta for block %d, which is not open", ev.Index)
			}
			if ev.Block.Type != starts[ev.Index].Type {
				return fail(i, "delta of type %q for a %q block", ev.Block.Type, starts[ev.Index].Type)
			}
			if ev.Delta == "" {
				return fail(i, "empty delta")
			}
			acc[ev.Index].WriteString(ev.Delta)
		case llm.EventBlockStop:
			if ev.Index < 0 || ev.Index >= len(starts) || !open[ev.Index] {
				return fail(i, "stop for block %d, which is not open", ev.Index)
			}
			open[ev.Index] = false
			nOpen--
			b, st := ev.Block, starts[ev.Index]
			if b.Type != st.Type {
				return fail(i, "stop of type %q for a %q block", b.Type, st.Type)
			}
			want := acc[ev.Index].String()
			switch b.Type {
			case llm.BlockToolUse:
				if want == "" {
					want = "{}"
				}
				if string(b.Input) != want {
					return fail(i, "tool block input %q, deltas were %q", b.Input, want)
				}
				if st.ToolUseID != "" && b.ToolUseID != st.ToolUseID || st.ToolName != "" && b.ToolName != st.ToolName {
					return fail(i, "tool block changed id/name from %q/%q to %q/%q", st.ToolUseID, st.ToolName, b.ToolUseID, b.ToolName)
				}
				if b.ToolUseID == "" {
					return fail(i, "tool block without an id")
				}
			default:
				if b.Text != want {
					return fail(i, "block text %q, deltas were %q", b.Text, want)
				}
			}
			stopped[ev.Index] = b
		case llm.EventMessageDone:
			if phase != 0 {
				return fail(i, "second message_done")
			}
			if nOpen != 0 {
				return fail(i, "message_done with %d blocks open", nOpen)
			}
			if ev.Message == nil {
				return fail(i, "message_done without a message")
			}
			if ev.Message.Role != llm.RoleAssistant {
				return fail(i, "message role %q", ev.Message.Role)
			}
			if len(ev.Message.Content) != len(stopped) {
				return fail(i, "message has %d blocks, %d were streamed", len(ev.Message.Content), len(stopped))
			}
			for j := range stopped {
				if !sameBlock(ev.Message.Content[j], stopped[j]) {
					return fail(i, "message block %d = %+v, stopped as %+v", j, ev.Message.Content[j], stopped[j])
				}
			}
			res.Message = *ev.Message
			phase = 1
		case llm.EventUsage:
			if phase != 1 {
				return fail(i, "usage out of place")
			}
			res.Usage = ev.Usage
			phase = 2
		case llm.EventOutcome:
			if phase != 2 {
				return fail(i, "outcome out of place")
			}
			o := ev.Outcome
			switch o.Status {
			case llm.StatusCompleted:
				if o.StopReason == "" {
					return fail(i, "completed without a stop reason")
				}
			case llm.StatusTimeout, llm.StatusMalformed, llm.StatusAborted, llm.StatusFailed, llm.StatusAuth:
				var e *llm.Error
				if o.Message == "" || !errors.As(o.Err, &e) {
					return fail(i, "outcome %s without a message or *llm.Error: %+v", o.Status, o)
				}
			default:
				return fail(i, "unknown status %q", o.Status)
			}
			res.Outcome = o
			phase = 3
			gotFinal = true
		default:
			return fail(i, "unknown event kind %d", ev.Kind)
		}
	}
	if !gotFinal {
		return res, fmt.Errorf("stream ended without an outcome (%d events)", len(events))
	}
	return res, nil
}

func sameBlock(a, b llm.Block) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb) && slices.Equal(a.Input, b.Input)
}
