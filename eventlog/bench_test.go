package eventlog

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/event"
)

// BenchmarkFanout: one session, one publisher, R readers following live.
// An op is one published event; events/s counts deliveries (b.N x R) per
// second of wall time, until the last reader has the last event.
func BenchmarkFanout(b *testing.B) {
	for _, readers := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) {
			l := New(newMemStore("s"), Options{})
			ctx := context.Background()
			payload := ev("bench", 0)
			rs := make([]*Reader, readers)
			for i := range rs {
				rs[i] = l.Subscribe("s", 0)
			}
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for _, r := range rs {
				wg.Go(func() {
					defer r.Close()
					for range b.N {
						if _, err := r.Next(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			for range b.N {
				if _, err := l.Publish(ctx, "s", payload); err != nil {
					b.Fatal(err)
				}
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.ReportMetric(float64(b.N)*float64(readers)/elapsed.Seconds(), "events/s")
		})
	}
}

// BenchmarkAppend measures the Log's own cost over an in-memory store (no
// SQLite): one event per Publish (persisted behind), one per Append (which
// waits for the store), a batch per Publish, and one session per goroutine
// in parallel. store-only is the fake store alone, the baseline the Log's
// overhead is measured against.
func BenchmarkAppend(b *testing.B) {
	b.Run("store-only", func(b *testing.B) {
		m := newMemStore("s")
		e := ev("bench", 0)
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := m.AppendEvents(ctx, "s", e); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("single", func(b *testing.B) {
		l := New(newMemStore("s"), Options{})
		e := ev("bench", 0)
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := l.Append(ctx, "s", e); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("publish", func(b *testing.B) {
		l := New(newMemStore("s"), Options{})
		e := ev("bench", 0)
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := l.Publish(ctx, "s", e); err != nil {
				b.Fatal(err)
			}
		}
		if err := l.Flush(ctx, "s"); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("batch=16", func(b *testing.B) {
		l := New(newMemStore("s"), Options{})
		batch := make([]event.Event, 16)
		for i := range batch {
			batch[i] = ev("bench", i)
		}
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := l.Publish(ctx, "s", batch...); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("parallel-sessions", func(b *testing.B) {
		const sessions = 64
		ids := make([]string, sessions)
		for i := range ids {
			ids[i] = fmt.Sprintf("s%d", i)
		}
		l := New(newMemStore(ids...), Options{})
		e := ev("bench", 0)
		ctx := context.Background()
		var next sync.Mutex
		n := 0
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			next.Lock()
			id := ids[n%sessions]
			n++
			next.Unlock()
			for pb.Next() {
				if _, err := l.Publish(ctx, id, e); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}
