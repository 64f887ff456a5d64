package gemini_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/weft-run/weft/llm"
)

// drain collects every event of one call.
func drain(ctx context.Context, p llm.Provider, req *llm.Request) []llm.Event {
	var evs []llm.Event
	for ev := range p.Stream(ctx, req) {
		evs = append(evs, ev)
	}
	return evs
}

// result rebuilds what llm.Collect would return from events.
func result(evs []llm.Event) llm.Result {
	var r llm.Result
	for _, ev := range evs {
		switch ev.Kind {
		case llm.EventMessageDone:
			r.Message = *ev.Message
		case llm.EventUsage:
			r.Usage = ev.Usage
		case llm.EventOutcome:
			r.Outcome = ev.Outcome
		}
	}
	return r
}

// framingError checks the strict grammar of llm.Provider:
//
//	(BlockStart BlockDelta* BlockStop)* MessageDone Usage Outcome
//
// with sequential block indexes, deltas and stops only for open blocks,
// every stopped block equal to what its deltas built, the message equal to
// the stopped blocks, and a typed *llm.Error behind every failed outcome.
// It returns nil when the stream is well framed.
func framingError(evs []llm.Event) error {
	if len(evs) < 3 {
		return fmt.Errorf("stream has %d events, want at least message, usage, outcome", len(evs))
	}
	type state struct {
		typ   llm.BlockType
		open  bool
		buf   strings.Builder
		final *llm.Block
	}
	var blocks []*state
	tail := evs[len(evs)-3:]
	if tail[0].Kind != llm.EventMessageDone || tail[1].Kind != llm.EventUsage || tail[2].Kind != llm.EventOutcome {
		return fmt.Errorf("stream ends %v %v %v, want message_done usage outcome", tail[0].Kind, tail[1].Kind, tail[2].Kind)
	}
	for n, ev := range evs[:len(evs)-3] {
		switch ev.Kind {
		case llm.EventBlockStart:
			if ev.Index != len(blocks) {
				return fmt.Errorf("event %d: start of block %d, want %d", n, ev.Index, len(blocks))
			}
			if ev.Block.Type == "" {
				return fmt.Errorf("event %d: start without a block type", n)
			}
			blocks = append(blocks, &state{typ: ev.Block.Type, open: true})
		case llm.EventBlockDelta, llm.EventBlockStop:
			if ev.Index < 0 || ev.Index >= len(blocks) || !blocks[ev.Index].open {
				return fmt.Errorf("event %d: %v for block %d, which is not open", n, ev.Kind, ev.Index)
			}
			b := blocks[ev.Index]
			if ev.Block.Type != b.typ {
				return fmt.Errorf("event %d: %v of type %q for a %q block", n, ev.Kind, ev.Block.Type, b.typ)
			}
			if ev.Kind == llm.EventBlockDelta {
				if ev.Delta == "" {
					return fmt.Errorf("event %d: empty delta", n)
				}
				b.buf.WriteString(ev.Delta)
				continue
			}
			b.open = false
			final := ev.Block
			b.final = &final
			got, want := final.Text, b.buf.String()
			if b.typ == llm.BlockToolUse {
				got = string(final.Input)
				if want == "" {
					want = "{}"
				}
			}
			if got != want {
				return fmt.Errorf("event %d: block %d stops with %q, its deltas made %q", n, ev.Index, got, want)
			}
		default:
			return fmt.Errorf("event %d: %v before the end of the stream", n, ev.Kind)
		}
	}
	for i, b := range blocks {
		if b.open {
			return fmt.Errorf("block %d never stopped", i)
		}
	}
	msg := tail[0].Message
	if msg == nil {
		return errors.New("message_done without a message")
	}
	if msg.Role != llm.RoleAssistant {
		return fmt.Errorf("message role %q", msg.Role)
	}
	if len(msg.Content) != len(blocks) {
		return fmt.Errorf("message has %d blocks, the stream stopped %d", len(msg.Content), len(blocks))
	}
	for i, b := range blocks {
		if !reflect.DeepEqual(msg.Content[i], *b.final) {
			return fmt.Errorf("message block %d = %+v, stopped as %+v", i, msg.Content[i], *b.final)
		}
	}
	o := tail[2].Outcome
	switch o.Status {
	case llm.StatusCompleted:
		if o.Err != nil {
			return fmt.Errorf("completed outcome with error %v", o.Err)
		}
	case llm.StatusTimeout, llm.StatusMalformed, llm.StatusAborted, llm.StatusFailed, llm.StatusAuth:
		var e *llm.Error
		if !errors.As(o.Err, &e) {
			return fmt.Errorf("%s outcome with untyped error %v", o.Status, o.Err)
		}
		if e.Status() != o.Status {
			return fmt.Errorf("%s outcome whose error says %s", o.Status, e.Status())
		}
		if o.Message == "" {
			return fmt.Errorf("%s outcome without a message", o.Status)
		}
	default:
		return fmt.Errorf("outcome status %q", o.Status)
	}
	return nil
}
