package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/tool"
)

// cacheMarker is the exact text the Anthropic provider writes for a
// breakpoint.
const cacheMarker = `,"cache_control":{"type":"ephemeral"}`

// longSystem is a system prompt long enough to be worth caching (the API
// caches nothing shorter than 1024 tokens on Sonnet).
var longSystem = strings.Repeat("You are weft, a careful coding agent. Read before you write; keep edits small. ", 60)

// promptSeq splits a request body into what a provider's prompt cache sees,
// in its order, each element exactly as it appears in the body:
//
//	anthropic: each tool, each system block, then per message its role
//	           and each content block
//	openai:    each tool, then each message
//	gemini:    each tool, the system instruction, then each content
//
// and the rest of the body (model, limits, tool choice: what must not
// change either). Anthropic's cache_control markers are cut out of the
// elements, since where they sit moves from call to call by design; marks
// says which elements carried one.
func promptSeq(t *testing.T, provider string, body []byte) (seq [][]byte, marks []bool, rest map[string]string) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatal(err)
	}
	add := func(raw json.RawMessage) {
		seq = append(seq, bytes.ReplaceAll(raw, []byte(cacheMarker), nil))
		marks = append(marks, bytes.HasSuffix(bytes.TrimSpace(raw), []byte(cacheMarker+"}")))
	}
	list := func(key string) {
		var items []json.RawMessage
		if raw, ok := top[key]; ok {
			if err := json.Unmarshal(raw, &items); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
		}
		for _, it := range items {
			add(it)
		}
		delete(top, key)
	}
	switch provider {
	case "anthropic":
		list("tools")
		list("system")
		var msgs []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(top["messages"], &msgs); err != nil {
			t.Fatal(err)
		}
		delete(top, "messages")
		for _, m := range msgs {
			add(json.RawMessage(`"` + m.Role + `"`))
			for _, b := range m.Content {
				add(b)
			}
		}
	case "openai":
		list("tools")
		list("messages")
	case "gemini":
		list("tools")
		if si, ok := top["systemInstruction"]; ok {
			add(si)
			delete(top, "systemInstruction")
		}
		list("contents")
	}
	rest = map[string]string{}
	for k, v := range top {
		rest[k] = string(v)
	}
	return seq, marks, rest
}

func cacheTools(t *testing.T) *tool.Registry {
	t.Helper()
	reg, err := tool.NewRegistry(echoTool("Lookup", true, nil), echoTool("Note", true, nil), echoTool("Zeta", true, nil))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// cacheSession runs prompts on one session, each answered by calls tool
// turns and then a text turn, and returns the session's events.
func cacheSession(t *testing.T, fake *llmtest.Server, p llm.Provider, info llm.ModelInfo, mode llm.CacheMode, prompts, calls int) []agent.Event {
	t.Helper()
	for i := range prompts {
		for j := range calls {
			id := fmt.Sprintf("call_%d_%d", i, j)
			fake.Push(llmtest.Script{Blocks: []llmtest.Block{
				llmtest.TextBlock(fmt.Sprintf("Looking up item %d.", j)),
				llmtest.ToolBlock(id, "Lookup", fmt.Sprintf(`{"text":"item %d of prompt %d"}`, j, i)),
			}, Usage: llm.Usage{InputTokens: 1, OutputTokens: 20}})
		}
		fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(fmt.Sprintf("Done with prompt %d.", i))},
			Usage: llm.Usage{InputTokens: 1, OutputTokens: 10}})
	}
	a, err := agent.New(agent.Config{Provider: p, Model: info.ID, ModelInfo: &info, System: longSystem, Tools: cacheTools(t),
		Approve: agent.AllowReadOnly, PromptCache: mode})
	if err != nil {
		t.Fatal(err)
	}
	s := a.NewSession()
	var events []agent.Event
	for i := range prompts {
		c := collect(s, context.Background(), fmt.Sprintf("Prompt %d: look things up.", i))
		if c.err != nil {
			t.Fatalf("prompt %d: %v (events %v)", i, c.err, c.types())
		}
		events = append(events, c.events...)
	}
	return events
}

// TestPromptPrefixIsStableAcrossTurns: each request of a session starts with
// the whole of the one before, byte for byte (tools in the same order, the
// same system prompt, every earlier message unchanged), so the providers'
// prefix caches hit; on Anthropic, the next request also carries a
// breakpoint exactly where the previous one's last breakpoint was, so it
// reads what that one wrote.
func TestPromptPrefixIsStableAcrossTurns(t *testing.T) {
	t.Parallel()
	for _, wp := range wireProviders() {
		t.Run(wp.name, func(t *testing.T) {
			t.Parallel()
			fake := wp.fake(t)
			info := llm.ModelInfo{ID: "test-model", ContextWindow: 200_000, MaxOutputTokens: 1000}
			cacheSession(t, fake, wp.prov(fake.URL), info, llm.CacheAuto, 2, 3)
			reqs := fake.Requests()
			if len(reqs) != 8 {
				t.Fatalf("requests = %d, want 8", len(reqs))
			}
			var key string
			for k := 1; k < len(reqs); k++ {
				prev, prevMarks, prevRest := promptSeq(t, wp.name, reqs[k-1].Body)
				next, nextMarks, nextRest := promptSeq(t, wp.name, reqs[k].Body)
				if len(next) <= len(prev) {
					t.Fatalf("request %d is not longer than the one before", k)
				}
				for i := range prev {
					if !bytes.Equal(prev[i], next[i]) {
						t.Fatalf("request %d changes element %d of the prefix:\nwas %s\nnow %s", k, i, prev[i], next[i])
					}
				}
				if fmt.Sprint(prevRest) != fmt.Sprint(nextRest) {
					t.Fatalf("request %d changes the settings:\nwas %v\nnow %v", k, prevRest, nextRest)
				}
				if wp.name == "anthropic" {
					last := -1
					for i, m := range prevMarks {
						if m {
							last = i
						}
					}
					if last < 0 || !nextMarks[last] {
						t.Fatalf("request %d has no breakpoint where request %d's last one was (%d)", k, k-1, last)
					}
				}
				if wp.name == "openai" {
					// One conversation, one prompt_cache_key.
					got := nextRest["prompt_cache_key"]
					if got == "" || key != "" && got != key {
						t.Fatalf("prompt_cache_key %s, earlier %s", got, key)
					}
					key = got
				}
			}
		})
	}
}

// TestAnthropicPromptCachingCost runs a 20-turn session against the
// Anthropic fake, which accounts for prompt caching as the API does. Every
// request carries the breakpoints (last tool, system, last two user turns;
// never more than four), every turn after the first reads all that the turn
// before cached, and the cost prices cache reads and writes at the
// catalogue's cache rates: the same session without caching costs more.
func TestAnthropicPromptCachingCost(t *testing.T) {
	t.Parallel()
	info := llm.DefaultCatalog().Lookup("anthropic", "claude-sonnet-4-5")
	run := func(mode llm.CacheMode) ([]llmtest.Request, []agent.TurnEndData, agent.DoneData) {
		fake := llmtest.NewAnthropic(t).WithPromptCache(1024)
		p := anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL, APIKey: "k"}})
		events := cacheSession(t, fake, p, info, mode, 4, 4)
		var turns []agent.TurnEndData
		var total agent.DoneData
		for _, ev := range events {
			switch d := ev.Data.(type) {
			case agent.TurnEndData:
				turns = append(turns, d)
			case agent.DoneData:
				total.CostUSD += d.CostUSD
				total.TotalCacheReadTokens += d.TotalCacheReadTokens
				total.TotalCacheWriteTokens += d.TotalCacheWriteTokens
				total.TotalInputTokens += d.TotalInputTokens
			}
		}
		return fake.Requests(), turns, total
	}
	reqs, turns, cached := run(llm.CacheAuto)
	if len(reqs) != 20 || len(turns) != 20 {
		t.Fatalf("%d requests, %d turns; want 20", len(reqs), len(turns))
	}
	for k, r := range reqs {
		body := r.JSON()
		tools := body["tools"].([]any)
		system := body["system"].([]any)
		msgs := body["messages"].([]any)
		marked := func(v any) bool { _, ok := v.(map[string]any)["cache_control"]; return ok }
		if !marked(tools[len(tools)-1]) || !marked(system[len(system)-1]) {
			t.Fatalf("request %d: tools or system not cached:\n%s", k, r.Body)
		}
		users := 0
		for i := len(msgs) - 1; i >= 0 && users < 2; i-- {
			m := msgs[i].(map[string]any)
			if m["role"] != "user" {
				continue
			}
			content := m["content"].([]any)
			if !marked(content[len(content)-1]) {
				t.Fatalf("request %d: user message %d has no breakpoint on its last block", k, i)
			}
			users++
		}
		if n := strings.Count(string(r.Body), `"cache_control"`); n > anthropic.MaxBreakpoints || n != 2+users {
			t.Fatalf("request %d carries %d breakpoints (%d user turns)", k, n, users)
		}
	}
	rate := func(u agent.TurnEndData) float64 {
		return (float64(u.InputTokens)*info.InputPrice + float64(u.OutputTokens)*info.OutputPrice +
			float64(u.CacheReadTokens)*info.CacheReadPrice + float64(u.CacheWriteTokens)*info.CacheWritePrice) / 1e6
	}
	for k, u := range turns {
		if k == 0 && (u.CacheReadTokens != 0 || u.CacheWriteTokens == 0) {
			t.Fatalf("turn 1: %+v, want a cache write and no read", u)
		}
		if k > 0 && u.CacheReadTokens != turns[k-1].CacheReadTokens+turns[k-1].CacheWriteTokens {
			t.Fatalf("turn %d reads %d tokens, want all that turn %d cached (%d)", k+1, u.CacheReadTokens, k,
				turns[k-1].CacheReadTokens+turns[k-1].CacheWriteTokens)
		}
		if math.Abs(u.CostUSD-rate(u)) > 1e-12 {
			t.Fatalf("turn %d costs %g, want %g at the cache rates", k+1, u.CostUSD, rate(u))
		}
	}
	if cached.TotalCacheReadTokens == 0 {
		t.Fatal("no cache reads reported")
	}

	reqsOff, turnsOff, uncached := run(llm.CacheOff)
	for k := range reqsOff {
		if bytes.Contains(reqsOff[k].Body, []byte("cache_control")) {
			t.Fatalf("caching off, request %d carries cache_control", k)
		}
		on, off := turns[k], turnsOff[k]
		if off.CacheReadTokens+off.CacheWriteTokens != 0 ||
			off.InputTokens != on.InputTokens+on.CacheReadTokens+on.CacheWriteTokens {
			t.Fatalf("turn %d: %+v uncached vs %+v cached: the prompts differ", k+1, off, on)
		}
	}
	if !(cached.CostUSD < uncached.CostUSD*0.5) {
		t.Fatalf("cached session $%.4f, uncached $%.4f: caching should more than halve a 20-turn session", cached.CostUSD, uncached.CostUSD)
	}
	t.Logf("20 turns: $%.4f cached (%d read, %d written, %d uncached input tokens), $%.4f without caching",
		cached.CostUSD, cached.TotalCacheReadTokens, cached.TotalCacheWriteTokens, cached.TotalInputTokens, uncached.CostUSD)
}
