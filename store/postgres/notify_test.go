package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/postgres/pgtest"
)

func TestParseNotification(t *testing.T) {
	for _, tc := range []struct {
		payload string
		want    store.Notification
		ok      bool
	}{
		{"session 12 abc", store.Notification{Kind: "session", ID: "abc", Seq: 12}, true},
		{"run 1 a b  c", store.Notification{Kind: "run", ID: "a b  c", Seq: 1}, true},
		{"session 3 ", store.Notification{Kind: "session", ID: "", Seq: 3}, true},
		{"task 3 x", store.Notification{}, false},
		{"session x y", store.Notification{}, false},
		{"session 3", store.Notification{}, false},
		{"", store.Notification{}, false},
	} {
		got, ok := parseNotification(tc.payload)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseNotification(%q) = %+v, %v; want %+v, %v", tc.payload, got, ok, tc.want, tc.ok)
		}
	}
}

// TestNotificationsAcrossNodes: node b's appends reach node a's listener
// once committed, with the seq they reached, and the events are then
// readable through node a; a failed append announces nothing; when a's
// listening connection is killed, a gets a resync and later appends again.
func TestNotificationsAcrossNodes(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	var nodes [2]*DB
	for i := range nodes {
		db, err := Open(t.Context(), dsn, Options{Notify: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		nodes[i] = db
	}
	a, b := nodes[0], nodes[1]
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := a.Notifications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := func(what string) store.Notification {
		t.Helper()
		select {
		case n, ok := <-ch:
			if !ok {
				t.Fatalf("%s: channel closed", what)
			}
			return n
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no notification within 10s", what)
		}
		return store.Notification{}
	}
	// waitFor reads notifications until want's log reaches want.Seq,
	// checking each is readable through a when it arrives.
	waitFor := func(want store.Notification) {
		t.Helper()
		for {
			n := next("waiting for " + want.ID)
			if n.Resync {
				continue
			}
			var evs []event.Event
			var err error
			if n.Kind == "run" {
				evs, err = a.RunEvents().ReadEvents(t.Context(), n.ID, 0, 0)
			} else {
				evs, err = a.ReadEvents(t.Context(), n.ID, 0, 0)
			}
			if err != nil {
				t.Fatalf("read %+v: %v", n, err)
			}
			if int64(len(evs)) < n.Seq {
				t.Fatalf("notified %+v, but node a reads only %d events", n, len(evs))
			}
			if n.Kind == want.Kind && n.ID == want.ID && n.Seq >= want.Seq {
				if n.Seq != want.Seq {
					t.Fatalf("notified %+v, want %+v", n, want)
				}
				return
			}
		}
	}
	if _, err := b.CreateSession(ctx, record.Session{ID: "s one"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateRun(ctx, record.Run{ID: "r"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AppendEvents(ctx, "s one", event.Event{Type: "x"}, event.Event{Type: "y"}); err != nil {
		t.Fatal(err)
	}
	waitFor(store.Notification{Kind: "session", ID: "s one", Seq: 2})
	if _, err := b.RunEvents().AppendEvents(ctx, "r", event.Event{Type: "x"}); err != nil {
		t.Fatal(err)
	}
	waitFor(store.Notification{Kind: "run", ID: "r", Seq: 1})
	// An append to a missing session, batched with a good one: only the
	// good one is announced.
	_, errs := b.AppendEventBatches(ctx, []store.EventBatch{{SessionID: "missing", Events: []event.Event{{Type: "x"}}}, {SessionID: "s one", Events: []event.Event{{Type: "z"}}}})
	if errs[0] == nil || errs[1] != nil {
		t.Fatalf("batch errors %v", errs)
	}
	if n := next("after the batch"); n.ID != "s one" || n.Seq != 3 {
		t.Fatalf("after the batch: %+v, want s one at 3", n)
	}

	// Cut node a's listening connection: a resync, then notifications again.
	if _, err := b.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%'`); err != nil {
		t.Fatal(err)
	}
	if n := next("after the kill"); !n.Resync {
		t.Fatalf("after the listener was killed: %+v, want a resync", n)
	}
	if _, err := b.AppendEvents(ctx, "s one", event.Event{Type: "w"}); err != nil {
		t.Fatal(err)
	}
	waitFor(store.Notification{Kind: "session", ID: "s one", Seq: 4})

	cancel()
	for range ch {
	}
}
