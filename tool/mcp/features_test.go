package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/tool"
)

var png1x1 = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0}

func featureServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "features", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "ask", InputSchema: objectSchema}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Who are you?", RequestedSchema: json.RawMessage(
			`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"]}`)})
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(res.Content)
		return textResult(res.Action + " " + string(b)), nil
	})
	s.AddTool(&sdk.Tool{Name: "mixed", InputSchema: objectSchema}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"})
			// Notifications are handled apart from responses: a long
			// operation (which is what reports progress) lets it arrive.
			time.Sleep(300 * time.Millisecond)
		}
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: "text"},
			&sdk.ImageContent{MIMEType: "image/png", Data: png1x1},
			&sdk.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")},
			&sdk.ResourceLink{URI: "file:///a.txt", Name: "a"},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://x", MIMEType: "text/plain", Text: "embedded"}},
		}}, nil
	})
	s.AddTool(&sdk.Tool{Name: "structured", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{StructuredContent: map[string]any{"sum": 3}, IsError: true}, nil
	})
	s.AddResource(&sdk.Resource{URI: "mem://readme", Name: "readme", MIMEType: "text/markdown", Description: "the readme"},
		func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "mem://readme", MIMEType: "text/markdown", Text: "# Hello"}}}, nil
		})
	s.AddPrompt(&sdk.Prompt{Name: "greet", Description: "greets", Arguments: []*sdk.PromptArgument{{Name: "who", Required: true}, {Name: "style"}}},
		func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{
				{Role: "user", Content: &sdk.TextContent{Text: fmt.Sprintf("Greet %s, %s.", req.Params.Arguments["who"], req.Params.Arguments["style"])}},
			}}, nil
		})
	return s
}

func TestElicitation(t *testing.T) {
	t.Parallel()
	h := newHTTPTestServer(t, featureServer())
	type ctxKey struct{}
	var mu sync.Mutex
	var got []ElicitRequest
	var sawValue any
	answers := map[string]ElicitResponse{
		"accept":  {Action: ActionAccept, Content: map[string]any{"name": "Ada", "age": 36}},
		"decline": {Action: ActionDecline},
	}
	var answer ElicitResponse
	elicit := func(ctx context.Context, req ElicitRequest) (ElicitResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, req)
		sawValue = ctx.Value(ctxKey{})
		return answer, nil
	}
	_, reg := startManager(t, Options{Elicit: elicit}, httpServer("f", h.url()))
	for _, tt := range []struct{ answer, want string }{
		{"accept", `accept {"age":36,"name":"Ada"}`},
		{"decline", "decline null"},
	} {
		mu.Lock()
		answer = answers[tt.answer]
		mu.Unlock()
		ctx := context.WithValue(context.Background(), ctxKey{}, "session-7")
		res := reg.Execute(ctx, &tool.Call{ID: "call-9", Name: "mcp__f__ask", Input: json.RawMessage(`{}`)})
		if res.TextOf() != tt.want {
			t.Errorf("%s: result %q, want %q", tt.answer, res.TextOf(), tt.want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("elicitations = %d", len(got))
	}
	r := got[0]
	if r.Server != "f" || r.Message != "Who are you?" || r.Mode != "form" || r.ToolCallID != "call-9" || r.ToolName != "mcp__f__ask" {
		t.Errorf("request = %+v", r)
	}
	if fields, err := Fields(r.Schema); err != nil || len(fields) != 2 || fields[0].Name != "name" || !fields[0].Required {
		t.Errorf("fields = %+v, %v", fields, err)
	}
	if sawValue != "session-7" {
		t.Errorf("the handler's context lacks the tool call's values (got %v)", sawValue)
	}
}

// No handler means decline; a failing handler means cancel.
func TestElicitationWithoutHandler(t *testing.T) {
	t.Parallel()
	h := newHTTPTestServer(t, featureServer())
	_, reg := startManager(t, Options{}, httpServer("f", h.url()))
	if res := call(t, reg, "mcp__f__ask", `{}`); res.TextOf() != "decline null" {
		t.Errorf("without a handler: %q", res.TextOf())
	}
	h2 := newHTTPTestServer(t, featureServer())
	_, reg2 := startManager(t, Options{Elicit: func(context.Context, ElicitRequest) (ElicitResponse, error) {
		return ElicitResponse{}, errors.New("terminal gone")
	}}, httpServer("f", h2.url()))
	if res := call(t, reg2, "mcp__f__ask", `{}`); res.TextOf() != "cancel null" {
		t.Errorf("with a failing handler: %q", res.TextOf())
	}
}

func TestContentMapping(t *testing.T) {
	t.Parallel()
	h := newHTTPTestServer(t, featureServer())
	_, reg := startManager(t, Options{}, httpServer("f", h.url()))
	var progress []string
	var mu sync.Mutex
	res := reg.Execute(context.Background(), &tool.Call{ID: "1", Name: "mcp__f__mixed", Input: json.RawMessage(`{}`),
		Progress: func(s string) { mu.Lock(); progress = append(progress, s); mu.Unlock() }})
	var kinds []string
	for _, b := range res.Content {
		switch b.Type {
		case llm.BlockImage:
			kinds = append(kinds, "image:"+b.MediaType)
		default:
			kinds = append(kinds, b.Text)
		}
	}
	want := []string{"text", "image:image/png", "[audio audio/wav, 4 bytes: not shown]", "[resource file:///a.txt (a)]", "embedded"}
	if strings.Join(kinds, "|") != strings.Join(want, "|") {
		t.Errorf("content = %q, want %q", kinds, want)
	}
	mu.Lock()
	if len(progress) != 1 || progress[0] != "progress 1/2: half" {
		t.Errorf("progress = %q", progress)
	}
	mu.Unlock()
	res = call(t, reg, "mcp__f__structured", `{}`)
	if !res.IsError || res.TextOf() != `{"sum":3}` || res.Data["structured_content"] == nil {
		t.Errorf("structured = %v %q %v", res.IsError, res.TextOf(), res.Data)
	}
}

func TestResourceTools(t *testing.T) {
	t.Parallel()
	h := newHTTPTestServer(t, featureServer())
	_, reg := startManager(t, Options{}, httpServer("f", h.url()), httpServer("g", h.url()))
	res := call(t, reg, ListResourcesTool, `{"server":"f"}`)
	var listed []listedResource
	if err := json.Unmarshal([]byte(res.TextOf()), &listed); err != nil || len(listed) != 1 {
		t.Fatalf("list = %q (%v)", res.TextOf(), err)
	}
	if l := listed[0]; l.URI != "mem://readme" || l.Server != "f" || l.MIMEType != "text/markdown" || l.Description != "the readme" {
		t.Errorf("listed = %+v", l)
	}
	res = call(t, reg, ListResourcesTool, `{}`)
	if err := json.Unmarshal([]byte(res.TextOf()), &listed); err != nil || len(listed) != 2 {
		t.Errorf("list of all servers = %q", res.TextOf())
	}
	if res := call(t, reg, ReadResourceTool, `{"server":"f","uri":"mem://readme"}`); res.IsError || res.TextOf() != "# Hello" {
		t.Errorf("read = %v %q", res.IsError, res.TextOf())
	}
	if res := call(t, reg, ReadResourceTool, `{"server":"nope","uri":"mem://readme"}`); !res.IsError || !strings.Contains(res.TextOf(), `no MCP server "nope"; configured: f, g`) {
		t.Errorf("unknown server = %q", res.TextOf())
	}
	if res := call(t, reg, ReadResourceTool, `{"server":"f","uri":"mem://missing"}`); !res.IsError {
		t.Errorf("a missing resource read fine: %q", res.TextOf())
	}
	if res := call(t, reg, ReadResourceTool, `{"server":"f"}`); !res.IsError || !strings.Contains(res.TextOf(), `missing required property "uri"`) {
		t.Errorf("schema = %q", res.TextOf())
	}
	for _, name := range []string{ListResourcesTool, ReadResourceTool} {
		tl, _ := reg.Get(name)
		if !tl.Spec().ReadOnly {
			t.Errorf("%s is not read-only", name)
		}
	}
}

func TestPrompts(t *testing.T) {
	t.Parallel()
	h := newHTTPTestServer(t, featureServer())
	m, _ := startManager(t, Options{}, httpServer("f", h.url()))
	ps := m.Prompts()
	if len(ps) != 1 || ps[0].Command != "mcp__f__greet" || ps[0].Usage() != "/mcp__f__greet <who> [style]" {
		t.Fatalf("prompts = %+v", ps)
	}
	text, err := m.RunPrompt(context.Background(), `/mcp__f__greet "Ada Lovelace" warmly`)
	if err != nil || text != "Greet Ada Lovelace, warmly." {
		t.Fatalf("RunPrompt = %q, %v", text, err)
	}
	if _, err := m.RunPrompt(context.Background(), `/mcp__f__greet`); err == nil || !strings.Contains(err.Error(), "missing who") {
		t.Errorf("missing argument: %v", err)
	}
	if _, err := m.RunPrompt(context.Background(), `/mcp__f__nope`); !errors.Is(err, ErrNoPrompt) {
		t.Errorf("unknown prompt: %v", err)
	}
}

// The older HTTP+SSE transport ("type": "sse"), with configured headers
// sent on every request.
func TestSSETransport(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	handler := sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return featureServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.Header.Get("X-Api-Key"))
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg := ServerConfig{Type: TypeSSE, URL: srv.URL, Headers: map[string]string{"X-Api-Key": "k-123"}}
	m, reg := startManager(t, Options{}, Server{Name: "old", Scope: ScopeCLI, Raw: cfg, Config: cfg})
	if st := statusOf(m, "old"); st.State != StateConnected || st.Transport != TypeSSE {
		t.Fatalf("status = %+v", st)
	}
	if res := call(t, reg, "mcp__old__structured", `{}`); res.TextOf() != `{"sum":3}` {
		t.Errorf("call over SSE = %q", res.TextOf())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		if !strings.HasSuffix(s, " k-123") {
			t.Errorf("a request without the configured header: %q", s)
		}
	}
	if len(seen) < 2 {
		t.Errorf("requests = %q", seen)
	}
}
