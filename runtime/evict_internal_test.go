package runtime

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/store/sqlite"
)

type scriptedModels struct{ p llm.Provider }

func (m scriptedModels) Resolve(string) (llm.Provider, llm.ModelInfo, error) {
	return m.p, llm.ModelInfo{ID: "m", Provider: "scripted", MaxOutputTokens: 1000}, nil
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// runTurn sends prompt and waits for its done.
func runTurn(t *testing.T, rt *Runtime, id, prompt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seq, err := rt.Send(ctx, id, prompt, TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := rt.Subscribe(id, seq-1)
	defer r.Close()
	for {
		ev, err := r.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "done" {
			break
		}
	}
	// The turn's goroutine ends just after done is out.
	for {
		rt.mu.Lock()
		l := rt.live[id]
		rt.mu.Unlock()
		if l == nil {
			return
		}
		l.mu.Lock()
		running := l.running
		l.mu.Unlock()
		if !running {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func liveCount(rt *Runtime) int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return len(rt.live)
}

// TestIdleSessionsAreEvicted: a session's in-memory state (conversation,
// tool state, permissions) is dropped once idle for IdleEvict, and the
// least recently used idle ones past MaxLiveSessions; a session used again
// reloads its conversation from the store and goes on as if nothing
// happened. Before issue 12 the runtime kept every session it had met
// until it was deleted.
func TestIdleSessionsAreEvicted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "w.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var scripts []llmtest.Script
	for i := range 20 {
		scripts = append(scripts, llmtest.Text(fmt.Sprintf("answer %d", i)))
	}
	p := llmtest.NewScripted("scripted", scripts...)
	rt, err := New(Config{Store: db, Models: scriptedModels{p}, DefaultModel: "s:m", IdleEvict: time.Minute, MaxLiveSessions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Shutdown(ctx)
	clk := &clock{t: time.Unix(1_000_000, 0)}
	rt.mu.Lock()
	rt.now = clk.now
	rt.lastSweep = clk.now()
	rt.mu.Unlock()

	ids := make([]string, 10)
	for i := range ids {
		s, err := rt.CreateSession(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = s.ID
		runTurn(t, rt, s.ID, fmt.Sprintf("hello %d", i))
		clk.advance(time.Second)
		if n := liveCount(rt); n > 4 {
			t.Fatalf("after %d sessions %d are in memory, want at most MaxLiveSessions (4)", i+1, n)
		}
	}
	// The first session was evicted long ago; it reloads its
	// conversation and carries on.
	rt.mu.Lock()
	_, inMemory := rt.live[ids[0]]
	rt.mu.Unlock()
	if inMemory {
		t.Fatal("the least recently used session is still in memory")
	}
	runTurn(t, rt, ids[0], "again")
	reqs := p.Requests()
	var got []string
	for _, m := range reqs[len(reqs)-1].Messages {
		got = append(got, m.Text())
	}
	if strings.Join(got, "|") != "hello 0|answer 0|again" {
		t.Fatalf("after eviction the model saw %q", got)
	}

	// Idle for IdleEvict: everything goes at the next use of the runtime.
	clk.advance(2 * time.Minute)
	if _, err := rt.SessionPermissions(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	if n := liveCount(rt); n != 1 {
		t.Fatalf("%d sessions in memory after IdleEvict, want only the one just used", n)
	}
}

// TestBusySessionsAreNotEvicted: a session with a turn running, a message
// queued or a caller holding it is never evicted, however far past the
// bounds.
func TestBusySessionsAreNotEvicted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "w.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rt, err := New(Config{Store: db, Models: scriptedModels{llmtest.NewScripted("scripted")}, DefaultModel: "s:m", IdleEvict: time.Minute, MaxLiveSessions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Shutdown(ctx)
	clk := &clock{t: time.Unix(1_000_000, 0)}
	rt.mu.Lock()
	rt.now = clk.now
	rt.mu.Unlock()
	for _, id := range []string{"running", "held", "other"} {
		if _, err := rt.CreateSession(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	held, err := rt.session("held")
	if err != nil {
		t.Fatal(err)
	}
	running, err := rt.session("running")
	if err != nil {
		t.Fatal(err)
	}
	running.mu.Lock()
	running.running = true // as Send leaves it while a turn runs
	running.mu.Unlock()
	rt.release(running)
	clk.advance(time.Hour)
	if _, err := rt.SessionPermissions(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	_, h := rt.live["held"]
	_, r := rt.live["running"]
	rt.mu.Unlock()
	if !h || !r {
		t.Fatalf("evicted a busy session: held in memory %v, running in memory %v", h, r)
	}
	rt.release(held)
	running.mu.Lock()
	running.running = false
	running.mu.Unlock()
}

// TestAnsweredIDsBounded: the answered permission ids a session remembers
// (for 409 on a second answer) are bounded, oldest forgotten first.
func TestAnsweredIDsBounded(t *testing.T) {
	t.Parallel()
	l := &live{}
	for i := range 3 * maxAnsweredIDs {
		l.rememberAnswered(fmt.Sprintf("perm_%d", i))
	}
	if len(l.answeredIDs) != maxAnsweredIDs || len(l.answeredFIFO) != maxAnsweredIDs {
		t.Fatalf("%d answered ids remembered, want %d", len(l.answeredIDs), maxAnsweredIDs)
	}
	if !l.answeredIDs[fmt.Sprintf("perm_%d", 3*maxAnsweredIDs-1)] || l.answeredIDs["perm_0"] {
		t.Fatal("kept the oldest instead of the newest")
	}
}
