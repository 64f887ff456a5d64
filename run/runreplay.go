package run

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/weft-run/weft/plan"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/record"
)

// Replays: resume, fork and rewind start a run again from what the store
// holds. Each pauses for plan review whatever the run's config says (the
// reviewer checks what a replay will do, including side effects of steps
// that are not rolled back), and each is refused under a permission
// posture weaker than the one the run was created under.

// fromStored rebuilds a run's request from its record.
func (m *Service) fromStored(r record.Run) (*prepared, error) {
	p := &prepared{run: r, approve: true}
	if len(r.Config) > 0 {
		if err := json.Unmarshal(r.Config, &p.cfg); err != nil {
			return nil, fmt.Errorf("run %s: stored config: %w", r.ID, err)
		}
	}
	if len(r.Files) > 0 {
		if err := json.Unmarshal(r.Files, &p.grants); err != nil {
			return nil, fmt.Errorf("run %s: stored files: %w", r.ID, err)
		}
	}
	in, err := parseInputs(r.Inputs)
	if err != nil {
		return nil, fmt.Errorf("run %s: stored inputs: %w", r.ID, err)
	}
	p.inputs = in
	if len(r.Plan) > 0 && string(r.Plan) != "null" {
		var pl plan.Plan
		if err := json.Unmarshal(r.Plan, &pl); err != nil {
			return nil, fmt.Errorf("run %s: stored plan: %w", r.ID, err)
		}
		p.plan = &pl
	}
	// A workflow run's stored inputs hold every declared input (omitted
	// ones with their default or null), so their names are the declared
	// ones.
	p.env = m.runEnv(inputNames(in), p.grants)
	if err := m.checkConfig(&p.cfg); err != nil {
		return nil, err
	}
	return p, nil
}

// checkPosture refuses a replay when the mode it would run in now allows
// more than the mode the run was created under.
func (m *Service) checkPosture(r record.Run, cfg RunConfig) error {
	var rec posture
	if len(r.Posture) > 0 {
		if err := json.Unmarshal(r.Posture, &rec); err != nil {
			return fmt.Errorf("run %s: stored posture: %w", r.ID, err)
		}
	}
	recorded := permission.Mode(rec.Mode)
	if recorded == "" {
		recorded = permission.ModeDefault
	}
	cur := m.effectiveMode(cfg, nil)
	if modeRank(cur) > modeRank(recorded) {
		return &PostureError{Recorded: string(recorded), Current: string(cur)}
	}
	return nil
}

// reusable keeps the step results for which keep holds and returns them
// by step id.
func (m *Service) reusable(ctx context.Context, id string, keep func(record.StepResult) bool) (map[string]json.RawMessage, error) {
	if err := m.cfg.Runs.DeleteStepResults(ctx, id, keep); err != nil {
		return nil, err
	}
	steps, err := m.cfg.Runs.StepResults(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(steps))
	for _, s := range steps {
		out[s.StepID] = s.Result
	}
	return out, nil
}

// ResumeRun starts a failed, cancelled or interrupted run again: completed
// steps keep their results and do not run again, the rest run after the
// plan has been reviewed (a plan_approval_requested gate, always). A run
// that ended before its plan was ready is planned again.
func (m *Service) ResumeRun(ctx context.Context, id string) (Run, error) {
	if err := m.idle(ctx, id); err != nil {
		return Run{}, err
	}
	r, err := m.cfg.Runs.GetRun(ctx, id)
	if err != nil {
		return Run{}, err
	}
	switch r.Status {
	case record.RunFailed, record.RunCancelled, record.RunInterrupted, record.RunBudget:
	case record.RunCompleted:
		return Run{}, &ConflictError{Msg: fmt.Sprintf("run %q completed; fork or rewind it to run it again", id)}
	default:
		return Run{}, &ConflictError{Msg: fmt.Sprintf("run %q is %s; only failed, cancelled, interrupted or budget-stopped runs can be resumed", id, r.Status)}
	}
	return m.replayInPlace(ctx, r, "resume", func(s record.StepResult) bool { return s.Status == record.StepCompleted })
}

// RewindRun keeps the results of the first keepSteps steps (those that
// completed), drops the rest, and runs the plan again from there after
// review. Side effects of the dropped steps are not rolled back: the
// review is where a person checks them. Unlike seed 001, the plan keeps
// its later steps, so they run again once approved; the reviewer can send
// a shorter plan to drop them.
func (m *Service) RewindRun(ctx context.Context, id string, keepSteps int) (Run, error) {
	if err := m.idle(ctx, id); err != nil {
		return Run{}, err
	}
	r, err := m.cfg.Runs.GetRun(ctx, id)
	if err != nil {
		return Run{}, err
	}
	if !finalStatus(r.Status) {
		return Run{}, &ConflictError{Msg: fmt.Sprintf("run %q is %s; cancel it before rewinding", id, r.Status)}
	}
	var pl plan.Plan
	if len(r.Plan) == 0 || json.Unmarshal(r.Plan, &pl) != nil || len(pl.Steps) == 0 {
		return Run{}, &ConflictError{Msg: fmt.Sprintf("run %q has no plan to rewind", id)}
	}
	if keepSteps < 0 || keepSteps > len(pl.Steps) {
		return Run{}, &record.InvalidError{Err: fmt.Errorf("keepSteps must be from 0 to %d (the plan's steps)", len(pl.Steps))}
	}
	return m.replayInPlace(ctx, r, "rewind", func(s record.StepResult) bool {
		return s.Index < keepSteps && s.Status == record.StepCompleted
	})
}

func (m *Service) replayInPlace(ctx context.Context, r record.Run, how string, keep func(record.StepResult) bool) (Run, error) {
	p, err := m.fromStored(r)
	if err != nil {
		return Run{}, err
	}
	if err := m.checkPosture(r, p.cfg); err != nil {
		return Run{}, err
	}
	if p.reuse, err = m.reusable(ctx, r.ID, keep); err != nil {
		return Run{}, err
	}
	p.review = how
	// Claimed before the record says live, so that no other node's
	// sweeper takes it for one whose node died.
	if err := m.claim(ctx, p, r.ID); err != nil {
		return Run{}, err
	}
	r.Status, r.Error, r.Summary = record.RunPlanning, "", ""
	if err := m.cfg.Runs.UpdateRun(ctx, r); err != nil {
		m.unclaim(p, r.ID)
		return Run{}, err
	}
	p.run = r
	if err := m.start(p); err != nil {
		return Run{}, err
	}
	return r, nil
}

// ForkRun copies a run's plan (with its goal, config, inputs and files)
// into a new run, which pauses for plan review before anything runs.
func (m *Service) ForkRun(ctx context.Context, id string) (Run, error) {
	r, err := m.cfg.Runs.GetRun(ctx, id)
	if err != nil {
		return Run{}, err
	}
	p, err := m.fromStored(r)
	if err != nil {
		return Run{}, err
	}
	if p.plan == nil {
		return Run{}, &ConflictError{Msg: fmt.Sprintf("run %q has no plan yet to fork", id)}
	}
	if err := m.checkPosture(r, p.cfg); err != nil {
		return Run{}, err
	}
	p.run = record.Run{Goal: r.Goal, WorkflowID: r.WorkflowID, ParentID: r.ID}
	p.review = "fork"
	return m.launch(ctx, p)
}
