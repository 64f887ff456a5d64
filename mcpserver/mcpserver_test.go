package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-run/weft/mcpserver"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/audit"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/tool"
)

// fakeTool is a tool whose runs are counted; its output is fixed.
type fakeTool struct {
	spec tool.Spec
	out  string
	runs atomic.Int32
}

func (f *fakeTool) Spec() tool.Spec { return f.spec }
func (f *fakeTool) Run(_ context.Context, c *tool.Call) (tool.Result, error) {
	f.runs.Add(1)
	return tool.Text(f.out + " " + string(c.Input)), nil
}

var object = json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)

func newTool(name, out string, readOnly bool) *fakeTool {
	return &fakeTool{spec: tool.Spec{Name: name, Description: "does " + name, InputSchema: object, Meta: tool.Meta{ReadOnly: readOnly}}, out: out}
}

type memSink struct {
	mu      sync.Mutex
	entries []audit.Entry
}

func (m *memSink) Write(e audit.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = append(m.entries, e)
	return nil
}
func (m *memSink) Close() error { return nil }

func rules(t *testing.T, allow, deny []string) permission.RuleSet {
	t.Helper()
	rs, err := permission.ParseRuleSet("test", allow, nil, deny)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// connect serves s to an in-process SDK client; elicit, when set, is the
// client's elicitation handler (nil: the client does not support it).
func connect(t *testing.T, s *mcpserver.Server, elicit func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error), changed chan<- struct{}) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := sdk.NewInMemoryTransports()
	go func() { _ = s.Run(ctx, st) }()
	opts := &sdk.ClientOptions{ElicitationHandler: elicit}
	if changed != nil {
		opts.ToolListChangedHandler = func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, opts)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func text(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestExposesWorkflowsOnlyAndFollowsTheRegistry(t *testing.T) {
	wf := newTool("run_workflow_greet", "greeted", false)
	bash := newTool("Bash", "ran", false)
	reg, err := tool.NewRegistry(wf, bash)
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcpserver.New(mcpserver.Config{Tools: reg, Policy: &policy.Policy{Mode: permission.ModeBypass, Workspace: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 1)
	cs := connect(t, s, nil, changed)
	if got := toolNames(t, cs); strings.Join(got, ",") != "run_workflow_greet" {
		t.Fatalf("tools = %v, want only the published workflow", got)
	}
	// Builtin tools are not callable by name either.
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "Bash", Arguments: map[string]any{}})
	if err == nil && !res.IsError {
		t.Fatalf("Bash was callable: %s", text(res))
	}
	if bash.runs.Load() != 0 {
		t.Fatal("Bash ran")
	}

	// Publishing a workflow while the client is connected: it shows, and
	// the client is told.
	if err := reg.Add(newTool("run_workflow_new", "new", false)); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(t, cs); strings.Join(got, ",") != "run_workflow_greet,run_workflow_new" {
		t.Fatalf("after publishing: %v", got)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/list_changed notification")
	}
	// Unpublishing: a call to it is refused at once.
	reg.Remove("run_workflow_greet")
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_workflow_greet", Arguments: map[string]any{}})
	if err == nil && !res.IsError {
		t.Fatalf("an unpublished workflow ran: %s", text(res))
	}
	if wf.runs.Load() != 0 {
		t.Fatal("the unpublished workflow ran")
	}
}

func TestCallsGoThroughThePolicy(t *testing.T) {
	approve := func(ok bool, action string) func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		return func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			if !strings.Contains(req.Params.Message, "run_workflow_w") {
				t.Errorf("elicitation message %q does not name the tool", req.Params.Message)
			}
			return &sdk.ElicitResult{Action: action, Content: map[string]any{"approve": ok}}, nil
		}
	}
	tests := []struct {
		name     string
		mode     permission.Mode
		allow    []string
		deny     []string
		elicit   func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error)
		wantRun  bool
		wantText string
	}{
		{name: "allowed by a rule", allow: []string{"run_workflow_w"}, wantRun: true, wantText: "out"},
		{name: "denied by a rule, even in bypass", mode: permission.ModeBypass, deny: []string{"run_workflow_w"}, wantText: "permission denied"},
		{name: "asks, client cannot be asked", wantText: "does not support elicitation"},
		{name: "asks, person approves", elicit: approve(true, "accept"), wantRun: true, wantText: "out"},
		{name: "asks, person unticks", elicit: approve(false, "accept"), wantText: "did not approve"},
		{name: "asks, person declines", elicit: approve(true, "decline"), wantText: "answered decline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newTool("run_workflow_w", "out", false)
			reg, _ := tool.NewRegistry(w)
			sink := &memSink{}
			mode := tt.mode
			if mode == "" {
				mode = permission.ModeDefault
			}
			pol := &policy.Policy{Mode: mode, Rules: rules(t, tt.allow, tt.deny), Workspace: t.TempDir(), Audit: sink}
			s, err := mcpserver.New(mcpserver.Config{Tools: reg, Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			cs := connect(t, s, tt.elicit, nil)
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_workflow_w", Arguments: map[string]any{"x": "1"}})
			if err != nil {
				t.Fatal(err)
			}
			if ran := w.runs.Load() == 1; ran != tt.wantRun {
				t.Fatalf("ran = %v, want %v (%s)", ran, tt.wantRun, text(res))
			}
			if res.IsError == tt.wantRun || !strings.Contains(text(res), tt.wantText) {
				t.Fatalf("result %q (error %v), want %q", text(res), res.IsError, tt.wantText)
			}
			sink.mu.Lock()
			n := len(sink.entries)
			sink.mu.Unlock()
			if n == 0 {
				t.Fatal("the call left no audit entry")
			}
		})
	}
}

func TestResultsAreRedacted(t *testing.T) {
	secrets := secret.NewSet()
	if err := secrets.Set("API_TOKEN", "sk-live-0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	w := newTool("run_workflow_leak", "token is sk-live-0123456789abcdef", true)
	reg, _ := tool.NewRegistry(w)
	s, err := mcpserver.New(mcpserver.Config{Tools: reg, Policy: &policy.Policy{Mode: permission.ModeBypass, Workspace: t.TempDir(), Secrets: secrets}})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, s, nil, nil)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_workflow_leak", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text(res), "sk-live-0123456789abcdef") || w.runs.Load() != 1 {
		t.Fatalf("result %q leaks the secret (runs %d)", text(res), w.runs.Load())
	}
}

func TestStreamableHTTP(t *testing.T) {
	reg, _ := tool.NewRegistry(newTool("run_workflow_w", "over http", true))
	s, err := mcpserver.New(mcpserver.Config{Tools: reg, Policy: &policy.Policy{Mode: permission.ModeDefault, Workspace: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := sdk.NewClient(&sdk.Implementation{Name: "http-client", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_workflow_w", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !strings.Contains(text(res), "over http") {
		t.Fatalf("result %q", text(res))
	}
}

func TestConfigErrors(t *testing.T) {
	reg, _ := tool.NewRegistry()
	if _, err := mcpserver.New(mcpserver.Config{Tools: reg}); err == nil || !strings.Contains(err.Error(), "Policy") {
		t.Fatalf("no policy: %v", err)
	}
	if _, err := mcpserver.New(mcpserver.Config{Policy: &policy.Policy{}}); err == nil || !strings.Contains(err.Error(), "Tools") {
		t.Fatalf("no tools: %v", err)
	}
}

// TestAnswersAreBoundToTheirQuestion plays a client that handles input
// requests itself: an approval sent ahead of the question, with a forged
// or reused request state, or for other arguments, approves nothing.
func TestAnswersAreBoundToTheirQuestion(t *testing.T) {
	w := newTool("run_workflow_w", "out", false)
	reg, _ := tool.NewRegistry(w)
	s, err := mcpserver.New(mcpserver.Config{Tools: reg, Policy: &policy.Policy{Mode: permission.ModeDefault, Workspace: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, ct := sdk.NewInMemoryTransports()
	go func() { _ = s.Run(ctx, st) }()
	c := sdk.NewClient(&sdk.Implementation{Name: "manual", Version: "1"}, &sdk.ClientOptions{
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
		// Declares elicitation; never called, the test answers by hand.
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return nil, errors.New("not used")
		},
	})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	yes := sdk.InputResponseMap{"approve": &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
	call := func(args map[string]any, state string, answers sdk.InputResponseMap) *sdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_workflow_w", Arguments: args, RequestState: state, InputResponses: answers})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a := map[string]any{"x": "1"}
	first := call(a, "", nil)
	if !first.NeedsInput() || first.RequestState == "" || first.InputRequests["approve"] == nil {
		t.Fatalf("first call: want an approval question, got %+v", first)
	}
	for _, tt := range []struct {
		name  string
		args  map[string]any
		state string
	}{
		{"answer ahead of the question", a, ""},
		{"forged state", a, "0123456789abcdef"},
		{"other arguments", map[string]any{"x": "rm -rf /"}, first.RequestState},
		{"state reused", a, first.RequestState}, // the previous row used it up
	} {
		if res := call(tt.args, tt.state, yes); !res.NeedsInput() || w.runs.Load() != 0 {
			t.Fatalf("%s: ran or was not asked again (runs %d, %+v)", tt.name, w.runs.Load(), res)
		}
	}
	q := call(a, "", nil)
	if res := call(a, q.RequestState, yes); res.NeedsInput() || res.IsError || w.runs.Load() != 1 {
		t.Fatalf("the answer to the question: runs %d, %q", w.runs.Load(), text(res))
	}
}
