package session

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool/mcp"
)

// checkContent holds an accepted answer to the requested schema before
// the MCP server sees it.
func TestCheckContent(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{
		"name":{"type":"string","minLength":2,"maxLength":5},
		"age":{"type":"integer","minimum":0,"maximum":150},
		"score":{"type":"number"},
		"ok":{"type":"boolean"},
		"colour":{"type":"string","enum":["red","blue"]},
		"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]}},
		"required":["name"]}`)
	for _, tt := range []struct {
		name    string
		schema  json.RawMessage
		content string
		ok      bool
	}{
		{"all fields", schema, `{"name":"Ada","age":36,"score":1.5,"ok":true,"colour":"red","size":"l"}`, true},
		{"required only", schema, `{"name":"Ada"}`, true},
		{"required missing", schema, `{"age":3}`, false},
		{"no content", schema, `null`, false},
		{"unknown field", schema, `{"name":"Ada","x":1}`, false},
		{"string too short", schema, `{"name":"A"}`, false},
		{"string too long", schema, `{"name":"Adelaide"}`, false},
		{"string as number", schema, `{"name":5}`, false},
		{"integer not whole", schema, `{"name":"Ada","age":1.5}`, false},
		{"integer out of range", schema, `{"name":"Ada","age":151}`, false},
		{"integer as string", schema, `{"name":"Ada","age":"3"}`, false},
		{"number as bool", schema, `{"name":"Ada","score":true}`, false},
		{"boolean as string", schema, `{"name":"Ada","ok":"yes"}`, false},
		{"enum miss", schema, `{"name":"Ada","colour":"green"}`, false},
		{"oneOf by title", schema, `{"name":"Ada","size":"Large"}`, false},
		{"object for a string", schema, `{"name":{"first":"Ada"}}`, false},
		{"url mode, nothing", nil, `null`, true},
		{"url mode, content", nil, `{"a":1}`, false},
		{"malformed schema", json.RawMessage(`{"properties":[]}`), `{}`, false},
	} {
		var content map[string]any
		if err := json.Unmarshal([]byte(tt.content), &content); err != nil {
			t.Fatal(err)
		}
		if err := checkContent(tt.schema, content); (err == nil) != tt.ok {
			t.Errorf("%s: checkContent = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

// A request made outside a running turn but within the session (a
// background sub-agent's, after its turn ended) is recorded in the
// session's log and answered there; one made for a deleted incarnation of
// the session is declined, and never reaches a new session of that name.
func TestElicitOutsideATurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "w.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rt, err := New(Config{Store: db, Models: scriptedModels{llmtest.NewScripted("scripted")}, DefaultModel: "s:m", PermissionTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Shutdown(ctx)
	if _, err := rt.CreateSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	l, err := rt.session("s")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan mcp.ElicitResponse, 1)
	go func() {
		resp, _ := rt.Elicit(withLive(ctx, l), mcp.ElicitRequest{Server: "f", Message: "Name?", Mode: "form",
			Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
		got <- resp
	}()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r := rt.Subscribe("s", 0)
	ev, err := r.Next(wctx)
	r.Close()
	if err != nil || ev.Type != event.ElicitationRequest {
		t.Fatalf("first event %+v, %v; want elicitation_request", ev, err)
	}
	var d event.ElicitationRequestData
	if err := json.Unmarshal(ev.Data, &d); err != nil || d.Server != "f" || d.Message != "Name?" {
		t.Fatalf("elicitation_request %s", ev.Data)
	}
	if err := rt.AnswerElicitation("s", d.ID, mcp.ElicitResponse{Action: mcp.ActionAccept, Content: map[string]any{"name": "Ada"}}); err != nil {
		t.Fatal(err)
	}
	if resp := <-got; resp.Action != mcp.ActionAccept || resp.Content["name"] != "Ada" {
		t.Fatalf("answer %+v", resp)
	}
	rt.release(l)

	// The old incarnation, deleted: declined at once, and the session
	// made again under the same name holds no question.
	if err := rt.DeleteSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.CreateSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	resp, err := rt.Elicit(withLive(ctx, l), mcp.ElicitRequest{Server: "f", Message: "Name?", Mode: "form"})
	if err != nil || resp.Action != mcp.ActionDecline {
		t.Fatalf("a deleted incarnation's request: %+v, %v; want decline", resp, err)
	}
	l2, err := rt.session("s")
	if err != nil {
		t.Fatal(err)
	}
	defer rt.release(l2)
	if p := rt.approvals.Pending(l2.scope); len(p) != 0 {
		t.Fatalf("the new session holds %v", p)
	}
}
