package postgres

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// TestCommandsAcrossNodes: a command added on one node is pending (in id
// order) and announced to another node's listener once it is committed;
// of nodes racing to finish it exactly one does, and its result is
// announced; a session with a pending command or an open turn and no
// live lease is an orphan, and stops being one while a lease is live.
func TestCommandsAcrossNodes(t *testing.T) {
	t.Parallel()
	nodes := openNodes(t, 2)
	ctx := t.Context()
	for _, id := range []string{"s1", "s2"} {
		if _, err := nodes[0].CreateSession(ctx, record.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	notes, err := nodes[1].Notifications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[0].AddCommand(ctx, "nope", "message", json.RawMessage(`{}`)); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("command to an unknown session: %v", err)
	}
	var ids []int64
	for i := range 3 {
		id, err := nodes[i%2].AddCommand(ctx, "s1", "message", json.RawMessage(`{"text":"hi"}`))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	wait := func(kind string, seq int64) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case n := <-notes:
				if n.Kind == kind && n.ID == "s1" && n.Seq >= seq {
					return
				}
			case <-deadline:
				t.Fatalf("no %s notification up to %d", kind, seq)
			}
		}
	}
	wait(NotifyCommand, ids[2])
	pending, err := nodes[1].PendingCommands(ctx, "s1")
	if err != nil || len(pending) != 3 {
		t.Fatalf("pending: %v %v", pending, err)
	}
	for i, c := range pending {
		if c.ID != ids[i] || c.Kind != "message" || string(c.Data) != `{"text":"hi"}` || c.Done {
			t.Fatalf("pending[%d] = %+v", i, c)
		}
	}
	orphans, err := nodes[0].OrphanSessions(ctx, "session:", 10)
	if err != nil || len(orphans) != 1 || orphans[0] != "s1" {
		t.Fatalf("orphans %v %v, want [s1]", orphans, err)
	}
	l, ok, err := nodes[0].AcquireLease(ctx, "session:s1", "n0", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if orphans, err := nodes[1].OrphanSessions(ctx, "session:", 10); err != nil || len(orphans) != 0 {
		t.Fatalf("orphans with a live lease: %v %v", orphans, err)
	}

	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		won int
	)
	for i := range 8 {
		wg.Go(func() {
			ok, err := nodes[i%2].FinishCommand(ctx, ids[0], json.RawMessage(`{"seq":7}`))
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				won++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d finishes of one command, want 1", won)
	}
	wait(NotifyResult, ids[0])
	c, err := nodes[1].GetCommand(ctx, ids[0])
	if err != nil || !c.Done || string(c.Result) != `{"seq":7}` {
		t.Fatalf("finished command: %+v %v", c, err)
	}
	if pending, _ := nodes[0].PendingCommands(ctx, "s1"); len(pending) != 2 || pending[0].ID != ids[1] {
		t.Fatalf("pending after one finished: %+v", pending)
	}
	if _, err := nodes[0].GetCommand(ctx, 1<<40); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("unknown command: %v", err)
	}
	// The lease expires (released here): s1 is an orphan again.
	if _, err := nodes[0].ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	if orphans, _ := nodes[1].OrphanSessions(ctx, "session:", 10); len(orphans) != 1 {
		t.Fatalf("orphans after release: %v", orphans)
	}
	// Deleting the session deletes its commands.
	if err := nodes[0].DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if pending, err := nodes[0].PendingCommands(ctx, "s1"); err != nil || len(pending) != 0 {
		t.Fatalf("pending of a deleted session: %v %v", pending, err)
	}
	var _ store.Commands = nodes[0]
}

// TestFenceSessions: with FenceSessions, a node's appends to a session
// are refused while another node holds the session's live lease (a node
// that lost the lease without noticing writes nothing after the next
// holder began), and accepted when it holds the lease itself, or nobody
// does; an unfenced DB is not checked.
func TestFenceSessions(t *testing.T) {
	t.Parallel()
	nodes := openNodes(t, 3)
	ctx := t.Context()
	nodes[0].FenceSessions("session:", "n0")
	nodes[1].FenceSessions("session:", "n1")
	if _, err := nodes[0].CreateSession(ctx, record.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	appendOne := func(i int) error {
		_, err := nodes[i].AppendEvents(ctx, "s", event.Event{Type: "t", Data: json.RawMessage(`{}`)})
		return err
	}
	for _, i := range []int{0, 1} {
		if err := appendOne(i); err != nil {
			t.Fatalf("node %d, no lease: %v", i, err)
		}
	}
	l, ok, err := nodes[1].AcquireLease(ctx, "session:s", "n1", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := appendOne(0); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("node 0 while n1 holds the lease: %v", err)
	}
	// In a group with another session's append, the refusal is that
	// append's alone.
	if _, err := nodes[0].CreateSession(ctx, record.Session{ID: "other"}); err != nil {
		t.Fatal(err)
	}
	_, errs := nodes[0].AppendEventBatches(ctx, []store.EventBatch{
		{SessionID: "s", Events: []event.Event{{Type: "t"}}},
		{SessionID: "other", Events: []event.Event{{Type: "t"}}},
	})
	if !errors.Is(errs[0], record.ErrNotFound) || errs[1] != nil {
		t.Fatalf("grouped appends: %v", errs)
	}
	if err := appendOne(1); err != nil {
		t.Fatalf("node 1, holding the lease: %v", err)
	}
	if err := appendOne(2); err != nil {
		t.Fatalf("unfenced node 2: %v", err)
	}
	if _, err := nodes[1].ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := appendOne(0); err != nil {
		t.Fatalf("node 0 after the release: %v", err)
	}
	got, err := nodes[2].ReadEvents(ctx, "s", 0, 0)
	if err != nil || len(got) != 5 || got[4].Seq != 5 {
		t.Fatalf("events: %d %v", len(got), err)
	}
}

// TestPruneCommands: done commands older than the cut are deleted; a
// pending one stays whatever its age, and so does a recent done one.
func TestPruneCommands(t *testing.T) {
	t.Parallel()
	db := openNodes(t, 1)[0]
	ctx := t.Context()
	if _, err := db.CreateSession(ctx, record.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for range 3 {
		id, err := db.AddCommand(ctx, "s", "message", json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids[:2] {
		if _, err := db.FinishCommand(ctx, id, json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := db.PruneCommands(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("pruning before the commands were done: %d, %v", n, err)
	}
	if n, err := db.PruneCommands(ctx, time.Now().Add(time.Second)); err != nil || n != 2 {
		t.Fatalf("pruning the done ones: %d, %v", n, err)
	}
	for i, id := range ids {
		_, err := db.GetCommand(ctx, id)
		if gone := errors.Is(err, record.ErrNotFound); gone != (i < 2) {
			t.Fatalf("command %d (done: %v): %v", i, i < 2, err)
		}
	}
}
