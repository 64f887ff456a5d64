package runtime

import (
	"context"
	"fmt"
	"reflect"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/tool"
)

// drain runs the session's queued messages one turn at a time.
func (rt *Runtime) drain(l *live) {
	defer rt.turns.Done()
	for {
		l.mu.Lock()
		if len(l.queue) == 0 || rt.shutdown.Err() != nil {
			dropped := l.queue
			l.running = false
			l.queue = nil
			l.mu.Unlock()
			rt.dropped(l.id, dropped, "shutting down")
			return
		}
		q := l.queue[0]
		l.queue = l.queue[1:]
		ctx, cancel := context.WithCancel(rt.shutdown)
		l.cancel = cancel
		l.mu.Unlock()

		rt.turn(ctx, l, q)

		l.mu.Lock()
		l.cancel = nil
		l.mu.Unlock()
		cancel()
	}
}

// turn runs one message to its done event, appending every event and
// saving the conversation at the end, whatever happened.
func (rt *Runtime) turn(ctx context.Context, l *live, q queued) {
	// Persisting must outlive a cancelled turn.
	bg := context.WithoutCancel(ctx)
	if _, err := rt.append(bg, l.id, "message_consumed", MessageData{MessageSeq: q.seq}); err != nil {
		rt.log.Error("appending an event failed", "session", l.id, "type", "message_consumed", "error", err)
	}
	fail := func(err error) {
		rt.log.Error("turn failed to start", "session", l.id, "error", err)
		rt.keepMessage(bg, l, q.text)
		_, _ = rt.append(bg, l.id, string(agent.EventError), agent.ErrorData{Error: err.Error()})
		_, _ = rt.append(bg, l.id, string(agent.EventDone), agent.DoneData{StopReason: agent.StopError})
	}
	if err := rt.loadOverride(bg, l); err != nil {
		fail(err)
		return
	}
	a, err := rt.agentFor(l, q.opt)
	if err != nil {
		fail(err)
		return
	}
	if !l.loaded {
		h, err := rt.cfg.Store.LoadMessages(bg, l.id)
		if err != nil {
			fail(fmt.Errorf("loading the conversation: %w", err))
			return
		}
		l.history, l.loaded, l.stored = h, true, true
	}
	var state *tool.Session
	if l.tools != nil {
		state = l.tools.ToolState()
	}
	s := a.ResumeSessionWith(l.history, state)
	l.tools = s
	w := rt.newWriter(l.id)
	l.mu.Lock()
	l.writer = w
	l.mu.Unlock()
	defer func() {
		w.close()
		l.mu.Lock()
		l.writer = nil
		l.mu.Unlock()
	}()
	saved := false
	save := func() {
		saved = true
		if err := rt.saveHistory(bg, l, s.Messages()); err != nil {
			rt.log.Error("saving the conversation failed", "session", l.id, "error", err)
		}
	}
	for ev := range s.Run(ctx, q.text) {
		if ev.Type == agent.EventDone {
			// Saved before done is visible: a client that reads done and
			// asks for the session must see the turn, and a crash after
			// done must not lose it.
			save()
		}
		w.push(string(ev.Type), ev.Data)
	}
	if !saved {
		save()
	}
}

func (rt *Runtime) agentFor(l *live, opt TurnOptions) (*agent.Agent, error) {
	spec := opt.Model
	if spec == "" {
		spec = rt.cfg.DefaultModel
	}
	if spec == "" {
		return nil, fmt.Errorf("no model: configure a default model (--model) or pass \"model\" in the request")
	}
	p, info, err := rt.cfg.Models.Resolve(spec)
	if err != nil {
		return nil, err
	}
	level, ok := llm.ParseThinkingLevel(opt.Thinking)
	if !ok {
		return nil, fmt.Errorf("thinking %q: want none, low, medium, high or xhigh", opt.Thinking)
	}
	system := opt.SystemPrompt
	if system == "" {
		system = rt.cfg.System
	}
	maxTurns := opt.MaxTurns
	if maxTurns == 0 {
		maxTurns = rt.cfg.MaxTurns
	}
	return agent.New(agent.Config{
		Provider: p, Model: info.ID, ModelInfo: &info, System: system, Tools: rt.cfg.Tools,
		MaxTurns: maxTurns, StopSequences: opt.StopSequences, Thinking: level, Retry: rt.cfg.Retry,
		Logger: rt.log, Policy: rt.policyFor(l), Approve: rt.approver(l), Checkpoint: rt.checkpointer(l),
	})
}

// keepMessage adds the text of a turn that could not start to the
// conversation, so that nothing the user sent is lost: the next turn sees
// it (merged with the next message, as consecutive user messages must be).
func (rt *Runtime) keepMessage(ctx context.Context, l *live, text string) {
	h := l.history
	if !l.loaded {
		var err error
		if h, err = rt.cfg.Store.LoadMessages(ctx, l.id); err != nil {
			rt.log.Error("keeping the message of a failed turn failed", "session", l.id, "error", err)
			return
		}
		l.loaded, l.stored = true, true
	}
	msg := llm.UserText(text)
	if n := len(h); n > 0 && h[n-1].Role == llm.RoleUser {
		last := h[n-1]
		last.Content = append(append([]llm.Block(nil), last.Content...), msg.Content...)
		h = append(h[:n-1:n-1], last)
	} else {
		h = append(h[:len(h):len(h)], msg)
	}
	if err := rt.saveHistory(ctx, l, h); err != nil {
		rt.log.Error("keeping the message of a failed turn failed", "session", l.id, "error", err)
	}
}

// saveHistory makes h the session's conversation, in memory and in the
// store. A turn only adds messages, so when the stored conversation is a
// prefix of h only the new messages are written: rewriting all of it at
// every turn made each turn of a long session dearer than the last. A
// changed prefix (a merged user message), or a store that may disagree
// after a failed save, gets the whole conversation rewritten.
func (rt *Runtime) saveHistory(ctx context.Context, l *live, h []llm.Message) error {
	old, stored := l.history, l.stored
	l.history, l.stored = h, false
	var err error
	switch {
	case stored && len(h) >= len(old) && samePrefix(old, h):
		if len(h) > len(old) {
			err = rt.cfg.Store.AppendMessages(ctx, l.id, rt.redactMessages(h[len(old):])...)
		}
	default:
		err = rt.cfg.Store.ReplaceMessages(ctx, l.id, rt.redactMessages(h))
	}
	l.stored = err == nil
	return err
}

// samePrefix says whether h begins with old. The agent copies the messages
// it keeps, not their content, so unchanged messages compare by pointer.
func samePrefix(old, h []llm.Message) bool {
	for i := range old {
		if !reflect.DeepEqual(old[i], h[i]) {
			return false
		}
	}
	return true
}
