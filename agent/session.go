package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-run/weft/compact"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/tool"
)

// continuationPrompt is sent after a reply cut off by max_tokens with no
// tool call (seed 004 §1b).
const continuationPrompt = "[system: your previous response was truncated because it reached the output token limit. Continue exactly where you left off; if you were writing files, write one file at a time.]"

// Session is one conversation. Runs on a session are serialised: a second
// Run waits for the first to finish.
type Session struct {
	agent *Agent
	tools *tool.Session

	runMu sync.Mutex // held for the whole of a run

	mu       sync.Mutex // guards what follows
	messages []llm.Message
	totals   Totals
	// cacheKey is the conversation's llm.Request.CacheKey, derived from
	// its start (see conversationKey) the first time it is needed.
	cacheKey string
	// cw is the context window's management (context.go): messages is
	// its view, what the model is sent.
	cw     contextState
	budget budgetState // budget.go
}

// Totals are a session's cumulative usage and cost.
type Totals struct {
	Usage   llm.Usage
	CostUSD float64
	Turns   int
}

// NewSession starts an empty conversation.
func (a *Agent) NewSession() *Session {
	return &Session{agent: a, tools: tool.NewSession()}
}

// ResumeSession continues a stored conversation. The history is repaired
// (orphaned tool calls get error results) before the next run.
func (a *Agent) ResumeSession(history []llm.Message) *Session {
	s := a.NewSession()
	// history may hold compaction markers: the view is replayed from it.
	s.cw.transcript, s.messages = compact.Restore(history)
	return s
}

// ResumeSessionWith is ResumeSession with the tools' session state (files
// read, todo list) carried over from an earlier session, for front doors
// that build a fresh Agent per turn (per-turn model or prompt overrides)
// but keep one conversation.
func (a *Agent) ResumeSessionWith(history []llm.Message, state *tool.Session) *Session {
	s := a.ResumeSession(history)
	if state != nil {
		s.tools = state
	}
	return s
}

// ToolState returns the tools' session state, to carry it to a resumed
// session.
func (s *Session) ToolState() *tool.Session { return s.tools }

// Messages returns a copy of the conversation's history: every message,
// and a marker (compact.Marker, role compact.RoleMarker) where a
// compaction changed what the model is sent. It only grows, so it is what
// to store; ResumeSession replays it, and View is what the model sees.
func (s *Session) Messages() []llm.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cw.transcript.History(s.messages)
}

// Totals returns the session's cumulative usage and cost.
func (s *Session) Totals() Totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals
}

// Todos returns the session's todo list (TodoWrite).
func (s *Session) Todos() []tool.Todo { return s.tools.Todos() }

// Clear forgets the conversation (totals are kept).
func (s *Session) Clear() {
	s.mu.Lock()
	s.messages = nil
	s.cacheKey = ""
	s.cw = contextState{}
	s.budget.msgs = 0 // the next estimate counts the whole prompt
	s.mu.Unlock()
}

// Run sends a user prompt and streams the run. The sequence yields a nil
// error for every event but the error event, which is paired with the error
// that ended the run; done is always the last event. Breaking out of the
// loop cancels the run; the session's history stays valid either way.
func (s *Session) Run(ctx context.Context, prompt string) iter.Seq2[Event, error] {
	return s.RunMessage(ctx, llm.UserText(prompt))
}

// RunMessage is Run with a full user message (images, several blocks).
func (s *Session) RunMessage(ctx context.Context, msg llm.Message) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		s.runMu.Lock()
		defer s.runMu.Unlock()
		ctx, cancel := context.WithCancel(compact.WithRecaller(ctx, s))
		defer cancel()
		r := &run{s: s, a: s.agent, ctx: ctx, cancel: cancel, yield: yield}
		r.begin()
		defer r.end()
		r.loop(msg)
	}
}

// RunFunc runs prompt and calls fn for every event; an error from fn stops
// the run and is returned. It returns the error that ended the run, if any.
func (s *Session) RunFunc(ctx context.Context, prompt string, fn func(Event) error) error {
	var runErr error
	for ev, err := range s.Run(ctx, prompt) {
		if err != nil {
			runErr = err
		}
		if ferr := fn(ev); ferr != nil {
			return ferr
		}
	}
	return runErr
}

// run is the state of one Run.
type run struct {
	s      *Session
	a      *Agent
	ctx    context.Context
	cancel context.CancelFunc
	yield  func(Event, error) bool

	stopped bool // the consumer broke out
	turns   int
	// hookStop is set when a hook asked the run to stop (continue:false).
	hookStop string
	// stopHookRuns bounds how often stop hooks may send the model back
	// to work, so a hook that always blocks cannot loop forever.
	stopHookRuns int
	// Streams that hold back a delta's tail while it could still be the
	// start of a secret split across chunks.
	textStream, thinkStream *secret.Stream
	usage                   llm.Usage
	cost                    float64
	text                    string // the last assistant text

	// polCtx is ctx with the run's policy.LoopTracker, for the policy's
	// Before and After (begin).
	polCtx     context.Context
	loops      policy.LoopTracker // the guardrails' memory of this run
	breaker    breaker
	started    time.Time
	stopReason string // done's
	runErr     error  // fail's
	// humanWait is the approver's time (ns) on the call being decided;
	// atomic, since tools in parallel ask it for calls of their own.
	humanWait atomic.Int64
	// subUsage is what the sub-agents spawned by this run's tool calls
	// spent, counted in done's totals.
	subUsage usageAcc
	// subStopFired: a sub-agent's subagent_stop hook has run.
	subStopFired bool
	// fixed and est are the estimates (compact.Estimate*) of the system
	// prompt and tools, and of the request being sent.
	fixed, est int
	bud        runBudget // budget.go
}

// emit yields ev; once the consumer stops, it cancels the run and reports
// false from then on.
func (r *run) emit(typ EventType, data any) bool {
	if r.stopped {
		return false
	}
	data = r.redactEvent(data)
	if !r.yield(Event{Type: typ, Data: data}, nil) {
		r.stopped = true
		r.cancel()
	}
	return !r.stopped
}

func (r *run) done(reason string) {
	r.stopReason = reason
	r.runEndHooks(reason)
	// The totals include the sub-agents this run's tool calls ran.
	u, cost := r.subUsage.get()
	u.Add(r.usage)
	cost += r.cost
	r.emit(EventDone, DoneData{
		TotalInputTokens: u.InputTokens, TotalOutputTokens: u.OutputTokens,
		TotalTokens:          u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens + u.OutputTokens,
		TotalCacheReadTokens: u.CacheReadTokens, TotalCacheWriteTokens: u.CacheWriteTokens,
		CostUSD: cost, TurnCount: r.turns, StopReason: reason, Text: r.text,
	})
}

// fail ends the run with an error event and done.
func (r *run) fail(err error, status llm.Status) {
	r.observeError(err, status)
	d := ErrorData{Error: err.Error(), Status: string(status)}
	var e *llm.Error
	if errors.As(err, &e) {
		d.Hint = e.Hint
		d.Category = string(e.Category)
	}
	if !r.stopped && !r.yield(Event{Type: EventError, Data: r.redactEvent(d)}, err) {
		r.stopped = true
		r.cancel()
	}
	r.done(StopError)
}

func (r *run) loop(user llm.Message) {
	if reason := r.userPromptHooks(&user); reason != "" {
		r.fail(fmt.Errorf("prompt blocked: %s", reason), "")
		return
	}
	r.s.mu.Lock()
	var repairs int
	r.s.messages, repairs = repairHistory(r.s.messages)
	r.s.messages = appendMerged(r.s.messages, r.redactMessage(user))
	r.s.mu.Unlock()
	r.repaired(repairs)

	for {
		if r.ctx.Err() != nil {
			r.done(StopCancelled)
			return
		}
		if r.turns >= r.a.cfg.MaxTurns {
			r.done(StopMaxTurns)
			return
		}
		if !r.checkBudget() {
			return // stopped on the budget (reported)
		}
		r.turns++
		if !r.emit(EventTurnStart, TurnStartData{TurnNumber: r.turns, Model: r.a.cfg.Model}) {
			return
		}
		if reason := r.preSamplingHooks(); reason != "" {
			r.fail(fmt.Errorf("model call blocked: %s", reason), "")
			return
		}
		res, ok := r.callModel()
		if !ok {
			return // already reported
		}
		r.postSamplingHooks(res)
		cost := r.a.info.Cost(res.Usage)
		r.usage.Add(res.Usage)
		r.cost += cost
		r.s.mu.Lock()
		r.s.totals.Usage.Add(res.Usage)
		r.s.totals.CostUSD += cost
		r.s.totals.Turns++
		if len(res.Message.Content) > 0 {
			// The calls below run with the model's own input; the history
			// (sent back to the model, stored) never holds a value.
			r.s.messages = appendMerged(r.s.messages, r.redactMessage(res.Message))
		}
		r.s.mu.Unlock()
		r.rollUp(res.Usage, cost)
		if t := res.Message.Text(); t != "" {
			r.text = t
		}
		usage := r.account(res.Usage)
		if !r.emit(EventTurnEnd, TurnEndData{
			TurnNumber: r.turns, InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens,
			CacheReadTokens: res.Usage.CacheReadTokens, CacheWriteTokens: res.Usage.CacheWriteTokens,
			CostUSD: cost, StopReason: string(res.Outcome.StopReason), Context: usage,
		}) || !r.warn(usage) || !r.afterCall(res.Usage, cost) {
			r.closeOrphans()
			return
		}

		calls := res.Message.ToolUses()
		if len(calls) == 0 {
			if res.Outcome.StopReason == llm.StopMaxTokens {
				r.s.mu.Lock()
				r.s.messages = appendMerged(r.s.messages, llm.UserText(continuationPrompt))
				r.s.mu.Unlock()
				continue
			}
			if r.stopHooks() {
				continue
			}
			reason := StopEndTurn
			if res.Outcome.StopReason == llm.StopSequence {
				reason = StopSequence
			}
			r.done(reason)
			return
		}
		results, askedUser := r.runTools(calls)
		r.s.mu.Lock()
		r.s.messages = appendMerged(r.s.messages, llm.Message{Role: llm.RoleUser, Content: results})
		r.s.mu.Unlock()
		if r.stopped {
			return
		}
		r.capRound()
		if r.ctx.Err() != nil {
			r.done(StopCancelled)
			return
		}
		if r.hookStop != "" {
			r.a.log.Info("a hook stopped the run", "reason", r.hookStop)
			r.done(StopEndTurn)
			return
		}
		if askedUser {
			// The questions are on screen; the answer is the next user
			// message, so the run ends here rather than letting the model
			// guess.
			r.done(StopEndTurn)
			return
		}
		if r.afterRound(results) {
			return // stuck (the circuit breaker)
		}
	}
}

// closeOrphans gives every unanswered tool call of the last assistant
// message an error result, so the history stays valid when a run stops
// between a tool call and its result.
func (r *run) closeOrphans() {
	r.s.mu.Lock()
	r.s.messages, _ = repairHistory(r.s.messages) // closing a stopped turn is no repair
	r.s.mu.Unlock()
}

// request builds the model request from the session's history.
func (r *run) request() *llm.Request {
	cfg := &r.a.cfg
	var tools []llm.ToolSpec
	if cfg.Tools != nil {
		tools = cfg.Tools.LLMSpecs()
	}
	system := r.systemPrompt(tools)
	r.s.mu.Lock()
	msgs := append([]llm.Message(nil), r.s.messages...)
	if r.s.cacheKey == "" && len(msgs) > 0 && cfg.PromptCache != llm.CacheOff {
		r.s.cacheKey = conversationKey(stableText(system), msgs[0])
	}
	key := r.s.cacheKey
	r.s.mu.Unlock()
	req := &llm.Request{
		Model:         cfg.Model,
		System:        system,
		Tools:         tools,
		Messages:      msgs,
		MaxTokens:     cfg.MaxTokens,
		Temperature:   cfg.Temperature,
		StopSequences: cfg.StopSequences,
		Thinking:      cfg.Thinking,
		Cache:         cfg.PromptCache,
		CacheKey:      key,
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = r.a.info.MaxOutputTokens
	}
	r.prepareImages(req)
	return req
}

// conversationKey names a conversation by how it starts (system prompt and
// first message), for llm.Request.CacheKey. It is derived rather than drawn
// at random so that it survives what a session object does not: a server
// restart, or a front door that builds a fresh Agent for every turn and
// resumes the history. Two conversations that start alike share a key,
// which is what the key is for: they share a prefix.
func conversationKey(system string, first llm.Message) string {
	h := sha256.New()
	h.Write([]byte(system))
	h.Write([]byte{0})
	_ = json.NewEncoder(h).Encode(first)
	return "weft-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// callModel streams one model call, retrying the failures a retry can
// cure (llm.Outcome.Retryable: rate limits, overload, 5xx, network errors,
// timeouts, malformed or cut streams). The others end the run at once; a
// prompt over the context window first goes to Config.OnPromptTooLong,
// when set, and is sent once more with the history it returns. It returns
// false when the run is over (reported already).
func (r *run) callModel() (llm.Result, bool) {
	req := r.prepare()
	pol := r.a.cfg.Retry
	shrunk := false
	for attempt := 1; ; attempt++ {
		res, ok := r.attempt(req, attempt)
		if !ok {
			return res, false
		}
		o := res.Outcome
		var e *llm.Error
		errors.As(o.Err, &e)
		switch {
		case o.Status == llm.StatusCompleted:
			return res, true
		case o.Status == llm.StatusAborted || r.ctx.Err() != nil:
			r.done(StopCancelled)
			return res, false
		case e != nil && e.Category == llm.CategoryPromptTooLong && !shrunk && (r.a.cfg.OnPromptTooLong != nil || !r.a.ctxCfg.Off):
			// Compaction, then exactly one more request.
			shrunk = true
			if r.a.cfg.OnPromptTooLong != nil && !r.shrinkHistory(e) || r.a.cfg.OnPromptTooLong == nil && !r.compactedTooLong(e) {
				r.fail(r.promptTooLong(e), o.Status)
				return res, false
			}
			if !r.emit(EventRetry, RetryData{TurnNumber: r.turns, Attempt: attempt, MaxAttempts: pol.attempts(),
				Status: string(o.Status), Category: string(e.Category), Error: o.Message}) {
				return res, false
			}
			req = r.prepare()
			attempt-- // the history changed: this is a new request, not a repeat
			continue
		case !(o.Retryable() || failover(e)) || attempt >= pol.attempts():
			var err error = e
			if e == nil {
				err = o.Err
			}
			if err == nil {
				err = errors.New(o.Message)
			}
			switch {
			case e != nil && e.Category == llm.CategoryPromptTooLong:
				err = r.promptTooLong(e)
			case o.Retryable():
				err = fmt.Errorf("model call failed after %d attempts: %w", attempt, err)
			}
			r.fail(err, o.Status)
			return res, false
		}
		delay := backoff(pol, attempt, o.RetryAfter)
		if failover(e) {
			delay = 0 // the next attempt takes another, healthy key of the pool
		}
		d := RetryData{TurnNumber: r.turns, Attempt: attempt, MaxAttempts: pol.attempts(), DelayMS: delay.Milliseconds(),
			Status: string(o.Status), Error: o.Message}
		if e != nil {
			d.Category = string(e.Category)
		}
		r.observeRetry(d, failover(e))
		if !r.emit(EventRetry, d) {
			return res, false
		}
		// The retry event is the record; a log line as well would print
		// every retry twice where the log goes to the same terminal.
		r.a.log.Debug("model call failed; retrying", "attempt", attempt, "status", o.Status, "category", d.Category, "error", o.Message, "delay", delay)
		t := time.NewTimer(delay)
		select {
		case <-r.ctx.Done():
			t.Stop()
			r.done(StopCancelled)
			return res, false
		case <-t.C:
		}
	}
}

// shrinkHistory asks Config.OnPromptTooLong for a history that fits and
// installs it. It reports whether there is one.
func (r *run) shrinkHistory(e *llm.Error) bool {
	msgs := r.s.View()
	shorter, ok := r.a.cfg.OnPromptTooLong(r.ctx, PromptTooLong{Messages: msgs, Err: e, ContextWindow: r.a.info.ContextWindow})
	if !ok || len(shorter) == 0 {
		r.strictCompact(e)
		return false
	}
	// What the hook wrote (a summary by a model, say) is held to the same
	// rule as any message: the history never holds a secret's value.
	msgs = make([]llm.Message, len(shorter))
	for i, m := range shorter {
		msgs[i] = r.redactMessage(m)
	}
	r.s.mu.Lock()
	var repairs int
	r.s.messages, repairs = repairHistory(msgs)
	// The hook's history is the conversation from now on: the record of
	// earlier compactions goes with what it replaced.
	r.s.cw.transcript.Reset()
	r.s.mu.Unlock()
	r.repaired(repairs)
	return true
}

// promptTooLong is the error that ends a turn whose prompt is over the
// model's context window: it says by how much when the provider did.
func (r *run) promptTooLong(e *llm.Error) error {
	window := ""
	if w := r.a.info.ContextWindow; w > 0 {
		window = fmt.Sprintf(" of %d tokens", w)
	}
	if e.TokenGap > 0 {
		return fmt.Errorf("the conversation is %d tokens over %s's context window%s: %w", e.TokenGap, r.a.cfg.Model, window, e)
	}
	return fmt.Errorf("the conversation is over %s's context window%s: %w", r.a.cfg.Model, window, e)
}

// backoff is exponential with ±25% jitter, never shorter than the server's
// hint.
func backoff(p RetryPolicy, attempt int, hint time.Duration) time.Duration {
	base, max := p.BaseDelay, p.MaxDelay
	if base <= 0 {
		base = time.Second
	}
	if max <= 0 {
		max = 30 * time.Second
	}
	d := base << (attempt - 1)
	if d > max || d <= 0 {
		d = max
	}
	d = time.Duration(float64(d) * (0.75 + 0.5*rand.Float64()))
	if hint > d {
		d = hint
	}
	return d
}

// streamOnce runs one model call, forwarding deltas and complete blocks as
// events. It returns false when the consumer stopped.
func (r *run) streamOnce(ctx context.Context, req *llm.Request) (llm.Result, bool) {
	var res llm.Result
	for ev := range r.a.cfg.Provider.Stream(ctx, req) {
		ok := true
		switch ev.Kind {
		case llm.EventBlockDelta:
			switch ev.Block.Type {
			case llm.BlockText:
				ok = r.emitDelta(EventTextDelta, &r.textStream, ev.Delta)
			case llm.BlockThinking:
				ok = r.emitDelta(EventThinkingDelta, &r.thinkStream, ev.Delta)
			}
		case llm.EventBlockStop:
			switch ev.Block.Type {
			case llm.BlockText:
				ok = r.flushDelta(EventTextDelta, &r.textStream) && r.emit(EventText, TextData{Text: ev.Block.Text})
			case llm.BlockThinking:
				ok = r.flushDelta(EventThinkingDelta, &r.thinkStream)
				if ok && ev.Block.Text != "" {
					ok = r.emit(EventThinking, TextData{Text: ev.Block.Text})
				}
			case llm.BlockToolUse:
				// Announced once the outcome is known: a call from an
				// attempt that fails is never run.
			}
		case llm.EventMessageDone:
			res.Message = *ev.Message
		case llm.EventUsage:
			res.Usage = ev.Usage
		case llm.EventOutcome:
			res.Outcome = ev.Outcome
		}
		if !ok {
			return res, false
		}
	}
	if res.Outcome.Status == "" {
		// A provider that broke the contract: treat as malformed rather
		// than trusting a half message.
		r.strictNormalizer("the provider's stream ended without an outcome")
		res.Outcome = llm.Outcome{Status: llm.StatusMalformed, Message: "provider stream ended without an outcome"}
	}
	return res, true
}

// runTools puts the calls of one model turn through the policy, runs the
// allowed ones and returns their results in call order. askedUser reports
// a successful call of a tool that ends the turn (Meta.EndsTurn, as
// AskUserQuestion does).
func (r *run) runTools(calls []llm.Block) (results []llm.Block, askedUser bool) {
	results = make([]llm.Block, len(calls))
	approved := make([]bool, len(calls))
	specs := make([]tool.Spec, len(calls))
	verdicts := make([]policy.Verdict, len(calls))
	for _, c := range calls {
		if !r.emit(EventToolUse, ToolUseData{ID: c.ToolUseID, ToolName: c.ToolName, Input: rawOrEmpty(c.Input)}) {
			return r.cancelledResults(calls, results), false
		}
	}
	// Calls go through the policy one at a time, in call order: a person
	// may be asked, and concurrent prompts would be confusing.
	for i, c := range calls {
		t, known := r.lookup(c.ToolName)
		if !known {
			approved[i] = true // nothing runs: Execute reports the unknown tool
			continue
		}
		specs[i] = t.Spec()
		r.humanWait.Store(0)
		v := r.a.pol.Before(r.polCtx, r.policyCall(c, specs[i]), r.human, r.a.cfg.Checkpoint)
		if r.ctx.Err() != nil {
			return r.cancelledResults(calls, results), false
		}
		r.observeDecision(c, specs[i], v, time.Duration(r.humanWait.Load()))
		verdicts[i] = v
		if v.Stop {
			r.hookStop = nonEmptyString(v.StopReason, "a hook stopped the run")
		}
		if v.Allow {
			approved[i] = true
			continue
		}
		msg, outcome := "Permission denied: "+v.Reason, observe.OutcomeDenied
		if v.Stage == policy.StageGuardrail {
			msg, outcome = v.Reason, observe.OutcomeBlocked // says what to do instead
			if !r.observeGuardrail(c, v) {
				return r.cancelledResults(calls, results), false
			}
		}
		if v.Context != "" {
			msg += "\n" + v.Context
		}
		msg = r.redact(msg)
		r.observeTool(c, specs[i], outcome, 0)
		results[i] = llm.ToolResult(c.ToolUseID, true, llm.Text(msg))
		if !r.emit(EventToolResult, ToolResultData{ID: c.ToolUseID, ToolName: c.ToolName, Output: msg, IsError: true, Denied: true, Stage: v.Stage}) {
			return r.cancelledResults(calls, results), false
		}
	}
	for _, g := range groupCalls(calls, specs, verdicts, approved, r.a.pol.Workspace) {
		if !r.runGroup(calls, g, results, specs, verdicts) {
			return r.cancelledResults(calls, results), false
		}
		if r.ctx.Err() != nil {
			return r.cancelledResults(calls, results), false
		}
	}
	for i := range calls {
		if approved[i] && specs[i].EndsTurn && !results[i].IsError {
			askedUser = true
		}
	}
	return results, askedUser
}

func (r *run) policyCall(c llm.Block, spec tool.Spec) policy.Call {
	return policy.Call{ToolUseID: c.ToolUseID, Tool: c.ToolName, Input: c.Input, Spec: spec, Turn: r.turns}
}

func (r *run) lookup(name string) (tool.Tool, bool) {
	if r.a.cfg.Tools == nil {
		return nil, false
	}
	return r.a.cfg.Tools.Get(name)
}

// human asks the approver: the policy's last word on calls its rules did
// not settle. No approver denies; the policy recovers a panic as a denial.
func (r *run) human(ctx context.Context, c policy.Call, reason string) (bool, string) {
	fn := r.a.cfg.Approve
	if fn == nil {
		return false, "no approver is configured, so calls that need approval are denied (" + reason + ")"
	}
	// The person (a terminal, a permission_request event) is shown what the
	// model is: no registered value.
	start := time.Now()
	d := fn(ctx, ApprovalRequest{ID: c.ToolUseID, ToolName: c.Tool, Input: r.a.pol.Secrets.RedactJSON(c.Input), Spec: c.Spec, Reason: reason, Dangerous: c.Dangerous})
	r.humanWait.Add(int64(time.Since(start)))
	return d.Allow, d.Reason
}

// cancelledResults fills the calls that have no result yet with a
// cancellation error, keeping the history valid.
func (r *run) cancelledResults(calls []llm.Block, results []llm.Block) []llm.Block {
	for i, c := range calls {
		if results[i].Type == "" {
			results[i] = llm.ToolResult(c.ToolUseID, true, llm.Text("Tool call cancelled: the run was stopped before it completed."))
		}
	}
	return results
}

// groupCalls splits approved calls into batches that run one after
// another; the calls within a batch run in parallel. Consecutive
// concurrency-safe calls share a batch, as do calls of tools that declare
// a PathArg (Write, Edit) on distinct paths; anything else runs alone.
// A call's path is read from the input it will run with (verdicts: after
// hooks and the policy's path resolution), so two spellings of one file
// do not run at once.
func groupCalls(calls []llm.Block, specs []tool.Spec, verdicts []policy.Verdict, approved []bool, workspace string) [][]int {
	var groups [][]int
	var cur []int
	paths := map[string]bool{}
	flush := func() {
		if len(cur) > 0 {
			groups = append(groups, cur)
			cur, paths = nil, map[string]bool{}
		}
	}
	for i, c := range calls {
		if !approved[i] {
			continue
		}
		safe := specs[i].ConcurrencySafe
		if !safe && specs[i].PathArg != "" {
			input := c.Input
			if len(verdicts[i].Input) > 0 {
				input = verdicts[i].Input
			}
			if p := pathArg(input, specs[i].PathArg, workspace); p != "" && !paths[p] {
				paths[p] = true
				safe = true
			}
		}
		if !safe {
			flush()
			groups = append(groups, []int{i})
			continue
		}
		cur = append(cur, i)
	}
	flush()
	return groups
}

// pathArg returns the path in the input's field, made absolute against
// the workspace and cleaned, so that "a.txt" and "./a.txt" conflict; ""
// when there is none. Folding spellings together only ever makes calls
// run one after another.
func pathArg(input json.RawMessage, field, workspace string) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(input, &fields) != nil {
		return ""
	}
	var p string
	if json.Unmarshal(fields[field], &p) != nil || p == "" {
		return ""
	}
	if !filepath.IsAbs(p) && workspace != "" {
		p = filepath.Join(workspace, p)
	}
	return filepath.Clean(p)
}

// toolMsg is what a running tool sends to the run's goroutine.
type toolMsg struct {
	idx      int
	typ      EventType
	data     any
	result   *tool.Result
	duration time.Duration
}

// runGroup runs the calls of one batch in parallel and streams their
// progress and results as they happen. Only this goroutine yields; workers
// send to it. It returns false when the consumer stopped.
func (r *run) runGroup(calls []llm.Block, group []int, results []llm.Block, specs []tool.Spec, verdicts []policy.Verdict) bool {
	msgs := make(chan toolMsg, 2*len(group))
	for _, i := range group {
		c := calls[i]
		go func() {
			send := func(m toolMsg) {
				select {
				case msgs <- m:
				case <-r.ctx.Done():
				}
			}
			start := time.Now()
			if r.a.cfg.Tools == nil {
				res := tool.Errorf("unknown tool %q: this agent has no tools", c.ToolName)
				msgs <- toolMsg{idx: i, result: &res}
				return
			}
			input := c.Input
			if v := verdicts[i]; len(v.Input) > 0 {
				input = v.Input // a hook may have rewritten it
			}
			var env []string
			if sec := r.a.pol.Secrets; sec != nil {
				env = sec.Env()
			}
			// Tools that make calls of their own (workflows, sub-agents)
			// find this run's policy in their context.
			tctx := policy.WithCaller(r.ctx, policy.Caller{Policy: r.a.pol, Human: r.human, Checkpoint: r.a.cfg.Checkpoint})
			// Sub-agents the call spawns send their events through the
			// scope while the call lasts (see Spawn).
			scope := &toolScope{run: r, callID: c.ToolUseID, send: func(typ EventType, data any) {
				send(toolMsg{idx: i, typ: typ, data: data})
			}}
			tctx = withToolScope(tctx, scope)
			tctx, endSpan := r.toolSpan(tctx, c, specs[i])
			res := r.a.cfg.Tools.Execute(tctx, &tool.Call{
				ID: c.ToolUseID, Name: c.ToolName, Input: input, Session: r.s.tools, Env: env, Secrets: r.a.pol.Secrets,
				Progress: func(text string) {
					send(toolMsg{idx: i, typ: EventToolProgress, data: ToolProgressData{ID: c.ToolUseID, ToolName: c.ToolName, Detail: text}})
				},
				Notify: func(kind string, payload any) {
					send(toolMsg{idx: i, typ: EventType(kind), data: NotifyData{ID: c.ToolUseID, ToolName: c.ToolName, Payload: payload}})
				},
			})
			scope.detach()
			if specs[i].Name != "" {
				r.a.pol.After(context.WithoutCancel(r.polCtx), r.policyCall(c, specs[i]), verdicts[i], &res)
			} else {
				r.a.pol.RedactResult(&res)
			}
			endSpan(&res)
			// The result is always delivered, even after a cancel: the
			// history needs it.
			msgs <- toolMsg{idx: i, result: &res, duration: time.Since(start)}
		}()
	}
	ok := true
	for pending := len(group); pending > 0; {
		m := <-msgs
		c := calls[m.idx]
		if m.result == nil {
			if ok {
				ok = r.emit(m.typ, m.data)
			}
			continue
		}
		pending--
		res := *m.result
		if res.IsError {
			r.observeTool(c, specs[m.idx], observe.OutcomeError, m.duration)
		} else {
			r.observeTool(c, specs[m.idx], observe.OutcomeOK, m.duration)
		}
		results[m.idx] = llm.Block{Type: llm.BlockToolResult, ToolUseID: c.ToolUseID, IsError: res.IsError, Content: res.Content}
		if ok {
			d := ToolResultData{ID: c.ToolUseID, ToolName: c.ToolName, Output: res.TextOf(), IsError: res.IsError,
				Data: res.Data, DurationMS: m.duration.Milliseconds()}
			for _, b := range res.Content {
				if b.Type != llm.BlockText {
					d.Content = res.Content
					break
				}
			}
			ok = r.emit(EventToolResult, d)
		}
	}
	return ok
}

func rawOrEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return b
}
