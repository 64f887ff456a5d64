package session_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/turnend"
)

// TestSuggestionsEventFollowsDone: with the turn-end pipeline's
// suggestions on, a turn's done is followed by a suggestions event of at
// most three prompts; with the model too slow, by nothing.
func TestSuggestionsEventFollowsDone(t *testing.T) {
	t.Parallel()
	slow := llmtest.Text("too ", "late")
	slow.Delay = time.Second
	tests := []struct {
		name    string
		suggest llmtest.Script
		want    int // suggestions; 0: no event
	}{
		{"suggestions", llmtest.Text("Run the tests\nAdd a benchmark\nWrite the docs\nA fourth"), 3},
		{"slow model", slow, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := llmtest.NewScripted("scripted", llmtest.Text("Added the flag."), tt.suggest)
			db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "w.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			pipe := turnend.New(turnend.Config{Suggest: true, SuggestTimeout: 200 * time.Millisecond})
			defer pipe.Close()
			rt, err := session.New(session.Config{Store: db, Models: models{p}, DefaultModel: "scripted:m", TurnEnd: pipe})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			s, err := rt.CreateSession(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			seq, err := rt.Send(ctx, s.ID, "add a --verbose flag", session.TurnOptions{})
			if err != nil {
				t.Fatal(err)
			}
			evs := readTurn(t, rt, s.ID, seq-1, nil)
			done := evs[len(evs)-1].Seq
			// done is out before the turn has handed itself to the
			// pipeline: wait for the session to go idle, then for the
			// pipeline.
			for deadline := time.Now().Add(5 * time.Second); rt.Active() > 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the session never went idle")
				}
			}
			pipe.Wait()
			r := rt.Subscribe(s.ID, done)
			defer r.Close()
			nctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			ev, err := r.Next(nctx)
			if tt.want == 0 {
				if err == nil {
					t.Fatalf("an event after done: %s %s", ev.Type, ev.Data)
				}
				return
			}
			if err != nil {
				t.Fatalf("no event after done: %v", err)
			}
			if ev.Type != event.Suggestions || ev.Seq != done+1 {
				t.Fatalf("after done (seq %d): %s at seq %d", done, ev.Type, ev.Seq)
			}
			var d event.SuggestionsData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			if len(d.Suggestions) != tt.want || d.Suggestions[0] != "Run the tests" {
				t.Fatalf("suggestions %q", d.Suggestions)
			}
			if err := rt.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
