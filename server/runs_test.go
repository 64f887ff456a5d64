package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/audit"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/run"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool"
)

// runsOptions configure a test server with the run manager.
type runsOptions struct {
	token   string
	mode    permission.Mode
	dbPath  string
	scripts []llmtest.Script
	noRuns  bool
	// priced gives the runs' planner list prices (runs_budget_test.go),
	// budget is their default budget; the cost history is the store.
	priced *llm.ModelInfo
	budget agent.Budget
}

// runsAPI is the real handler on a loopback server over a runtime and a
// run manager sharing a SQLite store, a scripted model and the test tools.
type runsAPI struct {
	*api
	runs     *run.Service
	bg       *run.Background
	reg      *tool.Registry
	db       *sqlite.DB
	provider *llmtest.Scripted
	tools    *runTools
}

type scriptedResolver struct{ p *llmtest.Scripted }

func (r scriptedResolver) Resolve(string) (llm.Provider, llm.ModelInfo, error) {
	return r.p, llm.ModelInfo{ID: "m", Provider: "scripted", MaxOutputTokens: 4000}, nil
}

// runTools are the test tools: echo (read-only, returns its text), note
// (writes), hold (read-only, waits until cancelled), meet (read-only,
// returns only once two calls are in flight at the same time), put
// (writes a file into a directory, returns its path), get (read-only,
// reads a file), wipe (needs a checkpoint) and fail (read-only, always
// fails).
type runTools struct {
	mu     sync.Mutex
	echoed []string
	noted  []string

	meetMu  sync.Mutex
	arrived int
	met     chan struct{}
}

type textArg struct {
	Text string `json:"text"`
}

func (rt *runTools) echoes() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return slices.Clone(rt.echoed)
}

func (rt *runTools) notes() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return slices.Clone(rt.noted)
}

func (rt *runTools) list() []tool.Tool {
	rt.met = make(chan struct{})
	type putArg struct {
		Dir  string `json:"dir"`
		Name string `json:"name"`
		Text string `json:"text"`
	}
	type pathArg struct {
		Path string `json:"path"`
	}
	return []tool.Tool{
		tool.Func("echo", "Returns its text.", tool.Meta{ReadOnly: true, ConcurrencySafe: true},
			func(ctx context.Context, in textArg, _ *tool.Call) (tool.Result, error) {
				rt.mu.Lock()
				rt.echoed = append(rt.echoed, in.Text)
				rt.mu.Unlock()
				return tool.Text(in.Text), nil
			}),
		tool.Func("note", "Writes a note.", tool.Meta{Effect: tool.EffectWrite},
			func(ctx context.Context, in textArg, _ *tool.Call) (tool.Result, error) {
				rt.mu.Lock()
				rt.noted = append(rt.noted, in.Text)
				rt.mu.Unlock()
				return tool.Text("noted " + in.Text), nil
			}),
		tool.Func("hold", "Waits until cancelled.", tool.Meta{ReadOnly: true},
			func(ctx context.Context, in textArg, _ *tool.Call) (tool.Result, error) {
				<-ctx.Done()
				return tool.Result{}, ctx.Err()
			}),
		tool.Func("meet", "Returns once another meet call runs at the same time.", tool.Meta{ReadOnly: true},
			func(ctx context.Context, in textArg, _ *tool.Call) (tool.Result, error) {
				rt.meetMu.Lock()
				rt.arrived++
				if rt.arrived == 2 {
					close(rt.met)
				}
				rt.meetMu.Unlock()
				select {
				case <-rt.met:
					return tool.Text(in.Text), nil
				case <-time.After(5 * time.Second):
					return tool.Result{}, errors.New("no other meet call ran at the same time")
				case <-ctx.Done():
					return tool.Result{}, ctx.Err()
				}
			}),
		tool.Func("put", "Writes a file.", tool.Meta{Effect: tool.EffectWrite},
			func(ctx context.Context, in putArg, _ *tool.Call) (tool.Result, error) {
				p := filepath.Join(in.Dir, in.Name)
				if err := os.WriteFile(p, []byte(in.Text), 0o644); err != nil {
					return tool.Result{}, err
				}
				return tool.Text(p), nil
			}),
		tool.Func("get", "Reads a file.", tool.Meta{ReadOnly: true},
			func(ctx context.Context, in pathArg, _ *tool.Call) (tool.Result, error) {
				b, err := os.ReadFile(in.Path)
				if err != nil {
					return tool.Result{}, err
				}
				return tool.Text(string(b)), nil
			}),
		tool.Func("wipe", "Irreversible: needs a checkpoint.", tool.Meta{Effect: tool.EffectWrite, RequiresCheckpoint: true},
			func(ctx context.Context, in textArg, _ *tool.Call) (tool.Result, error) {
				rt.mu.Lock()
				rt.noted = append(rt.noted, "wiped "+in.Text)
				rt.mu.Unlock()
				return tool.Text("wiped " + in.Text), nil
			}),
		tool.Func("fail", "Always fails.", tool.Meta{ReadOnly: true},
			func(ctx context.Context, in textArg, _ *tool.Call) (tool.Result, error) {
				return tool.Result{}, errors.New("broken: " + in.Text)
			}),
	}
}

func newRunsAPI(t *testing.T, o runsOptions) *runsAPI {
	t.Helper()
	ra := buildRuns(t, o)
	srv := httptest.NewServer(ra.s.Handler())
	ra.api.t, ra.api.url, ra.api.srv = t, srv.URL, srv // buildRuns' cleanup closes srv
	return ra
}

// buildRuns builds the server and its run manager; tb's cleanup shuts
// them down like weft serve: runs, turns, streams, connections, then the
// database.
func buildRuns(tb testing.TB, o runsOptions) *runsAPI {
	tb.Helper()
	path := o.dbPath
	if path == "" {
		path = filepath.Join(tb.TempDir(), "weft.db")
	}
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	ra := &runsAPI{db: db, tools: &runTools{}, provider: llmtest.NewScripted("scripted", o.scripts...)}
	ra.reg, err = tool.NewRegistry(ra.tools.list()...)
	if err != nil {
		tb.Fatal(err)
	}
	pol := &policy.Policy{Mode: o.mode, Audit: audit.NewStoreSink(db)}
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	models := scriptedResolver{ra.provider}
	rt, err := session.New(session.Config{Store: db, Models: models, DefaultModel: "scripted:m", Tools: ra.reg, Policy: pol, Logger: log})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := Config{Runtime: rt, BearerToken: o.token, RateLimit: -1, Logger: log, Version: "test"}
	if !o.noRuns {
		var runModels run.ModelResolver = models
		if o.priced != nil {
			runModels = pricedResolver{ra.provider, *o.priced}
		}
		ra.runs, err = run.New(context.Background(), run.Config{Runs: db, Workflows: db, Audits: db, Tools: ra.reg,
			Models: runModels, DefaultModel: "scripted:m", Policy: rt.ServerPolicy, AllowBypass: true,
			PermissionTimeout: 3 * time.Second, SharedDirRoot: tb.TempDir(), Logger: log, Budget: o.budget, Usage: db})
		if err != nil {
			tb.Fatal(err)
		}
		cfg.Runs = ra.runs
		rt.SetFlowTools(ra.runs)
		ra.bg, err = run.NewBackground(context.Background(), run.BackgroundConfig{Runs: ra.runs, Schedules: db, Hooks: rt.FireHook, Secrets: rt.Secrets(), Logger: log})
		if err != nil {
			tb.Fatal(err)
		}
		cfg.Background = ra.bg
	}
	s := New(cfg)
	ra.api = &api{s: s, rt: rt, db: db, logs: logs, path: path}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if ra.bg != nil {
			if err := ra.bg.Close(ctx); err != nil {
				tb.Errorf("background shutdown: %v", err)
			}
		}
		if ra.runs != nil {
			if err := ra.runs.Shutdown(ctx); err != nil {
				tb.Errorf("runs shutdown: %v", err)
			}
		}
		if err := rt.Shutdown(ctx); err != nil {
			tb.Errorf("runtime shutdown: %v", err)
		}
		s.Close()
		if ra.api.srv != nil {
			ra.api.srv.Close()
		}
		if err := db.Close(); err != nil {
			tb.Errorf("closing the database: %v", err)
		}
	})
	return ra
}

// setMode changes the server's permission mode over the API.
func (ra *runsAPI) setMode(m permission.Mode) {
	ra.t.Helper()
	ra.doJSON("PUT", "/v1/settings/permissions", map[string]any{"defaultMode": string(m)}, http.StatusOK)
}

// raw sends a request and returns the status and body.
func (ra *runsAPI) raw(method, path string, body any, header ...string) (int, []byte) {
	ra.t.Helper()
	resp := ra.do(method, path, body, header...)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// createRun posts a run and returns its id.
func (ra *runsAPI) createRun(body any) string {
	ra.t.Helper()
	m := ra.doJSON("POST", "/v1/runs", body, http.StatusOK)
	id, _ := m["runId"].(string)
	if !strings.HasPrefix(id, "run_") {
		ra.t.Fatalf("create: %v", m)
	}
	return id
}

// events opens a run's stream after a position.
func (ra *runsAPI) events(id string, after int64, header ...string) *sseConn {
	ra.t.Helper()
	return ra.openSSE("GET", fmt.Sprintf("/v1/runs/%s/events?after=%d", id, after), nil, header...)
}

// readAll reads frames until the stream ends.
func (c *sseConn) readAll() []sseEvent {
	c.t.Helper()
	var out []sseEvent
	for {
		ev, err := c.next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			c.t.Fatalf("stream failed after %s: %v", eventTypes(out), err)
		}
		out = append(out, ev)
	}
}

func (ra *runsAPI) wait(id string) run.Run {
	ra.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := ra.runs.WaitRun(ctx, id)
	if err != nil {
		ra.t.Fatalf("waiting for run %s: %v", id, err)
	}
	return r
}

func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }

func seqOf(t *testing.T, ev sseEvent) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(ev.ID, &n); err != nil {
		t.Fatalf("frame id %q", ev.ID)
	}
	return n
}

// TestRunWorkflowApproveParallel: a given plan is validated, shown
// (plan_ready), held for approval, then its independent steps run at the
// same time (meet returns only when both are in flight) and the dependent
// one after both; complete carries the final result.
func TestRunWorkflowApproveParallel(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	id := a.createRun(map[string]any{"goal": "meet and join", "workflow": rawJSON(`{"steps":[
		{"id":"a","tool":"meet","args":{"text":"A"}},
		{"id":"b","tool":"meet","args":{"text":"B"}},
		{"id":"c","tool":"echo","args":{"text":"{{steps.a.result}}+{{steps.b.result}}"},"dependsOn":["a","b"]}]}`)})
	c := a.events(id, 0)
	head := c.readUntil("plan_approval_requested")
	if got := eventTypes(head); got != "plan_ready plan_approval_requested" {
		t.Fatalf("events %q", got)
	}
	got := a.doJSON("GET", "/v1/runs/"+id, nil, http.StatusOK)
	if got["status"] != "awaiting_approval" || got["awaiting"].(map[string]any)["plan"] != true {
		t.Fatalf("run before approval: %v", got)
	}
	if len(a.tools.echoes()) != 0 {
		t.Fatal("a step ran before the plan was approved")
	}
	a.doJSON("POST", "/v1/runs/"+id+"/approve", nil, http.StatusOK)
	rest := c.readAll()
	all := append(head, rest...)
	checkSeqs(t, all, 1)
	types := eventTypes(rest)
	if !strings.HasPrefix(types, "step_start step_start") || !strings.HasSuffix(types, "step_start step_complete complete") {
		t.Fatalf("events after approval %q", types)
	}
	last := rest[len(rest)-1]
	if last.field("result") != "A+B" {
		t.Fatalf("complete %s", last.Data)
	}
	run := a.doJSON("GET", "/v1/runs/"+id, nil, http.StatusOK)
	steps := run["steps"].([]any)
	if run["status"] != "completed" || run["result"] != "A+B" || len(steps) != 3 || run["summary"] != "A+B" {
		t.Fatalf("run %v", run)
	}
	for _, s := range steps {
		if s.(map[string]any)["status"] != "completed" {
			t.Fatalf("step %v", s)
		}
	}
	a.doJSON("POST", "/v1/runs/"+id+"/approve", nil, http.StatusConflict)
}

// TestRunModelDraftedPlan: without a workflow the model drafts the plan
// with tools disabled, streamed as plan_token events, then plan_ready;
// seed 001's paths drive it.
func TestRunModelDraftedPlan(t *testing.T) {
	t.Parallel()
	chunks := []string{`{"steps":[{"id":"look","tool":"echo","args":{"text":"hi"}}`,
		`,{"id":"say","tool":"echo","args":{"text":"{{steps.look.result}} there"},"dependsOn":["look"]}`, `]}`}
	a := newRunsAPI(t, runsOptions{scripts: []llmtest.Script{llmtest.Text(chunks...)}})
	m := a.doJSON("POST", "/api/agent/run", map[string]any{"goal": "say hi there", "config": map[string]any{}}, http.StatusOK)
	id := m["runId"].(string)
	c := a.openSSE("GET", "/api/agent/stream?runId="+id, nil)
	head := c.readUntil("plan_approval_requested")
	if got := eventTypes(head); got != "plan_token plan_token plan_token plan_ready plan_approval_requested" {
		t.Fatalf("events %q", got)
	}
	var text strings.Builder
	for _, ev := range head[:3] {
		text.WriteString(ev.field("text").(string))
	}
	if text.String() != strings.Join(chunks, "") {
		t.Fatalf("plan tokens %q", text.String())
	}
	steps := head[3].field("plan").(map[string]any)["steps"].([]any)
	if len(steps) != 2 || steps[1].(map[string]any)["id"] != "say" {
		t.Fatalf("plan_ready %s", head[3].Data)
	}
	reqs := a.provider.Requests()
	if len(reqs) != 1 || len(reqs[0].Tools) != 0 || !strings.Contains(reqs[0].Messages[0].Text(), "say hi there") {
		t.Fatalf("planning request: %d requests, tools %v", len(reqs), reqs[0].Tools)
	}
	a.doJSON("POST", "/api/agent/"+id+"/approve", nil, http.StatusOK)
	rest := c.readAll()
	if last := rest[len(rest)-1]; last.Event != "complete" || last.field("result") != "hi there" {
		t.Fatalf("end of stream %s: %s", eventTypes(rest), last.Data)
	}
}

// TestApproveEditedPlan: an edited plan sent with the approval is
// validated (400 naming the step) and, once valid, adopted.
func TestApproveEditedPlan(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	id := a.createRun(map[string]any{"goal": "g", "workflow": rawJSON(`{"steps":[{"id":"a","tool":"echo","args":{"text":"draft"}}]}`)})
	c := a.events(id, 0)
	c.readUntil("plan_approval_requested")
	resp := a.do("POST", "/v1/runs/"+id+"/approve", `{"steps":[{"id":"a","tool":"nope","args":{}}]}`)
	msg := decodeErrProblems(t, resp, http.StatusBadRequest)
	if !strings.Contains(msg.Message, `unknown tool "nope"`) || len(msg.Problems) != 1 || msg.Problems[0].StepID != "a" {
		t.Fatalf("invalid edit: %+v", msg)
	}
	a.doJSON("POST", "/v1/runs/"+id+"/approve", `{"steps":[{"id":"a","tool":"echo","args":{"text":"edited"}}]}`, http.StatusOK)
	rest := c.readAll()
	if got := eventTypes(rest); got != "plan_ready step_start step_complete complete" {
		t.Fatalf("events %q", got)
	}
	if rest[0].field("edited") != true || rest[len(rest)-1].field("result") != "edited" {
		t.Fatalf("edited plan not adopted: %s / %s", rest[0].Data, rest[len(rest)-1].Data)
	}
	if got := a.tools.echoes(); !slices.Equal(got, []string{"edited"}) {
		t.Fatalf("echo ran %v", got)
	}
}

type errWithProblems struct {
	Type          string            `json:"type"`
	Message       string            `json:"message"`
	Problems      []run.PlanProblem `json:"problems"`
	InputProblems []string          `json:"inputProblems"`
	Missing       []string          `json:"missing"`
}

func decodeErrProblems(t *testing.T, resp *http.Response, status int) errWithProblems {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, raw)
	}
	var e struct {
		Error errWithProblems `json:"error"`
	}
	if err := json.Unmarshal(raw, &e); err != nil || e.Error.Message == "" {
		t.Fatalf("error body %s: %v", raw, err)
	}
	return e.Error
}

// TestStepApprovalGate: a requiresApproval step waits with a
// step_approval_requested event until approved.
func TestStepApprovalGate(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	id := a.createRun(map[string]any{"goal": "g", "config": map[string]any{"autoApprove": true}, "workflow": rawJSON(`{"steps":[
		{"id":"a","tool":"echo","args":{"text":"1"},"requiresApproval":true},
		{"id":"b","tool":"echo","args":{"text":"2"},"dependsOn":["a"]}]}`)})
	c := a.events(id, 0)
	head := c.readUntil("step_approval_requested")
	if got := eventTypes(head); got != "plan_ready step_approval_requested" {
		t.Fatalf("events %q", got)
	}
	if ev := head[1]; ev.field("stepId") != "a" || ev.field("tool") != "echo" || ev.field("gate") != "step" {
		t.Fatalf("gate %s", ev.Data)
	}
	run := a.doJSON("GET", "/v1/runs/"+id, nil, http.StatusOK)
	if run["status"] != "awaiting_approval" || fmt.Sprint(run["awaiting"].(map[string]any)["steps"]) != "[a]" {
		t.Fatalf("run at the gate: %v", run)
	}
	a.doJSON("POST", "/v1/runs/"+id+"/approve", map[string]any{"stepId": "b"}, http.StatusConflict)
	a.doJSON("POST", "/v1/runs/"+id+"/approve", map[string]any{"stepId": "a"}, http.StatusOK)
	rest := c.readAll()
	if got := eventTypes(rest); got != "step_start step_complete step_start step_complete complete" {
		t.Fatalf("events %q", got)
	}
	if got := a.tools.echoes(); !slices.Equal(got, []string{"1", "2"}) {
		t.Fatalf("echo ran %v", got)
	}
}

// TestCancelRun: cancel is cooperative and final: the step in flight is
// cancelled, the stream ends with cancelled and never sends complete.
func TestCancelRun(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	id := a.createRun(map[string]any{"goal": "wait", "config": map[string]any{"autoApprove": true},
		"workflow": rawJSON(`{"steps":[{"id":"h","tool":"hold","args":{"text":"x"}},{"id":"n","tool":"echo","args":{"text":"never"},"dependsOn":["h"]}]}`)})
	c := a.events(id, 0)
	c.readUntil("step_start")
	if m := a.doJSON("POST", "/v1/runs/"+id+"/cancel", nil, http.StatusOK); m["status"] != "cancelled" {
		t.Fatalf("cancel: %v", m)
	}
	rest := c.readAll()
	if got := eventTypes(rest); got != "step_complete step_complete cancelled" {
		t.Fatalf("events after cancel %q", got)
	}
	if rest[0].field("status") != "cancelled" || rest[1].field("status") != "cancelled" {
		t.Fatalf("steps %s %s", rest[0].Data, rest[1].Data)
	}
	if run := a.doJSON("GET", "/v1/runs/"+id, nil, http.StatusOK); run["status"] != "cancelled" {
		t.Fatalf("run %v", run)
	}
	if m := a.doJSON("POST", "/api/agent/"+id+"/cancel", nil, http.StatusOK); m["status"] != "not_running" {
		t.Fatalf("second cancel: %v", m)
	}
	decodeErr(t, a.do("POST", "/v1/runs/run_nope/cancel", nil), http.StatusNotFound, errNotFound)

	// At the plan gate, too.
	id2 := a.createRun(map[string]any{"goal": "g", "workflow": rawJSON(`{"steps":[{"tool":"echo","args":{"text":"x"}}]}`)})
	c2 := a.events(id2, 0)
	c2.readUntil("plan_approval_requested")
	a.doJSON("POST", "/v1/runs/"+id2+"/cancel", nil, http.StatusOK)
	if got := eventTypes(c2.readAll()); got != "cancelled" {
		t.Fatalf("events after a cancel at the gate %q", got)
	}
	if len(a.tools.echoes()) != 0 {
		t.Fatal("a step ran after its run was cancelled")
	}
}

// TestRunStreamResume: a run's stream resumes from Last-Event-ID (or
// ?after=) without gap or duplicate, like session streams.
func TestRunStreamResume(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	id := a.createRun(map[string]any{"goal": "g", "config": map[string]any{"autoApprove": true},
		"workflow": rawJSON(`{"steps":[{"id":"a","tool":"echo","args":{"text":"1"}},{"id":"b","tool":"echo","args":{"text":"2"},"dependsOn":["a"]}]}`)})
	full := a.events(id, 0).readAll()
	checkSeqs(t, full, 1)
	if got := eventTypes(full); got != "plan_ready step_start step_complete step_start step_complete complete" {
		t.Fatalf("events %q", got)
	}
	for _, from := range []int64{1, 3, 5} {
		tail := a.openSSE("GET", "/v1/runs/"+id+"/events?after=0", nil, "Last-Event-ID", fmt.Sprint(from)).readAll()
		if len(tail) != len(full)-int(from) || tail[0].ID != full[from].ID || string(tail[0].Data) != string(full[from].Data) {
			t.Fatalf("resume after %d: %s", from, eventTypes(tail))
		}
	}
	tail := a.openSSE("GET", "/api/agent/stream?runId="+id+"&after=4", nil).readAll()
	if eventTypes(tail) != "step_complete complete" || seqOf(t, tail[0]) != 5 {
		t.Fatalf("?after=4: %s", eventTypes(tail))
	}
	decodeErr(t, a.do("GET", "/v1/runs/"+id+"/events?after=99", nil), http.StatusBadRequest, errInvalidRequest)
	decodeErr(t, a.do("GET", "/v1/runs/"+id+"/events?after=x", nil), http.StatusBadRequest, errInvalidRequest)
	decodeErr(t, a.do("GET", "/v1/runs/run_nope/events", nil), http.StatusNotFound, errNotFound)
	decodeErr(t, a.do("GET", "/api/agent/stream", nil), http.StatusBadRequest, errInvalidRequest)
}

// TestListAndGetRuns: ?q= searches goal, summary and error (ignoring
// case), pages with a cursor; a run's detail has its plan, step results
// and audit entries.
func TestListAndGetRuns(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	auto := map[string]any{"autoApprove": true}
	ids := map[string]string{}
	for _, r := range []struct{ goal, tool, text string }{
		{"alpha report", "echo", "one"}, {"beta notes", "echo", "zebra crossing"}, {"gamma Report", "fail", "kaput"},
	} {
		ids[r.goal] = a.createRun(map[string]any{"goal": r.goal, "config": auto,
			"workflow": map[string]any{"steps": []any{map[string]any{"id": "s", "tool": r.tool, "args": map[string]string{"text": r.text}}}}})
		a.wait(ids[r.goal])
	}
	names := func(q string) []string {
		m := a.doJSON("GET", "/v1/runs?"+q, nil, http.StatusOK)
		var out []string
		for _, r := range m["runs"].([]any) {
			out = append(out, r.(map[string]any)["goal"].(string))
		}
		slices.Sort(out)
		return out
	}
	for q, want := range map[string][]string{
		"q=REPORT":         {"alpha report", "gamma Report"},
		"q=zebra":          {"beta notes"},
		"q=kaput":          {"gamma Report"},
		"status=failed":    {"gamma Report"},
		"q=nothing-at-all": nil,
		"":                 {"alpha report", "beta notes", "gamma Report"},
	} {
		if got := names(q); !slices.Equal(got, want) {
			t.Errorf("?%s: %v, want %v", q, got, want)
		}
	}
	page := a.doJSON("GET", "/api/agent/runs?limit=2", nil, http.StatusOK)
	if len(page["runs"].([]any)) != 2 || page["hasMore"] != true {
		t.Fatalf("page 1: %v", page)
	}
	page2 := a.doJSON("GET", "/api/agent/runs?limit=2&cursor="+page["nextCursor"].(string), nil, http.StatusOK)
	if len(page2["runs"].([]any)) != 1 || page2["hasMore"] != false {
		t.Fatalf("page 2: %v", page2)
	}
	decodeErr(t, a.do("GET", "/v1/runs?limit=0", nil), http.StatusBadRequest, errInvalidRequest)
	decodeErr(t, a.do("GET", "/v1/runs?status=sleeping", nil), http.StatusBadRequest, errInvalidRequest)

	d := a.doJSON("GET", "/api/agent/runs/"+ids["alpha report"], nil, http.StatusOK)
	if d["runId"] != ids["alpha report"] || d["plan"] == nil || len(d["steps"].([]any)) != 1 || d["result"] != "one" {
		t.Fatalf("detail %v", d)
	}
	entries, _ := d["audit"].([]any)
	if len(entries) != 1 || entries[0].(map[string]any)["tool_name"] != "echo" || entries[0].(map[string]any)["session_id"] != ids["alpha report"] {
		t.Fatalf("audit %v", d["audit"])
	}
	failed := a.doJSON("GET", "/v1/runs/"+ids["gamma Report"], nil, http.StatusOK)
	step := failed["steps"].([]any)[0].(map[string]any)
	if failed["status"] != "failed" || !strings.Contains(failed["error"].(string), "kaput") || step["status"] != "failed" {
		t.Fatalf("failed run %v", failed)
	}
	decodeErr(t, a.do("GET", "/v1/runs/run_nope", nil), http.StatusNotFound, errNotFound)
}

// TestFailedStepEndsWithError: a failed step is a step_complete with
// status failed and its error, and the run's failure is an error frame
// that ends the stream; steps that depend on it are skipped.
func TestFailedStepEndsWithError(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	id := a.createRun(map[string]any{"goal": "g", "config": map[string]any{"autoApprove": true},
		"workflow": rawJSON(`{"steps":[{"id":"a","tool":"fail","args":{"text":"x"}},{"id":"b","tool":"echo","args":{"text":"y"},"dependsOn":["a"]}]}`)})
	evs := a.events(id, 0).readAll()
	if got := eventTypes(evs); got != "plan_ready step_start step_complete step_complete error" {
		t.Fatalf("events %q", got)
	}
	if evs[2].field("status") != "failed" || !strings.Contains(evs[2].field("error").(string), "broken: x") || evs[3].field("status") != "skipped" {
		t.Fatalf("steps %s %s", evs[2].Data, evs[3].Data)
	}
	if msg, _ := evs[4].field("message").(string); !strings.Contains(msg, "broken: x") {
		t.Fatalf("error frame %s", evs[4].Data)
	}
}

// TestResumeAfterCrash: a run a crash cut off (the store still says it
// runs, with one step completed) is marked interrupted when the server
// starts; resuming it reuses the completed step (its tool does not run
// again) after a plan review.
func TestResumeAfterCrash(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "weft.db")
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = db.CreateRun(ctx, record.Run{ID: "run_crashed", Goal: "two steps", Status: record.RunRunning,
		Plan:   rawJSON(`{"steps":[{"id":"a","tool":"echo","args":{"text":"one"}},{"id":"b","tool":"echo","args":{"text":"{{steps.a.result}} two"},"dependsOn":["a"]}]}`),
		Config: rawJSON(`{"autoApprove":true}`), Posture: rawJSON(`{"mode":"default"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PutStepResult(ctx, record.StepResult{RunID: "run_crashed", StepID: "a", Index: 0, Status: record.StepCompleted, Result: rawJSON(`"one"`)}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutStepResult(ctx, record.StepResult{RunID: "run_crashed", StepID: "b", Index: 1, Status: record.StepRunning}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	a := newRunsAPI(t, runsOptions{dbPath: path})
	if run := a.doJSON("GET", "/v1/runs/run_crashed", nil, http.StatusOK); run["status"] != "interrupted" {
		t.Fatalf("after the restart: %v", run)
	}
	before := a.events("run_crashed", 0).readAll()
	if eventTypes(before) != "interrupted" {
		t.Fatalf("events of the interrupted run %q", eventTypes(before))
	}
	a.doJSON("POST", "/api/agent/runs/run_crashed/resume", nil, http.StatusOK)
	c := a.events("run_crashed", 1)
	head := c.readUntil("plan_approval_requested")
	if got := eventTypes(head); got != "resumed plan_ready plan_approval_requested" || fmt.Sprint(head[0].field("keptSteps")) != "[a]" {
		t.Fatalf("resume events %q %s", got, head[0].Data)
	}
	a.doJSON("POST", "/v1/runs/run_crashed/approve", nil, http.StatusOK)
	rest := c.readAll()
	if got := eventTypes(rest); got != "step_complete step_start step_complete complete" || rest[0].field("reused") != true {
		t.Fatalf("events after approval %q (%s)", got, rest[0].Data)
	}
	if rest[len(rest)-1].field("result") != "one two" {
		t.Fatalf("complete %s", rest[len(rest)-1].Data)
	}
	if got := a.tools.echoes(); !slices.Equal(got, []string{"one two"}) {
		t.Fatalf("echo ran %v; the completed step must not run again", got)
	}
	decodeErr(t, a.do("POST", "/v1/runs/run_crashed/resume", nil), http.StatusConflict, errConflict)
}

// TestRewindAndFork: rewind keeps the first N steps' results and runs the
// rest again after review; fork copies the plan into a new run that
// pauses for review.
func TestRewindAndFork(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	id := a.createRun(map[string]any{"goal": "three", "config": map[string]any{"autoApprove": true}, "workflow": rawJSON(`{"steps":[
		{"id":"a","tool":"echo","args":{"text":"1"}},
		{"id":"b","tool":"echo","args":{"text":"2"},"dependsOn":["a"]},
		{"id":"c","tool":"echo","args":{"text":"3"},"dependsOn":["b"]}]}`)})
	first := a.events(id, 0).readAll()
	last := seqOf(t, first[len(first)-1])

	decodeErr(t, a.do("POST", "/v1/runs/"+id+"/rewind", map[string]any{"keepSteps": 4}), http.StatusBadRequest, errInvalidRequest)
	decodeErr(t, a.do("POST", "/v1/runs/"+id+"/rewind", map[string]any{}), http.StatusBadRequest, errInvalidRequest)
	a.doJSON("POST", "/v1/runs/"+id+"/rewind", map[string]any{"keepSteps": 1}, http.StatusOK)
	c := a.events(id, last)
	head := c.readUntil("plan_approval_requested")
	if eventTypes(head) != "resumed plan_ready plan_approval_requested" || head[0].field("from") != "rewind" || fmt.Sprint(head[0].field("keptSteps")) != "[a]" {
		t.Fatalf("rewind events %s %s", eventTypes(head), head[0].Data)
	}
	run := a.doJSON("GET", "/v1/runs/"+id, nil, http.StatusOK)
	if len(run["steps"].([]any)) != 1 {
		t.Fatalf("steps kept by the rewind: %v", run["steps"])
	}
	a.doJSON("POST", "/v1/runs/"+id+"/approve", nil, http.StatusOK)
	c.readAll()
	if got := a.tools.echoes(); !slices.Equal(got, []string{"1", "2", "3", "2", "3"}) {
		t.Fatalf("echo after rewind %v", got)
	}

	m := a.doJSON("POST", "/api/agent/runs/"+id+"/fork", nil, http.StatusOK)
	fork := m["runId"].(string)
	if fork == id || m["parentId"] != id {
		t.Fatalf("fork %v", m)
	}
	fc := a.events(fork, 0)
	fh := fc.readUntil("plan_approval_requested")
	if eventTypes(fh) != "plan_ready plan_approval_requested" || fh[1].field("reason") != "fork" {
		t.Fatalf("fork events %s", eventTypes(fh))
	}
	a.doJSON("POST", "/v1/runs/"+fork+"/approve", nil, http.StatusOK)
	if rest := fc.readAll(); rest[len(rest)-1].Event != "complete" {
		t.Fatalf("fork ended with %s", eventTypes(rest))
	}
	if got := a.tools.echoes(); len(got) != 8 {
		t.Fatalf("echo after fork %v", got)
	}
	if fr := a.doJSON("GET", "/v1/runs/"+fork, nil, http.StatusOK); fr["parentId"] != id || fr["goal"] != "three" {
		t.Fatalf("forked run %v", fr)
	}
	decodeErr(t, a.do("POST", "/v1/runs/"+id+"/resume", nil), http.StatusConflict, errConflict)
}

// TestReplayPosture: resume, fork and rewind refuse (403) when the server's
// mode now allows more than the one the run was created under; a stricter
// mode is fine.
func TestReplayPosture(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{mode: permission.ModeDefault})
	auto := map[string]any{"autoApprove": true}
	done := a.createRun(map[string]any{"goal": "ok", "config": auto, "workflow": rawJSON(`{"steps":[{"tool":"echo","args":{"text":"x"}}]}`)})
	failed := a.createRun(map[string]any{"goal": "bad", "config": auto, "workflow": rawJSON(`{"steps":[{"tool":"fail","args":{"text":"x"}}]}`)})
	a.wait(done)
	a.wait(failed)
	a.setMode(permission.ModeAuto)
	for _, c := range []struct{ path, body string }{
		{"/v1/runs/" + failed + "/resume", ""}, {"/v1/runs/" + done + "/fork", ""}, {"/v1/runs/" + done + "/rewind", `{"keepSteps":0}`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		msg := decodeErr(t, a.do("POST", c.path, body), http.StatusForbidden, errPermission)
		if !strings.Contains(msg, `"default"`) || !strings.Contains(msg, `"auto"`) {
			t.Fatalf("%s: %s", c.path, msg)
		}
	}
	a.setMode(permission.ModePlan)
	a.doJSON("POST", "/v1/runs/"+done+"/fork", nil, http.StatusOK)
	a.doJSON("POST", "/v1/runs/"+failed+"/resume", nil, http.StatusOK)
}

// TestBatch: 1 to 8 isolated runs; capabilityMode read-only refuses a
// given plan with a step that is not read-only before anything runs, and
// fails a drafted one at plan_ready.
func TestBatch(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{scripts: []llmtest.Script{llmtest.Text(`{"steps":[{"id":"w","tool":"note","args":{"text":"x"}}]}`)}})
	plan := func(tool string) json.RawMessage {
		return rawJSON(fmt.Sprintf(`{"steps":[{"id":"s","tool":%q,"args":{"text":"t"}}]}`, tool))
	}
	auto := map[string]any{"autoApprove": true}
	msg := decodeErr(t, a.do("POST", "/v1/runs/batch", map[string]any{"capabilityMode": "read-only", "runs": []any{
		map[string]any{"goal": "read", "config": auto, "workflow": plan("echo")},
		map[string]any{"goal": "write", "config": auto, "workflow": plan("note")},
	}}), http.StatusBadRequest, errInvalidRequest)
	if !strings.Contains(msg, "runs[1]") || !strings.Contains(msg, `"note" is not read-only`) {
		t.Fatalf("refusal: %s", msg)
	}
	if m := a.doJSON("GET", "/v1/runs", nil, http.StatusOK); len(m["runs"].([]any)) != 0 {
		t.Fatalf("a refused batch started runs: %v", m)
	}
	m := a.doJSON("POST", "/api/agent/batch", map[string]any{"capabilityMode": "read-only", "runs": []any{
		map[string]any{"goal": "one", "config": auto, "workflow": plan("echo")},
		map[string]any{"goal": "two", "config": auto, "workflow": plan("echo")},
	}}, http.StatusOK)
	ids := m["runIds"].([]any)
	if len(ids) != 2 || !strings.HasPrefix(m["batchId"].(string), "batch_") {
		t.Fatalf("batch %v", m)
	}
	for _, id := range ids {
		if r := a.wait(id.(string)); r.Status != "completed" || r.BatchID != m["batchId"] {
			t.Fatalf("batch run %+v", r)
		}
	}
	m = a.doJSON("POST", "/v1/runs/batch", map[string]any{"capabilityMode": "read-only", "runs": []any{
		map[string]any{"goal": "drafted", "config": auto},
	}}, http.StatusOK)
	id := m["runIds"].([]any)[0].(string)
	evs := a.events(id, 0).readAll()
	if got := eventTypes(evs); !strings.HasSuffix(got, "plan_ready error") || strings.Contains(got, "step_start") {
		t.Fatalf("drafted read-only run %q", got)
	}
	if len(a.tools.notes()) != 0 {
		t.Fatal("a read-only batch ran a note")
	}
	many := make([]any, 9)
	for i := range many {
		many[i] = map[string]any{"goal": "g", "workflow": plan("echo")}
	}
	decodeErr(t, a.do("POST", "/v1/runs/batch", map[string]any{"runs": many}), http.StatusBadRequest, errInvalidRequest)
	decodeErr(t, a.do("POST", "/v1/runs/batch", map[string]any{"runs": []any{}}), http.StatusBadRequest, errInvalidRequest)
}

// TestCreateRunErrors: requests that cannot run are refused with 400 (or
// 403) before anything is stored.
func TestCreateRunErrors(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	tests := []struct {
		name   string
		body   string
		status int
		msg    string
	}{
		{"no goal", `{}`, 400, "goal is required"},
		{"unknown tool", `{"goal":"g","workflow":{"steps":[{"id":"x","tool":"nope"}]}}`, 400, `step 0 ("x"): unknown tool "nope"`},
		{"workflow tool", `{"goal":"g","workflow":{"steps":[{"tool":"run_workflow_wf_1"}]}}`, 400, "unknown tool"},
		{"bad args", `{"goal":"g","workflow":{"steps":[{"tool":"echo","args":{"text":5}}]}}`, 400, "/text"},
		{"forward dependency", `{"goal":"g","workflow":{"steps":[{"id":"a","tool":"echo","args":{"text":"x"},"dependsOn":["b"]},{"id":"b","tool":"echo","args":{"text":"y"}}]}}`, 400, "comes later"},
		{"undeclared input", `{"goal":"g","workflow":{"steps":[{"tool":"echo","args":{"text":"{{inputs.x}}"}}]}}`, 400, `input "x" is not declared`},
		{"file not granted", `{"goal":"g","workflow":{"steps":[{"tool":"get","args":{"path":"@file:f"}}]}}`, 400, `file "f" is not granted`},
		{"inputs not an object", `{"goal":"g","inputs":[1]}`, 400, "inputs must be a JSON object"},
		{"two kinds of file", `{"goal":"g","files":[{"name":"f","nativePath":"/tmp","createSharedDirectory":true}]}`, 400, "exactly one"},
		{"relative path", `{"goal":"g","files":[{"name":"f","nativePath":"rel/x"}]}`, 400, "absolute"},
		{"bad mode", `{"goal":"g","config":{"permissionMode":"yolo"}}`, 400, "permission mode"},
		{"bad capability", `{"goal":"g","config":{"capabilityMode":"write-only"}}`, 400, "read-only"},
		{"malformed", `{"goal":`, 400, "malformed JSON"},
	}
	for _, tc := range tests {
		msg := decodeErr(t, a.do("POST", "/v1/runs", tc.body), tc.status, map[int]string{400: errInvalidRequest, 403: errPermission}[tc.status])
		if !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %q does not say %q", tc.name, msg, tc.msg)
		}
	}
	if m := a.doJSON("GET", "/v1/runs", nil, http.StatusOK); len(m["runs"].([]any)) != 0 {
		t.Fatalf("refused requests stored runs: %v", m)
	}
}

// TestRunPermissionRequest: a step the policy leaves to a person asks
// with a permission_request run event; the answer goes to the run's
// permissions endpoint (404 unknown, 409 answered), and a denial fails
// the step.
func TestRunPermissionRequest(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{mode: permission.ModeDefault})
	for _, allow := range []bool{true, false} {
		id := a.createRun(map[string]any{"goal": "note", "config": map[string]any{"autoApprove": true},
			"workflow": rawJSON(`{"steps":[{"id":"n","tool":"note","args":{"text":"hi"}}]}`)})
		c := a.events(id, 0)
		evs := c.readUntil("permission_request")
		req := evs[len(evs)-1]
		rid, _ := req.field("id").(string)
		if req.field("tool_name") != "note" || !strings.HasPrefix(rid, "perm_") {
			t.Fatalf("permission_request %s", req.Data)
		}
		decodeErr(t, a.do("POST", "/v1/runs/"+id+"/permissions/perm_nope", map[string]any{"allow": true}), http.StatusNotFound, errNotFound)
		decodeErr(t, a.do("POST", "/v1/runs/"+id+"/permissions/"+rid, map[string]any{}), http.StatusBadRequest, errInvalidRequest)
		a.doJSON("POST", "/v1/runs/"+id+"/permissions/"+rid, map[string]any{"allow": allow, "reason": "test"}, http.StatusOK)
		decodeErr(t, a.do("POST", "/api/agent/runs/"+id+"/permissions/"+rid, map[string]any{"allow": true}), http.StatusConflict, errConflict)
		rest := c.readAll()
		if got := eventTypes(evs); got != "plan_ready step_start permission_request" {
			t.Fatalf("events before the answer %q", got)
		}
		want := "step_complete complete"
		if !allow {
			want = "step_complete error"
		}
		if got := eventTypes(rest); got != want {
			t.Fatalf("allow=%v: events %q", allow, got)
		}
		if !allow && !strings.Contains(rest[0].field("error").(string), "permission denied: test") {
			t.Fatalf("denied step %s", rest[0].Data)
		}
	}
	if got := a.tools.notes(); !slices.Equal(got, []string{"hi"}) {
		t.Fatalf("note ran %v", got)
	}
}

// TestRunCheckpoint: a tool that needs a checkpoint asks with a checkpoint
// run event even in bypass mode, answered on the permissions endpoint.
func TestRunCheckpoint(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	id := a.createRun(map[string]any{"goal": "wipe", "config": map[string]any{"autoApprove": true, "permissionMode": "bypass"},
		"workflow": rawJSON(`{"steps":[{"id":"w","tool":"wipe","args":{"text":"disk"}}]}`)})
	c := a.events(id, 0)
	evs := c.readUntil("checkpoint")
	ck := evs[len(evs)-1]
	rid, _ := ck.field("id").(string)
	if !strings.HasPrefix(rid, "ckpt_") || ck.field("tool_name") != "wipe" || ck.field("message") == "" {
		t.Fatalf("checkpoint %s", ck.Data)
	}
	if len(a.tools.notes()) != 0 {
		t.Fatal("wipe ran before its checkpoint was confirmed")
	}
	a.doJSON("POST", "/v1/runs/"+id+"/permissions/"+rid, map[string]any{"allow": true}, http.StatusOK)
	if rest := c.readAll(); eventTypes(rest) != "step_complete complete" {
		t.Fatalf("events %s", eventTypes(rest))
	}
	if got := a.tools.notes(); !slices.Equal(got, []string{"wiped disk"}) {
		t.Fatalf("wipe ran %v", got)
	}
}

// TestRunFiles: @file:<name> resolves to a shared directory created for
// the run (writable by every step, removed when the run ends), a native
// path, or refs as given.
func TestRunFiles(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	in := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(in, []byte("payload"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := a.createRun(map[string]any{"goal": "copy through a shared directory",
		"config": map[string]any{"autoApprove": true, "permissionMode": "bypass"},
		"files": []any{
			map[string]any{"name": "out", "createSharedDirectory": true},
			map[string]any{"name": "in", "nativePath": in},
			map[string]any{"name": "ref", "refs": "ref-123"},
		},
		"workflow": rawJSON(`{"steps":[
			{"id":"read","tool":"get","args":{"path":"@file:in"}},
			{"id":"write","tool":"put","args":{"dir":"@file:out","name":"copy.txt","text":"{{steps.read.result}}"},"dependsOn":["read"]},
			{"id":"check","tool":"get","args":{"path":"{{steps.write.result}}"},"dependsOn":["write"]},
			{"id":"ref","tool":"echo","args":{"text":"@file:ref"}}]}`)})
	if r := a.wait(id); r.Status != "completed" {
		t.Fatalf("run %+v", r)
	}
	d := a.doJSON("GET", "/v1/runs/"+id, nil, http.StatusOK)
	results := map[string]any{}
	for _, s := range d["steps"].([]any) {
		results[s.(map[string]any)["stepId"].(string)] = s.(map[string]any)["result"]
	}
	written, _ := results["write"].(string)
	if results["check"] != "payload" || results["ref"] != "ref-123" || !strings.HasSuffix(written, "copy.txt") {
		t.Fatalf("results %v", results)
	}
	if _, err := os.Stat(filepath.Dir(written)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the shared directory %s outlived its run: %v", filepath.Dir(written), err)
	}
}

// TestAgentTools: the orchestratable tools in seed 001's shape, without
// workflow tools.
func TestAgentTools(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{})
	a.doJSON("POST", "/v1/workflows", map[string]any{"name": "w", "published": true,
		"plan": rawJSON(`{"steps":[{"tool":"echo","args":{"text":"x"}}]}`)}, http.StatusCreated)
	for _, path := range []string{"/v1/agent/tools", "/api/agent/tools"} {
		status, raw := a.raw("GET", path, nil)
		var tools []map[string]any
		if status != http.StatusOK || json.Unmarshal(raw, &tools) != nil {
			t.Fatalf("%s: %d %s", path, status, raw)
		}
		var names []string
		for _, tl := range tools {
			names = append(names, tl["name"].(string))
			if tl["inputSchema"].(map[string]any)["type"] != "object" || tl["description"] == "" {
				t.Fatalf("%s: tool %v", path, tl)
			}
		}
		if !slices.Contains(names, "echo") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "run_workflow_") }) {
			t.Fatalf("%s: %v", path, names)
		}
	}
}

// TestFengYuToken: seed 001's X-FengYu-Token header is the bearer token
// too, and run streams take ?token= like session streams.
func TestFengYuToken(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{token: "secret"})
	body := map[string]any{"goal": "g", "config": map[string]any{"autoApprove": true}, "workflow": rawJSON(`{"steps":[{"tool":"echo","args":{"text":"x"}}]}`)}
	m := a.doJSON("POST", "/api/agent/run", body, http.StatusOK, "X-FengYu-Token", "secret")
	id := m["runId"].(string)
	decodeErr(t, a.do("POST", "/api/agent/run", body, "X-FengYu-Token", "wrong"), http.StatusForbidden, errPermission)
	decodeErr(t, a.do("POST", "/api/agent/run", body), http.StatusUnauthorized, errAuthentication)
	if evs := a.openSSE("GET", "/api/agent/stream?runId="+id+"&token=secret", nil).readAll(); evs[len(evs)-1].Event != "complete" {
		t.Fatalf("stream %s", eventTypes(evs))
	}
	a.openSSE("GET", "/v1/runs/"+id+"/events?token=secret", nil).readAll()
	decodeErr(t, a.do("GET", "/v1/runs?token=secret", nil), http.StatusUnauthorized, errAuthentication)
	a.doJSON("GET", "/v1/runs", nil, http.StatusOK, "Authorization", "Bearer secret")
}

// TestRunsNotConfigured: without a run manager the routes answer 503.
func TestRunsNotConfigured(t *testing.T) {
	t.Parallel()
	a := newRunsAPI(t, runsOptions{noRuns: true})
	decodeErr(t, a.do("POST", "/v1/runs", `{"goal":"g"}`), http.StatusServiceUnavailable, errInternal)
	decodeErr(t, a.do("GET", "/api/workflows", nil), http.StatusServiceUnavailable, errInternal)
}

// FuzzRunBodies: whatever a client sends to the run and workflow
// endpoints, the answer is a success or a 4xx with the error JSON, never a
// panic or a 500.
func FuzzRunBodies(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"goal":"g"}`, `{"goal":5}`, `{"inputs":"x"}`, `{"config":{"maxParallel":-1}}`,
		`{"goal":"g","workflow":{"steps":[{"tool":"echo","args":{"text":"{{steps.0.result}}"}}]}}`,
		`{"workflow":{"steps":[{"id":"1","dependsOn":[-1, 2.5, "x"],"tool":"echo"}]}}`,
		`{"workflow":{"steps":[{"tool":"echo","args":{"text":"{{inputs."}}]}}`,
		`{"goal":"g","files":[{"name":"f","refs":null},{"name":"f","nativePath":"/x"}]}`,
		`{"name":"w","plan":{"steps":[]}}`, `{"steps":[{"tool":"echo","args":[]}]}`, `{"stepId":7}`,
		`{"name":"w","inputSchema":{"type":"object","properties":{"a":{"type":["string","null"]}}},"plan":{"steps":[{"tool":"echo","args":{"text":"{{inputs.a}}"}}]},"canvas":{"n":[1, 2]}}`,
		`{"runs":[{"goal":"a"}],"capabilityMode":"read-only"}`, `{"keepSteps":-3}`, "\xff",
		`{"goal":"g","confg":{}}`, `{"workflow":{"steps":[{"tool":"echo","dependOn":[0]}]}}`, `{"steps":[{"tool":"echo","argz":{}}]}`,
		`{"name":"w","plan":{"steps":[{"tool":"echo","requireApproval":true}]}}`,
	} {
		f.Add([]byte(s))
	}
	a := buildRuns(f, runsOptions{})
	h := a.s.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, c := range []struct {
			path string
			ok   int
		}{
			{"/v1/runs", http.StatusOK}, {"/v1/runs/batch", http.StatusOK}, {"/v1/workflows", http.StatusCreated},
			{"/v1/runs/run_nope/approve", 0}, {"/v1/runs/run_nope/rewind", 0}, {"/v1/workflows/wf_nope/run", 0},
		} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("POST", "http://127.0.0.1"+c.path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			h.ServeHTTP(rec, req)
			status, raw := rec.Code, rec.Body.Bytes()
			if status == http.StatusUnsupportedMediaType || (status == http.StatusForbidden && bytes.Contains(raw, []byte("is not allowed"))) {
				t.Fatalf("POST %s: refused before its handler: %s", c.path, raw)
			}
			if status == c.ok && c.ok != 0 {
				continue
			}
			if status < 400 || status >= 500 {
				t.Fatalf("POST %s %q: status %d: %s", c.path, body, status, raw)
			}
			var e errorBody
			if err := json.Unmarshal(raw, &e); err != nil || e.Error.Message == "" {
				t.Fatalf("POST %s %q: error body %s", c.path, body, raw)
			}
		}
	})
}
