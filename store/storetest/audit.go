package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

func mustListAudit(t *testing.T, s store.Store, q record.AuditQuery) []record.AuditEntry {
	t.Helper()
	got, err := s.ListAudit(t.Context(), q)
	if err != nil {
		t.Fatalf("ListAudit(%+v): %v", q, err)
	}
	if got == nil {
		t.Fatalf("ListAudit(%+v) returned a nil slice", q)
	}
	return got
}

func auditIDs(es []record.AuditEntry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func auditReasons(es []record.AuditEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Reason
	}
	return out
}

func testAudit(t *testing.T, s store.Store) {
	ctx := t.Context()
	if got := mustListAudit(t, s, record.AuditQuery{}); len(got) != 0 {
		t.Errorf("empty store lists %+v", got)
	}
	if err := s.AppendAudit(ctx); err != nil {
		t.Errorf("AppendAudit of nothing: %v", err)
	}
	at := time.Date(2025, 7, 1, 10, 0, 0, 999, time.FixedZone("W", -3600))
	before := time.Now().Add(-time.Second)
	in := []record.AuditEntry{
		{ID: 500, SessionID: "s1", TurnNumber: 3, Timestamp: at, ToolName: "Bash", Operation: "execute",
			Resource: "rm -rf /", ActorID: "alice", Outcome: record.AuditBlocked, Reason: "deny rule Bash(rm:*) in /p/.weft/settings.json:4",
			Extra: map[string]string{"mode": "default", "rule": "Bash(rm:*)"}},
		{SessionID: "s1", TurnNumber: 3, ToolName: "Write", Operation: "write", Resource: "/w/a.go", Outcome: record.AuditAllowed},
		{SessionID: "s2", ToolName: "Edit", Operation: "edit", Outcome: record.AuditBlocked, Reason: "secret_detected:count=2", Extra: map[string]string{}},
	}
	if err := s.AppendAudit(ctx, in...); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
	got := mustListAudit(t, s, record.AuditQuery{})
	if len(got) != len(in) {
		t.Fatalf("listed %d entries, want %d", len(got), len(in))
	}
	for i, e := range got {
		if i > 0 && e.ID <= got[i-1].ID {
			t.Errorf("ids not increasing: %v", auditIDs(got))
		}
		want := in[i]
		want.ID = e.ID
		if want.Timestamp.IsZero() {
			if e.Timestamp.Before(before) || e.Timestamp.After(time.Now().Add(time.Second)) {
				t.Errorf("entry %d Timestamp %v is not about now", i, e.Timestamp)
			}
			want.Timestamp = e.Timestamp
		}
		if len(want.Extra) == 0 {
			want.Extra = nil
		}
		checkUTC(t, "Timestamp", e.Timestamp)
		same(t, fmt.Sprint("entry ", i), e, want)
	}
	if got[0].ID == 500 {
		t.Error("AppendAudit kept the caller's ID")
	}

	// The audit trail outlives the session it is about.
	mustCreate(t, s, record.Session{ID: "s1"})
	if err := s.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if got := mustListAudit(t, s, record.AuditQuery{SessionID: "s1"}); len(got) != 2 {
		t.Errorf("after deleting the session, %d of its 2 entries remain", len(got))
	}
}

// testAuditQueries checks every filter and their combinations against a
// straightforward model, with timestamps that do not follow append order.
func testAuditQueries(t *testing.T, s store.Store) {
	ctx := t.Context()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Minutes from base, deliberately out of order.
	minutes := []int{5, 1, 9, 3, 7, 2, 8, 0, 6, 4, 10, 1}
	var in []record.AuditEntry
	for i, m := range minutes {
		in = append(in, record.AuditEntry{
			SessionID: []string{"a", "b", "c"}[i%3],
			Timestamp: base.Add(time.Duration(m) * time.Minute),
			ToolName:  "T", Operation: "read", Outcome: record.AuditAllowed,
			Reason: fmt.Sprint("e", i),
		})
	}
	// Several calls: ids keep increasing across them.
	for _, part := range [][]record.AuditEntry{in[:1], in[1:5], in[5:]} {
		if err := s.AppendAudit(ctx, part...); err != nil {
			t.Fatal(err)
		}
	}
	all := mustListAudit(t, s, record.AuditQuery{})
	if got := auditReasons(all); len(got) != len(in) || got[0] != "e0" || got[len(got)-1] != fmt.Sprint("e", len(in)-1) {
		t.Fatalf("entries not in append order: %v", got)
	}
	ids := auditIDs(all)

	model := func(q record.AuditQuery) []string {
		limit := q.Limit
		if limit <= 0 {
			limit = 100
		}
		var out []string
		for i, e := range in {
			if q.SessionID != "" && e.SessionID != q.SessionID ||
				!q.Since.IsZero() && e.Timestamp.Before(q.Since) ||
				ids[i] <= q.AfterID {
				continue
			}
			if len(out) < limit {
				out = append(out, e.Reason)
			}
		}
		if out == nil {
			out = []string{}
		}
		return out
	}
	var queries []record.AuditQuery
	for _, sess := range []string{"", "a", "none"} {
		for _, since := range []int{-1, 0, 7, 11} {
			for _, after := range []int64{0, ids[2], ids[len(ids)-1]} {
				for _, limit := range []int{0, 2} {
					q := record.AuditQuery{SessionID: sess, AfterID: after, Limit: limit}
					if since >= 0 {
						q.Since = base.Add(time.Duration(since) * time.Minute)
					}
					queries = append(queries, q)
				}
			}
		}
	}
	// Times outside any stored range.
	queries = append(queries,
		record.AuditQuery{Since: time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC)},
		record.AuditQuery{Since: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)},
		record.AuditQuery{SessionID: "a", Since: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)},
	)
	for _, q := range queries {
		if got, want := auditReasons(mustListAudit(t, s, q)), model(q); !slices.Equal(got, want) {
			t.Errorf("ListAudit(session %q, since %v, after %d, limit %d) = %v, want %v", q.SessionID, q.Since, q.AfterID, q.Limit, got, want)
		}
	}

	// Paging by AfterID reads a filtered trail exactly once.
	var paged []string
	q := record.AuditQuery{Since: base.Add(2 * time.Minute), Limit: 2}
	for {
		page := mustListAudit(t, s, q)
		if len(page) == 0 {
			break
		}
		paged = append(paged, auditReasons(page)...)
		q.AfterID = page[len(page)-1].ID
	}
	if want := model(record.AuditQuery{Since: base.Add(2 * time.Minute)}); !slices.Equal(paged, want) {
		t.Errorf("paged %v, want %v", paged, want)
	}
}

func testAuditLimits(t *testing.T, s store.Store) {
	const n = 1001
	entries := make([]record.AuditEntry, n)
	for i := range entries {
		entries[i] = record.AuditEntry{SessionID: "s", ToolName: "T", Operation: "read", Outcome: record.AuditAllowed, Reason: fmt.Sprint(i)}
	}
	if err := s.AppendAudit(t.Context(), entries...); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ limit, want int }{{0, 100}, {-5, 100}, {1, 1}, {1001, 1000}} {
		got := mustListAudit(t, s, record.AuditQuery{Limit: tc.limit})
		if len(got) != tc.want {
			t.Errorf("ListAudit(limit %d) = %d entries, want %d", tc.limit, len(got), tc.want)
		}
		if len(got) > 0 && got[0].Reason != "0" {
			t.Errorf("ListAudit(limit %d) starts at %q, want the oldest", tc.limit, got[0].Reason)
		}
	}
}

func testAuditConcurrent(t *testing.T, s store.Store) {
	const writers, each = 6, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				e := record.AuditEntry{SessionID: fmt.Sprint("s", w), ToolName: "T", Operation: "read", Outcome: record.AuditAllowed, Reason: fmt.Sprint(i)}
				if err := s.AppendAudit(t.Context(), e); err != nil {
					t.Errorf("AppendAudit: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	all := mustListAudit(t, s, record.AuditQuery{Limit: 1000})
	if len(all) != writers*each {
		t.Fatalf("%d entries, want %d", len(all), writers*each)
	}
	// Each writer's entries keep their order.
	for w := range writers {
		got := auditReasons(mustListAudit(t, s, record.AuditQuery{SessionID: fmt.Sprint("s", w)}))
		for i, r := range got {
			if r != fmt.Sprint(i) {
				t.Fatalf("writer %d's entries out of order: %v", w, got)
			}
		}
	}
}
