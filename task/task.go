// Package task is the registry of background tasks: the live handles of
// workflow runs started in the background and of processes (Bash commands
// given run_in_background), which a model polls (task_output), waits on
// (task_wait, up to 20 at once) and stops (task_kill) while it goes on with
// other work (seed 001, "后台任务").
//
// The registry lives in memory: a task is a handle, not a record. The runs
// behind workflow tasks persist in the store on their own; after a restart
// their tasks are gone and the runs are marked interrupted by the runtime.
package task

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/weft-run/weft/policy/secret"
)

// Task statuses. A task is running until it ends in one of the others.
const (
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Task kinds made by this package; Submit accepts any other.
const (
	KindWorkflow = "workflow"
	KindProcess  = "process"
	// KindSubagent: a run of a background sub-agent (package subagent).
	KindSubagent = "subagent"
)

// Limits of Wait.
const (
	// MaxWaitIDs is how many tasks one Wait may name.
	MaxWaitIDs = 20
)

// Defaults of Options.
const (
	DefaultTermGrace    = 5 * time.Second
	DefaultKillGrace    = 5 * time.Second
	DefaultKeepFinished = 1000
	DefaultMaxProcesses = 16
)

// Errors callers branch on (errors.Is).
var (
	// ErrUnknownTask: no task has the id (or it was finished long enough
	// ago to have been dropped, see Options.KeepFinished).
	ErrUnknownTask = errors.New("unknown task")
	// ErrInvalid: the request itself is wrong (no ids, more than
	// MaxWaitIDs, an unknown wait mode, a negative timeout); the message
	// says how.
	ErrInvalid = errors.New("invalid task request")
	// ErrClosed: the registry was closed and takes no new tasks.
	ErrClosed = errors.New("task registry is closed")
	// ErrTooMany: Options.MaxProcesses process tasks are running already.
	ErrTooMany = errors.New("too many background processes")
)

// Task is the state of one background task, as the list endpoint and the
// task tools show it.
type Task struct {
	ID          string          `json:"taskId"`
	Kind        string          `json:"kind"`
	WorkflowID  string          `json:"workflowId,omitempty"`
	RunID       string          `json:"runId,omitempty"`
	SubagentID  string          `json:"subagentId,omitempty"`
	Description string          `json:"description,omitempty"`
	Status      string          `json:"status"`
	Result      json.RawMessage `json:"result,omitempty"`
	Error       string          `json:"error,omitempty"`
	CreatedAt   time.Time       `json:"createdAt"`
	FinishedAt  time.Time       `json:"finishedAt,omitzero"`
	// Node is the weft serve node whose process runs the task (tasks are
	// that node's: its task tools and /v1/tasks reach them); "" when the
	// registry was given no node id.
	Node string `json:"node,omitempty"`
}

// Done reports whether the task has ended.
func (t Task) Done() bool { return t.Status != StatusRunning }

// WorkflowRunner starts and watches workflow runs; the runtime implements
// it.
type WorkflowRunner interface {
	// StartWorkflow validates inputs against the workflow's contract and
	// starts a run; its errors are user-facing.
	StartWorkflow(ctx context.Context, workflowID string, inputs json.RawMessage) (runID string, err error)
	// WaitRun blocks until the run ends (status completed, failed,
	// cancelled or interrupted) or ctx is done.
	WaitRun(ctx context.Context, runID string) (status string, result json.RawMessage, errMsg string, err error)
	// CancelRun asks the run to stop; false when there is no live run.
	CancelRun(runID string) bool
}

// Options configure a Registry. The zero value is usable.
type Options struct {
	// Logger receives warnings (a task that would not stop); nil discards.
	Logger *slog.Logger
	// Now stamps CreatedAt and FinishedAt; nil means time.Now.
	Now func() time.Time
	// OnCreated is called once per task, after it is registered and
	// before its work can finish (so before OnCompleted for it).
	OnCreated func(Task)
	// OnCompleted is called once per task when it ends. Both hooks run on
	// the registry's goroutines and should return quickly.
	OnCompleted func(Task)
	// TermGrace is how long Kill waits after the cooperative cancel before
	// sending SIGTERM to a process task (or giving up on any other task).
	// Zero means DefaultTermGrace.
	TermGrace time.Duration
	// KillGrace is how long Kill waits after SIGTERM before SIGKILL, and
	// after SIGKILL before giving up. Zero means DefaultKillGrace.
	KillGrace time.Duration
	// KeepFinished bounds how many finished tasks stay listed; the oldest
	// finished go first. Zero means DefaultKeepFinished.
	KeepFinished int
	// Node names the node the registry's tasks run on (Task.Node).
	Node string
	// MaxProcesses bounds how many process tasks run at once; SubmitProcess
	// fails with ErrTooMany beyond it. Zero means DefaultMaxProcesses.
	MaxProcesses int
	// Secrets are the registered secrets: process tasks get the ones
	// passed through as variables (secret.ToolEnv), and their output is
	// redacted before it is capped. nil means none.
	Secrets *secret.Set
}

// Registry holds the background tasks. It is safe for concurrent use.
type Registry struct {
	runner WorkflowRunner
	opt    Options
	log    *slog.Logger

	// base is the parent of every task's context: tasks outlive the calls
	// that submit them, and end with the registry.
	base    context.Context
	stopAll context.CancelFunc
	wg      sync.WaitGroup

	mu       sync.Mutex
	tasks    map[string]*entry
	finished []string // ids in the order they finished, for KeepFinished
	changed  chan struct{}
	closed   bool
	procs    int // process tasks holding a slot of MaxProcesses
}

// entry is a task with the means to stop it. t is guarded by Registry.mu.
type entry struct {
	t       Task
	done    chan struct{}
	killing bool
	// finishing: finish has begun; the end is recorded once.
	finishing bool
	// stop asks the work to end (context cancel, CancelRun, SIGINT).
	stop func()
	// signal reaches a process task's process group; nil otherwise.
	signal func(syscall.Signal) error
	// abandon cancels the work's context: the last resort of Kill.
	abandon context.CancelFunc
	// slot: the task holds one of Options.MaxProcesses until it ends.
	slot bool
	// out is a process task's kept output (nil when its caller took the
	// output itself); read is where the next ReadOutput starts.
	out  *tailBuffer
	read int64
}

// outcome is how a task's work ended.
type outcome struct {
	status string
	result json.RawMessage
	err    string
}

// NewRegistry returns an empty registry. runner may be nil when there are
// no workflows; SubmitWorkflow then fails.
func NewRegistry(runner WorkflowRunner, opt Options) *Registry {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.TermGrace <= 0 {
		opt.TermGrace = DefaultTermGrace
	}
	if opt.KillGrace <= 0 {
		opt.KillGrace = DefaultKillGrace
	}
	if opt.KeepFinished <= 0 {
		opt.KeepFinished = DefaultKeepFinished
	}
	if opt.MaxProcesses <= 0 {
		opt.MaxProcesses = DefaultMaxProcesses
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base, stop := context.WithCancel(context.Background())
	return &Registry{runner: runner, opt: opt, log: log, base: base, stopAll: stop,
		tasks: map[string]*entry{}, changed: make(chan struct{})}
}

// newID is "task_" and 12 hex digits.
func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "task_" + hex.EncodeToString(b[:])
}

// SubmitWorkflow starts a run of the workflow and returns at once with its
// task. The run's validation errors come back as they are (user-facing).
// The run is watched with ctx's values but not its cancellation: the task
// outlives the call.
func (r *Registry) SubmitWorkflow(ctx context.Context, workflowID string, inputs json.RawMessage) (Task, error) {
	if r.runner == nil {
		return Task{}, errors.New("background workflows are not available here")
	}
	if strings.TrimSpace(workflowID) == "" {
		return Task{}, fmt.Errorf("%w: workflowId is empty", ErrInvalid)
	}
	if r.isClosed() {
		return Task{}, ErrClosed
	}
	runID, err := r.runner.StartWorkflow(ctx, workflowID, inputs)
	if err != nil {
		return Task{}, err
	}
	wctx, abandon := r.taskContext(ctx)
	e := &entry{
		t: Task{Kind: KindWorkflow, WorkflowID: workflowID, RunID: runID,
			Description: "workflow " + workflowID},
		stop:    func() { r.runner.CancelRun(runID) },
		abandon: abandon,
	}
	work := func() outcome {
		status, result, errMsg, err := r.runner.WaitRun(wctx, runID)
		if err != nil {
			if wctx.Err() != nil {
				return outcome{status: StatusCancelled, err: "stopped waiting for run " + runID}
			}
			return outcome{status: StatusFailed, err: fmt.Sprintf("waiting for run %s: %v", runID, err)}
		}
		switch status {
		case StatusCompleted:
			return outcome{status: StatusCompleted, result: result}
		case StatusCancelled:
			return outcome{status: StatusCancelled, result: result, err: errMsg}
		case "interrupted":
			if errMsg == "" {
				errMsg = "run " + runID + " was interrupted"
			}
			return outcome{status: StatusFailed, result: result, err: errMsg}
		default:
			if errMsg == "" {
				errMsg = fmt.Sprintf("run %s ended %s", runID, status)
			}
			return outcome{status: StatusFailed, result: result, err: errMsg}
		}
	}
	if err := r.start(e, work); err != nil {
		abandon()
		r.runner.CancelRun(runID)
		return Task{}, err
	}
	return r.snapshot(e), nil
}

// Submit runs fn in the background as a task of the given kind and returns
// at once. fn's context carries ctx's values, not its cancellation; it is
// cancelled by Kill (the cooperative step) and by Close. fn's error makes
// the task failed, or cancelled when it follows a Kill.
//
// signal, when not nil, makes the task process-backed: Kill escalates to
// signal(SIGTERM) after Options.TermGrace and signal(SIGKILL) after
// Options.KillGrace when fn has not returned.
func (r *Registry) Submit(ctx context.Context, kind, description string, fn func(ctx context.Context) (json.RawMessage, error), signal func(syscall.Signal) error) (Task, error) {
	if fn == nil {
		return Task{}, errors.New("submit task: nil function")
	}
	if kind == "" {
		return Task{}, errors.New("submit task: empty kind")
	}
	fctx, cancel := r.taskContext(ctx)
	e := &entry{t: Task{Kind: kind, Description: description}, stop: cancel, abandon: cancel, signal: signal}
	if err := r.start(e, r.funcWork(fctx, fn)); err != nil {
		cancel()
		return Task{}, err
	}
	return r.snapshot(e), nil
}

// SubmitSubagent runs fn, one run of the background sub-agent subagentID,
// as a task of kind KindSubagent: Submit with the sub-agent's id on the
// task, so that the task list shows which sub-agent each task is.
func (r *Registry) SubmitSubagent(ctx context.Context, subagentID, description string, fn func(ctx context.Context) (json.RawMessage, error)) (Task, error) {
	if fn == nil {
		return Task{}, errors.New("submit task: nil function")
	}
	fctx, cancel := r.taskContext(ctx)
	e := &entry{t: Task{Kind: KindSubagent, SubagentID: subagentID, Description: description}, stop: cancel, abandon: cancel}
	if err := r.start(e, r.funcWork(fctx, fn)); err != nil {
		cancel()
		return Task{}, err
	}
	return r.snapshot(e), nil
}

// funcWork is the work of a task that runs fn: fn's error makes it
// failed, or cancelled when fn's context was (a Kill, Close).
func (r *Registry) funcWork(fctx context.Context, fn func(ctx context.Context) (json.RawMessage, error)) func() outcome {
	return func() outcome {
		res, err := fn(fctx)
		switch {
		case err == nil:
			return outcome{status: StatusCompleted, result: res}
		case fctx.Err() != nil && errors.Is(err, context.Canceled):
			return outcome{status: StatusCancelled, result: res, err: err.Error()}
		default:
			return outcome{status: StatusFailed, result: res, err: err.Error()}
		}
	}
}

// taskContext is a context with ctx's values, cancelled by the returned
// function or when the registry closes.
func (r *Registry) taskContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	c, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(r.base, cancel)
	return c, func() { stop(); cancel() }
}

// start registers e and runs work in the background.
func (r *Registry) start(e *entry, work func() outcome) error {
	e.done = make(chan struct{})
	e.t.Status = StatusRunning
	e.t.CreatedAt = r.opt.Now()
	e.t.Node = r.opt.Node
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	for {
		e.t.ID = newID()
		if _, taken := r.tasks[e.t.ID]; !taken {
			break
		}
	}
	r.tasks[e.t.ID] = e
	r.wg.Add(1)
	t := e.t
	r.mu.Unlock()
	r.hook("OnCreated", r.opt.OnCreated, t)
	go func() {
		defer r.wg.Done()
		r.finish(e, runWork(work))
	}()
	return nil
}

// hook calls fn, if set; a panicking hook is logged, not passed on: the
// task must still end.
func (r *Registry) hook(name string, fn func(Task), t Task) {
	if fn == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("task: hook panicked", "hook", name, "task", t.ID, "panic", p)
		}
	}()
	fn(t)
}

// runWork runs work, turning a panic into a failure: a task must end.
func runWork(work func() outcome) (o outcome) {
	defer func() {
		if p := recover(); p != nil {
			o = outcome{status: StatusFailed, err: fmt.Sprintf("task panicked: %v", p)}
		}
	}()
	return work()
}

// finish records how e ended, once; later calls are ignored (work that
// returns after Kill gave up on it). OnCompleted runs before the end is
// visible, so that whoever sees the task ended can rely on the hook having
// run.
func (r *Registry) finish(e *entry, o outcome) {
	r.mu.Lock()
	if e.finishing {
		r.mu.Unlock()
		return
	}
	e.finishing = true
	if e.killing && o.status == StatusFailed {
		// The failure is what the kill looked like from inside.
		o.status = StatusCancelled
	}
	t := e.t
	t.Status, t.Result, t.Error = o.status, o.result, o.err
	t.FinishedAt = r.opt.Now()
	if e.slot {
		e.slot = false
		r.procs--
	}
	r.mu.Unlock()
	if e.abandon != nil {
		e.abandon() // release the context's resources
	}
	r.hook("OnCompleted", r.opt.OnCompleted, t)

	r.mu.Lock()
	e.t = t
	close(e.done)
	close(r.changed)
	r.changed = make(chan struct{})
	r.finished = append(r.finished, t.ID)
	for len(r.finished) > r.opt.KeepFinished {
		delete(r.tasks, r.finished[0])
		r.finished = slices.Delete(r.finished, 0, 1)
	}
	r.mu.Unlock()
}

func (r *Registry) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

func (r *Registry) snapshot(e *entry) Task {
	r.mu.Lock()
	defer r.mu.Unlock()
	return e.t
}

func (r *Registry) lookup(id string) (*entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.tasks[id]
	if e == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownTask, id)
	}
	return e, nil
}

// Get returns the task's current state; ErrUnknownTask.
func (r *Registry) Get(id string) (Task, error) {
	e, err := r.lookup(id)
	if err != nil {
		return Task{}, err
	}
	return r.snapshot(e), nil
}

// List returns every task, newest first.
func (r *Registry) List() []Task {
	r.mu.Lock()
	out := make([]Task, 0, len(r.tasks))
	for _, e := range r.tasks {
		out = append(out, e.t)
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Task) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out
}

// Output returns the task's state: at once when timeout is 0, otherwise
// once it ends or timeout passes (the task then still running). It fails
// only for an unknown task, a negative timeout or ctx ending.
func (r *Registry) Output(ctx context.Context, id string, timeout time.Duration) (Task, error) {
	if timeout < 0 {
		return Task{}, fmt.Errorf("%w: negative timeout", ErrInvalid)
	}
	e, err := r.lookup(id)
	if err != nil {
		return Task{}, err
	}
	if timeout > 0 {
		tm := time.NewTimer(timeout)
		defer tm.Stop()
		select {
		case <-e.done:
		case <-tm.C:
		case <-ctx.Done():
			return r.snapshot(e), ctx.Err()
		}
	}
	return r.snapshot(e), nil
}

// Wait waits until any or all (mode "any" or "all"; "" means "all") of the
// named tasks end, or timeout passes (0: do not wait), and returns their
// states in the order named (duplicates dropped). 1 to MaxWaitIDs ids;
// every one must be known.
func (r *Registry) Wait(ctx context.Context, ids []string, mode string, timeout time.Duration) ([]Task, error) {
	switch {
	case len(ids) == 0:
		return nil, fmt.Errorf("%w: no task ids given", ErrInvalid)
	case timeout < 0:
		return nil, fmt.Errorf("%w: negative timeout", ErrInvalid)
	}
	if mode == "" {
		mode = "all"
	}
	if mode != "any" && mode != "all" {
		return nil, fmt.Errorf("%w: mode %q: use \"any\" or \"all\"", ErrInvalid, mode)
	}
	var uniq []string
	for _, id := range ids {
		if !slices.Contains(uniq, id) {
			uniq = append(uniq, id)
		}
	}
	if len(uniq) > MaxWaitIDs {
		return nil, fmt.Errorf("%w: %d task ids given; wait on at most %d at a time", ErrInvalid, len(uniq), MaxWaitIDs)
	}
	entries := make([]*entry, len(uniq))
	var unknown []string
	r.mu.Lock()
	for i, id := range uniq {
		entries[i] = r.tasks[id]
		if entries[i] == nil {
			unknown = append(unknown, id)
		}
	}
	r.mu.Unlock()
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTask, strings.Join(unknown, ", "))
	}

	var deadline <-chan time.Time
	if timeout > 0 {
		tm := time.NewTimer(timeout)
		defer tm.Stop()
		deadline = tm.C
	}
	for {
		r.mu.Lock()
		out := make([]Task, len(entries))
		ended := 0
		for i, e := range entries {
			out[i] = e.t
			if e.t.Done() {
				ended++
			}
		}
		changed := r.changed
		r.mu.Unlock()
		if ended == len(out) || (mode == "any" && ended > 0) || timeout == 0 {
			return out, nil
		}
		select {
		case <-changed:
		case <-deadline:
			return r.states(entries), nil
		case <-ctx.Done():
			return r.states(entries), ctx.Err()
		}
	}
}

func (r *Registry) states(entries []*entry) []Task {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Task, len(entries))
	for i, e := range entries {
		out[i] = e.t
	}
	return out
}

// Kill stops a running task and returns at once; the task ends as
// cancelled shortly after. The steps, each taken only if the task is still
// running: the cooperative cancel (a workflow run is cancelled, a Go
// function's context is cancelled, a process gets SIGINT); after
// Options.TermGrace, SIGTERM to a process task's group; after
// Options.KillGrace, SIGKILL; after another KillGrace the registry stops
// waiting and marks the task cancelled anyway. Once a process task has
// ended, SIGKILL goes to its group as well, for children the earlier
// steps left behind. Killing a finished task,
// or one already being killed, does nothing. ErrUnknownTask.
func (r *Registry) Kill(id string) error {
	e, err := r.lookup(id)
	if err != nil {
		return err
	}
	r.mu.Lock()
	if e.t.Done() || e.killing {
		r.mu.Unlock()
		return nil
	}
	e.killing = true
	// Read under the lock: finish replaces e.t as a whole meanwhile.
	tid, kind := e.t.ID, e.t.Kind
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		r.escalate(e, tid, kind)
	}()
	return nil
}

func (r *Registry) escalate(e *entry, tid, kind string) {
	wait := func(d time.Duration) bool {
		tm := time.NewTimer(d)
		defer tm.Stop()
		select {
		case <-e.done:
			return true
		case <-tm.C:
			return false
		}
	}
	if e.signal != nil {
		// Whatever the steps below achieve, nothing of a killed process
		// task's group is left: children the cooperative step missed (a
		// shell's "cmd &" ignores SIGINT) and that kept no pipe open
		// would outlive the task. SIGKILL reaches only processes still in
		// the group; once they are all gone the call finds none.
		defer func() { _ = e.signal(syscall.SIGKILL) }()
	}
	e.stop()
	if wait(r.opt.TermGrace) {
		return
	}
	if e.signal != nil {
		if err := e.signal(syscall.SIGTERM); err != nil {
			r.log.Debug("task: SIGTERM", "task", tid, "err", err)
		}
		if wait(r.opt.KillGrace) {
			return
		}
		if err := e.signal(syscall.SIGKILL); err != nil {
			r.log.Debug("task: SIGKILL", "task", tid, "err", err)
		}
	}
	e.abandon()
	if wait(r.opt.KillGrace) {
		return
	}
	r.log.Warn("task did not stop when killed; no longer waiting for it", "task", tid, "kind", kind)
	r.finish(e, outcome{status: StatusCancelled, err: "killed; the task did not stop and was abandoned"})
}

// Close stops taking tasks, kills every running one and waits for them to
// end, or for ctx; then it cancels whatever is left and returns ctx's
// error.
func (r *Registry) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	var running []string
	for id, e := range r.tasks {
		if !e.t.Done() {
			running = append(running, id)
		}
	}
	r.mu.Unlock()
	for _, id := range running {
		_ = r.Kill(id)
	}
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		r.stopAll()
		return nil
	case <-ctx.Done():
		r.mu.Lock()
		var sigs []func(syscall.Signal) error
		for _, e := range r.tasks {
			if !e.t.Done() && e.signal != nil {
				sigs = append(sigs, e.signal)
			}
		}
		r.mu.Unlock()
		for _, s := range sigs {
			_ = s(syscall.SIGKILL)
		}
		r.stopAll()
		return ctx.Err()
	}
}
