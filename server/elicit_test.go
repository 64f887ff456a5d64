package server

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/mcp"
)

// elicitingMCP serves, on loopback, an MCP server whose read-only tool
// "ask" asks the person who they are and answers with the action and the
// content it got; it returns the server's URL.
func elicitingMCP(t *testing.T) string {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "asker", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Who are you?", RequestedSchema: json.RawMessage(
				`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"]}`)})
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(res.Content)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Action + " " + string(b)}}}, nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil), ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// withMCP connects the MCP server at url as "f", answering its requests
// for input through the session service, as weft serve does.
func withMCP(t *testing.T, url string) func(*tool.Registry, *session.Service) {
	return func(reg *tool.Registry, rt *session.Service) {
		m := mcp.NewManager(reg, mcp.Options{Workspace: t.TempDir(), Elicit: rt.Elicit, StartTimeout: 20 * time.Second})
		t.Cleanup(func() { m.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cfg := mcp.ServerConfig{Type: mcp.TypeHTTP, URL: url}
		if err := m.Start(ctx, []mcp.Server{{Name: "f", Scope: mcp.ScopeCLI, Path: "test", Raw: cfg, Config: cfg}}); err != nil {
			t.Fatal(err)
		}
	}
}

// startAsking starts a turn whose model calls mcp__f__ask, and reads its
// stream to the elicitation_request.
func startAsking(t *testing.T, a *api) (c *sseConn, sid string, req sseEvent) {
	t.Helper()
	a.fake.Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_1", "mcp__f__ask", `{}`)}},
		llmtest.Text("Done."),
	)
	c = a.openSSE("POST", "/v1/agent/run", map[string]any{"prompt": "ask me"})
	evs := c.readUntil("elicitation_request")
	return c, c.resp.Header.Get("X-Session-ID"), evs[len(evs)-1]
}

// toolOutput reads the turn to its end and returns the tool's output.
func toolOutput(t *testing.T, c *sseConn) string {
	t.Helper()
	rest := c.readUntilDone()
	for _, ev := range rest {
		if ev.Event == "tool_result" {
			out, _ := ev.field("output").(string)
			return out
		}
	}
	t.Fatalf("no tool_result in %s", eventTypes(rest))
	return ""
}

// TestElicitationAccept: an MCP server's request for input during a
// session's tool call reaches the client as elicitation_request; the
// answer over HTTP (checked against the requested schema) is what the
// server gets, and the tool's result shows it; a second answer conflicts.
func TestElicitationAccept(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{setup: withMCP(t, elicitingMCP(t))})
	c, sid, req := startAsking(t, a)
	eid, _ := req.field("id").(string)
	schema, _ := req.field("requested_schema").(map[string]any)
	if !strings.HasPrefix(eid, "elicit_") || req.field("server") != "f" || req.field("message") != "Who are you?" ||
		req.field("mode") != "form" || req.field("tool_call_id") != "call_1" || req.field("tool_name") != "mcp__f__ask" || schema["properties"] == nil {
		t.Fatalf("elicitation_request %s", req.Data)
	}
	base := "/v1/sessions/" + sid + "/elicitations/"
	for _, tt := range []struct {
		name, id, body string
		status         int
		typ            string
	}{
		{"unknown id", "elicit_000000000000", `{"action":"decline"}`, 404, errNotFound},
		{"unknown session", "", `{"action":"decline"}`, 404, errNotFound},
		{"not JSON", eid, `{"action":`, 400, errInvalidRequest},
		{"no action", eid, `{}`, 400, errInvalidRequest},
		{"unknown action", eid, `{"action":"maybe"}`, 400, errInvalidRequest},
		{"content with decline", eid, `{"action":"decline","content":{"name":"Ada"}}`, 400, errInvalidRequest},
		{"content not an object", eid, `{"action":"accept","content":[1]}`, 400, errInvalidRequest},
		{"required field missing", eid, `{"action":"accept","content":{"age":3}}`, 400, errInvalidRequest},
		{"field of the wrong type", eid, `{"action":"accept","content":{"name":"Ada","age":"old"}}`, 400, errInvalidRequest},
		{"not a whole number", eid, `{"action":"accept","content":{"name":"Ada","age":3.5}}`, 400, errInvalidRequest},
		{"field the schema lacks", eid, `{"action":"accept","content":{"name":"Ada","role":"admin"}}`, 400, errInvalidRequest},
	} {
		path := base + tt.id
		if tt.id == "" {
			path = "/v1/sessions/sess_nope/elicitations/" + eid
		}
		t.Run(tt.name, func(t *testing.T) { decodeErr(t, a.do("POST", path, tt.body), tt.status, tt.typ) })
	}
	// A permission answer cannot answer an elicitation (it has no content).
	decodeErr(t, a.do("POST", "/v1/sessions/"+sid+"/permissions/"+eid, `{"allow":true}`), 404, errNotFound)

	if m := a.doJSON("POST", base+eid, map[string]any{"action": "accept", "content": map[string]any{"name": "Ada", "age": 36}}, 200); m["status"] != "ok" {
		t.Fatalf("answer: %v", m)
	}
	decodeErr(t, a.do("POST", base+eid, `{"action":"decline"}`), 409, errConflict)
	if out := toolOutput(t, c); out != `accept {"age":36,"name":"Ada"}` {
		t.Fatalf("tool output %q", out)
	}
	// The model saw the result too.
	if last := a.fake.LastRequest(); !strings.Contains(string(last.Body), `accept {\"age\":36,\"name\":\"Ada\"}`) {
		t.Errorf("the model's next request lacks the tool result: %s", last.Body)
	}
}

// TestElicitationDeclineAndTimeout: decline and cancel reach the server
// as given; no answer within the permission timeout answers cancel, and
// the request is then gone (404).
func TestElicitationDeclineAndTimeout(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, answer, want string
	}{
		{"decline", `{"action":"decline"}`, "decline null"},
		{"cancel", `{"action":"cancel","content":null}`, "cancel null"},
		{"timeout", "", "cancel null"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := apiOptions{setup: withMCP(t, elicitingMCP(t))}
			if tt.answer == "" {
				o.permTimeout = 300 * time.Millisecond
			}
			a := newAPI(t, o)
			c, sid, req := startAsking(t, a)
			path := "/v1/sessions/" + sid + "/elicitations/" + req.field("id").(string)
			if tt.answer != "" {
				a.doJSON("POST", path, tt.answer, 200)
			}
			if out := toolOutput(t, c); out != tt.want {
				t.Fatalf("tool output %q, want %q", out, tt.want)
			}
			if tt.answer == "" {
				decodeErr(t, a.do("POST", path, `{"action":"accept","content":{"name":"late"}}`), 404, errNotFound)
			}
		})
	}
}

// TestElicitationOutsideSession: a request no session's tool call made
// (a workflow run's, say) is declined, with a log line.
func TestElicitationOutsideSession(t *testing.T) {
	t.Parallel()
	a := newAPI(t, apiOptions{})
	resp, err := a.rt.Elicit(context.Background(), mcp.ElicitRequest{Server: "f", Message: "Who are you?", Mode: "form"})
	if err != nil || resp.Action != mcp.ActionDecline || resp.Content != nil {
		t.Fatalf("Elicit = %+v, %v; want decline", resp, err)
	}
	if !strings.Contains(a.logs.String(), "mcp elicitation declined") {
		t.Errorf("no log line: %s", a.logs.String())
	}
}
