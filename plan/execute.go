package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
)

// RunStep runs one step's tool call with rendered args and returns its
// result (JSON; anything else is stored as a JSON string, nothing as null).
// It must honour ctx. The runtime's RunStep is where the safety pipeline
// applies, exactly as for a chat tool call.
type RunStep func(ctx context.Context, i int, s Step, args json.RawMessage) (json.RawMessage, error)

// StepStatus is how a step ended.
type StepStatus string

const (
	// StatusCompleted: Run returned a result (or it was reused).
	StatusCompleted StepStatus = "completed"
	// StatusFailed: Run returned an error or panicked, approval was
	// denied, or the args could not be rendered.
	StatusFailed StepStatus = "failed"
	// StatusSkipped: the step never started because a step failed (its
	// own dependency, or another step: a failed step fails the run).
	StatusSkipped StepStatus = "skipped"
	// StatusCancelled: the run's context ended before the step finished.
	StatusCancelled StepStatus = "cancelled"
)

// StepResult is the outcome of one step.
type StepResult struct {
	Index  int             `json:"index"`
	ID     string          `json:"id"`
	Status StepStatus      `json:"status"`
	Result json.RawMessage `json:"result,omitempty"`
	Err    string          `json:"error,omitempty"`
	// Started is when Run was called (zero when it never was); Finished is
	// when the step ended (zero for steps that never started).
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	// Reused is set when the result came from ExecConfig.Completed.
	Reused bool `json:"reused,omitempty"`
}

// ExecConfig says how to run a plan.
type ExecConfig struct {
	// Run runs a step's tool call. Required.
	Run RunStep
	// Completed holds, by step id, the results of steps completed in an
	// earlier execution (resume, rewind); those steps are not run again.
	Completed map[string]json.RawMessage
	// Inputs and Files are what {{inputs.x}} and "@file:x" resolve to.
	Inputs, Files map[string]json.RawMessage
	// Approve is asked, in the step's goroutine before it runs, for steps
	// with RequiresApproval, with the rendered args: exactly what Run will
	// get if it approves. An error denies the step (it fails), or, when
	// ctx is done, cancels it. Nil denies every such step. It must honour
	// ctx.
	Approve func(ctx context.Context, i int, s Step, args json.RawMessage) error
	// OnStart, when set, is called from the step's goroutine just before
	// Run, with the rendered args.
	OnStart func(i int, s Step, args json.RawMessage)
	// OnDone, when set, is called once per step with its final result,
	// from Execute's goroutine (never concurrently): reused steps first,
	// then steps as they finish, then the steps that never started.
	OnDone func(r StepResult)
	// MaxParallel bounds the steps in flight (a step waiting for approval
	// counts); 0 means no bound.
	MaxParallel int
	// Logger receives the stack of a step that panicked; nil means
	// slog.Default().
	Logger *slog.Logger
}

// stepDone is what a step's goroutine reports.
type stepDone struct {
	i                 int
	result            json.RawMessage
	err               error
	cancelled         bool
	started, finished time.Time
}

type stepState uint8

const (
	statePending stepState = iota
	stateRunning
	stateDone
)

type executor struct {
	plan  Plan
	cfg   ExecConfig
	g     *graph
	res   []StepResult
	state []stepState
	// waiting counts each step's unfinished dependencies; dependents of
	// step i are succ[off[i]:off[i+1]] (one flat slice: no per-step
	// allocation).
	waiting []int32
	off     []int32
	succ    []int32
	ready   []int
	done    chan stepDone
	failed  *StepError
}

// Execute runs p. A step starts as soon as all its dependencies have
// completed (there are no layer barriers), so independent steps overlap.
// Placeholders are rendered just before a step starts; a render error
// fails the step.
//
// When a step fails (an error, a denied approval, a panic in Run), no new
// step starts; steps in flight finish; the others are skipped, and Execute
// returns a *StepError naming the first failed step. When ctx ends, steps
// in flight see it, nothing new starts, unfinished steps are cancelled and
// Execute returns ctx.Err(). Execute returns only after every step's
// goroutine has ended.
//
// The results are in plan order, one per step. A plan whose ids or
// dependencies are invalid is refused with a *ValidationError before
// anything runs; Validate checks the rest (tools, placeholders, schemas).
func Execute(ctx context.Context, p Plan, cfg ExecConfig) ([]StepResult, error) {
	var probs []Problem
	g := buildGraph(p, func(i int, msg string) {
		probs = append(probs, Problem{Step: i, StepID: p.ID(i), Msg: msg})
	})
	if len(probs) > 0 {
		return nil, &ValidationError{Problems: probs}
	}
	if cfg.Run == nil {
		return nil, errors.New("plan: ExecConfig.Run is nil")
	}
	e := newExecutor(p, cfg, g)
	return e.run(ctx)
}

func newExecutor(p Plan, cfg ExecConfig, g *graph) *executor {
	n := len(p.Steps)
	e := &executor{
		plan:    p,
		cfg:     cfg,
		g:       g,
		res:     make([]StepResult, n),
		state:   make([]stepState, n),
		waiting: make([]int32, n),
		off:     make([]int32, n+1),
		done:    make(chan stepDone, n), // never blocks a finishing step
	}
	edges := 0
	for i, deps := range g.deps {
		e.res[i] = StepResult{Index: i, ID: g.ids[i]}
		for _, d := range deps {
			e.off[d+1]++
		}
		edges += len(deps)
	}
	for i := 1; i <= n; i++ {
		e.off[i] += e.off[i-1]
	}
	e.succ = make([]int32, edges)
	fill := make([]int32, n)
	copy(fill, e.off[:n])
	for i, deps := range g.deps {
		for _, d := range deps {
			e.succ[fill[d]] = int32(i)
			fill[d]++
		}
	}
	return e
}

func (e *executor) run(ctx context.Context) ([]StepResult, error) {
	for i := range e.res {
		if v, ok := e.cfg.Completed[e.g.ids[i]]; ok {
			e.state[i] = stateDone
			e.res[i].Status = StatusCompleted
			e.res[i].Result = normalizeResult(v)
			e.res[i].Reused = true
			e.notify(i)
		}
	}
	for i, deps := range e.g.deps {
		for _, d := range deps {
			if e.state[d] != stateDone {
				e.waiting[i]++
			}
		}
		if e.state[i] == statePending && e.waiting[i] == 0 {
			e.ready = append(e.ready, i)
		}
	}

	running, stopping := 0, false
	ctxDone := ctx.Done()
	for {
		for !stopping && len(e.ready) > 0 && (e.cfg.MaxParallel <= 0 || running < e.cfg.MaxParallel) {
			if ctx.Err() != nil {
				stopping = true
				break
			}
			i := e.ready[0]
			e.ready = e.ready[1:]
			args, err := render(e.plan.Steps[i].Args, execResolver{e, i})
			if err != nil {
				e.finish(stepDone{i: i, err: err, finished: time.Now()})
				stopping = true
				break
			}
			e.state[i] = stateRunning
			running++
			go e.runStep(ctx, i, args)
		}
		if running == 0 {
			break
		}
		select {
		case d := <-e.done:
			running--
			if e.finish(d) != StatusCompleted {
				stopping = true
			}
		case <-ctxDone:
			stopping, ctxDone = true, nil
		}
	}
	return e.res, e.wrapUp(ctx)
}

// finish records a step that ran (or failed to render) and readies its
// dependents.
func (e *executor) finish(d stepDone) StepStatus {
	r := &e.res[d.i]
	e.state[d.i] = stateDone
	r.Started, r.Finished = d.started, d.finished
	switch {
	case d.err == nil:
		r.Status = StatusCompleted
		r.Result = normalizeResult(d.result)
		for _, s := range e.succ[e.off[d.i]:e.off[d.i+1]] {
			e.waiting[s]--
			if e.waiting[s] == 0 && e.state[s] == statePending {
				e.ready = append(e.ready, int(s))
			}
		}
	case d.cancelled:
		r.Status = StatusCancelled
		r.Err = d.err.Error()
	default:
		r.Status = StatusFailed
		r.Err = d.err.Error()
		if e.failed == nil {
			e.failed = &StepError{Index: d.i, ID: r.ID, Err: d.err}
		}
	}
	e.notify(d.i)
	return r.Status
}

// wrapUp settles the steps that never started and returns Execute's error.
func (e *executor) wrapUp(ctx context.Context) error {
	cancelled := false
	root := make([]int, len(e.res)) // the failed step that kept i from running, or -1
	for i := range e.res {
		root[i] = -1
		r := &e.res[i]
		if e.state[i] == stateDone {
			cancelled = cancelled || r.Status == StatusCancelled
			continue
		}
		for _, d := range e.g.deps[i] {
			if e.res[d].Status == StatusFailed {
				root[i] = d
				break
			}
			if root[d] >= 0 {
				root[i] = root[d]
				break
			}
		}
		switch {
		case ctx.Err() != nil:
			r.Status, r.Err = StatusCancelled, "cancelled before it started"
			cancelled = true
		case root[i] >= 0:
			r.Status = StatusSkipped
			r.Err = fmt.Sprintf("dependency step %d (%q) failed", root[i], e.res[root[i]].ID)
		case e.failed != nil:
			r.Status = StatusSkipped
			r.Err = fmt.Sprintf("not started: the run failed at step %d (%q)", e.failed.Index, e.failed.ID)
		default:
			// Unreachable: with no failure and no cancellation every step
			// becomes ready once its dependencies complete.
			r.Status, r.Err = StatusSkipped, "not started"
		}
		e.state[i] = stateDone
		e.notify(i)
	}
	if cancelled && ctx.Err() != nil {
		return ctx.Err()
	}
	if e.failed != nil {
		return e.failed
	}
	return nil
}

func (e *executor) logger() *slog.Logger {
	if e.cfg.Logger != nil {
		return e.cfg.Logger
	}
	return slog.Default()
}

func (e *executor) notify(i int) {
	if e.cfg.OnDone != nil {
		e.cfg.OnDone(e.res[i])
	}
}

// runStep is a step's goroutine: approval, OnStart, Run. A panic anywhere
// in it fails the step instead of the process.
func (e *executor) runStep(ctx context.Context, i int, args json.RawMessage) {
	d := stepDone{i: i}
	defer func() {
		if v := recover(); v != nil {
			d.err = fmt.Errorf("panic: %v", v)
			d.cancelled = false
			e.logger().Error("plan: step panicked", "step", i, "id", e.g.ids[i], "panic", v, "stack", string(debug.Stack()))
		}
		d.finished = time.Now()
		e.done <- d
	}()
	s := e.plan.Steps[i]
	if s.RequiresApproval {
		if e.cfg.Approve == nil {
			d.err = errNoApprover
			return
		}
		if err := e.cfg.Approve(ctx, i, s, args); err != nil {
			d.err = fmt.Errorf("not approved: %w", err)
			d.cancelled = ctx.Err() != nil
			return
		}
	}
	if err := ctx.Err(); err != nil {
		d.err, d.cancelled = err, true
		return
	}
	d.started = time.Now()
	if e.cfg.OnStart != nil {
		e.cfg.OnStart(i, s, args)
	}
	d.result, d.err = e.cfg.Run(ctx, i, s, args)
	d.cancelled = d.err != nil && ctx.Err() != nil
}

// execResolver resolves placeholders against the executor's state. It runs
// on Execute's goroutine, which alone writes that state.
type execResolver struct {
	e *executor
	i int
}

func (r execResolver) step(ref string) (json.RawMessage, error) {
	j, ok := r.e.g.resolve(Ref(ref))
	if !ok {
		return nil, fmt.Errorf("unknown step %q", ref)
	}
	return r.result(j)
}

func (r execResolver) result(j int) (json.RawMessage, error) {
	if res := &r.e.res[j]; r.e.state[j] != stateDone || res.Status != StatusCompleted {
		return nil, fmt.Errorf("step %d (%q) has not completed: make it a dependency", j, res.ID)
	}
	return r.e.res[j].Result, nil
}

func (r execResolver) last() (json.RawMessage, error) {
	if r.i == 0 {
		return nil, errors.New("there is no previous step")
	}
	return r.result(r.i - 1)
}

func (r execResolver) input(name string) (json.RawMessage, error) {
	v, ok := r.e.cfg.Inputs[name]
	if !ok {
		return nil, fmt.Errorf("input %q was not given", name)
	}
	return normalizeResult(v), nil
}

func (r execResolver) file(name string) (json.RawMessage, error) {
	v, ok := r.e.cfg.Files[name]
	if !ok {
		return nil, fmt.Errorf("file %q is not granted", name)
	}
	return normalizeResult(v), nil
}
