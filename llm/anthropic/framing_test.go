package anthropic_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weft-run/weft/llm"
)

// framed is a stream that passed checkFraming.
type framed struct {
	Events  []llm.Event
	Result  llm.Result
	Deltas  map[int]string // per block index, the concatenated deltas
	Starts  []llm.Block    // the start events' blocks
	Err     *llm.Error     // the outcome's error, when not completed
	Message llm.Message
}

// checkFraming asserts the strict grammar of llm.Provider:
//
//	(BlockStart BlockDelta* BlockStop)* MessageDone UsageReport OutcomeReport
//
// with dense block indexes, deltas and stops only for open blocks, every
// block stopped before MessageDone, a complete message consistent with the
// deltas, and a typed error behind every outcome but completed.
func checkFraming(evs []llm.Event) (*framed, error) {
	fr := &framed{Events: evs, Deltas: map[int]string{}}
	var (
		open                 []bool
		stops                []llm.Block
		done, usage, outcome bool
	)
	for n, ev := range evs {
		at := fmt.Sprintf("event %d (%s)", n, ev.Kind)
		if outcome {
			return nil, fmt.Errorf("%s after the outcome", at)
		}
		switch ev.Kind {
		case llm.EventBlockStart, llm.EventBlockDelta, llm.EventBlockStop:
			if done {
				return nil, fmt.Errorf("%s after message_done", at)
			}
		}
		switch ev.Kind {
		case llm.EventBlockStart:
			if ev.Index != len(open) {
				return nil, fmt.Errorf("%s: index %d, want %d", at, ev.Index, len(open))
			}
			if ev.Block.Type == "" {
				return nil, fmt.Errorf("%s: block has no type", at)
			}
			open = append(open, true)
			stops = append(stops, llm.Block{})
			fr.Starts = append(fr.Starts, ev.Block)
		case llm.EventBlockDelta:
			if ev.Index < 0 || ev.Index >= len(open) || !open[ev.Index] {
				return nil, fmt.Errorf("%s: delta for block %d, which is not open", at, ev.Index)
			}
			if ev.Delta == "" {
				return nil, fmt.Errorf("%s: empty delta", at)
			}
			if ev.Block.Type != fr.Starts[ev.Index].Type {
				return nil, fmt.Errorf("%s: delta type %q for a %q block", at, ev.Block.Type, fr.Starts[ev.Index].Type)
			}
			fr.Deltas[ev.Index] += ev.Delta
		case llm.EventBlockStop:
			if ev.Index < 0 || ev.Index >= len(open) || !open[ev.Index] {
				return nil, fmt.Errorf("%s: stop for block %d, which is not open", at, ev.Index)
			}
			open[ev.Index] = false
			b := ev.Block
			if b.Type != fr.Starts[ev.Index].Type {
				return nil, fmt.Errorf("%s: stopped block type %q, started %q", at, b.Type, fr.Starts[ev.Index].Type)
			}
			d := fr.Deltas[ev.Index]
			content := b.Text
			if b.Type == llm.BlockToolUse {
				content = string(b.Input)
				if content == "" {
					return nil, fmt.Errorf("%s: tool_use block with no input", at)
				}
			}
			// A block may start with content of its own, so the deltas are
			// its suffix rather than all of it.
			if !strings.HasSuffix(content, d) {
				return nil, fmt.Errorf("%s: block content %q does not end with its deltas %q", at, content, d)
			}
			stops[ev.Index] = b
		case llm.EventMessageDone:
			if done {
				return nil, fmt.Errorf("%s: second message_done", at)
			}
			done = true
			for i, o := range open {
				if o {
					return nil, fmt.Errorf("%s: block %d still open", at, i)
				}
			}
			if ev.Message == nil {
				return nil, fmt.Errorf("%s: no message", at)
			}
			if ev.Message.Role != llm.RoleAssistant {
				return nil, fmt.Errorf("%s: role %q", at, ev.Message.Role)
			}
			if len(ev.Message.Content) != len(stops) {
				return nil, fmt.Errorf("%s: %d blocks in the message, %d framed", at, len(ev.Message.Content), len(stops))
			}
			for i, b := range ev.Message.Content {
				s := stops[i]
				if b.Type != s.Type || b.Text != s.Text || string(b.Input) != string(s.Input) || b.ToolUseID != s.ToolUseID || b.ToolName != s.ToolName {
					return nil, fmt.Errorf("%s: block %d is %+v in the message but %+v at its stop", at, i, b, s)
				}
			}
			fr.Message = *ev.Message
			fr.Result.Message = *ev.Message
		case llm.EventUsage:
			if !done || usage {
				return nil, fmt.Errorf("%s: usage out of place", at)
			}
			usage = true
			fr.Result.Usage = ev.Usage
		case llm.EventOutcome:
			if !usage {
				return nil, fmt.Errorf("%s: outcome before usage", at)
			}
			outcome = true
			o := ev.Outcome
			fr.Result.Outcome = o
			switch o.Status {
			case llm.StatusCompleted:
				if o.Err != nil {
					return nil, fmt.Errorf("%s: completed with an error: %v", at, o.Err)
				}
			case llm.StatusTimeout, llm.StatusMalformed, llm.StatusAborted, llm.StatusFailed, llm.StatusAuth:
				var e *llm.Error
				if !errors.As(o.Err, &e) {
					return nil, fmt.Errorf("%s: %s outcome without an *llm.Error: %v", at, o.Status, o.Err)
				}
				if o.Message == "" {
					return nil, fmt.Errorf("%s: %s outcome without a message", at, o.Status)
				}
				if e.Status() != o.Status {
					return nil, fmt.Errorf("%s: status %s but the error says %s", at, o.Status, e.Status())
				}
				fr.Err = e
			default:
				return nil, fmt.Errorf("%s: unknown status %q", at, o.Status)
			}
		default:
			return nil, fmt.Errorf("%s: unknown kind", at)
		}
	}
	if !outcome {
		return nil, errors.New("stream ended without an outcome")
	}
	return fr, nil
}
