package run_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/run"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool"
)

// scriptedModels resolves every spec to one scripted provider.
type scriptedModels struct{ p *llmtest.Scripted }

func (m scriptedModels) Resolve(string) (llm.Provider, llm.ModelInfo, error) {
	return m.p, llm.ModelInfo{ID: "m", Provider: "scripted", MaxOutputTokens: 1000}, nil
}

// runEnv is a run manager over a temp SQLite store with three tools:
// echo (read-only: returns its text), note (writes: records its text) and
// hold (read-only: waits until released or cancelled).
type runEnv struct {
	t       *testing.T
	db      *sqlite.DB
	reg     *tool.Registry
	runs    *run.Service
	pol     *policy.Policy
	release chan struct{}

	mu    sync.Mutex
	notes []string
	echos []string
}

type textIn struct {
	Text string `json:"text"`
}

func newRunEnv(t *testing.T, path string, pol *policy.Policy) *runEnv {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "weft.db")
	}
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &runEnv{t: t, db: db, pol: pol, release: make(chan struct{})}
	echo := tool.Func("echo", "returns its text", tool.Meta{ReadOnly: true, ConcurrencySafe: true},
		func(ctx context.Context, in textIn, _ *tool.Call) (tool.Result, error) {
			e.mu.Lock()
			e.echos = append(e.echos, in.Text)
			e.mu.Unlock()
			return tool.Text(in.Text), nil
		})
	note := tool.Func("note", "writes a note", tool.Meta{Effect: tool.EffectWrite},
		func(ctx context.Context, in textIn, _ *tool.Call) (tool.Result, error) {
			e.mu.Lock()
			e.notes = append(e.notes, in.Text)
			e.mu.Unlock()
			return tool.Text("noted " + in.Text), nil
		})
	hold := tool.Func("hold", "waits until released", tool.Meta{ReadOnly: true},
		func(ctx context.Context, in textIn, _ *tool.Call) (tool.Result, error) {
			select {
			case <-e.release:
				return tool.Text("released " + in.Text), nil
			case <-ctx.Done():
				return tool.Result{}, ctx.Err()
			}
		})
	e.reg, err = tool.NewRegistry(echo, note, hold)
	if err != nil {
		t.Fatal(err)
	}
	e.runs, err = run.New(context.Background(), run.Config{Runs: db, Workflows: db, Audits: db, Tools: e.reg,
		Policy: func() *policy.Policy { return e.pol }, PermissionTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	return e
}

func (e *runEnv) close() {
	if e.runs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.runs.Shutdown(ctx); err != nil {
		e.t.Errorf("runs shutdown: %v", err)
	}
	if err := e.db.Close(); err != nil {
		e.t.Errorf("closing the database: %v", err)
	}
	e.runs = nil
}

func (e *runEnv) noted() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.notes)
}

func (e *runEnv) echoed() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.echos)
}

// readRun reads the run's events after `after` until one of type until.
func readRun(t *testing.T, m *run.Service, id string, after int64, until string) []event.Event {
	t.Helper()
	r := m.Subscribe(id, after)
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var evs []event.Event
	for {
		ev, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("run %s: waiting for %s after %v: %v", id, until, runTypes(evs), err)
		}
		evs = append(evs, ev)
		if ev.Type == until {
			return evs
		}
	}
}

func runTypes(evs []event.Event) string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return strings.Join(out, " ")
}

func mustPlan(t *testing.T, s string) *run.Plan {
	t.Helper()
	var p run.Plan
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func ref[T any](v T) *T { return &v }

// publishGreeting saves and publishes a workflow: note "hello <who>", then
// echo that result with "!".
func publishGreeting(t *testing.T, m *run.Service) run.Workflow {
	t.Helper()
	wf, err := m.CreateWorkflow(context.Background(), run.WorkflowInput{
		Name:        ref("greeting"),
		InputSchema: json.RawMessage(`{"type":"object","properties":{"who":{"type":"string"}},"required":["who"]}`),
		Plan: json.RawMessage(`{"steps":[{"id":"greet","tool":"note","args":{"text":"hello {{inputs.who}}"}},` +
			`{"id":"shout","tool":"echo","args":{"text":"{{steps.greet.result}}!"},"dependsOn":["greet"]}]}`),
		Published: ref(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

// TestWorkflowToolInChatSession: a published workflow is a tool of the
// chat's registry at once; a model calling it runs the workflow to its
// end under the session's policy. The person approved the one call, so
// the note step (which would ask in default mode) runs unasked; a deny
// rule still refuses it.
func TestWorkflowToolInChatSession(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		deny    []string
		wantOut string
		wantErr bool
		notes   int
	}{
		{"ask counts as granted", nil, "noted hello ann!", false, 1},
		{"deny rule still denies", []string{"Tool(note)"}, "permission denied", true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rules, err := permission.ParseRuleSet("test", nil, nil, tc.deny)
			if err != nil {
				t.Fatal(err)
			}
			pol := &policy.Policy{Mode: permission.ModeDefault, Rules: rules}
			e := newRunEnv(t, "", pol)
			wf := publishGreeting(t, e.runs)
			name := "run_workflow_" + wf.ID
			if _, ok := e.reg.Get(name); !ok {
				t.Fatalf("%s is not in the registry after publishing", name)
			}
			p := llmtest.NewScripted("scripted",
				llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_1", name, `{"who":"ann"}`)}},
				llmtest.Text("done"))
			rt, err := session.New(session.Config{Store: e.db, Models: scriptedModels{p}, DefaultModel: "scripted:m",
				Tools: e.reg, Policy: pol, PermissionTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
			ctx := context.Background()
			sess, err := rt.CreateSession(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rt.Send(ctx, sess.ID, "greet ann", session.TurnOptions{}); err != nil {
				t.Fatal(err)
			}
			rd := rt.Subscribe(sess.ID, 0)
			defer rd.Close()
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			var result map[string]any
			asked := 0
			for {
				ev, err := rd.Next(rctx)
				if err != nil {
					t.Fatal(err)
				}
				var d map[string]any
				_ = json.Unmarshal(ev.Data, &d)
				if ev.Type == "permission_request" {
					asked++
					if d["tool_name"] != name {
						t.Fatalf("the session asked about %v, not the workflow tool", d["tool_name"])
					}
					if err := rt.Answer(sess.ID, d["id"].(string), true, ""); err != nil {
						t.Fatal(err)
					}
				}
				if ev.Type == "tool_result" {
					result = d
				}
				if ev.Type == "done" {
					break
				}
			}
			if asked != 1 {
				t.Fatalf("the session asked %d times, want once (for the workflow call)", asked)
			}
			if out, _ := result["output"].(string); !strings.Contains(out, tc.wantOut) || result["is_error"] != tc.wantErr {
				t.Fatalf("tool result %v, want output containing %q and is_error %v", result, tc.wantOut, tc.wantErr)
			}
			if got := e.noted(); len(got) != tc.notes {
				t.Fatalf("note ran %v", got)
			}
			page, err := e.runs.ListRuns(ctx, run.RunQuery{})
			if err != nil || len(page.Runs) != 1 || page.Runs[0].WorkflowID != wf.ID {
				t.Fatalf("runs %+v, %v: want one run of the workflow", page.Runs, err)
			}
			evs := readRun(t, e.runs, page.Runs[0].ID, 0, map[bool]string{false: "complete", true: "error"}[tc.wantErr])
			for _, ev := range evs {
				if ev.Type == "permission_request" || ev.Type == "plan_approval_requested" {
					t.Fatalf("the workflow's run asked a person: %s", runTypes(evs))
				}
			}
		})
	}
}

// TestStartWorkflowInBackground: the background-task adapter starts a
// published workflow and waits for its result; unpublished workflows and
// bad inputs are refused with user-facing errors.
func TestStartWorkflowInBackground(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, "", &policy.Policy{Mode: permission.ModeAuto, Rules: mustRules(t, []string{"Tool(note)"})})
	wf := publishGreeting(t, e.runs)
	ctx := context.Background()
	tr := e.runs.TaskRunner()
	id, err := tr.StartWorkflow(ctx, wf.ID, json.RawMessage(`{"who":"bo"}`))
	if err != nil {
		t.Fatal(err)
	}
	status, result, msg, err := tr.WaitRun(ctx, id)
	if err != nil || status != "completed" || string(result) != `"noted hello bo!"` || msg != "" {
		t.Fatalf("WaitRun: %s %s %q %v", status, result, msg, err)
	}
	if _, err := tr.StartWorkflow(ctx, wf.ID, json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), `"who"`) {
		t.Fatalf("missing input: %v", err)
	}
	if _, err := e.runs.PublishWorkflow(ctx, wf.ID, false, 0); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.reg.Get("run_workflow_" + wf.ID); ok {
		t.Fatal("the tool is still registered after unpublishing")
	}
	if _, err := tr.StartWorkflow(ctx, wf.ID, json.RawMessage(`{"who":"x"}`)); err == nil || !strings.Contains(err.Error(), "not published") {
		t.Fatalf("unpublished: %v", err)
	}
}

func mustRules(t *testing.T, allow []string) permission.RuleSet {
	t.Helper()
	rs, err := permission.ParseRuleSet("test", allow, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestShutdownInterruptsAndResumes: a shutdown stops live runs as
// interrupted; after a restart the run resumes, reusing its completed
// step, and pauses for review first.
func TestShutdownInterruptsAndResumes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "weft.db")
	e := newRunEnv(t, path, &policy.Policy{})
	ctx := context.Background()
	created, err := e.runs.CreateRun(ctx, run.RunRequest{Goal: "echo then hold", Config: run.RunConfig{AutoApprove: true},
		Workflow: mustPlan(t, `{"steps":[{"id":"a","tool":"echo","args":{"text":"one"}},{"id":"b","tool":"hold","args":{"text":"{{steps.a.result}}"},"dependsOn":["a"]}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	first := readRun(t, e.runs, created.ID, 0, "step_start")
	second := readRun(t, e.runs, created.ID, first[len(first)-1].Seq, "step_start") // b is holding
	if runTypes(second) != "step_complete step_start" {
		t.Fatalf("events %s then %s", runTypes(first), runTypes(second))
	}
	e.close()

	e2 := newRunEnv(t, path, &policy.Policy{})
	close(e2.release)
	got, err := e2.runs.GetRun(ctx, created.ID)
	if err != nil || got.Status != run.RunInterrupted {
		t.Fatalf("after the restart: %s, %v", got.Status, err)
	}
	if _, err := e2.runs.ResumeRun(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	tail := readRun(t, e2.runs, created.ID, got.LastSeq, "plan_approval_requested")
	if runTypes(tail) != "resumed plan_ready plan_approval_requested" {
		t.Fatalf("resume events %s", runTypes(tail))
	}
	if err := e2.runs.Approve(ctx, created.ID, run.Approval{}); err != nil {
		t.Fatal(err)
	}
	end, err := e2.runs.WaitRun(ctx, created.ID)
	if err != nil || end.Status != run.RunCompleted {
		t.Fatalf("resumed run: %+v, %v", end, err)
	}
	if res, _ := e2.runs.RunResult(ctx, created.ID); string(res) != `"released one"` {
		t.Fatalf("result %s", res)
	}
	if got := e2.echoed(); len(got) != 0 {
		t.Fatalf("the completed step ran again after the restart: %v", got)
	}
	if err := e2.runs.Approve(ctx, created.ID, run.Approval{}); !errors.Is(err, run.ErrNoGate) {
		t.Fatalf("approving an ended run: %v", err)
	}
}

// TestDraftedRun: the planner is given the goal, the run's inputs and the
// relevant memories, with tools described but not callable; a config that
// asks for bypass is refused unless the server allows it.
func TestDraftedRun(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "weft.db")
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	echo := tool.Func("echo", "returns its text", tool.Meta{ReadOnly: true},
		func(ctx context.Context, in textIn, _ *tool.Call) (tool.Result, error) {
			return tool.Text(in.Text), nil
		})
	reg, _ := tool.NewRegistry(echo)
	p := llmtest.NewScripted("scripted", llmtest.Text(`{"steps":[{"id":"s","tool":"echo","args":{"text":"{{inputs.city}}"}}]}`))
	var asked string
	m, err := run.New(context.Background(), run.Config{Runs: db, Workflows: db, Tools: reg,
		Models: scriptedModels{p}, DefaultModel: "scripted:m",
		Memories: func(_ context.Context, goal string) []string {
			asked = goal
			return []string{"the user prefers Celsius"}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	ctx := context.Background()
	if _, err := m.CreateRun(ctx, run.RunRequest{Goal: "g", Config: run.RunConfig{PermissionMode: "bypass"}}); !errors.Is(err, run.ErrForbidden) {
		t.Fatalf("bypass without the server's consent: %v", err)
	}
	created, err := m.CreateRun(ctx, run.RunRequest{Goal: "weather report", Config: run.RunConfig{AutoApprove: true},
		Inputs: json.RawMessage(`{"city":"Oslo"}`)})
	if err != nil {
		t.Fatal(err)
	}
	end, err := m.WaitRun(ctx, created.ID)
	if err != nil || end.Status != run.RunCompleted || end.Summary != "Oslo" {
		t.Fatalf("run %+v, %v", end, err)
	}
	reqs := p.Requests()
	if len(reqs) != 1 || len(reqs[0].Tools) != 0 {
		t.Fatalf("planning requests %d, tools offered %v", len(reqs), reqs)
	}
	user := reqs[0].Messages[0].Text()
	for _, want := range []string{"weather report", "the user prefers Celsius", `"city"`} {
		if !strings.Contains(user, want) {
			t.Errorf("the planner was not told %q: %s", want, user)
		}
	}
	if asked != "weather report" {
		t.Fatalf("memories were asked about %q", asked)
	}
}

// TestUnansweredPermissionDenies: a step's permission request that nobody
// answers within the timeout counts as denied and fails the run; an
// answer after that finds nothing to answer.
func TestUnansweredPermissionDenies(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "weft.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	var ran atomic.Bool
	note := tool.Func("note", "writes", tool.Meta{Effect: tool.EffectWrite},
		func(ctx context.Context, in textIn, _ *tool.Call) (tool.Result, error) {
			ran.Store(true)
			return tool.Text("ok"), nil
		})
	reg, _ := tool.NewRegistry(note)
	m, err := run.New(context.Background(), run.Config{Runs: db, Tools: reg, PermissionTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	ctx := context.Background()
	created, err := m.CreateRun(ctx, run.RunRequest{Goal: "g", Config: run.RunConfig{AutoApprove: true},
		Workflow: mustPlan(t, `{"steps":[{"tool":"note","args":{"text":"x"}}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	evs := readRun(t, m, created.ID, 0, "error")
	if got := runTypes(evs); got != "plan_ready step_start permission_request step_complete error" {
		t.Fatalf("events %s", got)
	}
	var req struct{ ID string }
	_ = json.Unmarshal(evs[2].Data, &req)
	if !strings.Contains(string(evs[3].Data), "no answer within 50ms") || ran.Load() {
		t.Fatalf("step %s (ran %v)", evs[3].Data, ran.Load())
	}
	if err := m.AnswerPermission(created.ID, req.ID, true, ""); !errors.Is(err, run.ErrNotFound) {
		t.Fatalf("a late answer: %v", err)
	}
}
