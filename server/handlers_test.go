package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{token: "secret", rateLimit: 1})
	for i := 0; i < 3; i++ { // neither auth nor the rate limit applies
		m := a.doJSON("GET", "/v1/health", nil, http.StatusOK)
		if m["status"] != "ok" {
			t.Fatalf("health: %v", m)
		}
		if _, err := time.Parse(time.RFC3339, m["timestamp"].(string)); err != nil {
			t.Fatalf("timestamp: %v", err)
		}
	}
}

func TestTools(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	m := a.doJSON("GET", "/v1/tools", nil, http.StatusOK)
	tools := m["tools"].([]any)
	if m["count"] != float64(1) || len(tools) != 1 {
		t.Fatalf("tools: %v", m)
	}
	tl := tools[0].(map[string]any)
	if tl["name"] != "write_note" || tl["description"] != "Writes a note." {
		t.Fatalf("tool: %v", tl)
	}
	schema := tl["input_schema"].(map[string]any)
	if schema["type"] != "object" || schema["properties"].(map[string]any)["text"] == nil {
		t.Fatalf("input_schema: %v", schema)
	}
}

// checkSeqs checks that the frames' ids are consecutive seqs from first.
func checkSeqs(t *testing.T, evs []sseEvent, first int64) {
	t.Helper()
	for i, ev := range evs {
		if want := strconv.FormatInt(first+int64(i), 10); ev.ID != want {
			t.Fatalf("frame %d (%s) has id %q, want %s; stream %s", i, ev.Event, ev.ID, want, eventTypes(evs))
		}
	}
}

func TestRun(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("Hello", ", ", "world")},
		Usage: llm.Usage{InputTokens: 12, OutputTokens: 3}})
	c := a.openSSE("POST", "/v1/agent/run", map[string]any{"prompt": "say hello", "system_prompt": "be brief"})
	sid := c.resp.Header.Get("X-Session-ID")
	if !regexp.MustCompile(`^sess_[0-9a-f]{12}$`).MatchString(sid) {
		t.Fatalf("X-Session-ID %q", sid)
	}
	evs := c.readUntilDone()
	if got, want := eventTypes(evs), "metadata user_message message_consumed turn_start text_delta text_delta text_delta text turn_end done"; got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	if evs[0].ID != "0" || evs[0].field("session_id") != sid {
		t.Fatalf("first frame %+v does not carry the session %s", evs[0], sid)
	}
	checkSeqs(t, evs[1:], 1)
	if evs[1].field("text") != "say hello" {
		t.Fatalf("user_message %s", evs[1].Data)
	}
	var text strings.Builder
	for _, ev := range evs {
		if ev.Event == "text_delta" {
			text.WriteString(ev.field("text").(string))
		}
	}
	if text.String() != "Hello, world" {
		t.Fatalf("deltas %q", text.String())
	}
	done := evs[len(evs)-1]
	if done.field("stop_reason") != "end_turn" || done.field("turn_count") != float64(1) ||
		done.field("total_input_tokens") != float64(12) || done.field("total_output_tokens") != float64(3) {
		t.Fatalf("done %s", done.Data)
	}
	req := a.fake.LastRequest()
	if !strings.Contains(string(req.Body), "be brief") || !strings.Contains(string(req.Body), `"gpt-4.1"`) {
		t.Fatalf("model request lacks the system prompt or model: %s", req.Body)
	}
	// The run's session is an ordinary one: recorded, and resumable.
	// The runtime saves the conversation just after appending done, so
	// the count may lag the stream by a moment.
	var m map[string]any
	waitFor(t, "the run's messages to be saved", func() bool {
		m = a.doJSON("GET", "/v1/sessions/"+sid, nil, http.StatusOK)
		return m["message_count"] == float64(2)
	})
	if m["last_seq"] != float64(len(evs)-1) {
		t.Fatalf("session after the run: %v", m)
	}
}

// TestRunStopReasons: done carries end_turn, stop_sequence or max_turns.
func TestRunStopReasons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    map[string]any
		scripts []llmtest.Script
		want    string
	}{
		{"end_turn", map[string]any{"prompt": "hi"}, []llmtest.Script{llmtest.Text("hi")}, "end_turn"},
		{"stop_sequence", map[string]any{"prompt": "count", "stop_sequences": []string{"5"}, "model": "anthropic:claude-sonnet-4-5"},
			[]llmtest.Script{{Blocks: []llmtest.Block{llmtest.TextBlock("1 2 3 4 ")}, StopReason: llm.StopSequence, StopSequence: "5"}},
			"stop_sequence"},
		{"max_turns", map[string]any{"prompt": "note it", "max_turns": 1},
			[]llmtest.Script{{Blocks: []llmtest.Block{llmtest.ToolBlock("call_1", "write_note", `{"text":"x"}`)}}},
			"max_turns"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			anth := llmtest.NewAnthropic(t)
			a := newAPI(t, apiOptions{mode: "bypass", anthropic: anth})
			fake := a.fake
			if tc.body["model"] != nil {
				fake = anth // the request's model picks the provider
			}
			fake.Push(tc.scripts...)
			evs := a.openSSE("POST", "/v1/agent/run", tc.body).readUntilDone()
			if got := evs[len(evs)-1].field("stop_reason"); got != tc.want {
				t.Fatalf("stop_reason %v, want %s (%s)", got, tc.want, eventTypes(evs))
			}
			if tc.name == "stop_sequence" {
				body := string(fake.LastRequest().Body)
				if !strings.Contains(body, `"stop_sequences":["5"]`) || !strings.Contains(body, `"claude-sonnet-4-5"`) {
					t.Fatalf("stop sequences or model not sent: %s", body)
				}
			}
		})
	}
}

// TestRunWithoutModel: a server with no model configured still serves; the
// turn reports why it cannot run.
func TestRunWithoutModel(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{noModel: true})
	evs := a.openSSE("POST", "/v1/agent/run", map[string]any{"prompt": "hi"}).readUntilDone()
	if got := eventTypes(evs); got != "metadata user_message message_consumed error done" {
		t.Fatalf("events %q", got)
	}
	if msg, _ := evs[3].field("error").(string); !strings.Contains(msg, "no model") {
		t.Fatalf("error event %s", evs[3].Data)
	}
	if evs[4].field("stop_reason") != "error" {
		t.Fatalf("done %s", evs[4].Data)
	}
}

func TestTurnRequestErrors(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	sid := a.doJSON("POST", "/v1/sessions", nil, http.StatusCreated)["session_id"].(string)
	big := `{"prompt":"` + strings.Repeat("a", MaxBodyBytes) + `"}`
	tests := []struct {
		name   string
		body   any
		status int
		msg    string
	}{
		{"no body", nil, 400, "prompt is required"},
		{"empty object", `{}`, 400, "prompt is required"},
		{"blank prompt", `{"prompt":"  \n"}`, 400, "prompt is required"},
		{"null", `null`, 400, "prompt is required"},
		{"prompt too long", map[string]any{"prompt": strings.Repeat("é", MaxPromptChars+1)}, 400, "100,000"},
		{"malformed", `{"prompt":`, 400, "malformed JSON"},
		{"syntax error", `{"prompt" "x"}`, 400, "malformed JSON at byte"},
		{"trailing data", `{"prompt":"x"} {"prompt":"y"}`, 400, "after the request object"},
		{"array body", `["x"]`, 400, "must be a JSON object"},
		{"prompt not a string", `{"prompt":5}`, 400, `"prompt" must be a string, not number`},
		{"max_turns not an integer", `{"prompt":"x","max_turns":"3"}`, 400, `"max_turns" must be an integer`},
		{"max_turns fraction", `{"prompt":"x","max_turns":1.5}`, 400, `"max_turns" must be an integer`},
		{"max_turns negative", `{"prompt":"x","max_turns":-1}`, 400, "max_turns"},
		{"stop_sequences not an array", `{"prompt":"x","stop_sequences":"END"}`, 400, "stop_sequences"},
		{"empty stop sequence", `{"prompt":"x","stop_sequences":[""]}`, 400, "stop_sequences[0]"},
		{"bad thinking", `{"prompt":"x","thinking":"max"}`, 400, "thinking"},
		{"too large", big, 413, "10 MB"},
	}
	for _, path := range []string{"/v1/agent/run", "/v1/sessions/" + sid + "/messages"} {
		for _, tc := range tests {
			t.Run(path+"/"+tc.name, func(t *testing.T) {
				typ := errInvalidRequest
				msg := decodeErr(t, a.do("POST", path, tc.body), tc.status, typ)
				if !strings.Contains(msg, tc.msg) {
					t.Fatalf("message %q does not mention %q", msg, tc.msg)
				}
			})
		}
	}
	// Nothing above ran a turn or left a session behind.
	if n := len(a.fake.Requests()); n != 0 {
		t.Fatalf("%d model requests", n)
	}
	if got := a.doJSON("GET", "/v1/sessions", nil, 200)["sessions"].([]any); len(got) != 1 {
		t.Fatalf("sessions: %v", got)
	}
}

// TestBodyTooLargeChunked: the 10 MB bound holds without a Content-Length.
func TestBodyTooLargeChunked(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte(`{"session_id":"`))
		chunk := []byte(strings.Repeat("x", 1<<20))
		for i := 0; i < 11; i++ {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		_, _ = pw.Write([]byte(`"}`))
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", a.url+"/v1/sessions", pr)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	pr.CloseWithError(io.ErrClosedPipe)
	decodeErr(t, resp, http.StatusRequestEntityTooLarge, errInvalidRequest)
}

func TestSessions(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})

	created := a.doJSON("POST", "/v1/sessions", nil, http.StatusCreated)
	gen := created["session_id"].(string)
	if !regexp.MustCompile(`^sess_[0-9a-f]{12}$`).MatchString(gen) {
		t.Fatalf("generated id %q", gen)
	}
	if _, err := time.Parse(time.RFC3339Nano, created["created_at"].(string)); err != nil {
		t.Fatalf("created_at: %v", err)
	}
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "my-session"}, http.StatusCreated)

	errCases := []struct {
		name, method, path string
		body               any
		status             int
		typ                string
	}{
		{"duplicate", "POST", "/v1/sessions", `{"session_id":"my-session"}`, 409, errConflict},
		{"bad id", "POST", "/v1/sessions", `{"session_id":"a/b"}`, 400, errInvalidRequest},
		{"id too long", "POST", "/v1/sessions", `{"session_id":"` + strings.Repeat("a", 129) + `"}`, 400, errInvalidRequest},
		{"id wrong type", "POST", "/v1/sessions", `{"session_id":7}`, 400, errInvalidRequest},
		{"get unknown", "GET", "/v1/sessions/nope", nil, 404, errNotFound},
		{"delete unknown", "DELETE", "/v1/sessions/nope", nil, 404, errNotFound},
		{"messages unknown", "POST", "/v1/sessions/nope/messages", `{"prompt":"hi"}`, 404, errNotFound},
		{"events unknown", "GET", "/v1/sessions/nope/events", nil, 404, errNotFound},
		{"cancel unknown", "POST", "/v1/sessions/nope/cancel", nil, 404, errNotFound},
		{"permission unknown session", "POST", "/v1/sessions/nope/permissions/perm_1", `{"allow":true}`, 404, errNotFound},
		{"list bad limit", "GET", "/v1/sessions?limit=0", nil, 400, errInvalidRequest},
		{"list limit too big", "GET", "/v1/sessions?limit=501", nil, 400, errInvalidRequest},
		{"list bad cursor", "GET", "/v1/sessions?cursor=garbage", nil, 400, errInvalidRequest},
		{"unknown path", "GET", "/v1/nothing", nil, 404, errNotFound},
		{"wrong method", "PUT", "/v1/sessions/my-session", nil, 405, errInvalidRequest},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			resp := a.do(tc.method, tc.path, tc.body)
			allow := resp.Header.Get("Allow")
			decodeErr(t, resp, tc.status, tc.typ)
			if tc.status == 405 && allow != "GET, PATCH, DELETE, OPTIONS" {
				t.Fatalf("Allow %q", allow)
			}
		})
	}

	got := a.doJSON("GET", "/v1/sessions/my-session", nil, http.StatusOK)
	if got["session_id"] != "my-session" || got["message_count"] != float64(0) || got["created_at"] == nil {
		t.Fatalf("get: %v", got)
	}

	// Pagination: newest first, every session exactly once.
	for i := 0; i < 5; i++ {
		a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": fmt.Sprintf("page-%d", i)}, http.StatusCreated)
	}
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
		m := a.doJSON("GET", "/v1/sessions?limit=3&cursor="+cursor, nil, http.StatusOK)
		for _, s := range m["sessions"].([]any) {
			seen = append(seen, s.(map[string]any)["session_id"].(string))
		}
		next, _ := m["next_cursor"].(string)
		if (next != "") != m["has_more"].(bool) {
			t.Fatalf("has_more disagrees with next_cursor: %v", m)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if len(seen) != 7 || seen[0] != "page-4" || seen[6] != gen {
		t.Fatalf("listed %v", seen)
	}

	if m := a.doJSON("DELETE", "/v1/sessions/my-session", nil, http.StatusOK); m["status"] != "deleted" {
		t.Fatalf("delete: %v", m)
	}
	decodeErr(t, a.do("GET", "/v1/sessions/my-session", nil), 404, errNotFound)
	// The id is free again.
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "my-session"}, http.StatusCreated)
}

// TestMessagesCarryHistory: the second turn of a session sends the first
// to the model; GET shows the message count.
func TestMessagesCarryHistory(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "chat"}, http.StatusCreated)
	a.fake.Push(llmtest.Text("The capital is Paris."), llmtest.Text("About 2.1 million."))

	first := a.openSSE("POST", "/v1/sessions/chat/messages", map[string]any{"prompt": "capital of France?"}).readUntilDone()
	if first[0].Event != "user_message" || first[0].ID != "1" {
		t.Fatalf("first turn starts with %+v", first[0])
	}
	checkSeqs(t, first, 1)
	second := a.openSSE("POST", "/v1/sessions/chat/messages", map[string]any{"prompt": "population?"}).readUntilDone()
	checkSeqs(t, second, int64(len(first)+1))

	body := string(a.fake.LastRequest().Body)
	for _, want := range []string{"capital of France?", "The capital is Paris.", "population?"} {
		if !strings.Contains(body, want) {
			t.Fatalf("second model request lacks %q: %s", want, body)
		}
	}
	waitFor(t, "message_count 4", func() bool {
		return a.doJSON("GET", "/v1/sessions/chat", nil, 200)["message_count"] == float64(4)
	})
}

// TestPermissionFlow: a tool that is not read-only asks in default mode;
// the answer over HTTP lets it run (or not); a second answer conflicts.
func TestPermissionFlow(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{true, false} {
		t.Run(fmt.Sprintf("allow=%v", allow), func(t *testing.T) {
			t.Parallel()
			a := newAPI(t, apiOptions{})
			a.fake.Push(
				llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_1", "write_note", `{"text":`, `"buy milk"}`)}},
				llmtest.Text("Done."),
			)
			c := a.openSSE("POST", "/v1/agent/run", map[string]any{"prompt": "note: buy milk"})
			sid := c.resp.Header.Get("X-Session-ID")
			evs := c.readUntil("permission_request")
			pr := evs[len(evs)-1]
			rid, _ := pr.field("id").(string)
			if !strings.HasPrefix(rid, "perm_") || pr.field("tool_name") != "write_note" ||
				pr.field("input").(map[string]any)["text"] != "buy milk" || pr.field("message") == "" {
				t.Fatalf("permission_request %s", pr.Data)
			}
			if len(a.notes.written()) != 0 {
				t.Fatal("the tool ran before the answer")
			}
			base := "/v1/sessions/" + sid + "/permissions/"
			decodeErr(t, a.do("POST", base+"perm_unknown", `{"allow":true}`), 404, errNotFound)
			decodeErr(t, a.do("POST", base+rid, `{}`), 400, errInvalidRequest)
			decodeErr(t, a.do("POST", base+rid, `{"allow":"yes"}`), 400, errInvalidRequest)
			if m := a.doJSON("POST", base+rid, map[string]any{"allow": allow, "reason": "ok by me"}, 200); m["status"] != "ok" {
				t.Fatalf("answer: %v", m)
			}
			decodeErr(t, a.do("POST", base+rid, `{"allow":true}`), 409, errConflict)

			rest := c.readUntilDone()
			var result sseEvent
			for _, ev := range rest {
				if ev.Event == "tool_result" {
					result = ev
				}
			}
			if result.Event == "" {
				t.Fatalf("no tool_result in %s", eventTypes(rest))
			}
			if allow {
				if result.field("is_error") != false || result.field("output") != "noted: buy milk" {
					t.Fatalf("tool_result %s", result.Data)
				}
				if got := a.notes.written(); len(got) != 1 || got[0] != "buy milk" {
					t.Fatalf("notes %v", got)
				}
			} else {
				if result.field("denied") != true || result.field("is_error") != true {
					t.Fatalf("tool_result %s", result.Data)
				}
				if len(a.notes.written()) != 0 {
					t.Fatal("a denied tool ran")
				}
			}
			// After the turn, the request is answered (409), not unknown.
			decodeErr(t, a.do("POST", base+rid, `{"allow":true}`), 409, errConflict)
		})
	}
}

// TestCancel: cancelling a running turn ends its stream with done
// (cancelled); cancelling an idle session says so.
func TestCancel(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "slow"}, http.StatusCreated)
	if m := a.doJSON("POST", "/v1/sessions/slow/cancel", nil, 200); m["status"] != "not_running" {
		t.Fatalf("idle cancel: %v", m)
	}
	a.fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(strings.Split(strings.Repeat("word ", 200), " ")...)},
		Delay: 20 * time.Millisecond})
	c := a.openSSE("POST", "/v1/sessions/slow/messages", map[string]any{"prompt": "talk slowly"})
	c.readUntil("text_delta")
	if m := a.doJSON("POST", "/v1/sessions/slow/cancel", nil, 200); m["status"] != "cancelled" {
		t.Fatalf("cancel: %v", m)
	}
	evs := c.readUntilDone()
	if got := evs[len(evs)-1].field("stop_reason"); got != "cancelled" {
		t.Fatalf("done after cancel: %v (%s)", got, eventTypes(evs))
	}
}

// TestQueuedTurns: a message sent while a turn runs waits for it; its
// stream carries only its own turn. A cancel drops it: its stream says so
// and ends.
func TestQueuedTurns(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "q"}, http.StatusCreated)
	a.fake.Push(deltas(20, 5*time.Millisecond), llmtest.Text("second answer"), deltas(200, 10*time.Millisecond))

	first := a.openSSE("POST", "/v1/sessions/q/messages", map[string]any{"prompt": "first"})
	first.readUntil("turn_start")
	second := a.openSSE("POST", "/v1/sessions/q/messages", map[string]any{"prompt": "second"})
	firstEvs := first.readUntilDone()
	secondEvs := second.readUntilDone()
	if got := eventTypes(secondEvs); got != "user_message message_consumed turn_start text_delta text turn_end done" {
		t.Fatalf("queued turn's stream: %s", got)
	}
	firstDone, _ := strconv.ParseInt(firstEvs[len(firstEvs)-1].ID, 10, 64)
	consumed, _ := strconv.ParseInt(secondEvs[1].ID, 10, 64)
	if consumed <= firstDone || secondEvs[1].field("message_seq") != mustFloat(secondEvs[0].ID) {
		t.Fatalf("the queued turn starts at %d, before the first ends at %d: %s", consumed, firstDone, secondEvs[1].Data)
	}
	contiguous(t, secondEvs[1:], consumed)
	if secondEvs[len(secondEvs)-1].field("text") != "second answer" {
		t.Fatalf("done %s", secondEvs[len(secondEvs)-1].Data)
	}

	third := a.openSSE("POST", "/v1/sessions/q/messages", map[string]any{"prompt": "third, slow"})
	third.readUntil("text_delta")
	dropped := a.openSSE("POST", "/v1/sessions/q/messages", map[string]any{"prompt": "never runs"})
	if ev, err := dropped.next(); err != nil || ev.Event != "user_message" {
		t.Fatalf("queued message: %+v %v", ev, err)
	}
	a.doJSON("POST", "/v1/sessions/q/cancel", nil, http.StatusOK)
	evs := dropped.readUntil("message_dropped")
	if ev, err := dropped.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("the dropped message's stream goes on: %+v %v", ev, err)
	}
	if len(evs) != 1 || evs[0].field("reason") != "cancelled" {
		t.Fatalf("dropped message's stream: %s %s", eventTypes(evs), evs[len(evs)-1].Data)
	}
	if got := third.readUntilDone(); got[len(got)-1].field("stop_reason") != "cancelled" {
		t.Fatalf("cancelled turn ends with %s", got[len(got)-1].Data)
	}
}

func mustFloat(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(err)
	}
	return f
}

// TestDisconnectDoesNotStopTheTurn: the client of a turn stream goes away;
// the turn runs to its end and is recorded.
func TestDisconnectDoesNotStopTheTurn(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("one ", "two ", "three ", "four")},
		Delay: 30 * time.Millisecond})
	c := a.openSSE("POST", "/v1/agent/run", map[string]any{"prompt": "count"})
	sid := c.resp.Header.Get("X-Session-ID")
	c.readUntil("text_delta")
	c.close()

	// A new reader from the start sees the whole turn, done included.
	evs := a.openSSE("GET", "/v1/sessions/"+sid+"/events?after=0", nil).readUntil("done")
	checkSeqs(t, evs, 1)
	done := evs[len(evs)-1]
	if done.field("stop_reason") != "end_turn" || done.field("text") != "one two three four" {
		t.Fatalf("done %s", done.Data)
	}
}

// TestShuttingDown: once the runtime shuts down, new turns get 503.
func TestShuttingDown(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "s"}, http.StatusCreated)
	if err := a.rt.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	resp := a.do("POST", "/v1/sessions/s/messages", `{"prompt":"hi"}`)
	if resp.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	decodeErr(t, resp, http.StatusServiceUnavailable, errInternal)
}

// TestDecodeJSONMessages pins the wording clients see for type errors.
func TestDecodeJSONMessages(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"prompt":true}`, `field "prompt" must be a string, not bool`},
		{`{"stop_sequences":[1]}`, `must be a string, not number`},
		{`"x"`, `the request body must be a JSON object, not string`},
		{`{"prompt":"x"`, `malformed JSON: the body ends in the middle of a value`},
		{`{"prompt":"x"}x`, `malformed JSON: unexpected data after the request object`},
		{`{"prompt":"x","unknown":1}`, `unknown field "unknown"`},
		{`{"Prompt ":"x"}`, `unknown field "Prompt "`},
	}
	for _, tc := range tests {
		var q turnRequest
		err := decodeJSON(strings.NewReader(tc.in), &q)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("decodeJSON(%s) = %v, want %q", tc.in, err, tc.want)
		}
	}
	var q turnRequest
	if err := decodeJSON(strings.NewReader(`{"prompt":"x","PROMPT":"y"}`), &q); err != nil || q.Prompt != "y" {
		// encoding/json matches names case-insensitively; that is not an
		// unknown field.
		t.Errorf("case-insensitive names: %v %q", err, q.Prompt)
	}
}
