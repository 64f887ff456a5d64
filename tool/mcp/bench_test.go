package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/weft-run/weft/tool"
)

type echoInput struct {
	Text string `json:"text"`
}

// BenchmarkCall compares one call through tool.Registry.Execute of a
// builtin-like Go tool (direct) with the same echo through a stdio MCP
// server (the test binary as the server): the difference is what MCP
// adds per call (JSON-RPC over pipes, the server's own handling).
func BenchmarkCall(b *testing.B) {
	input := json.RawMessage(`{"text":"hello"}`)
	b.Run("direct", func(b *testing.B) {
		reg, err := tool.NewRegistry(tool.Func("echo", "echoes", tool.Meta{ReadOnly: true},
			func(_ context.Context, in echoInput, _ *tool.Call) (tool.Result, error) {
				return tool.Text("echo: " + in.Text), nil
			}))
		if err != nil {
			b.Fatal(err)
		}
		benchCalls(b, reg, "echo", input)
	})
	b.Run("stdio-mcp", func(b *testing.B) {
		state := b.TempDir()
		reg := &tool.Registry{}
		m := NewManager(reg, Options{Workspace: b.TempDir()})
		defer m.Close()
		if err := m.Start(context.Background(), []Server{stdioServer(b, "t", state, nil)}); err != nil {
			b.Fatal(err)
		}
		if st := statusOf(m, "t"); st.State != StateConnected {
			b.Fatalf("status %+v", st)
		}
		benchCalls(b, reg, "mcp__t__echo", input)
	})
}

func benchCalls(b *testing.B, reg *tool.Registry, name string, input json.RawMessage) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res := reg.Execute(ctx, &tool.Call{ID: "1", Name: name, Input: input})
		if res.IsError || res.TextOf() != "echo: hello" {
			b.Fatalf("result %q", res.TextOf())
		}
	}
}

// BenchmarkStartFiveServers is the time from Start to five stdio servers
// connected with their tools listed (they start concurrently).
func BenchmarkStartFiveServers(b *testing.B) {
	servers := make([]Server, 5)
	for i := range servers {
		servers[i] = stdioServer(b, fmt.Sprintf("s%d", i), b.TempDir(), nil)
	}
	benchStart(b, servers)
}

// BenchmarkStartFiveNodeServers starts five server-everything processes
// (node): what a typical configuration of npm servers costs.
func BenchmarkStartFiveNodeServers(b *testing.B) {
	bin := npmBin(b, "mcp-server-everything")
	servers := make([]Server, 5)
	for i := range servers {
		servers[i] = npmServer(fmt.Sprintf("e%d", i), bin, "stdio")
	}
	benchStart(b, servers)
}

func benchStart(b *testing.B, servers []Server) {
	ws := b.TempDir()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		reg := &tool.Registry{}
		m := NewManager(reg, Options{Workspace: ws, NoReconnect: true})
		if err := m.Start(context.Background(), servers); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms-to-ready")
		for _, st := range m.Status() {
			if st.State != StateConnected {
				b.Fatalf("%s: %+v", st.Name, st)
			}
		}
		b.StopTimer()
		m.Close()
		b.StartTimer()
	}
}
