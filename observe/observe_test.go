package observe_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/observe"
)

// recorder keeps everything it is given; it has every part.
type recorder struct {
	mu      sync.Mutex
	events  []string
	metrics []string
	spans   []string
	block   chan struct{} // when set, Event waits on it
}

type spanKey struct{ r *recorder }

func (r *recorder) Event(name string, data map[string]any) {
	if r.block != nil {
		<-r.block
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprint(name, data))
}

func (r *recorder) Error(err error, ctx map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprint("error ", err, ctx))
}

func (r *recorder) Metric(name string, v float64, tags map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.metrics = append(r.metrics, fmt.Sprint(name, v, tags))
}

func (r *recorder) SpanStart(ctx context.Context, name string, _ map[string]any) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	parent, _ := ctx.Value(spanKey{r}).(string)
	r.spans = append(r.spans, "start "+name+" under "+parent)
	return context.WithValue(ctx, spanKey{r}, name)
}

func (r *recorder) SpanEnd(ctx context.Context, _ map[string]any, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name, _ := ctx.Value(spanKey{r}).(string)
	r.spans = append(r.spans, fmt.Sprint("end ", name, " ", err))
}

func (r *recorder) all() ([]string, []string, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...), append([]string(nil), r.metrics...), append([]string(nil), r.spans...)
}

// eventsOnly has no metric or trace part.
type eventsOnly struct{ n int }

func (e *eventsOnly) Event(string, map[string]any) { e.n++ }
func (e *eventsOnly) Error(error, map[string]any)  {}

func TestResolve(t *testing.T) {
	t.Parallel()
	rec, ev := &recorder{}, &eventsOnly{}
	tests := []struct {
		name               string
		o                  observe.Observer
		events, met, trace bool
	}{
		{name: "nil", o: nil},
		{name: "noop", o: observe.Noop{}},
		{name: "noop pointer", o: &observe.Noop{}},
		{name: "all parts", o: rec, events: true, met: true, trace: true},
		{name: "events only", o: ev, events: true},
		{name: "stderr", o: observe.NewStderr(&bytes.Buffer{}), events: true},
		{name: "empty composite is noop", o: observe.NewComposite(nil, observe.Noop{})},
		{name: "composite of events only has no metrics", o: observe.NewComposite(ev, observe.NewStderr(&bytes.Buffer{})), events: true},
		{name: "composite with a tracer", o: observe.NewComposite(ev, rec), events: true, met: true, trace: true},
		{name: "buffered events only", o: observe.NewBuffered(ev, 1), events: true},
		{name: "buffered all", o: observe.NewBuffered(rec, 1), events: true, met: true, trace: true},
	}
	for _, tt := range tests {
		p := observe.Resolve(tt.o)
		if (p.Events != nil) != tt.events || (p.Metrics != nil) != tt.met || (p.Traces != nil) != tt.trace {
			t.Errorf("%s: parts = %+v", tt.name, p)
		}
	}
}

func TestStderr(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	s := observe.NewStderr(&buf)
	s.Event(observe.EventGuardrail, map[string]any{"tool": "Read", "count": 5, "reason": "blocked by a guardrail: x"})
	s.Error(errors.New("model call failed"), map[string]any{"model": "m"})
	want := "weft: guardrail count=5 reason=\"blocked by a guardrail: x\" tool=Read\n" +
		"weft: error \"model call failed\" model=m\n"
	if buf.String() != want {
		t.Fatalf("stderr =\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestComposite(t *testing.T) {
	t.Parallel()
	a, b, ev := &recorder{}, &recorder{}, &eventsOnly{}
	c := observe.NewComposite(a, nil, ev, b)
	p := observe.Resolve(c)
	p.Events.Event("x", map[string]any{"k": 1})
	p.Metrics.Metric(observe.MetricTurns, 1, map[string]string{"model": "m"})
	ctx := p.Traces.SpanStart(context.Background(), observe.SpanInvokeAgent, nil)
	inner := p.Traces.SpanStart(ctx, observe.SpanChat, nil)
	p.Traces.SpanEnd(inner, nil, nil)
	p.Traces.SpanEnd(ctx, nil, errors.New("boom"))
	for _, r := range []*recorder{a, b} {
		events, metrics, spans := r.all()
		if len(events) != 1 || len(metrics) != 1 {
			t.Fatalf("events %v metrics %v", events, metrics)
		}
		want := []string{"start invoke_agent under ", "start chat under invoke_agent", "end chat <nil>", "end invoke_agent boom"}
		if fmt.Sprint(spans) != fmt.Sprint(want) {
			t.Fatalf("spans = %q, want %q", spans, want)
		}
	}
	if ev.n != 1 {
		t.Fatalf("the events-only observer got %d events", ev.n)
	}
}

// TestBufferedDropsAndDrains: a stuck observer never holds up the sender;
// what does not fit is dropped and counted; Close delivers the rest.
func TestBufferedDropsAndDrains(t *testing.T) {
	t.Parallel()
	rec := &recorder{block: make(chan struct{})}
	b := observe.NewBuffered(rec, 4)
	start := time.Now()
	for i := range 20 {
		b.Event("e", map[string]any{"i": i})
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("sending to a stuck observer took %v", d)
	}
	// One is in the observer's hands, four queued: at least 15 dropped.
	if n := b.Dropped(); n < 15 || n > 16 {
		t.Fatalf("dropped %d, want 15 or 16", n)
	}
	close(rec.block)
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	events, _, _ := rec.all()
	if got := uint64(len(events)); got != b.Delivered() || got+b.Dropped() != 20 {
		t.Fatalf("delivered %d (%d counted), dropped %d, of 20", got, b.Delivered(), b.Dropped())
	}
	b.Event("late", nil)
	if b.Dropped() != 20-b.Delivered()+1 {
		t.Fatalf("an event after Close was not counted as dropped")
	}
}

// panicky panics on every event.
type panicky struct{}

func (panicky) Event(string, map[string]any) { panic("observer bug") }
func (panicky) Error(error, map[string]any)  {}

func TestBufferedSurvivesAPanic(t *testing.T) {
	t.Parallel()
	b := observe.NewBuffered(panicky{}, 0)
	b.Event("a", nil)
	b.Event("b", nil)
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b.Delivered() != 0 {
		t.Fatalf("delivered %d", b.Delivered())
	}
}

func TestBufferedConcurrent(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	b := observe.NewBuffered(rec, 64)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				b.Event("e", map[string]any{"g": g, "i": i})
				b.Metric(observe.MetricToolCalls, 1, nil)
			}
		})
	}
	// Close races the senders: nothing panics, every item is counted once.
	time.Sleep(time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- b.Close(context.Background()) }()
	wg.Wait()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if got := b.Delivered() + b.Dropped(); got != 1600 {
		t.Fatalf("delivered+dropped = %d, want 1600", got)
	}
}

func TestDenialTracker(t *testing.T) {
	t.Parallel()
	d := observe.NewDenialTracker()
	o := observe.NewComposite(d, observe.NewStderr(&bytes.Buffer{}))
	decide := func(tool, verdict, stage, by string) {
		o.Event(observe.EventPermission, map[string]any{"tool": tool, "verdict": verdict, "stage": stage, "by": by})
	}
	decide("Bash", "deny", "deny_rule", "Bash(rm:*)")
	decide("Bash", "deny", "deny_rule", "Bash(rm:*)")
	decide("Read", "allow", "mode", "")
	decide("Write", "deny", "human", "")
	decide("Read", "deny", "guardrail", "same_call_failures")
	o.Event(observe.EventToolCall, map[string]any{"tool": "Read", "verdict": "deny"}) // not a decision
	s := d.Stats()
	want := "4 2 map[Bash:2 Read:1 Write:1] map[deny_rule:Bash(rm:*):2 guardrail:same_call_failures:1 human:1] map[deny_rule:2 guardrail:1 human:1]"
	if got := fmt.Sprint(s.Total, " ", s.Consecutive, " ", s.ByTool, " ", s.ByRule, " ", s.ByStage); got != want {
		t.Fatalf("stats = %s\nwant    %s", got, want)
	}
	s.ByTool["Bash"] = 99 // a snapshot is a copy
	if d.Stats().ByTool["Bash"] != 2 {
		t.Fatal("Stats returned the tracker's own map")
	}
}
