package run_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/observe/otelobs"
	"github.com/weft-run/weft/observe/promobs"
	"github.com/weft-run/weft/run"
)

// syncBuffer is a bytes.Buffer safe for the observer's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunObserver: runs report to the sessions' observer. Three runs go
// through an observer made of the OpenTelemetry adapter (over the SDK's
// in-memory exporter), the Prometheus adapter (scraped over HTTP) and the
// line-per-event Stderr observer: one completes (the planner asked twice,
// two steps), one fails on a step, one stops on its budget. The spans
// nest as the GenAI conventions have them (invoke_agent run > chat and
// invoke_agent step > execute_tool), and the series and events exist
// with the documented names and labels.
func TestRunObserver(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prom, err := promobs.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines syncBuffer
	obs := observe.NewComposite(otelobs.New(tp), prom, observe.NewStderr(&lines))
	twoSteps := withUsage(llmtest.Text(`{"steps":[{"id":"a","tool":"echo","args":{"text":"hi"}},`+
		`{"id":"b","tool":"echo","args":{"text":"{{steps.a.result}} there"},"dependsOn":["a"]}]}`), llm.Usage{InputTokens: 1000, OutputTokens: 100})
	failing := withUsage(llmtest.Text(`{"steps":[{"id":"f","tool":"fail","args":{"text":"x"}}]}`), llm.Usage{InputTokens: 1000, OutputTokens: 50})
	r := newBudgetRig(t, agent.Budget{}, obs, noPlan, twoSteps, failing, noPlan)

	var ids []string
	for _, req := range []run.RunRequest{
		{Goal: "say hi there"},
		{Goal: "fail"},
		{Goal: "too dear", MaxBudgetUSD: ptr(0.01)},
	} {
		req.Config.AutoApprove = true
		created, err := r.runs.CreateRun(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		r.wait(t, created.ID)
		ids = append(ids, created.ID)
	}
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}

	spans := exp.GetSpans()
	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
	}
	attr := func(s tracetest.SpanStub, k string) attribute.Value {
		for _, a := range s.Attributes {
			if string(a.Key) == k {
				return a.Value
			}
		}
		return attribute.Value{}
	}
	// Per run: its root span, and the names of the spans under it with
	// their parents' names.
	type tree struct {
		root     tracetest.SpanStub
		children []string
	}
	trees := map[string]*tree{}
	for _, s := range spans {
		if s.Name == "invoke_agent run" {
			trees[attr(s, observe.AttrRunID).AsString()] = &tree{root: s}
		}
	}
	for _, s := range spans {
		if s.Name == "invoke_agent run" {
			continue
		}
		p, ok := byID[s.Parent.SpanID().String()]
		if !ok {
			t.Fatalf("span %q has no parent among the run's spans", s.Name)
		}
		root := p
		for root.Name != "invoke_agent run" {
			root = byID[root.Parent.SpanID().String()]
		}
		tr := trees[attr(root, observe.AttrRunID).AsString()]
		tr.children = append(tr.children, p.Name+" > "+s.Name)
	}
	for i, want := range []struct {
		status   string
		children string
		failed   bool
	}{
		{"completed", "invoke_agent run > chat m, invoke_agent run > chat m, invoke_agent run > invoke_agent step, invoke_agent step > execute_tool echo, " +
			"invoke_agent run > invoke_agent step, invoke_agent step > execute_tool echo", false},
		{"failed", "invoke_agent run > chat m, invoke_agent run > invoke_agent step, invoke_agent step > execute_tool fail", true},
		{"budget", "invoke_agent run > chat m", true},
	} {
		tr := trees[ids[i]]
		if tr == nil {
			t.Fatalf("run %d: no invoke_agent span", i)
		}
		if got := strings.Join(sorted(tr.children), ", "); got != strings.Join(sorted(strings.Split(want.children, ", ")), ", ") {
			t.Errorf("run %d spans:\n%s\nwant\n%s", i, got, want.children)
		}
		if attr(tr.root, observe.AttrStopReason).AsString() != want.status || (tr.root.Status.Code == codes.Error) != want.failed ||
			attr(tr.root, observe.AttrConversationID).AsString() != ids[i] {
			t.Errorf("run %d root span: %v %v", i, tr.root.Attributes, tr.root.Status)
		}
	}
	for _, s := range spans {
		if s.Name == "chat m" && attr(s, observe.AttrUsageInputTokens).AsInt64() != 1000 {
			t.Errorf("chat span without its usage: %v", s.Attributes)
		}
	}

	srv := httptest.NewServer(prom.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, series := range []string{
		`weft_plan_runs_total{status="completed"} 1`,
		`weft_plan_runs_total{status="failed"} 1`,
		`weft_plan_runs_total{status="budget"} 1`,
		`weft_run_steps_total{outcome="ok",tool="echo"} 2`,
		`weft_run_steps_total{outcome="error",tool="fail"} 1`,
		`weft_run_step_duration_seconds_count{tool="echo"} 2`,
		`weft_model_retries_total{category="invalid_plan",failover="false",model="m"} 1`,
		`weft_model_tokens_total{model="m",type="output"} 3150`,
		`weft_budget_exceeded_total{action="stop",scope="run"} 1`,
	} {
		if !strings.Contains(string(body), series+"\n") {
			t.Errorf("no %s in the scrape", series)
		}
	}

	out := lines.String()
	for _, ev := range []string{
		"weft: plan_run_start ", "weft: plan_ready ", "weft: run_step_start ", "weft: run_step_end ",
		"weft: plan_run_end ", "weft: model_call ", "weft: retry ", "weft: budget_exceeded ", `weft: error "step`,
	} {
		if !strings.Contains(out, ev) {
			t.Errorf("no %q event:\n%s", ev, out)
		}
	}
	if strings.Contains(out, "say hi there") {
		t.Errorf("a goal reached the observer:\n%s", out)
	}
}

func sorted(ss []string) []string {
	out := append([]string(nil), ss...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
