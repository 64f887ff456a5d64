package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/subagent"
	"github.com/weft-run/weft/task"
	"github.com/weft-run/weft/tool"
)

// fakeModels resolves every model spec to one Anthropic fake.
type fakeModels struct{ p llm.Provider }

func (m fakeModels) Resolve(string) (llm.Provider, llm.ModelInfo, error) {
	return m.p, llm.ModelInfo{ID: "claude-sonnet-4-5", Provider: "anthropic", MaxOutputTokens: 1000}, nil
}

// TestSubagentEventsOverSSEAndWebSocket: a turn whose model calls Agent
// streams subagent_start, subagent_event and subagent_end with seed 000's
// fields (the event flat), and the WebSocket translation shows them as
// tool_execution updates carrying the sub-agent's id.
func TestSubagentEventsOverSSEAndWebSocket(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	fake.Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_agent", "Agent",
			`{"description":"find notes","prompt":"look for notes","subagent_type":"general"}`)}},
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_echo", "Echo", `{"text":"hi"}`)}},
		llmtest.Text("found the notes"),
		llmtest.Text("the sub-agent found the notes"),
	)
	a := newSubagentAPI(t, fake)
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "s"}, http.StatusCreated)
	evs := a.openSSE("POST", "/v1/sessions/s/messages", map[string]any{"prompt": "go"}).readUntilDone()
	var start, end map[string]any
	var inner []map[string]any
	for _, ev := range evs {
		var m map[string]any
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			t.Fatalf("%s: %v", ev.Event, err)
		}
		switch ev.Event {
		case "subagent_start":
			start = m
		case "subagent_event":
			inner = append(inner, m)
		case "subagent_end":
			end = m
		}
	}
	if start == nil || end == nil || len(inner) == 0 {
		t.Fatalf("events: %s", eventTypes(evs))
	}
	id, _ := start["subagent_id"].(string)
	cwd, _ := start["cwd"].(string)
	if !strings.HasPrefix(id, "sa_") || start["description"] != "find notes" || start["model"] != "claude-sonnet-4-5" ||
		cwd == "" || start["start_time_ms"] == nil {
		t.Fatalf("subagent_start = %v", start)
	}
	if ms, _ := start["start_time_ms"].(float64); time.Since(time.UnixMilli(int64(ms))) > time.Minute {
		t.Fatalf("start_time_ms %v", start["start_time_ms"])
	}
	if end["subagent_id"] != id || end["status"] != "completed" || end["result"] != "found the notes" || end["duration_ms"] == nil {
		t.Fatalf("subagent_end = %v", end)
	}
	if _, ok := end["error"]; ok {
		t.Fatalf("a completed subagent_end has an error field: %v", end)
	}
	var toolUse map[string]any
	for _, m := range inner {
		if m["subagent_id"] != id || m["event_type"] == nil || m["data"] != nil {
			t.Fatalf("subagent_event is not the flat merge: %v", m)
		}
		if m["event_type"] == "tool_use" {
			toolUse = m
		}
	}
	if toolUse == nil || toolUse["id"] != "call_echo" || toolUse["tool_name"] != "Echo" || toolUse["parent_tool_use_id"] != "call_agent" {
		t.Fatalf("the sub-agent's tool_use as subagent_event: %v", toolUse)
	}
	// The sub-agent's own events are not the parent's: its tool call is
	// only inside subagent_event.
	for _, ev := range evs {
		if ev.Event == "tool_use" && strings.Contains(string(ev.Data), "call_echo") {
			t.Fatalf("the sub-agent's tool_use leaked into the parent's events: %s", ev.Data)
		}
	}

	// The WebSocket's translation of the same events.
	var tr wsTranslator
	var phases []string
	for _, ev := range evs {
		seq, _ := strconv.ParseInt(ev.ID, 10, 64)
		for _, w := range tr.apply(session.Event{Seq: seq, Type: ev.Event, Data: ev.Data}) {
			if w.SubagentID != "" {
				if w.Type != "tool_execution" || w.SubagentID != id || w.ParentTool != "call_agent" {
					t.Fatalf("ws event %+v", w)
				}
				phases = append(phases, w.Phase+":"+w.Message)
			}
		}
	}
	if got := strings.Join(phases, " "); got != "subagent_start:Agent start:Echo result:Echo subagent_end:Agent" {
		t.Fatalf("ws sub-agent updates: %s", got)
	}
}

// newSubagentAPI is the API over a runtime whose tools are Echo, Note
// (which asks for approval) and the sub-agent tools, on the Anthropic fake.
func newSubagentAPI(t *testing.T, fake *llmtest.Server) *api {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "w.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tasks := task.NewRegistry(nil, task.Options{})
	mgr := subagent.New(subagent.Config{Tasks: tasks})
	echo := tool.Func("Echo", "echoes", tool.Meta{ReadOnly: true, Effect: tool.EffectRead},
		func(_ context.Context, in wsNoteIn, _ *tool.Call) (tool.Result, error) {
			return tool.Text("echo " + in.Text), nil
		})
	note := tool.Func("Note", "writes a note", tool.Meta{Effect: tool.EffectWrite},
		func(_ context.Context, in wsNoteIn, _ *tool.Call) (tool.Result, error) {
			return tool.Text("noted " + in.Text), nil
		})
	reg, err := tool.NewRegistry(append([]tool.Tool{echo, note}, mgr.Tools()...)...)
	if err != nil {
		t.Fatal(err)
	}
	p := anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL, APIKey: "k"}})
	rt, err := session.New(session.Config{Store: db, Models: fakeModels{p}, DefaultModel: "anthropic:claude-sonnet-4-5", Tools: reg,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Runtime: rt, Tools: reg.Specs(), RateLimit: -1, Logger: slog.New(slog.DiscardHandler), Version: "test"})
	srv := httptest.NewServer(s.Handler())
	a := &api{t: t, url: srv.URL, srv: srv, s: s, rt: rt, db: db, fake: fake, logs: &logBuffer{}, notes: &noteTool{}}
	t.Cleanup(func() {
		mgr.Close()
		_ = tasks.Close(context.Background())
		a.close()
	})

	return a
}

// TestSubagentPermissionRequestCarriesOrigin: a sub-agent's call that needs
// approval asks through the session's permission_request event with its
// origin; the client's denial reaches the sub-agent's model.
func TestSubagentPermissionRequestCarriesOrigin(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	fake.Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_agent", "Agent",
			`{"description":"take notes","prompt":"note it","subagent_type":"general"}`)}},
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_note", "Note", `{"text":"hi"}`)}},
		llmtest.Text("I was not allowed"),
		llmtest.Text("ok"),
	)
	a := newSubagentAPI(t, fake)
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "s"}, http.StatusCreated)
	c := a.openSSE("POST", "/v1/sessions/s/messages", map[string]any{"prompt": "go"})
	evs := c.readUntil("permission_request")
	var start struct {
		SubagentID string `json:"subagent_id"`
	}
	for _, ev := range evs {
		if ev.Event == "subagent_start" {
			_ = json.Unmarshal(ev.Data, &start)
		}
	}
	var req struct {
		ID       string `json:"id"`
		ToolName string `json:"tool_name"`
		ToolUse  string `json:"tool_use_id"`
		Origin   struct {
			SubagentID string `json:"subagent_id"`
			Parent     string `json:"parent_tool_use_id"`
			Type       string `json:"subagent_type"`
		} `json:"origin"`
	}
	if err := json.Unmarshal(evs[len(evs)-1].Data, &req); err != nil {
		t.Fatal(err)
	}
	if req.ToolName != "Note" || req.ToolUse != "call_note" || req.Origin.SubagentID == "" || req.Origin.SubagentID != start.SubagentID ||
		req.Origin.Parent != "call_agent" || req.Origin.Type != "general" {
		t.Fatalf("permission_request = %s", evs[len(evs)-1].Data)
	}
	a.doJSON("POST", "/v1/sessions/s/permissions/"+req.ID, map[string]any{"allow": false, "reason": "no notes today"}, http.StatusOK)
	c.readUntilDone()
	if reqs := fake.Requests(); len(reqs) != 4 || !strings.Contains(string(reqs[2].Body), "no notes today") {
		t.Fatalf("the denial did not reach the sub-agent's model (%d requests)", len(reqs))
	}
}
