package eventlog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-run/weft/eventlog"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
)

var errCrashed = errors.New("the process is gone")

// crashable is a SQLite store that can "crash": from then on nothing more
// reaches the file (appends fail without touching it), as when the process
// is killed. An append already committing finishes or not, as it would.
type crashable struct {
	*sqlite.DB
	crashed atomic.Bool
}

func (c *crashable) AppendEvents(ctx context.Context, id string, evs ...store.Event) ([]store.Event, error) {
	if c.crashed.Load() {
		return nil, errCrashed
	}
	return c.DB.AppendEvents(ctx, id, evs...)
}

func (c *crashable) AppendEventBatches(ctx context.Context, b []store.EventBatch) ([][]store.Event, []error) {
	if c.crashed.Load() {
		errs := make([]error, len(b))
		for i := range errs {
			errs[i] = errCrashed
		}
		return make([][]store.Event, len(b)), errs
	}
	return c.DB.AppendEventBatches(ctx, b)
}

// TestCrashKeepsWhatReadersSaw: a Log is abandoned mid-stream over a real
// SQLite file, with events published and not yet stored; a new Log on the
// same file then holds every event any reader received, with the same seq
// and payload, and numbers new events after them, so no seq a reader saw
// is ever issued again. Before issue 12 readers were served from memory
// ahead of the store, so they saw events the crash took back and whose
// seqs the new Log reissued.
func TestCrashKeepsWhatReadersSaw(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	path := filepath.Join(t.TempDir(), "weft.db")
	ctx := t.Context()
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const sessions, readersPer = 6, 2
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = fmt.Sprintf("s%d", i)
		if _, err := db.CreateSession(ctx, store.Session{ID: ids[i]}); err != nil {
			t.Fatal(err)
		}
	}
	c := &crashable{DB: db}
	l := eventlog.New(c, eventlog.Options{Window: 32, Logger: quiet})

	stop := make(chan struct{})
	var wg sync.WaitGroup
	published := make([]atomic.Int64, sessions)
	for i, id := range ids {
		wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				data, _ := json.Marshal(map[string]any{"session": id, "k": k})
				out, err := l.Publish(ctx, id, store.Event{Type: "text_delta", Data: data})
				if err != nil {
					return // the crash failed the session
				}
				published[i].Store(out[0].Seq)
				if k%50 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	type seen struct {
		id string
		ev store.Event
	}
	var (
		mu  sync.Mutex
		got []seen
	)
	readCtx, stopReading := context.WithCancel(ctx)
	var readers sync.WaitGroup
	for _, id := range ids {
		for range readersPer {
			readers.Go(func() {
				r := l.Subscribe(id, 0)
				defer r.Close()
				for {
					e, err := r.Next(readCtx)
					if err != nil {
						return
					}
					mu.Lock()
					got = append(got, seen{id, e})
					mu.Unlock()
				}
			})
		}
	}
	// Run until readers have been handed a fair number of events (a
	// loaded machine under -race commits slowly), then crash mid-stream.
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.crashed.Store(true) // kill -9: nothing more reaches the file
	mu.Lock()
	atCrash := len(got)
	mu.Unlock()
	time.Sleep(50 * time.Millisecond) // readers may still be handed what was committed
	stopReading()
	readers.Wait()
	close(stop)
	wg.Wait()
	if atCrash == 0 {
		t.Fatal("no reader received anything before the crash")
	}
	// The abandoned Log is never flushed; its store handle goes away so
	// that the file can be opened again (one writer per database).
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db2, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	maxSeen := map[string]int64{}
	for _, g := range got {
		stored, err := db2.ReadEvents(ctx, g.id, g.ev.Seq-1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) != 1 || stored[0].Seq != g.ev.Seq || stored[0].Type != g.ev.Type || string(stored[0].Data) != string(g.ev.Data) {
			t.Fatalf("%s: a reader received seq %d %s, the store after the crash has %+v", g.id, g.ev.Seq, g.ev.Data, stored)
		}
		maxSeen[g.id] = max(maxSeen[g.id], g.ev.Seq)
	}
	lost := 0
	l2 := eventlog.New(db2, eventlog.Options{Logger: quiet})
	for i, id := range ids {
		sess, err := db2.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		lost += int(published[i].Load() - sess.LastSeq)
		out, err := l2.Append(ctx, id, store.Event{Type: "after_restart", Data: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if out[0].Seq != sess.LastSeq+1 || out[0].Seq <= maxSeen[id] {
			t.Fatalf("%s: new event got seq %d; the store had %d, readers saw up to %d", id, out[0].Seq, sess.LastSeq, maxSeen[id])
		}
	}
	t.Logf("%d events received by readers, all stored; %d published events the crash took back, none of them seen", len(got), lost)
}
