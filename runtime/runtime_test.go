package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/runtime"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool"
)

// models resolves every spec to one scripted provider.
type models struct{ p *llmtest.Scripted }

func (m models) Resolve(spec string) (llm.Provider, llm.ModelInfo, error) {
	if spec == "missing:model" {
		return nil, llm.ModelInfo{}, errors.New("no API key configured: set MISSING_API_KEY")
	}
	return m.p, llm.ModelInfo{ID: "m", Provider: "scripted", MaxOutputTokens: 1000}, nil
}

type writeIn struct {
	Text string `json:"text"`
}

func setup(t *testing.T, path string, p *llmtest.Scripted, mode string, ran *[]string) (*runtime.Runtime, store.Store) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	write := tool.Func("Note", "writes a note", tool.Meta{Effect: tool.EffectWrite}, func(ctx context.Context, in writeIn, _ *tool.Call) (tool.Result, error) {
		mu.Lock()
		if ran != nil {
			*ran = append(*ran, in.Text)
		}
		mu.Unlock()
		return tool.Text("noted " + in.Text), nil
	})
	block := tool.Func("Block", "blocks until cancelled", tool.Meta{ReadOnly: true}, func(ctx context.Context, in writeIn, _ *tool.Call) (tool.Result, error) {
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	})
	reg, _ := tool.NewRegistry(write, block)
	rt, err := runtime.New(runtime.Config{Store: db, Models: models{p}, DefaultModel: "scripted:m", Tools: reg,
		Policy: &policy.Policy{Mode: permission.Mode(mode)}, PermissionTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return rt, db
}

// readTurn reads events after `after` until a done event.
func readTurn(t *testing.T, rt *runtime.Runtime, id string, after int64, onEvent func(store.Event)) []store.Event {
	t.Helper()
	r := rt.Subscribe(id, after)
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var evs []store.Event
	for {
		ev, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("after %d events (%v): %v", len(evs), types(evs), err)
		}
		evs = append(evs, ev)
		if onEvent != nil {
			onEvent(ev)
		}
		if ev.Type == "done" {
			return evs
		}
	}
}

func types(evs []store.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func TestTurnPersistsEventsAndHistory(t *testing.T) {
	t.Parallel()
	p := llmtest.NewScripted("scripted", llmtest.Text("Hel", "lo"))
	rt, db := setup(t, filepath.Join(t.TempDir(), "w.db"), p, "", nil)
	defer db.Close()
	ctx := context.Background()
	s, err := rt.CreateSession(ctx, "")
	if err != nil || !strings.HasPrefix(s.ID, "sess_") || len(s.ID) != 17 {
		t.Fatalf("session %+v, %v", s, err)
	}
	if _, err := rt.CreateSession(ctx, s.ID); !errors.Is(err, runtime.ErrExists) {
		t.Fatalf("duplicate id: %v", err)
	}
	seq, err := rt.Send(ctx, s.ID, "hi", runtime.TurnOptions{})
	if err != nil || seq != 1 {
		t.Fatalf("Send = %d, %v", seq, err)
	}
	evs := readTurn(t, rt, s.ID, seq-1, nil)
	got := strings.Join(types(evs), " ")
	if got != "user_message message_consumed turn_start text_delta text_delta text turn_end done" {
		t.Fatalf("events: %s", got)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("seq %d at %d", e.Seq, i)
		}
	}
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	msgs, err := db.LoadMessages(ctx, s.ID)
	if err != nil || len(msgs) != 2 || msgs[1].Text() != "Hello" {
		t.Fatalf("history = %+v, %v", msgs, err)
	}
	if _, err := rt.Send(ctx, s.ID, "more", runtime.TurnOptions{}); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("Send after Shutdown: %v", err)
	}
}

func TestPermissionFlow(t *testing.T) {
	t.Parallel()
	call := llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("c1", "Note", `{"text":"a"}`)}}
	tests := []struct {
		name    string
		mode    string
		answer  *bool // nil: never answered (times out)
		ran     bool
		denied  string
		request bool
	}{
		{"allowed by a person", "", ptr(true), true, "", true},
		{"denied by a person", "", ptr(false), false, "the user denied", true},
		{"unanswered requests are denied after the timeout", "", nil, false, "no answer to the permission request", true},
		{"bypass asks nothing", "bypass", nil, true, "", false},
		{"plan refuses writes", "plan", nil, false, "plan mode", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ran []string
			p := llmtest.NewScripted("scripted", call, llmtest.Text("ok"))
			rt, db := setup(t, filepath.Join(t.TempDir(), "w.db"), p, tt.mode, &ran)
			defer db.Close()
			defer rt.Shutdown(context.Background())
			ctx := context.Background()
			s, _ := rt.CreateSession(ctx, "")
			seq, err := rt.Send(ctx, s.ID, "note it", runtime.TurnOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var reqID string
			evs := readTurn(t, rt, s.ID, seq-1, func(e store.Event) {
				if e.Type != "permission_request" {
					return
				}
				var d runtime.PermissionRequestData
				if err := json.Unmarshal(e.Data, &d); err != nil || d.ToolName != "Note" || string(d.Input) != `{"text":"a"}` {
					t.Errorf("permission_request %s (%v)", e.Data, err)
				}
				reqID = d.ID
				if tt.answer != nil {
					if err := rt.Answer(s.ID, d.ID, *tt.answer, ""); err != nil {
						t.Errorf("Answer: %v", err)
					}
					if err := rt.Answer(s.ID, d.ID, true, ""); !errors.Is(err, runtime.ErrAnswered) {
						t.Errorf("second answer: %v", err)
					}
				}
			})
			if (reqID != "") != tt.request {
				t.Fatalf("permission request seen = %v; events %v", reqID != "", types(evs))
			}
			if (len(ran) == 1) != tt.ran {
				t.Fatalf("tool ran = %v", ran)
			}
			for _, e := range evs {
				if e.Type == "tool_result" && tt.denied != "" && !strings.Contains(string(e.Data), tt.denied) {
					t.Fatalf("tool_result %s lacks %q", e.Data, tt.denied)
				}
			}
			if err := rt.Answer(s.ID, "perm_unknown", true, ""); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("unknown request: %v", err)
			}
			if tt.answer == nil && reqID != "" {
				if err := rt.Answer(s.ID, reqID, true, ""); !errors.Is(err, runtime.ErrNotFound) {
					t.Fatalf("expired request: %v", err)
				}
			}
		})
	}
}

func ptr(b bool) *bool { return &b }

func TestQueueCancelAndErrors(t *testing.T) {
	t.Parallel()
	p := llmtest.NewScripted("scripted",
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("c1", "Block", `{"text":"x"}`)}},
		llmtest.Text("second answer"),
	)
	rt, db := setup(t, filepath.Join(t.TempDir(), "w.db"), p, "", nil)
	defer db.Close()
	defer rt.Shutdown(context.Background())
	ctx := context.Background()
	s, _ := rt.CreateSession(ctx, "")
	seq, _ := rt.Send(ctx, s.ID, "block", runtime.TurnOptions{})
	r := rt.Subscribe(s.ID, seq-1)
	defer r.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		ev, err := r.Next(rctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "tool_use" {
			break
		}
	}
	if !rt.Cancel(s.ID) {
		t.Fatal("Cancel found no running turn")
	}
	var done store.Event
	for {
		ev, err := r.Next(rctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "done" {
			done = ev
			break
		}
	}
	if !strings.Contains(string(done.Data), `"stop_reason":"cancelled"`) {
		t.Fatalf("done = %s", done.Data)
	}
	// The session goes on after a cancel, with a valid history.
	seq2, err := rt.Send(ctx, s.ID, "again", runtime.TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs := readTurn(t, rt, s.ID, seq2-1, nil)
	if !strings.Contains(string(evs[len(evs)-1].Data), `"text":"second answer"`) {
		t.Fatalf("second turn: %s", evs[len(evs)-1].Data)
	}
	// The cancelled turn is closed with its own "[interrupted]" answer,
	// so the new prompt is not merged into its tool results (issue 12).
	req := p.Requests()[1]
	if n := len(req.Messages); n != 5 || req.Messages[2].Content[0].Type != llm.BlockToolResult ||
		req.Messages[3].Role != llm.RoleAssistant || req.Messages[3].Text() != runtime.InterruptedText ||
		req.Messages[4].Role != llm.RoleUser || req.Messages[4].Text() != "again" {
		t.Fatalf("second request history: %+v", req.Messages)
	}

	// A turn that cannot resolve its model ends with error and done.
	seq3, _ := rt.Send(ctx, s.ID, "x", runtime.TurnOptions{Model: "missing:model"})
	evs = readTurn(t, rt, s.ID, seq3-1, nil)
	if got := strings.Join(types(evs), " "); got != "user_message message_consumed error done" || !strings.Contains(string(evs[2].Data), "MISSING_API_KEY") {
		t.Fatalf("events %s: %s", got, evs[2].Data)
	}
	if _, err := rt.Send(ctx, "sess_nope", "x", runtime.TurnOptions{}); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
	if err := rt.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.GetSession(ctx, s.ID); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("deleted session: %v", err)
	}
}

func TestRestartContinues(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "w.db")
	ctx := context.Background()
	p := llmtest.NewScripted("scripted", llmtest.Text("first"))
	rt, db := setup(t, path, p, "", nil)
	s, _ := rt.CreateSession(ctx, "")
	seq, _ := rt.Send(ctx, s.ID, "one", runtime.TurnOptions{})
	first := readTurn(t, rt, s.ID, seq-1, nil)
	rt.Shutdown(ctx)
	db.Close()

	p2 := llmtest.NewScripted("scripted", llmtest.Text("second"))
	rt2, db2 := setup(t, path, p2, "", nil)
	defer db2.Close()
	defer rt2.Shutdown(ctx)
	seq2, err := rt2.Send(ctx, s.ID, "two", runtime.TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := first[len(first)-1].Seq + 1; seq2 != want {
		t.Fatalf("seq after restart = %d, want %d", seq2, want)
	}
	all := readTurn(t, rt2, s.ID, 0, nil) // replays the first turn
	if all[len(all)-1].Seq != first[len(first)-1].Seq {
		t.Fatalf("replay ended at %d", all[len(all)-1].Seq)
	}
	readTurn(t, rt2, s.ID, seq2-1, nil)
	msgs := p2.Requests()[0].Messages
	if len(msgs) != 3 || msgs[1].Text() != "first" || msgs[2].Text() != "two" {
		t.Fatalf("history after restart: %+v", msgs)
	}
}

// TestQueuedMessagesAreMarked checks that a message sent while a turn runs
// is consumed after it, with its own marker, so that a client can stream
// exactly its turn; and that Cancel records the messages it drops.
func TestQueuedMessagesAreMarked(t *testing.T) {
	t.Parallel()
	p := llmtest.NewScripted("scripted",
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("c1", "Block", `{"text":"x"}`)}},
	)
	rt, db := setup(t, filepath.Join(t.TempDir(), "w.db"), p, "", nil)
	defer db.Close()
	defer rt.Shutdown(context.Background())
	ctx := context.Background()
	s, _ := rt.CreateSession(ctx, "")
	first, _ := rt.Send(ctx, s.ID, "block", runtime.TurnOptions{})
	r := rt.Subscribe(s.ID, first-1)
	defer r.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	next := func(want string) store.Event {
		for {
			ev, err := r.Next(rctx)
			if err != nil {
				t.Fatalf("waiting for %s: %v", want, err)
			}
			if ev.Type == want {
				return ev
			}
		}
	}
	var m runtime.MessageData
	json.Unmarshal(next("message_consumed").Data, &m)
	if m.MessageSeq != first {
		t.Fatalf("consumed %d, want %d", m.MessageSeq, first)
	}
	next("tool_use")
	second, _ := rt.Send(ctx, s.ID, "queued", runtime.TurnOptions{})
	third, _ := rt.Send(ctx, s.ID, "queued too", runtime.TurnOptions{})
	rt.Cancel(s.ID)
	var dropped []int64
	for len(dropped) < 2 {
		json.Unmarshal(next("message_dropped").Data, &m)
		dropped = append(dropped, m.MessageSeq)
	}
	if dropped[0] != second || dropped[1] != third {
		t.Fatalf("dropped %v, want [%d %d]", dropped, second, third)
	}
}

// A turn that cannot start (here: a bad option) or whose model call the
// provider refuses loses nothing: its message stays in the conversation,
// as a message of its own closed by an "[interrupted]" answer, and the
// next turn's prompt stands on its own instead of being merged into it
// (before issue 12 the two were merged, so a refused prompt went with
// every later one).
func TestFailedTurnKeepsTheMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		opt    runtime.TurnOptions
		script []llmtest.Script
	}{
		{"cannot start", runtime.TurnOptions{Thinking: "enormous"}, nil},
		{"provider refuses", runtime.TurnOptions{}, []llmtest.Script{{Status: 401, ErrorMessage: "invalid x-api-key"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := llmtest.NewScripted("scripted", append(tc.script, llmtest.Text("ok"))...)
			rt, db := setup(t, filepath.Join(t.TempDir(), "w.db"), p, "", nil)
			defer db.Close()
			defer rt.Shutdown(context.Background())
			ctx := context.Background()
			s, _ := rt.CreateSession(ctx, "")
			seq, err := rt.Send(ctx, s.ID, "first thought", tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			evs := readTurn(t, rt, s.ID, seq-1, nil)
			if got := types(evs); got[len(got)-2] != "error" || !strings.Contains(string(evs[len(evs)-1].Data), `"stop_reason":"error"`) {
				t.Fatalf("events: %v", got)
			}
			msgs, err := rt.Messages(ctx, s.ID)
			if err != nil || len(msgs) != 2 || msgs[0].Text() != "first thought" || msgs[1].Role != llm.RoleAssistant || msgs[1].Text() != runtime.InterruptedText {
				t.Fatalf("history after the failed turn = %+v, %v", msgs, err)
			}
			seq, err = rt.Send(ctx, s.ID, "second thought", runtime.TurnOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if evs := readTurn(t, rt, s.ID, seq-1, nil); !strings.Contains(string(evs[len(evs)-1].Data), `"stop_reason":"end_turn"`) {
				t.Fatalf("the turn after the failed one: %s", evs[len(evs)-1].Data)
			}
			reqs := p.Requests()
			req := reqs[len(reqs)-1]
			if len(req.Messages) != 3 || req.Messages[0].Text() != "first thought" || req.Messages[1].Text() != runtime.InterruptedText || req.Messages[2].Text() != "second thought" {
				t.Fatalf("the model saw %+v", req.Messages)
			}
		})
	}
}

// Server-wide permission changes race with nothing: turns, session
// creation and readers of the posture may run while they land.
func TestServerPermissionsChangeUnderLoad(t *testing.T) {
	t.Parallel()
	p := llmtest.NewScripted("scripted", llmtest.Text("a"), llmtest.Text("b"), llmtest.Text("c"))
	rt, db := setup(t, filepath.Join(t.TempDir(), "w.db"), p, "", nil)
	defer db.Close()
	defer rt.Shutdown(context.Background())
	ctx := context.Background()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 50; i++ {
			if err := rt.SetServerPermissions(ctx, runtime.Permissions{Allow: []string{"Note"}, DefaultMode: "plan"}); err != nil {
				t.Error(err)
				return
			}
			_ = rt.ServerPermissions()
		}
	}()
	for i := 0; i < 3; i++ {
		s, err := rt.CreateSession(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		seq, err := rt.Send(ctx, s.ID, "hi", runtime.TurnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		readTurn(t, rt, s.ID, seq-1, nil)
	}
	<-done
	if got := rt.ServerPermissions(); got.DefaultMode != "plan" || len(got.Allow) != 1 {
		t.Fatalf("permissions = %+v", got)
	}
}

// countingStore counts the conversation writes that reach the store.
type countingStore struct {
	store.Store
	mu               sync.Mutex
	appends, replace int
}

func (c *countingStore) AppendMessages(ctx context.Context, id string, msgs ...llm.Message) error {
	c.mu.Lock()
	c.appends++
	c.mu.Unlock()
	return c.Store.AppendMessages(ctx, id, msgs...)
}

func (c *countingStore) ReplaceMessages(ctx context.Context, id string, msgs []llm.Message) error {
	c.mu.Lock()
	c.replace++
	c.mu.Unlock()
	return c.Store.ReplaceMessages(ctx, id, msgs)
}

// A turn writes only the messages it added, a failed one too (its message
// and its "[interrupted]" answer): the store ends up with what the model
// saw, and nothing is rewritten.
func TestConversationIsSavedIncrementally(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cs := &countingStore{Store: db}
	p := llmtest.NewScripted("scripted", llmtest.Text("a"), llmtest.Text("b"), llmtest.Text("c"))
	rt, err := runtime.New(runtime.Config{Store: cs, Models: models{p}, DefaultModel: "scripted:m"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Shutdown(ctx)
	s, _ := rt.CreateSession(ctx, "")
	steps := []struct {
		prompt           string
		opt              runtime.TurnOptions
		appends, replace int
		stored           []string
	}{
		{"one", runtime.TurnOptions{}, 1, 0, []string{"one", "a"}},
		{"two", runtime.TurnOptions{}, 2, 0, []string{"one", "a", "two", "b"}},
		{"three", runtime.TurnOptions{Thinking: "enormous"}, 3, 0, []string{"one", "a", "two", "b", "three", runtime.InterruptedText}},
		{"four", runtime.TurnOptions{}, 4, 0, []string{"one", "a", "two", "b", "three", runtime.InterruptedText, "four", "c"}},
	}
	for _, st := range steps {
		seq, err := rt.Send(ctx, s.ID, st.prompt, st.opt)
		if err != nil {
			t.Fatal(err)
		}
		readTurn(t, rt, s.ID, seq-1, nil)
		msgs, err := db.LoadMessages(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range msgs {
			var parts []string
			for _, b := range m.Content {
				parts = append(parts, b.Text)
			}
			got = append(got, strings.Join(parts, "\n"))
		}
		if strings.Join(got, "|") != strings.Join(st.stored, "|") {
			t.Fatalf("after %q the store holds %q, want %q", st.prompt, got, st.stored)
		}
		cs.mu.Lock()
		a, r := cs.appends, cs.replace
		cs.mu.Unlock()
		if a != st.appends || r != st.replace {
			t.Fatalf("after %q: %d appends and %d rewrites, want %d and %d", st.prompt, a, r, st.appends, st.replace)
		}
	}
}
