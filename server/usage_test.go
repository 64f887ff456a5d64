package server

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/record"
)

// TestUsageEndpoint: GET /v1/usage sums the store's cost history by
// model, session and day over since (a time, unix seconds or a duration),
// behind the bearer token; bad parameters are 400.
func TestUsageEndpoint(t *testing.T) {
	t.Parallel()
	var a *api
	// a.db exists once newAPI returns, before any request.
	a = newAPI(t, apiOptions{token: "secret", config: func(c *Config) { c.Usage = lateUsage{&a} }})
	now := time.Now().UTC()
	recs := []record.UsageRecord{
		{Time: now.Add(-48 * time.Hour), SessionID: "old", Model: "gpt-4.1", InputTokens: 1000, CostUSD: 0.5},
		{Time: now.Add(-time.Hour), SessionID: "s1", Model: "gpt-4.1", InputTokens: 10, OutputTokens: 5, CostUSD: 0.25},
		{Time: now.Add(-time.Minute), SessionID: "s2", Model: "claude-sonnet-4-5", InputTokens: 20, CostUSD: 0.125},
	}
	if err := a.db.AppendUsage(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	byDay := map[string]float64{} // the last two may fall either side of midnight
	for _, r := range recs {
		byDay[record.UsageDay(r.Time)] += r.CostUSD
	}
	auth := []string{"Authorization", "Bearer secret"}
	cost := func(m map[string]any) map[string]float64 {
		out := map[string]float64{}
		for _, g := range m["groups"].([]any) {
			g := g.(map[string]any)
			out[g["key"].(string)] = g["cost_usd"].(float64)
		}
		return out
	}
	tests := []struct {
		query string
		want  map[string]float64
	}{
		{"", map[string]float64{"": 0.875}},
		{"?group_by=model", map[string]float64{"gpt-4.1": 0.75, "claude-sonnet-4-5": 0.125}},
		{"?since=24h&group_by=model", map[string]float64{"gpt-4.1": 0.25, "claude-sonnet-4-5": 0.125}},
		{"?since=" + now.Add(-2*time.Hour).Format(time.RFC3339) + "&group_by=session", map[string]float64{"s1": 0.25, "s2": 0.125}},
		{"?since=" + strconv.FormatInt(now.Add(-2*time.Hour).Unix(), 10) + "&session_id=s2", map[string]float64{"": 0.125}},
		{"?group_by=day", byDay},
	}
	for _, tt := range tests {
		got := cost(a.doJSON("GET", "/v1/usage"+tt.query, nil, http.StatusOK, auth...))
		if len(got) != len(tt.want) {
			t.Errorf("%s: %v, want %v", tt.query, got, tt.want)
			continue
		}
		for k, v := range tt.want {
			if math.Abs(got[k]-v) > 1e-9 {
				t.Errorf("%s: %v, want %v", tt.query, got, tt.want)
			}
		}
	}
	for _, bad := range []string{"?group_by=tool", "?since=yesterday", "?since=-5h", "?until=1e9", "?since=876000h1s"} {
		a.doJSON("GET", "/v1/usage"+bad, nil, http.StatusBadRequest, auth...)
	}
	a.doJSON("GET", "/v1/usage", nil, http.StatusUnauthorized)

	none := newAPI(t, apiOptions{})
	none.doJSON("GET", "/v1/usage", nil, http.StatusServiceUnavailable)
}

// TestBudgetFieldsAndAnswers: the per-request limits override the
// server's default where set and are validated; a budget answer needs
// allow, and limits that are amounts.
func TestBudgetFieldsAndAnswers(t *testing.T) {
	t.Parallel()
	f, n, neg := 0.5, 1000, -1.0
	def := agent.Budget{MaxUSD: 2, MaxTokens: 50, Session: true}
	if got := (BudgetFields{MaxBudgetUSD: &f}).Budget(def); got.MaxUSD != 0.5 || got.MaxTokens != 50 || !got.Session {
		t.Errorf("override USD: %+v", got)
	}
	if got := (BudgetFields{MaxTokensTotal: &n}).Budget(def); got.MaxUSD != 2 || got.MaxTokens != 1000 {
		t.Errorf("override tokens: %+v", got)
	}
	nan := math.NaN()
	negN := -3
	for _, bad := range []BudgetFields{{MaxBudgetUSD: &neg}, {MaxBudgetUSD: &nan}, {MaxTokensTotal: &negN}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if (BudgetFields{MaxBudgetUSD: &f, MaxTokensTotal: &n}).Validate() != nil {
		t.Error("valid limits refused")
	}
	yes, no := true, false
	tests := []struct {
		name string
		a    BudgetAnswer
		want agent.BudgetDecision
		err  bool
	}{
		{"allow with a limit", BudgetAnswer{Allow: &yes, MaxBudgetUSD: 1}, agent.BudgetDecision{Allow: true, MaxUSD: 1}, false},
		{"allow with tokens", BudgetAnswer{Allow: &yes, MaxTokensTotal: 9000}, agent.BudgetDecision{Allow: true, MaxTokens: 9000}, false},
		{"allow as is", BudgetAnswer{Allow: &yes}, agent.BudgetDecision{Allow: true}, false},
		{"deny", BudgetAnswer{Allow: &no}, agent.BudgetDecision{Reason: "declined over HTTP"}, false},
		{"deny with a reason", BudgetAnswer{Allow: &no, Reason: "too dear"}, agent.BudgetDecision{Reason: "too dear"}, false},
		{"no allow", BudgetAnswer{MaxBudgetUSD: 1}, agent.BudgetDecision{}, true},
		{"negative", BudgetAnswer{Allow: &yes, MaxBudgetUSD: -1}, agent.BudgetDecision{}, true},
		{"negative tokens", BudgetAnswer{Allow: &yes, MaxTokensTotal: -1}, agent.BudgetDecision{}, true},
	}
	for _, tt := range tests {
		got, err := tt.a.Decision()
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%s: %+v, %v", tt.name, got, err)
		}
	}
}

// lateUsage is the test server's store, which exists once newAPI returns.
type lateUsage struct{ a **api }

func (l lateUsage) QueryUsage(ctx context.Context, q record.UsageQuery) ([]record.UsageGroup, error) {
	return (*l.a).db.QueryUsage(ctx, q)
}
