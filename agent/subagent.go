package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"os"
	"path"
	"sync"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/tool"
)

// DefaultMaxSubagents is how many sub-agents of one session run at once
// when Config.MaxSubagents is 0.
const DefaultMaxSubagents = 4

// Errors of Spawn (errors.Is).
var (
	// ErrNestedSubagent: a sub-agent tried to spawn one. Delegation is one
	// level deep (seed 003): a sub-agent's tools never include the Agent
	// tool, and Spawn from its context fails with this.
	ErrNestedSubagent = errors.New("a sub-agent cannot start sub-agents of its own")
	// ErrNoRun: Spawn's context is not a tool call of an agent run.
	ErrNoRun = errors.New("no agent run in the context: Spawn is for tools the agent calls; use Session.Spawn")
	// ErrSubagentClosed: Run on a closed sub-agent.
	ErrSubagentClosed = errors.New("the sub-agent is closed")
)

// SpawnConfig describes a sub-agent. Zero values inherit from the parent.
type SpawnConfig struct {
	// Type names the agent type ("explore", "review", a user's own); it is
	// shown in events and hooks. "" means "general".
	Type string
	// Description is the task in a few words (subagent_start's
	// description).
	Description string
	// Provider and Model pick the sub-agent's model; nil and "" inherit
	// the parent's. A Model without a Provider is a model of the parent's
	// provider. ModelInfo prices it; nil means the catalogue's entry (the
	// parent's own when the model is inherited).
	Provider  llm.Provider
	Model     string
	ModelInfo *llm.ModelInfo
	// Tools names the parent's tools the sub-agent may call: names or
	// path.Match globs ("mcp__github__*"); nil means all of them. The
	// result is always a subset of the parent's tools, and never holds a
	// tool that starts sub-agents (SubagentTool: depth 1) or one that hands
	// the turn to the user (Meta.EndsTurn: nobody answers a sub-agent).
	Tools []string
	// ExcludeTools are left out of them (names or globs).
	ExcludeTools []string
	// System is the sub-agent's system prompt; with the parent's prompt
	// builder set it stands in for weft's own sections (as --system does)
	// and the project's instructions still follow. "" means a generic
	// sub-agent prompt.
	System string
	// MaxTurns bounds the model calls of each run; 0 means the parent's.
	MaxTurns int
	// Background: the sub-agent outlives the tool call that spawns it, so
	// its subagent_* events go to the parent's Config.SubagentEvents from
	// the start rather than into the parent's run.
	Background bool
}

// Origin says where a sub-agent's approval requests and events come from.
type Origin struct {
	SubagentID string `json:"subagent_id"`
	// ToolUseID is the parent's tool call that spawned the sub-agent
	// ("" when it was spawned outside a tool call, by Session.Spawn).
	ToolUseID string `json:"parent_tool_use_id,omitempty"`
	// Type is SpawnConfig.Type.
	Type string `json:"subagent_type,omitempty"`
}

// SubagentTool is implemented by tools that start or drive sub-agents
// (the Agent tool and its companions). A sub-agent is never given them,
// which, with Spawn refusing a sub-agent's context, keeps delegation one
// level deep.
type SubagentTool interface {
	tool.Tool
	SubagentTool()
}

// SubagentResult is how a sub-agent's last run ended.
type SubagentResult struct {
	// Status is SubagentCompleted, SubagentFailed or SubagentCancelled.
	Status string
	// Result is the final text of the run, whole (subagent_end carries it
	// cut to 2 KB).
	Result string
	// Error says why a run did not complete.
	Error    string
	Duration time.Duration
	// StopReason is the run's done stop_reason.
	StopReason string
	Turns      int
	Usage      llm.Usage
	CostUSD    float64
}

// subInfo marks the Agent of a sub-agent and links it to its parent.
type subInfo struct {
	origin Origin
	parent *Session
	// acc is the usage accumulator of the parent run that spawned it (for
	// that run's done totals); nil for background sub-agents.
	acc *usageAcc
}

// usageAcc sums the usage of sub-agents for a run's done event. Sub-agent
// turns end on other goroutines than the run's.
type usageAcc struct {
	mu    sync.Mutex
	usage llm.Usage
	cost  float64
}

func (u *usageAcc) add(us llm.Usage, cost float64) {
	u.mu.Lock()
	u.usage.Add(us)
	u.cost += cost
	u.mu.Unlock()
}

func (u *usageAcc) get() (llm.Usage, float64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.usage, u.cost
}

// toolScope is what a run puts in the context of each tool call: the run,
// the call, and the way into the run's event stream while the call lasts.
// A sub-agent spawned by the call sends its events through it; once the
// call has returned (a background sub-agent outlives it) the scope is
// detached and they go to Config.SubagentEvents instead.
type toolScope struct {
	run    *run
	callID string
	send   func(typ EventType, data any)

	mu       sync.Mutex
	detached bool
}

type toolScopeKey struct{}

func withToolScope(ctx context.Context, sc *toolScope) context.Context {
	return context.WithValue(ctx, toolScopeKey{}, sc)
}

func scopeFrom(ctx context.Context) *toolScope {
	sc, _ := ctx.Value(toolScopeKey{}).(*toolScope)
	return sc
}

// emit sends an event into the call's run; false once the call is over.
// The lock is held while sending so that detach, which the call's worker
// does before it delivers the call's result, waits for an event in
// flight: the run reads events until that result arrives, so the wait
// ends.
func (sc *toolScope) emit(typ EventType, data any) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.detached {
		return false
	}
	sc.send(typ, data)
	return true
}

func (sc *toolScope) detach() {
	sc.mu.Lock()
	sc.detached = true
	sc.mu.Unlock()
}

// FromContext returns the agent whose tool call ctx belongs to: a tool
// that spawns sub-agents reads the parent's model and tools from it.
func FromContext(ctx context.Context) (*Agent, bool) {
	sc := scopeFrom(ctx)
	if sc == nil {
		return nil, false
	}
	return sc.run.a, true
}

// Origin returns the sub-agent origin of a tool call's context: set when
// the call is a sub-agent's.
func OriginFrom(ctx context.Context) (Origin, bool) {
	sc := scopeFrom(ctx)
	if sc == nil || sc.run.a.sub == nil {
		return Origin{}, false
	}
	return sc.run.a.sub.origin, true
}

// Spawn starts a sub-agent of the run whose tool call ctx belongs to (the
// Agent tool calls it): its events go into that run's stream, in the
// call's place, while the call lasts; its approvals go to the run's
// approver tagged with the call. It fails with ErrNoRun outside a tool
// call and ErrNestedSubagent in a sub-agent's.
func Spawn(ctx context.Context, cfg SpawnConfig) (*SubAgent, error) {
	sc := scopeFrom(ctx)
	if sc == nil {
		return nil, ErrNoRun
	}
	return sc.run.s.spawn(cfg, sc)
}

// Spawn starts a sub-agent of the session: its own conversation and cost
// (rolled up into the session's totals), the session's tools filtered by
// cfg.Tools, and the session's policy and approver, every approval
// request tagged with its Origin. It does not call the model: Run does.
// Called from a tool call of this session's run, it is that call's
// sub-agent (see the package-level Spawn).
func (s *Session) Spawn(ctx context.Context, cfg SpawnConfig) (*SubAgent, error) {
	sc := scopeFrom(ctx)
	if sc != nil && sc.run.s != s {
		sc = nil
	}
	return s.spawn(cfg, sc)
}

func (s *Session) spawn(cfg SpawnConfig, sc *toolScope) (*SubAgent, error) {
	pa := s.agent
	if pa.sub != nil {
		return nil, ErrNestedSubagent
	}
	if cfg.MaxTurns < 0 {
		return nil, fmt.Errorf("spawn: MaxTurns %d is negative", cfg.MaxTurns)
	}
	if cfg.Type == "" {
		cfg.Type = "general"
	}
	pc := pa.cfg
	c := pc // the parent's model, policy, approver, prompt, retries, observer
	c.Tools = subTools(pc.Tools, cfg.Tools, cfg.ExcludeTools)
	c.MaxTurns = cfg.MaxTurns
	if c.MaxTurns == 0 {
		c.MaxTurns = pc.MaxTurns
	}
	switch {
	case cfg.Provider != nil || (cfg.Model != "" && cfg.Model != pc.Model):
		if cfg.Provider != nil {
			c.Provider = cfg.Provider
		}
		if cfg.Model != "" {
			c.Model = cfg.Model
		}
		c.ModelInfo = cfg.ModelInfo
		c.MaxTokens = 0 // the parent's bound may be over this model's
	default:
		info := pa.info
		c.ModelInfo = &info
		if cfg.ModelInfo != nil {
			c.ModelInfo = cfg.ModelInfo
		}
	}
	cwd := pa.pol.Workspace
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	c.System = cfg.System
	if c.System == "" {
		c.System = defaultSubagentPrompt
	}
	if cwd != "" {
		// weft's environment section gives way to System (see
		// Config.Prompt); the sub-agent still needs to know where it is.
		c.System += "\n\nWorking directory: " + cwd
	}
	c.SubagentEvents = pc.SubagentEvents
	id := newSubagentID()
	origin := Origin{SubagentID: id, Type: cfg.Type}
	if sc != nil {
		origin.ToolUseID = sc.callID
	}
	if approve := pc.Approve; approve != nil {
		c.Approve = func(ctx context.Context, req ApprovalRequest) Decision {
			o := origin
			req.Origin = &o
			return approve(ctx, req)
		}
	}
	child, err := New(c)
	if err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	info := &subInfo{origin: origin, parent: s}
	if sc != nil && !cfg.Background {
		info.acc = &sc.run.subUsage
	}
	child.sub = info
	sa := &SubAgent{id: id, cfg: cfg, origin: origin, parent: s, agent: child, sess: child.NewSession()}
	if sc != nil && !cfg.Background {
		sa.scope = sc
	}
	sa.cwd = cwd
	return sa, nil
}

// defaultSubagentPrompt is a sub-agent's system prompt when its type
// gives none.
const defaultSubagentPrompt = `You are a sub-agent: another agent has given you one task. Work on it with the tools you have until it is done, then answer with a complete, self-contained report of what you found or did; that final message is all the other agent will see. Do not ask questions: nobody will answer them.`

// subTools is the parent's registry filtered by patterns (nil: all),
// less exclude and the tools that spawn sub-agents or end the turn for
// the user. The tools are the parent's own instances, in the parent's
// order, sharing their compiled schemas (Registry.Subset: spawning must
// cost next to nothing beside the model calls).
func subTools(parent *tool.Registry, patterns, exclude []string) *tool.Registry {
	if parent == nil {
		return nil
	}
	return parent.Subset(func(t tool.Tool, spec tool.Spec) bool {
		if _, spawns := t.(SubagentTool); spawns || spec.EndsTurn {
			return false
		}
		return (patterns == nil || matchAny(patterns, spec.Name)) && !matchAny(exclude, spec.Name)
	})
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if p == name || p == "*" {
			return true
		}
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}

func newSubagentID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "sa_" + hex.EncodeToString(b[:])
}

// SubAgent is a sub-agent: a conversation of its own, run by Run, one
// prompt after another (seed 003's spawn/run split: a long-lived sub-agent
// takes further prompts, input_subagent). It is safe for concurrent use;
// runs are serialised.
type SubAgent struct {
	id     string
	cfg    SpawnConfig
	origin Origin
	parent *Session
	agent  *Agent
	sess   *Session
	cwd    string
	// scope is the spawning tool call's, for a sub-agent that runs within
	// it; nil sends events to Config.SubagentEvents.
	scope *toolScope

	mu      sync.Mutex
	closed  bool
	running int // runs in progress (waiting ones included)
	// cancels are the runs in progress', by run; a run removes its own
	// when it ends, so that a long-lived sub-agent does not keep one per
	// prompt it was ever given.
	cancels map[uint64]context.CancelFunc
	nextRun uint64
	last    SubagentResult
}

// ID is the sub-agent's id ("sa_" and 12 hex digits), its subagent_id.
func (sa *SubAgent) ID() string { return sa.id }

// Origin is what its approval requests and events carry.
func (sa *SubAgent) Origin() Origin { return sa.origin }

// Model is the model it runs on.
func (sa *SubAgent) Model() string { return sa.agent.cfg.Model }

// Tools are the tools it may call.
func (sa *SubAgent) Tools() *tool.Registry { return sa.agent.cfg.Tools }

// Messages is its conversation.
func (sa *SubAgent) Messages() []llm.Message { return sa.sess.Messages() }

// Totals are its own usage and cost (also counted in the parent's).
func (sa *SubAgent) Totals() Totals { return sa.sess.Totals() }

// Running reports whether a run is in progress.
func (sa *SubAgent) Running() bool {
	sa.mu.Lock()
	defer sa.mu.Unlock()
	return sa.running > 0
}

// Last is how its last run ended (zero before the first has).
func (sa *SubAgent) Last() SubagentResult {
	sa.mu.Lock()
	defer sa.mu.Unlock()
	return sa.last
}

// Close ends the sub-agent: a run in progress is cancelled (its
// subagent_end says cancelled) and no further run starts. It does not
// wait for the run to wind down, so that a run's own consumer may call
// it; it is idempotent.
func (sa *SubAgent) Close() error {
	sa.mu.Lock()
	sa.closed = true
	cancels := sa.cancels
	sa.cancels = nil
	sa.mu.Unlock()
	// Outside the lock: a run's deferred clean-up takes it.
	for _, c := range cancels {
		c()
	}
	return nil
}

// Run sends the sub-agent a prompt and streams its run: the sub-agent's
// own events, as Session.Run yields them. The parent sees the run as
// subagent_start, a subagent_event for each event but the text and
// thinking deltas, and subagent_end, which is sent on every exit path:
// completion, error, cancellation, a consumer that stops early, Close, a
// panic. A run waits for one of the parent session's sub-agent slots
// (Config.MaxSubagents) after subagent_start.
func (sa *SubAgent) Run(ctx context.Context, prompt string) iter.Seq2[Event, error] {
	return sa.RunMessage(ctx, llm.UserText(prompt))
}

// RunMessage is Run with a full user message.
func (sa *SubAgent) RunMessage(ctx context.Context, msg llm.Message) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		sa.mu.Lock()
		if sa.closed {
			sa.mu.Unlock()
			if yield(Event{Type: EventError, Data: ErrorData{Error: ErrSubagentClosed.Error()}}, ErrSubagentClosed) {
				yield(Event{Type: EventDone, Data: DoneData{StopReason: StopError}}, nil)
			}
			return
		}
		sa.running++
		if sa.cancels == nil {
			sa.cancels = map[uint64]context.CancelFunc{}
		}
		sa.nextRun++
		runID := sa.nextRun
		sa.cancels[runID] = cancel
		sa.mu.Unlock()
		defer func() {
			sa.mu.Lock()
			delete(sa.cancels, runID)
			sa.mu.Unlock()
		}()

		start := time.Now()
		res := SubagentResult{Status: SubagentCancelled}
		sa.emit(EventSubagentStart, SubagentStartData{
			SubagentID: sa.id, Description: sa.cfg.Description, Cwd: sa.cwd, Model: sa.agent.cfg.Model,
			StartTimeMS: start.UnixMilli(), ParentToolUseID: sa.origin.ToolUseID, SubagentType: sa.origin.Type,
		})
		defer func() {
			p := recover()
			if p != nil {
				res.Status, res.Error = SubagentFailed, fmt.Sprintf("the sub-agent panicked: %v", p)
			}
			sa.finish(start, res)
			if p != nil {
				panic(p)
			}
		}()

		release, ok := sa.parent.acquireSubagent(ctx)
		if !ok {
			res.StopReason = StopCancelled
			yield(Event{Type: EventDone, Data: DoneData{StopReason: StopCancelled}}, nil)
			return
		}
		defer release()
		for ev, err := range sa.sess.RunMessage(ctx, msg) {
			switch d := ev.Data.(type) {
			case DoneData:
				res.Result, res.StopReason, res.Turns = d.Text, d.StopReason, d.TurnCount
				res.Usage = llm.Usage{InputTokens: d.TotalInputTokens, OutputTokens: d.TotalOutputTokens,
					CacheReadTokens: d.TotalCacheReadTokens, CacheWriteTokens: d.TotalCacheWriteTokens}
				res.CostUSD = d.CostUSD
				res.Status, res.Error = subagentStatus(d.StopReason, res.Error, sa.agent.cfg.MaxTurns)
			case ErrorData:
				res.Error = d.Error
			}
			if ev.Type != EventTextDelta && ev.Type != EventThinkingDelta {
				sa.emit(EventSubagentEvent, SubagentEventData{SubagentID: sa.id, ParentToolUseID: sa.origin.ToolUseID, Event: ev})
			}
			if !yield(ev, err) {
				res.Status = SubagentCancelled
				if res.Error == "" {
					res.Error = "the sub-agent's run was stopped before it ended"
				}
				return
			}
		}
	}
}

// subagentStatus maps a run's stop reason to subagent_end's status.
func subagentStatus(stop, errMsg string, maxTurns int) (string, string) {
	switch stop {
	case StopEndTurn, StopSequence:
		return SubagentCompleted, ""
	case StopCancelled:
		return SubagentCancelled, nonEmptyString(errMsg, "cancelled")
	case StopMaxTurns:
		return SubagentFailed, fmt.Sprintf("the sub-agent reached its limit of %d model calls before finishing", maxTurns)
	case StopStuck:
		return SubagentFailed, "the sub-agent was stopped: every tool call kept failing"
	}
	return SubagentFailed, nonEmptyString(errMsg, "the sub-agent's run failed")
}

// finish records the run's end and sends subagent_end.
func (sa *SubAgent) finish(start time.Time, res SubagentResult) {
	res.Duration = time.Since(start)
	if res.Status == SubagentCancelled && res.Error == "" {
		res.Error = "cancelled"
	}
	sa.mu.Lock()
	sa.running--
	sa.last = res
	sa.mu.Unlock()
	sa.emit(EventSubagentEnd, SubagentEndData{
		SubagentID: sa.id, DurationMS: res.Duration.Milliseconds(), Status: res.Status,
		Result: capResult(res.Result), Error: res.Error, ParentToolUseID: sa.origin.ToolUseID,
	})
}

// emit sends a subagent_* event to the parent: into the spawning call's
// run while the call lasts, else to Config.SubagentEvents.
func (sa *SubAgent) emit(typ EventType, data any) {
	if sc := sa.scope; sc != nil && sc.emit(typ, data) {
		return
	}
	if fn := sa.parent.agent.cfg.SubagentEvents; fn != nil {
		// The model wrote the description; no stream carries a secret.
		fn(Event{Type: typ, Data: secret.Redacted(sa.parent.agent.pol.Secrets, data)})
	}
}

type subSlotsKey struct{}

// acquireSubagent takes one of the conversation's sub-agent slots,
// waiting for one while Config.MaxSubagents sub-agents run; false when
// ctx ended first. The slots are kept with the tools' state, which a
// resumed session carries over (ResumeSessionWith): under a front door
// that builds a session per turn, a background sub-agent of an earlier
// turn still holds its slot.
func (s *Session) acquireSubagent(ctx context.Context) (release func(), ok bool) {
	slots := s.tools.Attach(subSlotsKey{}, func() any {
		n := s.agent.cfg.MaxSubagents
		if n <= 0 {
			n = DefaultMaxSubagents
		}
		return make(chan struct{}, n)
	}).(chan struct{})
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, true
	case <-ctx.Done():
		return nil, false
	}
}

// addSubagentUsage counts a sub-agent's model call in the session's
// totals: what a budget over the session sees.
func (s *Session) addSubagentUsage(u llm.Usage, cost float64) {
	s.mu.Lock()
	s.totals.Usage.Add(u)
	s.totals.CostUSD += cost
	s.mu.Unlock()
}

// rollUp passes a sub-agent's model call on to its parent: the parent
// session's totals and, for a sub-agent run within a tool call, the
// parent run's done totals.
func (r *run) rollUp(u llm.Usage, cost float64) {
	sub := r.a.sub
	if sub == nil {
		return
	}
	sub.parent.addSubagentUsage(u, cost)
	if sub.acc != nil {
		sub.acc.add(u, cost)
	}
}
