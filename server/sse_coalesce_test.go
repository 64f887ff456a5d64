package server

import (
	"context"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/eventlog"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
)

// countingWriter records what an SSE stream writes, and in how many
// writes, safely for a test goroutine reading while the stream writes.
type countingWriter struct {
	*httptest.ResponseRecorder
	mu     sync.Mutex
	writes int
	body   []byte
}

func (w *countingWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	w.body = append(w.body, b...)
	return len(b), nil
}

// ids returns the frames' ids in order and the number of writes so far.
func (w *countingWriter) ids() ([]int64, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []int64
	for _, m := range regexp.MustCompile(`(?m)^id: (\d+)$`).FindAllSubmatch(w.body, -1) {
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		ids = append(ids, n)
	}
	return ids, w.writes
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for q := from; q <= to; q++ {
		out = append(out, q)
	}
	return out
}

// TestSSECoalescing: events a stream's reader already holds go out in one
// write, a live event goes out at once (it never waits for a next one),
// and frames that wait for a next event the handler never asks for go out
// when the stream closes.
func TestSSECoalescing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := sqlite.Open(ctx, ":memory:", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lg := eventlog.New(db, eventlog.Options{})
	defer func() {
		if err := lg.FlushAll(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	// publish appends n events and waits until they are stored: readers
	// see only stored events (durable before visible), so a backlog is
	// one once it is in the store.
	publish := func(id string, n int) {
		t.Helper()
		for range n {
			if _, err := lg.Publish(ctx, id, store.Event{Type: "text_delta", Data: []byte(`{"text":"x"}`)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := lg.Flush(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	s := &Server{closing: context.Background(), keepalive: time.Hour}
	open := func() (*sseStream, *countingWriter) {
		w := &countingWriter{ResponseRecorder: httptest.NewRecorder()}
		return s.startSSE(w, httptest.NewRequest("GET", "/", nil)), w
	}

	t.Run("backlog in one write, live at once", func(t *testing.T) {
		if _, err := db.CreateSession(ctx, store.Session{ID: "a"}); err != nil {
			t.Fatal(err)
		}
		publish("a", 20)
		rd := lg.Subscribe("a", 0)
		defer rd.Close()
		st, w := open()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				ev, err := s.next(st, "a", rd)
				if err != nil || st.event(ev) != nil {
					return
				}
			}
		}()
		waitFor := func(last int64, writes int) {
			t.Helper()
			deadline := time.Now().Add(5 * time.Second)
			for {
				ids, n := w.ids()
				if len(ids) > 0 && ids[len(ids)-1] == last {
					if !slices.Equal(ids, seqRange(1, last)) || n != writes {
						t.Fatalf("frames %v in %d writes, want 1..%d in %d", ids, n, last, writes)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("frames %v after 5s, want up to %d", ids, last)
				}
				time.Sleep(time.Millisecond)
			}
		}
		waitFor(20, 1)
		publish("a", 1)
		waitFor(21, 2)
		st.close()
		<-done
	})

	t.Run("waiting frames go out at close", func(t *testing.T) {
		if _, err := db.CreateSession(ctx, store.Session{ID: "b"}); err != nil {
			t.Fatal(err)
		}
		publish("b", 3)
		rd := lg.Subscribe("b", 0)
		defer rd.Close()
		st, w := open()
		for range 2 {
			ev, err := s.next(st, "b", rd)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.event(ev); err != nil {
				t.Fatal(err)
			}
		}
		if ids, n := w.ids(); n != 0 {
			t.Fatalf("frames %v written before the stream closed, want them waiting for event 3", ids)
		}
		st.close()
		if ids, n := w.ids(); !slices.Equal(ids, []int64{1, 2}) || n != 1 {
			t.Fatalf("after close: frames %v in %d writes, want [1 2] in 1", ids, n)
		}
	})
}
