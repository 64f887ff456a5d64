package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/record"
)

// budgetScripts are a Read of a file (6000 in, about what weft's system
// prompt and tools are, 200 out: $0.021 at claude-sonnet-4-5's $3/$15)
// and an answer.
func budgetScripts(fake *llmtest.Server, ws string) { budgetScriptsIn(fake, ws, 6000) }

// budgetScriptsIn is budgetScripts with the first call reporting in input
// tokens.
func budgetScriptsIn(fake *llmtest.Server, ws string, in int) {
	fake.Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("c1", "Read", fmt.Sprintf(`{"file_path":%q}`, filepath.Join(ws, "a.txt")))},
			Usage: llm.Usage{InputTokens: in, OutputTokens: 200}},
		llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("alpha")}, Usage: llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 6000}},
	)
}

func budgetEnv(t *testing.T, fake *llmtest.Server) (map[string]string, string) {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": fake.URL, "WEFT_WORKSPACE": ws, "HOME": t.TempDir()}, ws
}

// budgetProbe is what weft run estimates its first model call at (the
// whole prompt: weft's system prompt and tool list, which grow as weft
// does), in dollars and tokens: the limits below are set from it, so that
// the first call fits them and the first two do not.
func budgetProbe(t *testing.T) (usd float64, tokens int) {
	t.Helper()
	fake := llmtest.NewAnthropic(t)
	env, _ := budgetEnv(t, fake)
	stdout, _, _ := run(t, env, "", "run", "--yes", "--format", "json", "--model", "anthropic:claude-sonnet-4-5", "--max-budget-usd", "0.000001", "read a.txt")
	var res runResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.BudgetRequest == nil {
		t.Fatalf("probe: %v: %s", err, stdout)
	}
	return res.BudgetRequest.EstimateUSD, res.BudgetRequest.EstimateTokens
}

// TestRunStopsOnItsBudget: weft run --max-budget-usd 0.01 makes one model
// call ($0.009) and stops before the second, which would pass the budget:
// exit code 3, stop_reason budget, and the budget_request in --format
// json and stream-json. Without a limit (or with a larger one) the run
// ends normally.
func TestRunStopsOnItsBudget(t *testing.T) {
	t.Parallel()
	estUSD, estTokens := budgetProbe(t)
	usd, toks := fmt.Sprint(estUSD*1.25), fmt.Sprint(estTokens*5/4)
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		format   string
		requests int
		stop     string
	}{
		// The first call's estimate (the whole prompt at the cache-write
		// rate) is over $0.000001: nothing is sent.
		{name: "one cent", args: []string{"--max-budget-usd", "0.000001"}, format: "json", requests: 0, stop: agent.StopBudget},
		// The first call fits 1.25 times its estimate; the second (the
		// first's prompt again, and more) not.
		{name: "json", args: []string{"--max-budget-usd", usd}, format: "json", requests: 1, stop: agent.StopBudget},
		{name: "stream-json", args: []string{"--max-budget-usd", usd}, format: "stream-json", requests: 1, stop: agent.StopBudget},
		{name: "tokens", args: []string{"--max-tokens-total", toks}, format: "json", requests: 1, stop: agent.StopBudget},
		{name: "env", env: map[string]string{"WEFT_MAX_BUDGET_USD": usd}, format: "json", requests: 1, stop: agent.StopBudget},
		{name: "enough", args: []string{"--max-budget-usd", "10"}, format: "json", requests: 2, stop: agent.StopEndTurn},
		{name: "none", format: "json", requests: 2, stop: agent.StopEndTurn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.NewAnthropic(t)
			env, ws := budgetEnv(t, fake)
			budgetScriptsIn(fake, ws, estTokens)
			for k, v := range tt.env {
				env[k] = v
			}
			args := append([]string{"run", "--yes", "--format", tt.format, "--model", "anthropic:claude-sonnet-4-5"}, tt.args...)
			stdout, stderr, err := run(t, env, "", append(args, "read a.txt")...)
			if got := len(fake.Requests()); got != tt.requests {
				t.Fatalf("%d model calls, want %d\n%s\n%s", got, tt.requests, stdout, stderr)
			}
			var exit *exitError
			if tt.stop == agent.StopBudget {
				if !errors.As(err, &exit) || exit.code != exitBudget {
					t.Fatalf("err = %v, want exit code %d", err, exitBudget)
				}
			} else if err != nil {
				t.Fatalf("err = %v\n%s", err, stderr)
			}
			switch tt.format {
			case "json":
				var res runResult
				if err := json.Unmarshal([]byte(stdout), &res); err != nil {
					t.Fatalf("%v: %s", err, stdout)
				}
				if res.StopReason != tt.stop {
					t.Fatalf("result = %+v", res)
				}
				if tt.stop == agent.StopBudget {
					if !res.IsError || res.BudgetRequest == nil || res.BudgetDecision == nil || res.BudgetDecision.Allow ||
						!strings.Contains(res.Error, "budget") || res.CostUSD > res.BudgetRequest.MaxUSD && res.BudgetRequest.MaxUSD > 0 {
						t.Fatalf("result = %+v", res)
					}
				} else if res.BudgetRequest != nil || res.IsError {
					t.Fatalf("result = %+v", res)
				}
			case "stream-json":
				var types []string
				sc := bufio.NewScanner(strings.NewReader(stdout))
				for sc.Scan() {
					var ev struct {
						Type       string `json:"type"`
						StopReason string `json:"stop_reason"`
					}
					if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
						t.Fatalf("%v: %s", err, sc.Text())
					}
					types = append(types, ev.Type)
				}
				got := strings.Join(types, " ")
				if !strings.Contains(got, "tool_result budget_request budget_decision done") {
					t.Fatalf("events: %s", got)
				}
			}
		})
	}
}

// TestBudgetPrompt: the terminal answers a budget_request with a new
// limit (numbers at or below the limit, and garbage, are asked again),
// "y" for as much again, or no.
func TestBudgetPrompt(t *testing.T) {
	t.Parallel()
	usdReq := agent.BudgetRequest{MaxUSD: 0.01, SpentUSD: 0.009, EstimateUSD: 0.005, Message: "over"}
	tokReq := agent.BudgetRequest{MaxTokens: 1000, SpentTokens: 900, EstimateTokens: 300, Message: "over"}
	tests := []struct {
		name  string
		req   agent.BudgetRequest
		input string
		want  agent.BudgetDecision
	}{
		{"new limit", usdReq, "abc\n0.005\n$0.5\n", agent.BudgetDecision{Allow: true, MaxUSD: 0.5}},
		{"yes doubles", usdReq, "y\n", agent.BudgetDecision{Allow: true, MaxUSD: 0.02}},
		{"tokens", tokReq, "5000\n", agent.BudgetDecision{Allow: true, MaxTokens: 5000}},
		{"no", usdReq, "n\n", agent.BudgetDecision{Reason: "the user declined"}},
		{"empty is no", usdReq, "\n", agent.BudgetDecision{Reason: "the user declined"}},
		{"end of input", usdReq, "", agent.BudgetDecision{Reason: "no answer to the budget prompt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			p := &budgetPrompt{lines: &lineReader{r: bufio.NewReader(strings.NewReader(tt.input)), terminal: true}, out: &out}
			if got := p.approve(context.Background(), tt.req); got != tt.want {
				t.Fatalf("decision %+v, want %+v\n%s", got, tt.want, out.String())
			}
		})
	}
}

// TestBudgetFlagsApprover: a terminal gets the budget prompt; --yes or no
// terminal gets none (a breach stops the run); negative limits are
// refused.
func TestBudgetFlagsApprover(t *testing.T) {
	t.Parallel()
	term := &lineReader{r: bufio.NewReader(strings.NewReader("")), terminal: true}
	pipe := &lineReader{r: bufio.NewReader(strings.NewReader(""))}
	env := environ{getenv: func(string) string { return "" }}
	for _, tt := range []struct {
		name  string
		lines *lineReader
		yes   bool
		want  bool
	}{{"terminal", term, false, true}, {"terminal --yes", term, true, false}, {"pipe", pipe, false, false}, {"none", nil, false, false}} {
		var cfg agent.Config
		b := budgetFlags{maxUSD: 1, session: true}
		if err := b.apply(env, &cfg, tt.lines, io.Discard, tt.yes); err != nil {
			t.Fatal(err)
		}
		if (cfg.ApproveBudget != nil) != tt.want || cfg.Budget.MaxUSD != 1 || !cfg.Budget.Session {
			t.Errorf("%s: approver %v, budget %+v", tt.name, cfg.ApproveBudget != nil, cfg.Budget)
		}
	}
	if err := (&budgetFlags{maxUSD: -1}).apply(env, &agent.Config{}, nil, io.Discard, false); err == nil {
		t.Error("a negative budget was accepted")
	}
}

// streamCost runs weft run with stream-json and sums its turn_end costs.
func streamCost(t *testing.T, env map[string]string, args ...string) float64 {
	t.Helper()
	stdout, stderr, err := run(t, env, "", append([]string{"run", "--yes", "--format", "stream-json"}, args...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var ev struct {
			Type    string  `json:"type"`
			CostUSD float64 `json:"cost_usd"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "turn_end" {
			sum += ev.CostUSD
		}
	}
	return sum
}

// TestCostAgreesWithTurnEnds: two weft runs append their model calls to
// the ledger (0600), and weft cost's totals, by model and by session,
// agree with the sum of the runs' turn_end costs.
func TestCostAgreesWithTurnEnds(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	env, ws := budgetEnv(t, fake)
	budgetScripts(fake, ws)
	budgetScripts(fake, ws)
	want := streamCost(t, env, "--model", "anthropic:claude-sonnet-4-5", "read a.txt")
	want += streamCost(t, env, "--model", "anthropic:claude-sonnet-4-5", "read a.txt again")
	if want <= 0 {
		t.Fatal("the runs cost nothing")
	}
	ledger := filepath.Join(env["HOME"], ".weft", "usage.jsonl")
	st, err := os.Stat(ledger)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("ledger %v, %v", st, err)
	}
	stdout, _, err := run(t, env, "", "cost", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rep costReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	for name, g := range map[string]record.UsageGroup{"24h": rep.Last24h, "7d": rep.Last7d, "total": rep.Total} {
		if g.Calls != 4 || math.Abs(g.CostUSD-want) > 1e-9 {
			t.Errorf("%s = %+v, want 4 calls costing $%v", name, g, want)
		}
	}
	if len(rep.ByModel) != 1 || rep.ByModel[0].Key != "claude-sonnet-4-5" || math.Abs(rep.ByModel[0].CostUSD-want) > 1e-9 {
		t.Errorf("by model = %+v", rep.ByModel)
	}
	if len(rep.BySession) != 2 || math.Abs(rep.BySession[0].CostUSD+rep.BySession[1].CostUSD-want) > 1e-9 {
		t.Errorf("by session = %+v", rep.BySession)
	}
	text, _, err := run(t, env, "", "cost")
	if err != nil || !strings.Contains(text, fmt.Sprintf("$%.4f", want)) || !strings.Contains(text, "claude-sonnet-4-5") {
		t.Errorf("text report (%v):\n%s", err, text)
	}
}

// TestCostFromServer: a real weft serve records every model call of its
// session turns in the store's cost history; GET /v1/usage and weft cost
// --server agree with the sum of the turn_end costs the streams carried,
// and the bearer token is sent. A request's max_budget_usd ends its turn
// with stop_reason "budget" before the call that would pass it.
func TestCostFromServer(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	envm, ws := budgetEnv(t, fake)
	const token = "cost-test-token-0123456789abcdef"
	env := []string{"ANTHROPIC_API_KEY=k", "ANTHROPIC_BASE_URL=" + fake.URL}
	p := startServe(t, env, "--db", filepath.Join(ws, "weft.db"), "--workspace", ws, "--model", "anthropic:claude-sonnet-4-5",
		"--permission-mode", "bypass", "--bearer-token", token, "--no-checkpoints")
	auth := []string{"Authorization", "Bearer " + token}
	var want float64
	for _, sid := range []string{"s1", "s2"} {
		budgetScripts(fake, ws)
		p.expect("POST", "/v1/sessions", `{"session_id":"`+sid+`"}`, 201, auth...)
		resp := p.request("POST", "/v1/sessions/"+sid+"/messages", `{"prompt":"go"}`, auth...)
		fs, _ := frames(t, resp, func(f frame) bool { return f.event == "done" })
		resp.Body.Close()
		for _, f := range fs {
			if f.event == "turn_end" {
				var d struct {
					CostUSD float64 `json:"cost_usd"`
				}
				if err := json.Unmarshal([]byte(f.data), &d); err != nil {
					t.Fatal(err)
				}
				want += d.CostUSD
			}
		}
	}
	if want == 0 {
		t.Fatal("no turn_end cost")
	}
	// A per-request budget: the first call ($0.02 at these counts) passes
	// $0.001, so the turn stops before it.
	budgetScripts(fake, ws)
	p.expect("POST", "/v1/sessions", `{"session_id":"s3"}`, 201, auth...)
	resp := p.request("POST", "/v1/sessions/s3/messages", `{"prompt":"go","max_budget_usd":0.001}`, auth...)
	fs, _ := frames(t, resp, func(f frame) bool { return f.event == "done" })
	resp.Body.Close()
	if done := fs[len(fs)-1]; done.event != "done" || !strings.Contains(done.data, `"stop_reason":"budget"`) {
		t.Fatalf("turn with max_budget_usd 0.001: %s", eventNames(fs))
	}
	p.expect("POST", "/v1/sessions/s4/messages", `{"prompt":"go","max_budget_usd":-1}`, 400, auth...)

	m := p.expect("GET", "/v1/usage?group_by=session", "", 200, auth...)
	if !strings.Contains(toJSON(t, m), `"s1"`) || !strings.Contains(toJSON(t, m), `"s2"`) {
		t.Fatalf("usage by session: %v", m)
	}
	stdout, stderr, err := run(t, map[string]string{"WEFT_BEARER_TOKEN": token, "HOME": envm["HOME"]}, "", "cost", "--server", p.url, "--format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var rep costReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if rep.Total.Calls != 4 || math.Abs(rep.Total.CostUSD-want) > 1e-9 || math.Abs(rep.Last24h.CostUSD-want) > 1e-9 {
		t.Fatalf("report %+v, want 4 calls, $%v", rep, want)
	}
	if len(rep.BySession) != 2 || len(rep.ByModel) != 1 {
		t.Fatalf("report %+v", rep)
	}
}

// TestLedgerSurvivesAPartialLine: a writer killed mid-line leaves a
// partial record; the reader skips it and the next writer ends it before
// appending, so no good record is lost. Concurrent writers (one
// descriptor each, as separate processes have) never interleave.
func TestLedgerSurvivesAPartialLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "usage.jsonl")
	first := newUsageLedger(path, slog.Default())
	if err := first.append(record.UsageRecord{Time: time.Now().UTC(), Model: "m", CostUSD: 1}); err != nil {
		t.Fatal(err)
	}
	first.close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"time":"2026-12-01T00:00:00Z","model":"m","cost_u`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	const writers, each = 6, 30
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := newUsageLedger(path, slog.Default())
			defer l.close()
			for range each {
				if err := l.append(record.UsageRecord{Time: time.Now().UTC(), SessionID: fmt.Sprint("s", w), Model: "m", CostUSD: 0.5}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	recs, skipped, err := readUsageLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+writers*each || skipped != 1 {
		t.Fatalf("%d records, %d skipped; want %d and 1", len(recs), skipped, 1+writers*each)
	}
	if recs, skipped, err := readUsageLedger(filepath.Join(t.TempDir(), "missing")); err != nil || len(recs)+skipped != 0 {
		t.Fatalf("a missing ledger: %v %v %v", recs, skipped, err)
	}
}

// TestChatBudgetCountsTheWholeChat: weft chat's limit counts every line.
// The first line's run makes one call and stops before the second; the
// next line stops before any (no terminal to ask: --yes or a pipe).
func TestChatBudgetCountsTheWholeChat(t *testing.T) {
	t.Parallel()
	estUSD, estTokens := budgetProbe(t)
	fake := llmtest.NewAnthropic(t)
	env, ws := budgetEnv(t, fake)
	budgetScriptsIn(fake, ws, estTokens)
	budgetScriptsIn(fake, ws, estTokens)
	_, stderr, err := run(t, env, "read a.txt\nand again\n/cost\n", "chat", "--yes", "--max-budget-usd", fmt.Sprint(estUSD*1.25), "--model", "anthropic:claude-sonnet-4-5")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Fatalf("%d model calls, want 1\n%s", n, stderr)
	}
	if n := strings.Count(stderr, "budget: stopped"); n != 2 {
		t.Fatalf("%d budget stops, want 2:\n%s", n, stderr)
	}
	if n := strings.Count(stderr, "[budget]"); n != 2 {
		t.Fatalf("want two runs ending [budget]:\n%s", stderr)
	}
}
