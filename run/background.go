package run

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/weft-run/weft/internal/lease"
	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/schedule"
	"github.com/weft-run/weft/task"
)

// The background work's types, named here so front doors need no other
// package.
type (
	Task            = task.Task
	Schedule        = record.Schedule
	ScheduleRequest = schedule.Request
)

// Errors of background work front doors map onto statuses.
var (
	ErrUnknownTask     = task.ErrUnknownTask
	ErrInvalidSchedule = schedule.ErrInvalid
	ErrTooManyActive   = schedule.ErrTooMany
)

// Background owns background tasks (published workflows running detached,
// Bash commands given run_in_background, task_* tools) and the schedules
// that submit them. Its tasks belong to the server, not to the session
// whose model started one: they outlive the turn and the session, any
// session's task tools reach them by id, and Close (server shutdown) kills
// what still runs.
type Background struct {
	Tasks     *task.Registry
	Schedules *schedule.Scheduler
}

// BackgroundConfig configures NewBackground.
type BackgroundConfig struct {
	Runs      *Service
	Schedules schedule.Store
	// Hooks fires task_created and task_completed (the session service's
	// hooks: session.Service.FireHook); nil means none.
	Hooks func(ev hook.Event, sessionID string, fill func(*hook.Input))
	// Secrets are redacted from task output; nil means none.
	Secrets *secret.Set
	Clock   schedule.Clock // nil: the real clock
	Logger  *slog.Logger
	// Leases, Swap and Poll make the schedules fire once across nodes
	// sharing the store (schedule.Options' fields of the same names).
	Leases *lease.Keeper
	Swap   schedule.Swapper
	Poll   time.Duration
}

// NewBackground starts the task registry and the scheduler; schedules are
// persisted, so the ones active before a restart carry on.
func NewBackground(ctx context.Context, cfg BackgroundConfig) (*Background, error) {
	if cfg.Runs == nil || cfg.Schedules == nil {
		return nil, errors.New("run: BackgroundConfig.Runs and Schedules are required")
	}
	opt := task.Options{Logger: cfg.Logger}
	if cfg.Leases != nil {
		opt.Node = cfg.Leases.Holder()
	}
	opt.Secrets = cfg.Secrets
	if cfg.Hooks != nil {
		opt.OnCreated = taskHook(cfg.Hooks, hook.TaskCreated)
		opt.OnCompleted = taskHook(cfg.Hooks, hook.TaskCompleted)
	}
	reg := task.NewRegistry(cfg.Runs.TaskRunner(), opt)
	submit := func(ctx context.Context, workflowID string, inputs json.RawMessage) (string, error) {
		t, err := reg.SubmitWorkflow(ctx, workflowID, inputs)
		return t.ID, err
	}
	sch := schedule.NewScheduler(cfg.Schedules, submit, schedule.Options{Clock: cfg.Clock, Logger: cfg.Logger,
		Check: cfg.Runs.CheckWorkflow, Leases: cfg.Leases, Swap: cfg.Swap, Poll: cfg.Poll})
	if err := sch.Start(ctx); err != nil {
		_ = reg.Close(ctx)
		return nil, err
	}
	return &Background{Tasks: reg, Schedules: sch}, nil
}

// Close stops the scheduler and the tasks still running.
func (b *Background) Close(ctx context.Context) error {
	b.Schedules.Stop()
	return b.Tasks.Close(ctx)
}

func taskHook(fire func(hook.Event, string, func(*hook.Input)), ev hook.Event) func(task.Task) {
	return func(t task.Task) {
		fire(ev, "", func(in *hook.Input) {
			in.TaskID, in.TaskDescription = t.ID, t.Description
			in.Extra = map[string]any{"status": t.Status, "run_id": t.RunID, "workflow_id": t.WorkflowID}
		})
	}
}
