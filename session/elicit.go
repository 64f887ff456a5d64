package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/internal/approval"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/tool/mcp"
)

// liveKey marks a turn's context with the live state of its session, so
// that a request made from within one of its tool calls (an MCP server's
// elicitation) finds the session and its incarnation without trusting an
// id: a run's policy carries its run id where a session's carries the
// session id, and a client may name a session anything.
type liveKey struct{}

func withLive(ctx context.Context, l *live) context.Context {
	return context.WithValue(ctx, liveKey{}, l)
}

func liveFrom(ctx context.Context) *live {
	l, _ := ctx.Value(liveKey{}).(*live)
	return l
}

// Elicit is the session service's mcp.ElicitFunc (weft serve passes it as
// mcp.Options.Elicit): an MCP server's request for input, made during a
// session's tool call, is asked of the session's client as an
// elicitation_request event and answered with AnswerElicitation, under
// the same broker, timeout and answered-once rules as a permission
// request. A request that cannot be tied to a session's turn (a workflow
// run's call, a request no call in flight explains) is declined. No
// answer within the permission timeout, or the turn's end, answers
// cancel: the person made no choice.
func (rt *Service) Elicit(ctx context.Context, req mcp.ElicitRequest) (mcp.ElicitResponse, error) {
	declined := mcp.ElicitResponse{Action: mcp.ActionDecline}
	l := liveFrom(ctx)
	if l == nil || l.gone.Load() {
		rt.log.Info("mcp elicitation declined: it was not made within a session's tool call",
			"server", req.Server, "tool_call_id", req.ToolCallID)
		return declined, nil
	}
	q, err := rt.approvals.Open(l.scope, approval.Elicitation, "")
	if err != nil {
		return declined, nil
	}
	key := l.scope + "\x00" + q.ID
	rt.elicits.Store(key, req.Schema)
	defer rt.elicits.Delete(key)
	data := event.ElicitationRequestData{ID: q.ID, Server: req.Server, Message: req.Message, Mode: req.Mode,
		RequestedSchema: req.Schema, URL: req.URL, ToolCallID: req.ToolCallID, ToolName: req.ToolName}
	l.mu.Lock()
	w := l.writer
	l.mu.Unlock()
	if w != nil {
		// Through the turn's writer: after the tool call's events, and
		// visible before anyone is asked to answer.
		w.sync(event.ElicitationRequest, data)
	} else if _, err := rt.appendTo(context.WithoutCancel(ctx), l, event.ElicitationRequest, data); err != nil {
		q.Close()
		rt.log.Warn("mcp elicitation declined: the request could not be recorded", "session", l.id, "error", err)
		return declined, nil
	}
	a, err := q.Wait(ctx, rt.cfg.PermissionTimeout)
	switch {
	case err == nil:
		if resp, ok := a.Payload.(mcp.ElicitResponse); ok {
			return resp, nil
		}
		return mcp.ElicitResponse{Action: mcp.ActionCancel}, nil
	case errors.Is(err, approval.ErrTimeout):
		rt.log.Info("mcp elicitation unanswered: cancelled", "session", l.id, "id", q.ID, "timeout", rt.cfg.PermissionTimeout)
	}
	return mcp.ElicitResponse{Action: mcp.ActionCancel}, nil
}

// AnswerElicitation answers a pending elicitation of the session, once:
// ErrAnswered for a second answer, ErrNotFound for an unknown (or
// expired) one, a record.InvalidError for an action other than accept,
// decline and cancel, content with another action, or content that does
// not fit the requested schema.
func (rt *Service) AnswerElicitation(sessionID, id string, resp mcp.ElicitResponse) error {
	switch resp.Action {
	case mcp.ActionAccept:
	case mcp.ActionDecline, mcp.ActionCancel:
		if resp.Content != nil {
			return &record.InvalidError{Err: fmt.Errorf("content is only sent with action %q", mcp.ActionAccept)}
		}
	default:
		return &record.InvalidError{Err: fmt.Errorf("action must be %q, %q or %q", mcp.ActionAccept, mcp.ActionDecline, mcp.ActionCancel)}
	}
	return rt.answerAt(sessionID, cmdElicitation, answerCmd{RequestID: id, Elicit: &resp},
		func(l *live) error { return rt.answerElicitationLive(l, id, resp) })
}

func (rt *Service) answerElicitationLive(l *live, id string, resp mcp.ElicitResponse) error {
	return rt.approvals.AnswerIf(l.scope, id, approval.Answer{Allow: resp.Action == mcp.ActionAccept, Payload: resp},
		func(p approval.Pending) error {
			if p.Kind != approval.Elicitation {
				return ErrNotFound
			}
			if resp.Action != mcp.ActionAccept {
				return nil
			}
			schema, _ := rt.elicits.Load(l.scope + "\x00" + id)
			raw, _ := schema.(json.RawMessage)
			if err := checkContent(raw, resp.Content); err != nil {
				return &record.InvalidError{Err: err}
			}
			return nil
		})
}

// checkContent checks accepted content against the requested schema
// before the server sees it, so that the person's client hears what is
// wrong (400) rather than the tool failing: every required field given,
// no field the schema lacks, each value of its field's type, enum and
// bounds.
func checkContent(schema []byte, content map[string]any) error {
	fields, err := mcp.Fields(schema)
	if err != nil {
		return err
	}
	if len(schema) == 0 {
		// Nothing was asked for (a url-mode request): nothing to send.
		if len(content) > 0 {
			return errors.New("content: the request asks for no fields")
		}
		return nil
	}
	byName := map[string]mcp.Field{}
	for _, f := range fields {
		byName[f.Name] = f
		if _, ok := content[f.Name]; f.Required && !ok {
			return fmt.Errorf("content: %q is required", f.Name)
		}
	}
	for name, v := range content {
		f, ok := byName[name]
		if !ok {
			return fmt.Errorf("content: %q is not a field of the request", name)
		}
		if err := checkValue(f, v); err != nil {
			return fmt.Errorf("content: %q: %w", name, err)
		}
	}
	return nil
}

func checkValue(f mcp.Field, v any) error {
	if len(f.Enum) > 0 {
		if !slices.Contains(f.Enum, fmt.Sprint(v)) {
			return fmt.Errorf("want one of %v", f.Enum)
		}
		return nil
	}
	switch f.Type {
	case "boolean":
		if _, ok := v.(bool); !ok {
			return errors.New("want true or false")
		}
	case "number", "integer":
		n, ok := v.(float64)
		if !ok {
			return errors.New("want a number")
		}
		if f.Type == "integer" && n != math.Trunc(n) {
			return errors.New("want a whole number")
		}
		if (f.Min != nil && n < *f.Min) || (f.Max != nil && n > *f.Max) {
			return errors.New("out of range")
		}
	default:
		s, ok := v.(string)
		if !ok {
			return errors.New("want a string")
		}
		n := float64(len([]rune(s)))
		if (f.Min != nil && n < *f.Min) || (f.Max != nil && n > *f.Max) {
			return errors.New("length out of range")
		}
	}
	return nil
}
