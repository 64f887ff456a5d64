package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/tool"
)

type pathIn struct {
	FilePath string `json:"file_path"`
}

// TestPathArgParallelism: the loop learns from Meta.PathArg, not from a
// tool's name, which calls of a tool that is not concurrency-safe may run
// at once: those naming distinct paths. Two spellings of one file (or a
// link to it, for weft's file tools, whose paths the policy resolves) are
// one path.
func TestPathArgParallelism(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		tool     string
		pathArg  string
		paths    [2]string
		parallel bool
	}{
		{name: "a tool of its own on distinct paths runs in parallel", tool: "Scribble", pathArg: "file_path", paths: [2]string{"a.txt", "b.txt"}, parallel: true},
		{name: "a tool of its own on one path runs serially", tool: "Scribble", pathArg: "file_path", paths: [2]string{"a.txt", "a.txt"}},
		{name: "two spellings of one path run serially", tool: "Scribble", pathArg: "file_path", paths: [2]string{"a.txt", "./sub/../a.txt"}},
		{name: "an absolute and a relative spelling run serially", tool: "Scribble", pathArg: "file_path", paths: [2]string{"a.txt", "WS/a.txt"}},
		{name: "without a PathArg distinct paths run serially", tool: "Scribble", paths: [2]string{"a.txt", "b.txt"}},
		{name: "a PathArg that names no field runs serially", tool: "Scribble", pathArg: "path", paths: [2]string{"a.txt", "b.txt"}},
		{name: "Write on distinct paths runs in parallel", tool: "Write", pathArg: "file_path", paths: [2]string{"a.txt", "b.txt"}, parallel: true},
		{name: "Write on a link and its target runs serially", tool: "Write", pathArg: "file_path", paths: [2]string{"a.txt", "link.txt"}},
		{name: "Write on two spellings runs serially", tool: "Write", pathArg: "file_path", paths: [2]string{"a.txt", "./a.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "a.txt"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(ws, "a.txt"), filepath.Join(ws, "link.txt")); err != nil {
				t.Fatal(err)
			}
			var running, peak atomic.Int32
			both := make(chan struct{})
			run := func(ctx context.Context, in pathIn, _ *tool.Call) (tool.Result, error) {
				n := running.Add(1)
				defer running.Add(-1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				if n == 2 {
					close(both)
				}
				// Long enough for a second call started alongside to
				// arrive; a call that waits for nothing cannot deadlock
				// a serial batch.
				select {
				case <-both:
				case <-time.After(300 * time.Millisecond):
				}
				return tool.Text("wrote " + in.FilePath), nil
			}
			meta := tool.Meta{Effect: tool.EffectWrite, PathArg: tt.pathArg}
			reg, err := tool.NewRegistry(tool.Func(tt.tool, "writes", meta, run))
			if err != nil {
				t.Fatal(err)
			}
			var calls []llmtest.Block
			for i, p := range tt.paths {
				if len(p) > 2 && p[:3] == "WS/" {
					p = filepath.Join(ws, p[3:])
				}
				calls = append(calls, llmtest.ToolBlock("c"+strconv.Itoa(i), tt.tool, `{"file_path":`+strconv.Quote(p)+`}`))
			}
			prov := llmtest.NewScripted("scripted", toolScript(calls...), llmtest.Text("done"))
			a, err := agent.New(agent.Config{Provider: prov, Model: "m", Tools: reg, Approve: agent.AllowAll,
				Policy: &policy.Policy{Workspace: ws}})
			if err != nil {
				t.Fatal(err)
			}
			c := collect(a.NewSession(), context.Background(), "go")
			for _, ev := range c.of(agent.EventToolResult) {
				if r := ev.Data.(agent.ToolResultData); r.IsError {
					t.Fatalf("result = %+v", r)
				}
			}
			if got := peak.Load() == 2; got != tt.parallel {
				t.Fatalf("peak concurrency = %d, want parallel = %v", peak.Load(), tt.parallel)
			}
		})
	}
}

// TestEndsTurnFromMeta: a tool of any name that declares Meta.EndsTurn ends
// the run after its turn, as AskUserQuestion does, unless its call failed.
func TestEndsTurnFromMeta(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		endsTurn  bool
		fail      bool
		wantTurns int
	}{
		{name: "EndsTurn ends the run", endsTurn: true, wantTurns: 1},
		{name: "a failed EndsTurn call does not", endsTurn: true, fail: true, wantTurns: 2},
		{name: "without EndsTurn the model is called again", wantTurns: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			handoff := tool.Func("Handoff", "hands the turn to the user", tool.Meta{ReadOnly: true, EndsTurn: tt.endsTurn},
				func(ctx context.Context, in echoIn, _ *tool.Call) (tool.Result, error) {
					if tt.fail {
						return tool.Errorf("no one to hand off to"), nil
					}
					return tool.Text("handed off"), nil
				})
			p := llmtest.NewScripted("scripted", toolScript(llmtest.ToolBlock("h", "Handoff", `{"text":"over to you"}`)), llmtest.Text("continued"))
			c := collect(newAgent(t, p, agent.AllowAll, handoff).NewSession(), context.Background(), "go")
			d := c.done(t)
			if d.TurnCount != tt.wantTurns || d.StopReason != "end_turn" {
				t.Fatalf("done = %+v, want %d turns", d, tt.wantTurns)
			}
			if n := len(p.Requests()); n != tt.wantTurns {
				t.Fatalf("%d model calls, want %d", n, tt.wantTurns)
			}
		})
	}
}
