package task

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// long bounds how long a test waits for something that should happen at
// once; tests never sleep.
const long = 10 * time.Second

type hookLog struct {
	mu     sync.Mutex
	events []string
}

func (h *hookLog) add(kind string, t Task) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, kind+" "+t.ID+" "+t.Status)
}

func (h *hookLog) get() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.events...)
}

func newTestRegistry(t *testing.T, runner WorkflowRunner, opt Options) *Registry {
	t.Helper()
	if opt.TermGrace == 0 {
		opt.TermGrace = 50 * time.Millisecond
	}
	if opt.KillGrace == 0 {
		opt.KillGrace = 50 * time.Millisecond
	}
	r := NewRegistry(runner, opt)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), long)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

func mustEnd(t *testing.T, r *Registry, id string) Task {
	t.Helper()
	got, err := r.Output(context.Background(), id, long)
	if err != nil {
		t.Fatalf("Output(%s): %v", id, err)
	}
	if !got.Done() {
		t.Fatalf("task %s still running after %v", id, long)
	}
	return got
}

func TestWorkflowOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		workflow   string
		inputs     string
		wantStatus string
		wantResult string
		wantErr    string
	}{
		{"echo", `{"n":12345678901234567890}`, StatusCompleted, `{"n":12345678901234567890}`, ""},
		{"fail", `{}`, StatusFailed, "", "step 2 (fetch): connection refused"},
		{"interrupted", ``, StatusFailed, "", "was interrupted"},
	}
	for _, tt := range tests {
		t.Run(tt.workflow, func(t *testing.T) {
			t.Parallel()
			var hooks hookLog
			r := newTestRegistry(t, newMemRunner(testWorkflows(nil, nil)), Options{
				OnCreated:   func(t Task) { hooks.add("created", t) },
				OnCompleted: func(t Task) { hooks.add("completed", t) },
			})
			sub, err := r.SubmitWorkflow(context.Background(), tt.workflow, json.RawMessage(tt.inputs))
			if err != nil {
				t.Fatal(err)
			}
			if sub.Kind != KindWorkflow || sub.WorkflowID != tt.workflow || sub.RunID == "" || !strings.HasPrefix(sub.ID, "task_") || sub.CreatedAt.IsZero() {
				t.Fatalf("submitted task = %+v", sub)
			}
			got := mustEnd(t, r, sub.ID)
			if got.Status != tt.wantStatus || string(got.Result) != tt.wantResult || !strings.Contains(got.Error, tt.wantErr) || got.FinishedAt.IsZero() {
				t.Fatalf("task = %+v, want status %s result %s error ~%q", got, tt.wantStatus, tt.wantResult, tt.wantErr)
			}
			want := []string{"created " + sub.ID + " running", "completed " + sub.ID + " " + tt.wantStatus}
			if ev := hooks.get(); fmt.Sprint(ev) != fmt.Sprint(want) {
				t.Fatalf("hooks = %q, want %q", ev, want)
			}
		})
	}
}

func TestSubmitWorkflowErrors(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t, newMemRunner(testWorkflows(nil, nil)), Options{})
	if _, err := r.SubmitWorkflow(context.Background(), "nope", nil); err == nil || !strings.Contains(err.Error(), `workflow "nope" not found`) {
		t.Fatalf("unknown workflow: err = %v", err)
	}
	if _, err := r.SubmitWorkflow(context.Background(), " ", nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty workflow id: err = %v", err)
	}
	if n := len(r.List()); n != 0 {
		t.Fatalf("failed submissions left %d tasks", n)
	}
	noRunner := newTestRegistry(t, nil, Options{})
	if _, err := noRunner.SubmitWorkflow(context.Background(), "echo", nil); err == nil {
		t.Fatal("a registry without a runner started a workflow")
	}
}

func TestOutputTimeouts(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	r := newTestRegistry(t, newMemRunner(testWorkflows(release, nil)), Options{})
	sub, err := r.SubmitWorkflow(context.Background(), "gate", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Output(context.Background(), sub.ID, 0); err != nil || got.Status != StatusRunning {
		t.Fatalf("Output(0) = %+v, %v", got, err)
	}
	start := time.Now()
	if got, err := r.Output(context.Background(), sub.ID, 30*time.Millisecond); err != nil || got.Status != StatusRunning || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("Output(30ms) = %+v, %v after %v", got, err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Output(ctx, sub.ID, long); !errors.Is(err, context.Canceled) {
		t.Fatalf("Output with a cancelled context: err = %v", err)
	}
	if _, err := r.Output(context.Background(), sub.ID, -time.Second); !errors.Is(err, ErrInvalid) {
		t.Fatalf("negative timeout: err = %v", err)
	}
	if _, err := r.Output(context.Background(), "task_nope", 0); !errors.Is(err, ErrUnknownTask) {
		t.Fatalf("unknown task: err = %v", err)
	}
	close(release)
	if got := mustEnd(t, r, sub.ID); got.Status != StatusCompleted || string(got.Result) != `"released"` {
		t.Fatalf("released task = %+v", got)
	}
}

// gated submits a generic task that ends when its channel is closed.
func gated(t *testing.T, r *Registry, result string) (Task, chan struct{}) {
	t.Helper()
	ch := make(chan struct{})
	sub, err := r.Submit(context.Background(), "test", "gated "+result, func(ctx context.Context) (json.RawMessage, error) {
		select {
		case <-ch:
			return json.RawMessage(result), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sub, ch
}

func TestWaitModes(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t, nil, Options{})
	a, releaseA := gated(t, r, `"a"`)
	b, releaseB := gated(t, r, `"b"`)
	ids := []string{a.ID, b.ID, a.ID} // the duplicate is dropped

	got, err := r.Wait(context.Background(), ids, "any", 0)
	if err != nil || len(got) != 2 || got[0].Done() || got[1].Done() {
		t.Fatalf("Wait(any, 0) = %+v, %v", got, err)
	}
	got, err = r.Wait(context.Background(), ids, "all", 20*time.Millisecond)
	if err != nil || got[0].Done() || got[1].Done() {
		t.Fatalf("Wait(all, 20ms) with nothing done = %+v, %v", got, err)
	}

	anyDone := make(chan []Task)
	go func() {
		ts, err := r.Wait(context.Background(), ids, "any", long)
		if err != nil {
			t.Error(err)
		}
		anyDone <- ts
	}()
	close(releaseB)
	got = <-anyDone
	if got[0].ID != a.ID || got[0].Done() || got[1].Status != StatusCompleted || string(got[1].Result) != `"b"` {
		t.Fatalf("Wait(any) = %+v", got)
	}

	got, err = r.Wait(context.Background(), ids, "all", 20*time.Millisecond)
	if err != nil || got[0].Done() || !got[1].Done() {
		t.Fatalf("Wait(all) timing out with one done = %+v, %v", got, err)
	}
	allDone := make(chan []Task)
	go func() {
		ts, err := r.Wait(context.Background(), ids, "", long) // "" is "all"
		if err != nil {
			t.Error(err)
		}
		allDone <- ts
	}()
	close(releaseA)
	got = <-allDone
	if !got[0].Done() || !got[1].Done() || string(got[0].Result) != `"a"` {
		t.Fatalf("Wait(all) = %+v", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, _ := gated(t, r, `"c"`)
	if _, err := r.Wait(ctx, []string{c.ID}, "all", long); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a cancelled context: err = %v", err)
	}
}

func TestWaitValidation(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t, nil, Options{})
	known, release := gated(t, r, `1`)
	defer close(release)
	many := make([]string, MaxWaitIDs+1)
	for i := range many {
		many[i] = fmt.Sprintf("task_%d", i)
	}
	tests := []struct {
		name    string
		ids     []string
		mode    string
		timeout time.Duration
		is      error
		msg     string
	}{
		{"no ids", nil, "all", 0, ErrInvalid, "no task ids"},
		{"too many", many, "all", 0, ErrInvalid, "21 task ids given; wait on at most 20"},
		{"bad mode", []string{known.ID}, "first", 0, ErrInvalid, `mode "first"`},
		{"negative timeout", []string{known.ID}, "any", -1, ErrInvalid, "negative timeout"},
		{"unknown ids", []string{known.ID, "task_x", "task_y"}, "any", 0, ErrUnknownTask, "task_x, task_y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := r.Wait(context.Background(), tt.ids, tt.mode, tt.timeout)
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.is, tt.msg)
			}
		})
	}
}

func TestKillWorkflow(t *testing.T) {
	t.Parallel()
	stubborn := make(chan struct{})
	defer close(stubborn)
	runner := newMemRunner(testWorkflows(nil, stubborn))
	r := newTestRegistry(t, runner, Options{})

	gate, err := r.SubmitWorkflow(context.Background(), "gate", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Kill(gate.ID); err != nil {
		t.Fatal(err)
	}
	got := mustEnd(t, r, gate.ID)
	if got.Status != StatusCancelled || got.Error != "cancelled by request" {
		t.Fatalf("killed gate = %+v", got)
	}
	if c := runner.cancelledRuns(); len(c) != 1 || c[0] != gate.RunID {
		t.Fatalf("cancelled runs = %v, want [%s]", c, gate.RunID)
	}
	if err := r.Kill(gate.ID); err != nil {
		t.Fatalf("killing an ended task: %v", err)
	}

	// A run that ignores the cancel: the task is given up on after the
	// grace periods and reported cancelled.
	sub, err := r.SubmitWorkflow(context.Background(), "stubborn", nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := r.Kill(sub.ID); err != nil {
		t.Fatal(err)
	}
	got = mustEnd(t, r, sub.ID)
	if got.Status != StatusCancelled || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("killed stubborn run = %+v after %v", got, time.Since(start))
	}
	if err := r.Kill("task_nope"); !errors.Is(err, ErrUnknownTask) {
		t.Fatalf("Kill(unknown) = %v", err)
	}
}

func TestSubmitFunc(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t, nil, Options{})
	type key struct{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	sub, err := r.Submit(ctx, "probe", "reads its context", func(ctx context.Context) (json.RawMessage, error) {
		<-ctx.Done()
		return json.RawMessage(fmt.Sprintf("%q", ctx.Value(key{}))), ctx.Err()
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The caller's cancellation does not reach the task; Kill does.
	cancel()
	if got, _ := r.Output(context.Background(), sub.ID, 20*time.Millisecond); got.Done() {
		t.Fatalf("the submitter's cancel ended the task: %+v", got)
	}
	if err := r.Kill(sub.ID); err != nil {
		t.Fatal(err)
	}
	got := mustEnd(t, r, sub.ID)
	if got.Status != StatusCancelled || string(got.Result) != `"v"` || got.Kind != "probe" || got.Description != "reads its context" {
		t.Fatalf("killed task = %+v", got)
	}

	boom, err := r.Submit(context.Background(), "probe", "", func(context.Context) (json.RawMessage, error) {
		panic("boom")
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustEnd(t, r, boom.ID); got.Status != StatusFailed || !strings.Contains(got.Error, "panicked: boom") {
		t.Fatalf("panicking task = %+v", got)
	}
	failed, err := r.Submit(context.Background(), "probe", "", func(context.Context) (json.RawMessage, error) {
		return nil, errors.New("disk full")
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustEnd(t, r, failed.ID); got.Status != StatusFailed || got.Error != "disk full" {
		t.Fatalf("failing task = %+v", got)
	}
	if _, err := r.Submit(context.Background(), "", "", func(context.Context) (json.RawMessage, error) { return nil, nil }, nil); err == nil {
		t.Fatal("empty kind accepted")
	}
}

func TestListAndRetention(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	r := newTestRegistry(t, nil, Options{Now: clock, KeepFinished: 2})
	var ids []string
	for i := range 3 {
		sub, err := r.Submit(context.Background(), "n", "", func(context.Context) (json.RawMessage, error) {
			return json.RawMessage(fmt.Sprint(i)), nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		mustEnd(t, r, sub.ID)
		ids = append(ids, sub.ID)
	}
	running, release := gated(t, r, `0`)
	defer close(release)
	list := r.List()
	var got []string
	for _, tk := range list {
		got = append(got, tk.ID)
	}
	want := []string{running.ID, ids[2], ids[1]}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("List = %v, want %v (newest first, oldest finished dropped)", got, want)
	}
	if _, err := r.Get(ids[0]); !errors.Is(err, ErrUnknownTask) {
		t.Fatalf("Get(dropped) = %v", err)
	}
	if tk, err := r.Get(ids[2]); err != nil || string(tk.Result) != "2" {
		t.Fatalf("Get = %+v, %v", tk, err)
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	r := NewRegistry(newMemRunner(testWorkflows(nil, nil)), Options{TermGrace: time.Millisecond, KillGrace: time.Millisecond})
	sub, _ := gated(t, r, `1`)
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Get(sub.ID); got.Status != StatusCancelled {
		t.Fatalf("task after Close = %+v", got)
	}
	if _, err := r.SubmitWorkflow(context.Background(), "echo", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("SubmitWorkflow after Close: %v", err)
	}
	if _, err := r.Submit(context.Background(), "k", "", func(context.Context) (json.RawMessage, error) { return nil, nil }, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit after Close: %v", err)
	}
}

func processResult(t *testing.T, tk Task) ProcessResult {
	t.Helper()
	var pr ProcessResult
	if err := json.Unmarshal(tk.Result, &pr); err != nil {
		t.Fatalf("process result %s: %v", tk.Result, err)
	}
	return pr
}

func TestProcessExit(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t, nil, Options{})
	tests := []struct {
		script     string
		wantStatus string
		wantCode   int
		wantOutput string
	}{
		{"echo hello; echo oops >&2", StatusCompleted, 0, "hello\noops\n"},
		{"echo partial; exit 3", StatusFailed, 3, "partial\n"},
	}
	for _, tt := range tests {
		sub, err := r.SubmitProcess(context.Background(), "", exec.Command("sh", "-c", tt.script), nil)
		if err != nil {
			t.Fatal(err)
		}
		if sub.Kind != KindProcess || !strings.Contains(sub.Description, tt.script) {
			t.Fatalf("submitted = %+v", sub)
		}
		got := mustEnd(t, r, sub.ID)
		pr := processResult(t, got)
		if got.Status != tt.wantStatus || pr.ExitCode != tt.wantCode || pr.Output != tt.wantOutput || pr.PID == 0 {
			t.Fatalf("%q: task = %+v, result = %+v", tt.script, got, pr)
		}
	}
	if _, err := r.SubmitProcess(context.Background(), "", exec.Command("/nonexistent/weft-test"), nil); err == nil {
		t.Fatal("a missing binary started")
	}
}

func TestProcessOutputCap(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t, nil, Options{})
	script := fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x; echo END", ProcessOutputCap+100)
	sub, err := r.SubmitProcess(context.Background(), "big", exec.Command("sh", "-c", script), nil)
	if err != nil {
		t.Fatal(err)
	}
	pr := processResult(t, mustEnd(t, r, sub.ID))
	if len(pr.Output) != ProcessOutputCap || !strings.HasSuffix(pr.Output, "xEND\n") || pr.Dropped != 104 {
		t.Fatalf("output of %d bytes ending %q, dropped %d", len(pr.Output), pr.Output[len(pr.Output)-5:], pr.Dropped)
	}
}

// TestKillProcessEscalates kills real processes that give way at each
// step: plain sleep at SIGINT, one that ignores SIGINT at SIGTERM, one that
// ignores both (and passes that on to its child) only at SIGKILL.
func TestKillProcessEscalates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		script     string
		wantSignal string
		minElapsed time.Duration
	}{
		{"cooperative", "echo ready; exec sleep 30", "interrupt", 0},
		{"sigterm", "trap '' INT; echo ready; sleep 30", "terminated", 50 * time.Millisecond},
		{"sigkill", "trap '' INT TERM; echo ready; sleep 30", "killed", 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newTestRegistry(t, nil, Options{})
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			cmd := exec.Command("sh", "-c", tt.script)
			cmd.Stdout = pw
			sub, err := r.SubmitProcess(context.Background(), tt.name, cmd, nil)
			pw.Close()
			if err != nil {
				t.Fatal(err)
			}
			// Kill only once the traps are set.
			if line, err := bufio.NewReader(pr).ReadString('\n'); err != nil || line != "ready\n" {
				t.Fatalf("read %q, %v", line, err)
			}
			start := time.Now()
			if err := r.Kill(sub.ID); err != nil {
				t.Fatal(err)
			}
			got := mustEnd(t, r, sub.ID)
			res := processResult(t, got)
			if got.Status != StatusCancelled || res.Signal != tt.wantSignal || res.ExitCode != -1 {
				t.Fatalf("task = %+v, result = %+v, want signal %s", got, res, tt.wantSignal)
			}
			if el := time.Since(start); el < tt.minElapsed {
				t.Fatalf("ended after %v, before the grace period %v", el, tt.minElapsed)
			}
		})
	}
}

func TestPanickingHooks(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t, nil, Options{
		OnCreated:   func(Task) { panic("created hook") },
		OnCompleted: func(Task) { panic("completed hook") },
	})
	sub, err := r.Submit(context.Background(), "k", "", func(context.Context) (json.RawMessage, error) {
		return json.RawMessage(`true`), nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustEnd(t, r, sub.ID); got.Status != StatusCompleted {
		t.Fatalf("task = %+v", got)
	}
}
