package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-run/weft/store"
)

// testCtx bounds a test so a lost wake-up fails it instead of hanging.
// Generous: under -race on a loaded 2-core machine the stress test, whose
// readers each wait for every event to be stored, took over 20s.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// appendN appends n events one Append each. It reports failures with
// t.Errorf so tests may run it in a goroutine.
func appendN(t *testing.T, l *Log, id string, n int) {
	t.Helper()
	for i := range n {
		if _, err := l.Append(context.Background(), id, ev("t", i)); err != nil {
			t.Errorf("Append: %v", err)
			return
		}
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// raise sets a to v if v is higher.
func raise(a *atomic.Int64, v int64) {
	for cur := a.Load(); v > cur && !a.CompareAndSwap(cur, v); cur = a.Load() {
	}
}

// expectSeqs reads from r until it has seen first..last, failing on any gap
// or duplicate.
func expectSeqs(t *testing.T, ctx context.Context, r *Reader, first, last int64) {
	t.Helper()
	for want := first; want <= last; want++ {
		e, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("Next (want seq %d): %v", want, err)
		}
		if e.Seq != want {
			t.Fatalf("Next = seq %d, want %d", e.Seq, want)
		}
		if r.Position() != want {
			t.Fatalf("Position = %d after seq %d", r.Position(), want)
		}
	}
}

// seed makes the Log learn the session's last seq from the store, as the
// first Publish does, without publishing.
func (l *Log) seed(t *testing.T, id string) error {
	t.Helper()
	s := l.acquire(id)
	defer s.pending.Add(-1)
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	return l.seedLocked(t.Context(), s)
}

// state is the session's in-memory state, nil when the Log holds none.
func (l *Log) state(id string) *session {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.sessions[id]
}

func (s *session) snapshot() (ringLen int, first, last int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.n, s.first, s.last
}

func TestAppend(t *testing.T) {
	t.Parallel()
	t.Run("unknown session", func(t *testing.T) {
		t.Parallel()
		l := New(newMemStore(), Options{})
		if _, err := l.Append(t.Context(), "nope", ev("a", 0)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Append = %v, want ErrNotFound", err)
		}
		if n, _, last := l.state("nope").snapshot(); n != 0 || last != 0 {
			t.Fatalf("failed append reached the window: len %d last %d", n, last)
		}
	})
	t.Run("no events", func(t *testing.T) {
		t.Parallel()
		m := newMemStore("s")
		l := New(m, Options{})
		got, err := l.Append(t.Context(), "s")
		if err != nil || got != nil || m.appends.Load() != 0 {
			t.Fatalf("Append() = %v, %v with %d store calls", got, err, m.appends.Load())
		}
	})
	t.Run("batch is one store call with contiguous seqs", func(t *testing.T) {
		t.Parallel()
		m := newMemStore("s")
		l := New(m, Options{})
		appendN(t, l, "s", 2)
		calls := m.appends.Load()
		got, err := l.Append(t.Context(), "s", ev("b", 0), ev("b", 1), ev("b", 2))
		if err != nil {
			t.Fatal(err)
		}
		if m.appends.Load() != calls+1 {
			t.Fatalf("batch took %d store calls", m.appends.Load()-calls)
		}
		for i, e := range got {
			if e.Seq != int64(3+i) || e.SessionID != "s" || e.CreatedAt.IsZero() {
				t.Fatalf("stored[%d] = %+v", i, e)
			}
		}
	})
	t.Run("batch larger than the window", func(t *testing.T) {
		t.Parallel()
		l := New(newMemStore("s"), Options{Window: 4})
		appendN(t, l, "s", 3)
		batch := make([]store.Event, 10)
		for i := range batch {
			batch[i] = ev("b", i)
		}
		if _, err := l.Append(t.Context(), "s", batch...); err != nil {
			t.Fatal(err)
		}
		if n, first, last := l.state("s").snapshot(); n != 4 || first != 10 || last != 13 {
			t.Fatalf("window = len %d, %d..%d; want 4, 10..13", n, first, last)
		}
		expectSeqs(t, testCtx(t), l.Subscribe("s", 0), 1, 13)
	})
	t.Run("ctx ends while another append holds the session", func(t *testing.T) {
		t.Parallel()
		m := newMemStore("s")
		l := New(m, Options{})
		entered, release := make(chan struct{}), make(chan struct{})
		m.setHooks(nil, func(string, []store.Event) {
			close(entered)
			<-release
		})
		done := make(chan error)
		go func() {
			_, err := l.Append(context.Background(), "s", ev("slow", 0))
			done <- err
		}()
		<-entered
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := l.Append(ctx, "s", ev("b", 0)); !errors.Is(err, context.Canceled) {
			t.Fatalf("Append = %v, want context.Canceled", err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if m.lastSeq("s") != 1 {
			t.Fatalf("store has %d events, want 1", m.lastSeq("s"))
		}
	})
}

// TestSubscribePositions checks replay from every kind of starting
// position, and that readers inside the window never touch the store.
func TestSubscribePositions(t *testing.T) {
	t.Parallel()
	const total = 50 // with Window 8 the ring holds 43..50
	tests := []struct {
		name       string
		after      int64
		storeReads bool
	}{
		{"from the beginning", 0, true},
		{"behind the window", 20, true},
		{"just behind the window", 41, true},
		{"oldest in the window", 42, false},
		{"inside the window", 45, false},
		{"caught up", 50, false},
		{"beyond the end", 53, false},
		{"negative is the beginning", -5, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newMemStore("s")
			l := New(m, Options{Window: 8, ReadBatch: 5})
			appendN(t, l, "s", total)
			reads := m.reads.Load()
			ctx := testCtx(t)
			r := l.Subscribe("s", tt.after)
			defer r.Close()
			start := max(tt.after, 0) + 1
			expectSeqs(t, ctx, r, start, total)
			if got := m.reads.Load() > reads; got != tt.storeReads {
				t.Fatalf("store read = %v, want %v", got, tt.storeReads)
			}
			// Then it follows live appends.
			go appendN(t, l, "s", int(max(tt.after, total)-total)+3)
			expectSeqs(t, ctx, r, max(start, total+1), max(tt.after, total)+3)
		})
	}
}

// TestCaughtUpRace puts a reader exactly in the window between "the store
// has nothing more" and "wait for an append", with an append landing there.
func TestCaughtUpRace(t *testing.T) {
	t.Parallel()
	t.Run("append completes between store read and ring check", func(t *testing.T) {
		t.Parallel()
		m := newMemStore("s")
		appendN(t, New(m, Options{}), "s", 5)
		l := New(m, Options{}) // restarted: knows nothing of the session
		var once sync.Once
		m.setHooks(func(context.Context, string, int64) {
			once.Do(func() {
				if _, err := l.Append(context.Background(), "s", ev("race", 0)); err != nil {
					t.Error(err)
				}
			})
		}, nil)
		r := l.Subscribe("s", 5)
		defer r.Close()
		expectSeqs(t, testCtx(t), r, 6, 6)
	})
	// Events reach the ring before the store, so the wake-up that must not
	// be lost is the one for an event published right after a reader
	// committed to waiting, whether the reader knows the session's last
	// seq (seeded) or only that the store had nothing more (fresh Log).
	for _, seeded := range []bool{false, true} {
		t.Run(fmt.Sprintf("published after the reader waits, seeded=%v", seeded), func(t *testing.T) {
			t.Parallel()
			m := newMemStore("s")
			appendN(t, New(m, Options{}), "s", 5)
			l := New(m, Options{})
			if seeded {
				if err := l.seed(t, "s"); err != nil {
					t.Fatal(err)
				}
			}
			r := l.Subscribe("s", 5)
			defer r.Close()
			got := make(chan error, 1)
			go func() {
				e, err := r.Next(testCtx(t))
				if err == nil && e.Seq != 6 {
					err = fmt.Errorf("got seq %d, want 6", e.Seq)
				}
				got <- err
			}()
			s := l.state("s")
			for !s.waited.Load() {
				runtime.Gosched()
			}
			if _, err := l.Publish(t.Context(), "s", ev("race", 0)); err != nil {
				t.Fatal(err)
			}
			if err := <-got; err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("window slides past a reader during each store read", func(t *testing.T) {
		t.Parallel()
		m := newMemStore("s")
		l := New(m, Options{Window: 4, ReadBatch: 5})
		appendN(t, l, "s", 20)
		var reads atomic.Int32
		m.setHooks(func(context.Context, string, int64) {
			if reads.Add(1) <= 10 {
				for i := range 10 {
					if _, err := l.Append(context.Background(), "s", ev("slide", i)); err != nil {
						t.Error(err)
					}
				}
			}
		}, nil)
		r := l.Subscribe("s", 0)
		defer r.Close()
		expectSeqs(t, testCtx(t), r, 1, 120)
	})
}

// TestConcurrentAppendersAndReaders is the ordering and completeness
// stress: every reader, whatever its start and speed, sees exactly
// after+1..last once each, in order, with the stored payloads.
func TestConcurrentAppendersAndReaders(t *testing.T) {
	t.Parallel()
	const (
		appenders = 8
		perApp    = 500
		readers   = 50
	)
	tests := []struct {
		name string
		opt  Options
		pre  int // events stored before this Log exists (a restart)
	}{
		{"default window", Options{}, 0},
		{"small window and batches", Options{Window: 16, ReadBatch: 7}, 0},
		{"after restart", Options{Window: 64, ReadBatch: 50}, 700},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newMemStore("s")
			if tt.pre > 0 {
				appendN(t, New(m, Options{}), "s", tt.pre)
			}
			l := New(m, tt.opt)
			total := int64(tt.pre + appenders*perApp)
			ctx := testCtx(t)
			var high atomic.Int64 // highest seq an Append has returned
			high.Store(int64(tt.pre))
			var wg sync.WaitGroup
			start := make(chan struct{})
			for a := range appenders {
				wg.Go(func() {
					<-start
					rnd := newRand(uint64(a))
					producer := string(rune('A' + a))
					for i := 0; i < perApp; {
						batch := min(1+rnd.IntN(3), perApp-i)
						evs := make([]store.Event, batch)
						for j := range evs {
							evs[j] = ev(producer, i+j)
						}
						got, err := l.Append(ctx, "s", evs...)
						if err != nil {
							t.Error(err)
							return
						}
						for j := 1; j < len(got); j++ {
							if got[j].Seq != got[j-1].Seq+1 {
								t.Errorf("batch seqs not contiguous: %v", seqs(got))
							}
						}
						raise(&high, got[len(got)-1].Seq)
						i += batch
						if rnd.IntN(50) == 0 {
							time.Sleep(time.Duration(rnd.IntN(300)) * time.Microsecond)
						}
					}
				})
			}
			seen := make([][]json.RawMessage, readers)
			for i := range readers {
				wg.Go(func() {
					rnd := newRand(uint64(1000 + i))
					var after int64
					switch i % 5 {
					case 0, 1:
						<-start // from the beginning, soon behind any window
					default:
						<-start
						time.Sleep(time.Duration(rnd.IntN(3000)) * time.Microsecond)
						after = rnd.Int64N(high.Load() + 5) // sometimes ahead of the log
					}
					slow := i%5 == 0
					r := l.Subscribe("s", after)
					defer r.Close()
					for want := after + 1; want <= total; want++ {
						e, err := r.Next(ctx)
						if err != nil {
							t.Errorf("reader %d from %d: Next (want %d): %v", i, after, want, err)
							return
						}
						if e.Seq != want {
							t.Errorf("reader %d from %d: got seq %d, want %d", i, after, e.Seq, want)
							return
						}
						// Durable before visible: whatever a reader gets
						// is already in the store, with that payload.
						if m.lastSeq("s") < e.Seq {
							t.Errorf("reader %d got seq %d before the store had it", i, e.Seq)
							return
						}
						if stored := m.eventAt("s", e.Seq); string(stored.Data) != string(e.Data) {
							t.Errorf("reader %d: seq %d payload %s, stored %s", i, e.Seq, e.Data, stored.Data)
							return
						}
						seen[i] = append(seen[i], e.Data)
						if slow && rnd.IntN(200) == 0 {
							time.Sleep(time.Millisecond)
						}
					}
				})
			}
			close(start)
			wg.Wait()
			if t.Failed() {
				return
			}
			for i, got := range seen {
				from := total - int64(len(got)) + 1
				for k, data := range got {
					if stored := m.eventAt("s", from+int64(k)); string(stored.Data) != string(data) {
						t.Fatalf("reader %d: seq %d payload %s, stored %s", i, from+int64(k), data, stored.Data)
					}
				}
			}

			// Each appender's events are stored once each, in its order.
			all, err := m.ReadEvents(ctx, "s", int64(tt.pre), int(total))
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(all)) != total-int64(tt.pre) {
				t.Fatalf("store has %d new events, want %d", len(all), total-int64(tt.pre))
			}
			next := map[string]float64{}
			for _, e := range all {
				var p struct {
					P string
					I float64
				}
				if err := json.Unmarshal(e.Data, &p); err != nil {
					t.Fatal(err)
				}
				if p.I != next[p.P] {
					t.Fatalf("producer %s: stored index %v, want %v", p.P, p.I, next[p.P])
				}
				next[p.P]++
			}
		})
	}
}

// TestSlowReadersDoNotDelayAppends shows structurally that appends finish
// while readers are stalled in every way a reader can stall.
func TestSlowReadersDoNotDelayAppends(t *testing.T) {
	t.Parallel()
	m := newMemStore("s")
	l := New(m, Options{Window: 32, ReadBatch: 16})
	appendN(t, l, "s", 100)
	ctx := testCtx(t)

	// A reader parked inside a store read (replaying history).
	parked, unpark := make(chan struct{}), make(chan struct{})
	var parkOnce sync.Once
	m.setHooks(func(context.Context, string, int64) {
		parkOnce.Do(func() {
			close(parked)
			<-unpark
		})
	}, nil)
	replaying := l.Subscribe("s", 0)
	defer replaying.Close()
	replayDone := make(chan error)
	go func() {
		for want := int64(1); want <= 5100; want++ {
			e, err := replaying.Next(ctx)
			if err == nil && e.Seq != want {
				err = errors.New("out of order")
			}
			if err != nil {
				replayDone <- err
				return
			}
		}
		replayDone <- nil
	}()
	<-parked

	// A reader that subscribed and never reads.
	idle := l.Subscribe("s", 0)
	defer idle.Close()

	// A reader that read one event and is now busy elsewhere.
	busy := l.Subscribe("s", 99)
	defer busy.Close()
	if _, err := busy.Next(ctx); err != nil {
		t.Fatal(err)
	}

	// 5000 appends complete while all three readers are stalled.
	appendN(t, l, "s", 5000)
	select {
	case err := <-replayDone:
		t.Fatalf("replaying reader finished while parked: %v", err)
	default:
	}
	if replaying.Position() != 0 || idle.Position() != 0 || busy.Position() != 100 {
		t.Fatalf("positions moved: %d %d %d", replaying.Position(), idle.Position(), busy.Position())
	}

	close(unpark)
	if err := <-replayDone; err != nil {
		t.Fatal(err)
	}
	expectSeqs(t, ctx, idle, 1, 5100)
	expectSeqs(t, ctx, busy, 101, 5100)
}

func TestNextContext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup returns a reader and the ctx for the Next that must fail.
		setup func(t *testing.T, l *Log, m *memStore) (*Reader, context.Context)
		want  error
	}{
		{
			name: "already canceled, events available",
			setup: func(t *testing.T, l *Log, m *memStore) (*Reader, context.Context) {
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				return l.Subscribe("s", 0), ctx
			},
			want: context.Canceled,
		},
		{
			name: "canceled while waiting for an append",
			setup: func(t *testing.T, l *Log, m *memStore) (*Reader, context.Context) {
				ctx, cancel := context.WithCancel(t.Context())
				go func() {
					s := l.state("s")
					for !s.waited.Load() {
						runtime.Gosched()
					}
					cancel()
				}()
				return l.Subscribe("s", 3), ctx
			},
			want: context.Canceled,
		},
		{
			name: "deadline while waiting",
			setup: func(t *testing.T, l *Log, m *memStore) (*Reader, context.Context) {
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
				t.Cleanup(cancel)
				return l.Subscribe("s", 3), ctx
			},
			want: context.DeadlineExceeded,
		},
		{
			name: "canceled during a store read",
			setup: func(t *testing.T, l *Log, m *memStore) (*Reader, context.Context) {
				ctx, cancel := context.WithCancel(t.Context())
				var once sync.Once
				m.setHooks(func(context.Context, string, int64) { once.Do(cancel) }, nil)
				// The window (Window 2) no longer holds seq 1.
				return l.Subscribe("s", 0), ctx
			},
			want: context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newMemStore("s")
			l := New(m, Options{Window: 2})
			appendN(t, l, "s", 3)
			r, ctx := tt.setup(t, l, m)
			defer r.Close()
			before := r.Position()
			if _, err := r.Next(ctx); !errors.Is(err, tt.want) {
				t.Fatalf("Next = %v, want %v", err, tt.want)
			}
			if r.Position() != before {
				t.Fatalf("Position moved from %d to %d", before, r.Position())
			}
			// The reader is still usable with a live ctx.
			m.setHooks(nil, nil)
			go appendN(t, l, "s", 1)
			expectSeqs(t, testCtx(t), r, before+1, 4)
		})
	}
}

func TestReaderClose(t *testing.T) {
	t.Parallel()
	t.Run("Next after Close, idempotent", func(t *testing.T) {
		t.Parallel()
		l := New(newMemStore("s"), Options{})
		appendN(t, l, "s", 3)
		r := l.Subscribe("s", 0)
		expectSeqs(t, testCtx(t), r, 1, 1)
		r.Close()
		r.Close()
		for range 2 {
			if _, err := r.Next(t.Context()); !errors.Is(err, ErrClosed) {
				t.Fatalf("Next = %v, want ErrClosed", err)
			}
		}
		if r.Position() != 1 {
			t.Fatalf("Position = %d, want 1", r.Position())
		}
		if n := l.state("s").readers.Load(); n != 0 {
			t.Fatalf("%d readers still counted", n)
		}
	})
	t.Run("Close wakes a blocked Next", func(t *testing.T) {
		t.Parallel()
		l := New(newMemStore("s"), Options{})
		r := l.Subscribe("s", 0)
		appendN(t, l, "s", 1)
		expectSeqs(t, testCtx(t), r, 1, 1)
		errc := make(chan error)
		go func() {
			_, err := r.Next(testCtx(t))
			errc <- err
		}()
		s := l.state("s")
		for !s.waited.Load() {
			runtime.Gosched()
		}
		r.Close()
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Fatalf("Next = %v, want ErrClosed", err)
		}
	})
	t.Run("an unclosed reader that is collected is released", func(t *testing.T) {
		t.Parallel()
		l := New(newMemStore("s"), Options{})
		func() { _ = l.Subscribe("s", 0) }()
		s := l.state("s")
		deadline := time.Now().Add(10 * time.Second)
		for s.readers.Load() != 0 {
			if time.Now().After(deadline) {
				t.Fatal("reader never released")
			}
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
	})
}

func TestCloseSession(t *testing.T) {
	t.Parallel()
	t.Run("waiting readers end", func(t *testing.T) {
		t.Parallel()
		l := New(newMemStore("s"), Options{})
		appendN(t, l, "s", 2)
		ctx := testCtx(t)
		var wg sync.WaitGroup
		for range 5 {
			r := l.Subscribe("s", 2)
			wg.Go(func() {
				defer r.Close()
				if _, err := r.Next(ctx); !errors.Is(err, ErrSessionClosed) {
					t.Errorf("Next = %v, want ErrSessionClosed", err)
				}
			})
		}
		s := l.state("s")
		for !s.waited.Load() {
			runtime.Gosched()
		}
		l.CloseSession("s")
		wg.Wait()
	})
	tests := []struct {
		name        string
		deleteStore bool
		after       int64
		wantFirst   int64 // first seq drained; 0 when nothing drains
	}{
		{"reader in the window drains it", false, 15, 16},
		{"reader behind the window drains store then window", false, 3, 4},
		{"reader behind the window of a deleted session", true, 3, 0},
		{"reader in the window of a deleted session drains it", true, 15, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newMemStore("s")
			l := New(m, Options{Window: 8, ReadBatch: 4})
			appendN(t, l, "s", 20)
			r := l.Subscribe("s", tt.after)
			defer r.Close()
			if tt.deleteStore {
				m.delete("s")
			}
			l.CloseSession("s")
			ctx := testCtx(t)
			if tt.wantFirst > 0 {
				expectSeqs(t, ctx, r, tt.wantFirst, 20)
			}
			for range 2 {
				if _, err := r.Next(ctx); !errors.Is(err, ErrSessionClosed) {
					t.Fatalf("Next after draining = %v, want ErrSessionClosed", err)
				}
			}
		})
	}
	t.Run("closed before this Log appended", func(t *testing.T) {
		t.Parallel()
		m := newMemStore("s")
		appendN(t, New(m, Options{}), "s", 6)
		l := New(m, Options{})
		r := l.Subscribe("s", 2)
		defer r.Close()
		l.CloseSession("s")
		ctx := testCtx(t)
		expectSeqs(t, ctx, r, 3, 6)
		if _, err := r.Next(ctx); !errors.Is(err, ErrSessionClosed) {
			t.Fatalf("Next = %v, want ErrSessionClosed", err)
		}
	})
	t.Run("later subscribers and appends start afresh", func(t *testing.T) {
		t.Parallel()
		l := New(newMemStore("s"), Options{})
		appendN(t, l, "s", 3)
		old := l.Subscribe("s", 3)
		defer old.Close()
		l.CloseSession("s")
		l.CloseSession("s") // idempotent
		appendN(t, l, "s", 2)
		ctx := testCtx(t)
		if _, err := old.Next(ctx); !errors.Is(err, ErrSessionClosed) {
			t.Fatalf("old reader Next = %v, want ErrSessionClosed", err)
		}
		r := l.Subscribe("s", 0)
		defer r.Close()
		expectSeqs(t, ctx, r, 1, 5)
		go appendN(t, l, "s", 1)
		expectSeqs(t, ctx, r, 6, 6)
	})
	t.Run("concurrent with appends", func(t *testing.T) {
		t.Parallel()
		l := New(newMemStore("s"), Options{Window: 16})
		ctx := testCtx(t)
		r := l.Subscribe("s", 0)
		defer r.Close()
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range 300 {
				if _, err := l.Append(ctx, "s", ev("a", i)); err != nil {
					t.Error(err)
				}
			}
		})
		wg.Go(func() {
			time.Sleep(time.Millisecond)
			l.CloseSession("s")
		})
		// Whatever existed at close drains in order, then the reader ends.
		var want int64 = 1
		for {
			e, err := r.Next(ctx)
			if errors.Is(err, ErrSessionClosed) {
				break
			}
			if err != nil || e.Seq != want {
				t.Fatalf("Next = seq %d, %v; want %d", e.Seq, err, want)
			}
			want++
		}
		wg.Wait()
		r2 := l.Subscribe("s", 0)
		defer r2.Close()
		expectSeqs(t, ctx, r2, 1, 300)
	})
}

// TestRestart runs a new Log over a store a previous Log wrote.
func TestRestart(t *testing.T) {
	t.Parallel()
	for _, after := range []int64{0, 1, 50, 99, 100} {
		t.Run(fmt.Sprintf("after=%d", after), func(t *testing.T) {
			t.Parallel()
			m := newMemStore("s")
			appendN(t, New(m, Options{Window: 16}), "s", 100)
			l := New(m, Options{Window: 16, ReadBatch: 32})
			ctx := testCtx(t)
			r := l.Subscribe("s", after)
			defer r.Close()
			expectSeqs(t, ctx, r, after+1, 100)
			got, err := l.Append(ctx, "s", ev("new", 0))
			if err != nil || got[0].Seq != 101 {
				t.Fatalf("Append after restart = %v, %v; want seq 101", seqs(got), err)
			}
			expectSeqs(t, ctx, r, 101, 101)
			go appendN(t, l, "s", 40) // overruns the window
			expectSeqs(t, ctx, r, 102, 141)
		})
	}
}

func TestEviction(t *testing.T) {
	t.Parallel()
	const idle = time.Minute
	newLog := func(m *memStore) (*Log, *fakeClock) {
		clk := &fakeClock{t: time.Unix(1_000_000, 0)}
		l := New(m, Options{IdleEvict: idle, Window: 8})
		l.now = clk.Now
		return l, clk
	}
	t.Run("idle session without readers is forgotten", func(t *testing.T) {
		t.Parallel()
		m := newMemStore("a", "b")
		l, clk := newLog(m)
		appendN(t, l, "a", 10)
		clk.Advance(idle - time.Second)
		l.sweep(clk.Now())
		if l.state("a") == nil {
			t.Fatal("evicted before IdleEvict")
		}
		clk.Advance(time.Second)
		appendN(t, l, "b", 1) // any call sweeps once IdleEvict/2 has passed
		if l.state("a") != nil {
			t.Fatal("not evicted after IdleEvict")
		}
		if l.state("b") == nil {
			t.Fatal("the active session was evicted")
		}
		reads := m.reads.Load()
		r := l.Subscribe("a", 0)
		defer r.Close()
		ctx := testCtx(t)
		expectSeqs(t, ctx, r, 1, 10)
		if m.reads.Load() == reads {
			t.Fatal("replay after eviction did not read the store")
		}
		go appendN(t, l, "a", 3)
		expectSeqs(t, ctx, r, 11, 13)
	})
	t.Run("idle readers keep the header, not the window", func(t *testing.T) {
		t.Parallel()
		m := newMemStore("a")
		l, clk := newLog(m)
		appendN(t, l, "a", 10)
		ctx := testCtx(t)
		caughtUp, behind := l.Subscribe("a", 0), l.Subscribe("a", 4)
		defer caughtUp.Close()
		defer behind.Close()
		expectSeqs(t, ctx, caughtUp, 1, 10)
		waiting := make(chan error)
		go func() { // caughtUp waits across the eviction
			e, err := caughtUp.Next(ctx)
			if err == nil && e.Seq != 11 {
				err = errors.New("wrong seq")
			}
			waiting <- err
		}()
		s := l.state("a")
		for !s.waited.Load() {
			runtime.Gosched()
		}
		// The reads above count as activity once: the first sweep notes it.
		clk.Advance(idle)
		l.sweep(clk.Now())
		clk.Advance(idle)
		l.sweep(clk.Now())
		if l.state("a") != s {
			t.Fatal("session with open readers was forgotten")
		}
		if n, _, last := s.snapshot(); n != 0 || last != 10 {
			t.Fatalf("window len %d last %d, want 0 and 10", n, last)
		}
		reads := m.reads.Load()
		expectSeqs(t, ctx, behind, 5, 10)
		if m.reads.Load() == reads {
			t.Fatal("reader behind a dropped window did not read the store")
		}
		appendN(t, l, "a", 1)
		if err := <-waiting; err != nil {
			t.Fatal(err)
		}
		expectSeqs(t, ctx, behind, 11, 11)
	})
	t.Run("reads keep the window", func(t *testing.T) {
		t.Parallel()
		l, clk := newLog(newMemStore("a"))
		appendN(t, l, "a", 10)
		r := l.Subscribe("a", 0)
		defer r.Close()
		ctx := testCtx(t)
		l.sweep(clk.Now()) // consume Subscribe's touch
		for i := range 4 {
			clk.Advance(idle / 2)
			expectSeqs(t, ctx, r, int64(i+1), int64(i+1))
			l.sweep(clk.Now())
		}
		if n, _, _ := l.state("a").snapshot(); n == 0 {
			t.Fatal("window dropped while being read")
		}
	})
	t.Run("many sessions stay bounded", func(t *testing.T) {
		t.Parallel()
		ids := make([]string, 500)
		for i := range ids {
			ids[i] = fmt.Sprintf("s%d", i)
		}
		m := newMemStore(ids...)
		l, clk := newLog(m)
		for round := range 3 {
			for _, id := range ids {
				if _, err := l.Append(t.Context(), id, ev("x", round)); err != nil {
					t.Fatal(err)
				}
			}
			clk.Advance(idle)
			l.sweep(clk.Now())
			l.mu.RLock()
			n := len(l.sessions)
			l.mu.RUnlock()
			if n != 0 {
				t.Fatalf("round %d: %d sessions still in memory", round, n)
			}
		}
		r := l.Subscribe(ids[7], 0)
		defer r.Close()
		expectSeqs(t, testCtx(t), r, 1, 3)
	})
}

// TestStoreLostEvents: a store that lost what this Log appended yields an
// error instead of a reader spinning on empty reads.
func TestStoreLostEvents(t *testing.T) {
	t.Parallel()
	m := newMemStore("s")
	l := New(m, Options{Window: 4})
	appendN(t, l, "s", 10)
	m.delete("s")
	m.create("s")
	r := l.Subscribe("s", 2)
	defer r.Close()
	if _, err := r.Next(testCtx(t)); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next = %v, want an error about lost events", err)
	}
}

// TestResumeFromPosition is a client reconnecting with the last seq it saw.
func TestResumeFromPosition(t *testing.T) {
	t.Parallel()
	l := New(newMemStore("s"), Options{Window: 16, ReadBatch: 10})
	appendN(t, l, "s", 100)
	ctx := testCtx(t)
	first := l.Subscribe("s", 0)
	expectSeqs(t, ctx, first, 1, 30)
	first.Close()
	appendN(t, l, "s", 50) // missed while disconnected
	again := l.Subscribe("s", first.Position())
	defer again.Close()
	expectSeqs(t, ctx, again, 31, 150)
	go appendN(t, l, "s", 5)
	expectSeqs(t, ctx, again, 151, 155)
}
