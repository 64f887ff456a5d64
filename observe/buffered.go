package observe

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
)

// DefaultBufferSize is Buffered's queue length when none is given.
const DefaultBufferSize = 1024

// Buffered delivers events, errors and metrics to another observer on a
// goroutine of its own, so that a slow observer (a network exporter, a
// log shipper) never holds up a run. The queue is bounded: what arrives
// while it is full is dropped and counted (Dropped), never waited for.
// Spans are not queued: SpanStart must return the span's context at once,
// so they go straight through to the wrapped observer when it traces
// (OpenTelemetry's SDK batches its exports itself).
//
// Close delivers what is queued and stops the goroutine; what arrives
// after it is dropped.
type Buffered struct {
	next    Observer
	metrics MetricObserver
	traces  TraceObserver
	log     *slog.Logger

	mu     sync.RWMutex // guards closed against sends on a closed queue
	closed bool
	queue  chan item

	dropped   atomic.Uint64
	delivered atomic.Uint64
	done      chan struct{}
	closeOnce sync.Once
}

type itemKind uint8

const (
	itemEvent itemKind = iota
	itemError
	itemMetric
)

type item struct {
	kind  itemKind
	name  string
	data  map[string]any
	err   error
	value float64
	tags  map[string]string
}

// NewBuffered wraps next with a queue of size items (0 or less:
// DefaultBufferSize). A panic in next is logged and dropped.
func NewBuffered(next Observer, size int) *Buffered {
	if size <= 0 {
		size = DefaultBufferSize
	}
	p := Resolve(next)
	b := &Buffered{next: next, metrics: p.Metrics, traces: p.Traces, log: slog.Default(),
		queue: make(chan item, size), done: make(chan struct{})}
	if b.next == nil {
		b.next = Noop{}
	}
	go b.deliver()
	return b
}

func (b *Buffered) capabilities() (bool, bool) { return b.metrics != nil, b.traces != nil }

func (b *Buffered) Event(name string, data map[string]any) {
	b.put(item{kind: itemEvent, name: name, data: data})
}

func (b *Buffered) Error(err error, ctx map[string]any) {
	b.put(item{kind: itemError, err: err, data: ctx})
}

func (b *Buffered) Metric(name string, value float64, tags map[string]string) {
	if b.metrics == nil {
		return
	}
	b.put(item{kind: itemMetric, name: name, value: value, tags: tags})
}

func (b *Buffered) SpanStart(ctx context.Context, name string, attrs map[string]any) context.Context {
	if b.traces == nil {
		return ctx
	}
	return b.traces.SpanStart(ctx, name, attrs)
}

func (b *Buffered) SpanEnd(ctx context.Context, attrs map[string]any, err error) {
	if b.traces != nil {
		b.traces.SpanEnd(ctx, attrs, err)
	}
}

func (b *Buffered) put(it item) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		b.dropped.Add(1)
		return
	}
	select {
	case b.queue <- it:
	default:
		b.dropped.Add(1)
	}
}

// Dropped is how many events, errors and metrics were dropped because the
// queue was full or the observer closed.
func (b *Buffered) Dropped() uint64 { return b.dropped.Load() }

// Delivered is how many were handed to the wrapped observer.
func (b *Buffered) Delivered() uint64 { return b.delivered.Load() }

// Close delivers what is queued, then stops; ctx bounds the wait (what is
// still queued when it ends is delivered in the background).
func (b *Buffered) Close(ctx context.Context) error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		close(b.queue)
		b.mu.Unlock()
	})
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("observe: the buffered observer did not drain in time: %w", ctx.Err())
	}
}

func (b *Buffered) deliver() {
	defer close(b.done)
	for it := range b.queue {
		b.one(it)
	}
}

func (b *Buffered) one(it item) {
	defer func() {
		if r := recover(); r != nil {
			b.log.Error("an observer panicked; the event is dropped", "event", it.name, "panic", r)
		}
	}()
	switch it.kind {
	case itemEvent:
		b.next.Event(it.name, it.data)
	case itemError:
		b.next.Error(it.err, it.data)
	case itemMetric:
		b.metrics.Metric(it.name, it.value, it.tags)
	}
	b.delivered.Add(1)
}
