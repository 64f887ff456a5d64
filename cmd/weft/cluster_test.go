//go:build !nopostgres

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/store/postgres/pgtest"
)

// roundRobin is the load balancer in front of the nodes: each request to
// the next node alive (a node the test killed is taken out, as a
// balancer's health check would).
type roundRobin struct {
	mu    sync.Mutex
	nodes []*url.URL
	dead  map[int]bool
	next  int
}

func (rr *roundRobin) pick() *url.URL {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for range rr.nodes {
		i := rr.next % len(rr.nodes)
		rr.next++
		if !rr.dead[i] {
			return rr.nodes[i]
		}
	}
	return rr.nodes[0]
}

func (rr *roundRobin) kill(i int) {
	rr.mu.Lock()
	rr.dead[i] = true
	rr.mu.Unlock()
}

// TestCluster (issue 20): three weft serve nodes on one PostgreSQL behind
// a round-robin proxy, with a 2s lease TTL. Sessions are created,
// messaged, followed and answered through different nodes: a follower on
// one node sees live the turn another node runs, and a permission request
// is answered at a third node. Then the node running a turn is killed
// with SIGKILL mid-turn, with a message queued behind the turn and
// another sent (to a live node) after the kill. Checks: the followers
// (one on a surviving node, one through the proxy that reconnects with
// Last-Event-ID) never see an event twice or out of order, every frame a
// client received is in the store as it was received, seqs are never
// reused (the log is 1..n without gaps), the interrupted turn ends with
// error and done (stop_reason "interrupted"), the queued and later
// messages run on another node, and every accepted message is in the
// conversation.
func TestCluster(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	srv, err := pgtest.Start(pgtest.Options{NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	dsn := srv.NewDatabase(t)
	dir := t.TempDir()
	fake := llmtest.NewOpenAI(t)
	conf := filepath.Join(dir, "weft.conf")
	if err := os.WriteFile(conf, []byte("model = openai:gpt-4.1\nbase-url = "+fake.URL+"/v1\napi-key = k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"WEFT_CONFIG=" + conf}
	nodes := make([]*serveProc, 3)
	rr := &roundRobin{dead: map[int]bool{}}
	for i := range nodes {
		nodes[i] = startServe(t, env, "--db", dsn, "--workspace", dir, "--node-id", fmt.Sprintf("n%d", i), "--lease-ttl", "2s")
		u, _ := url.Parse(nodes[i].url)
		rr.nodes = append(rr.nodes, u)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(rr.pick()) },
		FlushInterval: -1, // event streams
		ErrorLog:      nil,
	}
	lb := httptest.NewServer(proxy)
	// A test that fails leaves followers' streams open through the
	// balancer, and Close waits for active requests: cut them first, or a
	// failure hangs until the test binary's timeout and never reports.
	t.Cleanup(func() {
		lb.CloseClientConnections()
		lb.Close()
	})
	logs := func() string {
		var b strings.Builder
		for i, n := range nodes {
			fmt.Fprintf(&b, "--- node n%d:\n%s", i, n.log())
		}
		return b.String()
	}
	post := func(base, path, body string, status int) map[string]any {
		t.Helper()
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("POST %s: %v\n%s", path, err, logs())
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != status {
			t.Fatalf("POST %s%s: %d, want %d: %s\n%s", base, path, resp.StatusCode, status, raw, logs())
		}
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return m
	}
	for _, id := range []string{"a", "b"} {
		post(lb.URL, "/v1/sessions", `{"session_id":"`+id+`"}`, 201) // through the balancer: two nodes
	}

	// 1. Session a: its turn runs on n0 (where the message arrives: the
	// lease is free), a follower on n1 sees it live, and the permission
	// request (Bash asks in the default mode) is answered at n2.
	fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_1", "Bash", `{"command":"echo cluster"}`)}})
	fake.Push(llmtest.Text("It said cluster."))
	fa, resp := follow(t, nodes[1].url+"/v1/sessions/a/events?after=0", "")
	if resp.StatusCode != 200 {
		t.Fatalf("following a on n1: %d", resp.StatusCode)
	}
	// And a WebSocket client attached to a at n2.
	wsMsgs := wsFollow(t, strings.Replace(nodes[2].url, "http://", "ws://", 1)+"/v1/ws", `{"type":"create","session_id":"a","start":0}`)
	go drain(nodes[0].url+"/v1/sessions/a/messages", `{"prompt":"run echo"}`)
	fa.waitFrames(t, "permission_request", 1)
	var pr struct{ ID string }
	for _, f := range fa.got() {
		if f.event == "permission_request" {
			_ = json.Unmarshal([]byte(f.data), &pr)
		}
	}
	post(nodes[2].url, "/v1/sessions/a/permissions/"+pr.ID, `{"allow":true}`, 200)
	post(nodes[1].url, "/v1/sessions/a/permissions/"+pr.ID, `{"allow":true}`, 409) // answered once
	fa.waitFrames(t, "done", 1)
	checkStream(t, "a on n1", fa.got(), 1)
	waitFor(t, "the WebSocket client on n2 to see a's turn end", func() bool {
		got := wsMsgs()
		return strings.Contains(got, `"permission_request"`) && strings.Contains(got, `"stop_reason":"end_turn"`)
	})
	names := eventNames(fa.got())
	if !strings.Contains(names, "tool_result") || !strings.Contains(fa.got()[len(fa.got())-1].data, `"end_turn"`) {
		t.Fatalf("a's turn as n1 saw it: %s\n%s", names, logs())
	}

	// 2. Session b: a long turn on n1, followed on n2 and through the
	// balancer; a message queued behind it at n0; n1 killed mid-turn.
	fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(strings.Split(strings.Repeat("word ", 3000), " ")...)}, Delay: 3 * time.Millisecond})
	fake.Push(llmtest.Text("second answer"))
	fake.Push(llmtest.Text("third answer"))
	fb, resp := follow(t, nodes[2].url+"/v1/sessions/b/events?after=0", "")
	if resp.StatusCode != 200 {
		t.Fatalf("following b on n2: %d", resp.StatusCode)
	}
	fp, resp := follow(t, lb.URL+"/v1/sessions/b/events?after=0", "")
	if resp.StatusCode != 200 {
		t.Fatalf("following b through the balancer: %d", resp.StatusCode)
	}
	go drain(nodes[1].url+"/v1/sessions/b/messages", `{"prompt":"talk for a while"}`)
	fb.waitFrames(t, "text_delta", 20)
	go drain(nodes[0].url+"/v1/sessions/b/messages", `{"prompt":"queued behind"}`)
	fb.waitFrames(t, "user_message", 2)
	if err := nodes[1].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = nodes[1].cmd.Wait()
	rr.kill(1)
	killedAt := time.Now()
	// Accepted at a live node while n1's lease has not expired yet: it
	// waits for the takeover, and runs after the queued one.
	third := make(chan int, 1)
	go func() {
		resp, err := http.Post(nodes[0].url+"/v1/sessions/b/messages", "application/json", strings.NewReader(`{"prompt":"third message"}`))
		if err != nil {
			third <- 0
			return
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		third <- resp.StatusCode
	}()

	// The follower on n2 sees the takeover: interrupted, then both
	// messages run.
	fb.waitFrames(t, "done", 3)
	if code := <-third; code != 200 {
		t.Fatalf("the message sent after the kill: %d\n%s", code, logs())
	}
	t.Logf("takeover done %v after the kill", time.Since(killedAt).Round(time.Millisecond))
	seen := fb.got()
	checkStream(t, "b on n2", seen, 1)
	var dones []string
	for _, f := range seen {
		if f.event == "done" || f.event == "error" {
			dones = append(dones, f.event+" "+f.data)
		}
	}
	if len(dones) < 4 || !strings.Contains(dones[0], `"interrupted"`) || !strings.Contains(dones[1], `"interrupted"`) ||
		!strings.Contains(dones[2], `"end_turn"`) || !strings.Contains(dones[3], `"end_turn"`) {
		t.Fatalf("b's turns as n2 saw them: %q\n%s", dones, logs())
	}

	// The balancer's follower was cut if it went through n1: it resumes
	// with Last-Event-ID, as EventSource does.
	fpSeen := fp.got()
	select {
	case <-fp.done:
		last := ""
		if n := len(fpSeen); n > 0 {
			last = fpSeen[n-1].id
		}
		f2, resp := follow(t, lb.URL+"/v1/sessions/b/events", last)
		if resp.StatusCode != 200 {
			t.Fatalf("resuming b through the balancer after %s: %d", last, resp.StatusCode)
		}
		if need := 3 - countEvents(fpSeen, "done"); need > 0 {
			f2.waitFrames(t, "done", need)
		}
		resp.Body.Close()
		<-f2.done
		fpSeen = append(fpSeen, f2.got()...)
	default:
		fp.waitFrames(t, "done", 3)
		fpSeen = fp.got()
	}
	checkStream(t, "b through the balancer", fpSeen, 1)

	// The store has every frame any client saw, as seen, and seqs 1..n.
	last := seen[len(seen)-1].id
	all := replay(t, nodes[0].url+"/v1/sessions/b/events?after=0", last)
	checkStream(t, "b replayed", all, 1)
	byID := map[string]frame{}
	for _, f := range all {
		byID[f.id] = f
	}
	for _, f := range append(append([]frame{}, seen...), fpSeen...) {
		if mustAtoi(t, f.id) <= mustAtoi(t, last) && byID[f.id] != f {
			t.Fatalf("b: a client saw %+v, the store has %+v", f, byID[f.id])
		}
	}
	// Every accepted message is in the conversation.
	resp, err = http.Get(nodes[2].url + "/v1/sessions/b/messages")
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"talk for a while", "queued behind", "third message", "second answer", "third answer"} {
		if !strings.Contains(string(conv), m) {
			t.Errorf("b's conversation lacks %q: %s", m, conv)
		}
	}
	// Session a goes on through any node, after the others.
	fake.Push(llmtest.Text("still here"))
	resp, err = http.Post(lb.URL+"/v1/sessions/a/messages", "application/json", strings.NewReader(`{"prompt":"again"}`))
	if err != nil {
		t.Fatal(err)
	}
	turn, _ := frames(t, resp, nil)
	resp.Body.Close()
	if len(turn) == 0 || turn[len(turn)-1].event != "done" || mustAtoi(t, turn[0].id) <= mustAtoi(t, fa.got()[len(fa.got())-1].id) {
		t.Fatalf("a's second turn: %s\n%s", eventNames(turn), logs())
	}
	for _, i := range []int{0, 2} {
		nodes[i].stop()
	}
}

// wsFollow attaches a WebSocket client with the first message hello and
// returns what it has received so far, all messages joined.
func wsFollow(t *testing.T, url, hello string) func() string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	if err := conn.Write(ctx, websocket.MessageText, []byte(hello)); err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		all strings.Builder
	)
	go func() {
		for {
			_, msg, err := conn.Read(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			all.Write(msg)
			all.WriteString("\n")
			mu.Unlock()
		}
	}()
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return all.String()
	}
}

// countEvents is the number of frames of type typ in fs.
func countEvents(fs []frame, typ string) int {
	n := 0
	for _, f := range fs {
		if f.event == typ {
			n++
		}
	}
	return n
}

// checkStream checks that a client's frames have seqs first, first+1, ...
// in order: nothing lost, nothing twice.
func checkStream(t *testing.T, what string, fs []frame, first int) {
	t.Helper()
	prev := first - 1
	for _, f := range fs {
		n, err := strconv.Atoi(f.id)
		if err != nil {
			t.Fatalf("%s: frame id %q", what, f.id)
		}
		if n != prev+1 {
			t.Fatalf("%s: seq %d after %d (a gap or a duplicate): %s", what, n, prev, eventNames(fs))
		}
		prev = n
	}
}
