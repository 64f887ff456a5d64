// Package run is the run service: plan-and-execute runs (planning, plan
// and step approval gates, steps through the policy pipeline, their event
// log), saved workflows (CRUD, published as tools), batches, replay
// (resume, fork, rewind) and the background work that starts runs (task
// registry and scheduler: Background). Its questions and gates go through
// the approval broker it shares with the session service.
package run

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/eventlog"
	"github.com/weft-run/weft/internal/approval"
	"github.com/weft-run/weft/internal/lease"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/plan"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/workflow"
)

// Errors front doors map onto statuses (errors.Is).
var (
	ErrNotFound  = record.ErrNotFound   // unknown run, workflow or question
	ErrAnswered  = approval.ErrAnswered // a second answer
	ErrClosed    = record.ErrClosed
	ErrForbidden = record.ErrForbidden
)

// ModelResolver turns a model spec ("provider:model") into a provider.
// *registry.Registry implements it.
type ModelResolver interface {
	Resolve(spec string) (llm.Provider, llm.ModelInfo, error)
}

// The run and workflow types front doors see.
type (
	Run             = record.Run
	RunQuery        = record.RunQuery
	RunPage         = record.RunPage
	StepResult      = record.StepResult
	Workflow        = record.Workflow
	Plan            = plan.Plan
	PlanStep        = plan.Step
	ValidationError = plan.ValidationError
	PlanProblem     = plan.Problem
)

// Run statuses (store's).
const (
	RunPlanning         = record.RunPlanning
	RunAwaitingApproval = record.RunAwaitingApproval
	RunRunning          = record.RunRunning
	RunCompleted        = record.RunCompleted
	RunFailed           = record.RunFailed
	RunCancelled        = record.RunCancelled
	RunInterrupted      = record.RunInterrupted
	RunStoppedOnBudget  = record.RunBudget
)

// Run event types (seed 001's, plus what weft adds: permission_request and
// checkpoint as for sessions; cancelled, interrupted and resumed).
const (
	RunEventPlanToken    = event.RunPlanToken
	RunEventPlanReady    = event.RunPlanReady
	RunEventPlanApproval = event.RunPlanApproval
	RunEventStepStart    = event.RunStepStart
	RunEventStepComplete = event.RunStepComplete
	RunEventStepApproval = event.RunStepApproval
	RunEventPermission   = event.RunPermission
	RunEventCheckpoint   = event.RunCheckpoint
	RunEventComplete     = event.RunComplete
	RunEventError        = event.RunError
	RunEventCancelled    = event.RunCancelled
	RunEventInterrupted  = event.RunInterrupted
	RunEventResumed      = event.RunResumed
)

const (
	capabilityReadOnly = "read-only"
	maxGoalChars       = 100_000
	maxBatchRuns       = 8
	sharedDirPrefix    = "weft-run-"
	runAuditLimit      = 1000
	summaryChars       = 500
	// taskToolPrefix names the background-task tools, which plan steps may
	// not call.
	taskToolPrefix = "task_"
)

// TerminalRunEvent reports whether an event of type typ ends a run's
// attempt: after it, a stream has nothing more to wait for unless the run
// is resumed or rewound.
func TerminalRunEvent(typ string) bool {
	switch typ {
	case RunEventComplete, RunEventError, RunEventCancelled, RunEventInterrupted:
		return true
	}
	return false
}

// Errors of the run API that front doors branch on (errors.Is / As).
var (
	// ErrNoGate: the run is not waiting for an approval (or not for the
	// one named).
	ErrNoGate = errors.New("the run is not waiting for approval")
	// ErrConflict: a workflow update lost to another (its revision moved).
	ErrConflict = record.ErrConflict
)

// ConflictError is a request that does not fit the run's or workflow's
// state (resuming a completed run, rewinding a running one); front doors
// map it to 409.
type ConflictError struct{ Msg string }

func (e *ConflictError) Error() string { return e.Msg }

// PostureError refuses to resume, fork or rewind a run under a permission
// posture weaker than the one it was created under: replay must never
// quietly loosen what the run was allowed to do. Front doors map it to 403.
type PostureError struct {
	Recorded, Current string
}

func (e *PostureError) Error() string {
	return fmt.Sprintf("the run was created in permission mode %q and the server now runs in %q, which allows more; "+
		"restore mode %q (or a stricter one) to replay it", e.Recorded, e.Current, e.Recorded)
}

// InputsError lists every problem with a workflow run's inputs at once
// (missing required inputs, wrong types), so a caller can fix them in one
// go. Front doors map it to 400.
type InputsError struct {
	Problems []string
	// Missing names the required inputs that were not given.
	Missing []string
}

func (e *InputsError) Error() string {
	return "invalid workflow inputs: " + strings.Join(e.Problems, "; ")
}

// BatchItemError says which run of a batch was refused; it wraps the
// reason (a *ValidationError, an *record.InvalidError, ...).
type BatchItemError struct {
	Index int
	Err   error
}

func (e *BatchItemError) Error() string { return fmt.Sprintf("runs[%d]: %v", e.Index, e.Err) }
func (e *BatchItemError) Unwrap() error { return e.Err }

// Config configures the run manager. Runs is required; Workflows is
// required for the workflow API and published-workflow tools.
type Config struct {
	Runs      store.Runs
	Workflows store.Workflows
	// Audits, when set, adds each run's audit entries to GetRun.
	Audits store.Audits
	// Tools are the orchestratable tools. Published workflows are added to
	// it (and removed again) as run_workflow_<id>, so pass the registry
	// chat sessions use for them to see the workflows at once.
	Tools *tool.Registry
	// Models and DefaultModel draft plans when a run gives none.
	Models       ModelResolver
	DefaultModel string
	// Policy returns the server-wide policy now; each run works on its own
	// copy (SessionID set to the run id). nil means the zero policy.
	Policy func() *policy.Policy
	// AllowBypass lets a run's config choose permission mode bypass.
	AllowBypass bool
	// Memories returns memories relevant to a goal, for the planner; nil
	// means none.
	Memories func(ctx context.Context, goal string) []string
	// SharedDirRoot is where createSharedDirectory grants are made (one
	// fresh directory per run attempt, removed when it ends); "" means the
	// system temp directory. Put it inside the workspace for file tools
	// that are confined to it.
	SharedDirRoot string
	// MaxParallel bounds the steps of one run in flight; 0 means no bound
	// (a run's config may set a lower one).
	MaxParallel int
	// WorkflowToolTimeout bounds a run_workflow_<id> call; 0 means
	// workflow.DefaultTimeout.
	WorkflowToolTimeout time.Duration
	// PermissionTimeout is how long a step's permission request or
	// checkpoint waits for an answer before it counts as denied; 0 means
	// approval.DefaultTimeout. Approval gates wait until the run is
	// cancelled.
	PermissionTimeout time.Duration
	// Approvals is the broker of the runs' questions and gates; the
	// session service may share it. nil means one of the run service's
	// own.
	Approvals *approval.Broker
	Logger    *slog.Logger
	// Leases claims each run attempt for this node (lease run:<id>,
	// claims.go); nil means no claims. Shared says other nodes share the
	// store: start-up recovery then marks interrupted only the live runs
	// whose lease is not live, and a sweeper does so every half TTL.
	Leases *lease.Keeper
	Shared bool
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// Budget is every run's default budget (its MaxUSD and MaxTokens; a
	// run's max_budget_usd and max_tokens_total replace them): one total
	// per run over all its model calls (budget.go).
	Budget agent.Budget
	// Usage, when set, keeps every model call a run makes in the cost
	// history, under the run's id.
	Usage UsageStore
	// Observer receives what runs do (plan, steps, model calls, budget
	// events; observe.go): the sessions' observer.
	Observer observe.Observer
}

// RunConfig is a run's "config" object. Every field is optional.
type RunConfig struct {
	// Model drafts the plan ("provider:model"); "" means the server's
	// default.
	Model string `json:"model,omitempty"`
	// AutoApprove runs the plan as soon as it is ready, without the
	// plan_approval_requested gate. Resume, fork and rewind always pause
	// for review whatever it says.
	AutoApprove bool `json:"autoApprove,omitempty"`
	// RequireApproval false is another way to say AutoApprove.
	RequireApproval *bool `json:"requireApproval,omitempty"`
	// PermissionMode runs the steps in this mode instead of the server's
	// (plan, default, auto, bypass; bypass only when the server allows it).
	PermissionMode string `json:"permissionMode,omitempty"`
	// CapabilityMode "read-only" refuses any plan with a step whose tool is
	// not read-only.
	CapabilityMode string `json:"capabilityMode,omitempty"`
	// MaxParallel bounds the steps in flight; 0 means the server's bound.
	MaxParallel int `json:"maxParallel,omitempty"`
	// MaxBudgetUSD and MaxTokensTotal bound what the run's model calls
	// spend, all of them together (budget.go); absent means the server's
	// default (Config.Budget), 0 none. Kept with the run, so a resume,
	// fork or rewind has the same limits.
	MaxBudgetUSD   *float64 `json:"max_budget_usd,omitempty"`
	MaxTokensTotal *int     `json:"max_tokens_total,omitempty"`
}

func (c RunConfig) autoApprove() bool {
	return c.AutoApprove || (c.RequireApproval != nil && !*c.RequireApproval)
}

// FileGrant is one entry of a run's "files": a name that "@file:<name>" in
// step args resolves to, granted as exactly one of refs (given back as they
// are), nativePath (an absolute path) or createSharedDirectory (a fresh
// directory per run, writable by every step, removed when the run ends).
type FileGrant struct {
	Name                  string          `json:"name"`
	Refs                  json.RawMessage `json:"refs,omitempty"`
	NativePath            string          `json:"nativePath,omitempty"`
	CreateSharedDirectory bool            `json:"createSharedDirectory,omitempty"`
}

// RunRequest starts a run: seed 001's {goal, config, workflow?, files?},
// plus inputs for {{inputs.x}}.
type RunRequest struct {
	Goal   string    `json:"goal"`
	Config RunConfig `json:"config"`
	// Workflow is a plan to run as it is (validated first); nil has the
	// model draft one.
	Workflow *Plan           `json:"workflow,omitempty"`
	Files    []FileGrant     `json:"files,omitempty"`
	Inputs   json.RawMessage `json:"inputs,omitempty"`
	// MaxBudgetUSD and MaxTokensTotal are the run's limits, as on a
	// session's messages; they take the place of config's.
	MaxBudgetUSD   *float64 `json:"max_budget_usd,omitempty"`
	MaxTokensTotal *int     `json:"max_tokens_total,omitempty"`
}

// BatchRequest starts 1 to 8 independent runs.
type BatchRequest struct {
	Runs []RunRequest `json:"runs"`
	// CapabilityMode "read-only" applies to every run of the batch.
	CapabilityMode string `json:"capabilityMode,omitempty"`
}

// Approval answers a run's approval gate. The zero value approves what is
// waiting as it is.
type Approval struct {
	// Plan replaces the plan awaiting approval (validated first).
	Plan *Plan
	// StepID approves one step gate; "" approves every step waiting.
	StepID string
}

// RunDetail is a run with its step results, audit entries and what it is
// waiting for.
type RunDetail struct {
	Run
	Steps []StepResult `json:"steps"`
	// Result is the final result once the run completed.
	Result json.RawMessage     `json:"result,omitempty"`
	Audit  []record.AuditEntry `json:"audit,omitempty"`
	// Awaiting lists the gates open now: "plan", step ids, permission
	// request ids.
	Awaiting *Awaiting `json:"awaiting,omitempty"`
}

// Awaiting is what a live run waits for.
type Awaiting struct {
	Plan        bool     `json:"plan,omitempty"`
	Steps       []string `json:"steps,omitempty"`
	Permissions []string `json:"permissions,omitempty"`
}

// Runs runs plan-and-execute runs and manages saved workflows. Create it
// with New; it is safe for concurrent use.
type Service struct {
	cfg  Config
	log  *slog.Logger
	elog *eventlog.Log
	now  func() time.Time

	mu       sync.Mutex
	live     map[string]*liveRun
	closed   bool
	wg       sync.WaitGroup
	shutdown context.Context
	stop     context.CancelFunc

	// wfMu serialises workflow changes with their tool registrations, so
	// that the registry always matches the last stored state.
	wfMu sync.Mutex

	// approvals holds the runs' open questions and gates, by run.
	approvals *approval.Broker

	claims claims // the run leases this node holds (claims.go)
}

// errShutdown is the cancellation cause of runs stopped by Shutdown: they
// end interrupted (resumable), not cancelled.
var errShutdown = errors.New("the server is shutting down")

// errCancelled is the cause of a run stopped by Cancel.
var errCancelled = errors.New("cancelled")

// New starts the run manager: runs the store still shows live were cut
// off by a crash or restart and are marked interrupted (each gets an
// interrupted event, so streams following them end), and published
// workflows are registered as tools.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Runs == nil {
		return nil, errors.New("run: Config.Runs is required")
	}
	if cfg.PermissionTimeout <= 0 {
		cfg.PermissionTimeout = approval.DefaultTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	sctx, stop := context.WithCancel(context.Background())
	var secrets *secret.Set // no API call replaces them (see Runtime.secrets)
	if cfg.Policy != nil {
		if p := cfg.Policy(); p != nil {
			secrets = p.Secrets
		}
	}
	var redact func([]byte) []byte // the one place every run event passes before a reader or the store
	if secrets != nil {
		redact = secrets.RedactJSON
	}
	if cfg.Approvals == nil {
		cfg.Approvals = approval.New()
	}
	m := &Service{cfg: cfg, approvals: cfg.Approvals, log: log, now: now, live: map[string]*liveRun{}, shutdown: sctx, stop: stop,
		elog: eventlog.New(newRunEventStore(cfg.Runs), eventlog.Options{Logger: log, Redact: redact})}
	ids, err := m.interruptStale(ctx)
	if err != nil {
		stop()
		return nil, fmt.Errorf("run: marking interrupted runs: %w", err)
	}
	if len(ids) > 0 {
		log.Info("runs interrupted by a restart", "runs", len(ids))
	}
	removeStaleSharedDirs(cfg.SharedDirRoot, log)
	if cfg.Workflows != nil && cfg.Tools != nil {
		wfs, err := cfg.Workflows.ListWorkflows(ctx, true)
		if err != nil {
			stop()
			return nil, fmt.Errorf("run: loading published workflows: %w", err)
		}
		for _, w := range wfs {
			if err := m.registerTool(w); err != nil {
				log.Error("a published workflow cannot be offered as a tool", "workflow", w.ID, "error", err)
			}
		}
	}
	return m, nil
}

// Shutdown stops accepting runs, stops the live ones at their next safe
// point (they end interrupted, so they can be resumed after a restart) and
// waits for them and for their events to be stored, or for ctx.
func (m *Service) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	for _, lr := range m.live {
		lr.cancel(errShutdown)
	}
	m.mu.Unlock()
	m.stop()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return m.elog.FlushAll(ctx)
}

// newRunEventStore gives the event log the runs' events, with a run's
// last seq from its header.
func newRunEventStore(runs store.Runs) eventlog.Store {
	return eventlog.WithLastSeq(runs.RunEvents(), func(ctx context.Context, id string) (int64, error) {
		r, err := runs.GetRun(ctx, id)
		return r.LastSeq, err
	})
}

// emit appends one run event and waits until it is stored.
func (m *Service) emit(ctx context.Context, runID, typ string, data any) (event.Event, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return event.Event{}, err
	}
	evs, err := m.elog.Append(context.WithoutCancel(ctx), runID, event.Event{Type: typ, Data: b})
	if err != nil {
		return event.Event{}, err
	}
	return evs[0], nil
}

// Subscribe returns a reader of the run's events after seq `after` (0
// replays everything), replaying from the store and then following live.
func (m *Service) Subscribe(runID string, after int64) *eventlog.Reader {
	return m.elog.Subscribe(runID, after)
}

// LastSeq returns the seq of the run's last event, once the events
// published so far are stored (readers see only stored events, so no
// client has seen past it); ErrNotFound for an unknown run.
func (m *Service) LastSeq(ctx context.Context, runID string) (int64, error) {
	if err := m.elog.Flush(ctx, runID); err != nil {
		return 0, err
	}
	r, err := m.cfg.Runs.GetRun(ctx, runID)
	if err != nil {
		return 0, err
	}
	return r.LastSeq, nil
}

// Tools returns the orchestratable tools: those a plan step may call (the
// registry's, without workflow and background-task tools).
func (m *Service) Tools() []tool.Spec {
	if m.cfg.Tools == nil {
		return nil
	}
	var out []tool.Spec
	for _, s := range m.cfg.Tools.Specs() {
		if orchestratable(s.Name) {
			out = append(out, s)
		}
	}
	return out
}

// orchestratable: steps may not call workflows (no recursion, and a clear
// audit boundary) nor background tasks (a step's result must be its own).
func orchestratable(name string) bool {
	return !workflow.IsTool(name) && !strings.HasPrefix(name, taskToolPrefix)
}

func (m *Service) lookupTool(name string) (tool.Spec, bool) {
	if m.cfg.Tools == nil || !orchestratable(name) {
		return tool.Spec{}, false
	}
	t, ok := m.cfg.Tools.Get(name)
	if !ok {
		return tool.Spec{}, false
	}
	return t.Spec(), true
}

// NewRunID is "run_" and 16 hex digits.
func NewRunID() string { return "run_" + randHex(8) }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// prepared is a validated run request, ready to store and start.
type prepared struct {
	run      record.Run
	cfg      RunConfig
	plan     *plan.Plan
	grants   []FileGrant
	inputs   map[string]json.RawMessage
	schema   json.RawMessage // the workflow's input schema, for the planner
	env      plan.Env
	approve  bool                       // pause for plan approval
	review   string                     // "", resume, fork or rewind: pause for review whatever the config says
	reuse    map[string]json.RawMessage // step results a replay keeps, by step id
	caller   *policy.Caller
	detached bool        // a caller-mode run that outlives the call (background)
	held     *lease.Held // the run's lease, from before it is stored live (claims.go)
}

// prepare validates a run request before anything is stored or run.
func (m *Service) prepare(req RunRequest, batchMode string) (*prepared, error) {
	goal := strings.TrimSpace(req.Goal)
	if goal == "" && req.Workflow == nil {
		return nil, &record.InvalidError{Err: errors.New("goal is required (or a workflow to run)")}
	}
	if n := utf8.RuneCountInString(req.Goal); n > maxGoalChars {
		return nil, &record.InvalidError{Err: fmt.Errorf("goal is %d characters long; the maximum is 100,000", n)}
	}
	cfg := req.Config
	req.budgetInto(&cfg)
	if batchMode != "" {
		cfg.CapabilityMode = batchMode
	}
	if err := m.checkConfig(&cfg); err != nil {
		return nil, err
	}
	inputs, err := parseInputs(req.Inputs)
	if err != nil {
		return nil, err
	}
	if err := checkGrants(req.Files); err != nil {
		return nil, err
	}
	p := &prepared{cfg: cfg, grants: req.Files, inputs: inputs, approve: !cfg.autoApprove()}
	p.env = m.runEnv(inputNames(inputs), req.Files)
	if len(inputs) > 0 {
		// The planner is shown the inputs it may use as {{inputs.x}}.
		props := make(map[string]any, len(inputs))
		for k := range inputs {
			props[k] = map[string]any{}
		}
		p.schema = mustJSON(map[string]any{"type": "object", "properties": props})
	}
	if req.Workflow != nil {
		if err := m.checkPlan(*req.Workflow, p.env, cfg); err != nil {
			return nil, err
		}
		norm := req.Workflow.Normalize()
		p.plan = &norm
	}
	p.run = record.Run{Goal: req.Goal}
	return p, nil
}

// checkConfig validates and normalises a run's config.
func (m *Service) checkConfig(c *RunConfig) error {
	if c.PermissionMode != "" {
		mode, err := permission.ParseMode(c.PermissionMode)
		if err != nil {
			return &record.InvalidError{Err: fmt.Errorf("config.permissionMode: %w", err)}
		}
		if mode == permission.ModeBypass && !m.cfg.AllowBypass {
			return fmt.Errorf("%w: config.permissionMode bypass must be enabled when the server starts (--permission-mode bypass)", ErrForbidden)
		}
		c.PermissionMode = string(mode)
	}
	switch c.CapabilityMode {
	case "", capabilityReadOnly:
	case "readOnly", "read_only", "readonly":
		c.CapabilityMode = capabilityReadOnly
	default:
		return &record.InvalidError{Err: fmt.Errorf("capabilityMode %q: the only capability mode is \"read-only\"", c.CapabilityMode)}
	}
	if c.MaxParallel < 0 {
		return &record.InvalidError{Err: errors.New("config.maxParallel must not be negative")}
	}
	return c.checkBudget()
}

// checkPlan validates a plan against env and, for read-only runs, refuses
// any step whose tool is not read-only.
func (m *Service) checkPlan(p plan.Plan, env plan.Env, cfg RunConfig) error {
	if err := plan.Validate(p, env); err != nil {
		return err
	}
	if cfg.CapabilityMode == capabilityReadOnly {
		if ok, offending := p.ReadOnly(m.lookupTool); !ok {
			probs := make([]plan.Problem, 0, len(offending))
			for _, o := range offending {
				probs = append(probs, plan.Problem{Step: -1, Msg: "read-only capability mode: " + o})
			}
			return &plan.ValidationError{Problems: probs}
		}
	}
	return nil
}

// runEnv is what a run's plans are validated against.
func (m *Service) runEnv(inputs []string, grants []FileGrant) plan.Env {
	env := plan.Env{Tool: m.lookupTool}
	if len(inputs) > 0 {
		env.Inputs = make(map[string]bool, len(inputs))
		for _, n := range inputs {
			env.Inputs[n] = true
		}
	}
	if len(grants) > 0 {
		env.Files = make(map[string]bool, len(grants))
		for _, g := range grants {
			env.Files[g.Name] = true
		}
	}
	return env
}

func parseInputs(raw json.RawMessage) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var in map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &in) != nil {
		return nil, &record.InvalidError{Err: errors.New("inputs must be a JSON object")}
	}
	return in, nil
}

func inputNames(in map[string]json.RawMessage) []string {
	out := make([]string, 0, len(in))
	for k := range in {
		out = append(out, k)
	}
	return out
}

// checkGrants validates a run's files before anything is created.
func checkGrants(gs []FileGrant) error {
	seen := map[string]bool{}
	for i, g := range gs {
		where := fmt.Sprintf("files[%d]", i)
		if g.Name == "" || len(g.Name) > 128 || strings.ContainsAny(g.Name, "{}\"\\ \t\r\n") {
			return &record.InvalidError{Err: fmt.Errorf("%s: name must be 1 to 128 characters without spaces, quotes or braces", where)}
		}
		if seen[g.Name] {
			return &record.InvalidError{Err: fmt.Errorf("%s: file %q is granted twice", where, g.Name)}
		}
		seen[g.Name] = true
		kinds := 0
		if len(bytes.TrimSpace(g.Refs)) > 0 && string(bytes.TrimSpace(g.Refs)) != "null" {
			kinds++
		}
		if g.NativePath != "" {
			kinds++
			if !filepath.IsAbs(g.NativePath) {
				return &record.InvalidError{Err: fmt.Errorf("%s: nativePath %q must be an absolute path", where, g.NativePath)}
			}
		}
		if g.CreateSharedDirectory {
			kinds++
		}
		if kinds != 1 {
			return &record.InvalidError{Err: fmt.Errorf("%s (%q): give exactly one of refs, nativePath or createSharedDirectory", where, g.Name)}
		}
	}
	return nil
}

// CreateRun validates req and starts a run: the model drafts a plan unless
// req.Workflow gives one, the plan awaits approval unless the config
// auto-approves it, then the steps run. It returns the stored run at once;
// follow it with Subscribe.
func (m *Service) CreateRun(ctx context.Context, req RunRequest) (Run, error) {
	p, err := m.prepare(req, "")
	if err != nil {
		return Run{}, err
	}
	return m.launch(ctx, p)
}

// Batch starts 1 to 8 independent runs, each with its own approvals,
// cancellation, history and stream, after checking every one of them (a
// refused run refuses the batch before anything starts). With
// capabilityMode "read-only", a given plan with a step whose tool is not
// read-only is refused, and a drafted one fails its run at plan_ready.
func (m *Service) Batch(ctx context.Context, req BatchRequest) (batchID string, runIDs []string, err error) {
	if len(req.Runs) == 0 || len(req.Runs) > maxBatchRuns {
		return "", nil, &record.InvalidError{Err: fmt.Errorf("a batch has 1 to %d runs, not %d", maxBatchRuns, len(req.Runs))}
	}
	mode := req.CapabilityMode
	switch mode {
	case "", capabilityReadOnly:
	case "readOnly", "read_only", "readonly":
		mode = capabilityReadOnly
	default:
		return "", nil, &record.InvalidError{Err: fmt.Errorf("capabilityMode %q: the only capability mode is \"read-only\"", mode)}
	}
	ps := make([]*prepared, len(req.Runs))
	for i, r := range req.Runs {
		p, err := m.prepare(r, mode)
		if err != nil {
			return "", nil, &BatchItemError{Index: i, Err: err}
		}
		ps[i] = p
	}
	batchID = "batch_" + randHex(6)
	for _, p := range ps {
		p.run.BatchID = batchID
		r, err := m.launch(ctx, p)
		if err != nil {
			return batchID, runIDs, err
		}
		runIDs = append(runIDs, r.ID)
	}
	return batchID, runIDs, nil
}

// launch stores a prepared run and starts it.
func (m *Service) launch(ctx context.Context, p *prepared) (Run, error) {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return Run{}, ErrClosed
	}
	r := p.run
	if r.ID == "" {
		r.ID = NewRunID()
	}
	r.Status = record.RunPlanning
	r.Config = mustJSON(p.cfg)
	if len(p.inputs) > 0 {
		r.Inputs = mustJSON(p.inputs)
	}
	if len(p.grants) > 0 {
		r.Files = mustJSON(p.grants)
	}
	if p.plan != nil {
		r.Plan = mustJSON(p.plan)
	}
	r.Posture = mustJSON(posture{Mode: string(m.effectiveMode(p.cfg, p.caller))})
	if m.cfg.Now != nil {
		now := m.now()
		r.CreatedAt, r.UpdatedAt = now, now
	}
	if err := m.claim(ctx, p, r.ID); err != nil {
		return Run{}, err
	}
	stored, err := m.cfg.Runs.CreateRun(ctx, r)
	if err != nil {
		m.unclaim(p, r.ID)
		return Run{}, err
	}
	p.run = stored
	if err := m.start(p); err != nil {
		stored.Status, stored.Error = record.RunFailed, err.Error()
		_ = m.cfg.Runs.UpdateRun(context.WithoutCancel(ctx), stored)
		return Run{}, err
	}
	return stored, nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own plain types reach here.
		panic(fmt.Sprintf("run: encoding %T: %v", v, err))
	}
	return b
}

// ListRuns pages through runs, newest first; q.Q filters by goal, summary
// and error.
func (m *Service) ListRuns(ctx context.Context, q RunQuery) (RunPage, error) {
	if q.Status != "" && !record.ValidRunStatus(q.Status) {
		return RunPage{}, &record.InvalidError{Err: fmt.Errorf("status %q: want planning, awaiting_approval, running, completed, failed, cancelled, interrupted or budget", q.Status)}
	}
	return m.cfg.Runs.ListRuns(ctx, q)
}

// GetRun returns a run with its step results, final result, audit entries
// and open gates.
func (m *Service) GetRun(ctx context.Context, id string) (RunDetail, error) {
	r, err := m.cfg.Runs.GetRun(ctx, id)
	if err != nil {
		return RunDetail{}, err
	}
	steps, err := m.cfg.Runs.StepResults(ctx, id)
	if err != nil {
		return RunDetail{}, err
	}
	d := RunDetail{Run: r, Steps: steps}
	if r.Status == record.RunCompleted {
		d.Result = finalResult(r.Plan, steps)
	}
	if m.cfg.Audits != nil {
		entries, err := m.cfg.Audits.ListAudit(ctx, record.AuditQuery{SessionID: id, Limit: runAuditLimit})
		if err != nil {
			return RunDetail{}, err
		}
		d.Audit = entries
	}
	m.mu.Lock()
	lr := m.live[id]
	m.mu.Unlock()
	if lr != nil {
		d.Awaiting = lr.awaiting()
	}
	return d, nil
}

// finalResult is a completed run's result, made of its sink steps' (those
// no other step depends on): the one result when there is one sink (the
// last step of a chain), else an object of results by step id.
func finalResult(rawPlan json.RawMessage, steps []StepResult) json.RawMessage {
	var p plan.Plan
	if len(rawPlan) == 0 || json.Unmarshal(rawPlan, &p) != nil || len(p.Steps) == 0 {
		return nil
	}
	byID := make(map[string]json.RawMessage, len(steps))
	for _, s := range steps {
		if s.Status == record.StepCompleted {
			byID[s.StepID] = s.Result
		}
	}
	hasDependents := make([]bool, len(p.Steps))
	for _, s := range p.Steps {
		for _, d := range s.DependsOn {
			if j, ok := p.Index(d); ok {
				hasDependents[j] = true
			}
		}
	}
	var sinks []int
	for i := range p.Steps {
		if !hasDependents[i] {
			sinks = append(sinks, i)
		}
	}
	if len(sinks) == 1 {
		if r, ok := byID[p.ID(sinks[0])]; ok {
			return r
		}
		return json.RawMessage("null")
	}
	out := make(map[string]json.RawMessage, len(sinks))
	for _, i := range sinks {
		r, ok := byID[p.ID(i)]
		if !ok {
			r = json.RawMessage("null")
		}
		out[p.ID(i)] = r
	}
	return mustJSON(out)
}

// summarize is the text a run's summary (searched by ?q=) keeps of its
// result.
func summarize(result json.RawMessage) string {
	var s string
	if json.Unmarshal(result, &s) != nil {
		s = string(result)
	}
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > summaryChars {
		rs := []rune(s)
		s = string(rs[:summaryChars]) + "…"
	}
	return s
}

// CancelRun stops a live run cooperatively: steps in flight see their
// context end, nothing new starts, and the run ends cancelled with a
// cancelled event and no complete. It reports whether the run was live.
func (m *Service) CancelRun(runID string) bool {
	m.mu.Lock()
	lr := m.live[runID]
	m.mu.Unlock()
	if lr == nil {
		return false
	}
	lr.cancel(errCancelled)
	return true
}

// Approve answers the run's open approval gate: the plan awaiting approval
// (as it is, or replaced by a.Plan once that validates), or step gates.
// ErrNotFound for an unknown run, ErrNoGate when nothing (or not the step
// named) waits, a *ValidationError for an invalid edited plan.
func (m *Service) Approve(ctx context.Context, runID string, a Approval) error {
	m.mu.Lock()
	lr := m.live[runID]
	m.mu.Unlock()
	if lr == nil {
		if _, err := m.cfg.Runs.GetRun(ctx, runID); err != nil {
			return err
		}
		return ErrNoGate
	}
	return lr.approve(a)
}

// AnswerPermission answers a permission_request or checkpoint event of a
// live run. ErrNotFound for an unknown run or request (or one that
// expired), ErrAnswered for a second answer.
func (m *Service) AnswerPermission(runID, requestID string, allow bool, reason string) error {
	if !allow && reason == "" {
		reason = "the user denied this tool call"
	}
	// A run that is not live has no open question; the broker still
	// tells a second answer (its answered ids outlive the attempt).
	return m.approvals.AnswerIf(scope(runID), requestID, approval.Answer{Allow: allow, Reason: reason},
		kindIs(approval.Permission, approval.Checkpoint))
}

// WaitRun waits until the run has ended (completed, failed, cancelled or
// interrupted) and returns it, or ctx's error. A run awaiting approval has
// not ended.
func (m *Service) WaitRun(ctx context.Context, runID string) (Run, error) {
	for {
		m.mu.Lock()
		lr := m.live[runID]
		m.mu.Unlock()
		if lr != nil {
			select {
			case <-lr.done:
			case <-ctx.Done():
				return Run{}, ctx.Err()
			}
		}
		r, err := m.cfg.Runs.GetRun(ctx, runID)
		if err != nil {
			return Run{}, err
		}
		if finalStatus(r.Status) {
			return r, nil
		}
		if lr == nil {
			// Between the store saying live and the run registering (a
			// resume starting): look again shortly.
			t := time.NewTimer(10 * time.Millisecond)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return Run{}, ctx.Err()
			}
		}
	}
}

// RunResult returns a completed run's final result (see GetRun); null for
// a run that did not complete.
func (m *Service) RunResult(ctx context.Context, runID string) (json.RawMessage, error) {
	r, err := m.cfg.Runs.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	if r.Status != record.RunCompleted {
		return json.RawMessage("null"), nil
	}
	steps, err := m.cfg.Runs.StepResults(ctx, runID)
	if err != nil {
		return nil, err
	}
	return finalResult(r.Plan, steps), nil
}

func finalStatus(s string) bool {
	switch s {
	case record.RunCompleted, record.RunFailed, record.RunCancelled, record.RunInterrupted, record.RunBudget:
		return true
	}
	return false
}

// TaskRunner adapts Runs to the background task registry's workflow
// runner (package task's WorkflowRunner).
type TaskRunner struct{ m *Service }

// TaskRunner returns the adapter for background tasks.
func (m *Service) TaskRunner() TaskRunner { return TaskRunner{m} }

// StartWorkflow starts a published workflow in the background (see
// Runs.StartWorkflow).
func (t TaskRunner) StartWorkflow(ctx context.Context, workflowID string, inputs json.RawMessage) (string, error) {
	return t.m.StartWorkflow(ctx, workflowID, inputs)
}

// WaitRun waits for the run's end and returns its status, final result
// and error message.
func (t TaskRunner) WaitRun(ctx context.Context, runID string) (status string, result json.RawMessage, errMsg string, err error) {
	r, err := t.m.WaitRun(ctx, runID)
	if err != nil {
		return "", nil, "", err
	}
	res, err := t.m.RunResult(ctx, runID)
	if err != nil {
		return "", nil, "", err
	}
	return r.Status, res, r.Error, nil
}

// CancelRun cancels the run (see Runs.CancelRun).
func (t TaskRunner) CancelRun(runID string) bool { return t.m.CancelRun(runID) }

// removeStaleSharedDirs removes the shared directories of runs a crash cut
// off: no run is live yet, so every one under the root is stale. Only an
// explicit root is swept; the system temp dir may hold another server's.
func removeStaleSharedDirs(root string, log *slog.Logger) {
	if root == "" {
		return
	}
	stale, _ := filepath.Glob(filepath.Join(root, sharedDirPrefix+"*"))
	for _, d := range stale {
		if err := os.RemoveAll(d); err != nil {
			log.Warn("removing a stale shared run directory failed", "dir", d, "error", err)
		}
	}
}
