// Command fakemodel serves a scripted fake of the Anthropic Messages API
// (llmtest's loopback fake of the real wire protocol) for the web UI's
// end-to-end tests, with a control endpoint through which the test queues
// the responses: the model's every answer is scripted, so a run is
// deterministic.
//
//	fakemodel            prints {"model": URL, "control": URL, "mcp": URL} and serves
//	POST control/push    a JSON array of llmtest.Script, answered in order
//	GET  control/requests how many model requests arrived, and how many scripts wait
//	control/mcp          an MCP server (streamable HTTP) with the read-only
//	                     tools lookup and status, for weft serve --mcp-config
//
// It exits when its standard input closes (the test runner ended).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-run/weft/llm/llmtest"
)

func main() {
	fake := llmtest.NewAnthropic(nil)
	defer fake.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var pending atomic.Int64 // scripts pushed so far
	mux := http.NewServeMux()
	mux.HandleFunc("POST /push", func(w http.ResponseWriter, r *http.Request) {
		var scripts []llmtest.Script
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&scripts); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fake.Push(scripts...)
		pending.Add(int64(len(scripts)))
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /requests", func(w http.ResponseWriter, r *http.Request) {
		n := int64(len(fake.Requests()))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int64{"requests": n, "waiting": max(pending.Load()-n, 0)})
	})
	mcp := sdk.NewServer(&sdk.Implementation{Name: "e2e-docs", Version: "1"}, nil)
	for _, name := range []string{"lookup", "status"} {
		mcp.AddTool(&sdk.Tool{Name: name, Description: "answers " + name, InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " ok"}}}, nil
			})
	}
	mux.Handle("/mcp", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcp }, nil))
	go func() { _ = http.Serve(ln, mux) }()
	control := "http://" + ln.Addr().String()
	out, _ := json.Marshal(map[string]string{"model": fake.URL, "control": control, "mcp": control + "/mcp"})
	fmt.Println(string(out))
	_, _ = io.Copy(io.Discard, os.Stdin)
}
