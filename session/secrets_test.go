package session_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/run"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool"
)

// secretWindow returns the first run of n bytes of value found in s, or
// "": a piece of a secret is a leak too.
func secretWindow(s, value string, n int) string {
	for i := 0; i+n <= len(value); i++ {
		if strings.Contains(s, value[i:i+n]) {
			return value[i : i+n]
		}
	}
	return ""
}

// TestEventsNeverCarryASecret: whatever a session or a run appends to its
// event log (a permission request for a call whose input holds the value,
// the model's plan streamed in pieces that split it, the plan itself) is
// redacted before any reader or the store gets it. The runtime's policy
// passed permission_request.input and plan_ready raw, and published plan
// tokens one by one. The tools still run with the real value, and no
// model request carries it.
func TestEventsNeverCarryASecret(t *testing.T) {
	t.Parallel()
	const value = "zqKp2WmXv4Rt8LnB"
	set := secret.NewSet()
	if err := set.Set("TOKEN", value); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "weft.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	var mu sync.Mutex
	var ran []string
	note := tool.Func("Note", "writes a note", tool.Meta{Effect: tool.EffectWrite},
		func(ctx context.Context, in writeIn, _ *tool.Call) (tool.Result, error) {
			mu.Lock()
			ran = append(ran, in.Text)
			mu.Unlock()
			return tool.Text("noted"), nil
		})
	reg, _ := tool.NewRegistry(note)
	pol := &policy.Policy{Mode: permission.ModeDefault, Secrets: set}
	p := llmtest.NewScripted("scripted",
		toolScriptOf(llmtest.ToolBlock("c1", "Note", `{"text":"`+value+`"}`)),
		llmtest.Text("done"),
		// The planner's answer, streamed so that the value is split
		// across plan tokens.
		llmtest.Text(`{"steps":[{"id":"s","tool":"Note","args":{"text":"zqKp2W`, `mXv4Rt`, `8LnB"}}]}`),
	)
	rt, err := session.New(session.Config{Store: db, Models: models{p}, DefaultModel: "scripted:m", Tools: reg,
		Policy: pol, PermissionTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := run.New(context.Background(), run.Config{Runs: db, Tools: reg, Models: models{p},
		DefaultModel: "scripted:m", Policy: rt.ServerPolicy, PermissionTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = runs.Shutdown(context.Background())
		_ = rt.Shutdown(context.Background())
	})
	ctx := context.Background()
	check := func(where string, evs []event.Event) {
		t.Helper()
		for _, e := range evs {
			if w := secretWindow(string(e.Data), value, 5); w != "" {
				t.Errorf("%s: %s event %d shows %q: %s", where, e.Type, e.Seq, w, e.Data)
			}
		}
	}

	s, err := rt.CreateSession(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Send(ctx, s.ID, "go", session.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	live := readTurn(t, rt, s.ID, 0, func(e event.Event) {
		if e.Type == "permission_request" {
			var req struct{ ID string }
			_ = json.Unmarshal(e.Data, &req)
			if err := rt.Answer(s.ID, req.ID, true, ""); err != nil {
				t.Error(err)
			}
		}
	})
	check("session stream", live)
	stored, err := db.ReadEvents(ctx, s.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	check("session events in the store", stored)

	created, err := runs.CreateRun(ctx, run.RunRequest{Goal: "note it", Config: run.RunConfig{AutoApprove: true}})
	if err != nil {
		t.Fatal(err)
	}
	r := runs.Subscribe(created.ID, 0)
	defer r.Close()
	var runEvents []event.Event
	for {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		e, err := r.Next(rctx)
		cancel()
		if err != nil {
			t.Fatalf("run events after %v: %v", types(runEvents), err)
		}
		runEvents = append(runEvents, e)
		if e.Type == "permission_request" {
			var req struct{ ID string }
			_ = json.Unmarshal(e.Data, &req)
			if err := runs.AnswerPermission(created.ID, req.ID, true, ""); err != nil {
				t.Fatal(err)
			}
		}
		if e.Type == "complete" || e.Type == "error" {
			break
		}
	}
	check("run stream", runEvents)
	if got := strings.Join(types(runEvents), " "); !strings.Contains(got, "plan_token") || !strings.HasSuffix(got, "complete") {
		t.Fatalf("run events %s", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 2 || ran[0] != value || ran[1] != value {
		t.Fatalf("the tool ran with %q, want the real value twice", ran)
	}
}

func toolScriptOf(calls ...llmtest.Block) llmtest.Script { return llmtest.Script{Blocks: calls} }
