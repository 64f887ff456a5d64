// Package agent is weft's loop: a model plans and calls tools, a person
// approves, and every step streams out as a typed Event.
//
// An Agent is configuration; a Session holds one conversation and runs turns
// on it. A run is an iterator (iter.Seq2[Event, error]); breaking out of it
// cancels the run, and it leaves no goroutine behind.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/weft-run/weft/compact"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/prompt"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/vision"
)

// DefaultMaxTurns bounds the model calls of one run (seed 004).
const DefaultMaxTurns = 200

// Config is an agent. Zero values are documented per field.
type Config struct {
	// Provider and Model are required.
	Provider llm.Provider
	Model    string
	// ModelInfo prices turns and bounds output; nil means the default
	// catalogue's entry for Provider.Name() and Model.
	ModelInfo *llm.ModelInfo
	// System is the system prompt.
	System string
	// Tools the model may call; nil means none.
	Tools *tool.Registry
	// MaxTurns bounds model calls per run; 0 means DefaultMaxTurns.
	MaxTurns int
	// MaxTokens per model call; 0 means the model's maximum output.
	MaxTokens     int
	Thinking      llm.ThinkingLevel
	StopSequences []string
	Temperature   *float64
	// Policy decides every tool call before it runs (schema, hooks, rules,
	// mode), redacts secrets and audits; see package policy. nil means the
	// zero Policy: default mode, no rules or hooks, so read-only tools run
	// and every other call asks Approve.
	Policy *policy.Policy
	// Approve is the human of the policy: it is asked, at most once per
	// call, about the calls the policy did not settle. nil denies them: an
	// agent with no approver runs only what its policy allows outright.
	Approve ApproveFunc
	// Checkpoint confirms calls of tools that require a checkpoint
	// (irreversible actions); nil denies them ("tool execution denied at
	// checkpoint").
	Checkpoint policy.Checkpoint
	// Retry bounds retries of failed model calls.
	Retry RetryPolicy
	// Budget bounds spend (USD, tokens) per run or per session, checked
	// before every model call, and sets the session cost alerts; see
	// Budget. The zero value has no limits.
	Budget Budget
	// ApproveBudget is asked when the next model call would pass the
	// budget: allow with new limits, or stop. nil stops the run
	// (stop_reason "budget").
	ApproveBudget BudgetApproveFunc
	// OnUsage is told every completed model call's usage and cost (the
	// numbers of its turn_end, with model and time), on the run's
	// goroutine, for cost history; it should not block. nil means none.
	OnUsage func(ctx context.Context, u CallUsage)
	// Observer receives what the engine does, for monitoring (package
	// observe): model calls, retries, tool calls, permission decisions,
	// guardrail refusals, run ends; metrics and spans when it takes them.
	// nil means observe.Noop, which costs nothing. The loop guards
	// themselves are configured in Policy.Guardrails.
	Observer observe.Observer
	// StrictMode turns the engine's silent repairs into panics, for tests;
	// nil (production) repairs.
	StrictMode *StrictMode
	// OnPromptTooLong is asked for a shorter history when the provider
	// says the prompt is over the model's context window; the call is then
	// sent once more with it. nil (or a false answer) ends the turn with
	// an error naming the token gap when the provider gave one. It is the
	// seam where compaction plugs in.
	OnPromptTooLong func(ctx context.Context, p PromptTooLong) (messages []llm.Message, ok bool)
	// Context manages the context window (package compact, seed 004 §8;
	// docs/context.md): tool results are cut as they enter the history,
	// old ones stubbed, the middle of the conversation summarised, each
	// at a share of the window. The zero value is on, with the defaults;
	// Context.Off turns compaction off (the accounting stays). Without
	// OnPromptTooLong, a prompt the provider refuses as too long is
	// compacted and sent once more.
	Context compact.Config
	// ContextWindow overrides the catalogue's context window, in tokens;
	// 0 means the catalogue's (llm.UnknownContextWindow when it has
	// none).
	ContextWindow int
	// CompactModel writes the summaries (a cheaper model, say); "" means
	// Model. CompactProvider serves it; nil means Provider.
	CompactModel    string
	CompactProvider llm.Provider
	// CompactModelInfo is the compact model's window and prices; nil
	// means the default catalogue's entry (the agent's own for Model).
	CompactModelInfo *llm.ModelInfo
	// MaxContextMessages keeps at most this many messages in what the
	// model is sent, on top of the token rules (seed 002's
	// WithMaxContext); 0 means no limit.
	MaxContextMessages int
	// PromptCache is passed to every model call as llm.Request.Cache: the
	// zero value lets providers cache the prompt prefix (Anthropic cache
	// breakpoints, OpenAI's prompt_cache_key); llm.CacheOff turns that off.
	PromptCache llm.CacheMode
	// Logger receives diagnostics; nil means slog.Default().
	Logger *slog.Logger
	// Prompt builds the system prompt for every model call from a bundle
	// of sections (package prompt): weft's prompt for the model's family,
	// the environment, project instructions and skills. nil means System
	// is the whole prompt; with Prompt set, a non-empty System stands in
	// for the bundle's own sections (--system) and the instructions and
	// skills still follow it.
	Prompt *prompt.Builder
	// Bundle picks Prompt's bundle, as "family/scenario" (prompt.ParseKey:
	// the HTTP API's "bundle"); "" means the one for Model's family. An
	// unknown key falls back safely (prompt.Registry.Resolve); a run's
	// prompt.WithBundleKey context wins over it.
	Bundle string
	// Vision describes images for a model the catalogue knows to have no
	// image input: images in the request become its descriptions, or
	// notes saying why they are missing when Vision is nil. Models the
	// catalogue does not know get images as they are.
	Vision *vision.Describer
	// MaxSubagents bounds the sub-agents of one session that run at once
	// (Spawn, the Agent tool); further runs wait for a slot. 0 means
	// DefaultMaxSubagents (4).
	MaxSubagents int
	// SubagentEvents receives the subagent_* events that cannot go into a
	// run's stream: those of background sub-agents, which outlive the tool
	// call that started them, and of sub-agents spawned outside a run
	// (Session.Spawn). It is called from the sub-agents' goroutines, so it
	// must be safe for concurrent use. nil drops them (a background
	// sub-agent's result is still there for subagent_output).
	SubagentEvents func(Event)
}

// RetryPolicy bounds retries of a model call that failed for a reason a
// retry can cure (llm.Outcome.Retryable: rate limits, overload, 5xx,
// network errors, timeouts, malformed or cut streams). Bad requests,
// unknown models, permission and auth errors, prompts over the context
// window and cancellations are never retried.
type RetryPolicy struct {
	// MaxAttempts per model call, first included; 0 means 5.
	MaxAttempts int
	// BaseDelay doubles per attempt (with ±25% jitter) up to MaxDelay; the
	// server's retry hint wins when longer. 0 means 1 s and 30 s.
	BaseDelay time.Duration
	MaxDelay  time.Duration
}

func (p RetryPolicy) attempts() int {
	if p.MaxAttempts <= 0 {
		return 5
	}
	return p.MaxAttempts
}

// PromptTooLong is what Config.OnPromptTooLong is given.
type PromptTooLong struct {
	// Messages is the history that was sent.
	Messages []llm.Message
	// Err is the provider's error; Err.TokenGap is how many tokens the
	// prompt is over, when the provider said.
	Err *llm.Error
	// ContextWindow is the model's window from the catalogue (0 if
	// unknown).
	ContextWindow int
}

// Agent is a validated Config.
type Agent struct {
	cfg    Config
	info   llm.ModelInfo
	log    *slog.Logger
	pol    *policy.Policy
	bundle prompt.BundleKey // Config.Bundle, parsed
	obs    observe.Parts
	sub    *subInfo // set for a sub-agent's agent
	// The context window's management (context.go).
	ctxCfg compact.Config
	budget compact.Budget
	recall bool // the model has the Recall tool
}

// New validates cfg.
func New(cfg Config) (*Agent, error) {
	if cfg.Provider == nil {
		return nil, errors.New("agent: Config.Provider is required")
	}
	if cfg.Model == "" {
		return nil, errors.New("agent: Config.Model is required")
	}
	if cfg.MaxTurns < 0 {
		return nil, fmt.Errorf("agent: MaxTurns %d is negative", cfg.MaxTurns)
	}
	if cfg.MaxTurns == 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	if err := cfg.Budget.validate(); err != nil {
		return nil, err
	}
	bundle, err := prompt.ParseKey(cfg.Bundle)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a := &Agent{cfg: cfg, log: cfg.Logger, bundle: bundle}
	if a.log == nil {
		a.log = slog.Default()
	}
	// The agent works on its own copy: the caller's Policy may be shared.
	pol := policy.Policy{}
	if cfg.Policy != nil {
		pol = *cfg.Policy
	}
	if pol.Validate == nil && cfg.Tools != nil {
		pol.Validate = cfg.Tools.Validate
	}
	if pol.Logger == nil {
		pol.Logger = a.log
	}
	a.pol = &pol
	a.obs = observe.Resolve(cfg.Observer)
	if cfg.ModelInfo != nil {
		a.info = *cfg.ModelInfo
	} else {
		a.info = llm.DefaultCatalog().Lookup(cfg.Provider.Name(), cfg.Model)
	}
	a.initContext()
	return a, nil
}

// Config returns the agent's configuration.
func (a *Agent) Config() Config { return a.cfg }

// ModelInfo is what the agent prices turns with.
func (a *Agent) ModelInfo() llm.ModelInfo { return a.info }

// Run runs prompt in a fresh session: the one-shot form.
func (a *Agent) Run(ctx context.Context, prompt string) func(yield func(Event, error) bool) {
	return a.NewSession().Run(ctx, prompt)
}

// ApproveFunc decides whether a tool call may run. It is called exactly
// once per call, before the call runs, and may block (asking a person); it
// must honour ctx. A panic or an error counts as a denial.
type ApproveFunc func(ctx context.Context, req ApprovalRequest) Decision

// ApprovalRequest is a tool call awaiting approval.
type ApprovalRequest struct {
	ID       string
	ToolName string
	Input    []byte
	Spec     tool.Spec
	// Reason says why the policy asks (the rule or mode that sent the call
	// to a person).
	Reason string
	// Dangerous: the dangerous-command floor asks; an approver must decide
	// this call alone (no "always allow").
	Dangerous bool
	// Origin is set when a sub-agent makes the call: which sub-agent, and
	// the parent's tool call that started it. nil for the session's own
	// calls.
	Origin *Origin
}

// Decision is an approval answer; the reason of a denial is shown to the
// model.
type Decision struct {
	Allow  bool
	Reason string
}

// Allow and Deny are shorthands.
func Allow() Decision                                    { return Decision{Allow: true} }
func Deny(reason string) Decision                        { return Decision{Reason: reason} }
func AllowAll(context.Context, ApprovalRequest) Decision { return Allow() }

// AllowReadOnly allows read-only tools and denies the rest, for unattended
// runs that must not change anything.
func AllowReadOnly(_ context.Context, req ApprovalRequest) Decision {
	if req.Spec.ReadOnly {
		return Allow()
	}
	return Deny(req.ToolName + " is not read-only and this run only allows read-only tools")
}
