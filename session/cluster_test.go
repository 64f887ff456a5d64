//go:build !nopostgres

package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/internal/lease"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/store/postgres"
	"github.com/weft-run/weft/store/postgres/pgtest"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/mcp"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// clusterNode is one node of a cluster on the database dsn: its own
// store connection, lease keeper (1s TTL) and scripted model.
func clusterNode(t *testing.T, dsn, name string, p *llmtest.Scripted) (*session.Service, *postgres.DB) {
	t.Helper()
	db, err := postgres.Open(t.Context(), dsn, postgres.Options{Notify: true})
	if err != nil {
		t.Fatal(err)
	}
	db.FenceSessions(session.LeasePrefix, name)
	note := tool.Func("Note", "writes a note", tool.Meta{Effect: tool.EffectWrite}, func(ctx context.Context, in writeIn, _ *tool.Call) (tool.Result, error) {
		return tool.Text("noted " + in.Text), nil
	})
	block := tool.Func("Block", "blocks until cancelled", tool.Meta{ReadOnly: true}, func(ctx context.Context, in writeIn, _ *tool.Call) (tool.Result, error) {
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	})
	reg, _ := tool.NewRegistry(note, block)
	rt, err := session.New(session.Config{Store: db, Models: models{p}, DefaultModel: "scripted:m", Tools: reg,
		Policy: &policy.Policy{}, PermissionTimeout: 20 * time.Second,
		Leases: lease.NewKeeper(db, name, time.Second, nil), Commands: db, Notifier: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := rt.Shutdown(ctx); err != nil {
			t.Errorf("%s: shutdown: %v", name, err)
		}
		db.Close()
	})
	return rt, db
}

// readUntil reads rd until stop says so, failing after 20s.
func readUntil(t *testing.T, rd interface {
	Next(context.Context) (event.Event, error)
}, stop func(event.Event) bool) []event.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var evs []event.Event
	for {
		ev, err := rd.Next(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", types(evs), err)
		}
		evs = append(evs, ev)
		if stop(ev) {
			return evs
		}
	}
}

func isDone(e event.Event) bool { return e.Type == "done" }

// TestClusterSessions: two nodes on one database. A turn runs on the
// node the message reached (a, the session being free); the other node's
// reader follows it live and answers its permission request at b, which
// reaches a as a command (once: a second answer is refused); cancelling
// at b stops a turn running on a; a message sent to b while a runs a
// turn is queued behind it (and dropped by the cancel, as on one node);
// once the session is idle, the next message runs at b with the
// conversation a left, and a's reader follows it.
func TestClusterSessions(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	dsn := pgtest.Shared(t).NewDatabase(t)
	// One model for both nodes: which node runs a turn depends on who
	// holds the lease when the message arrives, not on the test.
	p := llmtest.NewScripted("scripted",
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("c1", "Note", `{"text":"x"}`)}},
		llmtest.Text("noted it"),
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("c2", "Block", `{"text":"wait"}`)}},
		llmtest.Text("hello from b"),
	)
	a, _ := clusterNode(t, dsn, "a", p)
	b, _ := clusterNode(t, dsn, "b", p)
	ctx := t.Context()
	if _, err := a.CreateSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}

	rd := b.Subscribe("s", 0)
	defer rd.Close()
	if _, err := a.Send(ctx, "s", "write it", session.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	var reqID string
	evs := readUntil(t, rd, func(e event.Event) bool {
		if e.Type == "permission_request" {
			reqID = jsonField(t, e.Data, "id")
			if err := b.Answer("s", reqID, true, ""); err != nil {
				t.Fatalf("answer at b: %v", err)
			}
		}
		return isDone(e)
	})
	if reqID == "" || !strings.Contains(strings.Join(types(evs), " "), "tool_result") || !strings.Contains(string(evs[len(evs)-1].Data), `"end_turn"`) {
		t.Fatalf("the turn as b saw it: %v %s", types(evs), evs[len(evs)-1].Data)
	}
	if err := b.Answer("s", reqID, true, ""); !errors.Is(err, session.ErrAnswered) && !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("second answer at b: %v", err)
	}

	// A blocking turn on a, a message queued behind it from b, a cancel
	// from b.
	if _, err := a.Send(ctx, "s", "block", session.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	readUntil(t, rd, func(e event.Event) bool { return e.Type == "tool_use" })
	seq, err := b.Send(ctx, "s", "queued from b", session.TurnOptions{})
	if err != nil || seq == 0 {
		t.Fatalf("send at b while a runs: %d %v", seq, err)
	}
	// Budget and elicitation answers reach a too, and come back with a's
	// verdict: no such request is open.
	if err := b.AnswerBudget("s", "nope", agent.BudgetDecision{Allow: true}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("budget answer at b: %v", err)
	}
	if err := b.AnswerElicitation("s", "nope", mcp.ElicitResponse{Action: mcp.ActionDecline}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("elicitation answer at b: %v", err)
	}
	if !b.Cancel("s") {
		t.Fatal("cancel at b: not running")
	}
	evs = readUntil(t, rd, isDone)
	if !strings.Contains(string(evs[len(evs)-1].Data), `"cancelled"`) {
		t.Fatalf("the cancelled turn: %v %s", types(evs), evs[len(evs)-1].Data)
	}
	// Cancel drops what was queued, as on one node.
	dropped := ""
	for _, e := range evs {
		if e.Type == event.MessageDropped {
			dropped = jsonField(t, e.Data, "message_seq")
		}
	}
	if dropped != itoa(seq) {
		t.Fatalf("dropped %q, want %d: %v", dropped, seq, types(evs))
	}

	// The session is idle: a hands it back, and b runs the next message.
	waitFor(t, "a to hand the session back", func() bool { return a.Active() == 0 })
	ra := a.Subscribe("s", 0)
	defer ra.Close()
	if _, err := b.Send(ctx, "s", "now b", session.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	evs = readUntil(t, rd, isDone)
	if !strings.Contains(string(evs[len(evs)-1].Data), `"end_turn"`) {
		t.Fatalf("b's turn: %v", types(evs))
	}
	all := readUntil(t, ra, func(e event.Event) bool { return e.Seq == evs[len(evs)-1].Seq })
	for i, e := range all {
		if e.Seq != int64(i+1) {
			t.Fatalf("a's reader: seq %d at %d", e.Seq, i)
		}
	}
	msgs, err := b.Messages(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(texts(msgs), "|")
	for _, want := range []string{"write it", "noted it", "block", "now b", "hello from b"} {
		if !strings.Contains(got, want) {
			t.Errorf("conversation lacks %q: %s", want, got)
		}
	}
}

// TestClusterLeaseLost: the node running a turn loses the session's
// lease while a tool of the turn runs (its lease expires: a pause, a
// partition): the session is taken over (by b, or by a once it has
// noticed and dropped its state), the turn ended as interrupted and the
// message queued behind it run; the turn that lost the lease stops and
// writes nothing more (the store refuses its appends, and it stops
// trying).
func TestClusterLeaseLost(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	dsn := pgtest.Shared(t).NewDatabase(t)
	// Either node may take the session over, a too once it has noticed
	// the loss: one model for both.
	p := llmtest.NewScripted("scripted", llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("c1", "Block", `{"text":"alpha"}`)}},
		llmtest.Text("beta"))
	a, _ := clusterNode(t, dsn, "a", p)
	b, bdb := clusterNode(t, dsn, "b", p)
	ctx := t.Context()
	if _, err := a.CreateSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	rd := b.Subscribe("s", 0)
	defer rd.Close()
	if _, err := a.Send(ctx, "s", "block please", session.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	readUntil(t, rd, func(e event.Event) bool { return e.Type == "tool_use" })
	queued, err := b.Send(ctx, "s", "queued", session.TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	readUntil(t, rd, func(e event.Event) bool { return e.Seq == queued })
	// a's lease expires under it.
	if _, err := bdb.Pool().Exec(ctx, `UPDATE leases SET expires_at = clock_timestamp() - interval '1 second' WHERE name = 'session:s'`); err != nil {
		t.Fatal(err)
	}
	evs := readUntil(t, rd, isDone)
	last := evs[len(evs)-1]
	if len(evs) < 2 || evs[len(evs)-2].Type != "error" || !strings.Contains(string(last.Data), `"interrupted"`) {
		t.Fatalf("the interrupted turn: %v %s", types(evs), last.Data)
	}
	after := readUntil(t, rd, isDone)
	if after[0].Type != event.MessageConsumed || jsonField(t, after[0].Data, "message_seq") != itoa(queued) ||
		!strings.Contains(string(after[len(after)-1].Data), `"end_turn"`) {
		t.Fatalf("the queued message on b: %v", types(after))
	}
	// The cut-off turn's own ending (its cancelled tool's result, its
	// done "cancelled") was never written.
	for _, e := range append(evs, after...) {
		if e.Type == "tool_result" || strings.Contains(string(e.Data), `"cancelled"`) {
			t.Fatalf("a wrote after losing the lease: %s %s", e.Type, e.Data)
		}
	}
	// Nothing more arrives from a: its turn was cut off.
	time.Sleep(1500 * time.Millisecond)
	s, err := b.GetSession(ctx, "s")
	if err != nil || s.LastSeq != after[len(after)-1].Seq {
		t.Fatalf("last seq %d after the takeover's done at %d: %v", s.LastSeq, after[len(after)-1].Seq, err)
	}
	msgs, _ := b.Messages(ctx, "s")
	got := strings.Join(texts(msgs), "|")
	if !strings.Contains(got, "block please") || !strings.Contains(got, session.InterruptedText) || !strings.Contains(got, "user:queued|assistant:beta") {
		t.Fatalf("conversation: %s", got)
	}
}

func jsonField(t *testing.T, data []byte, key string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	switch v := m[key].(type) {
	case string:
		return v
	case float64:
		return strconv.FormatInt(int64(v), 10)
	}
	return ""
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: timed out", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterCommandsExactlyOnce: what dead nodes leave behind is taken
// over by the node that starts (its first sweep), each message run once.
// Session "appended": the owner died after appending a command's
// user_message and before marking the command done; the new owner finds
// the command in the log, marks it done with that seq and runs the
// message, without a second user_message. Session "stored": the node
// that accepted a message died right after storing it, before any node
// took the session; the sweep takes it and runs it.
func TestClusterCommandsExactlyOnce(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	dsn := pgtest.Shared(t).NewDatabase(t)
	ctx := t.Context()
	db, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cmds := map[string]int64{}
	for _, id := range []string{"appended", "stored"} {
		if _, err := db.CreateSession(ctx, record.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
		if cmds[id], err = db.AddCommand(ctx, id, "message", json.RawMessage(`{"text":"hi `+id+`","options":{}}`)); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := json.Marshal(map[string]any{"text": "hi appended", "command": cmds["appended"]})
	if _, err := db.AppendEvents(ctx, "appended", event.Event{Type: event.UserMessage, Data: data}); err != nil {
		t.Fatal(err)
	}

	p := llmtest.NewScripted("scripted", llmtest.Text("one"), llmtest.Text("two"))
	a, _ := clusterNode(t, dsn, "a", p)
	for _, id := range []string{"appended", "stored"} {
		rd := a.Subscribe(id, 0)
		evs := readUntil(t, rd, isDone)
		rd.Close()
		n := 0
		for _, e := range evs {
			if e.Type == event.UserMessage {
				n++
			}
		}
		if n != 1 || evs[0].Type != event.UserMessage || !strings.Contains(string(evs[len(evs)-1].Data), `"end_turn"`) {
			t.Fatalf("%s: %v", id, types(evs))
		}
		waitFor(t, id+"'s command done", func() bool {
			c, err := db.GetCommand(ctx, cmds[id])
			return err == nil && c.Done && string(c.Result) == `{"seq":1}`
		})
		msgs, _ := a.Messages(ctx, id)
		if got := strings.Join(texts(msgs), "|"); !strings.HasPrefix(got, "user:hi "+id+"|assistant:") {
			t.Fatalf("%s: conversation %s", id, got)
		}
	}
}
