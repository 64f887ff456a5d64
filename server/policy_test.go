package server

import (
	"strings"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
)

func TestServerPermissions(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	got := a.doJSON("GET", "/v1/settings/permissions", nil, 200)["permissions"].(map[string]any)
	if got["defaultMode"] != "default" {
		t.Fatalf("permissions = %v", got)
	}
	msg := decodeErr(t, a.do("PUT", "/v1/settings/permissions", `{"permissions":{"allow":["Bash(git:*x)"]}}`), 400, errInvalidRequest)
	if !strings.Contains(msg, "allow entry 1") {
		t.Fatalf("message %q does not name the rule", msg)
	}
	msg = decodeErr(t, a.do("PUT", "/v1/settings/permissions", `{"defaultMode":"bypassPermissions"}`), 403, errPermission)
	if !strings.Contains(msg, "bypass") {
		t.Fatalf("message %q", msg)
	}
	decodeErr(t, a.do("PUT", "/v1/settings/permissions", `{"allow":"write_note"}`), 400, errInvalidRequest)
	resp := a.do("PATCH", "/v1/settings/permissions", `{}`)
	if allow := resp.Header.Get("Allow"); allow != "GET, PUT, OPTIONS" {
		t.Fatalf("Allow = %q", allow)
	}
	decodeErr(t, resp, 405, errInvalidRequest)

	// A server-wide deny: the model's call is refused without asking.
	a.doJSON("PUT", "/v1/settings/permissions", map[string]any{"deny": []string{"write_note"}, "allow": []string{"write_note"}}, 200)
	a.fake.Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_1", "write_note", `{"text":"x"}`)}},
		llmtest.Text("ok"),
	)
	c := a.openSSE("POST", "/v1/agent/run", map[string]any{"prompt": "note x"})
	sid := c.resp.Header.Get("X-Session-ID")
	evs := c.readUntilDone()
	var denied bool
	for _, ev := range evs {
		if ev.Event == "permission_request" {
			t.Fatal("a denied call asked a person")
		}
		if ev.Event == "tool_result" && ev.field("denied") == true && strings.Contains(ev.field("output").(string), "write_note") {
			denied = true
		}
	}
	if !denied || len(a.notes.written()) != 0 {
		t.Fatalf("events %s, notes %v", eventTypes(evs), a.notes.written())
	}

	// The audit trail has the decision, readable per session.
	entries := a.doJSON("GET", "/v1/audit?session_id="+sid, nil, 200)["entries"].([]any)
	if len(entries) != 1 {
		t.Fatalf("audit = %v", entries)
	}
	e := entries[0].(map[string]any)
	if e["outcome"] != "blocked" || e["tool_name"] != "write_note" || e["session_id"] != sid || !strings.Contains(e["reason"].(string), "denies") {
		t.Fatalf("entry = %v", e)
	}
	if n := a.doJSON("GET", "/v1/audit?session_id=nobody", nil, 200)["count"]; n != float64(0) {
		t.Fatalf("count = %v", n)
	}
	if n := a.doJSON("GET", "/v1/audit?since=2999-01-01T00:00:00Z", nil, 200)["count"]; n != float64(0) {
		t.Fatalf("since in the future: count = %v", n)
	}
	decodeErr(t, a.do("GET", "/v1/audit?since=yesterday", nil), 400, errInvalidRequest)
	decodeErr(t, a.do("GET", "/v1/audit?limit=0", nil), 400, errInvalidRequest)
}

func TestSessionPermissions(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "s1"}, 201)
	decodeErr(t, a.do("GET", "/v1/sessions/nope/permissions", nil), 404, errNotFound)
	decodeErr(t, a.do("PUT", "/v1/sessions/nope/permissions", `{"allow":["write_note"]}`), 404, errNotFound)
	decodeErr(t, a.do("PUT", "/v1/sessions/s1/permissions", `{"ask":["Bash(rm:*x)"]}`), 400, errInvalidRequest)
	decodeErr(t, a.do("PUT", "/v1/sessions/s1/permissions", `{"defaultMode":"bypass"}`), 403, errPermission)
	a.doJSON("PUT", "/v1/sessions/s1/permissions", map[string]any{"allow": []string{"write_note"}}, 200)
	got := a.doJSON("GET", "/v1/sessions/s1/permissions", nil, 200)
	if allow := got["permissions"].(map[string]any)["allow"].([]any); len(allow) != 1 || allow[0] != "write_note" {
		t.Fatalf("permissions = %v", got)
	}
	// The session's allow rule lets the tool run without a question.
	a.fake.Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_1", "write_note", `{"text":"milk"}`)}},
		llmtest.Text("ok"),
	)
	c := a.openSSE("POST", "/v1/sessions/s1/messages", map[string]any{"prompt": "note milk"})
	for _, ev := range c.readUntilDone() {
		if ev.Event == "permission_request" {
			t.Fatal("the session's allow rule was ignored")
		}
	}
	if got := a.notes.written(); len(got) != 1 || got[0] != "milk" {
		t.Fatalf("notes = %v", got)
	}
	// Another session is not affected: it asks.
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "s2"}, 201)
	a.fake.Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_2", "write_note", `{"text":"eggs"}`)}},
		llmtest.Text("ok"),
	)
	c2 := a.openSSE("POST", "/v1/sessions/s2/messages", map[string]any{"prompt": "note eggs"})
	c2.readUntil("permission_request")
	a.doJSON("POST", "/v1/sessions/s2/cancel", nil, 200)
	c2.readUntilDone()
}

func TestPluginHookEndpoints(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	if n := a.doJSON("GET", "/v1/plugin-hooks", nil, 200)["count"]; n != float64(0) {
		t.Fatalf("count = %v", n)
	}
	decodeErr(t, a.do("POST", "/v1/plugin-hooks/ghost/trust", nil), 404, errNotFound)
	decodeErr(t, a.do("DELETE", "/v1/plugin-hooks/ghost/trust", nil), 404, errNotFound)
}
