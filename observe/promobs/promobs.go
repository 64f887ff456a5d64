// Package promobs counts what agents do as Prometheus metrics: an
// observe.MetricObserver over a prometheus.Registry, and the handler that
// serves it (weft serve --metrics mounts it at /metrics). The series and
// their labels are listed in docs/operations.md.
package promobs

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/weft-run/weft/observe"
)

// Namespace prefixes every series.
const Namespace = "weft"

// series maps one observe metric onto a Prometheus collector: its labels
// are the metric's tags, in this order.
type series struct {
	labels  []string
	counter *prometheus.CounterVec
	hist    *prometheus.HistogramVec
}

// Metrics is the observer. Metric names it does not know are ignored.
type Metrics struct {
	reg    *prometheus.Registry
	byName map[string]series
	errors *prometheus.CounterVec

	mu     sync.Mutex
	gauges map[string]bool
}

// Buckets of the duration histograms, in seconds.
var (
	modelBuckets = []float64{0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300}
	toolBuckets  = []float64{0.001, 0.005, 0.025, 0.1, 0.25, 1, 2.5, 10, 30, 120, 600}
	waitBuckets  = []float64{0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
)

// New registers weft's series in reg; nil means a fresh registry that also
// holds the Go runtime and process collectors.
func New(reg *prometheus.Registry) (*Metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
		if err := reg.Register(collectors.NewGoCollector()); err != nil {
			return nil, err
		}
		if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return nil, err
		}
	}
	m := &Metrics{reg: reg, byName: map[string]series{}, gauges: map[string]bool{}}
	counter := func(metric, name, help string, labels ...string) {
		m.byName[metric] = series{labels: labels, counter: prometheus.NewCounterVec(
			prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)}
	}
	histogram := func(metric, name, help string, buckets []float64, labels ...string) {
		m.byName[metric] = series{labels: labels, hist: prometheus.NewHistogramVec(
			prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)}
	}
	counter(observe.MetricTurns, "turns_total", "Model turns completed (one model call each, retries not counted).", observe.TagModel)
	histogram(observe.MetricModelDuration, "model_request_duration_seconds", "Model call attempts by outcome (completed, or the failure's category: rate_limit, overloaded, server, network, ...), from request to the end of the stream.",
		modelBuckets, observe.TagModel, observe.TagProvider, observe.TagOutcome)
	counter(observe.MetricModelTokens, "model_tokens_total", "Tokens by model and type (input, output, cache_read, cache_write).", observe.TagModel, observe.TagType)
	counter(observe.MetricModelCost, "model_cost_usd_total", "Cost in US dollars by model, from the model catalogue's prices.", observe.TagModel)
	counter(observe.MetricRetries, "model_retries_total", "Model call retries by cause; failover=true when another key of the pool was used at once.",
		observe.TagModel, observe.TagCategory, observe.TagFailover)
	counter(observe.MetricToolCalls, "tool_calls_total", "Tool calls by tool and outcome (ok, error, denied, blocked).", observe.TagTool, observe.TagOutcome)
	histogram(observe.MetricToolDuration, "tool_duration_seconds", "Tool execution time (calls that ran).", toolBuckets, observe.TagTool)
	counter(observe.MetricGuardrailBlocks, "guardrail_blocks_total", "Tool calls refused by a guardrail, by tool and rule.", observe.TagTool, observe.TagRule)
	counter(observe.MetricCircuitBreaker, "circuit_breaker_total", "Circuit breaker actions: note (asked the model to change approach) and stop (run ended stuck).", observe.TagAction)
	counter(observe.MetricPermissionDecisions, "permission_decisions_total", "Policy decisions on tool calls by tool, verdict and deciding stage.",
		observe.TagTool, observe.TagVerdict, observe.TagStage)
	histogram(observe.MetricPermissionWait, "permission_wait_seconds", "Time a person took to answer a permission request.", waitBuckets, observe.TagTool)
	counter(observe.MetricRuns, "runs_total", "Agent runs ended, by stop reason.", observe.TagModel, observe.TagStopReason)
	counter(observe.MetricBudgetExceeded, "budget_exceeded_total", "Budget breaches by scope and action (reserved for budgets).", "scope", observe.TagAction)
	counter(observe.MetricCostThreshold, "cost_threshold_crossed_total", "Session cost thresholds crossed (reserved for cost alerts).", "threshold")
	counter(observe.MetricPlanRuns, "plan_runs_total", "Plan-and-execute run attempts ended, by status (completed, failed, cancelled, interrupted, budget).", observe.TagStatus)
	counter(observe.MetricRunSteps, "run_steps_total", "Plan steps ended, by tool and outcome (ok, error, cancelled).", observe.TagTool, observe.TagOutcome)
	histogram(observe.MetricRunStepDuration, "run_step_duration_seconds", "Plan step execution time.", toolBuckets, observe.TagTool)
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "errors_total",
		Help: "Errors that ended a run, by model."}, []string{observe.TagModel})
	cs := []prometheus.Collector{m.errors}
	for _, s := range m.byName {
		if s.counter != nil {
			cs = append(cs, s.counter)
		} else {
			cs = append(cs, s.hist)
		}
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("promobs: %w", err)
		}
	}
	return m, nil
}

// Registry is the registry the series are in.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Event ignores events: the numbers come as metrics.
func (m *Metrics) Event(string, map[string]any) {}

// Error counts an error that ended a run.
func (m *Metrics) Error(_ error, ctx map[string]any) {
	model, _ := ctx["model"].(string)
	m.errors.WithLabelValues(model).Inc()
}

// Metric adds to a counter or observes into a histogram.
func (m *Metrics) Metric(name string, value float64, tags map[string]string) {
	s, ok := m.byName[name]
	if !ok {
		return
	}
	var vals [4]string
	for i, l := range s.labels {
		vals[i] = tags[l]
	}
	lv := vals[:len(s.labels)]
	if s.counter != nil {
		if value >= 0 {
			s.counter.WithLabelValues(lv...).Add(value)
		}
		return
	}
	s.hist.WithLabelValues(lv...).Observe(value)
}

// GaugeFunc registers a gauge whose value fn reports at every scrape
// (weft_<name>): the hook for what only the application knows, such as
// active sessions (sessions_active), open event streams (streams_active)
// or the event log's lag (eventlog_lag_events). fn is called on the
// scraping goroutine and must be quick and safe for concurrent use.
func (m *Metrics) GaugeFunc(name, help string, fn func() float64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gauges[name] {
		return fmt.Errorf("promobs: gauge %q is already registered", name)
	}
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, fn)
	if err := m.reg.Register(g); err != nil {
		return fmt.Errorf("promobs: %w", err)
	}
	m.gauges[name] = true
	return nil
}
