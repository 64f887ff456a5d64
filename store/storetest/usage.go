package storetest

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// testUsage: the cost history sums by model, session and day over a time
// window and a session, agrees with the records appended, refuses invalid
// records (failing the whole batch) and unknown groupings, stamps a zero
// time, and outlives the session.
func testUsage(t *testing.T, s store.Store) {
	ctx := t.Context()
	day1 := time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC)
	day2 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	day3 := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	recs := []record.UsageRecord{
		{Time: day1, SessionID: "a", RunID: "r1", Provider: "anthropic", Model: "sonnet", InputTokens: 100, OutputTokens: 10, CacheReadTokens: 5, CostUSD: 0.25},
		{Time: day2, SessionID: "a", RunID: "r2", Provider: "anthropic", Model: "opus", InputTokens: 200, OutputTokens: 20, CacheWriteTokens: 7, CostUSD: 1.5},
		{Time: day3, SessionID: "b", Provider: "openai", Model: "sonnet", InputTokens: 300, OutputTokens: 30, CostUSD: 0.125},
		{Time: day3.In(time.FixedZone("x", 3600)), Model: "gpt", InputTokens: 1, OutputTokens: 1, CostUSD: 0}, // no session
	}
	mustCreate(t, s, record.Session{ID: "a"})
	if err := s.AppendUsage(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	g := func(key string, calls, in, out, cr, cw int64, cost float64) record.UsageGroup {
		return record.UsageGroup{Key: key, Calls: calls, InputTokens: in, OutputTokens: out, CacheReadTokens: cr, CacheWriteTokens: cw, CostUSD: cost}
	}
	tests := []struct {
		name string
		q    record.UsageQuery
		want []record.UsageGroup
	}{
		{"total", record.UsageQuery{}, []record.UsageGroup{g("", 4, 601, 61, 5, 7, 1.875)}},
		{"by model", record.UsageQuery{GroupBy: record.UsageByModel},
			[]record.UsageGroup{g("gpt", 1, 1, 1, 0, 0, 0), g("opus", 1, 200, 20, 0, 7, 1.5), g("sonnet", 2, 400, 40, 5, 0, 0.375)}},
		{"by session", record.UsageQuery{GroupBy: record.UsageBySession},
			[]record.UsageGroup{g("", 1, 1, 1, 0, 0, 0), g("a", 2, 300, 30, 5, 7, 1.75), g("b", 1, 300, 30, 0, 0, 0.125)}},
		{"by day (UTC)", record.UsageQuery{GroupBy: record.UsageByDay},
			[]record.UsageGroup{g("2026-11-30", 1, 100, 10, 5, 0, 0.25), g("2026-12-01", 3, 501, 51, 0, 7, 1.625)}},
		{"since is inclusive", record.UsageQuery{Since: day2, GroupBy: record.UsageByModel},
			[]record.UsageGroup{g("gpt", 1, 1, 1, 0, 0, 0), g("opus", 1, 200, 20, 0, 7, 1.5), g("sonnet", 1, 300, 30, 0, 0, 0.125)}},
		{"until is exclusive", record.UsageQuery{Until: day3}, []record.UsageGroup{g("", 2, 300, 30, 5, 7, 1.75)}},
		{"one session", record.UsageQuery{SessionID: "a", GroupBy: record.UsageByDay},
			[]record.UsageGroup{g("2026-11-30", 1, 100, 10, 5, 0, 0.25), g("2026-12-01", 1, 200, 20, 0, 7, 1.5)}},
		{"nothing matches: one zero total", record.UsageQuery{Since: day3.Add(time.Hour)}, []record.UsageGroup{g("", 0, 0, 0, 0, 0, 0)}},
		{"nothing matches: no groups", record.UsageQuery{SessionID: "none", GroupBy: record.UsageByModel}, []record.UsageGroup{}},
		{"far future", record.UsageQuery{Since: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), GroupBy: record.UsageByDay}, []record.UsageGroup{}},
		{"far past", record.UsageQuery{Since: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)}, []record.UsageGroup{g("", 4, 601, 61, 5, 7, 1.875)}},
	}
	for _, tt := range tests {
		got, err := s.QueryUsage(ctx, tt.q)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !usageEqual(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
		if got == nil {
			t.Errorf("%s: nil slice", tt.name)
		}
	}

	if _, err := s.QueryUsage(ctx, record.UsageQuery{GroupBy: "tool"}); !errors.Is(err, record.ErrInvalidUsage) {
		t.Errorf("group_by tool: %v, want ErrInvalidUsage", err)
	}
	for _, bad := range []record.UsageRecord{
		{Model: ""}, {Model: "m", InputTokens: -1}, {Model: "m", CacheWriteTokens: -1},
		{Model: "m", CostUSD: math.NaN()}, {Model: "m", CostUSD: math.Inf(1)}, {Model: "m", CostUSD: -0.5},
	} {
		// The valid record in the batch is not stored either.
		err := s.AppendUsage(ctx, record.UsageRecord{Model: "ok", CostUSD: 9}, bad)
		if !errors.Is(err, record.ErrInvalidUsage) {
			t.Errorf("AppendUsage(%+v) = %v, want ErrInvalidUsage", bad, err)
		}
	}
	if got, _ := s.QueryUsage(ctx, record.UsageQuery{}); len(got) != 1 || got[0].Calls != 4 {
		t.Fatalf("an invalid batch was partly stored: %+v", got)
	}

	before := time.Now().Add(-time.Second)
	if err := s.AppendUsage(ctx, record.UsageRecord{SessionID: "now", Model: "m", CostUSD: 1}); err != nil {
		t.Fatal(err)
	}
	got, err := s.QueryUsage(ctx, record.UsageQuery{Since: before, SessionID: "now"})
	if err != nil || len(got) != 1 || got[0].Calls != 1 {
		t.Fatalf("a zero time is not stamped with the time of the append: %+v, %v", got, err)
	}
	if err := s.AppendUsage(ctx); err != nil {
		t.Fatalf("an empty append: %v", err)
	}
}

// testUsageConcurrent: appends from many goroutines all count.
func testUsageConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r := record.UsageRecord{SessionID: fmt.Sprint("s", w), Model: fmt.Sprint("m", i%3), InputTokens: 1, CostUSD: 0.5}
				if err := s.AppendUsage(ctx, r); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := s.QueryUsage(ctx, record.UsageQuery{GroupBy: record.UsageBySession})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != workers {
		t.Fatalf("%d sessions, want %d", len(got), workers)
	}
	for _, g := range got {
		if g.Calls != each || g.InputTokens != each || math.Abs(g.CostUSD-each*0.5) > 1e-9 {
			t.Errorf("session %s: %+v", g.Key, g)
		}
	}
}

// usageEqual compares groups, costs to within float rounding (a database
// may sum in another order).
func usageEqual(a, b []record.UsageGroup) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if math.Abs(x.CostUSD-y.CostUSD) > 1e-9 {
			return false
		}
		x.CostUSD, y.CostUSD = 0, 0
		if x != y {
			return false
		}
	}
	return true
}
