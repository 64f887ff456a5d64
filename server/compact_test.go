package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
)

// TestCompactEndpoint: POST /v1/sessions/{id}/compact summarises the
// conversation with the given instructions; the compaction is an event
// in the session's log; GET .../messages is the compacted view and
// ?all=true the whole history (the summarised messages and a marker); a
// restart keeps the compacted state, which the next turn's model sees; a
// running turn is 409, an unknown session 404; rewinding to before the
// compaction restores the messages it replaced.
func TestCompactEndpoint(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "chat"}, http.StatusCreated)
	a.fake.Push(llmtest.Text("Paris."), llmtest.Text("Berlin."), llmtest.Text("Rome."), llmtest.Text("Madrid."))
	for _, p := range []string{"capital of France?", "capital of Germany?", "capital of Italy?", "capital of Spain?"} {
		a.openSSE("POST", "/v1/sessions/chat/messages", map[string]any{"prompt": p}).readUntilDone()
	}
	a.fake.Push(llmtest.Text("## Goal\nCAPITALS-SUMMARY"))
	m := a.doJSON("POST", "/v1/sessions/chat/compact", `{"instructions": "keep every capital"}`, http.StatusOK)
	cs, _ := m["compactions"].([]any)
	if len(cs) != 1 {
		t.Fatalf("compact: %v", m)
	}
	c := cs[0].(map[string]any)
	if c["level"] != "summary" || c["trigger"] != "manual" || c["model"] != "gpt-4.1" {
		t.Fatalf("compaction %v", c)
	}
	if body := string(a.fake.LastRequest().Body); !strings.Contains(body, "keep every capital") || !strings.Contains(body, "Paris.") {
		t.Fatalf("summary request: %.400s", body)
	}
	view := a.doJSON("GET", "/v1/sessions/chat/messages", nil, http.StatusOK)
	all := a.doJSON("GET", "/v1/sessions/chat/messages?all=true", nil, http.StatusOK)
	vb, _ := json.Marshal(view["messages"])
	ab, _ := json.Marshal(all["messages"])
	if !strings.Contains(string(vb), "CAPITALS-SUMMARY") || strings.Contains(string(vb), "Paris.") {
		t.Fatalf("view: %s", vb)
	}
	if !strings.Contains(string(ab), "Paris.") || !strings.Contains(string(ab), `"role":"compaction"`) || len(all["messages"].([]any)) != 9 {
		t.Fatalf("all: %s", ab)
	}
	evs := a.openSSE("GET", "/v1/sessions/chat/events?after=0", nil).readUntil("compaction")
	if last := evs[len(evs)-1]; last.field("level") != "summary" {
		t.Fatalf("compaction event %s", last.Data)
	}

	a.close()
	a2 := newAPI(t, apiOptions{fake: a.fake, dbPath: a.path})
	a.fake.Push(llmtest.Text("Lisbon."))
	a2.openSSE("POST", "/v1/sessions/chat/messages", map[string]any{"prompt": "capital of Portugal?"}).readUntilDone()
	body := string(a.fake.LastRequest().Body)
	if !strings.Contains(body, "CAPITALS-SUMMARY") || strings.Contains(body, "Paris.") || !strings.Contains(body, "capital of France?") {
		t.Fatalf("the request after the restart: %s", body)
	}

	a2.doJSON("POST", "/v1/sessions/nope/compact", nil, http.StatusNotFound)
	a2.doJSON("GET", "/v1/sessions/nope/messages", nil, http.StatusNotFound)
	a.fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(strings.Split(strings.Repeat("slow ", 100), " ")...)}, Delay: 20e6})
	cl := a2.openSSE("POST", "/v1/sessions/chat/messages", map[string]any{"prompt": "talk"})
	cl.readUntil("text_delta")
	a2.doJSON("POST", "/v1/sessions/chat/compact", nil, http.StatusConflict)
	a2.doJSON("POST", "/v1/sessions/chat/cancel", nil, http.StatusOK)
	cl.readUntilDone()

	// Rewinding to before the compaction's marker restores what it
	// replaced.
	a2.doJSON("POST", "/v1/sessions/chat/rewind", `{"messages": 8}`, http.StatusOK)
	view = a2.doJSON("GET", "/v1/sessions/chat/messages", nil, http.StatusOK)
	vb, _ = json.Marshal(view["messages"])
	if !strings.Contains(string(vb), "Paris.") || strings.Contains(string(vb), "CAPITALS-SUMMARY") || len(view["messages"].([]any)) != 8 {
		t.Fatalf("view after rewinding before the compaction: %s", vb)
	}
}
