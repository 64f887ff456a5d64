package session

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/tool"
)

// drain runs the session's queued messages one turn at a time.
func (rt *Service) drain(l *live) {
	defer rt.turns.Done()
	for {
		l.mu.Lock()
		if len(l.queue) == 0 || rt.shutdown.Err() != nil || l.gone.Load() || l.fenced.Load() {
			dropped := l.queue
			if rt.cl != nil && !l.gone.Load() {
				// Stored and accepted: the node that takes the session
				// over runs them.
				dropped = nil
			}
			l.running = false
			l.queue = nil
			close(l.idle)
			l.mu.Unlock()
			rt.dropped(l, dropped, "shutting down")
			rt.mu.Lock()
			l.lastUsed = rt.now()
			rt.mu.Unlock()
			return
		}
		q := l.queue[0]
		l.queue = l.queue[1:]
		ctx, cancel := context.WithCancel(rt.shutdown)
		l.cancel = cancel
		l.turnDone = false
		l.mu.Unlock()

		rt.turn(ctx, l, q)

		l.mu.Lock()
		l.cancel = nil
		l.mu.Unlock()
		cancel()
	}
}

// turn runs one message to its done event, appending every event and
// saving the conversation at the end, whatever happened. A turn that did
// not finish (it failed or was cancelled) leaves its message in the
// conversation as a message of its own, followed by an "[interrupted]"
// answer (closeInterrupted), so that the next message is not merged into
// it and the history stays valid for every provider.
func (rt *Service) turn(ctx context.Context, l *live, q queued) {
	ctx = withLive(ctx, l) // its tool calls' requests find the session (elicit.go)
	// Persisting must outlive a cancelled turn.
	bg := context.WithoutCancel(ctx)
	loadErr := rt.loadHistory(bg, l)
	consumed := MessageData{MessageSeq: q.seq}
	if loadErr == nil {
		n := len(l.history)
		consumed.MessagesBefore = &n
	}
	if _, err := rt.appendTo(bg, l, event.MessageConsumed, consumed); err != nil {
		// A turn nobody could see, whose start is not recorded, must not
		// run (its tools would act unseen). The message stays accepted and
		// unanswered in the store: the next start reports it dropped.
		rt.log.Error("the turn cannot start: recording its start failed", "session", l.id, "message_seq", q.seq, "error", err)
		return
	}
	fail := func(err error) {
		rt.log.Error("turn failed to start", "session", l.id, "error", err)
		if loadErr == nil {
			h := append(l.history[:len(l.history):len(l.history)], llm.UserText(q.text))
			if err := rt.saveHistory(bg, l, closeInterrupted(h)); err != nil {
				rt.log.Error("keeping the message of a failed turn failed", "session", l.id, "error", err)
			}
		}
		_, _ = rt.appendTo(bg, l, string(agent.EventError), agent.ErrorData{Error: err.Error()})
		l.mu.Lock()
		l.turnDone = true
		l.mu.Unlock()
		_, _ = rt.appendTo(bg, l, string(agent.EventDone), agent.DoneData{StopReason: agent.StopError})
	}
	if loadErr != nil {
		fail(fmt.Errorf("loading the conversation: %w", loadErr))
		return
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
	var state *tool.Session
	if l.tools != nil {
		state = l.tools.ToolState()
	}
	s := a.ResumeSessionWith(l.history, state)
	rt.restoreTotals(ctx, s, l.id)
	l.tools = s
	stop := ""
	// Deferred before the writer's close, so it runs after it: the
	// pipeline's events follow the turn's.
	defer func() { rt.turnEnded(l, a, s, stop) }()
	w := rt.newWriter(l)
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
	save := func(finished bool) {
		saved = true
		h := s.Messages()
		if !finished {
			h = closeInterrupted(h)
		}
		if err := rt.saveHistory(bg, l, h); err != nil && !errors.Is(err, errFenced) {
			rt.log.Error("saving the conversation failed", "session", l.id, "error", err)
		}
	}
	for ev := range s.Run(ctx, q.text) {
		if ev.Type == agent.EventDone {
			// Saved before done is visible: a client that reads done and
			// asks for the session must see the turn, and a crash after
			// done must not lose it.
			d, _ := ev.Data.(agent.DoneData)
			stop = d.StopReason
			save(d.StopReason != agent.StopCancelled && d.StopReason != agent.StopError)
			l.mu.Lock()
			l.turnDone = true
			l.mu.Unlock()
		}
		if ev.Type == agent.EventBudgetRequest {
			// Open before visible: see budgetask.go.
			rt.openBudget(l, ev.Data)
		}
		w.push(string(ev.Type), ev.Data)
	}
	rt.dropBudgetAsks(l)
	if !saved {
		save(false)
		// Every turn ends with done, whatever the engine did: a client
		// following the stream must learn that this one is over.
		reason := agent.StopError
		if ctx.Err() != nil {
			reason = agent.StopCancelled
		}
		rt.log.Warn("the turn ended without a done event; adding one", "session", l.id, "stop_reason", reason)
		w.push(string(agent.EventDone), agent.DoneData{StopReason: reason})
	}
}

// loadHistory reads the session's conversation once per in-memory state.
func (rt *Service) loadHistory(ctx context.Context, l *live) error {
	if l.loaded {
		return nil
	}
	h, err := rt.cfg.Store.LoadMessages(ctx, l.id)
	if err != nil {
		return err
	}
	l.history, l.loaded, l.stored = h, true, true
	return nil
}

func (rt *Service) agentFor(l *live, opt TurnOptions) (*agent.Agent, error) {
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
	cfg := agent.Config{
		Provider: p, Model: info.ID, ModelInfo: &info, System: system, Prompt: rt.cfg.Prompt, Bundle: opt.Bundle,
		Vision: rt.cfg.Vision, Tools: rt.cfg.Tools,
		MaxTurns: maxTurns, StopSequences: opt.StopSequences, Thinking: level, Retry: rt.cfg.Retry,
		Logger: rt.log, Policy: rt.policyFor(l), Approve: rt.approver(l), Checkpoint: rt.checkpointer(l),
		Observer: rt.cfg.Observer, Budget: rt.budget(opt), ApproveBudget: rt.budgetApprover(l),
	}
	if cfg.Tools, err = rt.toolsFor(l); err != nil {
		return nil, err
	}
	if rt.cfg.Usage != nil {
		cfg.OnUsage = usageRecorder(rt.cfg.Usage, l.id, "", rt.log)
	}
	if err := rt.contextConfig(&cfg); err != nil {
		return nil, err
	}
	return agent.New(cfg)
}

// InterruptedText is the text of the answer closeInterrupted gives a turn
// that did not finish.
const InterruptedText = "[interrupted]"

// closeInterrupted ends the history of a turn that did not finish (it
// failed before or while the model answered, was cancelled, or was cut off
// by a crash) with an assistant message of its own, "[interrupted]", when
// it ends with a user message: the prompt, or the results of the tools the
// turn ran. Without it the next prompt would be merged into that user
// message (consecutive same-role messages must be merged for Anthropic and
// Gemini), so a prompt the provider rejected would go with every later one
// and fail them all, and a cancelled request would be answered together
// with the next. A last assistant message with tool calls gets error
// results first, as the agent would give them. The prompt itself is kept:
// every accepted message stays in the conversation (rewind removes it).
func closeInterrupted(h []llm.Message) []llm.Message {
	n := len(h)
	if n == 0 {
		return h
	}
	h = h[:n:n] // never write into the caller's array
	if last := h[n-1]; last.Role == llm.RoleAssistant {
		uses := last.ToolUses()
		if len(uses) == 0 {
			return h
		}
		results := make([]llm.Block, len(uses))
		for i, u := range uses {
			results[i] = llm.ToolResult(u.ToolUseID, true, llm.Text("Tool call interrupted: no result was recorded."))
		}
		h = append(h, llm.Message{Role: llm.RoleUser, Content: results})
	}
	return append(h, llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text(InterruptedText)}})
}

// CloseInterrupted is closeInterrupted for front doors that hold an
// agent.Session themselves (weft chat): the history of a run that did not
// finish, closed so that the next prompt stands on its own.
func CloseInterrupted(h []llm.Message) []llm.Message { return closeInterrupted(h) }

// saveHistory makes h the session's conversation, in memory and in the
// store. A turn only adds messages, so when the stored conversation is a
// prefix of h only the new messages are written: rewriting all of it at
// every turn made each turn of a long session dearer than the last. A
// changed prefix (a merged user message), or a store that may disagree
// after a failed save, gets the whole conversation rewritten.
//
// Nothing is written once the session was deleted (l.gone): a turn still
// winding down must not write into a session created with the same id.
func (rt *Service) saveHistory(ctx context.Context, l *live, h []llm.Message) error {
	l.storeMu.Lock()
	defer l.storeMu.Unlock()
	if l.fenced.Load() {
		return errFenced
	}
	if l.gone.Load() {
		return fmt.Errorf("session %s: %w (deleted)", l.id, ErrNotFound)
	}
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
