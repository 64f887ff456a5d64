package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/compact"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/tool"
)

// runEvents runs prompt and returns its events and the error that ended it.
func runEvents(s *agent.Session, prompt string) ([]agent.Event, error) {
	var evs []agent.Event
	var runErr error
	for ev, err := range s.Run(context.Background(), prompt) {
		evs = append(evs, ev)
		if err != nil {
			runErr = err
		}
	}
	return evs, runErr
}

func compactions(evs []agent.Event) []agent.CompactionData {
	var out []agent.CompactionData
	for _, ev := range evs {
		if d, ok := ev.Data.(agent.CompactionData); ok {
			out = append(out, d)
		}
	}
	return out
}

// TestPromptTooLongCompactsThenRetriesOnce: a prompt the estimate takes
// for small but the provider counts over the window (text that tokenizes
// densely: here control characters, six bytes each on the wire) is
// refused in each provider's real shape; the refusal recalibrates the
// estimate, the conversation is compacted (a summary by the compact
// model, then the message too large for the window cut) and the request
// is sent exactly once more. With compaction off, the refusal ends the
// turn after one request.
func TestPromptTooLongCompactsThenRetriesOnce(t *testing.T) {
	t.Parallel()
	const window = 8000
	dense := strings.Repeat("\x01", 9000)
	for _, pf := range protocolFakes() {
		for _, off := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/off=%v", pf.name, off), func(t *testing.T) {
				t.Parallel()
				main := pf.fake(t).WithContextWindow(window)
				main.Push(llmtest.Text(strings.Repeat("a long first answer. ", 200)), llmtest.Text("ok"))
				small := pf.fake(t)
				small.Push(llmtest.Text(summaryText)).Repeat()
				info := llm.ModelInfo{ID: "big-model", ContextWindow: window, MaxOutputTokens: 1000}
				a, err := agent.New(agent.Config{Provider: pf.prov(main.URL), Model: "big-model", ModelInfo: &info,
					CompactProvider: pf.prov(small.URL), CompactModel: "small-model",
					Context: compact.Config{Off: off, MicroAt: -1, SummaryAt: -1},
					Retry:   agent.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}})
				if err != nil {
					t.Fatal(err)
				}
				s := a.NewSession()
				if _, err := runEvents(s, "hello "+strings.Repeat("some words ", 300)); err != nil {
					t.Fatal(err)
				}
				evs, err := runEvents(s, "look at this: "+dense)
				reqs := main.Requests()
				if off {
					if err == nil || !strings.Contains(err.Error(), "tokens over big-model's context window") {
						t.Fatalf("err = %v", err)
					}
					if len(reqs) != 2 || len(small.Requests()) != 0 {
						t.Fatalf("%d requests, %d summary requests: the refusal must cost one request", len(reqs), len(small.Requests()))
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(reqs) != 3 {
					t.Fatalf("%d requests, want 3 (the refused one and one more)", len(reqs))
				}
				if n := llmtest.PromptTokens(reqs[1].Body); n <= window {
					t.Fatalf("the second request (%d tokens) was not over the window", n)
				}
				if n := llmtest.PromptTokens(reqs[2].Body); n > window {
					t.Fatalf("the retry is %d tokens", n)
				}
				retries := 0
				for _, ev := range evs {
					if ev.Type == agent.EventRetry {
						retries++
					}
				}
				cs := compactions(evs)
				levels := []string{}
				for _, c := range cs {
					if c.Trigger != string(compact.TriggerPromptTooLong) {
						t.Errorf("compaction %+v: want trigger prompt_too_long", c)
					}
					levels = append(levels, c.Level)
				}
				if retries != 1 || strings.Join(levels, ",") != "summary,truncate" {
					t.Fatalf("%d retries, levels %v", retries, levels)
				}
				if len(small.Requests()) != 1 {
					t.Fatalf("%d summary requests", len(small.Requests()))
				}
				// The user's own message survives, cut, and says so; being
				// a user message, it is merged into the first one.
				v := s.View()
				if len(v) != 2 || !strings.Contains(mustJSON(t, v[0]), "characters cut here") || !strings.Contains(mustJSON(t, v[0]), "Keep dumping files") {
					t.Fatalf("view after compaction: %s", mustJSON(t, v))
				}
			})
		}
	}
}

// TestTokenWarningsOnceEach: with compaction off, a growing session warns
// at 80% and at 95% of its usable window, once each and in order, and
// every turn_end says how full the window is.
func TestTokenWarningsOnceEach(t *testing.T) {
	t.Parallel()
	const window = 8000
	main := llmtest.NewAnthropic(t).WithContextWindow(window)
	for range 30 {
		main.Push(llmtest.Text("noted"))
	}
	info := llm.ModelInfo{ID: "m", ContextWindow: window, MaxOutputTokens: 1000}
	a, err := agent.New(agent.Config{Provider: protocolFakes()[0].prov(main.URL), Model: "m", ModelInfo: &info, Context: compact.Config{Off: true}})
	if err != nil {
		t.Fatal(err)
	}
	limit := a.ContextBudget().Limit()
	s := a.NewSession()
	var warnings []agent.TokenWarningData
	last := 0
	for p := 0; p < 30 && len(warnings) < 2; p++ {
		evs, err := runEvents(s, fmt.Sprintf("note %d: %s", p, strings.Repeat("words to remember ", 100)))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			switch d := ev.Data.(type) {
			case agent.TurnEndData:
				if d.Context == nil || d.Context.Window != window || d.Context.Limit != limit || d.Context.UsedTokens <= last {
					t.Fatalf("turn_end context %+v after %d", d.Context, last)
				}
				last = d.Context.UsedTokens
			case agent.TokenWarningData:
				if float64(d.UsedTokens) < d.Threshold*float64(limit) || d.UsedTokens != last {
					t.Errorf("warning %+v at %d of %d", d, last, limit)
				}
				warnings = append(warnings, d)
			}
		}
	}
	if len(warnings) != 2 || warnings[0].Threshold != 0.8 || warnings[1].Threshold != 0.95 {
		t.Fatalf("warnings %+v", warnings)
	}
	// Past both, no more warnings.
	evs, _ := runEvents(s, "one more")
	for _, ev := range evs {
		if ev.Type == agent.EventTokenWarning {
			t.Fatal("a threshold warned twice")
		}
	}
}

// TestSummaryFailureFallsBack: when the compact model fails (a 400), the
// session compacts without a summary (old results stubbed, the middle
// left out), says so in the event, and the turn goes on.
func TestSummaryFailureFallsBack(t *testing.T) {
	t.Parallel()
	const window = 8000
	pf := protocolFakes()[0]
	main := pf.fake(t).WithContextWindow(window)
	small := pf.fake(t)
	small.Push(llmtest.Script{Status: 400, ErrorMessage: "bad summary request"}).Repeat()
	for range 12 {
		main.Push(llmtest.Text(strings.Repeat("a long answer. ", 150)))
	}
	info := llm.ModelInfo{ID: "m", ContextWindow: window, MaxOutputTokens: 1000}
	a, err := agent.New(agent.Config{Provider: pf.prov(main.URL), Model: "m", ModelInfo: &info,
		CompactProvider: pf.prov(small.URL), CompactModel: "small-model"})
	if err != nil {
		t.Fatal(err)
	}
	s := a.NewSession()
	var cs []agent.CompactionData
	for p := range 12 {
		evs, err := runEvents(s, fmt.Sprintf("prompt %d %s", p, strings.Repeat("x y ", 100)))
		if err != nil {
			t.Fatalf("prompt %d: %v", p, err)
		}
		cs = append(cs, compactions(evs)...)
	}
	if len(small.Requests()) == 0 {
		t.Fatal("no summary was asked for")
	}
	found := false
	for _, c := range cs {
		if strings.Contains(c.Note, "could not be written") && c.TokensAfter < c.TokensBefore {
			found = true
		}
	}
	if !found {
		t.Fatalf("no fallback compaction says the summary failed: %+v", cs)
	}
	for i, r := range main.Requests() {
		if n := llmtest.PromptTokens(r.Body); n > window {
			t.Errorf("request %d is %d tokens", i, n)
		}
	}
	// The user's messages of the dropped part are carried over verbatim
	// (the latest that fit their share).
	if v := mustJSON(t, s.View()); !strings.Contains(v, "prompt 0 x y") || !strings.Contains(v, compact.MetaUserMessages) {
		t.Errorf("the dropped user messages were lost: %.300s", v)
	}
}

// TestManualCompactAndMaxMessages: Session.Compact summarises on demand
// with the given instructions in the summary request; MaxContextMessages
// bounds the view, keeping the first user message.
func TestManualCompactAndMaxMessages(t *testing.T) {
	t.Parallel()
	pf := protocolFakes()[1]
	main := pf.fake(t)
	for range 8 {
		main.Push(llmtest.Text("answer"))
	}
	small := pf.fake(t)
	small.Push(llmtest.Text(summaryText)).Repeat()
	a, err := agent.New(agent.Config{Provider: pf.prov(main.URL), Model: "m",
		CompactProvider: pf.prov(small.URL), CompactModel: "small-model", MaxContextMessages: 5})
	if err != nil {
		t.Fatal(err)
	}
	s := a.NewSession()
	if got, err := s.Compact(context.Background(), ""); err != nil || len(got) != 0 {
		t.Fatalf("compacting an empty session: %v %v", got, err)
	}
	for p := range 6 {
		if _, err := runEvents(s, fmt.Sprintf("prompt %d", p)); err != nil {
			t.Fatal(err)
		}
	}
	v := s.View()
	// At most 5 in a request; the answer to the last one makes 6.
	if len(v) > 6 || v[0].Text() != "prompt 0" && !strings.HasPrefix(v[0].Content[0].Text, "prompt 0") {
		t.Fatalf("view of %d messages: %s", len(v), mustJSON(t, v))
	}
	for _, r := range main.Requests() {
		if n := len(r.JSON()["messages"].([]any)); n > 5+1 { // + the system message
			t.Fatalf("a request carried %d messages", n)
		}
	}
	got, err := s.Compact(context.Background(), "keep the prompt numbers")
	if err != nil || len(got) != 1 || got[0].Level != "summary" || got[0].Trigger != "manual" || got[0].Model != "small-model" {
		t.Fatalf("Compact = %+v, %v", got, err)
	}
	if body := string(small.LastRequest().Body); !strings.Contains(body, "keep the prompt numbers") {
		t.Fatalf("the instructions are not in the summary request: %.300s", body)
	}
	if !strings.Contains(mustJSON(t, s.View()[0]), "Keep dumping files") {
		t.Fatal("the summary is not in the first message")
	}
}

// TestPreCompactHookFires: a pre_compact hook (matched on the trigger)
// sees the compaction before the summary is written, and its additional
// context joins the summary's instructions.
func TestPreCompactHookFires(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "seen")
	m := hooks(t, hook.Def{Event: hook.PreCompact, Matcher: "manual",
		Command: script(t, `cat > `+out+`; echo '{"additionalContext":"REMEMBER-THE-HOOK"}'`)})
	p := llmtest.NewScripted("scripted", llmtest.Text("one"), llmtest.Text("two"), llmtest.Text(summaryText))
	a, err := agent.New(agent.Config{Provider: p, Model: "m", Policy: &policy.Policy{Hooks: m}})
	if err != nil {
		t.Fatal(err)
	}
	s := a.NewSession()
	for _, q := range []string{"first", "second"} {
		if _, err := runEvents(s, q); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := s.Compact(context.Background(), "mine too")
	if err != nil || len(cs) != 1 {
		t.Fatalf("Compact = %+v, %v", cs, err)
	}
	seen, _ := os.ReadFile(out)
	if !strings.Contains(string(seen), `"trigger":"manual"`) || !strings.Contains(string(seen), `"custom_instructions":"mine too"`) {
		t.Fatalf("the hook saw %s", seen)
	}
	reqs := p.Requests()
	if sum := reqs[len(reqs)-1].Messages[0].Text(); !strings.Contains(sum, "REMEMBER-THE-HOOK") || !strings.Contains(sum, "mine too") {
		t.Fatalf("summary request: %s", sum)
	}
}

// TestMicroStubsInBatches: past the micro threshold, old results are
// stubbed in batches worth a tenth of the limit, not one per turn (each
// stub breaks the prompt cache from where it is).
func TestMicroStubsInBatches(t *testing.T) {
	t.Parallel()
	const window, rounds = 20000, 200
	pf := protocolFakes()[0]
	main := pf.fake(t).WithContextWindow(window)
	for i := range rounds {
		main.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock(fmt.Sprintf("c%d", i), "Dump", fmt.Sprintf(`{"n":%d}`, i))}})
	}
	main.Push(llmtest.Text("done"))
	small := pf.fake(t)
	small.Push(llmtest.Text(summaryText)).Repeat()
	reg, err := tool.NewRegistry(smallDumpTool(), compact.Recall())
	if err != nil {
		t.Fatal(err)
	}
	info := llm.ModelInfo{ID: "m", ContextWindow: window, MaxOutputTokens: 1000}
	a, err := agent.New(agent.Config{Provider: pf.prov(main.URL), Model: "m", ModelInfo: &info, Tools: reg, Approve: agent.AllowReadOnly,
		CompactProvider: pf.prov(small.URL), CompactModel: "small-model", MaxTurns: rounds + 1})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := runEvents(a.NewSession(), "dump them all")
	if err != nil {
		t.Fatal(err)
	}
	turn := 0
	var micro []int
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case agent.TurnStartData:
			turn = d.TurnNumber
		case agent.CompactionData:
			if d.Level == string(compact.LevelMicro) {
				micro = append(micro, turn)
			}
		}
	}
	t.Logf("micro at turns %v", micro)
	if len(micro) == 0 {
		t.Fatal("micro never fired")
	}
	for i := 1; i < len(micro); i++ {
		if micro[i]-micro[i-1] < 3 {
			t.Fatalf("micro fired at turns %v: not in batches", micro)
		}
	}
}

// smallDumpTool returns outputs of about 1,500 bytes: a stub saves little
// on each.
func smallDumpTool() tool.Tool {
	return tool.Func("Dump", "Dumps a small file.", tool.Meta{ReadOnly: true, ConcurrencySafe: true, Permission: tool.ClassReadOnly, OutputCap: -1},
		func(_ context.Context, in dumpIn, _ *tool.Call) (tool.Result, error) {
			return tool.Text(bigOutput(in.N, 1500)), nil
		})
}
