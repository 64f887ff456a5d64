package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/internal/sse"
	"github.com/weft-run/weft/llm/llmtest"
)

// kills is how many times TestServeKill9 kills weft serve; a soak runs it
// with more: go test ./cmd/weft -run TestServeKill9 -weft.kills 35
var kills = flag.Int("weft.kills", 2, "kill -9 rounds of TestServeKill9")

// follower reads one session's event stream as EventSource does, keeping
// every frame it received.
type follower struct {
	mu     sync.Mutex
	frames []frame
	done   chan struct{}
}

func follow(t *testing.T, url string, lastID string) (*follower, *http.Response) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	f := &follower{done: make(chan struct{})}
	if resp.StatusCode != 200 {
		close(f.done)
		return f, resp
	}
	go func() {
		defer close(f.done)
		defer resp.Body.Close()
		rd := sse.NewReader(resp.Body)
		for {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.frames = append(f.frames, frame{string(ev.ID), string(ev.Name), string(ev.Data)})
			f.mu.Unlock()
		}
	}()
	return f, resp
}

// drain posts a message and reads the response to its end. The kill cuts
// these requests at any point, before or after the headers, so an error is
// expected and not the test's concern: what clients saw is checked through
// the followers.
func drain(url, body string) {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
}

func (f *follower) got() []frame {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]frame(nil), f.frames...)
}

// waitFrames waits until the follower has n frames of type typ.
func (f *follower) waitFrames(t *testing.T, typ string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		k := 0
		for _, fr := range f.got() {
			if fr.event == typ {
				k++
			}
		}
		if k >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s frames after 20s, want %d: %s", k, typ, n, eventNames(f.got()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestServeKill9: weft serve under load (sessions streaming turns, one
// message queued behind each) is killed with SIGKILL, several times, and
// started again on the same database. Each time: a client resuming with
// Last-Event-ID is served (no 400, which would stop an EventSource for
// good); every frame any client received is in the replay with the same
// id, type and payload; each cut-off turn ends with error (stop_reason
// "interrupted") and done; each queued message gets message_dropped; and
// new turns get seqs after everything seen. Before issue 12, events were
// delivered before they were stored, so a kill took back frames clients
// had seen and their seqs were issued again.
func TestServeKill9(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fake := llmtest.NewOpenAI(t)
	conf := filepath.Join(dir, "weft.conf")
	if err := os.WriteFile(conf, []byte("model = openai:gpt-4.1\nbase-url = "+fake.URL+"/v1\napi-key = k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "weft.db")
	env := []string{"WEFT_CONFIG=" + conf}
	const sessions = 4
	slow := func() llmtest.Script {
		return llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(strings.Split(strings.Repeat("word ", 400), " ")...)}, Delay: 3 * time.Millisecond}
	}

	p := startServe(t, env, "--db", db, "--workspace", dir)
	for i := range sessions {
		p.expect("POST", "/v1/sessions", fmt.Sprintf(`{"session_id":"s%d"}`, i), 201)
	}
	seen := make([][]frame, sessions) // every frame each session's follower received, all rounds
	for round := range *kills {
		// Load: every session streams a turn and has a message queued.
		for range sessions {
			fake.Push(slow())
		}
		followers := make([]*follower, sessions)
		for i := range sessions {
			last := ""
			if n := len(seen[i]); n > 0 {
				last = seen[i][n-1].id
			}
			f, resp := follow(t, p.url+fmt.Sprintf("/v1/sessions/s%d/events", i), last)
			if resp.StatusCode != 200 {
				t.Fatalf("round %d: resuming s%d after %s: %d", round, i, last, resp.StatusCode)
			}
			followers[i] = f
			go drain(p.url+fmt.Sprintf("/v1/sessions/s%d/messages", i), `{"prompt":"talk for a while"}`)
		}
		for i, f := range followers {
			f.waitFrames(t, "text_delta", 20)
			go drain(p.url+fmt.Sprintf("/v1/sessions/s%d/messages", i), `{"prompt":"queued behind"}`)
		}
		for _, f := range followers {
			f.waitFrames(t, "user_message", 2)
		}
		if err := p.cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown, no flush
			t.Fatal(err)
		}
		_ = p.cmd.Wait()
		for i, f := range followers {
			<-f.done
			seen[i] = append(seen[i], f.got()...)
		}

		p = startServe(t, env, "--db", db, "--workspace", dir)
		for i := range sessions {
			last := seen[i][len(seen[i])-1]
			// Resume as EventSource does after the drop.
			f, resp := follow(t, p.url+fmt.Sprintf("/v1/sessions/s%d/events", i), last.id)
			if resp.StatusCode != 200 {
				t.Fatalf("round %d: s%d resuming with Last-Event-ID %s after the kill: %d", round, i, last.id, resp.StatusCode)
			}
			f.waitFrames(t, "message_dropped", 1)
			resp.Body.Close()
			<-f.done
			tail := f.got()
			names := eventNames(tail)
			if !strings.Contains(names, "error done") || !strings.Contains(names, "message_dropped") {
				t.Fatalf("round %d: s%d after the restart: %s", round, i, names)
			}
			for _, fr := range tail {
				if fr.event == "error" && !strings.Contains(fr.data, `"stop_reason":"interrupted"`) {
					t.Fatalf("round %d: s%d: error %s", round, i, fr.data)
				}
				if n, _ := strconv.Atoi(fr.id); n <= mustAtoi(t, last.id) {
					t.Fatalf("round %d: s%d: resumed after %s but got %s", round, i, last.id, fr.id)
				}
			}
			seen[i] = append(seen[i], tail...)
			// The whole log: every frame ever seen is there, unchanged.
			all := replay(t, p.url+fmt.Sprintf("/v1/sessions/s%d/events?after=0", i), seen[i][len(seen[i])-1].id)
			byID := map[string]frame{}
			for _, fr := range all {
				byID[fr.id] = fr
			}
			for _, fr := range seen[i] {
				if byID[fr.id] != fr {
					t.Fatalf("round %d: s%d: seen %+v, stored %+v", round, i, fr, byID[fr.id])
				}
			}
		}
	}
	// After the last kill the sessions go on, with new seqs.
	for i := range sessions {
		fake.Push(llmtest.Text("back"))
		resp := p.request("POST", fmt.Sprintf("/v1/sessions/s%d/messages", i), `{"prompt":"are you there?"}`)
		fs, err := frames(t, resp, nil)
		resp.Body.Close()
		if err != nil && !errors.Is(err, context.Canceled) && len(fs) == 0 {
			t.Fatal(err)
		}
		last := mustAtoi(t, seen[i][len(seen[i])-1].id)
		if len(fs) == 0 || mustAtoi(t, fs[0].id) <= last || fs[len(fs)-1].event != "done" {
			t.Fatalf("s%d: the turn after the restarts: %+v (last seen %d)", i, fs, last)
		}
	}
	p.stop()
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("frame id %q: %v", s, err)
	}
	return n
}

// replay reads a session's stream from the start up to the frame with id
// until.
func replay(t *testing.T, url, until string) []frame {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	fs, err := frames(t, resp, func(f frame) bool { return f.id == until })
	if err != nil {
		t.Fatalf("replay up to %s: %v after %d frames", until, err, len(fs))
	}
	return fs
}

// TestServeOneWriterPerDatabase: a second weft serve on the database a
// running one uses refuses to start, saying why and naming the first one's
// pid, instead of both writing the same seqs. Before issue 12 it started.
func TestServeOneWriterPerDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "weft.db")
	p := startServe(t, nil, "--db", db, "--workspace", dir)
	r := runBinary(t, nil, "", "serve", "--addr", "127.0.0.1:0", "--db", db, "--workspace", dir)
	if r.code == 0 || !strings.Contains(r.stderr, "already open") || !strings.Contains(r.stderr, fmt.Sprintf("pid %d", p.cmd.Process.Pid)) {
		t.Fatalf("second weft serve on one database: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	p.stop()
	// Once the first has stopped, the file is free.
	p = startServe(t, nil, "--db", db, "--workspace", dir)
	p.stop()
}
