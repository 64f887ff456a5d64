// Command agentloop measures what weft's engine costs on top of the wire:
// it drives tool-calling runs (model call -> tool call -> model call ->
// answer) through agent.Session against an OpenAI-compatible fake on
// loopback and, in the same process and alternating rounds, a bare net/http
// client making the same exchanges with no engine. It prints turns/s,
// allocations and bytes per turn for both, their ratio, and the goroutine
// count before and after, to show that nothing leaks.
//
//	go run ./bench/agentloop -runs 10000 -rounds 5
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/openai"
	"github.com/weft-run/weft/tool"
)

func main() {
	runs := flag.Int("runs", 2000, "runs per round and client (each run is two model turns and one tool call)")
	rounds := flag.Int("rounds", 5, "alternating rounds; medians are reported")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of engine-only runs to this file and exit")
	memprofile := flag.String("memprofile", "", "write an allocation profile of engine-only runs to this file and exit")
	bareProfile := flag.Bool("profilebare", false, "profile the bare client's runs instead of the engine's, to compare the two profiles")
	flag.Parse()
	if *cpuprofile != "" || *memprofile != "" {
		if err := profile(*runs, *cpuprofile, *memprofile, *bareProfile); err != nil {
			fmt.Fprintln(os.Stderr, "agentloop:", err)
			os.Exit(1)
		}
		return
	}
	if err := bench(*runs, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "agentloop:", err)
		os.Exit(1)
	}
}

// fake serves the two pre-rendered responses of a run: a tool call when the
// conversation has no tool result yet, the answer when it has.
func fake() (url string, stop func(), err error) {
	proto := &llmtest.OpenAIProtocol{}
	req := &llmtest.Request{Body: []byte(`{"stream_options":{"include_usage":true}}`)}
	call := llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_1", "echo", `{"te`, `xt":"`, `hello"}`)}, Usage: llm.Usage{InputTokens: 120, OutputTokens: 20}}
	answer := llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(strings.Fields("The tool said hello , so the answer is hello and that is all there is to say about it .")...)}, Usage: llm.Usage{InputTokens: 160, OutputTokens: 24}}
	callBody := []byte(strings.Join(proto.Frames(&call, req), ""))
	answerBody := []byte(strings.Join(proto.Frames(&answer, req), ""))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if bytes.Contains(body, []byte(`"role":"tool"`)) {
			w.Write(answerBody)
		} else {
			w.Write(callBody)
		}
	})}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/v1", func() { srv.Close() }, nil
}

// conns counts connections the fake accepted, to show that both clients
// reuse them.
var conns atomic.Int64

type echoIn struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

// setup starts the fake and builds the engine against it.
func setup() (base string, a *agent.Agent, stop func(), err error) {
	base, stop, err = fake()
	if err != nil {
		return "", nil, nil, err
	}
	if a, err = engine(base); err != nil {
		stop()
		return "", nil, nil, err
	}
	return base, a, stop, nil
}

func engine(base string) (*agent.Agent, error) {
	p := openai.New(openai.Config{Endpoint: llm.Endpoint{BaseURL: base, APIKey: "sk-bench"}})
	reg, err := tool.NewRegistry(tool.Func("echo", "Echoes its input.", tool.Meta{ReadOnly: true, ConcurrencySafe: true, Effect: tool.EffectRead},
		func(ctx context.Context, in echoIn, _ *tool.Call) (tool.Result, error) {
			return tool.Text(in.Text), nil
		}))
	if err != nil {
		return nil, err
	}
	info := llm.DefaultCatalog().Lookup("openai", "gpt-4.1")
	return agent.New(agent.Config{Provider: p, Model: "gpt-4.1", ModelInfo: &info, Tools: reg, Approve: agent.AllowAll, System: "You are terse."})
}

func engineRun(a *agent.Agent) error {
	var err error
	for _, e := range a.NewSession().Run(context.Background(), "say hello through the echo tool") {
		if e != nil {
			err = e
		}
	}
	return err
}

// bareRun is the same exchange without an engine: build the request, read
// the SSE lines, decode chunks, accumulate the tool call, run the tool
// inline, send the result, read the answer.
func bareRun(client *http.Client, base string) error {
	type fn struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	}
	type tc struct {
		Index    int    `json:"index"`
		ID       string `json:"id,omitempty"`
		Type     string `json:"type,omitempty"`
		Function fn     `json:"function"`
	}
	type msg struct {
		Role       string `json:"role"`
		Content    any    `json:"content"`
		ToolCalls  []tc   `json:"tool_calls,omitempty"`
		ToolCallID string `json:"tool_call_id,omitempty"`
	}
	type chunk struct {
		Choices []struct {
			Delta struct {
				Content   string `json:"content"`
				ToolCalls []tc   `json:"tool_calls"`
			} `json:"delta"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "echo", "description": "Echoes its input.",
		"parameters": json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}}}
	msgs := []msg{{Role: "system", Content: "You are terse."}, {Role: "user", Content: "say hello through the echo tool"}}
	for turn := 0; turn < 2; turn++ {
		body, err := json.Marshal(map[string]any{"model": "gpt-4.1", "stream": true, "stream_options": map[string]bool{"include_usage": true}, "messages": msgs, "tools": tools})
		if err != nil {
			return err
		}
		resp, err := client.Post(base+"/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		var text strings.Builder
		var calls []tc
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Bytes()
			if !bytes.HasPrefix(line, []byte("data: ")) || bytes.Equal(line, []byte("data: [DONE]")) {
				continue
			}
			var c chunk
			if err := json.Unmarshal(line[6:], &c); err != nil {
				resp.Body.Close()
				return err
			}
			for _, ch := range c.Choices {
				text.WriteString(ch.Delta.Content)
				for _, d := range ch.Delta.ToolCalls {
					if d.Index >= len(calls) {
						calls = append(calls, d)
						continue
					}
					calls[d.Index].Function.Arguments += d.Function.Arguments
				}
			}
		}
		resp.Body.Close()
		if len(calls) == 0 {
			return nil
		}
		msgs = append(msgs, msg{Role: "assistant", ToolCalls: calls})
		for _, c := range calls {
			var in echoIn
			if err := json.Unmarshal([]byte(c.Function.Arguments), &in); err != nil {
				return err
			}
			msgs = append(msgs, msg{Role: "tool", ToolCallID: c.ID, Content: in.Text})
		}
	}
	return nil
}

type sample struct {
	turnsPerSec, allocsPerTurn, bytesPerTurn float64
}

// measureAllocs runs fn runs times and returns allocations per turn.
func measureAllocs(runs int, fn func() error) (allocs, bytes float64, err error) {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range runs {
		if err := fn(); err != nil {
			return 0, 0, err
		}
	}
	runtime.ReadMemStats(&m1)
	turns := float64(2 * runs)
	return float64(m1.Mallocs-m0.Mallocs) / turns, float64(m1.TotalAlloc-m0.TotalAlloc) / turns, nil
}

// measureTimes alternates the two clients run by run, so that both see the
// same machine load, and returns turns per second for each.
func measureTimes(runs int, a, b func() error) (float64, float64, error) {
	var ta, tb time.Duration
	for range runs {
		t0 := time.Now()
		if err := a(); err != nil {
			return 0, 0, err
		}
		t1 := time.Now()
		if err := b(); err != nil {
			return 0, 0, err
		}
		ta += t1.Sub(t0)
		tb += time.Since(t1)
	}
	turns := float64(2 * runs)
	return turns / ta.Seconds(), turns / tb.Seconds(), nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// profile runs the engine (or, with bare, the bare client) alone under the
// profilers, for finding the engine's overhead.
func profile(runs int, cpu, mem string, bare bool) error {
	base, a, stop, err := setup()
	if err != nil {
		return err
	}
	defer stop()
	run := func() error { return engineRun(a) }
	if bare {
		client := &http.Client{}
		run = func() error { return bareRun(client, base) }
	}
	if cpu != "" {
		f, err := os.Create(cpu)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if mem != "" {
		runtime.MemProfileRate = 512
	}
	for range runs {
		if err := run(); err != nil {
			return err
		}
	}
	if mem != "" {
		f, err := os.Create(mem)
		if err != nil {
			return err
		}
		defer f.Close()
		return pprof.Lookup("allocs").WriteTo(f, 0)
	}
	return nil
}

func bench(runs, rounds int) error {
	base, a, stop, err := setup()
	if err != nil {
		return err
	}
	defer stop()
	client := &http.Client{}
	// Warm up both paths (connections, caches) before counting goroutines.
	for range 50 {
		if err := engineRun(a); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		if err := bareRun(client, base); err != nil {
			return fmt.Errorf("bare: %w", err)
		}
	}
	runtime.GC()
	g0 := runtime.NumGoroutine()
	var eng, bare [3][]float64
	engineRunFn := func() error { return engineRun(a) }
	bareRunFn := func() error { return bareRun(client, base) }
	for r := range rounds {
		et, bt, err := measureTimes(runs, engineRunFn, bareRunFn)
		if err != nil {
			return err
		}
		ea, eb, err := measureAllocs(runs/4+1, engineRunFn)
		if err != nil {
			return err
		}
		ba, bb, err := measureAllocs(runs/4+1, bareRunFn)
		if err != nil {
			return err
		}
		for i, v := range [3]float64{et, ea, eb} {
			eng[i] = append(eng[i], v)
		}
		for i, v := range [3]float64{bt, ba, bb} {
			bare[i] = append(bare[i], v)
		}
		fmt.Printf("round %d: engine %.0f turns/s, bare %.0f turns/s, ratio %.3f\n", r+1, et, bt, et/bt)
	}
	time.Sleep(100 * time.Millisecond)
	runtime.GC()
	g1 := runtime.NumGoroutine()
	fmt.Printf("\n%d runs x %d rounds per client (2 model turns + 1 tool call per run), medians:\n", runs, rounds)
	fmt.Printf("%-8s %12s %14s %14s\n", "", "turns/s", "allocs/turn", "bytes/turn")
	fmt.Printf("%-8s %12.0f %14.0f %14.0f\n", "engine", median(eng[0]), median(eng[1]), median(eng[2]))
	fmt.Printf("%-8s %12.0f %14.0f %14.0f\n", "bare", median(bare[0]), median(bare[1]), median(bare[2]))
	fmt.Printf("ratio engine/bare (throughput): %.3f\n", median(eng[0])/median(bare[0]))
	fmt.Printf("connections accepted by the fake: %d\n", conns.Load())
	fmt.Printf("goroutines: %d before, %d after %d engine runs\n", g0, g1, rounds*(runs+runs/4+1))
	return nil
}
