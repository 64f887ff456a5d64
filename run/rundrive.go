package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/plan"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/tool"
)

// posture is what a run records of the permission posture it was created
// under.
type posture struct {
	Mode string `json:"mode"`
}

// modeRank orders modes from strictest to most permissive: plan < default
// < auto < bypass. Unknown modes rank as the most permissive, so that a
// mode this build does not know never counts as stricter.
func modeRank(m permission.Mode) int {
	switch m {
	case permission.ModePlan:
		return 0
	case permission.ModeDefault, "":
		return 1
	case permission.ModeAuto:
		return 2
	}
	return 3
}

// basePolicy is a copy of the policy a run starts from: its caller's (a
// workflow called as a tool) or the server's.
func (m *Service) basePolicy(caller *policy.Caller) policy.Policy {
	if caller != nil && caller.Policy != nil {
		return *caller.Policy
	}
	if m.cfg.Policy != nil {
		if p := m.cfg.Policy(); p != nil {
			return *p
		}
	}
	return policy.Policy{}
}

// effectiveMode is the mode a run's steps would run in now.
func (m *Service) effectiveMode(cfg RunConfig, caller *policy.Caller) permission.Mode {
	p := m.basePolicy(caller)
	mode := p.Mode
	if caller == nil && cfg.PermissionMode != "" {
		mode = permission.Mode(cfg.PermissionMode)
	}
	if mode == "" {
		mode = permission.ModeDefault
	}
	return mode
}

// runPolicy is the policy of one run attempt.
func (m *Service) runPolicy(runID string, p *prepared, sharedDirs []string) *policy.Policy {
	pol := m.basePolicy(p.caller)
	pol.SessionID = runID
	if p.caller == nil && p.cfg.PermissionMode != "" {
		pol.Mode = permission.Mode(p.cfg.PermissionMode)
	}
	if pol.Validate == nil && m.cfg.Tools != nil {
		pol.Validate = m.cfg.Tools.Validate
	}
	if pol.Logger == nil {
		pol.Logger = m.log
	}
	if len(sharedDirs) > 0 {
		pol.ExtraDirs = append(append([]string(nil), pol.ExtraDirs...), sharedDirs...)
	}
	return &pol
}

// start registers the run as live and runs its attempt in the background.
func (m *Service) start(p *prepared) (err error) {
	if err := m.claim(m.shutdown, p, p.run.ID); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			m.unclaim(p, p.run.ID)
		}
	}()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if m.live[p.run.ID] != nil {
		return &ConflictError{Msg: fmt.Sprintf("run %q is still active", p.run.ID)}
	}
	ctx, cancel := context.WithCancelCause(m.shutdown)
	lr := &liveRun{id: p.run.ID, done: make(chan struct{}), cancel: cancel, run: p.run, m: m, held: p.held}
	m.live[p.run.ID] = lr
	m.wg.Add(1)
	if lr.held != nil {
		go watchLease(lr, lr.held)
	}
	go m.drive(ctx, lr, p)
	return nil
}

// idle waits for an attempt of the run that is finishing to be gone, and
// fails with a *ConflictError when one is still active.
func (m *Service) idle(ctx context.Context, id string) error {
	m.mu.Lock()
	lr := m.live[id]
	m.mu.Unlock()
	if lr == nil {
		return nil
	}
	lr.mu.Lock()
	finishing := lr.finishing
	lr.mu.Unlock()
	if !finishing {
		return &ConflictError{Msg: fmt.Sprintf("run %q is still active: cancel it first", id)}
	}
	select {
	case <-lr.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// execution is one attempt of a run.
type execution struct {
	m   *Service
	lr  *liveRun
	p   *prepared
	pol *policy.Policy
	ts  *tool.Session
	// auto opens step gates by themselves: the caller approved the
	// workflow as one call, or the run is in bypass mode.
	auto bool
	// spend is the attempt's budget and what its model calls spent
	// (budget.go); obs what reports them (observe.go).
	spend *meter
	obs   observe.Parts
}

// drive runs one attempt to its end: planning, the plan gate, the steps,
// and the final status and event, whatever happened.
func (m *Service) drive(ctx context.Context, lr *liveRun, p *prepared) {
	defer m.wg.Done()
	x := &execution{m: m, lr: lr, p: p, ts: tool.NewSession(), obs: observe.Resolve(m.cfg.Observer)}
	x.spend = x.newMeter()
	ctx = x.observeStart(ctx)
	files, dirs, err := grantFiles(m.cfg.SharedDirRoot, lr.id, p.grants)
	var status, msg string
	var result json.RawMessage
	if err != nil {
		status, msg = record.RunFailed, err.Error()
	} else {
		x.pol = m.runPolicy(lr.id, p, dirs)
		x.auto = p.caller != nil || x.pol.Mode == permission.ModeBypass
		status, msg, result = x.run(ctx, files)
	}
	removeDirs(dirs, m.log)
	x.observeEnd(ctx, status, msg)
	m.finish(lr, x.pol, status, msg, result)
	lr.cancel(nil)
	m.unclaim(p, lr.id)
}

// stopped names how a run whose context ended stops: interrupted by a
// shutdown (resumable after the restart), or cancelled.
func (x *execution) stopped(ctx context.Context) (string, string) {
	if errors.Is(context.Cause(ctx), errShutdown) || x.m.shutdown.Err() != nil {
		return record.RunInterrupted, "interrupted: the server shut down; resume the run to go on"
	}
	if errors.Is(context.Cause(ctx), errLeaseLost) {
		return record.RunInterrupted, "interrupted: " + errLeaseLost.Error() + "; resume the run to go on"
	}
	return record.RunCancelled, "cancelled"
}

func (x *execution) run(ctx context.Context, files map[string]json.RawMessage) (status, msg string, result json.RawMessage) {
	p, lr := x.p, x.lr
	if p.review == "resume" || p.review == "rewind" {
		x.emit(ctx, RunEventResumed, map[string]any{"from": p.review, "keptSteps": p.completedIDs()})
	}
	pl := p.plan
	if pl == nil {
		drafted, err := x.draft(ctx)
		if ctx.Err() != nil {
			s, m := x.stopped(ctx)
			return s, m, nil
		}
		if stop, ok := budgetStopOf(err); ok {
			return record.RunBudget, stop, nil
		}
		if err != nil {
			return record.RunFailed, "planning failed: " + err.Error(), nil
		}
		pl = &drafted
	}
	norm := pl.Normalize()
	pl = &norm
	_ = lr.update(ctx, func(r *record.Run) { r.Plan = mustJSON(pl) })
	x.emit(ctx, RunEventPlanReady, map[string]any{"plan": pl})
	readOnly := p.cfg.CapabilityMode == capabilityReadOnly
	if readOnly {
		if ok, offending := pl.ReadOnly(x.m.lookupTool); !ok {
			return record.RunFailed, "read-only capability mode: the plan has steps that are not read-only: " + strings.Join(offending, "; "), nil
		}
	}
	if p.approve || p.review != "" {
		_ = lr.update(ctx, func(r *record.Run) { r.Status = record.RunAwaitingApproval })
		reason := p.review
		if reason == "" {
			reason = "review"
		}
		gate, err := lr.openPlan(pl, p.env, readOnly)
		if err != nil {
			return record.RunFailed, "opening the plan's approval gate: " + err.Error(), nil
		}
		x.emit(ctx, RunEventPlanApproval, map[string]any{"gate": "plan", "reason": reason, "plan": pl})
		edited, err := lr.waitPlan(ctx, gate)
		if err != nil {
			s, m := x.stopped(ctx)
			return s, m, nil
		}
		if edited != nil {
			pl = edited
			_ = lr.update(ctx, func(r *record.Run) { r.Plan = mustJSON(pl) })
			x.emit(ctx, RunEventPlanReady, map[string]any{"plan": pl, "edited": true})
		}
	}
	_ = lr.update(ctx, func(r *record.Run) { r.Status = record.RunRunning })
	maxPar := x.m.cfg.MaxParallel
	if c := p.cfg.MaxParallel; c > 0 && (maxPar == 0 || c < maxPar) {
		maxPar = c
	}
	results, err := plan.Execute(ctx, *pl, plan.ExecConfig{
		Run:         x.observedStep,
		Completed:   p.completed(),
		Inputs:      p.inputs,
		Files:       files,
		Approve:     x.approveStep,
		OnStart:     x.onStart,
		OnDone:      x.onDone,
		MaxParallel: maxPar,
		Logger:      x.m.log,
	})
	if ctx.Err() != nil {
		s, m := x.stopped(ctx)
		return s, m, nil
	}
	if err != nil {
		return record.RunFailed, err.Error(), nil
	}
	stored := make([]StepResult, 0, len(results))
	for _, r := range results {
		stored = append(stored, StepResult{StepID: r.ID, Index: r.Index, Status: string(r.Status), Result: r.Result})
	}
	return record.RunCompleted, "", finalResult(mustJSON(pl), stored)
}

// completed returns the results a replay reuses, by step id.
func (p *prepared) completed() map[string]json.RawMessage { return p.reuse }

func (p *prepared) completedIDs() []string {
	ids := make([]string, 0, len(p.reuse))
	for id := range p.reuse {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// draft has the model draft the plan, streaming plan_token events.
func (x *execution) draft(ctx context.Context) (plan.Plan, error) {
	m, p := x.m, x.p
	spec := p.cfg.Model
	if spec == "" {
		spec = m.cfg.DefaultModel
	}
	if spec == "" || m.cfg.Models == nil {
		return plan.Plan{}, errors.New("no model: configure a default model (--model) or pass \"model\" in the run's config")
	}
	prov, info, err := m.cfg.Models.Resolve(spec)
	if err != nil {
		return plan.Plan{}, err
	}
	prov = x.spend.provider(prov, info, "planner")
	var memories []string
	if m.cfg.Memories != nil {
		memories = m.cfg.Memories(ctx, p.run.Goal)
	}
	files := make([]string, 0, len(p.grants))
	for _, g := range p.grants {
		files = append(files, g.Name)
	}
	tools := m.Tools()
	if p.cfg.CapabilityMode == capabilityReadOnly {
		// Offer the planner only what the run may use; a plan that uses
		// something else anyway is refused at plan_ready.
		tools = slices.DeleteFunc(tools, func(s tool.Spec) bool { return !s.ReadOnly })
	}
	var sec *secret.Set
	if x.pol != nil {
		sec = x.pol.Secrets
	}
	// The planner, a model, is never shown a registered value; its tokens
	// go through a stream, which holds back the start of a value split
	// across them (the event log redacts each event, not across events).
	tokens := sec.NewStream()
	publish := func(text string) {
		if text == "" {
			return
		}
		b, _ := json.Marshal(map[string]string{"text": text})
		// Published, not awaited: tokens are many and small, and the
		// event log keeps their order with what follows.
		if _, err := m.elog.Publish(context.WithoutCancel(ctx), x.lr.id, event.Event{Type: RunEventPlanToken, Data: b}); err != nil {
			m.log.Error("appending a run event failed", "run", x.lr.id, "type", RunEventPlanToken, "error", err)
		}
	}
	defer func() { publish(tokens.Flush()) }()
	return plan.Draft(ctx, plan.DraftConfig{
		Provider: prov, Model: info.ID, Goal: sec.Redact(p.run.Goal), Tools: tools,
		InputSchema: p.schema, Memories: secret.Redacted(sec, memories), Files: files, Env: p.env,
		OnToken: func(text string) { publish(tokens.Write(text)) },
	})
}

func (x *execution) emit(ctx context.Context, typ string, data any) {
	x.observeEvent(ctx, typ, data)
	if _, err := x.m.emit(ctx, x.lr.id, typ, data); err != nil {
		x.m.log.Error("appending a run event failed", "run", x.lr.id, "type", typ, "error", err)
	}
}

func (x *execution) redactJSON(b json.RawMessage) json.RawMessage {
	if x.pol != nil && x.pol.Secrets != nil && x.pol.Secrets.Len() > 0 && len(b) > 0 {
		return x.pol.Secrets.RedactJSON(b)
	}
	return b
}

// stepInfo is the step descriptor of step_start and
// step_approval_requested.
type stepInfo struct {
	Gate        string          `json:"gate,omitempty"`
	Index       int             `json:"index"`
	StepID      string          `json:"stepId"`
	Description string          `json:"description,omitempty"`
	Tool        string          `json:"tool"`
	Args        json.RawMessage `json:"args,omitempty"`
}

// stepDone is the payload of step_complete.
type stepDone struct {
	Index      int             `json:"index"`
	StepID     string          `json:"stepId"`
	Status     string          `json:"status"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      string          `json:"error,omitempty"`
	Reused     bool            `json:"reused,omitempty"`
	StartedAt  time.Time       `json:"startedAt,omitzero"`
	FinishedAt time.Time       `json:"finishedAt,omitzero"`
}

// approveStep shows the step as it will run: its args rendered
// (placeholders resolved), so a person approves what executes.
func (x *execution) approveStep(ctx context.Context, i int, s plan.Step, args json.RawMessage) error {
	if x.auto {
		return nil
	}
	id := s.ID // Execute runs normalised plans: every step has its id
	gate, err := x.lr.openStep(id)
	if err != nil {
		return err
	}
	defer func() {
		gate.Close()
		x.lr.syncGateStatus(ctx)
	}()
	x.lr.syncGateStatus(ctx)
	x.emit(ctx, RunEventStepApproval, stepInfo{Gate: "step", Index: i, StepID: id, Description: s.Description, Tool: s.Tool, Args: x.redactJSON(args)})
	_, err = gate.Wait(ctx, 0)
	return err
}

func (x *execution) onStart(i int, s plan.Step, args json.RawMessage) {
	ctx := context.Background()
	if err := x.m.cfg.Runs.PutStepResult(ctx, record.StepResult{RunID: x.lr.id, StepID: s.ID, Index: i, Status: record.StepRunning, StartedAt: time.Now()}); err != nil {
		x.m.log.Error("saving a step failed", "run", x.lr.id, "step", s.ID, "error", err)
	}
	x.emit(ctx, RunEventStepStart, stepInfo{Index: i, StepID: s.ID, Description: s.Description, Tool: s.Tool, Args: x.redactJSON(args)})
}

func (x *execution) onDone(r plan.StepResult) {
	ctx := context.Background()
	if !r.Reused {
		sr := record.StepResult{RunID: x.lr.id, StepID: r.ID, Index: r.Index, Status: string(r.Status), Result: r.Result,
			Error: r.Err, StartedAt: r.Started, FinishedAt: r.Finished}
		if err := x.m.cfg.Runs.PutStepResult(ctx, sr); err != nil {
			x.m.log.Error("saving a step failed", "run", x.lr.id, "step", r.ID, "error", err)
		}
	}
	x.emit(ctx, RunEventStepComplete, stepDone{Index: r.Index, StepID: r.ID, Status: string(r.Status), Result: r.Result,
		Error: r.Err, Reused: r.Reused, StartedAt: r.Started, FinishedAt: r.Finished})
}

// runStep is one step's tool call, through the same pipeline as a chat
// session's: policy (rules, hooks, the human, checkpoints), the tool
// framework, then the policy's after stage (redaction, hooks, audit).
func (x *execution) runStep(ctx context.Context, i int, s plan.Step, args json.RawMessage) (json.RawMessage, error) {
	reg := x.m.cfg.Tools
	if reg == nil {
		return nil, fmt.Errorf("unknown tool %q: this server has no tools", s.Tool)
	}
	t, ok := reg.Get(s.Tool)
	if !ok || !orchestratable(s.Tool) {
		return nil, fmt.Errorf("unknown tool %q", s.Tool)
	}
	spec := t.Spec()
	call := policy.Call{ToolUseID: x.lr.id + "/" + s.ID, Tool: s.Tool, Input: args, Spec: spec}
	v := x.pol.Before(ctx, call, x.human(s), x.checkpoint(s))
	if !v.Allow {
		msg := "permission denied: " + v.Reason
		if v.Context != "" {
			msg += "\n" + v.Context
		}
		return nil, errors.New(msg)
	}
	input := args
	if len(v.Input) > 0 {
		input = v.Input
	}
	var env []string
	if x.pol.Secrets != nil {
		env = x.pol.Secrets.Env()
	}
	// A tool that makes calls of its own finds the run's policy in its
	// context, so nothing nested escapes the run's rules.
	tctx := policy.WithCaller(ctx, policy.Caller{Policy: x.pol, Human: x.human(s), Checkpoint: x.checkpoint(s)})
	res := reg.Execute(tctx, &tool.Call{ID: call.ToolUseID, Name: s.Tool, Input: input, Session: x.ts, Env: env, Secrets: x.pol.Secrets})
	x.pol.After(context.WithoutCancel(ctx), call, v, &res)
	if res.IsError {
		return nil, errors.New(res.TextOf())
	}
	return plan.ResultOf(res.TextOf()), nil
}

// human is the run's answer to a call its rules leave to a person. A
// workflow called as a tool was approved as one call by its caller, so
// within it an ask counts as granted, except for commands the danger floor
// puts to a person every time: nobody can be asked inside a synchronous
// tool call, so those are denied. Otherwise the run asks with a
// permission_request event and waits for the answer.
func (x *execution) human(s plan.Step) policy.Human {
	if x.p.caller != nil {
		return func(ctx context.Context, c policy.Call, reason string) (bool, string) {
			if c.Dangerous {
				return false, "a workflow called as a tool cannot ask for approval, and this command needs it every time (" + reason + ")"
			}
			return true, ""
		}
	}
	return func(ctx context.Context, c policy.Call, reason string) (bool, string) {
		input := c.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		msg := fmt.Sprintf("step %q: %s requests permission to run", s.ID, c.Tool)
		d := x.lr.ask(ctx, RunEventPermission, func(id string) any {
			return event.PermissionRequestData{ID: id, ToolName: c.Tool, Input: x.redactJSON(input), ToolUse: c.ToolUseID, Message: msg, Reason: reason}
		})
		return d.allow, d.reason
	}
}

// checkpoint confirms an irreversible call: through the caller's
// checkpoint for a workflow called as a tool (it has one in its session),
// otherwise with a checkpoint event on the run.
func (x *execution) checkpoint(s plan.Step) policy.Checkpoint {
	if c := x.p.caller; c != nil && !x.p.detached {
		return c.Checkpoint
	}
	return func(ctx context.Context, req policy.CheckpointRequest) bool {
		d := x.lr.ask(ctx, RunEventCheckpoint, func(id string) any {
			return event.CheckpointData{ID: id, ToolCallID: req.ToolCallID, ToolName: req.ToolName, Input: req.Input, Message: req.Message}
		})
		return d.allow
	}
}

// finish stores the attempt's outcome, appends its terminal event (after
// the store has the status, so a client reading the event and then the
// run sees them agree) and lets the run go.
func (m *Service) finish(lr *liveRun, pol *policy.Policy, status, msg string, result json.RawMessage) {
	lr.mu.Lock()
	lr.finishing = true
	lr.mu.Unlock()
	ctx := context.Background()
	_ = lr.update(ctx, func(r *record.Run) {
		r.Status = status
		r.Error = msg
		if status == record.RunCompleted {
			r.Summary = summarize(result)
		}
	})
	if lr.leaseLost() {
		// Another node may have taken the run over: its record and events
		// are that node's now.
		m.log.Warn("a run's lease was lost; its end is not recorded here", "run", lr.id, "status", status)
		m.mu.Lock()
		delete(m.live, lr.id)
		m.approvals.Close(scope(lr.id))
		m.mu.Unlock()
		close(lr.done)
		return
	}
	typ, data := RunEventError, any(map[string]string{"message": msg})
	switch status {
	case record.RunCompleted:
		if len(result) == 0 {
			result = json.RawMessage("null")
		}
		typ, data = RunEventComplete, map[string]any{"result": result, "summary": summarize(result)}
	case record.RunCancelled:
		typ = RunEventCancelled
	case record.RunInterrupted:
		typ = RunEventInterrupted
	case record.RunBudget:
		data = map[string]string{"message": msg, "stop_reason": record.RunBudget}
	}
	if _, err := m.emit(ctx, lr.id, typ, data); err != nil {
		m.log.Error("appending a run event failed", "run", lr.id, "type", typ, "error", err)
	}
	m.runHook(pol, lr.id, status, msg, result)
	m.mu.Lock()
	delete(m.live, lr.id)
	m.approvals.Close(scope(lr.id))
	m.mu.Unlock()
	close(lr.done)
}

// runHook tells run_complete / run_error hooks how the run ended, in the
// background: observers never hold a run up.
func (m *Service) runHook(pol *policy.Policy, runID, status, msg string, result json.RawMessage) {
	if pol == nil || pol.Hooks == nil {
		return
	}
	ev := hook.RunComplete
	if status != record.RunCompleted {
		ev = hook.RunError
	}
	if !pol.Hooks.Has(ev) {
		return
	}
	in := pol.HookInput(ev)
	in.SessionID = runID
	in.StopReason, in.Reason = status, msg
	in.ResponsePreview = summarize(result)
	in.Extra = map[string]any{"run_id": runID, "run_kind": "plan"}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		pol.Hooks.Run(context.WithoutCancel(m.shutdown), in)
	}()
}

// grantFiles resolves a run's file grants to what "@file:<name>" renders
// as, creating the shared directories (returned, to be removed when the
// run ends).
func grantFiles(root, runID string, gs []FileGrant) (map[string]json.RawMessage, []string, error) {
	if len(gs) == 0 {
		return nil, nil, nil
	}
	files := make(map[string]json.RawMessage, len(gs))
	var dirs []string
	for _, g := range gs {
		switch {
		case g.CreateSharedDirectory:
			if root != "" {
				if err := os.MkdirAll(root, 0o755); err != nil {
					return nil, dirs, fmt.Errorf("creating the shared directory %q: %w", g.Name, err)
				}
			}
			dir, err := os.MkdirTemp(root, sharedDirPrefix+runID+"-")
			if err != nil {
				return nil, dirs, fmt.Errorf("creating the shared directory %q: %w", g.Name, err)
			}
			if abs, err := filepath.Abs(dir); err == nil {
				dir = abs
			}
			dirs = append(dirs, dir)
			files[g.Name] = mustJSON(dir)
		case g.NativePath != "":
			files[g.Name] = mustJSON(filepath.Clean(g.NativePath))
		default:
			files[g.Name] = g.Refs
		}
	}
	return files, dirs, nil
}

func removeDirs(dirs []string, log *slog.Logger) {
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			log.Error("removing a run's shared directory failed", "dir", d, "error", err)
		}
	}
}
