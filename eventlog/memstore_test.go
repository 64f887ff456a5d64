package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/record"
)

// memStore is a faithful in-memory Store: per-session seqs from 1,
// gap-free, assigned atomically; ErrNotFound for sessions not created; a
// non-zero CreatedAt is kept. Hooks let tests put a reader or an appender
// at an exact point of a race, or make appends fail.
type memStore struct {
	mu       sync.RWMutex
	sessions map[string]*memEvents
	// afterRead runs once ReadEvents has computed its (possibly now stale)
	// result and released the lock; afterAppend runs once AppendEvents has
	// committed, before it returns.
	afterRead   func(ctx context.Context, sessionID string, after int64)
	afterAppend func(sessionID string, stored []event.Event)
	// failAppend, when set, is returned by AppendEvents (nothing stored).
	failAppend error

	reads   atomic.Int64
	appends atomic.Int64
	gets    atomic.Int64
}

// memEvents holds a session's events in fixed-size chunks, so appending
// never copies what is stored: benchmarks then measure the Log, not the
// fake's slice growth.
type memEvents struct {
	n      int64
	chunks [][]event.Event
}

const memChunk = 4096

func (me *memEvents) at(seq int64) event.Event {
	i := seq - 1
	return me.chunks[i/memChunk][i%memChunk]
}

func (me *memEvents) add(e event.Event) {
	if me.n%memChunk == 0 {
		me.chunks = append(me.chunks, make([]event.Event, 0, memChunk))
	}
	c := len(me.chunks) - 1
	me.chunks[c] = append(me.chunks[c], e)
	me.n++
}

func newMemStore(sessionIDs ...string) *memStore {
	m := &memStore{sessions: make(map[string]*memEvents)}
	for _, id := range sessionIDs {
		m.create(id)
	}
	return m
}

func (m *memStore) create(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[id]; !ok {
		m.sessions[id] = &memEvents{}
	}
}

func (m *memStore) delete(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, id)
}

func (m *memStore) setHooks(afterRead func(context.Context, string, int64), afterAppend func(string, []event.Event)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.afterRead, m.afterAppend = afterRead, afterAppend
}

func (m *memStore) lastSeq(id string) int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if me := m.sessions[id]; me != nil {
		return me.n
	}
	return 0
}

func (m *memStore) eventAt(id string, seq int64) event.Event {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.sessions[id].at(seq)
}

func (m *memStore) AppendEvents(ctx context.Context, sessionID string, events ...event.Event) ([]event.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.appends.Add(1)
	m.mu.Lock()
	if err := m.failAppend; err != nil {
		m.mu.Unlock()
		return nil, err
	}
	me, ok := m.sessions[sessionID]
	if !ok {
		m.mu.Unlock()
		return nil, record.ErrNotFound
	}
	now := time.Now()
	out := make([]event.Event, len(events))
	for i, e := range events {
		e.SessionID = sessionID
		e.Seq = me.n + 1
		if e.CreatedAt.IsZero() {
			e.CreatedAt = now
		}
		me.add(e)
		out[i] = e
	}
	hook := m.afterAppend
	m.mu.Unlock()
	if hook != nil {
		hook(sessionID, out)
	}
	return out, nil
}

func (m *memStore) ReadEvents(ctx context.Context, sessionID string, after int64, limit int) ([]event.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("limit %d", limit)
	}
	m.reads.Add(1)
	m.mu.RLock()
	me, ok := m.sessions[sessionID]
	hook := m.afterRead
	var out []event.Event
	if ok && after < me.n {
		after = max(after, 0)
		end := min(me.n, after+int64(limit))
		out = make([]event.Event, 0, end-after)
		for seq := after + 1; seq <= end; seq++ {
			out = append(out, me.at(seq))
		}
	}
	m.mu.RUnlock()
	if !ok {
		return nil, record.ErrNotFound
	}
	if hook != nil {
		hook(ctx, sessionID, after)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (m *memStore) setFailAppend(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failAppend = err
}

// LastSeq returns the session's last seq.
func (m *memStore) LastSeq(ctx context.Context, id string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.gets.Add(1)
	m.mu.RLock()
	defer m.mu.RUnlock()
	me, ok := m.sessions[id]
	if !ok {
		return 0, record.ErrNotFound
	}
	return me.n, nil
}

var _ Store = (*memStore)(nil)

// TestMemStore pins the fake to the store.Events contract the Log relies on.
func TestMemStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMemStore("s")
	if _, err := m.AppendEvents(ctx, "nope", ev("x", 0)); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("append to unknown session: %v, want ErrNotFound", err)
	}
	if _, err := m.ReadEvents(ctx, "nope", 0, 10); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("read of unknown session: %v, want ErrNotFound", err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 50 {
				if _, err := m.AppendEvents(ctx, "s", ev("x", i), ev("x", i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	all, err := m.ReadEvents(ctx, "s", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 400 {
		t.Fatalf("got %d events, want 400", len(all))
	}
	for i, e := range all {
		if e.Seq != int64(i+1) || e.SessionID != "s" || e.CreatedAt.IsZero() {
			t.Fatalf("event %d = %+v", i, e)
		}
	}
	page, _ := m.ReadEvents(ctx, "s", 395, 3)
	if len(page) != 3 || page[0].Seq != 396 {
		t.Fatalf("ReadEvents(395, 3) = %v", seqs(page))
	}
	if page, _ := m.ReadEvents(ctx, "s", 400, 3); len(page) != 0 {
		t.Fatalf("ReadEvents past the end = %v", seqs(page))
	}
}

// ev builds a test event whose payload names its producer and index, so
// tests can tell which Append produced a stored event.
func ev(producer string, i int) event.Event {
	data, _ := json.Marshal(map[string]any{"p": producer, "i": i})
	return event.Event{Type: "test", Data: data}
}

func seqs(evs []event.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

// fakeClock drives eviction deterministically.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
