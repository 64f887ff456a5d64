package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/llm/llmtest"
)

// deltas is a script streaming n text pieces.
func deltas(n int, delay time.Duration) llmtest.Script {
	chunks := make([]string, n)
	for i := range chunks {
		chunks[i] = fmt.Sprintf("w%d ", i)
	}
	return llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(chunks...)}, Delay: delay}
}

// contiguous checks that evs are the seqs first, first+1, ... and returns
// the last.
func contiguous(t *testing.T, evs []sseEvent, first int64) int64 {
	t.Helper()
	checkSeqs(t, evs, first)
	return first + int64(len(evs)) - 1
}

func TestEventsReplayAndResume(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "r"}, http.StatusCreated)
	a.fake.Push(deltas(10, 0))
	full := a.openSSE("POST", "/v1/sessions/r/messages", map[string]any{"prompt": "go"}).readUntilDone()
	last := contiguous(t, full, 1)

	// Read a few, drop the connection, resume as EventSource does: the
	// same URL (after=0 and all) plus Last-Event-ID.
	c := a.openSSE("GET", "/v1/sessions/r/events?after=0", nil)
	var got []sseEvent
	for range 4 {
		ev, err := c.next()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	c.close()
	c = a.openSSE("GET", "/v1/sessions/r/events?after=0", nil, "Last-Event-ID", got[3].ID)
	got = append(got, c.readUntil("done")...)
	if contiguous(t, got, 1) != last {
		t.Fatalf("resumed stream ends at %s, want %d", got[len(got)-1].ID, last)
	}
	for i := range got {
		if string(got[i].Data) != string(full[i].Data) || got[i].Event != full[i].Event {
			t.Fatalf("frame %d differs: %+v vs %+v", i, got[i], full[i])
		}
	}

	// ?after alone, and the position errors.
	evs := a.openSSE("GET", "/v1/sessions/r/events?after=5", nil).readUntil("done")
	contiguous(t, evs, 6)
	for _, tc := range []struct{ query, header, msg string }{
		{"?after=abc", "", "after"},
		{"?after=-1", "", "after"},
		{"?after=1.5", "", "after"},
		{"?after=99999999999999999999", "", "after"},
		{"", "x", "Last-Event-ID"},
		{"?after=1", "-3", "Last-Event-ID"},
		{fmt.Sprintf("?after=%d", last+1), "", "past the session's last event"},
	} {
		var h []string
		if tc.header != "" {
			h = []string{"Last-Event-ID", tc.header}
		}
		msg := decodeErr(t, a.do("GET", "/v1/sessions/r/events"+tc.query, nil, h...), 400, errInvalidRequest)
		if !strings.Contains(msg, tc.msg) {
			t.Errorf("%s %s: message %q", tc.query, tc.header, msg)
		}
	}
}

// TestEventsResumeLive drops a follower in the middle of a running turn and
// resumes it: no gap, no duplicate.
func TestEventsResumeLive(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "live"}, http.StatusCreated)
	a.fake.Push(deltas(30, 5*time.Millisecond))

	c := a.openSSE("GET", "/v1/sessions/live/events", nil)
	turn := make(chan []sseEvent, 1)
	go func() {
		resp := a.do("POST", "/v1/sessions/live/messages", `{"prompt":"go"}`)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		turn <- nil
	}()
	var got []sseEvent
	for len(got) < 8 {
		ev, err := c.next()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	c.close()
	time.Sleep(30 * time.Millisecond) // the turn moves on meanwhile
	c = a.openSSE("GET", "/v1/sessions/live/events", nil, "Last-Event-ID", got[len(got)-1].ID)
	got = append(got, c.readUntil("done")...)
	contiguous(t, got, 1)
	if got[0].Event != "user_message" || len(got) != 1+1+1+30+1+1+1 {
		t.Fatalf("events %s", eventTypes(got))
	}
	<-turn
}

// TestManyReaders: 50 clients follow one session live and all get the same
// sequence.
func TestManyReaders(t *testing.T) {
	t.Parallel()
	const readers = 50
	a := newAPI(t, apiOptions{})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "fan"}, http.StatusCreated)
	a.fake.Push(deltas(100, 0))

	conns := make([]*sseConn, readers)
	for i := range conns {
		conns[i] = a.openSSE("GET", "/v1/sessions/fan/events", nil)
	}
	results := make([][]sseEvent, readers)
	errs := make([]error, readers)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			for {
				ev, err := c.next()
				if err != nil {
					errs[i] = err
					return
				}
				results[i] = append(results[i], ev)
				if ev.Event == "done" {
					return
				}
			}
		})
	}
	turn := a.openSSE("POST", "/v1/sessions/fan/messages", map[string]any{"prompt": "go"}).readUntilDone()
	wg.Wait()
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("reader %d: %v", i, errs[i])
		}
		if len(results[i]) != len(turn) {
			t.Fatalf("reader %d got %d events, the turn had %d", i, len(results[i]), len(turn))
		}
		for j := range turn {
			if results[i][j].ID != turn[j].ID || string(results[i][j].Data) != string(turn[j].Data) {
				t.Fatalf("reader %d frame %d: %+v, want %+v", i, j, results[i][j], turn[j])
			}
		}
	}
}

// TestRestart stops the server mid-turn (the turn ends with done,
// cancelled, and its stream closes cleanly), starts a new one on the same
// database, resumes the events where they were, and carries on the
// conversation with its history.
func TestRestart(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	a1 := newAPI(t, apiOptions{fake: fake})
	a1.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "dur"}, http.StatusCreated)
	fake.Push(llmtest.Text("The first answer."))
	first := a1.openSSE("POST", "/v1/sessions/dur/messages", map[string]any{"prompt": "first question"}).readUntilDone()
	n1 := contiguous(t, first, 1)

	// A slow second turn, interrupted by the shutdown.
	fake.Push(deltas(500, 10*time.Millisecond))
	c := a1.openSSE("POST", "/v1/sessions/dur/messages", map[string]any{"prompt": "second question"})
	c.readUntil("text_delta")
	var second []sseEvent
	var streamErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			ev, err := c.next()
			if err != nil {
				streamErr = err
				return
			}
			second = append(second, ev)
		}
	})
	a1.close()
	wg.Wait()
	if !errors.Is(streamErr, io.EOF) {
		t.Fatalf("the turn stream did not end cleanly on shutdown: %v", streamErr)
	}
	if len(second) == 0 || second[len(second)-1].Event != "done" || second[len(second)-1].field("stop_reason") != "cancelled" {
		t.Fatalf("interrupted turn ends with %s", eventTypes(second))
	}
	n2, _ := strconv.ParseInt(second[len(second)-1].ID, 10, 64)

	a2 := newAPI(t, apiOptions{fake: fake, dbPath: a1.path})
	evs := a2.openSSE("GET", "/v1/sessions/dur/events?after=2", nil).readUntil("done")
	if contiguous(t, evs, 3) != n1 {
		t.Fatalf("replay after restart ends at %s, want %d", evs[len(evs)-1].ID, n1)
	}
	m := a2.doJSON("GET", "/v1/sessions/dur", nil, http.StatusOK)
	if m["last_seq"] != float64(n2) {
		t.Fatalf("last_seq %v after restart, want %d", m["last_seq"], n2)
	}

	// A follower from the last event gets the next turn without a gap.
	follow := a2.openSSE("GET", "/v1/sessions/dur/events", nil, "Last-Event-ID", strconv.FormatInt(n2, 10))
	fake.Push(llmtest.Text("The third answer."))
	third := a2.openSSE("POST", "/v1/sessions/dur/messages", map[string]any{"prompt": "third question"}).readUntilDone()
	contiguous(t, third, n2+1)
	followed := follow.readUntil("done")
	contiguous(t, followed, n2+1)

	body := string(fake.LastRequest().Body)
	for _, want := range []string{"first question", "The first answer.", "second question", "third question"} {
		if !strings.Contains(body, want) {
			t.Fatalf("the model request after the restart lacks %q: %s", want, body)
		}
	}
}

func TestKeepalive(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{keepalive: 20 * time.Millisecond})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "idle"}, http.StatusCreated)
	resp := a.do("GET", "/v1/sessions/idle/events", nil)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	beats := 0
	for beats < 3 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		switch line {
		case ": keepalive\n":
			beats++
		case "\n":
		default:
			t.Fatalf("unexpected line %q on an idle stream", line)
		}
	}
}

// TestStreamsEnd: deleting a session ends its followers; Close ends every
// stream cleanly.
func TestStreamsEnd(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "gone"}, http.StatusCreated)
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "stays"}, http.StatusCreated)
	gone := a.openSSE("GET", "/v1/sessions/gone/events", nil)
	stays := a.openSSE("GET", "/v1/sessions/stays/events", nil)
	a.doJSON("DELETE", "/v1/sessions/gone", nil, http.StatusOK)
	if _, err := gone.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("follower of a deleted session: %v", err)
	}
	a.s.Close()
	if _, err := stays.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("follower after Close: %v", err)
	}
}
