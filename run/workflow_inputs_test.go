package run_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/run"
	"github.com/weft-run/weft/schedule/schedtest"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool"
)

// findIn is a tool input with optional fields, as Grep's path is.
type findIn struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"`
	Depth   int    `json:"depth,omitempty"`
}

// inputsEnv is a run manager with one read-only tool, find, that records
// the arguments it was called with.
type inputsEnv struct {
	db   *sqlite.DB
	runs *run.Service
	mu   sync.Mutex
	got  []string
}

func newInputsEnv(t *testing.T) *inputsEnv {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "weft.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &inputsEnv{db: db}
	find := tool.Func("find", "finds a pattern", tool.Meta{ReadOnly: true},
		func(ctx context.Context, in findIn, c *tool.Call) (tool.Result, error) {
			e.mu.Lock()
			e.got = append(e.got, string(c.Input))
			e.mu.Unlock()
			return tool.Text("found"), nil
		})
	reg, err := tool.NewRegistry(find)
	if err != nil {
		t.Fatal(err)
	}
	e.runs, err = run.New(context.Background(), run.Config{Runs: db, Workflows: db, Tools: reg,
		Policy: func() *policy.Policy { return &policy.Policy{} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.runs.Shutdown(ctx)
		_ = db.Close()
	})
	return e
}

func (e *inputsEnv) calls() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got)
}

func (e *inputsEnv) workflow(t *testing.T, args string, published bool) string {
	t.Helper()
	wf, err := e.runs.CreateWorkflow(context.Background(), run.WorkflowInput{
		Name: ref("find"),
		InputSchema: json.RawMessage(`{"type":"object","required":["pattern"],"properties":{
			"pattern":{"type":"string"},"path":{"type":"string"},"depth":{"type":"integer","default":2}}}`),
		Plan:      json.RawMessage(`{"steps":[{"id":"f","tool":"find","args":` + args + `}]}`),
		Published: ref(published),
	})
	if err != nil {
		t.Fatal(err)
	}
	return wf.ID
}

// TestOmittedOptionalInput: an optional input the caller leaves out
// (with no default) leaves out the argument "{{inputs.x}}" stands for,
// instead of passing null into the tool's schema; used inside text it is
// refused before the run starts.
func TestOmittedOptionalInput(t *testing.T) {
	t.Parallel()
	e := newInputsEnv(t)
	whole := e.workflow(t, `{"pattern":"{{inputs.pattern}}","path":"{{inputs.path}}","depth":"{{inputs.depth}}"}`, true)
	inText := e.workflow(t, `{"pattern":"{{inputs.pattern}} under {{inputs.path}}"}`, true)
	tests := []struct {
		name, wf, inputs string
		want             string // the tool's arguments; "" when the start is refused
		wantErr          string
	}{
		{"optional left out", whole, `{"pattern":"TODO"}`, `{"pattern":"TODO","depth":2}`, ""},
		{"optional given", whole, `{"pattern":"TODO","path":"src"}`, `{"pattern":"TODO","path":"src","depth":2}`, ""},
		{"default overridden", whole, `{"pattern":"TODO","depth":5}`, `{"pattern":"TODO","depth":5}`, ""},
		{"in text, given", inText, `{"pattern":"TODO","path":"src"}`, `{"pattern":"TODO under src"}`, ""},
		{"in text, left out", inText, `{"pattern":"TODO"}`, "", `input "path" was not given, but step 0 ("f") uses it in {{inputs.path}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.calls())
			created, err := e.runs.RunWorkflow(context.Background(), tc.wf, run.WorkflowRunRequest{Inputs: json.RawMessage(tc.inputs)})
			if tc.wantErr != "" {
				var ie *run.InputsError
				if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("RunWorkflow = %v, want an InputsError with %q", err, tc.wantErr)
				}
				if cerr := e.runs.CheckWorkflow(context.Background(), tc.wf, json.RawMessage(tc.inputs)); !errors.As(cerr, &ie) {
					t.Fatalf("CheckWorkflow = %v, want the same refusal", cerr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			end, err := e.runs.WaitRun(context.Background(), created.ID)
			if err != nil || end.Status != record.RunCompleted {
				t.Fatalf("run ended %s %q (%v)", end.Status, end.Error, err)
			}
			calls := e.calls()
			if len(calls) != before+1 || calls[before] != tc.want {
				t.Fatalf("the tool got %v, want %s", calls[before:], tc.want)
			}
		})
	}
}

// TestScheduleChecksItsWorkflow: creating a schedule makes the checks a
// firing would (unknown or unpublished workflow, inputs), so a schedule
// that could never fire is refused with a typed error (400 over HTTP); a
// firing that fails later (the workflow was unpublished since) is
// recorded on the schedule.
func TestScheduleChecksItsWorkflow(t *testing.T) {
	t.Parallel()
	e := newInputsEnv(t)
	published := e.workflow(t, `{"pattern":"{{inputs.pattern}}"}`, true)
	draft := e.workflow(t, `{"pattern":"{{inputs.pattern}}"}`, false)
	clock := schedtest.NewFakeClock(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	bg, err := run.NewBackground(context.Background(), run.BackgroundConfig{Runs: e.runs, Schedules: e.db, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bg.Close(context.Background()) })
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		req    run.ScheduleRequest
		target any
		want   string
	}{
		{"unknown workflow", run.ScheduleRequest{WorkflowID: "wf_nope", Inputs: json.RawMessage(`{"pattern":"x"}`), IntervalSeconds: 60}, new(*record.InvalidError), `workflow "wf_nope" not found`},
		{"unpublished workflow", run.ScheduleRequest{WorkflowID: draft, Inputs: json.RawMessage(`{"pattern":"x"}`), IntervalSeconds: 60}, new(*record.InvalidError), "is not published"},
		{"missing required input", run.ScheduleRequest{WorkflowID: published, IntervalSeconds: 60}, new(*run.InputsError), `missing required input "pattern"`},
		{"input of the wrong type", run.ScheduleRequest{WorkflowID: published, Inputs: json.RawMessage(`{"pattern":7}`), IntervalSeconds: 60}, new(*run.InputsError), `"pattern" must be string`},
	} {
		_, err := bg.Schedules.Create(ctx, tc.req)
		if err == nil || !errors.As(err, tc.target) || !strings.Contains(err.Error(), tc.want) || errors.Is(err, record.ErrNotFound) {
			t.Errorf("%s: Create = %v, want a %T with %q", tc.name, err, tc.target, tc.want)
		}
	}
	if list, _ := bg.Schedules.List(ctx, false); len(list) != 0 {
		t.Fatalf("refused schedules were stored: %+v", list)
	}

	sch, err := bg.Schedules.Create(ctx, run.ScheduleRequest{WorkflowID: published, Inputs: json.RawMessage(`{"pattern":"x"}`), IntervalSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.runs.PublishWorkflow(ctx, published, false, 0); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := bg.Schedules.Get(ctx, sch.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.LastError != "" {
			if !strings.Contains(got.LastError, "is not published") || !got.LastErrorAt.Equal(clock.Now()) || got.RunCount != 0 {
				t.Fatalf("after the failed firing: %+v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the failed firing was not recorded: %+v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
