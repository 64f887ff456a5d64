package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/weft-run/weft/compact"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/policy/hook"
)

// The context window's management (package compact plans, this file
// decides when, calls the summary model and reports). See
// docs/context.md.

// ContextUsage is how full the context window is, on turn_end.
type ContextUsage struct {
	// UsedTokens is the prompt the provider counted for the turn plus the
	// reply, which the next request carries.
	UsedTokens int `json:"used_tokens"`
	Window     int `json:"window"`
	// Limit is the window minus the reply's reserve: what a prompt may
	// take, and what the compaction thresholds are shares of.
	Limit   int     `json:"limit"`
	Percent float64 `json:"percent"` // of Window
}

// TokenWarningData is the payload of token_warning: the session passed a
// share of its usable window (Limit), 0.8 then 0.95, once each on the way
// up (a compaction that brings it back under re-arms them).
type TokenWarningData struct {
	UsedTokens int     `json:"used_tokens"`
	Window     int     `json:"window"`
	Limit      int     `json:"limit"`
	Threshold  float64 `json:"threshold"`
}

// CompactionData is the payload of compaction: one level of compaction
// changed what the model is sent. The messages it replaced stay in the
// session's history (Session.Messages) behind a marker.
type CompactionData struct {
	Level   string `json:"level"`   // compact.Level
	Trigger string `json:"trigger"` // compact.Trigger
	// Tokens are the conversation's estimated size (calibrated against
	// the provider's counts), before and after.
	TokensBefore   int `json:"tokens_before"`
	TokensAfter    int `json:"tokens_after"`
	MessagesBefore int `json:"messages_before"`
	MessagesAfter  int `json:"messages_after"`
	// Model wrote the summary (level summary).
	Model string `json:"model,omitempty"`
	// Note says what happened beyond the level: a summary that could not
	// be written and what was done instead.
	Note string `json:"note,omitempty"`
}

// contextState is a session's side of the window's management; guarded by
// Session.mu.
type contextState struct {
	transcript compact.Transcript
	acct       compact.Accountant
	warned     int // how many of compact.WarnAt the session has passed
}

// initContext resolves the agent's context configuration (New).
func (a *Agent) initContext() {
	a.ctxCfg = a.cfg.Context.Resolved()
	info := a.info
	if a.cfg.ContextWindow > 0 {
		info.ContextWindow = a.cfg.ContextWindow
	}
	a.budget = compact.NewBudget(info, a.cfg.MaxTokens, a.ctxCfg.ReserveShare)
	if a.cfg.Tools != nil {
		_, a.recall = a.cfg.Tools.Get(compact.RecallName)
	}
}

// ContextBudget is the agent's context window and the reply's reserve.
func (a *Agent) ContextBudget() compact.Budget { return a.budget }

// planner plans with the session's calibration; s.mu held.
func (s *Session) planner() *compact.Planner {
	return &compact.Planner{Config: s.agent.ctxCfg, Budget: s.agent.budget, Ratio: s.cw.acct.Ratio(), Recall: s.agent.recall}
}

// View is what the model is sent of the conversation: Messages with every
// compaction applied.
func (s *Session) View() []llm.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.Message(nil), s.messages...)
}

// Recall returns the output of the tool call with id as it was before a
// compaction cut or stubbed it (compact.Recaller, for the Recall tool).
func (s *Session) Recall(id string) (llm.Block, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cw.transcript.Original(s.messages, id)
}

// RecallBudget is how many characters one Recall result may hold: a
// round's share of the window, so that reading back never overflows it.
func (s *Session) RecallBudget() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.planner()
	share := p.Config.ToolShare
	if share <= 0 {
		share = 0.3
	}
	return max(p.BytesFor(p.Budget.Share(share)), 1000)
}

// prepare builds the next request with the conversation fitted to the
// window: the automatic levels run first when their thresholds are
// passed, and the reply's max_tokens is held to the room that is left.
func (r *run) prepare() *llm.Request {
	req := r.request()
	r.fixed = compact.EstimateFixed(req.System, req.Tools)
	if !r.a.ctxCfg.Off && r.autoCompact() {
		req = r.request()
	}
	r.s.mu.Lock()
	r.est = r.fixed + compact.EstimateMessages(req.Messages)
	expected := r.s.cw.acct.Estimate(r.est)
	r.s.mu.Unlock()
	if room := r.a.budget.Window - expected; room > 0 && req.MaxTokens > room {
		req.MaxTokens = max(room, min(req.MaxTokens, 1024))
	}
	return req
}

// size is the conversation's expected prompt size; s.mu held.
func (r *run) size(view []llm.Message) int {
	return r.s.cw.acct.Estimate(r.fixed + compact.EstimateMessages(view))
}

// currentSize is size of the session's view.
func (r *run) currentSize() int {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return r.size(r.s.messages)
}

// autoCompact runs the levels whose thresholds the conversation passed.
// It reports whether the conversation changed.
func (r *run) autoCompact() bool {
	cfg, b := r.a.ctxCfg, r.a.budget
	changed := false
	if n := r.a.cfg.MaxContextMessages; n > 0 {
		changed = r.apply(compact.TriggerAuto, "", func(p *compact.Planner, view []llm.Message) (compact.Marker, bool) {
			return p.MaxMessages(view, n)
		})
	}
	used := r.currentSize()
	if cfg.MicroAt >= 0 && used > b.Share(cfg.MicroAt) {
		// Stubs come in batches worth a tenth of the limit at least: a
		// changed message breaks the prompt cache from there on, and one
		// result pushed out of the kept rounds at every turn would cost
		// the cache at every turn. Less than that is left to the summary
		// (any saving goes when no summary will come automatically).
		minSave := 0
		if cfg.SummaryAt >= 0 {
			minSave = b.Share(0.1)
		}
		if r.apply(compact.TriggerAuto, "", func(p *compact.Planner, view []llm.Message) (compact.Marker, bool) {
			m, ok := p.Micro(view, 0)
			if ok && minSave > 0 {
				saved := compact.EstimateMessages(view) - compact.EstimateMessages(m.Apply(view))
				ok = float64(saved)*max(p.Ratio, 1) >= float64(minSave)
			}
			return m, ok
		}) {
			changed = true
			used = r.currentSize()
		}
	}
	if cfg.SummaryAt >= 0 && used > b.Share(cfg.SummaryAt) || used > b.Limit() {
		changed = r.summarize(compact.TriggerAuto, "") || changed
	}
	return r.guard(compact.TriggerAuto) || changed
}

// apply plans one compaction of the view and records it: the view
// changes, the transcript keeps what it replaced, and a compaction event
// says so. It reports whether there was anything to do.
func (r *run) apply(trigger compact.Trigger, note string, plan func(*compact.Planner, []llm.Message) (compact.Marker, bool)) bool {
	r.s.mu.Lock()
	view := r.s.messages
	m, ok := plan(r.s.planner(), view)
	if !ok {
		r.s.mu.Unlock()
		return false
	}
	d := r.recordLocked(&m, trigger, note)
	r.s.mu.Unlock()
	r.reportCompaction(d)
	return true
}

// recordLocked records m on the session's view; s.mu held.
func (r *run) recordLocked(m *compact.Marker, trigger compact.Trigger, note string) CompactionData {
	view := r.s.messages
	m.Trigger = trigger
	if note != "" {
		m.Note = note
	}
	m.TokensBefore = r.size(view)
	next := m.Apply(view)
	m.TokensAfter = r.size(next)
	r.s.messages, _ = r.s.cw.transcript.Record(view, *m)
	// A compaction that brings the session back under a warning's
	// threshold re-arms it.
	for r.s.cw.warned > 0 && m.TokensAfter < r.a.budget.Share(compact.WarnAt[r.s.cw.warned-1]) {
		r.s.cw.warned--
	}
	return CompactionData{Level: string(m.Level), Trigger: string(trigger), TokensBefore: m.TokensBefore, TokensAfter: m.TokensAfter,
		MessagesBefore: len(view), MessagesAfter: len(r.s.messages), Note: m.Note}
}

func (r *run) reportCompaction(d CompactionData) {
	if o := r.a.obs.Events; o != nil {
		data := map[string]any{"model": r.a.cfg.Model, "level": d.Level, "trigger": d.Trigger,
			"messages_before": d.MessagesBefore, "messages_after": d.MessagesAfter,
			"tokens_before": d.TokensBefore, "tokens_after": d.TokensAfter, "tokens_saved": d.TokensBefore - d.TokensAfter}
		r.safely(func() { o.Event(observe.EventCompaction, data) })
	}
	r.emit(EventCompaction, d)
}

// guard is the last resort when the conversation is still over the limit:
// messages too large for the window are cut, then the oldest part of the
// conversation is left out (the user's messages carried over). It
// reports whether the conversation changed.
func (r *run) guard(trigger compact.Trigger) bool {
	b := r.a.budget
	if r.currentSize() <= b.Limit() {
		return false
	}
	changed := r.apply(trigger, "", func(p *compact.Planner, view []llm.Message) (compact.Marker, bool) {
		return p.Truncate(view, int(float64(b.Limit()/3)/max(p.Ratio, 1)))
	})
	if r.currentSize() <= b.Limit() {
		return changed
	}
	return r.apply(trigger, "", func(p *compact.Planner, view []llm.Message) (compact.Marker, bool) {
		split := p.Split(view, int(float64(b.Limit()/2)/max(p.Ratio, 1)))
		if split == 0 {
			return compact.Marker{}, false
		}
		return p.Dropped(view, split, "the conversation was still too long for the context window"), true
	}) || changed
}

// summarize replaces the middle of the conversation by a summary a model
// writes (the compact model), keeping the first user message, the user's
// own messages and the recent tail. When the summary cannot be written,
// old tool results are stubbed instead and, if the conversation is still
// over the limit, the middle is left out; the event's note says so. It
// reports whether the conversation changed.
func (r *run) summarize(trigger compact.Trigger, instructions string) bool {
	instructions, skip := r.preCompactHooks(trigger, instructions)
	if skip && trigger == compact.TriggerAuto {
		return false
	}
	cfg, b := r.a.ctxCfg, r.a.budget
	r.s.mu.Lock()
	view := append([]llm.Message(nil), r.s.messages...)
	p := r.s.planner()
	r.s.mu.Unlock()
	// The tail kept verbatim is the configured share, and at most half
	// the conversation, so that a compaction asked for early (by hand)
	// still has something to summarise.
	tail := min(int(float64(b.Share(cfg.TailShare))/max(p.Ratio, 1)), compact.EstimateMessages(view)/2)
	split := p.Split(view, tail)
	if split == 0 {
		return r.fallback(trigger, "nothing before the latest round to summarise")
	}
	prov, model, info := r.a.compactModel()
	window := info.ContextWindow
	if window <= 0 {
		window = llm.UnknownContextWindow
	}
	// The summary's reply takes at most a quarter of the compact model's
	// window: the rest is for what it summarises.
	maxTokens := max(min(b.Share(cfg.SummaryShare), window/4), 256)
	if info.MaxOutputTokens > 0 {
		maxTokens = min(maxTokens, info.MaxOutputTokens)
	}
	req := p.SummaryRequest(model, window, maxTokens, view, split, instructions)
	text, err := r.callSummary(prov, info, req)
	if err != nil {
		if r.ctx.Err() != nil {
			return false
		}
		r.a.log.Warn("the summary could not be written; compacting without it", "model", model, "error", err)
		return r.fallback(trigger, fmt.Sprintf("the summary by %s could not be written (%v)", model, err))
	}
	m := p.Summarized(view, split, r.redact(text))
	r.s.mu.Lock()
	d := r.recordLocked(&m, trigger, "")
	r.s.mu.Unlock()
	d.Model = model
	r.reportCompaction(d)
	return true
}

// fallback is compaction without a summary: old tool results stubbed, all
// but the latest round's, and the middle of the conversation left out
// when that is not enough (or when a compaction was asked for and
// stubbing did nothing).
func (r *run) fallback(trigger compact.Trigger, why string) bool {
	changed := r.apply(trigger, why, func(p *compact.Planner, view []llm.Message) (compact.Marker, bool) {
		return p.Micro(view, 1)
	})
	b := r.a.budget
	if r.currentSize() <= b.Limit() && (changed || trigger == compact.TriggerAuto) {
		return changed
	}
	return r.apply(trigger, "", func(p *compact.Planner, view []llm.Message) (compact.Marker, bool) {
		split := p.Split(view, int(float64(b.Share(p.Config.TailShare))/max(p.Ratio, 1)))
		if split == 0 {
			return compact.Marker{}, false
		}
		return p.Dropped(view, split, why), true
	}) || changed
}

// compactModel is who writes summaries.
func (a *Agent) compactModel() (llm.Provider, string, llm.ModelInfo) {
	prov, model := a.cfg.CompactProvider, a.cfg.CompactModel
	if prov == nil {
		prov = a.cfg.Provider
	}
	if model == "" {
		model = a.cfg.Model
	}
	if a.cfg.CompactModelInfo != nil {
		return prov, model, *a.cfg.CompactModelInfo
	}
	if prov == a.cfg.Provider && model == a.cfg.Model {
		info := a.info
		info.ContextWindow = a.budget.Window
		return prov, model, info
	}
	return prov, model, llm.DefaultCatalog().Lookup(prov.Name(), model)
}

// callSummary streams the summary request, retrying what a retry can cure
// (twice at most: the fallback is better than a long wait), and counts
// its cost in the run's and the session's totals.
func (r *run) callSummary(prov llm.Provider, info llm.ModelInfo, req *llm.Request) (string, error) {
	const attempts = 3
	for attempt := 1; ; attempt++ {
		res := llm.Collect(prov.Stream(r.ctx, req))
		cost := info.Cost(res.Usage)
		r.usage.Add(res.Usage)
		r.cost += cost
		r.s.mu.Lock()
		r.s.totals.Usage.Add(res.Usage)
		r.s.totals.CostUSD += cost
		r.s.mu.Unlock()
		o := res.Outcome
		if o.Status == llm.StatusCompleted {
			text := strings.TrimSpace(res.Message.Text())
			if text == "" {
				return "", errors.New("the model wrote an empty summary")
			}
			return text, nil
		}
		err := o.Err
		if err == nil {
			err = errors.New(nonEmptyString(o.Message, "the summary call ended with status "+string(o.Status)))
		}
		if !o.Retryable() || attempt >= attempts || r.ctx.Err() != nil {
			return "", err
		}
		t := time.NewTimer(backoff(r.a.cfg.Retry, attempt, o.RetryAfter))
		select {
		case <-r.ctx.Done():
			t.Stop()
			return "", r.ctx.Err()
		case <-t.C:
		}
	}
}

// compactTooLong compacts after the provider refused the prompt as over
// the window: the refusal recalibrates the estimate (the prompt was at
// least the window, plus the token gap when the provider gave one), then
// the summary level runs and the guards make sure of the rest. It reports
// whether the conversation changed.
func (r *run) compactTooLong(e *llm.Error) bool {
	b := r.a.budget
	r.s.mu.Lock()
	actual := max(r.s.cw.acct.Estimate(r.est), b.Window) + max(e.TokenGap, 1)
	r.s.cw.acct.Observe(r.est, actual)
	r.s.mu.Unlock()
	changed := r.summarize(compact.TriggerPromptTooLong, "")
	return r.guard(compact.TriggerPromptTooLong) || changed
}

// preCompactHooks runs the pre_compact hooks before a summary: their
// additional context is added to the summary's instructions; a deny or a
// stop skips an automatic compaction.
func (r *run) preCompactHooks(trigger compact.Trigger, instructions string) (string, bool) {
	m := r.hooks(hook.PreCompact)
	if m == nil {
		return instructions, false
	}
	in := r.hookInput(hook.PreCompact)
	source := "auto"
	if trigger == compact.TriggerManual {
		source = "manual"
	}
	in.Extra = map[string]any{"trigger": source, "custom_instructions": instructions}
	r.s.mu.Lock()
	in.MessageCount = len(r.s.messages)
	r.s.mu.Unlock()
	out := m.Run(r.ctx, in)
	if out.AdditionalContext != "" {
		instructions = strings.TrimSpace(instructions + "\n" + out.AdditionalContext)
	}
	return instructions, out.Verdict == hook.Deny || out.Stop
}

// capRound cuts the results of the round just added to the history to
// their share of the window.
func (r *run) capRound() {
	if r.a.ctxCfg.Off {
		return
	}
	// Planned in place rather than through apply: this runs after every
	// round, and most rounds are under their caps (no allocation then).
	r.s.mu.Lock()
	p := compact.Planner{Config: r.a.ctxCfg, Budget: r.a.budget, Ratio: r.s.cw.acct.Ratio(), Recall: r.a.recall}
	m, ok := p.CapRound(r.s.messages, len(r.s.messages)-1)
	if !ok {
		r.s.mu.Unlock()
		return
	}
	d := r.recordLocked(&m, compact.TriggerAuto, "")
	r.s.mu.Unlock()
	r.reportCompaction(d)
}

// account calibrates the estimate with what the provider counted for the
// call just made and returns the window's use, for turn_end.
func (r *run) account(u llm.Usage) *ContextUsage {
	b := r.a.budget
	reported := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	r.s.mu.Lock()
	if reported > 0 {
		r.s.cw.acct.Observe(r.est, reported)
	} else {
		reported = r.s.cw.acct.Estimate(r.est)
	}
	r.s.mu.Unlock()
	used := reported + u.OutputTokens
	return &ContextUsage{UsedTokens: used, Window: b.Window, Limit: b.Limit(),
		Percent: math.Round(1000*float64(used)/float64(max(b.Window, 1))) / 10}
}

// warn emits token_warning for each threshold cu passed that the session
// had not.
func (r *run) warn(cu *ContextUsage) bool {
	b := r.a.budget
	var fire []float64
	r.s.mu.Lock()
	for r.s.cw.warned < len(compact.WarnAt) && cu.UsedTokens >= b.Share(compact.WarnAt[r.s.cw.warned]) {
		fire = append(fire, compact.WarnAt[r.s.cw.warned])
		r.s.cw.warned++
	}
	r.s.mu.Unlock()
	for _, th := range fire {
		if o := r.a.obs.Events; o != nil {
			data := map[string]any{"model": r.a.cfg.Model, "used_tokens": cu.UsedTokens, "window": cu.Window, "threshold": th}
			r.safely(func() { o.Event(observe.EventTokenWarning, data) })
		}
		if !r.emit(EventTokenWarning, TokenWarningData{UsedTokens: cu.UsedTokens, Window: cu.Window, Limit: cu.Limit, Threshold: th}) {
			return false
		}
	}
	return true
}

// Compact compacts the conversation now, whatever its size (/compact,
// POST /v1/sessions/{id}/compact): the summary level, with instructions
// added to the summary's prompt, then the guards. It waits for a run in
// progress and returns the compactions it made (none when the
// conversation is too short to compact).
func (s *Session) Compact(ctx context.Context, instructions string) ([]CompactionData, error) {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var out []CompactionData
	r := &run{s: s, a: s.agent, ctx: ctx, cancel: cancel, polCtx: ctx, yield: func(ev Event, _ error) bool {
		if d, ok := ev.Data.(CompactionData); ok {
			out = append(out, d)
		}
		return true
	}}
	s.mu.Lock()
	var repairs int
	s.messages, repairs = repairHistory(s.messages)
	n := len(s.messages)
	s.mu.Unlock()
	r.repaired(repairs)
	if n < 3 {
		return nil, nil
	}
	req := r.request()
	r.fixed = compact.EstimateFixed(req.System, req.Tools)
	r.summarize(compact.TriggerManual, instructions)
	r.guard(compact.TriggerManual)
	return out, ctx.Err()
}

// compactedTooLong is compactTooLong for callModel: a compaction that
// changed nothing is a failure (StrictMode.CompactFailure panics).
func (r *run) compactedTooLong(e *llm.Error) bool {
	if r.compactTooLong(e) {
		return true
	}
	r.strictCompact(e)
	return false
}
