package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/record"
)

// StopInterrupted is the stop_reason of a turn a crash (or kill) cut off,
// ended when the runtime starts again.
const StopInterrupted = event.StopInterrupted

// recoverTurns ends the work a crash cut off, before anything else runs:
// every session the store lists with a turn started and not done gets its
// message into the conversation (unless the turn had saved it), closed
// with an "[interrupted]" answer, and the events error (stop_reason
// "interrupted") and done; every message accepted and never started gets
// message_dropped (reason "interrupted"). Streams following those turns
// then end, and the messages are all accounted for. A graceful shutdown
// leaves nothing to do here: it ends turns and drops queued messages
// itself. On several nodes this is not run: the takeover sweep does the
// same under each session's lease, so that no node ends a turn another
// live node is running, and runs the queued messages (cluster.go).
func (rt *Service) recoverTurns(ctx context.Context) error {
	open, err := rt.cfg.Store.ListOpenTurns(ctx)
	if err != nil {
		return fmt.Errorf("session: finding turns a crash cut off: %w", err)
	}
	for _, ot := range open {
		if err := rt.recoverSession(ctx, ot); err != nil {
			// One session's failure must not keep the server from starting;
			// the next start tries again.
			rt.log.Error("ending a turn a crash cut off failed", "session", ot.SessionID, "error", err)
		}
	}
	if len(open) > 0 {
		rt.log.Info("sessions with turns cut off by a crash were ended as interrupted", "sessions", len(open))
	}
	return nil
}

func (rt *Service) recoverSession(ctx context.Context, ot record.OpenTurns) error {
	l, err := rt.session(ot.SessionID)
	if err != nil {
		return err
	}
	defer rt.release(l)
	_, _, err = rt.endInterrupted(ctx, l, ot, true)
	return err
}

// endInterrupted ends ot's turn as interrupted (see recoverTurns) and,
// with drop, records its queued messages as dropped. Without drop (a node
// taking the session over from a dead one) it returns them, to be run,
// with the commands (cluster.go) whose user_message it found.
func (rt *Service) endInterrupted(ctx context.Context, l *live, ot record.OpenTurns, drop bool) ([]queued, map[int64]int64, error) {
	from := ot.Answered
	if ot.Running > 0 {
		from = min(from, ot.Running-1)
	}
	var (
		texts   = map[int64]string{}
		opts    = map[int64]TurnOptions{}
		cmds    = map[int64]int64{}
		waiting []int64
		before  *int
		readErr error
	)
	for after := from; ; {
		evs, err := rt.cfg.Store.ReadEvents(ctx, ot.SessionID, after, 512)
		if err != nil {
			readErr = err
			break
		}
		for _, e := range evs {
			switch e.Type {
			case event.UserMessage:
				var d messageData
				_ = json.Unmarshal(e.Data, &d)
				texts[e.Seq] = d.Text
				if d.Options != nil {
					opts[e.Seq] = *d.Options
				}
				if d.Command != 0 {
					cmds[d.Command] = e.Seq
				}
				if e.Seq > ot.Answered && e.Seq <= ot.Accepted {
					waiting = append(waiting, e.Seq)
				}
			case event.MessageConsumed:
				var d MessageData
				if json.Unmarshal(e.Data, &d) == nil && d.MessageSeq == ot.Running {
					before = d.MessagesBefore
				}
			}
		}
		if len(evs) < 512 {
			break
		}
		after = evs[len(evs)-1].Seq
	}
	if readErr != nil {
		return nil, nil, readErr
	}
	if ot.Running > 0 {
		if err := rt.loadHistory(ctx, l); err != nil {
			return nil, nil, err
		}
		h := l.history
		// The turn saved its conversation before its done, which the
		// crash may have taken: then its message is there already.
		if before == nil || len(h) <= *before {
			h = append(h[:len(h):len(h)], llm.UserText(texts[ot.Running]))
		}
		if err := rt.saveHistory(ctx, l, closeInterrupted(h)); err != nil {
			return nil, nil, err
		}
		msg := "interrupted: the server stopped while this turn was running; send the message again to retry"
		if _, err := rt.appendTo(ctx, l, string(agent.EventError), map[string]string{"error": msg, "stop_reason": StopInterrupted}); err != nil {
			return nil, nil, err
		}
		if _, err := rt.appendTo(ctx, l, string(agent.EventDone), agent.DoneData{StopReason: StopInterrupted}); err != nil {
			return nil, nil, err
		}
	}
	if !drop {
		out := make([]queued, len(waiting))
		for i, seq := range waiting {
			out[i] = queued{seq: seq, text: texts[seq], opt: opts[seq]}
		}
		return out, cmds, nil
	}
	for _, seq := range waiting {
		if _, err := rt.appendTo(ctx, l, event.MessageDropped, MessageData{MessageSeq: seq, Reason: StopInterrupted}); err != nil {
			return nil, nil, err
		}
	}
	return nil, cmds, nil
}
