package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool"
)

var errGone = errors.New("the process is gone")

// crashStore is a SQLite store that can "crash": from then on no write
// reaches the file, as when the process is killed (reads go on, for the
// test's own checks).
type crashStore struct {
	*sqlite.DB
	crashed atomic.Bool
	// crashAfterSave crashes right after a conversation write succeeds: a
	// turn's save lands, its done does not.
	crashAfterSave atomic.Bool
}

func (c *crashStore) down(bool) bool { return c.crashed.Load() }

func (c *crashStore) AppendEvents(ctx context.Context, id string, evs ...store.Event) ([]store.Event, error) {
	if c.down(true) {
		return nil, errGone
	}
	return c.DB.AppendEvents(ctx, id, evs...)
}

func (c *crashStore) AppendEventBatches(ctx context.Context, b []store.EventBatch) ([][]store.Event, []error) {
	if c.down(true) {
		errs := make([]error, len(b))
		for i := range errs {
			errs[i] = errGone
		}
		return make([][]store.Event, len(b)), errs
	}
	return c.DB.AppendEventBatches(ctx, b)
}

func (c *crashStore) AppendMessages(ctx context.Context, id string, msgs ...llm.Message) error {
	if c.down(false) {
		return errGone
	}
	err := c.DB.AppendMessages(ctx, id, msgs...)
	if err == nil && c.crashAfterSave.Load() {
		c.crashed.Store(true)
	}
	return err
}

func (c *crashStore) ReplaceMessages(ctx context.Context, id string, msgs []llm.Message) error {
	if c.down(false) {
		return errGone
	}
	return c.DB.ReplaceMessages(ctx, id, msgs)
}

// next reads from r until an event of type want.
func next(t *testing.T, ctx context.Context, r interface {
	Next(context.Context) (store.Event, error)
}, want string) store.Event {
	t.Helper()
	for {
		ev, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", want, err)
		}
		if ev.Type == want {
			return ev
		}
	}
}

func texts(msgs []llm.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Role) + ":" + m.Text()
	}
	return out
}

// TestCrashEndsTheTurnAndKeepsTheMessages: a crash (every write stops, the
// runtime is abandoned unshut) in the middle of a turn, with a message
// queued behind it. A runtime started on the same file ends the turn with
// error (stop_reason "interrupted") and done, so a stream following it
// ends; the turn's message is in the conversation, closed by an
// "[interrupted]" answer (once, even when the crash came after the turn
// had saved its conversation); the queued message gets message_dropped;
// and the session goes on. Before issue 12 a restarted server left such
// a turn without an end and its message out of the conversation.
func TestCrashEndsTheTurnAndKeepsTheMessages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		afterSave bool
		want      []string // the conversation after the restart
	}{
		{"mid-turn", false, []string{"user:talk for a while", "assistant:" + runtime.InterruptedText}},
		{"after the turn saved", true, []string{"user:talk for a while", "assistant:word word word "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "w.db")
			db, err := sqlite.Open(ctx, path, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			cs := &crashStore{DB: db}
			script := llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("word ", "word ", "word ")}, Delay: 30 * time.Millisecond}
			if !tc.afterSave {
				script = llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(strings.Split(strings.Repeat("word ", 200), " ")...)}, Delay: 10 * time.Millisecond}
			}
			p := llmtest.NewScripted("scripted", script)
			rt, err := runtime.New(runtime.Config{Store: cs, Models: models{p}, DefaultModel: "scripted:m"})
			if err != nil {
				t.Fatal(err)
			}
			s, _ := rt.CreateSession(ctx, "s")
			first, err := rt.Send(ctx, s.ID, "talk for a while", runtime.TurnOptions{})
			if err != nil {
				t.Fatal(err)
			}
			queued, err := rt.Send(ctx, s.ID, "and then this", runtime.TurnOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r := rt.Subscribe(s.ID, first-1)
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			var seen []store.Event
			for {
				ev, err := r.Next(rctx)
				if err != nil {
					t.Fatal(err)
				}
				seen = append(seen, ev)
				if ev.Type == "text_delta" {
					break
				}
			}
			if tc.afterSave {
				cs.crashAfterSave.Store(true)
				// The turn saves its conversation, then the process dies:
				// done is never stored.
				deadline := time.Now().Add(10 * time.Second)
				for !cs.crashed.Load() && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
			} else {
				cs.crashed.Store(true)
			}
			r.Close()
			time.Sleep(200 * time.Millisecond) // let the abandoned runtime fail its writes
			if tc.afterSave && len(p.Requests()) != 1 {
				// The queued message's turn could not record its start:
				// it must not run (its tools would act unseen).
				t.Fatalf("the model got %d requests after the crash, want only the first turn's", len(p.Requests()))
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}

			db2, err := sqlite.Open(ctx, path, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db2.Close()
			p2 := llmtest.NewScripted("scripted", llmtest.Text("fresh answer"))
			rt2, err := runtime.New(runtime.Config{Store: db2, Models: models{p2}, DefaultModel: "scripted:m"})
			if err != nil {
				t.Fatal(err)
			}
			defer rt2.Shutdown(ctx)
			// Every event a reader saw before the crash is there, same seq
			// and payload.
			for _, ev := range seen {
				stored, err := db2.ReadEvents(ctx, s.ID, ev.Seq-1, 1)
				if err != nil || len(stored) != 1 || stored[0].Type != ev.Type || string(stored[0].Data) != string(ev.Data) {
					t.Fatalf("seen seq %d %s %s; stored %+v, %v", ev.Seq, ev.Type, ev.Data, stored, err)
				}
			}
			// The cut-off turn's stream ends: error "interrupted", then done.
			r2 := rt2.Subscribe(s.ID, seen[len(seen)-1].Seq)
			defer r2.Close()
			errEv := next(t, rctx, r2, "error")
			done := next(t, rctx, r2, "done")
			if !strings.Contains(string(errEv.Data), `"stop_reason":"interrupted"`) || !strings.Contains(string(done.Data), `"stop_reason":"interrupted"`) || done.Seq <= errEv.Seq {
				t.Fatalf("the cut-off turn ended with %s %s / %s %s", errEv.Type, errEv.Data, done.Type, done.Data)
			}
			var m runtime.MessageData
			dropped := next(t, rctx, r2, "message_dropped")
			if err := json.Unmarshal(dropped.Data, &m); err != nil || m.MessageSeq != queued || m.Reason != "interrupted" {
				t.Fatalf("message_dropped %s, want message_seq %d reason interrupted", dropped.Data, queued)
			}
			msgs, err := rt2.Messages(ctx, s.ID)
			if err != nil || strings.Join(texts(msgs), "|") != strings.Join(tc.want, "|") {
				t.Fatalf("conversation after the restart = %q, %v; want %q", texts(msgs), err, tc.want)
			}
			if open, err := db2.ListOpenTurns(ctx); err != nil || len(open) != 0 {
				t.Fatalf("open turns after recovery: %+v, %v", open, err)
			}
			// The session goes on, after every seq anyone saw.
			seq, err := rt2.Send(ctx, s.ID, "are you there?", runtime.TurnOptions{})
			if err != nil || seq <= done.Seq {
				t.Fatalf("Send after the restart = %d, %v", seq, err)
			}
			readTurn(t, rt2, s.ID, seq-1, nil)
			req := p2.Requests()[0]
			want := append(tc.want, "user:are you there?")
			if strings.Join(texts(req.Messages), "|") != strings.Join(want, "|") {
				t.Fatalf("the model saw %q, want %q", texts(req.Messages), want)
			}
		})
	}
}

// TestDeletedSessionTurnWritesNothing: a session deleted while its turn is
// in a tool that ignores cancellation for a while, then created again with
// the same id; when the old turn winds down, none of its events and none
// of its conversation reach the new session. Before issue 12 the old
// turn's tail (tool result, done, its conversation) landed in the new one.
func TestDeletedSessionTurnWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "w.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := tool.Func("Hold", "holds on, whatever happens", tool.Meta{ReadOnly: true}, func(ctx context.Context, in writeIn, _ *tool.Call) (tool.Result, error) {
		once.Do(func() { close(entered) })
		<-release // deaf to cancellation, as a stubborn tool may be
		return tool.Text("held " + in.Text), nil
	})
	reg, _ := tool.NewRegistry(hold)
	p := llmtest.NewScripted("scripted",
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("c1", "Hold", `{"text":"x"}`)}},
		llmtest.Text("the old turn's answer"),
	)
	rt, err := runtime.New(runtime.Config{Store: db, Models: models{p}, DefaultModel: "scripted:m", Tools: reg,
		Policy: &policy.Policy{Mode: permission.ModeBypass}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.CreateSession(ctx, "same"); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Send(ctx, "same", "hold on", runtime.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	<-entered
	if err := rt.DeleteSession(ctx, "same"); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.CreateSession(ctx, "same"); err != nil {
		t.Fatal(err)
	}
	close(release)
	// Shutdown waits for the old turn to end.
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := db.ReadEvents(ctx, "same", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := db.LoadMessages(ctx, "same")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 0 || len(msgs) != 0 {
		t.Fatalf("the new session got the old turn's %v and %q", types(evs), texts(msgs))
	}
}

// rejecting refuses (as a provider refuses an image it cannot read, 400)
// every request whose conversation contains "POISON", and answers the
// others.
type rejecting struct{ calls atomic.Int32 }

func (*rejecting) Name() string { return "rejecting" }

func (p *rejecting) Stream(ctx context.Context, req *llm.Request) iter.Seq[llm.Event] {
	return func(yield func(llm.Event) bool) {
		p.calls.Add(1)
		f := llm.NewFramer(yield)
		for _, m := range req.Messages {
			if strings.Contains(m.Text(), "POISON") {
				f.Fail("rejecting", &llm.Error{Provider: "rejecting", Category: llm.CategoryAuth, StatusCode: 400, Message: "the request cannot be processed"})
				return
			}
		}
		i, _ := f.Start(llm.Block{Type: llm.BlockText})
		f.Delta(i, fmt.Sprintf("answer %d", p.calls.Load()))
		f.Stop(i)
		f.Finish(llm.Outcome{Status: llm.StatusCompleted, StopReason: llm.StopEndTurn})
	}
}

type one struct{ p llm.Provider }

func (o one) Resolve(string) (llm.Provider, llm.ModelInfo, error) {
	return o.p, llm.ModelInfo{ID: "m", Provider: "p", MaxOutputTokens: 1000}, nil
}

// TestRewind: POST /rewind's runtime side. A message the provider refuses
// stays in the conversation (closed by "[interrupted]"), so every later
// turn fails too; rewinding to the seq before it takes it out and the
// session works again. Rewinds by seq and by message count, the log stays
// append-only (session_rewound, seqs go on), a turn that runs makes it
// ErrBusy, and impossible positions are invalid.
func TestRewind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "w.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p := &rejecting{}
	rt, err := runtime.New(runtime.Config{Store: db, Models: one{p}, DefaultModel: "p:m"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Shutdown(ctx)
	s, _ := rt.CreateSession(ctx, "")
	turn := func(prompt, wantStop string) int64 {
		t.Helper()
		seq, err := rt.Send(ctx, s.ID, prompt, runtime.TurnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		evs := readTurn(t, rt, s.ID, seq-1, nil)
		if d := string(evs[len(evs)-1].Data); !strings.Contains(d, `"stop_reason":"`+wantStop+`"`) {
			t.Fatalf("%q ended with %s, want %s", prompt, d, wantStop)
		}
		return seq
	}
	conv := func() string {
		t.Helper()
		msgs, err := rt.Messages(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(texts(msgs), "|")
	}
	turn("one", "end_turn")
	poison := turn("POISON", "error")
	turn("two", "error") // the refused message is still there
	if got := conv(); got != "user:one|assistant:answer 1|user:POISON|assistant:[interrupted]|user:two|assistant:[interrupted]" {
		t.Fatalf("conversation: %s", got)
	}

	before, _ := rt.GetSession(ctx, s.ID)
	at := poison - 1
	d, err := rt.Rewind(ctx, s.ID, runtime.RewindTo{ToSeq: &at})
	if err != nil || d.Messages != 2 || d.Removed != 4 || d.Seq != before.LastSeq+1 {
		t.Fatalf("Rewind to seq %d = %+v, %v", at, d, err)
	}
	rw := readTurnUntil(t, rt, s.ID, before.LastSeq, "session_rewound")
	if !strings.Contains(string(rw.Data), `"messages":2`) || !strings.Contains(string(rw.Data), `"removed":4`) {
		t.Fatalf("session_rewound %s", rw.Data)
	}
	if got := conv(); got != "user:one|assistant:answer 1" {
		t.Fatalf("conversation after the rewind: %s", got)
	}
	three := turn("three", "end_turn")
	if got := conv(); got != "user:one|assistant:answer 1|user:three|assistant:answer 4" {
		t.Fatalf("conversation: %s", got)
	}
	// To a seq before an earlier rewind: what that rewind removed stays
	// removed, and what came after the seq goes.
	at = poison - 1
	if d, err := rt.Rewind(ctx, s.ID, runtime.RewindTo{ToSeq: &at}); err != nil || d.Messages != 2 || d.Removed != 2 || conv() != "user:one|assistant:answer 1" {
		t.Fatalf("Rewind to seq %d again = %+v, %v: %s", at, d, err, conv())
	}
	// A message's own seq is before its turn started: rewinding to it
	// takes the turn out too.
	at = 1
	if d, err := rt.Rewind(ctx, s.ID, runtime.RewindTo{ToSeq: &at}); err != nil || d.Messages != 0 || conv() != "" {
		t.Fatalf("Rewind to seq 1 = %+v, %v: %s", d, err, conv())
	}
	turn("three again", "end_turn")
	_ = three
	n := 0
	if d, err := rt.Rewind(ctx, s.ID, runtime.RewindTo{Messages: &n}); err != nil || d.Removed != 2 || conv() != "" {
		// (the turn "three again" was the whole conversation)
		t.Fatalf("Rewind to 0 messages = %+v, %v: %s", d, err, conv())
	}

	turn("four", "end_turn")
	last, _ := rt.GetSession(ctx, s.ID)
	bad := []runtime.RewindTo{
		{},
		{ToSeq: ptr64(1), Messages: &n},
		{ToSeq: ptr64(last.LastSeq + 1)},
		{ToSeq: ptr64(-1)},
		{Messages: ptrInt(5)},
	}
	bad = append(bad, runtime.RewindTo{Messages: ptrInt(1)}) // would end with a user message
	for _, to := range bad {
		var inv *runtime.InvalidError
		if _, err := rt.Rewind(ctx, s.ID, to); !errors.As(err, &inv) {
			t.Errorf("Rewind(%+v) = %v, want an InvalidError", to, err)
		}
	}
	if _, err := rt.Rewind(ctx, "sess_nope", runtime.RewindTo{Messages: &n}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Rewind of an unknown session = %v", err)
	}
}

// TestRewindBusy: no rewind while a turn runs or messages wait.
func TestRewindBusy(t *testing.T) {
	t.Parallel()
	p := llmtest.NewScripted("scripted", llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("c1", "Block", `{"text":"x"}`)}})
	rt, db := setup(t, filepath.Join(t.TempDir(), "w.db"), p, "bypassPermissions", nil)
	defer db.Close()
	defer rt.Shutdown(context.Background())
	ctx := context.Background()
	s, _ := rt.CreateSession(ctx, "")
	seq, _ := rt.Send(ctx, s.ID, "block", runtime.TurnOptions{})
	r := rt.Subscribe(s.ID, seq-1)
	defer r.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	next(t, rctx, r, "tool_use")
	n := 0
	if _, err := rt.Rewind(ctx, s.ID, runtime.RewindTo{Messages: &n}); !errors.Is(err, runtime.ErrBusy) {
		t.Fatalf("Rewind during a turn = %v, want ErrBusy", err)
	}
	rt.Cancel(s.ID)
	next(t, rctx, r, "done")
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := rt.Rewind(ctx, s.ID, runtime.RewindTo{Messages: &n})
		if err == nil {
			break
		}
		if !errors.Is(err, runtime.ErrBusy) || time.Now().After(deadline) {
			t.Fatalf("Rewind after the turn = %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readTurnUntil(t *testing.T, rt *runtime.Runtime, id string, after int64, want string) store.Event {
	t.Helper()
	r := rt.Subscribe(id, after)
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return next(t, ctx, r, want)
}

func ptr64(v int64) *int64 { return &v }
func ptrInt(v int) *int    { return &v }
