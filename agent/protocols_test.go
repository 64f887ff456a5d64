package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/gemini"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/openai"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/builtin"
)

// TestToolRoundTripOverEachProtocol runs the loop with the real provider
// codecs against each protocol fake: two parallel calls of real builtin
// tools, their results sent back, then the answer. It checks what the
// provider put on the wire for the second request.
func TestToolRoundTripOverEachProtocol(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fake func(t *testing.T) *llmtest.Server
		prov func(url string) llm.Provider
	}{
		{
			name: "anthropic",
			fake: func(t *testing.T) *llmtest.Server { return llmtest.NewAnthropic(t) },
			prov: func(url string) llm.Provider {
				return anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: url, APIKey: "k"}})
			},
		},
		{
			name: "openai",
			fake: func(t *testing.T) *llmtest.Server { return llmtest.NewOpenAI(t) },
			prov: func(url string) llm.Provider {
				return openai.New(openai.Config{Endpoint: llm.Endpoint{BaseURL: url + "/v1", APIKey: "k"}})
			},
		},
		{
			name: "gemini",
			fake: func(t *testing.T) *llmtest.Server { return llmtest.NewGemini(t) },
			prov: func(url string) llm.Provider {
				return gemini.New(gemini.Config{Endpoint: llm.Endpoint{BaseURL: url, APIKey: "k"}})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, "b.txt"), []byte("beta\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			fake := tt.fake(t)
			fake.Push(
				llmtest.Script{Blocks: []llmtest.Block{
					llmtest.TextBlock("Reading both."),
					llmtest.ToolBlock("call_a", "Read", `{"file_path":`, `"a.txt"}`),
					llmtest.ToolBlock("call_b", "Read", `{"file_path":"b.txt"}`),
				}, Usage: llm.Usage{InputTokens: 100, OutputTokens: 20}},
				llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("alpha and beta")}, Usage: llm.Usage{InputTokens: 150, OutputTokens: 5}},
			)
			reg, err := tool.NewRegistry(builtin.Tools(builtin.Config{Workspace: ws})...)
			if err != nil {
				t.Fatal(err)
			}
			a, err := agent.New(agent.Config{Provider: tt.prov(fake.URL), Model: "test-model", Tools: reg, Approve: agent.AllowReadOnly})
			if err != nil {
				t.Fatal(err)
			}
			s := a.NewSession()
			c := collect(s, context.Background(), "read a.txt and b.txt")
			if c.err != nil {
				t.Fatalf("run failed: %v (events %v)", c.err, c.types())
			}
			d := c.done(t)
			if d.Text != "alpha and beta" || d.TurnCount != 2 || d.TotalInputTokens != 250 {
				t.Fatalf("done = %+v", d)
			}
			res := c.of(agent.EventToolResult)
			if len(res) != 2 {
				t.Fatalf("tool results: %v", c.types())
			}
			for _, r := range res {
				out := r.Data.(agent.ToolResultData)
				if out.IsError || !strings.Contains(out.Output, "alpha") && !strings.Contains(out.Output, "beta") {
					t.Errorf("result %+v", out)
				}
			}
			// The second request carried both results, in call order.
			reqs := fake.Requests()
			if len(reqs) != 2 {
				t.Fatalf("requests = %d", len(reqs))
			}
			body := string(reqs[1].Body)
			ia, ib := strings.Index(body, "alpha"), strings.Index(body, "beta")
			if ia < 0 || ib < 0 || ia > ib {
				t.Fatalf("second request lacks the results in order:\n%s", body)
			}
		})
	}
}

// TestCancelMidBashKillsTheProcess cancels a run while Bash runs a
// long command with a child process: the run ends cancelled, the history
// stays valid, and no process is left behind.
func TestCancelMidBashKillsTheProcess(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	pidFile := filepath.Join(ws, "pid")
	p := llmtest.NewScripted("scripted", llmtest.Script{Blocks: []llmtest.Block{
		llmtest.ToolBlock("call_1", "Bash", `{"command":"sleep 60 & echo $! > pid; wait"}`),
	}})
	reg, err := tool.NewRegistry(builtin.Tools(builtin.Config{Workspace: ws})...)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Provider: p, Model: "m", Tools: reg, Approve: agent.AllowAll})
	if err != nil {
		t.Fatal(err)
	}
	s := a.NewSession()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
				break
			}
		}
		cancel()
	}()
	start := time.Now()
	c := collect(s, ctx, "sleep")
	if d := c.done(t); d.StopReason != "cancelled" {
		t.Fatalf("done = %+v", d)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatal("cancellation did not reach the command")
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	gone := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			gone = true
			break
		}
	}
	if !gone {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the command's child %d survived the cancel", pid)
	}
	msgs := s.Messages()
	last := msgs[len(msgs)-1]
	if last.Role != llm.RoleUser || last.Content[0].Type != llm.BlockToolResult || last.Content[0].ToolUseID != "call_1" {
		t.Fatalf("history ends with %+v", last)
	}
}
