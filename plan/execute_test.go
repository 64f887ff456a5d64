package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// wait bounds every blocking wait in these tests: a step that waits this
// long for something the executor should have caused means a bug.
const wait = 5 * time.Second

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// await is recv for RunStep code, which cannot call t.Fatal.
func await(ch <-chan struct{}, what string) error {
	select {
	case <-ch:
		return nil
	case <-time.After(wait):
		return errors.New("timed out waiting for " + what)
	}
}

type execOut struct {
	res []StepResult
	err error
}

func goExecute(ctx context.Context, p Plan, cfg ExecConfig) <-chan execOut {
	ch := make(chan execOut, 1)
	go func() {
		res, err := Execute(ctx, p, cfg)
		ch <- execOut{res, err}
	}()
	return ch
}

// steps builds a plan from "id:dep1,dep2" specs, each with tool "t".
func steps(specs ...string) Plan {
	var p Plan
	for _, s := range specs {
		id, deps, _ := strings.Cut(s, ":")
		st := Step{ID: id, Tool: "t"}
		if deps != "" {
			for _, d := range strings.Split(deps, ",") {
				st.DependsOn = append(st.DependsOn, Ref(d))
			}
		}
		p.Steps = append(p.Steps, st)
	}
	return p
}

func statuses(res []StepResult) string {
	var parts []string
	for _, r := range res {
		parts = append(parts, r.ID+"="+string(r.Status))
	}
	return strings.Join(parts, " ")
}

func TestExecuteIndependentStepsOverlap(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	both := make(chan struct{})
	run := func(ctx context.Context, i int, s Step, args json.RawMessage) (json.RawMessage, error) {
		if s.ID == "join" {
			return json.RawMessage(`"joined"`), nil
		}
		if n.Add(1) == 2 {
			close(both)
		}
		// Each waits until the other has started: only overlapping steps pass.
		if err := await(both, "the other independent step to start"); err != nil {
			return nil, err
		}
		return json.RawMessage(`"` + s.ID + `"`), nil
	}
	res, err := Execute(t.Context(), steps("a", "b", "join:a,b"), ExecConfig{Run: run})
	if err != nil {
		t.Fatalf("Execute: %v (%s)", err, statuses(res))
	}
	if got := statuses(res); got != "a=completed b=completed join=completed" {
		t.Fatalf("statuses: %s", got)
	}
	for _, r := range res[:2] {
		if res[2].Started.Before(r.Finished) {
			t.Errorf("join started at %v, before %s finished at %v", res[2].Started, r.ID, r.Finished)
		}
	}
}

// A successor starts when its own predecessors complete, not when the
// whole previous layer does; and waits for all of them.
func TestExecuteNoLayerBarrier(t *testing.T) {
	t.Parallel()
	cDone := make(chan struct{})
	run := func(ctx context.Context, i int, s Step, args json.RawMessage) (json.RawMessage, error) {
		switch s.ID {
		case "a": // slow: stays in flight until c, a step of the next layer, has run
			if err := await(cDone, "c to run while a is in flight"); err != nil {
				return nil, err
			}
		case "c":
			defer close(cDone)
		case "d":
			return args, nil
		}
		return json.RawMessage(`"` + s.ID + `"`), nil
	}
	p := steps("a", "b", "c:b", "d:a,c")
	p.Steps[3].Args = json.RawMessage(`{"from": ["{{steps.a.result}}", "{{steps.c.result}}"]}`)
	res, err := Execute(t.Context(), p, ExecConfig{Run: run})
	if err != nil {
		t.Fatalf("Execute: %v (%s)", err, statuses(res))
	}
	if got := string(res[3].Result); got != `{"from":["a","c"]}` {
		t.Errorf("d got %s", got)
	}
	if res[2].Finished.After(res[0].Finished) {
		t.Error("c finished after a: it waited for the whole layer")
	}
	for _, dep := range []int{0, 2} {
		if res[3].Started.Before(res[dep].Finished) {
			t.Errorf("d started before its predecessor %s finished", res[dep].ID)
		}
	}
	for i, r := range res {
		if r.Index != i || r.ID != p.Steps[i].ID {
			t.Errorf("result %d is %d/%s: not in plan order", i, r.Index, r.ID)
		}
	}
}

func TestExecuteFailurePropagation(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	cStarted, aFailed := make(chan struct{}), make(chan struct{})
	var ran sync.Map
	run := func(ctx context.Context, i int, s Step, args json.RawMessage) (json.RawMessage, error) {
		ran.Store(s.ID, true)
		switch s.ID {
		case "a":
			if err := await(cStarted, "c to start"); err != nil {
				return nil, err
			}
			return nil, boom
		case "c": // in flight when a fails: must finish normally
			close(cStarted)
			if err := await(aFailed, "a's failure"); err != nil {
				return nil, err
			}
			if ctx.Err() != nil {
				return nil, errors.New("in-flight step was cancelled by a failure")
			}
		}
		return json.RawMessage(`"ok"`), nil
	}
	var mu sync.Mutex
	var done []string
	onDone := func(r StepResult) {
		mu.Lock()
		done = append(done, r.ID)
		mu.Unlock()
		if r.ID == "a" && r.Status == StatusFailed {
			close(aFailed)
		}
	}
	// b depends on a; d on c (which completes after the failure); e on b.
	p := steps("a", "b:a", "c", "d:c", "e:b")
	res, err := Execute(t.Context(), p, ExecConfig{Run: run, OnDone: onDone})
	var se *StepError
	if !errors.As(err, &se) || se.Index != 0 || se.ID != "a" || !errors.Is(err, boom) {
		t.Fatalf("Execute error = %v, want a *StepError for step 0 (a) wrapping boom", err)
	}
	if !strings.Contains(err.Error(), `step 0 ("a") failed: boom`) {
		t.Errorf("error %q does not name the step", err)
	}
	if got := statuses(res); got != "a=failed b=skipped c=completed d=skipped e=skipped" {
		t.Fatalf("statuses: %s", got)
	}
	wantErr := map[string]string{
		"a": "boom",
		"b": `dependency step 0 ("a") failed`,
		"d": `not started: the run failed at step 0 ("a")`,
		"e": `dependency step 0 ("a") failed`,
	}
	for _, r := range res {
		if r.Err != wantErr[r.ID] {
			t.Errorf("%s: Err = %q, want %q", r.ID, r.Err, wantErr[r.ID])
		}
	}
	for _, id := range []string{"b", "d", "e"} {
		if _, ok := ran.Load(id); ok {
			t.Errorf("step %s ran after the failure", id)
		}
	}
	if len(done) != len(p.Steps) {
		t.Errorf("OnDone called for %v, want every step once", done)
	}
}

func TestExecuteCancelMidLayer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := make(chan string, 10)
	var sawCancel atomic.Int32
	run := func(ctx context.Context, i int, s Step, args json.RawMessage) (json.RawMessage, error) {
		if s.ID == "pre" || s.ID == "l1" {
			return json.RawMessage(`1`), nil
		}
		started <- s.ID
		select {
		case <-ctx.Done():
			sawCancel.Add(1)
			return nil, ctx.Err()
		case <-time.After(wait):
			return nil, errors.New("never cancelled")
		}
	}
	// Layer l1..l5 after pre; three in flight at most, so l5 never starts;
	// post depends on the layer.
	p := steps("pre", "l1:pre", "l2:pre", "l3:pre", "l4:pre", "l5:pre", "post:l1,l2,l3,l4,l5")
	out := goExecute(ctx, p, ExecConfig{Run: run, MaxParallel: 3})
	for range 3 {
		recv(t, started, "three blocking layer steps to start")
	}
	cancel()
	o := recv(t, out, "Execute to return")
	if !errors.Is(o.err, context.Canceled) {
		t.Fatalf("Execute error = %v, want context.Canceled", o.err)
	}
	want := "pre=completed l1=completed l2=cancelled l3=cancelled l4=cancelled l5=cancelled post=cancelled"
	if got := statuses(o.res); got != want {
		t.Fatalf("statuses:\n got %s\nwant %s", got, want)
	}
	if n := sawCancel.Load(); n != 3 {
		t.Errorf("%d in-flight steps saw the cancellation, want 3", n)
	}
	if e := o.res[2].Err; e != context.Canceled.Error() {
		t.Errorf("in-flight step error %q", e)
	}
	if e := o.res[5].Err; e != "cancelled before it started" || !o.res[5].Started.IsZero() {
		t.Errorf("never-started step: error %q, started %v", e, o.res[5].Started)
	}
}

func TestExecuteCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res, err := Execute(ctx, steps("a", "b:a"), ExecConfig{Run: func(context.Context, int, Step, json.RawMessage) (json.RawMessage, error) {
		return nil, errors.New("ran")
	}})
	if !errors.Is(err, context.Canceled) || statuses(res) != "a=cancelled b=cancelled" {
		t.Fatalf("got %v (%s)", err, statuses(res))
	}
}

func TestExecuteReusesCompleted(t *testing.T) {
	t.Parallel()
	var startedArgs sync.Map
	run := func(ctx context.Context, i int, s Step, args json.RawMessage) (json.RawMessage, error) {
		if s.ID == "a" {
			return nil, errors.New("a was run again")
		}
		return json.RawMessage(`"b done"`), nil
	}
	p := steps("a", "b:a")
	p.Steps[1].Args = json.RawMessage(`{"n": "{{steps.a.result.x}}", "in": "{{inputs.who}}", "f": "@file:rep"}`)
	var reused []string
	res, err := Execute(t.Context(), p, ExecConfig{
		Run:       run,
		Completed: map[string]json.RawMessage{"a": json.RawMessage(`{"x": 5}`)},
		Inputs:    map[string]json.RawMessage{"who": json.RawMessage(`"Ada"`)},
		Files:     map[string]json.RawMessage{"rep": json.RawMessage(`{"ref": "f1"}`)},
		OnStart:   func(i int, s Step, args json.RawMessage) { startedArgs.Store(s.ID, string(args)) },
		OnDone: func(r StepResult) {
			if r.Reused {
				reused = append(reused, r.ID)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Reused || res[0].Status != StatusCompleted || string(res[0].Result) != `{"x": 5}` {
		t.Errorf("a: %+v", res[0])
	}
	if res[1].Reused || res[1].Status != StatusCompleted {
		t.Errorf("b: %+v", res[1])
	}
	if got, _ := startedArgs.Load("b"); got != `{"n":5,"in":"Ada","f":{"ref":"f1"}}` {
		t.Errorf("b started with %v", got)
	}
	if _, ok := startedArgs.Load("a"); ok {
		t.Error("OnStart called for a reused step")
	}
	if len(reused) != 1 || reused[0] != "a" {
		t.Errorf("OnDone reused: %v", reused)
	}
}

func TestExecuteApproval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		approve    error // what the approver answers
		noApprover bool
		cancel     bool // cancel the run while approval is pending
		want       StepStatus
		wantErr    string
	}{
		{name: "approved", want: StatusCompleted},
		{name: "denied", approve: errors.New("denied by test"), want: StatusFailed, wantErr: "not approved: denied by test"},
		{name: "no approver", noApprover: true, want: StatusFailed, wantErr: "requires approval and no approver is configured"},
		{name: "cancelled while waiting", cancel: true, want: StatusCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var ranSend atomic.Bool
			asked, answer := make(chan int, 1), make(chan error)
			run := func(ctx context.Context, i int, s Step, args json.RawMessage) (json.RawMessage, error) {
				if s.ID == "send" {
					ranSend.Store(true)
				}
				return json.RawMessage(`"sent"`), nil
			}
			cfg := ExecConfig{Run: run}
			if !tt.noApprover {
				cfg.Approve = func(ctx context.Context, i int, s Step, _ json.RawMessage) error {
					asked <- i
					select {
					case err := <-answer:
						return err
					case <-ctx.Done():
						return ctx.Err()
					}
				}
			}
			p := steps("draft", "send:draft")
			p.Steps[1].RequiresApproval = true
			out := goExecute(ctx, p, cfg)
			if !tt.noApprover {
				if i := recv(t, asked, "the approval request"); i != 1 {
					t.Fatalf("approval asked for step %d", i)
				}
				if ranSend.Load() {
					t.Fatal("the step ran before it was approved")
				}
				if tt.cancel {
					cancel()
				} else {
					answer <- tt.approve
				}
			}
			o := recv(t, out, "Execute to return")
			r := o.res[1]
			if r.Status != tt.want || (tt.wantErr != "" && r.Err != tt.wantErr) {
				t.Fatalf("send: status %s error %q, want %s %q", r.Status, r.Err, tt.want, tt.wantErr)
			}
			if ranSend.Load() != (tt.want == StatusCompleted) {
				t.Errorf("send ran = %v", ranSend.Load())
			}
			switch tt.want {
			case StatusCompleted:
				if o.err != nil {
					t.Errorf("Execute error %v", o.err)
				}
			case StatusCancelled:
				if !errors.Is(o.err, context.Canceled) {
					t.Errorf("Execute error %v, want context.Canceled", o.err)
				}
			default:
				var se *StepError
				if !errors.As(o.err, &se) || se.ID != "send" {
					t.Errorf("Execute error %v, want a *StepError for send", o.err)
				}
			}
		})
	}
}

func TestExecuteRecoversPanics(t *testing.T) {
	t.Parallel()
	run := func(ctx context.Context, i int, s Step, args json.RawMessage) (json.RawMessage, error) {
		if s.ID == "bad" {
			panic("kaboom")
		}
		return nil, nil
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	res, err := Execute(t.Context(), steps("bad", "next:bad"), ExecConfig{Run: run, Logger: logger})
	var se *StepError
	if !errors.As(err, &se) || se.ID != "bad" {
		t.Fatalf("Execute error = %v", err)
	}
	if res[0].Status != StatusFailed || res[0].Err != "panic: kaboom" || res[1].Status != StatusSkipped {
		t.Errorf("results: %+v", res)
	}
	// A panicking approver fails its step too.
	p := steps("x")
	p.Steps[0].RequiresApproval = true
	res, err = Execute(t.Context(), p, ExecConfig{Run: run, Logger: logger, Approve: func(context.Context, int, Step, json.RawMessage) error { panic("approver bug") }})
	if err == nil || res[0].Status != StatusFailed || res[0].Err != "panic: approver bug" {
		t.Errorf("panicking approver: %v %+v", err, res)
	}
}

func TestExecuteRenderErrorFailsStep(t *testing.T) {
	t.Parallel()
	var ran atomic.Bool
	run := func(ctx context.Context, i int, s Step, args json.RawMessage) (json.RawMessage, error) {
		ran.Store(true)
		return nil, nil
	}
	p := steps("a")
	p.Steps[0].Args = json.RawMessage(`{"who": "{{inputs.missing}}"}`)
	res, err := Execute(t.Context(), p, ExecConfig{Run: run})
	if err == nil || !strings.Contains(err.Error(), "{{inputs.missing}}") || ran.Load() {
		t.Fatalf("got %v, ran=%v", err, ran.Load())
	}
	if res[0].Status != StatusFailed || !strings.Contains(res[0].Err, `input "missing" was not given`) {
		t.Errorf("result %+v", res[0])
	}
}

func TestExecuteResults(t *testing.T) {
	t.Parallel()
	out := map[string]json.RawMessage{"text": json.RawMessage("plain output\n"), "none": nil, "json": json.RawMessage(`{"a": [1]}`)}
	run := func(ctx context.Context, i int, s Step, args json.RawMessage) (json.RawMessage, error) {
		return out[s.ID], nil
	}
	p := steps("text", "none", "json", "use:text,none,json")
	p.Steps[3].Args = json.RawMessage(`{"t": "{{steps.text.result}}", "n": "{{steps.none.result}}", "j": "{{steps.json.result.a[0]}}"}`)
	res, err := Execute(t.Context(), p, ExecConfig{Run: func(ctx context.Context, i int, s Step, args json.RawMessage) (json.RawMessage, error) {
		if s.ID == "use" {
			return args, nil
		}
		return run(ctx, i, s, args)
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`"plain output\n"`, `null`, `{"a": [1]}`, `{"t":"plain output\n","n":null,"j":1}`}
	for i, w := range want {
		if string(res[i].Result) != w {
			t.Errorf("%s: result %s, want %s", res[i].ID, res[i].Result, w)
		}
	}
}

func TestExecuteMaxParallel(t *testing.T) {
	t.Parallel()
	var inFlight, peak atomic.Int32
	run := func(ctx context.Context, i int, s Step, args json.RawMessage) (json.RawMessage, error) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		runtime.Gosched()
		inFlight.Add(-1)
		return nil, nil
	}
	res, err := Execute(t.Context(), steps("a", "b", "c", "d", "e", "f"), ExecConfig{Run: run, MaxParallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p > 2 {
		t.Errorf("%d steps ran at once, limit 2", p)
	}
	for _, r := range res {
		if r.Status != StatusCompleted {
			t.Errorf("%s: %s", r.ID, r.Status)
		}
	}
}

func TestExecuteRefusesBadStructure(t *testing.T) {
	t.Parallel()
	run := func(context.Context, int, Step, json.RawMessage) (json.RawMessage, error) {
		return nil, errors.New("must not run")
	}
	_, err := Execute(t.Context(), steps("a:b", "b"), ExecConfig{Run: run})
	var ve *ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), `step 0 ("a"): depends on step 1 ("b"), which comes later`) {
		t.Fatalf("got %v", err)
	}
	if _, err := Execute(t.Context(), steps("a"), ExecConfig{}); err == nil {
		t.Error("Execute without Run succeeded")
	}
	res, err := Execute(t.Context(), Plan{}, ExecConfig{Run: run})
	if err != nil || len(res) != 0 {
		t.Errorf("empty plan: %v %v", res, err)
	}
}

// Not parallel: it counts the process's goroutines.
func TestExecuteLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for round := range 3 {
		ctx, cancel := context.WithCancel(t.Context())
		var n atomic.Int32
		run := func(ctx context.Context, i int, s Step, args json.RawMessage) (json.RawMessage, error) {
			switch {
			case round == 1 && n.Add(1) == 20:
				return nil, errors.New("fail one")
			case round == 2 && n.Add(1) == 20:
				cancel()
			}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		if round == 0 {
			run = func(context.Context, int, Step, json.RawMessage) (json.RawMessage, error) { return nil, nil }
		}
		var specs []string
		for i := range 60 {
			if i < 40 {
				specs = append(specs, "s"+strconv.Itoa(i))
			} else {
				specs = append(specs, fmt.Sprintf("s%d:%d", i, i-40))
			}
		}
		if round == 1 {
			// Make the failing run end: steps that block on ctx need a
			// cancel once the failure is in.
			go func() { time.Sleep(50 * time.Millisecond); cancel() }()
		}
		if _, err := Execute(ctx, steps(specs...), ExecConfig{Run: run}); round > 0 && err == nil {
			t.Errorf("round %d: no error", round)
		}
		cancel()
	}
	deadline := time.Now().Add(wait)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkExecuteWide measures the executor's own overhead: 1,000 steps
// in 10 layers of 100, each depending on two steps of the layer before,
// with a no-op RunStep.
func BenchmarkExecuteWide(b *testing.B) {
	for _, withArgs := range []bool{false, true} {
		name := "noargs"
		if withArgs {
			name = "placeholders"
		}
		b.Run(name, func(b *testing.B) {
			p := widePlan(100, 10, withArgs)
			run := func(context.Context, int, Step, json.RawMessage) (json.RawMessage, error) { return nil, nil }
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if _, err := Execute(b.Context(), p, ExecConfig{Run: run}); err != nil {
					b.Fatal(err)
				}
				n++
			}
			runtime.ReadMemStats(&ms1)
			stepsRun := float64(n * len(p.Steps))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/stepsRun, "ns/step")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/stepsRun, "B/step")
		})
	}
}

func widePlan(width, layers int, withArgs bool) Plan {
	p := Plan{Steps: make([]Step, 0, width*layers)}
	for l := range layers {
		for k := range width {
			s := Step{ID: fmt.Sprintf("s%d_%d", l, k), Tool: "noop"}
			if l > 0 {
				a, c := (l-1)*width+k, (l-1)*width+(k+1)%width
				s.DependsOn = []Ref{Ref(strconv.Itoa(a)), Ref(strconv.Itoa(c))}
				if withArgs {
					s.Args = json.RawMessage(fmt.Sprintf(`{"a": "{{steps.%d.result}}", "text": "from {{steps.%d.result}}"}`, a, c))
				}
			}
			p.Steps = append(p.Steps, s)
		}
	}
	return p
}
