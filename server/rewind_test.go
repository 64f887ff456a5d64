package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
)

// TestRewindEndpoint: POST /v1/sessions/{id}/rewind cuts the conversation
// back, by seq or by message count; the next turn's model sees only what
// is left; the event log goes on (session_rewound, seqs increasing); bad
// positions are 400, an unknown session 404, a running turn 409.
func TestRewindEndpoint(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "chat"}, http.StatusCreated)
	a.fake.Push(llmtest.Text("Paris."), llmtest.Text("Berlin."), llmtest.Text("Rome."))
	first := a.openSSE("POST", "/v1/sessions/chat/messages", map[string]any{"prompt": "capital of France?"}).readUntilDone()
	second := a.openSSE("POST", "/v1/sessions/chat/messages", map[string]any{"prompt": "capital of Germany?"}).readUntilDone()
	// Undo the second turn: back to the seq of the first turn's done.
	to := first[len(first)-1].ID
	m := a.doJSON("POST", "/v1/sessions/chat/rewind", fmt.Sprintf(`{"to_seq": %s}`, to), http.StatusOK)
	if m["messages"] != float64(2) || m["removed"] != float64(2) {
		t.Fatalf("rewind: %v", m)
	}
	lastSeq := mustFloat(second[len(second)-1].ID)
	if m["seq"] != lastSeq+1 {
		t.Fatalf("rewind seq %v, want %v (the log is append-only)", m["seq"], lastSeq+1)
	}
	if got := a.doJSON("GET", "/v1/sessions/chat", nil, http.StatusOK); got["message_count"] != float64(2) || got["last_seq"] != lastSeq+1 {
		t.Fatalf("session after the rewind: %v", got)
	}
	third := a.openSSE("POST", "/v1/sessions/chat/messages", map[string]any{"prompt": "capital of Italy?"}).readUntilDone()
	if third[0].ID != fmt.Sprint(lastSeq+2) {
		t.Fatalf("the next turn starts at seq %s, want %v", third[0].ID, lastSeq+2)
	}
	body := string(a.fake.LastRequest().Body)
	if strings.Contains(body, "Germany") || !strings.Contains(body, "France") || !strings.Contains(body, "Italy") {
		t.Fatalf("the model request after the rewind: %s", body)
	}
	a.doJSON("POST", "/v1/sessions/chat/rewind", `{"messages": 0}`, http.StatusOK)
	for _, bad := range []string{`{}`, `{"messages": 1, "to_seq": 1}`, `{"messages": 9}`, `{"to_seq": 1000}`, `{"messages": "two"}`} {
		a.doJSON("POST", "/v1/sessions/chat/rewind", bad, http.StatusBadRequest)
	}
	a.doJSON("POST", "/v1/sessions/nope/rewind", `{"messages": 0}`, http.StatusNotFound)

	// While a turn runs: 409.
	a.fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(strings.Split(strings.Repeat("slow ", 100), " ")...)}, Delay: 20e6})
	c := a.openSSE("POST", "/v1/sessions/chat/messages", map[string]any{"prompt": "talk"})
	c.readUntil("text_delta")
	a.doJSON("POST", "/v1/sessions/chat/rewind", `{"messages": 0}`, http.StatusConflict)
	a.doJSON("POST", "/v1/sessions/chat/cancel", nil, http.StatusOK)
	c.readUntilDone()
}
