// Package subagent gives a model the Agent tool: it hands a task to a
// sub-agent (agent.Spawn) of one of the agent types, which works on it
// with a conversation of its own and answers; several Agent calls in one
// turn run in parallel. Types are Markdown files in Claude Code's format:
// weft's own five (general, explore, plan, review, test) and the user's
// and the project's (~/.weft/agents, .weft/agents, .claude/agents).
//
// A sub-agent started with run_in_background returns its id at once and
// runs as a task of the task registry; subagent_output waits for its
// answer, subagent_input gives it a further prompt and subagent_kill
// stops it.
package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/task"
	"github.com/weft-run/weft/tool"
)

// Tool names.
const (
	AgentToolName  = "Agent"
	OutputToolName = "subagent_output"
	InputToolName  = "subagent_input"
	KillToolName   = "subagent_kill"
)

// Defaults of Config.
const (
	DefaultMaxAnswer     = 20000
	DefaultMaxBackground = 8
	// MaxWait caps subagent_output's timeout_ms.
	MaxWait = 10 * time.Minute
	// killWait is how long subagent_kill waits for the run to wind down.
	killWait = 10 * time.Second
)

// Config configures the sub-agent tools. The zero value gives the Agent
// tool with weft's own types and no background sub-agents.
type Config struct {
	// Types are the agent types the model may pick; nil means Builtin().
	// Load reads the user's and the project's as well.
	Types []Type
	// Tasks runs background sub-agents (run_in_background) and lists
	// them; nil leaves run_in_background and the subagent_* tools out.
	Tasks *task.Registry
	// Resolve turns a model spec ("anthropic:claude-haiku-4-5", or an
	// alias mapped onto the parent's provider) into a provider; nil means
	// a type's model is taken as a model id of the parent's provider.
	Resolve func(spec string) (llm.Provider, llm.ModelInfo, error)
	// MaxAnswer bounds, in characters, the final answer the Agent tool and
	// subagent_output return to the model; longer ones are cut with a
	// marker. 0 means DefaultMaxAnswer.
	MaxAnswer int
	// MaxBackground bounds the background sub-agents one session keeps
	// (running or waiting for input); beyond it a new one takes the place
	// of the one idle longest, and run_in_background is refused while all
	// of them work. 0 means DefaultMaxBackground.
	MaxBackground int
	// Logger; nil discards.
	Logger *slog.Logger
}

// Manager holds the agent types and the live background sub-agents. It
// is safe for concurrent use.
type Manager struct {
	cfg   Config
	log   *slog.Logger
	types []Type

	mu sync.Mutex
	bg map[string]*background
}

// background is a background sub-agent. owner is the tool state of the
// session that started it: only that session's calls may reach it (the
// server's sessions share one Manager).
type background struct {
	sa    *agent.SubAgent
	owner *tool.Session
	typ   string
	desc  string

	mu     sync.Mutex
	taskID string // of its current (or last) run
	// lastUsed is when a run started or its answer was read: the one
	// unused longest gives way first (makeRoom).
	lastUsed time.Time
}

// New returns a Manager.
func New(cfg Config) *Manager {
	if cfg.Types == nil {
		cfg.Types = Builtin()
	}
	if cfg.MaxAnswer <= 0 {
		cfg.MaxAnswer = DefaultMaxAnswer
	}
	if cfg.MaxBackground <= 0 {
		cfg.MaxBackground = DefaultMaxBackground
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, log: log, types: cfg.Types, bg: map[string]*background{}}
}

// Types returns the agent types, sorted by name.
func (m *Manager) Types() []Type { return append([]Type(nil), m.types...) }

// Close closes every background sub-agent (their runs are cancelled).
func (m *Manager) Close() {
	m.mu.Lock()
	bg := m.bg
	m.bg = map[string]*background{}
	m.mu.Unlock()
	for _, b := range bg {
		_ = b.sa.Close()
	}
}

// marked is a tool a sub-agent never gets (agent.SubagentTool).
type marked struct{ tool.Tool }

func (marked) SubagentTool() {}

// Tools returns Agent and, with Config.Tasks, subagent_output,
// subagent_input and subagent_kill.
func (m *Manager) Tools() []tool.Tool {
	out := []tool.Tool{marked{tool.Func(AgentToolName, m.agentDescription(),
		// Agent itself changes nothing: every call its sub-agent makes goes
		// through the policy on its own. No timeout: the sub-agent's turn
		// limit and cancellation bound it.
		tool.Meta{ReadOnly: true, ConcurrencySafe: true, Effect: tool.EffectRead, Permission: tool.ClassGeneric,
			Timeout: -1, OutputCap: m.cfg.MaxAnswer + 1000},
		m.agentTool)}}
	if m.cfg.Tasks == nil {
		return out
	}
	return append(out,
		marked{tool.Func(OutputToolName,
			"Returns a background sub-agent's state and, once its run has ended, its final answer. "+
				"With timeout_ms it waits up to that long (at most 600000) for the run to end; a sub-agent still working is reported as running.",
			tool.Meta{ReadOnly: true, ConcurrencySafe: true, Effect: tool.EffectRead, Permission: tool.ClassGeneric,
				Timeout: MaxWait + 30*time.Second, OutputCap: m.cfg.MaxAnswer + 1000},
			m.outputTool)},
		marked{tool.Func(InputToolName,
			"Sends a further prompt to a background sub-agent whose run has ended (it keeps its conversation) and returns at once; "+
				"wait for the answer with subagent_output. A sub-agent still working must be waited for or killed first.",
			tool.Meta{ReadOnly: true, ConcurrencySafe: true, Effect: tool.EffectRead, Permission: tool.ClassGeneric},
			m.inputTool)},
		marked{tool.Func(KillToolName,
			"Stops a background sub-agent: its run is cancelled and it takes no further prompts. Returns its last answer, if any.",
			// Stopping the session's own sub-agent touches nothing outside
			// it (what it did stays done): no approval, as for Agent.
			tool.Meta{ReadOnly: true, ConcurrencySafe: true, Effect: tool.EffectRead, Permission: tool.ClassGeneric, Timeout: killWait + 10*time.Second},
			m.killTool)},
	)
}

func (m *Manager) agentDescription() string {
	var b strings.Builder
	b.WriteString(`Launches a sub-agent: a new agent with a conversation of its own that works on a task autonomously, with tools, and reports back. Use it for complex, multi-step tasks, for searches that may take several rounds, and to keep long explorations out of your own context.

Available agent types (subagent_type) and their tools:
`)
	for _, t := range m.types {
		tools := "all of yours"
		if t.Tools != nil {
			tools = strings.Join(t.Tools, ", ")
		}
		fmt.Fprintf(&b, "- %s: %s (Tools: %s)\n", t.Name, t.Description, tools)
	}
	b.WriteString(`
Usage notes:
- The sub-agent sees only your prompt, not this conversation: give it everything it needs (the goal, file paths, what you know already) and say exactly what it should report back.
- Launch independent sub-agents at once, with several Agent calls in one message: they run in parallel.
- Its final message comes back to you as the result; the user does not see it, so tell the user what matters.
- Say whether it should only research or also change code: it cannot know your intent.
- Sub-agents cannot start sub-agents of their own.`)
	if m.cfg.Tasks != nil {
		b.WriteString(`
- run_in_background: true returns a subagent_id at once and the sub-agent works while you go on; get its answer with subagent_output, send it a further prompt with subagent_input, stop it with subagent_kill.`)
	}
	return b.String()
}

type agentInput struct {
	Description     string `json:"description" jsonschema:"a short (3-5 word) description of the task"`
	Prompt          string `json:"prompt" jsonschema:"the task for the sub-agent: everything it needs to know, and what to report back"`
	SubagentType    string `json:"subagent_type,omitempty" jsonschema:"the agent type to use (default general)"`
	Model           string `json:"model,omitempty" jsonschema:"optional model for the sub-agent: inherit (the default), sonnet, opus, haiku, or a model id of the current provider"`
	RunInBackground bool   `json:"run_in_background,omitempty" jsonschema:"return a subagent_id at once and let the sub-agent work in the background (see subagent_output)"`
}

// maxDescription bounds, in characters, the description an Agent call
// gives (meant to be 3-5 words): it goes into every subagent_start and
// the task list.
const maxDescription = 200

// typeAliases are Claude Code's names of weft's builtin types.
var typeAliases = map[string]string{"general-purpose": "general"}

func (m *Manager) lookupType(name string) (Type, bool) {
	name = strings.TrimSpace(name)
	if name == "" {
		name = "general"
	}
	if a, ok := typeAliases[strings.ToLower(name)]; ok {
		name = a
	}
	for _, t := range m.types {
		if strings.EqualFold(t.Name, name) {
			return t, true
		}
	}
	return Type{}, false
}

func (m *Manager) typeNames() string {
	names := make([]string, len(m.types))
	for i, t := range m.types {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// spawnConfig is the SpawnConfig of an Agent call.
func (m *Manager) spawnConfig(ctx context.Context, in agentInput) (agent.SpawnConfig, error) {
	t, ok := m.lookupType(in.SubagentType)
	if !ok {
		return agent.SpawnConfig{}, fmt.Errorf("unknown subagent_type %q; the types are: %s", in.SubagentType, m.typeNames())
	}
	cfg := agent.SpawnConfig{Type: t.Name, Description: cutDescription(strings.TrimSpace(in.Description)), Tools: t.Tools,
		ExcludeTools: t.DisallowedTools, System: "[Sub-agent: " + t.Name + "]\n" + t.Prompt, Background: in.RunInBackground}
	// A model the model names, or a project's file does, must be of the
	// parent's provider.
	spec, sameProvider := t.Model, t.Project
	if s := strings.TrimSpace(in.Model); s != "" {
		spec, sameProvider = s, true
	}
	var err error
	cfg.Provider, cfg.Model, cfg.ModelInfo, err = m.model(ctx, spec, sameProvider)
	return cfg, err
}

// claudeAliases are Claude Code's model aliases, for a parent on
// Anthropic.
var claudeAliases = map[string]string{"sonnet": "claude-sonnet-4-5", "opus": "claude-opus-4-5", "haiku": "claude-haiku-4-5"}

// model resolves a type's (or the call's) model: "" and "inherit" are the
// parent's; Claude Code's aliases are mapped onto the parent's provider
// when it is Anthropic and mean the parent's model otherwise (a file
// written for Claude Code then runs on what the user runs); anything else
// is a spec for Config.Resolve. With sameProvider (a model the model
// itself names, or a project's agent file) it must be of the parent's
// provider: the conversation's data goes nowhere the user did not send it.
func (m *Manager) model(ctx context.Context, spec string, sameProvider bool) (llm.Provider, string, *llm.ModelInfo, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || strings.EqualFold(spec, "inherit") {
		return nil, "", nil, nil
	}
	parent, ok := agent.FromContext(ctx)
	if !ok {
		return nil, "", nil, agent.ErrNoRun
	}
	pc := parent.Config()
	pname := pc.Provider.Name()
	if id, ok := claudeAliases[strings.ToLower(spec)]; ok {
		if pname != "anthropic" {
			m.log.Debug("sub-agent model alias kept to the parent's model: the parent is not on Anthropic", "alias", spec, "provider", pname)
			return nil, "", nil, nil
		}
		spec = pname + ":" + id
	}
	if m.cfg.Resolve == nil {
		model := strings.TrimPrefix(spec, pname+":")
		if strings.Contains(model, ":") && sameProvider {
			return nil, "", nil, fmt.Errorf("model %q: pick a model of the current provider (%s)", spec, pname)
		}
		return nil, model, nil, nil
	}
	p, info, err := m.cfg.Resolve(spec)
	if err != nil && !strings.Contains(spec, ":") {
		// A bare id that does not imply its provider: the parent's.
		p, info, err = m.cfg.Resolve(pname + ":" + spec)
	}
	if err != nil {
		return nil, "", nil, fmt.Errorf("model %q: %w", spec, err)
	}
	if sameProvider && p.Name() != pname {
		return nil, "", nil, fmt.Errorf("model %q: pick a model of the current provider (%s)", spec, pname)
	}
	return p, info.ID, &info, nil
}

func (m *Manager) agentTool(ctx context.Context, in agentInput, call *tool.Call) (tool.Result, error) {
	if strings.TrimSpace(in.Prompt) == "" {
		return tool.Errorf("Agent: the prompt is empty: say what the sub-agent should do"), nil
	}
	cfg, err := m.spawnConfig(ctx, in)
	if err != nil {
		return tool.Errorf("Agent: %v", err), nil
	}
	if in.RunInBackground {
		return m.startBackground(ctx, cfg, in.Prompt, call)
	}
	sa, err := agent.Spawn(ctx, cfg)
	if err != nil {
		return tool.Errorf("Agent: %v", err), nil
	}
	defer sa.Close()
	for range sa.Run(ctx, in.Prompt) {
		// The parent's stream has every event already (subagent_event);
		// the answer is in Last.
	}
	return m.answer(sa, sa.Last(), cfg.Type), nil
}

// answer is a finished run as the parent's model sees it: the final
// message, or why there is none.
func (m *Manager) answer(sa *agent.SubAgent, res agent.SubagentResult, typ string) tool.Result {
	data := map[string]any{"subagent_id": sa.ID(), "subagent_type": typ, "status": res.Status,
		"turns": res.Turns, "cost_usd": res.CostUSD, "duration_ms": res.Duration.Milliseconds()}
	text := cutAnswer(strings.TrimSpace(res.Result), m.cfg.MaxAnswer)
	if res.Status == agent.SubagentCompleted {
		if text == "" {
			text = "(the sub-agent finished without a final message)"
		}
		return tool.Result{Content: tool.Text(text).Content, Data: data}
	}
	msg := fmt.Sprintf("The sub-agent (%s, %s) %s: %s", typ, sa.ID(), res.Status, res.Error)
	if text != "" {
		msg += "\n\nIts last message:\n" + text
	}
	return tool.Result{Content: tool.Text(msg).Content, IsError: true, Data: data}
}

func (m *Manager) startBackground(ctx context.Context, cfg agent.SpawnConfig, prompt string, call *tool.Call) (tool.Result, error) {
	if m.cfg.Tasks == nil {
		return tool.Errorf("Agent: background sub-agents are not available here; run it without run_in_background"), nil
	}
	// Counted, made room for and registered under one lock: two Agent
	// calls of one turn run in parallel and must not both take the last
	// place.
	m.mu.Lock()
	evicted, n, ok := m.makeRoom(call.Session)
	if !ok {
		m.mu.Unlock()
		return tool.Errorf("Agent: this session already has %d background sub-agents (the limit), all still working; wait for one with subagent_output or stop one with subagent_kill first", n), nil
	}
	sa, err := agent.Spawn(ctx, cfg)
	if err != nil {
		m.mu.Unlock()
		closeAll(evicted)
		return tool.Errorf("Agent: %v", err), nil
	}
	b := &background{sa: sa, owner: call.Session, typ: cfg.Type, desc: cfg.Description}
	t, err := m.startRun(ctx, b, prompt)
	if err == nil {
		m.bg[sa.ID()] = b
	}
	m.mu.Unlock()
	closeAll(evicted)
	if err != nil {
		_ = sa.Close()
		return tool.Errorf("Agent: %v", err), nil
	}
	return tool.Result{
		Content: tool.Text(fmt.Sprintf("Started sub-agent %s (%s) in the background. subagent_output with subagent_id %q waits for its answer; "+
			"subagent_input sends it a further prompt once it has answered; subagent_kill stops it.", sa.ID(), cfg.Type, sa.ID())).Content,
		Data: map[string]any{"subagent_id": sa.ID(), "subagent_type": cfg.Type, "task_id": t.ID, "status": agent.SubagentRunning},
	}, nil
}

// maxIdle bounds the idle background sub-agents of all sessions together
// (those whose run has ended, kept for subagent_input): a server's
// sessions that never kill theirs must not grow the manager without end.
const maxIdle = 256

// makeRoom makes a place for one more background sub-agent of owner,
// dropping from the map the one idle longest when owner is at its limit,
// and the manager's idle longest when it keeps maxIdle idle ones; the
// caller closes the dropped ones after unlocking. ok is false when owner
// is at its limit with every one still working (n of them). m.mu is held.
func (m *Manager) makeRoom(owner *tool.Session) (dropped []*background, n int, ok bool) {
	var ownIdle, anyIdle *background
	idle := 0
	for _, b := range m.bg {
		busy := m.busy(b)
		if b.owner == owner {
			n++
			if !busy && (ownIdle == nil || b.used().Before(ownIdle.used())) {
				ownIdle = b
			}
		}
		if !busy {
			idle++
			if anyIdle == nil || b.used().Before(anyIdle.used()) {
				anyIdle = b
			}
		}
	}
	if n >= m.cfg.MaxBackground {
		if ownIdle == nil {
			return nil, n, false
		}
		dropped = append(dropped, ownIdle)
		delete(m.bg, ownIdle.sa.ID())
		if ownIdle == anyIdle {
			anyIdle = nil
		}
		idle--
	}
	if idle >= maxIdle && anyIdle != nil {
		dropped = append(dropped, anyIdle)
		delete(m.bg, anyIdle.sa.ID())
	}
	for _, b := range dropped {
		m.log.Debug("background sub-agent dropped to make room", "subagent_id", b.sa.ID())
	}
	return dropped, n, true
}

// busy reports whether b's last run is still going.
func (m *Manager) busy(b *background) bool {
	b.mu.Lock()
	id := b.taskID
	b.mu.Unlock()
	if id == "" {
		return false
	}
	t, err := m.cfg.Tasks.Get(id)
	return err == nil && !t.Done()
}

func (b *background) used() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastUsed
}

func (b *background) touch() {
	b.mu.Lock()
	b.lastUsed = time.Now()
	b.mu.Unlock()
}

func closeAll(bs []*background) {
	for _, b := range bs {
		_ = b.sa.Close()
	}
}

// errBusy: a further prompt for a sub-agent that is still working.
var errBusy = errors.New("still working on its last prompt")

// startRun runs prompt on b's sub-agent as a task, unless its last run
// is still going (errBusy): a sub-agent takes one prompt at a time.
func (m *Manager) startRun(ctx context.Context, b *background, prompt string) (task.Task, error) {
	desc := "sub-agent " + b.sa.ID() + " (" + b.typ + ")"
	if b.desc != "" {
		desc += ": " + b.desc
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.taskID != "" {
		if t, err := m.cfg.Tasks.Get(b.taskID); err == nil && !t.Done() {
			return task.Task{}, errBusy
		}
	}
	t, err := m.cfg.Tasks.SubmitSubagent(ctx, b.sa.ID(), desc, func(ctx context.Context) (json.RawMessage, error) {
		for range b.sa.Run(ctx, prompt) {
		}
		res := b.sa.Last()
		// Its cost is here too: under a front door that builds a session
		// per turn, the session the sub-agent rolls its cost into may be
		// an earlier turn's.
		out, _ := json.Marshal(map[string]any{"subagent_id": b.sa.ID(), "status": res.Status,
			"result": cutAnswer(res.Result, m.cfg.MaxAnswer), "error": res.Error,
			"turns": res.Turns, "cost_usd": res.CostUSD, "input_tokens": res.Usage.InputTokens, "output_tokens": res.Usage.OutputTokens})
		switch res.Status {
		case agent.SubagentCompleted:
			return out, nil
		case agent.SubagentCancelled:
			return out, context.Canceled
		}
		return out, errors.New(res.Error)
	})
	if err != nil {
		return task.Task{}, err
	}
	b.taskID, b.lastUsed = t.ID, time.Now()
	return t, nil
}

func cutDescription(s string) string {
	if r := []rune(s); len(r) > maxDescription {
		return string(r[:maxDescription]) + "..."
	}
	return s
}

// cutAnswer bounds a sub-agent's answer, for the parent's model and the
// task list, saying how much was cut.
func cutAnswer(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + fmt.Sprintf("\n\n[answer cut: %d of %d characters removed]", len(r)-n, len(r))
	}
	return s
}

// lookup finds a background sub-agent of the calling session.
func (m *Manager) lookup(id string, call *tool.Call) (*background, error) {
	id = strings.TrimSpace(id)
	m.mu.Lock()
	b := m.bg[id]
	m.mu.Unlock()
	if b == nil || b.owner != call.Session {
		return nil, fmt.Errorf("no background sub-agent %q in this session (it may have been killed)", id)
	}
	return b, nil
}

func (b *background) task(ctx context.Context, tasks *task.Registry, timeout time.Duration) (task.Task, error) {
	b.mu.Lock()
	id := b.taskID
	b.mu.Unlock()
	return tasks.Output(ctx, id, timeout)
}

type outputInput struct {
	SubagentID string `json:"subagent_id" jsonschema:"the sub-agent's id (from Agent with run_in_background)"`
	TimeoutMs  int    `json:"timeout_ms,omitempty" jsonschema:"how long to wait for its run to end, in milliseconds (0 or omitted: report at once; at most 600000)"`
}

func (m *Manager) outputTool(ctx context.Context, in outputInput, call *tool.Call) (tool.Result, error) {
	if in.TimeoutMs < 0 || time.Duration(in.TimeoutMs)*time.Millisecond > MaxWait {
		return tool.Errorf("subagent_output: timeout_ms must be between 0 and %d", MaxWait.Milliseconds()), nil
	}
	b, err := m.lookup(in.SubagentID, call)
	if err != nil {
		return tool.Errorf("subagent_output: %v", err), nil
	}
	t, err := b.task(ctx, m.cfg.Tasks, time.Duration(in.TimeoutMs)*time.Millisecond)
	if err != nil {
		if ctx.Err() != nil {
			return tool.Errorf("subagent_output: cancelled while waiting"), nil
		}
		return tool.Errorf("subagent_output: %v", err), nil
	}
	if !t.Done() {
		msg := fmt.Sprintf("Sub-agent %s (%s) is still working.", b.sa.ID(), b.typ)
		if in.TimeoutMs > 0 {
			msg = fmt.Sprintf("Sub-agent %s (%s) is still working after %d ms.", b.sa.ID(), b.typ, in.TimeoutMs)
		}
		return tool.Result{Content: tool.Text(msg).Content,
			Data: map[string]any{"subagent_id": b.sa.ID(), "status": agent.SubagentRunning, "task_id": t.ID}}, nil
	}
	b.touch()
	res := m.answer(b.sa, b.sa.Last(), b.typ)
	res.Data["task_id"] = t.ID
	return res, nil
}

type inputInput struct {
	SubagentID string `json:"subagent_id" jsonschema:"the sub-agent's id"`
	Prompt     string `json:"prompt" jsonschema:"the further prompt; the sub-agent still has its conversation"`
}

func (m *Manager) inputTool(ctx context.Context, in inputInput, call *tool.Call) (tool.Result, error) {
	if strings.TrimSpace(in.Prompt) == "" {
		return tool.Errorf("subagent_input: the prompt is empty"), nil
	}
	b, err := m.lookup(in.SubagentID, call)
	if err != nil {
		return tool.Errorf("subagent_input: %v", err), nil
	}
	t, err := m.startRun(ctx, b, in.Prompt)
	if errors.Is(err, errBusy) {
		return tool.Errorf("subagent_input: sub-agent %s is still working on its last prompt; wait for it with subagent_output (or stop it with subagent_kill) first", b.sa.ID()), nil
	}
	if err != nil {
		return tool.Errorf("subagent_input: %v", err), nil
	}
	return tool.Result{
		Content: tool.Text(fmt.Sprintf("Sent. Sub-agent %s is working on it in the background; wait for its answer with subagent_output.", b.sa.ID())).Content,
		Data:    map[string]any{"subagent_id": b.sa.ID(), "status": agent.SubagentRunning, "task_id": t.ID},
	}, nil
}

type killInput struct {
	SubagentID string `json:"subagent_id" jsonschema:"the sub-agent's id"`
}

func (m *Manager) killTool(ctx context.Context, in killInput, call *tool.Call) (tool.Result, error) {
	b, err := m.lookup(in.SubagentID, call)
	if err != nil {
		return tool.Errorf("subagent_kill: %v", err), nil
	}
	m.mu.Lock()
	delete(m.bg, b.sa.ID())
	m.mu.Unlock()
	_ = b.sa.Close()
	b.mu.Lock()
	id := b.taskID
	b.mu.Unlock()
	_ = m.cfg.Tasks.Kill(id)
	t, err := m.cfg.Tasks.Output(ctx, id, killWait)
	if err != nil && !errors.Is(err, task.ErrUnknownTask) {
		return tool.Errorf("subagent_kill: %v", err), nil
	}
	msg := fmt.Sprintf("Sub-agent %s (%s) was stopped; it takes no further prompts.", b.sa.ID(), b.typ)
	if t.ID != "" && !t.Done() {
		msg = fmt.Sprintf("Sub-agent %s (%s) was told to stop and takes no further prompts; its run had not wound down after %s.", b.sa.ID(), b.typ, killWait)
	}
	if last := strings.TrimSpace(b.sa.Last().Result); last != "" {
		msg += "\n\nIts last message:\n" + last
	}
	return tool.Result{Content: tool.Text(msg).Content, Data: map[string]any{"subagent_id": b.sa.ID(), "status": agent.SubagentCancelled}}, nil
}
