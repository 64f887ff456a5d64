package promobs_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/openai"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/observe/promobs"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/tool"
)

const time1ms = 1000000 // a time.Duration of 1 ms

type pathIn struct {
	Path string `json:"path"`
}

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("scrape: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return string(body)
}

// TestScrape runs an agent whose model repeats a failing call until the
// guardrail and the circuit breaker stop it, with the Prometheus observer,
// and scrapes the handler: the documented series are there with the
// values of the run.
func TestScrape(t *testing.T) {
	t.Parallel()
	m, err := promobs.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	active := 3
	if err := m.GaugeFunc("sessions_active", "Sessions with a run in progress.", func() float64 { return float64(active) }); err != nil {
		t.Fatal(err)
	}
	if err := m.GaugeFunc("sessions_active", "again", func() float64 { return 0 }); err == nil {
		t.Fatal("a gauge registered twice")
	}

	fake := llmtest.NewOpenAI(t)
	fake.Push(llmtest.Script{Status: 429, RetryAfter: time1ms})
	for i := range 10 {
		fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock(fmt.Sprint("c", i), "Open", `{"path":"/nope"}`)},
			Usage: llm.Usage{InputTokens: 1000, OutputTokens: 100}})
	}
	reg, err := tool.NewRegistry(tool.Func("Open", "opens", tool.Meta{Effect: tool.EffectWrite}, func(context.Context, pathIn, *tool.Call) (tool.Result, error) {
		return tool.Errorf("no such file"), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	info := llm.ModelInfo{ID: "gpt-test", MaxOutputTokens: 500, InputPrice: 2, OutputPrice: 8}
	a, err := agent.New(agent.Config{
		Provider: openai.New(openai.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL + "/v1", APIKey: "k"}}),
		Model:    "gpt-test", ModelInfo: &info, Tools: reg, Observer: observe.NewComposite(m, observe.NewDenialTracker()),
		Retry:  agent.RetryPolicy{BaseDelay: time1ms, MaxDelay: time1ms},
		Policy: &policy.Policy{Mode: permission.ModeDefault}, Approve: agent.AllowAll})
	if err != nil {
		t.Fatal(err)
	}
	for range a.NewSession().Run(context.Background(), "go") {
	}

	body := scrape(t, m.Handler())
	for _, want := range []string{
		`weft_turns_total{model="gpt-test"} 6`,
		`weft_model_tokens_total{model="gpt-test",type="input"} 6000`,
		`weft_model_tokens_total{model="gpt-test",type="output"} 600`,
		`weft_model_cost_usd_total{model="gpt-test"} 0.0168`, // 6 * (1000*2 + 100*8) / 1e6
		`weft_model_request_duration_seconds_count{model="gpt-test",outcome="completed",provider="openai"} 6`,
		`weft_model_request_duration_seconds_count{model="gpt-test",outcome="rate_limit",provider="openai"} 1`,
		`weft_model_retries_total{category="rate_limit",failover="false",model="gpt-test"} 1`,
		`weft_tool_calls_total{outcome="error",tool="Open"} 5`,
		`weft_tool_calls_total{outcome="blocked",tool="Open"} 1`,
		`weft_tool_duration_seconds_count{tool="Open"} 5`,
		`weft_guardrail_blocks_total{rule="same_call_failures",tool="Open"} 1`,
		`weft_circuit_breaker_total{action="note"} 1`,
		`weft_circuit_breaker_total{action="stop"} 1`,
		`weft_permission_decisions_total{stage="human",tool="Open",verdict="allow"} 5`,
		`weft_permission_wait_seconds_count{tool="Open"} 5`,
		`weft_permission_decisions_total{stage="guardrail",tool="Open",verdict="deny"} 1`,
		`weft_runs_total{model="gpt-test",stop_reason="stuck"} 1`,
		`weft_sessions_active 3`,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the scrape lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", body)
	}
}

// TestMetricsIgnoreWhatTheyDoNotKnow: unknown names, missing tags and
// negative counter values neither panic nor corrupt a series.
func TestMetricsIgnoreWhatTheyDoNotKnow(t *testing.T) {
	t.Parallel()
	m, err := promobs.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Metric("weft.nope", 1, nil)
	m.Metric(observe.MetricToolCalls, 1, nil)
	m.Metric(observe.MetricToolCalls, -5, map[string]string{"tool": "x", "outcome": "ok"})
	m.Metric(observe.MetricPermissionWait, 2, map[string]string{"tool": "Bash", "extra": "ignored"})
	m.Error(fmt.Errorf("boom"), map[string]any{"model": "m"})
	body := scrape(t, m.Handler())
	for _, want := range []string{`weft_tool_calls_total{outcome="",tool=""} 1`, `weft_permission_wait_seconds_sum{tool="Bash"} 2`, `weft_errors_total{model="m"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("the scrape lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, `tool="x"`) {
		t.Error("a negative counter increment created a series")
	}
}
