// Package otelobs traces agent runs with OpenTelemetry: an observe
// TraceObserver whose spans follow the GenAI semantic conventions (an
// invoke_agent span per run holding a chat span per model call attempt
// and an execute_tool span per tool call, with gen_ai.* attributes), and
// FromEnv, which exports them over OTLP/HTTP when the standard
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set.
package otelobs

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/weft-run/weft/observe"
)

// ScopeName is the instrumentation scope of weft's spans.
const ScopeName = "github.com/weft-run/weft/agent"

// Observer is an observe.TraceObserver over an OpenTelemetry tracer. It
// takes no events or errors (the spans carry what went wrong); put it in
// an observe.NewComposite beside one that does.
type Observer struct {
	tracer trace.Tracer
}

// New traces with tp; nil means a no-op provider.
func New(tp trace.TracerProvider) *Observer {
	if tp == nil {
		tp = trace.NewNoopTracerProvider()
	}
	return &Observer{tracer: tp.Tracer(ScopeName)}
}

func (*Observer) Event(string, map[string]any) {}
func (*Observer) Error(error, map[string]any)  {}

// spanKey finds the span an Observer started again in SpanEnd (its own
// key, so that two observers in a Composite never end each other's).
type spanKey struct{ o *Observer }

// SpanStart starts name as a child of the span in ctx. The span's name is
// the operation followed by what it acts on, as the conventions name
// them: "chat {model}", "execute_tool {tool}", "invoke_agent {agent}"
// (or "invoke_agent" for an agent without a name).
func (o *Observer) SpanStart(ctx context.Context, name string, attrs map[string]any) context.Context {
	kind, subject := trace.SpanKindInternal, ""
	switch name {
	case observe.SpanChat:
		kind, subject = trace.SpanKindClient, str(attrs[observe.AttrRequestModel])
	case observe.SpanExecuteTool:
		subject = str(attrs[observe.AttrToolName])
	case observe.SpanInvokeAgent:
		subject = str(attrs[observe.AttrAgentName])
	}
	full := name
	if subject != "" {
		full += " " + subject
	}
	ctx, span := o.tracer.Start(ctx, full, trace.WithSpanKind(kind), trace.WithAttributes(kvs(attrs)...))
	return context.WithValue(ctx, spanKey{o}, span)
}

// SpanEnd ends the span SpanStart put in ctx, with attrs; err marks it
// failed (status Error, and error.type when attrs has none).
func (o *Observer) SpanEnd(ctx context.Context, attrs map[string]any, err error) {
	span, ok := ctx.Value(spanKey{o}).(trace.Span)
	if !ok {
		return
	}
	span.SetAttributes(kvs(attrs)...)
	if err != nil {
		if _, has := attrs[observe.AttrErrorType]; !has {
			span.SetAttributes(semconv.ErrorTypeOther)
		}
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// kvs converts attributes; a value of another type is rendered as text.
func kvs(attrs map[string]any) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(attrs))
	for k, v := range attrs {
		switch v := v.(type) {
		case string:
			out = append(out, attribute.String(k, v))
		case int:
			out = append(out, attribute.Int(k, v))
		case int64:
			out = append(out, attribute.Int64(k, v))
		case float64:
			out = append(out, attribute.Float64(k, v))
		case bool:
			out = append(out, attribute.Bool(k, v))
		case []string:
			out = append(out, attribute.StringSlice(k, v))
		default:
			out = append(out, attribute.String(k, fmt.Sprint(v)))
		}
	}
	return out
}

// DefaultServiceName is the service.name of weft's traces when
// OTEL_SERVICE_NAME is not set.
const DefaultServiceName = "weft"

// FromEnv sets up OTLP/HTTP tracing when the environment asks for it
// (read with getenv): OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as it is),
// else OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces appended), unless
// OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER is "none". The service
// is OTEL_SERVICE_NAME, else "weft", with OTEL_RESOURCE_ATTRIBUTES; the
// exporter reads its other standard variables (headers, timeout,
// compression, certificates) from the process environment. With no
// endpoint it returns nil and a no-op shutdown. shutdown flushes the
// spans still batched; call it before exiting.
func FromEnv(ctx context.Context, getenv func(string) string, version string) (o *Observer, shutdown func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	endpoint := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	if endpoint == "" {
		if base := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); base != "" {
			endpoint = strings.TrimRight(base, "/") + "/v1/traces"
		}
	}
	if endpoint == "" || strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return nil, noop, nil
	}
	if u, perr := url.Parse(endpoint); perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, noop, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT %q: want an http:// or https:// URL", endpoint)
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, noop, fmt.Errorf("OpenTelemetry exporter: %w", err)
	}
	service := strings.TrimSpace(getenv("OTEL_SERVICE_NAME"))
	if service == "" {
		service = DefaultServiceName
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(service), semconv.ServiceVersion(version)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, noop, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return New(tp), tp.Shutdown, nil
}
