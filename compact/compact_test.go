package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/weft-run/weft/compact"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/gemini"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/openai"
)

func code(n int) string {
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		fmt.Fprintf(&sb, "func f%d(x int) (int, error) {\n\tif x > %d {\n\t\treturn 0, fmt.Errorf(\"too big: %%d\", x)\n\t}\n\treturn x * 2, nil\n}\n", i, i)
	}
	return sb.String()
}

func prose(n int) string {
	var sb strings.Builder
	for sb.Len() < n {
		sb.WriteString("The agent reads the file, finds the failing test and changes the handler so that it returns the error. ")
	}
	return sb.String()
}

// conversations are requests of the shapes a session sends.
func conversations() map[string]*llm.Request {
	tools := []llm.ToolSpec{
		{Name: "Read", Description: "Reads a file from the workspace.", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string","description":"path"}},"required":["file_path"]}`)},
		{Name: "Bash", Description: "Runs a shell command.", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"integer"}},"required":["command"]}`)},
	}
	round := func(id, path, out string) []llm.Message {
		return []llm.Message{
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("Reading " + path), {Type: llm.BlockToolUse, ToolUseID: id, ToolName: "Read", Input: json.RawMessage(`{"file_path":"` + path + `"}`)}}},
			{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult(id, false, llm.Text(out))}},
		}
	}
	long := []llm.Message{llm.UserText("fix the failing test in handler.go")}
	for i := range 12 {
		long = append(long, round(fmt.Sprintf("toolu_%02d", i), fmt.Sprintf("pkg/f%d.go", i), code(3000))...)
	}
	long = append(long, llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text(prose(2000))}})
	return map[string]*llm.Request{
		"prompt": {Messages: []llm.Message{llm.UserText("hi")}},
		"prose":  {System: llm.SystemText(prose(4000)), Messages: []llm.Message{llm.UserText(prose(8000))}},
		"code":   {Messages: []llm.Message{llm.UserText("review:\n" + code(20000))}},
		"tools":  {System: llm.SystemText("You are an agent."), Tools: tools, Messages: append([]llm.Message{llm.UserText("read a.go")}, round("toolu_a", "a.go", code(5000))...)},
		"long":   {System: llm.SystemText(prose(3000)), Tools: tools, Messages: long},
	}
}

// TestEstimateErrsHigh holds the estimate above what the fakes count for
// the same request in each provider's wire format (a quarter of the body,
// which the fakes report as the prompt's tokens), and within twice it
// (plus the request's framing, for the shortest).
func TestEstimateErrsHigh(t *testing.T) {
	t.Parallel()
	fakes := []struct {
		name string
		fake func(t *testing.T) *llmtest.Server
		prov func(url string) llm.Provider
	}{
		{"anthropic", func(t *testing.T) *llmtest.Server { return llmtest.NewAnthropic(t) }, func(url string) llm.Provider {
			return anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: url, APIKey: "k"}})
		}},
		{"openai", func(t *testing.T) *llmtest.Server { return llmtest.NewOpenAI(t) }, func(url string) llm.Provider {
			return openai.New(openai.Config{Endpoint: llm.Endpoint{BaseURL: url + "/v1", APIKey: "k"}})
		}},
		{"gemini", func(t *testing.T) *llmtest.Server { return llmtest.NewGemini(t) }, func(url string) llm.Provider {
			return gemini.New(gemini.Config{Endpoint: llm.Endpoint{BaseURL: url, APIKey: "k"}})
		}},
	}
	for _, f := range fakes {
		for name, req := range conversations() {
			t.Run(f.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				fake := f.fake(t)
				fake.Push(llmtest.Text("ok"))
				r := *req
				r.Model, r.MaxTokens = "m", 1000
				for range f.prov(fake.URL).Stream(context.Background(), &r) {
				}
				counted := llmtest.PromptTokens(fake.LastRequest().Body)
				est := compact.EstimateRequest(&r)
				if est < counted || est > 2*counted+100 {
					t.Fatalf("estimate %d for a request counted as %d", est, counted)
				}
			})
		}
	}
}

// TestAccountantErrsHigh: after a report, the next request's expected
// size is the report plus what was added, scaled up by how much denser
// than estimated the provider counted, never down.
func TestAccountantErrsHigh(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                    string
		est, reported, nextEst  int
		wantAtLeast, wantAtMost int
	}{
		{"no report yet", 0, 0, 1000, 1000, 1000},
		{"denser than estimated", 1000, 2000, 1500, 3000, 3000},
		{"sparser than estimated", 1000, 500, 1500, 1000, 1000},
		{"after a compaction", 4000, 3000, 2000, 1500, 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a compact.Accountant
			a.Observe(tt.est, tt.reported)
			got := a.Estimate(tt.nextEst)
			if got < tt.wantAtLeast || got > tt.wantAtMost {
				t.Fatalf("Estimate(%d) = %d, want %d..%d", tt.nextEst, got, tt.wantAtLeast, tt.wantAtMost)
			}
		})
	}
}

// history is a session of n tool rounds with outputs of size bytes.
func history(n, size int) []llm.Message {
	msgs := []llm.Message{llm.UserText("start")}
	for i := range n {
		id := fmt.Sprintf("t%d", i)
		msgs = append(msgs,
			llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolUse, ToolUseID: id, ToolName: "Read", Input: json.RawMessage(`{"file_path":"f.go"}`)}}},
			llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult(id, false, llm.Text(code(size)))}})
	}
	return msgs
}

func planner(window int) *compact.Planner {
	return &compact.Planner{Config: compact.Config{}.Resolved(), Budget: compact.Budget{Window: window, Reserve: window / 8}, Recall: true}
}

// TestTranscriptRewind: every compaction is a marker in an append-only
// history; replaying the history gives the view, and cutting it before a
// marker gives the view as it was before that compaction.
func TestTranscriptRewind(t *testing.T) {
	t.Parallel()
	p := planner(8000)
	var tr compact.Transcript
	view := history(6, 2000)
	before := []string{}
	var at []int
	for _, plan := range []func([]llm.Message) (compact.Marker, bool){
		func(v []llm.Message) (compact.Marker, bool) { return p.Micro(v, 2) },
		func(v []llm.Message) (compact.Marker, bool) {
			return p.Summarized(v, p.Split(v, 100), "the summary"), true
		},
	} {
		m, ok := plan(view)
		if !ok {
			t.Fatal("nothing to compact")
		}
		b, _ := json.Marshal(view)
		before = append(before, string(b))
		var i int
		view, i = tr.Record(view, m)
		at = append(at, i)
		view = append(view, llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("ok")}}, llm.UserText("next"))
	}
	h := tr.History(view)
	if got, _ := json.Marshal(compact.View(h)); string(got) != mustJSON(view) {
		t.Fatal("replaying the history does not give the view")
	}
	for k, i := range at {
		if got := mustJSON(compact.View(h[:i])); got != before[k] {
			t.Fatalf("cut before marker %d: %s\nwant %s", k, got, before[k])
		}
	}
	// Every original output is still in the history, and Original finds it.
	for i := range 6 {
		b, ok := tr.Original(view, fmt.Sprintf("t%d", i))
		if !ok || b.Content[0].Text != code(2000) {
			t.Fatalf("output t%d lost", i)
		}
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestSplitNeverSeparatesPairs: a summary's kept tail never begins with a
// tool result whose call it left behind, whatever the tail's size.
func TestSplitNeverSeparatesPairs(t *testing.T) {
	t.Parallel()
	p := planner(8000)
	view := history(10, 500)
	for tail := 0; tail < 5000; tail += 37 {
		s := p.Split(view, tail)
		if s == 0 {
			continue
		}
		for _, b := range view[s].Content {
			if b.Type == llm.BlockToolResult {
				t.Fatalf("tail %d begins at a tool result (%d)", tail, s)
			}
		}
	}
}

// BenchmarkMicro500 is micro-compaction of a 500-message history (250
// tool rounds): planning the stubs and applying them (docs/benchmarks.md).
func BenchmarkMicro500(b *testing.B) {
	view := history(250, 2000)
	p := planner(200_000)
	b.ReportAllocs()
	for b.Loop() {
		m, ok := p.Micro(view, 0)
		if !ok {
			b.Fatal("nothing stubbed")
		}
		_ = m.Apply(view)
	}
}
