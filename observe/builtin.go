package observe

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
)

// Noop observes nothing; it is what a nil Config.Observer means, and it
// costs nothing: Resolve recognises it and the engine then builds no data.
type Noop struct{}

func (Noop) Event(string, map[string]any) {}
func (Noop) Error(error, map[string]any)  {}

// Stderr writes one line per event and error, keys sorted:
//
//	weft: guardrail rule=same_call_failures tool=Read count=5 ...
//
// It takes no metrics or spans.
type Stderr struct {
	mu sync.Mutex
	w  io.Writer
}

// NewStderr writes to w; nil means os.Stderr.
func NewStderr(w io.Writer) *Stderr {
	if w == nil {
		w = os.Stderr
	}
	return &Stderr{w: w}
}

func (s *Stderr) Event(name string, data map[string]any) { s.line(name, data) }

func (s *Stderr) Error(err error, ctx map[string]any) {
	msg := "<nil>"
	if err != nil {
		msg = err.Error()
	}
	s.line("error "+quote(msg), ctx)
}

func (s *Stderr) line(head string, data map[string]any) {
	var b strings.Builder
	b.WriteString("weft: ")
	b.WriteString(head)
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteByte(' ')
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(quote(fmt.Sprint(data[k])))
	}
	b.WriteByte('\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = io.WriteString(s.w, b.String())
}

// quote keeps a value on one line and one token.
func quote(v string) string {
	if v == "" || strings.ContainsAny(v, " \t\n\r\"=") {
		return fmt.Sprintf("%q", v)
	}
	return v
}

// Composite hands everything to several observers, in order; metrics and
// spans go to those that take them.
type Composite struct {
	all     []Observer
	metrics []MetricObserver
	traces  []TraceObserver
}

// NewComposite combines observers; nil and Noop ones are dropped. With
// none left it returns Noop, with one that one.
func NewComposite(obs ...Observer) Observer {
	c := &Composite{}
	for _, o := range obs {
		p := Resolve(o)
		if !p.On() {
			continue
		}
		c.all = append(c.all, o)
		if p.Metrics != nil {
			c.metrics = append(c.metrics, p.Metrics)
		}
		if p.Traces != nil {
			c.traces = append(c.traces, p.Traces)
		}
	}
	switch len(c.all) {
	case 0:
		return Noop{}
	case 1:
		return c.all[0]
	}
	return c
}

func (c *Composite) capabilities() (bool, bool) { return len(c.metrics) > 0, len(c.traces) > 0 }

func (c *Composite) Event(name string, data map[string]any) {
	for _, o := range c.all {
		o.Event(name, data)
	}
}

func (c *Composite) Error(err error, ctx map[string]any) {
	for _, o := range c.all {
		o.Error(err, ctx)
	}
}

func (c *Composite) Metric(name string, value float64, tags map[string]string) {
	for _, m := range c.metrics {
		m.Metric(name, value, tags)
	}
}

// SpanStart starts a span in each tracer, each a child of the last one's
// context; each finds its own span again in SpanEnd.
func (c *Composite) SpanStart(ctx context.Context, name string, attrs map[string]any) context.Context {
	for _, t := range c.traces {
		ctx = t.SpanStart(ctx, name, attrs)
	}
	return ctx
}

func (c *Composite) SpanEnd(ctx context.Context, attrs map[string]any, err error) {
	for i := len(c.traces) - 1; i >= 0; i-- {
		c.traces[i].SpanEnd(ctx, attrs, err)
	}
}
