package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/tool"
)

// PermissionRequestData is the payload of a permission_request event
// (seed 000): answer it with Runtime.Answer(session, ID, ...).
type PermissionRequestData struct {
	ID       string          `json:"id"`
	ToolName string          `json:"tool_name"`
	Input    json.RawMessage `json:"input"`
	Message  string          `json:"message"`
	ToolUse  string          `json:"tool_use_id"`
}

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
		_, _ = rt.append(bg, l.id, string(agent.EventError), agent.ErrorData{Error: err.Error()})
		_, _ = rt.append(bg, l.id, string(agent.EventDone), agent.DoneData{StopReason: agent.StopError})
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
		l.history, l.loaded = h, true
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
		l.history = s.Messages()
		if err := rt.cfg.Store.ReplaceMessages(bg, l.id, l.history); err != nil {
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
		Logger: rt.log, Approve: rt.approver(l),
	})
}

// approver applies the permission mode, and asks through a
// permission_request event for what the mode leaves to a person.
func (rt *Runtime) approver(l *live) agent.ApproveFunc {
	return func(ctx context.Context, req agent.ApprovalRequest) agent.Decision {
		switch mode := rt.cfg.PermissionMode; {
		case mode == ModeBypass, req.Spec.ReadOnly:
			return agent.Allow()
		case mode == ModePlan:
			return agent.Deny("plan mode allows read-only tools only; describe the change instead of making it")
		case mode == ModeAuto && req.Spec.Permission == tool.ClassFile:
			return agent.Allow()
		}
		var b [6]byte
		_, _ = rand.Read(b[:])
		p := &permRequest{id: "perm_" + hex.EncodeToString(b[:]), answer: make(chan agent.Decision, 1)}
		l.mu.Lock()
		l.perms[p.id] = p
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			// An expired request is gone (404); an answered one is
			// remembered in answeredIDs (409 on a second answer).
			p.answered = true
			delete(l.perms, p.id)
			l.mu.Unlock()
		}()
		input := json.RawMessage(req.Input)
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		data := PermissionRequestData{ID: p.id, ToolName: req.ToolName, Input: input, ToolUse: req.ID,
			Message: fmt.Sprintf("%s requests permission to run", req.ToolName)}
		l.mu.Lock()
		w := l.writer
		l.mu.Unlock()
		if w != nil {
			// Through the turn's writer, after the events before it, and
			// visible before anyone is asked to answer.
			w.sync("permission_request", data)
		} else if _, err := rt.append(context.WithoutCancel(ctx), l.id, "permission_request", data); err != nil {
			return agent.Deny("the permission request could not be recorded")
		}
		t := time.NewTimer(rt.cfg.PermissionTimeout)
		defer t.Stop()
		select {
		case d := <-p.answer:
			return d
		case <-t.C:
			return agent.Deny(fmt.Sprintf("no answer to the permission request within %s", rt.cfg.PermissionTimeout))
		case <-ctx.Done():
			return agent.Deny("the turn was cancelled")
		}
	}
}
