package otelobs_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/openai"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/observe/otelobs"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/tool"
)

type echoIn struct {
	Text string `json:"text"`
}

// runAgent runs one tool round trip (a call of echo, then an answer) and a
// failing call of fail, on the OpenAI protocol fake, with obs.
func runAgent(t *testing.T, obs observe.Observer) {
	t.Helper()
	fake := llmtest.NewOpenAI(t)
	fake.Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_1", "echo", `{"text":"hi"}`), llmtest.ToolBlock("call_2", "fail", `{"text":"x"}`)},
			Usage: llm.Usage{InputTokens: 120, OutputTokens: 30, CacheReadTokens: 80}},
		llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("done")}, Usage: llm.Usage{InputTokens: 200, OutputTokens: 5}},
	)
	reg, err := tool.NewRegistry(
		tool.Func("echo", "echoes its input", tool.Meta{ReadOnly: true, Effect: tool.EffectRead}, func(_ context.Context, in echoIn, _ *tool.Call) (tool.Result, error) {
			return tool.Text(in.Text), nil
		}),
		tool.Func("fail", "always fails", tool.Meta{ReadOnly: true, Effect: tool.EffectRead}, func(context.Context, echoIn, *tool.Call) (tool.Result, error) {
			return tool.Errorf("it failed"), nil
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	info := llm.ModelInfo{ID: "gpt-test", MaxOutputTokens: 500, InputPrice: 1, OutputPrice: 2}
	a, err := agent.New(agent.Config{
		Provider: openai.New(openai.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL + "/v1", APIKey: "k"}}),
		Model:    "gpt-test", ModelInfo: &info, Tools: reg, Observer: obs,
		Policy: &policy.Policy{Mode: permission.ModeBypass}})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range a.NewSession().Run(context.Background(), "go") {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func attrs(s sdktrace.ReadOnlySpan) map[string]attribute.Value {
	out := map[string]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[string(kv.Key)] = kv.Value
	}
	return out
}

// TestSpans runs an agent with the observer over the SDK's in-memory
// exporter: one invoke_agent span holding two chat spans and two
// execute_tool spans, with the GenAI conventions' names and attributes.
func TestSpans(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	runAgent(t, otelobs.New(tp))
	spans := exp.GetSpans().Snapshots()
	var names []string
	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		names = append(names, s.Name())
		byName[s.Name()] = append(byName[s.Name()], s)
	}
	slices.Sort(names)
	want := []string{"chat gpt-test", "chat gpt-test", "execute_tool echo", "execute_tool fail", "invoke_agent"}
	if !slices.Equal(names, want) {
		t.Fatalf("spans = %q, want %q", names, want)
	}
	root := byName["invoke_agent"][0]
	ra := attrs(root)
	if ra["gen_ai.operation.name"].AsString() != "invoke_agent" || ra["gen_ai.request.model"].AsString() != "gpt-test" ||
		ra["gen_ai.provider.name"].AsString() != "openai" || ra["weft.stop_reason"].AsString() != "end_turn" ||
		ra["gen_ai.usage.output_tokens"].AsInt64() != 35 || root.SpanKind() != trace.SpanKindInternal {
		t.Errorf("invoke_agent attributes = %v", ra)
	}
	for _, s := range append(byName["chat gpt-test"], append(byName["execute_tool echo"], byName["execute_tool fail"]...)...) {
		if s.Parent().SpanID() != root.SpanContext().SpanID() || s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("%s is not a child of invoke_agent", s.Name())
		}
	}
	first := byName["chat gpt-test"][0]
	if a := attrs(first); first.SpanKind() != trace.SpanKindClient || a["gen_ai.operation.name"].AsString() != "chat" ||
		a["gen_ai.usage.input_tokens"].AsInt64() != 200 || // cached ones included a["gen_ai.usage.output_tokens"].AsInt64() != 30 ||
		a["gen_ai.usage.cache_read.input_tokens"].AsInt64() != 80 || a["gen_ai.request.max_tokens"].AsInt64() != 500 ||
		!slices.Equal(a["gen_ai.response.finish_reasons"].AsStringSlice(), []string{"tool_use"}) {
		t.Errorf("chat attributes = %v", a)
	}
	echo := byName["execute_tool echo"][0]
	if a := attrs(echo); a["gen_ai.operation.name"].AsString() != "execute_tool" || a["gen_ai.tool.name"].AsString() != "echo" ||
		a["gen_ai.tool.call.id"].AsString() != "call_1" || a["gen_ai.tool.type"].AsString() != "function" || echo.Status().Code == codes.Error {
		t.Errorf("execute_tool echo = %v, status %v", a, echo.Status())
	}
	fail := byName["execute_tool fail"][0]
	if a := attrs(fail); fail.Status().Code != codes.Error || a["error.type"].AsString() != "tool_error" || a["weft.tool.outcome"].AsString() != "error" {
		t.Errorf("execute_tool fail = %v, status %v", a, fail.Status())
	}
}

// collector is a loopback OTLP/HTTP trace receiver.
type collector struct {
	mu    sync.Mutex
	names []string
	svc   string
	ctype string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req collectortrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctype = r.Header.Get("Content-Type")
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.Resource.Attributes {
			if kv.Key == "service.name" {
				c.svc = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.names = append(c.names, s.Name)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// TestFromEnv: the standard variables turn OTLP/HTTP export on, and the
// spans reach a collector (a loopback fake of the OTLP protocol) with the
// service name; without them nothing is set up.
func TestFromEnv(t *testing.T) {
	t.Parallel()
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_SERVICE_NAME": "weft-test"}
	o, shutdown, err := otelobs.FromEnv(context.Background(), func(k string) string { return env[k] }, "v1.2.3")
	if err != nil || o == nil {
		t.Fatalf("FromEnv = %v, %v", o, err)
	}
	runAgent(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.names) != 5 || col.svc != "weft-test" || col.ctype != "application/x-protobuf" || !slices.Contains(col.names, "invoke_agent") {
		t.Fatalf("collector got spans %q of service %q (%s)", col.names, col.svc, col.ctype)
	}

	for _, env := range []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_TRACES_EXPORTER": "none"},
	} {
		o, shutdown, err := otelobs.FromEnv(context.Background(), func(k string) string { return env[k] }, "")
		if o != nil || err != nil || shutdown(context.Background()) != nil {
			t.Errorf("env %v: FromEnv = %v, %v", env, o, err)
		}
	}
	bad := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}
	if _, _, err := otelobs.FromEnv(context.Background(), func(k string) string { return bad[k] }, ""); err == nil || !strings.Contains(err.Error(), "http://") {
		t.Errorf("a URL without a scheme: err = %v", err)
	}
}
