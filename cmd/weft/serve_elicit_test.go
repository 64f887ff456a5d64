package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-run/weft/llm/llmtest"
)

// TestServeMCPElicitation: weft serve hands an MCP server's request for
// input to the session whose tool call made it: an elicitation_request on
// the turn's stream, answered over HTTP, and the answer is what the
// server's tool gets (before, serve declined every request).
func TestServeMCPElicitation(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "asker", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Which colour?", RequestedSchema: json.RawMessage(
				`{"type":"object","properties":{"colour":{"type":"string","enum":["red","blue"]}},"required":["colour"]}`)})
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(res.Content)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Action + " " + string(b)}}}, nil
		})
	mcpSrv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(mcpSrv.Close)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"paint": map[string]any{"type": "http", "url": mcpSrv.URL + "/mcp"}}})
	fake := llmtest.NewOpenAI(t)
	conf := filepath.Join(dir, "weft.conf")
	if err := os.WriteFile(conf, []byte("model = openai:gpt-4.1\nbase-url = "+fake.URL+"/v1\napi-key = k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, []string{"WEFT_CONFIG=" + conf}, "--db", filepath.Join(dir, "weft.db"), "--workspace", dir, "--mcp-config", cfg)
	p.expect("POST", "/v1/sessions", `{"session_id":"s"}`, 201)
	fake.Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_1", "mcp__paint__ask", `{}`)}},
		llmtest.Text("Blue it is."),
	)
	resp := p.request("POST", "/v1/sessions/s/messages", `{"prompt":"paint it"}`)
	defer resp.Body.Close()
	asked, err := frames(t, resp, func(f frame) bool { return f.event == "elicitation_request" })
	if err != nil {
		t.Fatalf("no elicitation_request: %v after %s\n%s", err, eventNames(asked), p.log())
	}
	var req struct{ ID, Server, Message, ToolCallID string }
	if err := json.Unmarshal([]byte(asked[len(asked)-1].data), &req); err != nil {
		t.Fatal(err)
	}
	var full map[string]any
	_ = json.Unmarshal([]byte(asked[len(asked)-1].data), &full)
	if req.Server != "paint" || req.Message != "Which colour?" || full["tool_call_id"] != "call_1" {
		t.Fatalf("elicitation_request %s", asked[len(asked)-1].data)
	}
	path := "/v1/sessions/s/elicitations/" + req.ID
	p.expect("POST", path, `{"action":"accept","content":{"colour":"green"}}`, 400)
	p.expect("POST", path, `{"action":"accept","content":{"colour":"blue"}}`, 200)
	p.expect("POST", path, `{"action":"decline"}`, 409)
	rest, err := frames(t, resp, nil)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("turn stream: %v after %s", err, eventNames(rest))
	}
	var result string
	for _, f := range rest {
		if f.event == "tool_result" {
			result = f.data
		}
	}
	if !strings.Contains(result, `accept {\"colour\":\"blue\"}`) {
		t.Fatalf("tool_result %s (stream %s)\n%s", result, eventNames(rest), p.log())
	}
	p.stop()
}
