package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/compact"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/gemini"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/openai"
	"github.com/weft-run/weft/tool"
)

// protocolFake is one provider's fake and the real provider client for it.
type protocolFake struct {
	name string
	fake func(t *testing.T) *llmtest.Server
	prov func(url string) llm.Provider
	// model is where the request names its model.
	model func(r llmtest.Request) string
}

func protocolFakes() []protocolFake {
	bodyModel := func(r llmtest.Request) string { m, _ := r.JSON()["model"].(string); return m }
	return []protocolFake{
		{name: "anthropic", fake: func(t *testing.T) *llmtest.Server { return llmtest.NewAnthropic(t) },
			prov: func(url string) llm.Provider {
				return anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: url, APIKey: "k"}})
			}, model: bodyModel},
		{name: "openai", fake: func(t *testing.T) *llmtest.Server { return llmtest.NewOpenAI(t) },
			prov: func(url string) llm.Provider {
				return openai.New(openai.Config{Endpoint: llm.Endpoint{BaseURL: url + "/v1", APIKey: "k"}})
			}, model: bodyModel},
		{name: "gemini", fake: func(t *testing.T) *llmtest.Server { return llmtest.NewGemini(t) },
			prov: func(url string) llm.Provider {
				return gemini.New(gemini.Config{Endpoint: llm.Endpoint{BaseURL: url, APIKey: "k"}})
			}, model: func(r llmtest.Request) string {
				// .../models/NAME:streamGenerateContent
				p := r.Path[strings.LastIndex(r.Path, "/models/")+len("/models/"):]
				return p[:strings.IndexByte(p, ':')]
			}},
	}
}

// bigOutput is a tool output of about n bytes that reads like a file.
func bigOutput(seed, n int) string {
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		fmt.Fprintf(&sb, "%d:%d\tfunc handler%d(ctx context.Context, req *Request) error { return process(ctx, req.Items[%d]) }\n", seed, i, i, i%7)
	}
	return sb.String()
}

type dumpIn struct {
	N int `json:"n"`
}

// dumpTool returns a big output for n, the same every time.
func dumpTool() tool.Tool {
	return tool.Func("Dump", "Dumps a big file.", tool.Meta{ReadOnly: true, ConcurrencySafe: true, Permission: tool.ClassReadOnly, OutputCap: -1},
		func(_ context.Context, in dumpIn, _ *tool.Call) (tool.Result, error) {
			return tool.Text(bigOutput(in.N, 12_000)), nil
		})
}

const summaryText = "## Goal\nKeep dumping files.\n## Decisions\nNone.\n## Files touched\nnone\n## Open tasks\nmore dumps\n## Current state\ndumping"

// TestLongSessionNeverOverflows runs 60 model calls with outputs of about
// 3,000 tokens each on a model with an 8,000-token window, over each
// protocol's fake made to refuse any prompt over the window: no request is
// ever refused, the levels fire in order (tool caps, micro, summary), the
// summaries are written by the compact model on its own fake, and the
// history keeps every original output (Recall reads it back) behind the
// markers. Halfway, the session is "restarted" from its stored history
// (JSON, as the store keeps it) and goes on from the compacted state. The
// compact model's window is smaller still (3,000 tokens): every summary
// request is sized to fit it.
func TestLongSessionNeverOverflows(t *testing.T) {
	t.Parallel()
	const window, prompts = 8000, 20
	for _, pf := range protocolFakes() {
		t.Run(pf.name, func(t *testing.T) {
			t.Parallel()
			main := pf.fake(t).WithContextWindow(window)
			const smallWindow = 3000
			small := pf.fake(t).WithContextWindow(smallWindow)
			small.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(summaryText)}, Usage: llm.Usage{InputTokens: 100, OutputTokens: 50}}).Repeat()
			for p := range prompts {
				main.Push(
					llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock(fmt.Sprintf("c%d_a", p), "Dump", fmt.Sprintf(`{"n":%d}`, 2*p))}, Usage: llm.Usage{OutputTokens: 20}},
					llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock(fmt.Sprintf("c%d_b", p), "Dump", fmt.Sprintf(`{"n":%d}`, 2*p+1))}, Usage: llm.Usage{OutputTokens: 20}},
					llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(fmt.Sprintf("done with %d", p))}, Usage: llm.Usage{OutputTokens: 10}},
				)
			}
			reg, err := tool.NewRegistry(dumpTool(), compact.Recall())
			if err != nil {
				t.Fatal(err)
			}
			info := llm.ModelInfo{ID: "big-model", ContextWindow: window, MaxOutputTokens: 1000}
			newAgent := func() *agent.Agent {
				a, err := agent.New(agent.Config{Provider: pf.prov(main.URL), Model: "big-model", ModelInfo: &info, Tools: reg,
					Approve: agent.AllowReadOnly, System: "You dump files.",
					CompactProvider: pf.prov(small.URL), CompactModel: "small-model",
					CompactModelInfo: &llm.ModelInfo{ID: "small-model", ContextWindow: smallWindow, MaxOutputTokens: 500}})
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			s := newAgent().NewSession()
			var comps []agent.CompactionData
			turnEnds := 0
			for p := range prompts {
				if p == prompts/2 {
					data, err := json.Marshal(s.Messages())
					if err != nil {
						t.Fatal(err)
					}
					var stored []llm.Message
					if err := json.Unmarshal(data, &stored); err != nil {
						t.Fatal(err)
					}
					view := s.View()
					s = newAgent().ResumeSession(stored)
					if got, want := mustJSON(t, s.View()), mustJSON(t, view); got != want {
						t.Fatalf("the resumed view differs from the compacted one:\n%s\nwant\n%s", got, want)
					}
				}
				for ev, err := range s.Run(context.Background(), fmt.Sprintf("dump pair %d", p)) {
					if err != nil {
						t.Fatalf("prompt %d: %v", p, err)
					}
					switch d := ev.Data.(type) {
					case agent.CompactionData:
						if d.TokensAfter >= d.TokensBefore {
							t.Errorf("compaction %+v saved nothing", d)
						}
						comps = append(comps, d)
					case agent.TurnEndData:
						turnEnds++
						if d.Context == nil || d.Context.Window != window || d.Context.UsedTokens <= 0 || d.Context.UsedTokens > window {
							t.Errorf("turn_end context = %+v", d.Context)
						}
					}
				}
			}
			if turnEnds != 3*prompts {
				t.Errorf("%d turns ended, want %d", turnEnds, 3*prompts)
			}
			for i, r := range main.Requests() {
				if n := llmtest.PromptTokens(r.Body); n > window {
					t.Errorf("request %d is %d tokens, over the %d window", i, n, window)
				}
			}
			if n := len(main.Requests()); n != 3*prompts {
				t.Errorf("the model got %d requests, want %d (a refusal costs one more)", n, 3*prompts)
			}
			first := map[string]int{}
			for i, c := range comps {
				if _, ok := first[c.Level]; !ok {
					first[c.Level] = i
				}
				if c.Level == string(compact.LevelSummary) && (c.Model != "small-model" || c.Note != "") {
					t.Errorf("summary %+v: want one by small-model", c)
				}
			}
			for _, l := range []compact.Level{compact.LevelToolCap, compact.LevelMicro, compact.LevelSummary} {
				if _, ok := first[string(l)]; !ok {
					t.Fatalf("no %s compaction in %+v", l, comps)
				}
			}
			if !(first["tool_cap"] < first["micro"] && first["micro"] < first["summary"]) {
				t.Errorf("levels out of order: %v", first)
			}
			t.Logf("%d compactions, first of each level %v, %d summary calls", len(comps), first, len(small.Requests()))
			sums := small.Requests()
			if len(sums) == 0 {
				t.Fatal("the compact model was never called")
			}
			for _, r := range sums {
				if m := pf.model(r); m != "small-model" {
					t.Errorf("a summary request went to %q", m)
				}
				if n := llmtest.PromptTokens(r.Body); n > smallWindow {
					t.Errorf("a summary request is %d tokens, over the compact model's %d", n, smallWindow)
				}
				if !strings.Contains(string(r.Body), "Summarize the conversation above") {
					t.Errorf("a summary request does not ask for one: %.200s", r.Body)
				}
			}
			// The history keeps what the view lost: the first output whole,
			// behind markers, and Recall reads it back.
			h := s.Messages()
			markers := 0
			for i := range h {
				if compact.IsMarker(&h[i]) {
					markers++
				}
			}
			if markers != len(comps) {
				t.Errorf("the history holds %d markers for %d compactions", markers, len(comps))
			}
			if got, want := mustJSON(t, compact.View(h)), mustJSON(t, s.View()); got != want {
				t.Error("replaying the history does not give the view")
			}
			b, ok := s.Recall("c0_a")
			if !ok || len(b.Content) == 0 || b.Content[0].Text != bigOutput(0, 12_000) {
				t.Errorf("Recall of the first output: ok %v", ok)
			}
			if v := s.View(); compact.EstimateMessages(v) > window {
				t.Errorf("the view is %d tokens", compact.EstimateMessages(v))
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
