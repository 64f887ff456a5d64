package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool"
)

// wsModels resolves every model spec to one scripted provider.
type wsModels struct{ p *llmtest.Scripted }

func (m wsModels) Resolve(string) (llm.Provider, llm.ModelInfo, error) {
	return m.p, llm.ModelInfo{ID: "m", Provider: "scripted", MaxOutputTokens: 1000}, nil
}

type wsNoteIn struct {
	Text string `json:"text"`
}

// wsRig is a real runtime on SQLite behind acceptWS on a loopback server.
type wsRig struct {
	t   *testing.T
	p   *llmtest.Scripted
	rt  *session.Service
	db  *sqlite.DB
	url string
	// stop ends every connection as a server shutdown would.
	stop context.CancelFunc
}

type wsRigOptions struct {
	ws wsOptions
	// listen wraps the listener (small socket buffers).
	listen func(net.Listener) net.Listener
	// api serves the whole API (New(*api).Handler(), middleware included)
	// instead of acceptWS alone; api.Runtime is filled in.
	api *Config
}

func newWSRig(t *testing.T, o wsRigOptions, scripts ...llmtest.Script) *wsRig {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ws.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	echo := tool.Func("Echo", "echoes its text", tool.Meta{ReadOnly: true, Effect: tool.EffectRead},
		func(ctx context.Context, in wsNoteIn, _ *tool.Call) (tool.Result, error) {
			return tool.Text("echo " + in.Text), nil
		})
	note := tool.Func("Note", "writes a note", tool.Meta{Effect: tool.EffectWrite},
		func(ctx context.Context, in wsNoteIn, _ *tool.Call) (tool.Result, error) {
			return tool.Text("noted " + in.Text), nil
		})
	block := tool.Func("Block", "blocks until cancelled", tool.Meta{ReadOnly: true, Effect: tool.EffectRead},
		func(ctx context.Context, in wsNoteIn, _ *tool.Call) (tool.Result, error) {
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		})
	reg, err := tool.NewRegistry(echo, note, block)
	if err != nil {
		t.Fatal(err)
	}
	p := llmtest.NewScripted("scripted", scripts...)
	logger := slog.New(slog.DiscardHandler)
	rt, err := session.New(session.Config{Store: db, Models: wsModels{p}, DefaultModel: "scripted:m", Tools: reg,
		PermissionTimeout: 5 * time.Second, Logger: logger,
		Retry: agent.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	base, cancelBase := context.WithCancel(context.Background())
	stop := cancelBase
	h := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(base, cancel)()
		acceptWS(w, r.WithContext(ctx), rt, logger, o.ws)
	}))
	if o.api != nil {
		cfg := *o.api
		cfg.Runtime, cfg.Logger = rt, logger
		api := New(cfg)
		h = api.Handler()
		stop = api.Close
	}
	var handlers sync.WaitGroup
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		h.ServeHTTP(w, r)
	}))
	if o.listen != nil {
		srv.Listener = o.listen(srv.Listener)
	}
	srv.Start()
	t.Cleanup(func() {
		stop()
		handlers.Wait()
		cancelBase()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rt.Shutdown(ctx); err != nil {
			t.Errorf("runtime shutdown: %v", err)
		}
		_ = db.Close()
	})
	return &wsRig{t: t, p: p, rt: rt, db: db, url: "ws" + strings.TrimPrefix(srv.URL, "http"), stop: stop}
}

// wsClient is a test client speaking the protocol.
type wsClient struct {
	t *testing.T
	c *websocket.Conn
}

func (r *wsRig) dial(opts ...func(*websocket.DialOptions)) *wsClient {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var do websocket.DialOptions
	for _, o := range opts {
		o(&do)
	}
	c, _, err := websocket.Dial(ctx, r.url, &do)
	if err != nil {
		r.t.Fatalf("dial: %v", err)
	}
	c.SetReadLimit(-1)
	r.t.Cleanup(func() { _ = c.CloseNow() })
	return &wsClient{t: r.t, c: c}
}

func (c *wsClient) sendRaw(s string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.c.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
		c.t.Fatalf("write %s: %v", s, err)
	}
}

func (c *wsClient) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(string(b))
}

// next reads one event.
func (c *wsClient) next() wsEvent {
	c.t.Helper()
	ev, err := c.read(10 * time.Second)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return ev
}

func (c *wsClient) read(timeout time.Duration) (wsEvent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, b, err := c.c.Read(ctx)
	if err != nil {
		return wsEvent{}, err
	}
	var ev wsEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		return wsEvent{}, fmt.Errorf("event %s: %w", b, err)
	}
	for _, k := range []string{`"seq":`, `"source":`, `"type":`} {
		if !strings.Contains(string(b), k) {
			return wsEvent{}, fmt.Errorf("event %s lacks %s", b, k)
		}
	}
	return ev, nil
}

// until reads events until one satisfies stop, returning all of them.
func (c *wsClient) until(stop func(wsEvent) bool) []wsEvent {
	c.t.Helper()
	var evs []wsEvent
	for {
		ev := c.next()
		evs = append(evs, ev)
		if stop(ev) {
			return evs
		}
	}
}

// untilDone reads until the n-th done event.
func (c *wsClient) untilDone(n int) []wsEvent {
	c.t.Helper()
	return c.until(func(ev wsEvent) bool {
		if ev.Type == "done" {
			n--
		}
		return n == 0
	})
}

// create attaches and returns the session acknowledgement.
func (c *wsClient) create(id string, start *int64) wsEvent {
	c.t.Helper()
	m := map[string]any{"type": "create"}
	if id != "" {
		m["session_id"] = id
	}
	if start != nil {
		m["start"] = *start
	}
	c.send(m)
	ev := c.next()
	if ev.Type != "session" || ev.SessionID == "" || ev.Seq != 0 {
		c.t.Fatalf("create answered %+v", ev)
	}
	return ev
}

func (c *wsClient) chat(msg, thinking string) {
	c.t.Helper()
	c.send(map[string]any{"type": "chat", "message": msg, "thinking": thinking})
}

// shape renders events as "type[:detail]" for comparison.
func wsShape(evs []wsEvent) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		s := e.Type
		switch e.Type {
		case "message_sent", "message_queued", "message_consumed":
			s += fmt.Sprintf(":%d:%s", e.MessageID, e.Content)
		case "message_dropped":
			s += fmt.Sprintf(":%d:%s:%s", e.MessageID, e.Content, e.Reason)
		case "chunk", "thinking":
			s += ":" + e.Content
		case "tool_execution":
			s += ":" + e.Phase + ":" + e.Message + ":" + e.Content
		case "done":
			s += ":" + e.StopReason
		case "error", "retry":
			s += ":" + e.Message
		case "suggestions":
			s += ":" + strings.Join(e.Suggestions, "|")
		}
		out = append(out, s)
	}
	return out
}

func wsCheckSeqs(t *testing.T, evs []wsEvent) {
	t.Helper()
	var last int64
	for _, e := range evs {
		if e.Seq == 0 {
			continue
		}
		if e.Seq < last {
			t.Fatalf("seq went back from %d to %d in %v", last, e.Seq, wsShape(evs))
		}
		last = e.Seq
	}
}

func TestWSChatEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		scripts  []llmtest.Script
		thinking string
		want     []string
		level    llm.ThinkingLevel
	}{
		{
			name:     "text",
			scripts:  []llmtest.Script{llmtest.Text("Hel", "lo")},
			thinking: "off",
			level:    llm.ThinkingNone,
			want:     []string{"message_sent:1:hi", "message_consumed:1:hi", "chunk:Hel", "chunk:lo", "done:end_turn"},
		},
		{
			name: "thinking",
			scripts: []llmtest.Script{{Blocks: []llmtest.Block{
				llmtest.ThinkingBlock("sig", "let me ", "see"), llmtest.TextBlock("ok")}}},
			thinking: "high",
			level:    llm.ThinkingHigh,
			want: []string{"message_sent:1:hi", "message_consumed:1:hi", "thinking:let me ", "thinking:see",
				"chunk:ok", "done:end_turn"},
		},
		{
			name: "tool",
			scripts: []llmtest.Script{
				{Blocks: []llmtest.Block{llmtest.ToolBlock("tu_1", "Echo", `{"text":`, `"x"}`)}},
				llmtest.Text("echoed"),
			},
			thinking: "low",
			level:    llm.ThinkingLow,
			want: []string{"message_sent:1:hi", "message_consumed:1:hi", `tool_execution:start:Echo:{"text":"x"}`,
				"tool_execution:result:Echo:echo x", "chunk:echoed", "done:end_turn"},
		},
		{
			name:    "model error",
			scripts: []llmtest.Script{{Status: 401, ErrorMessage: "invalid x-api-key"}},
			want:    []string{"message_sent:1:hi", "message_consumed:1:hi", "error:scripted: auth (HTTP 401): invalid x-api-key", "done:error"},
		},
		{
			name:    "retried model call",
			scripts: []llmtest.Script{{Status: 500, ErrorMessage: "overloaded"}, llmtest.Text("ok")},
			want:    []string{"message_sent:1:hi", "message_consumed:1:hi", "retry:scripted: server (HTTP 500): overloaded", "chunk:ok", "done:end_turn"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rig := newWSRig(t, wsRigOptions{}, tc.scripts...)
			c := rig.dial()
			ack := c.create("", nil)
			if !ack.Created || !strings.HasPrefix(ack.SessionID, "sess_") || ack.Start == nil || *ack.Start != 0 {
				t.Fatalf("ack %+v", ack)
			}
			c.chat("hi", tc.thinking)
			evs := c.untilDone(1)
			got := wsShape(evs)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("events\n got %q\nwant %q", got, tc.want)
			}
			wsCheckSeqs(t, evs)
			for _, e := range evs {
				wantSrc := map[string]string{"message_sent": "client", "message_consumed": "client", "chunk": "ai",
					"thinking": "ai", "tool_execution": "ai", "done": "ai", "error": "system", "retry": "system"}[e.Type]
				if e.Source != wantSrc {
					t.Errorf("%s has source %q, want %q", e.Type, e.Source, wantSrc)
				}
				if e.Type == "done" && !e.Done {
					t.Errorf("done without done:true")
				}
			}
			if tc.level != "" {
				reqs := rig.p.Requests()
				if len(reqs) == 0 || reqs[0].Thinking != tc.level {
					t.Fatalf("thinking %q reached the model as %+v", tc.thinking, reqs)
				}
			}
		})
	}
}

func TestWSQueuedMessagesConsumedInOrder(t *testing.T) {
	t.Parallel()
	slow := llmtest.Text("one-a", "one-b", "one-c")
	slow.Delay = 40 * time.Millisecond
	rig := newWSRig(t, wsRigOptions{}, slow, llmtest.Text("two"), llmtest.Text("three"))
	c := rig.dial()
	c.create("", nil)
	c.chat("first", "")
	c.chat("second", "")
	c.chat("third", "")
	evs := c.untilDone(3)
	wsCheckSeqs(t, evs)

	var consumed []string
	queued := map[string]bool{}
	for i, e := range evs {
		switch e.Type {
		case "message_consumed":
			consumed = append(consumed, e.Content)
		case "message_queued":
			queued[e.Content] = true
		case "chunk":
			// Every chunk belongs to the last consumed message.
			want := map[string]string{"one-a": "first", "one-b": "first", "one-c": "first", "two": "second", "three": "third"}[e.Content]
			if len(consumed) == 0 || consumed[len(consumed)-1] != want {
				t.Fatalf("chunk %q at %d after consuming %v: %v", e.Content, i, consumed, wsShape(evs))
			}
		}
	}
	if !slices.Equal(consumed, []string{"first", "second", "third"}) {
		t.Fatalf("consumed %v: %v", consumed, wsShape(evs))
	}
	if !queued["second"] || !queued["third"] || queued["first"] {
		t.Fatalf("queued %v: %v", queued, wsShape(evs))
	}
	// message_id is the seq of the message's message_sent event.
	ids := map[string]int64{}
	for _, e := range evs {
		if e.Type == "message_sent" {
			if e.MessageID != e.Seq {
				t.Fatalf("message_sent %+v: message_id is not its seq", e)
			}
			ids[e.Content] = e.MessageID
		}
		if e.Type == "message_consumed" && ids[e.Content] != e.MessageID {
			t.Fatalf("consumed %+v, sent as %d", e, ids[e.Content])
		}
	}
}

func TestWSStop(t *testing.T) {
	t.Parallel()
	rig := newWSRig(t, wsRigOptions{},
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("tu_1", "Block", `{"text":"x"}`)}},
		llmtest.Text("after"))
	c := rig.dial()
	c.create("", nil)
	c.chat("block", "")
	c.until(func(e wsEvent) bool { return e.Type == "tool_execution" && e.Phase == "start" })
	c.chat("queued behind the blocked turn", "")
	c.until(func(e wsEvent) bool { return e.Type == "message_queued" })
	c.send(map[string]string{"type": "stop"})
	evs := c.untilDone(1)
	if last := evs[len(evs)-1]; last.StopReason != "cancelled" {
		t.Fatalf("stop ended the turn with %+v: %v", last, wsShape(evs))
	}
	if !slices.ContainsFunc(wsShape(evs), func(s string) bool {
		return strings.HasPrefix(s, "message_dropped:") && strings.HasSuffix(s, ":queued behind the blocked turn:cancelled")
	}) {
		t.Fatalf("the queued message is not reported dropped: %v", wsShape(evs))
	}
	// The stop dropped the queued message; the next one is consumed as
	// itself.
	c.chat("next", "")
	evs = c.untilDone(1)
	got := wsShape(evs)
	if len(got) < 3 || !strings.HasPrefix(got[0], "message_sent:") || !strings.HasSuffix(got[0], ":next") ||
		got[1] != strings.Replace(got[0], "sent", "consumed", 1) || got[2] != "chunk:after" {
		t.Fatalf("after stop: %v", got)
	}
}

func TestWSPingPong(t *testing.T) {
	t.Parallel()
	rig := newWSRig(t, wsRigOptions{})
	c := rig.dial()
	for range 3 {
		c.send(map[string]string{"type": "ping"})
		if ev := c.next(); ev.Type != "pong" || ev.Seq != 0 || ev.Source != "system" {
			t.Fatalf("ping answered %+v", ev)
		}
	}
	// A client pong needs no answer: the next event answers the ping after it.
	c.send(map[string]string{"type": "pong"})
	c.send(map[string]string{"type": "ping"})
	if ev := c.next(); ev.Type != "pong" {
		t.Fatalf("got %+v", ev)
	}
}

func TestWSResume(t *testing.T) {
	t.Parallel()
	slow := llmtest.Text("a1", "a2", "a3", "a4")
	slow.Delay = 30 * time.Millisecond
	rig := newWSRig(t, wsRigOptions{}, slow, llmtest.Text("b1", "b2"))

	// The reference: everything, read by a client that never dropped.
	var full []wsEvent
	var session string
	{
		c := rig.dial()
		session = c.create("", nil).SessionID
		c.chat("first", "")
		c.chat("second", "")
		full = c.untilDone(2)
		_ = c.c.Close(websocket.StatusNormalClosure, "")
	}

	// Resuming from every position gives exactly the rest: no gap, no
	// duplicate, and the queue state (which message a turn consumes) is
	// rebuilt from before the position.
	for cut := range len(full) - 1 {
		start := full[cut].Seq
		c := rig.dial()
		ack := c.create(session, &start)
		if ack.Created || *ack.Start != start {
			t.Fatalf("resume ack %+v", ack)
		}
		rest := c.untilDone(2 - wsCountType(full[:cut+1], "done"))
		var want []wsEvent
		for _, e := range full {
			if e.Seq > start {
				want = append(want, e)
			}
		}
		if !slices.Equal(wsShape(rest), wsShape(want)) || !slices.EqualFunc(rest, want, func(a, b wsEvent) bool { return a.Seq == b.Seq }) {
			t.Fatalf("resume after %d:\n got %v\nwant %v", start, wsShape(rest), wsShape(want))
		}
		_ = c.c.Close(websocket.StatusNormalClosure, "")
	}
}

func wsCountType(evs []wsEvent, typ string) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func TestWSResumeMidTurn(t *testing.T) {
	t.Parallel()
	slow := llmtest.Text("a1", "a2", "a3", "a4", "a5", "a6")
	slow.Delay = 40 * time.Millisecond
	rig := newWSRig(t, wsRigOptions{}, slow, llmtest.Text("b1"))

	a := rig.dial()
	session := a.create("", nil).SessionID
	a.chat("first", "")
	a.chat("second", "")
	seen := a.until(func(e wsEvent) bool { return e.Type == "chunk" && e.Content == "a2" })
	// The connection drops in the middle of the turn (no close handshake).
	_ = a.c.CloseNow()
	var last int64
	for _, e := range seen {
		last = max(last, e.Seq)
	}
	b := rig.dial()
	b.create(session, &last)
	rest := b.untilDone(2)
	got := append(slices.Clone(seen), rest...)
	wsCheckSeqs(t, got)
	for i := 1; i < len(got); i++ {
		if got[i].Seq == got[i-1].Seq && got[i].Type == got[i-1].Type {
			t.Fatalf("duplicate %+v", got[i])
		}
	}
	want := []string{"message_sent:first", "message_consumed:first", "chunk:a1", "chunk:a2", "chunk:a3",
		"chunk:a4", "chunk:a5", "chunk:a6", "done:end_turn", "message_consumed:second", "chunk:b1", "done:end_turn"}
	ids := map[string]int64{}
	var filtered []string
	for _, e := range got {
		switch e.Type {
		case "message_sent":
			ids[e.Content] = e.MessageID
		case "message_consumed":
			if ids[e.Content] != e.MessageID {
				t.Fatalf("consumed %+v, sent as %d", e, ids[e.Content])
			}
		}
		// Where "second" arrived relative to the first turn's events is up
		// to the scheduler.
		if e.Content == "second" && e.Type != "message_consumed" {
			continue
		}
		s := e.Type + ":" + e.Content + e.StopReason
		filtered = append(filtered, s)
	}
	if !slices.Equal(filtered, want) {
		t.Fatalf("across the reconnect:\n got %v\nwant %v", wsShape(got), want)
	}
}

func TestWSCreate(t *testing.T) {
	t.Parallel()
	rig := newWSRig(t, wsRigOptions{}, llmtest.Text("x"))
	a := rig.dial()
	ack := a.create("my-session", nil)
	if !ack.Created || ack.SessionID != "my-session" {
		t.Fatalf("create with an unknown id: %+v", ack)
	}
	a.chat("hi", "")
	first := a.untilDone(1)

	// create is idempotent for the attached session: no replay, no new
	// session.
	a.send(map[string]any{"type": "create", "session_id": "my-session"})
	if ev := a.next(); ev.Type != "session" || ev.Created || ev.SessionID != "my-session" {
		t.Fatalf("repeated create: %+v", ev)
	}
	a.send(map[string]string{"type": "ping"})
	if ev := a.next(); ev.Type != "pong" {
		t.Fatalf("repeated create replayed %+v", ev)
	}

	// Another client attaching without start replays the session.
	b := rig.dial()
	if ack := b.create("my-session", nil); ack.Created {
		t.Fatalf("existing session reported created: %+v", ack)
	}
	if got := b.untilDone(1); !slices.Equal(wsShape(got), wsShape(first)) {
		t.Fatalf("replay %v, want %v", wsShape(got), wsShape(first))
	}
	// A start beyond the end is clamped to the end.
	big := int64(1000)
	if ack := b.create("my-session", &big); *ack.Start != first[len(first)-1].Seq {
		t.Fatalf("clamped start: %+v", ack)
	}

	// Seed 002's clients send numeric ids.
	c := rig.dial()
	c.sendRaw(`{"type":"create","session_id":42}`)
	if ev := c.next(); ev.SessionID != "42" || !ev.Created {
		t.Fatalf("numeric id: %+v", ev)
	}
	if s, err := rig.rt.GetSession(context.Background(), "42"); err != nil || s.ID != "42" {
		t.Fatalf("session 42: %+v %v", s, err)
	}
}

// TestWSCreateValidatesTheID: create accepts exactly the session ids POST
// /v1/sessions accepts, and creates nothing otherwise.
func TestWSCreateValidatesTheID(t *testing.T) {
	t.Parallel()
	rig := newWSRig(t, wsRigOptions{})
	c := rig.dial()
	for _, tc := range []struct {
		name, id string
		ok       bool
	}{
		{"slash", "a/b", false},
		{"CR LF", "a\r\nb", false},
		{"NUL", "a\x00b", false},
		{"space", "a b", false},
		{"20,000 characters", strings.Repeat("x", 20_000), false},
		{"129 characters", strings.Repeat("x", 129), false},
		{"leading dash", "-x", false},
		{"dot dot", "..", false},
		{"non-ASCII", "séance", false},
		{"128 characters", strings.Repeat("y", 128), true},
		{"punctuation inside", "a-b_c.d:e", true},
	} {
		raw, _ := json.Marshal(map[string]string{"type": "create", "session_id": tc.id})
		c.sendRaw(string(raw))
		ev := c.next()
		if tc.ok {
			if ev.Type != "session" || ev.SessionID != tc.id || !ev.Created {
				t.Errorf("%s: %s %s", tc.name, ev.Type, ev.Message)
			}
			continue
		}
		if ev.Type != "error" || ev.Code != errInvalidRequest || !strings.Contains(ev.Message, "session_id must be") {
			t.Errorf("%s: got %s (session %q, created %v), want the session id rule", tc.name, ev.Type, quote(ev.SessionID), ev.Created)
		}
		if _, err := rig.rt.GetSession(context.Background(), tc.id); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("%s: the session exists (%v)", tc.name, err)
		}
	}
	page, err := rig.rt.ListSessions(context.Background(), session.ListOptions{})
	if err != nil || len(page.Sessions) != 2 {
		t.Fatalf("%d sessions (%v), want the 2 valid ones", len(page.Sessions), err)
	}
}

// TestWSMessageFate replays, through a real connection, a log in which a
// cancel came between two queued turns: the runtime dropped the waiting
// messages with message_dropped, and the next message ran as itself.
func TestWSMessageFate(t *testing.T) {
	t.Parallel()
	rig := newWSRig(t, wsRigOptions{})
	ctx := context.Background()
	if _, err := rig.rt.CreateSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	var log []event.Event
	add := func(typ, data string) { log = append(log, event.Event{Type: typ, Data: json.RawMessage(data)}) }
	add("user_message", `{"text":"a"}`)
	add("user_message", `{"text":"b"}`)
	add("user_message", `{"text":"c"}`)
	add("message_consumed", `{"message_seq":1}`)
	add("text_delta", `{"text":"A"}`)
	add("done", `{"stop_reason":"end_turn"}`)
	add("message_dropped", `{"message_seq":2,"reason":"cancelled"}`)
	add("message_dropped", `{"message_seq":3,"reason":"cancelled"}`)
	add("user_message", `{"text":"d"}`)
	add("message_consumed", `{"message_seq":9}`)
	add("text_delta", `{"text":"D"}`)
	add("done", `{"stop_reason":"end_turn"}`)
	if _, err := rig.db.AppendEvents(ctx, "s", log...); err != nil {
		t.Fatal(err)
	}
	c := rig.dial()
	c.create("s", nil)
	got := wsShape(c.untilDone(2))
	want := []string{"message_sent:1:a", "message_sent:2:b", "message_queued:2:b", "message_sent:3:c", "message_queued:3:c",
		"message_consumed:1:a", "chunk:A", "done:end_turn", "message_dropped:2:b:cancelled", "message_dropped:3:c:cancelled",
		"message_sent:9:d", "message_consumed:9:d", "chunk:D", "done:end_turn"}
	if !slices.Equal(got, want) {
		t.Fatalf("\n got %v\nwant %v", got, want)
	}
}

func TestWSInvalidMessages(t *testing.T) {
	t.Parallel()
	rig := newWSRig(t, wsRigOptions{})
	c := rig.dial()
	tests := []struct {
		name, msg, code, contains string
		attach                    bool
	}{
		{"not json", `hello`, errInvalidRequest, "malformed JSON", false},
		{"truncated", `{"type":"ping"`, errInvalidRequest, "malformed JSON", false},
		{"array", `[1]`, errInvalidRequest, "JSON object", false},
		{"no type", `{}`, errInvalidRequest, `"type"`, false},
		{"unknown type", `{"type":"subscribe"}`, errInvalidRequest, "unknown message type", false},
		{"wrong type", `{"type":"create","start":"x"}`, errInvalidRequest, `"start"`, false},
		{"session id bool", `{"type":"create","session_id":true}`, errInvalidRequest, `"session_id"`, false},
		{"negative start", `{"type":"create","start":-1}`, errInvalidRequest, "start", false},
		{"chat before create", `{"type":"chat","message":"hi"}`, errInvalidRequest, "create first", false},
		{"stop before create", `{"type":"stop"}`, errInvalidRequest, "create first", false},
		{"empty message", `{"type":"chat","message":"  "}`, errInvalidRequest, "message is required", true},
		{"bad thinking", `{"type":"chat","message":"hi","thinking":"max"}`, errInvalidRequest, "thinking", true},
		{"too long", `{"type":"chat","message":"` + strings.Repeat("é", MaxPromptChars+1) + `"}`, errInvalidRequest, "100000", true},
		{"permission without id", `{"type":"permission","allow":true}`, errInvalidRequest, "request_id", true},
		{"permission without allow", `{"type":"permission","request_id":"perm_1"}`, errInvalidRequest, "allow", true},
		{"unknown permission", `{"type":"permission","request_id":"perm_1","allow":true}`, errNotFound, "perm_1", true},
	}
	attached := false
	for _, tc := range tests {
		if tc.attach && !attached {
			c.create("", nil)
			attached = true
		}
		c.sendRaw(tc.msg)
		ev := c.next()
		if ev.Type != "error" || ev.Source != "system" || ev.Seq != 0 || ev.Code != tc.code || !strings.Contains(ev.Message, tc.contains) {
			t.Errorf("%s: got %+v, want a %s error mentioning %q", tc.name, ev, tc.code, tc.contains)
		}
		// The connection stays usable.
		c.send(map[string]string{"type": "ping"})
		if ev := c.next(); ev.Type != "pong" {
			t.Fatalf("%s: then ping got %+v", tc.name, ev)
		}
	}
	// Nothing reached the runtime.
	if n := len(rig.p.Requests()); n != 0 {
		t.Fatalf("%d model requests", n)
	}
}

func TestWSPermission(t *testing.T) {
	t.Parallel()
	rig := newWSRig(t, wsRigOptions{},
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("tu_1", "Note", `{"text":"n1"}`)}},
		llmtest.Text("done writing"))
	c := rig.dial()
	c.create("", nil)
	c.chat("write", "")
	evs := c.until(func(e wsEvent) bool { return e.Type == "permission_request" })
	req := evs[len(evs)-1]
	if !strings.HasPrefix(req.ID, "perm_") || req.ToolName != "Note" || string(req.Input) != `{"text":"n1"}` ||
		req.Source != "system" || req.Seq == 0 || req.ToolUseID != "tu_1" {
		t.Fatalf("permission_request %+v", req)
	}
	c.send(map[string]any{"type": "permission", "request_id": req.ID, "allow": true})
	rest := c.untilDone(1)
	got := wsShape(rest)
	if !slices.Contains(got, "tool_execution:result:Note:noted n1") || !slices.Contains(got, "chunk:done writing") {
		t.Fatalf("after allowing: %v", got)
	}
	c.send(map[string]any{"type": "permission", "request_id": req.ID, "allow": false})
	if ev := c.next(); ev.Type != "error" || ev.Code != errConflict {
		t.Fatalf("second answer: %+v", ev)
	}
}

func TestWSAskUser(t *testing.T) {
	t.Parallel()
	// ask_user events come from the AskUserQuestion tool; the mapping is
	// checked on the translator with the payload the tool emits.
	var tr wsTranslator
	tr.apply(event.Event{Seq: 1, Type: "user_message", Data: json.RawMessage(`{"text":"q"}`)})
	tr.apply(event.Event{Seq: 2, Type: "message_consumed", Data: json.RawMessage(`{"message_seq":1}`)})
	out := tr.apply(event.Event{Seq: 3, Type: "ask_user",
		Data: json.RawMessage(`{"id":"tu_1","tool_name":"AskUserQuestion","payload":[{"question":"Which?","options":[]}]}`)})
	if len(out) != 1 || out[0].Type != "ask_user" || string(out[0].Questions) != `[{"question":"Which?","options":[]}]` || out[0].Source != "ai" {
		t.Fatalf("ask_user: %+v", out)
	}
}

// TestWSTranslatorQueue checks what a client is told about each message,
// on logs as the runtime writes them: message_consumed and message_dropped
// come one to one from the runtime's own events, whatever the turns around
// them look like.
func TestWSTranslatorQueue(t *testing.T) {
	t.Parallel()
	um := func(text string) (string, string) { return "user_message", `{"text":"` + text + `"}` }
	mc := func(seq int) (string, string) { return "message_consumed", fmt.Sprintf(`{"message_seq":%d}`, seq) }
	md := func(seq int, reason string) (string, string) {
		return "message_dropped", fmt.Sprintf(`{"message_seq":%d,"reason":%q}`, seq, reason)
	}
	ts := func(n int) (string, string) { return "turn_start", fmt.Sprintf(`{"turn_number":%d}`, n) }
	done := func(reason string) (string, string) { return "done", `{"stop_reason":"` + reason + `"}` }
	delta := func(s string) (string, string) { return "text_delta", `{"text":"` + s + `"}` }
	type ev struct{ typ, data string }
	e := func(typ, data string) ev { return ev{typ, data} }
	tests := []struct {
		name string
		log  []ev
		want []string
	}{
		{"idle then run", []ev{e(um("a")), e(mc(1)), e(ts(1)), e(delta("x")), e(done("end_turn"))},
			[]string{"message_sent:1:a", "message_consumed:1:a", "chunk:x", "done:end_turn"}},
		{"queued behind a run", []ev{e(um("a")), e(mc(1)), e(ts(1)), e(um("b")), e(done("end_turn")), e(mc(4)), e(ts(1)), e(done("end_turn"))},
			[]string{"message_sent:1:a", "message_consumed:1:a", "message_sent:4:b", "message_queued:4:b", "done:end_turn",
				"message_consumed:4:b", "done:end_turn"}},
		{"two before the first run starts", []ev{e(um("a")), e(um("b")), e(mc(1)), e(ts(1)), e(done("end_turn")), e(mc(2))},
			[]string{"message_sent:1:a", "message_sent:2:b", "message_queued:2:b", "message_consumed:1:a",
				"done:end_turn", "message_consumed:2:b"}},
		{"cancel drops the queue", []ev{e(um("a")), e(mc(1)), e(ts(1)), e(um("b")), e(md(4, "cancelled")), e(done("cancelled")),
			e(um("c")), e(mc(7))},
			[]string{"message_sent:1:a", "message_consumed:1:a", "message_sent:4:b", "message_queued:4:b",
				"message_dropped:4:b:cancelled", "done:cancelled", "message_sent:7:c", "message_consumed:7:c"}},
		// The cancel comes after a turn ended and before the next queued
		// one started: no turn is cancelled, the queue is dropped. The
		// next message is consumed as itself, not as a dropped one.
		{"cancel between two queued turns", []ev{e(um("a")), e(um("b")), e(um("c")), e(mc(1)), e(done("end_turn")),
			e(md(2, "cancelled")), e(md(3, "cancelled")), e(um("d")), e(mc(8)), e(done("end_turn"))},
			[]string{"message_sent:1:a", "message_sent:2:b", "message_queued:2:b", "message_sent:3:c", "message_queued:3:c",
				"message_consumed:1:a", "done:end_turn", "message_dropped:2:b:cancelled", "message_dropped:3:c:cancelled",
				"message_sent:8:d", "message_consumed:8:d", "done:end_turn"}},
		// A message sent after the cancel but before the cancelled turn's
		// done stays queued and runs.
		{"sent between a cancel and its done", []ev{e(um("a")), e(mc(1)), e(um("b")), e(md(3, "cancelled")), e(um("c")),
			e(done("cancelled")), e(mc(5)), e(done("end_turn"))},
			[]string{"message_sent:1:a", "message_consumed:1:a", "message_sent:3:b", "message_queued:3:b",
				"message_dropped:3:b:cancelled", "message_sent:5:c", "message_queued:5:c", "done:cancelled",
				"message_consumed:5:c", "done:end_turn"}},
		{"shutdown drops the queue", []ev{e(um("a")), e(mc(1)), e(um("b")), e(done("cancelled")), e(md(3, "shutting down"))},
			[]string{"message_sent:1:a", "message_consumed:1:a", "message_sent:3:b", "message_queued:3:b", "done:cancelled",
				"message_dropped:3:b:shutting down"}},
		{"run failing before its first model call", []ev{e(um("a")), e(mc(1)), e("error", `{"error":"no model"}`), e(done("error")),
			e(um("b")), e(mc(5))},
			[]string{"message_sent:1:a", "message_consumed:1:a", "error:no model", "done:error", "message_sent:5:b", "message_consumed:5:b"}},
		// A log written before turns were closed on restart: the crashed
		// turn has no done, and the message queued behind it no marker.
		{"crash mid-run", []ev{e(um("a")), e(mc(1)), e(ts(1)), e(um("b")), e(delta("x")),
			/* process restarts */ e(um("c")), e(um("d")), e(mc(6)), e(ts(1)), e(done("end_turn")), e(mc(7))},
			[]string{"message_sent:1:a", "message_consumed:1:a", "message_sent:4:b", "message_queued:4:b", "chunk:x",
				"message_sent:6:c", "message_queued:6:c", "message_sent:7:d", "message_queued:7:d",
				"message_consumed:6:c", "done:end_turn", "message_consumed:7:d"}},
		{"later model calls of a run", []ev{e(um("a")), e(mc(1)), e(ts(1)), e(ts(2)), e(done("end_turn"))},
			[]string{"message_sent:1:a", "message_consumed:1:a", "done:end_turn"}},
		{"suggestions after a turn", []ev{e(um("a")), e(mc(1)), e(done("end_turn")),
			e("suggestions", `{"suggestions":["Run the tests","Add a benchmark"]}`), e("suggestions", `{"suggestions":[]}`)},
			[]string{"message_sent:1:a", "message_consumed:1:a", "done:end_turn", "suggestions:Run the tests|Add a benchmark"}},
		{"unknown types are skipped", []ev{e("something_new", `{}`), e(um("a")), e(mc(2))},
			[]string{"message_sent:2:a", "message_consumed:2:a"}},
		{"a marker without its message", []ev{e(mc(7)), e(md(9, "cancelled")), e("message_consumed", `{}`)},
			[]string{"message_consumed:7:", "message_dropped:9::cancelled"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tr wsTranslator
			var got []wsEvent
			for i, x := range tc.log {
				got = append(got, tr.apply(event.Event{Seq: int64(i + 1), Type: x.typ, Data: json.RawMessage(x.data)})...)
			}
			if !slices.Equal(wsShape(got), tc.want) {
				t.Fatalf("\n got %v\nwant %v", wsShape(got), tc.want)
			}
			// Quiet replay up to any point, then the rest, gives the same.
			for cut := range tc.log {
				tr := wsTranslator{quietThrough: int64(cut + 1)}
				var rest []wsEvent
				for i, x := range tc.log {
					rest = append(rest, tr.apply(event.Event{Seq: int64(i + 1), Type: x.typ, Data: json.RawMessage(x.data)})...)
				}
				var want []wsEvent
				for _, e := range got {
					if e.Seq > int64(cut+1) {
						want = append(want, e)
					}
				}
				if !slices.Equal(wsShape(rest), wsShape(want)) {
					t.Fatalf("after %d: got %v, want %v", cut+1, wsShape(rest), wsShape(want))
				}
			}
		})
	}
}

// wsSmallBuffers makes the kernel hold little for a client that does not
// read, so the server's writes block quickly.
type wsSmallBuffers struct{ net.Listener }

func (l wsSmallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(32 << 10)
	}
	return c, err
}

func TestWSSlowClientDoesNotBlockTheTurn(t *testing.T) {
	t.Parallel()
	chunk := strings.Repeat("x", 8<<10)
	chunks := make([]string, 100) // 800 KB: far more than the socket buffers
	for i := range chunks {
		chunks[i] = fmt.Sprintf("%03d", i) + chunk
	}
	rig := newWSRig(t, wsRigOptions{listen: func(l net.Listener) net.Listener { return wsSmallBuffers{l} }},
		llmtest.Text(chunks...))
	c := rig.dial(func(o *websocket.DialOptions) {
		o.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(32 << 10)
			}
			return conn, err
		}}}
	})
	session := c.create("", nil).SessionID
	c.chat("flood me", "")

	// The client reads nothing while the turn runs to its end.
	r := rig.rt.Subscribe(session, 0)
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		ev, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("the turn did not finish while the client was not reading: %v", err)
		}
		if ev.Type == "done" {
			break
		}
	}
	evs := c.untilDone(1)
	var text strings.Builder
	for _, e := range evs {
		if e.Type == "chunk" {
			text.WriteString(e.Content)
		}
	}
	if text.String() != strings.Join(chunks, "") {
		t.Fatalf("got %d bytes of text, want %d", text.Len(), len(strings.Join(chunks, "")))
	}
}

func TestWSSlowClientIsDroppedAfterTheWriteTimeout(t *testing.T) {
	t.Parallel()
	chunks := make([]string, 100)
	for i := range chunks {
		chunks[i] = strings.Repeat("y", 8<<10)
	}
	rig := newWSRig(t, wsRigOptions{ws: wsOptions{WriteTimeout: 200 * time.Millisecond},
		listen: func(l net.Listener) net.Listener { return wsSmallBuffers{l} }}, llmtest.Text(chunks...))
	c := rig.dial(func(o *websocket.DialOptions) {
		o.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(32 << 10)
			}
			return conn, err
		}}}
	})
	c.create("", nil)
	c.chat("flood me", "")
	time.Sleep(time.Second)
	// What was buffered arrives, then the connection ends.
	for {
		_, err := c.read(5 * time.Second)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatal("the connection of a client that stopped reading was kept open")
			}
			return
		}
	}
}

func TestWSShutdownClosesGoingAway(t *testing.T) {
	t.Parallel()
	rig := newWSRig(t, wsRigOptions{})
	c := rig.dial()
	c.create("", nil)
	rig.stop()
	_, err := c.read(5 * time.Second)
	if s := websocket.CloseStatus(err); s != websocket.StatusGoingAway {
		t.Fatalf("read after shutdown: %v (status %v)", err, s)
	}
}

func TestWSKeepAlive(t *testing.T) {
	t.Parallel()
	rig := newWSRig(t, wsRigOptions{ws: wsOptions{KeepAlive: 100 * time.Millisecond}})
	pinged := make(chan struct{}, 16)
	c := rig.dial(func(o *websocket.DialOptions) {
		o.OnPingReceived = func(context.Context, []byte) bool {
			select {
			case pinged <- struct{}{}:
			default:
			}
			return true
		}
	})
	// Control frames are handled while the client reads.
	go func() { _, _ = c.read(10 * time.Second) }()
	for range 3 {
		select {
		case <-pinged:
		case <-time.After(5 * time.Second):
			t.Fatal("no keepalive pings")
		}
	}
}

func TestWSKeepAliveDropsADeadPeer(t *testing.T) {
	t.Parallel()
	rig := newWSRig(t, wsRigOptions{ws: wsOptions{KeepAlive: 50 * time.Millisecond}})
	c := rig.dial(func(o *websocket.DialOptions) {
		o.OnPingReceived = func(context.Context, []byte) bool { return false } // never answers
	})
	c.create("", nil)
	// The server gives up on the silent peer and closes.
	_, err := c.read(5 * time.Second)
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read: %v", err)
	}
}

func TestWSDeletedSession(t *testing.T) {
	t.Parallel()
	rig := newWSRig(t, wsRigOptions{})
	c := rig.dial()
	id := c.create("", nil).SessionID
	if err := rig.rt.DeleteSession(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if ev := c.next(); ev.Type != "error" || ev.Code != errNotFound {
		t.Fatalf("after delete: %+v", ev)
	}
	c.chat("hi", "")
	if ev := c.next(); ev.Type != "error" || ev.Code != errNotFound {
		t.Fatalf("chat after delete: %+v", ev)
	}
}

func TestWSNotAnUpgrade(t *testing.T) {
	t.Parallel()
	rig := newWSRig(t, wsRigOptions{})
	resp, err := http.Get("http" + strings.TrimPrefix(rig.url, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body errorBody
	if resp.StatusCode != http.StatusUpgradeRequired || json.Unmarshal(b, &body) != nil || body.Error.Type != errInvalidRequest {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

func TestWSOrigin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		allowed []string
		origin  string
		ok      bool
	}{
		{"no origin", nil, "", true},
		{"foreign origin", nil, "http://evil.example", false},
		{"configured origin", []string{"http://localhost:3000"}, "http://localhost:3000", true},
		{"other origin", []string{"http://localhost:3000"}, "http://localhost:5173", false},
		{"any", []string{"*"}, "http://evil.example", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rig := newWSRig(t, wsRigOptions{ws: wsOptions{OriginPatterns: tc.allowed}})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			h := http.Header{}
			if tc.origin != "" {
				h.Set("Origin", tc.origin)
			}
			c, resp, err := websocket.Dial(ctx, rig.url, &websocket.DialOptions{HTTPHeader: h})
			if c != nil {
				defer c.CloseNow()
			}
			if (err == nil) != tc.ok {
				status := 0
				if resp != nil {
					status = resp.StatusCode
				}
				t.Fatalf("dial: %v (status %d)", err, status)
			}
		})
	}
}

// TestWSThroughTheAPI runs the WebSocket behind the whole middleware chain:
// browsers cannot set headers on a WebSocket, so ?token= authenticates it.
func TestWSThroughTheAPI(t *testing.T) {
	t.Parallel()
	rig := newWSRig(t, wsRigOptions{api: &Config{BearerToken: "s3cret", CORSOrigins: []string{"http://localhost:5173/"}}},
		llmtest.Text("hello"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	url := rig.url + "/v1/ws"
	for _, tc := range []struct {
		name   string
		url    string
		header http.Header
		status int
	}{
		{"no token", url, nil, http.StatusUnauthorized},
		{"wrong token", url + "?token=nope", nil, http.StatusForbidden},
		{"foreign origin", url + "?token=s3cret", http.Header{"Origin": {"http://evil.example"}}, http.StatusForbidden},
	} {
		c, resp, err := websocket.Dial(ctx, tc.url, &websocket.DialOptions{HTTPHeader: tc.header})
		if err == nil {
			_ = c.CloseNow()
			t.Fatalf("%s: connected", tc.name)
		}
		if resp == nil || resp.StatusCode != tc.status {
			t.Fatalf("%s: %v %+v", tc.name, err, resp)
		}
	}

	rig.url = url + "?token=s3cret"
	c := rig.dial(func(o *websocket.DialOptions) {
		o.HTTPHeader = http.Header{"Origin": {"http://localhost:5173"}}
	})
	c.create("", nil)
	c.chat("hi", "")
	if got := wsShape(c.untilDone(1)); !slices.Equal(got, []string{"message_sent:1:hi", "message_consumed:1:hi", "chunk:hello", "done:end_turn"}) {
		t.Fatalf("events %v", got)
	}
	bearer := rig.dial(func(o *websocket.DialOptions) {
		o.HTTPHeader = http.Header{"Authorization": {"Bearer s3cret"}}
	})
	bearer.send(map[string]string{"type": "ping"})
	if ev := bearer.next(); ev.Type != "pong" {
		t.Fatalf("with the header: %+v", ev)
	}

	// Server.Close ends the connections cleanly.
	rig.stop()
	if _, err := c.read(5 * time.Second); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("after Close: %v", err)
	}
}
