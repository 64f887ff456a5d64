package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

var equalTimes = cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })

// same compares two values with time.Equal for times.
func same[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if diff := cmp.Diff(want, got, equalTimes); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, diff)
	}
}

func mustCreateRun(t *testing.T, s store.Store, r record.Run) record.Run {
	t.Helper()
	got, err := s.CreateRun(t.Context(), r)
	if err != nil {
		t.Fatalf("CreateRun(%q): %v", r.ID, err)
	}
	return got
}

func mustGetRun(t *testing.T, s store.Store, id string) record.Run {
	t.Helper()
	got, err := s.GetRun(t.Context(), id)
	if err != nil {
		t.Fatalf("GetRun(%q): %v", id, err)
	}
	return got
}

func mustSteps(t *testing.T, s store.Store, runID string) []record.StepResult {
	t.Helper()
	got, err := s.StepResults(t.Context(), runID)
	if err != nil {
		t.Fatalf("StepResults(%q): %v", runID, err)
	}
	return got
}

func stepIDs(steps []record.StepResult) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.StepID
	}
	return out
}

func runIDs(runs []record.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

// fullRun has every field set, JSON with odd whitespace and key order.
func fullRun(id string) record.Run {
	return record.Run{
		ID:         id,
		Goal:       "Summarise the quarterly report ✓",
		Status:     record.RunAwaitingApproval,
		Plan:       json.RawMessage(`{"steps":[ {"id":"a","tool":"Read"} ],  "b":1}`),
		Config:     json.RawMessage(`{"model":"m"}`),
		Inputs:     json.RawMessage(`{"z":1,"a":2}`),
		Files:      json.RawMessage(`[{"name":"report","refs":["x"]}]`),
		Posture:    json.RawMessage(`{"mode":"default","sandbox":true}`),
		WorkflowID: "wf1",
		ParentID:   "parent",
		BatchID:    "batch",
		Summary:    "sum",
		Error:      "err",
	}
}

func testRunCreateGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	before := time.Now().Add(-time.Second)
	fixed := time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.FixedZone("X", 3600))
	tests := []struct {
		name string
		in   record.Run
	}{
		{"minimal", record.Run{ID: "min", Goal: "g"}},
		{"every field", fullRun("full")},
		{"explicit times", record.Run{ID: "timed", Goal: "g", Status: record.RunCompleted, CreatedAt: fixed, UpdatedAt: fixed.Add(time.Minute)}},
		{"odd id", record.Run{ID: "with space/é?&", Goal: ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.LastSeq = 42 // ignored
			got := mustCreateRun(t, s, in)
			want := tc.in
			if want.Status == "" {
				want.Status = record.RunPlanning
			}
			want.CreatedAt, want.UpdatedAt = got.CreatedAt, got.UpdatedAt
			same(t, "CreateRun result", got, want)
			checkUTC(t, "CreatedAt", got.CreatedAt)
			checkUTC(t, "UpdatedAt", got.UpdatedAt)
			if tc.in.CreatedAt.IsZero() {
				if got.CreatedAt.Before(before) || got.CreatedAt.After(time.Now().Add(time.Second)) {
					t.Errorf("CreatedAt %v is not about now", got.CreatedAt)
				}
				if !got.UpdatedAt.Equal(got.CreatedAt) {
					t.Errorf("UpdatedAt %v, want CreatedAt %v", got.UpdatedAt, got.CreatedAt)
				}
			} else if !got.CreatedAt.Equal(tc.in.CreatedAt) || !got.UpdatedAt.Equal(tc.in.UpdatedAt) {
				t.Errorf("times %v %v, want %v %v", got.CreatedAt, got.UpdatedAt, tc.in.CreatedAt, tc.in.UpdatedAt)
			}
			same(t, "GetRun after CreateRun", mustGetRun(t, s, tc.in.ID), got)
		})
	}

	orig := mustGetRun(t, s, "full")
	dup := fullRun("full")
	dup.Goal = "other"
	_, err := s.CreateRun(ctx, dup)
	wantErrIs(t, "CreateRun of a taken id", err, record.ErrExists)
	same(t, "run after a refused duplicate", mustGetRun(t, s, "full"), orig)

	for name, r := range map[string]record.Run{
		"empty id":       {Goal: "g"},
		"unknown status": {ID: "bad-status", Status: "sleeping"},
		"invalid plan":   {ID: "bad-plan", Plan: json.RawMessage(`{"steps":`)},
		"invalid files":  {ID: "bad-files", Files: json.RawMessage(`[`)},
	} {
		if _, err := s.CreateRun(ctx, r); err == nil {
			t.Errorf("CreateRun with %s succeeded", name)
		}
		if r.ID != "" {
			_, err := s.GetRun(ctx, r.ID)
			wantErrIs(t, "GetRun after a refused create ("+name+")", err, record.ErrNotFound)
		}
	}
	_, err = s.GetRun(ctx, "nope")
	wantErrIs(t, "GetRun of an unknown id", err, record.ErrNotFound)

	// The returned run must not alias the caller's buffers.
	buf := []byte(`{"x":1}`)
	got := mustCreateRun(t, s, record.Run{ID: "alias", Plan: buf})
	copy(buf, `{"y":2}`)
	if string(got.Plan) != `{"x":1}` {
		t.Errorf("returned plan changed with the caller's buffer: %s", got.Plan)
	}
}

func testRunUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	created := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	orig := mustCreateRun(t, s, record.Run{ID: "u", Goal: "old", CreatedAt: created})
	other := mustCreateRun(t, s, fullRun("other"))
	if _, err := s.RunEvents().AppendEvents(ctx, "u", ev("a", `1`), ev("b", `2`)); err != nil {
		t.Fatal(err)
	}

	prev := orig
	for i, in := range []record.Run{
		fullRun("u"),
		{ID: "u", Goal: "cleared", Status: record.RunRunning},
		{ID: "u", Goal: "done", Status: record.RunFailed, Error: "boom", Posture: json.RawMessage(` {"mode" : "plan"} `)},
	} {
		want := in
		// What the store keeps is not the caller's to overwrite.
		in.CreatedAt, in.UpdatedAt, in.LastSeq = time.Now().Add(time.Hour), time.Now().Add(-time.Hour), 99
		if err := s.UpdateRun(ctx, in); err != nil {
			t.Fatalf("step %d: UpdateRun: %v", i, err)
		}
		got := mustGetRun(t, s, "u")
		if got.UpdatedAt.Before(prev.UpdatedAt) {
			t.Errorf("step %d: UpdatedAt went back from %v to %v", i, prev.UpdatedAt, got.UpdatedAt)
		}
		checkUTC(t, "UpdatedAt", got.UpdatedAt)
		want.CreatedAt, want.UpdatedAt, want.LastSeq = created, got.UpdatedAt, 2
		same(t, fmt.Sprintf("step %d: run after UpdateRun", i), got, want)
		prev = got
	}
	if !prev.UpdatedAt.After(created) {
		t.Errorf("UpdatedAt %v not moved past %v by UpdateRun", prev.UpdatedAt, created)
	}
	same(t, "untouched run", mustGetRun(t, s, "other"), other)

	wantErrIs(t, "UpdateRun of an unknown id", s.UpdateRun(ctx, record.Run{ID: "nope", Status: record.RunRunning}), record.ErrNotFound)
	for name, r := range map[string]record.Run{
		"empty status":   {ID: "u"},
		"unknown status": {ID: "u", Status: "paused"},
		"invalid config": {ID: "u", Status: record.RunRunning, Config: json.RawMessage(`{`)},
	} {
		if err := s.UpdateRun(ctx, r); err == nil {
			t.Errorf("UpdateRun with %s succeeded", name)
		}
	}
	same(t, "run after refused updates", mustGetRun(t, s, "u"), prev)
}

// createRunsAt creates runs with the given ids and created_at offsets (in
// seconds from a fixed base) and returns the order ListRuns must give.
func createRunsAt(t *testing.T, s store.Store, ids []string, offsets []int, mod func(i int, r *record.Run)) []string {
	t.Helper()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type rec struct {
		id string
		at time.Time
	}
	var recs []rec
	for i, id := range ids {
		r := record.Run{ID: id, Goal: "goal " + id, CreatedAt: base.Add(time.Duration(offsets[i]) * time.Second)}
		if mod != nil {
			mod(i, &r)
		}
		mustCreateRun(t, s, r)
		recs = append(recs, rec{id, r.CreatedAt})
	}
	slices.SortFunc(recs, func(a, b rec) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return strings.Compare(b.id, a.id)
	})
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.id
	}
	return out
}

// listAllRuns pages through ListRuns with q, checking the page rules.
func listAllRuns(t *testing.T, s store.Store, q record.RunQuery) (all []record.Run, pages int) {
	t.Helper()
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	for {
		page, err := s.ListRuns(t.Context(), q)
		if err != nil {
			t.Fatalf("ListRuns(%+v, page %d): %v", q, pages, err)
		}
		if page.Runs == nil {
			t.Fatalf("ListRuns(%+v) returned a nil slice", q)
		}
		pages++
		if len(page.Runs) > limit {
			t.Fatalf("page of %d runs for limit %d", len(page.Runs), limit)
		}
		if page.NextCursor != "" && len(page.Runs) != limit {
			t.Errorf("page %d: short page (%d of %d) with a next cursor", pages, len(page.Runs), limit)
		}
		all = append(all, page.Runs...)
		if page.NextCursor == "" {
			return all, pages
		}
		if pages > 1000 {
			t.Fatal("ListRuns never ends")
		}
		q.Cursor = page.NextCursor
	}
}

func testRunListPaging(t *testing.T, s store.Store) {
	all, _ := listAllRuns(t, s, record.RunQuery{})
	if len(all) != 0 {
		t.Errorf("empty store lists %v", runIDs(all))
	}
	const n = 23
	var idList []string
	var offsets []int
	for i := range n {
		idList = append(idList, fmt.Sprintf("r%02d", i))
		offsets = append(offsets, (i*7)%11) // many ties
	}
	want := createRunsAt(t, s, idList, offsets, nil)
	if _, err := s.RunEvents().AppendEvents(t.Context(), "r05", ev("e", ""), ev("e", "")); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 2, 5, 22, 23, 24, 0} {
		all, pages := listAllRuns(t, s, record.RunQuery{Limit: limit})
		if got := runIDs(all); !slices.Equal(got, want) {
			t.Errorf("limit %d: paged order = %v, want %v", limit, got, want)
		}
		eff := limit
		if eff == 0 {
			eff = 50
		}
		if wantPages := (n + eff - 1) / eff; pages != wantPages {
			t.Errorf("limit %d: %d pages, want %d", limit, pages, wantPages)
		}
		for _, r := range all {
			same(t, "listed run "+r.ID, r, mustGetRun(t, s, r.ID))
		}
	}

	for _, c := range []string{"garbage", "x", strings.Repeat("A", 40)} {
		if page, err := s.ListRuns(t.Context(), record.RunQuery{Cursor: c}); err == nil {
			t.Errorf("ListRuns(cursor %q) = %d runs, want an error", c, len(page.Runs))
		}
	}
	page, err := s.ListRuns(t.Context(), record.RunQuery{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{page.NextCursor[:len(page.NextCursor)-2], page.NextCursor + "AA"} {
		if _, err := s.ListRuns(t.Context(), record.RunQuery{Cursor: c}); err == nil {
			t.Errorf("ListRuns with a mangled cursor %q succeeded", c)
		}
	}
}

func testRunListLimits(t *testing.T, s store.Store) {
	const n = 501
	base := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		mustCreateRun(t, s, record.Run{ID: fmt.Sprintf("r%03d", i), CreatedAt: base.Add(time.Duration(i) * time.Millisecond)})
	}
	for _, tc := range []struct{ limit, want int }{{0, 50}, {-1, 50}, {501, 500}} {
		page, err := s.ListRuns(t.Context(), record.RunQuery{Limit: tc.limit})
		if err != nil {
			t.Fatalf("ListRuns(limit %d): %v", tc.limit, err)
		}
		if len(page.Runs) != tc.want || page.NextCursor == "" {
			t.Errorf("ListRuns(limit %d) = %d runs, cursor %q; want %d and a cursor", tc.limit, len(page.Runs), page.NextCursor, tc.want)
		}
	}
}

func testRunListFilters(t *testing.T, s store.Store) {
	type spec struct {
		id, goal, summary, errText, status string
	}
	specs := []spec{
		{"a", "Deploy the WEBSITE", "", "", record.RunCompleted},
		{"b", "write report", "Website copy updated", "", record.RunCompleted},
		{"c", "fetch", "", "website unreachable", record.RunFailed},
		{"d", "Résumé ÉCOLE", "", "", record.RunRunning},
		{"e", "nothing to see", "", "", record.RunFailed},
		{"f", "100% done_ok", "", "", record.RunCompleted},
		{"g", "100 percent", "", "", record.RunCompleted},
	}
	var ids []string
	var offsets []int
	for i, sp := range specs {
		ids = append(ids, sp.id)
		offsets = append(offsets, i)
	}
	createRunsAt(t, s, ids, offsets, func(i int, r *record.Run) {
		r.Goal, r.Summary, r.Error, r.Status = specs[i].goal, specs[i].summary, specs[i].errText, specs[i].status
	})
	tests := []struct {
		q    record.RunQuery
		want []string // newest first
	}{
		{record.RunQuery{}, []string{"g", "f", "e", "d", "c", "b", "a"}},
		{record.RunQuery{Q: "website"}, []string{"c", "b", "a"}},
		{record.RunQuery{Q: "WebSite"}, []string{"c", "b", "a"}},
		{record.RunQuery{Q: "website", Status: record.RunCompleted}, []string{"b", "a"}},
		{record.RunQuery{Q: "unreachable"}, []string{"c"}},
		{record.RunQuery{Q: "école"}, []string{"d"}},
		{record.RunQuery{Q: "RÉSUMÉ"}, []string{"d"}},
		{record.RunQuery{Q: "%"}, []string{"f"}},
		{record.RunQuery{Q: "_"}, []string{"f"}},
		{record.RunQuery{Q: "100%"}, []string{"f"}},
		{record.RunQuery{Status: record.RunFailed}, []string{"e", "c"}},
		{record.RunQuery{Status: record.RunCancelled}, []string{}},
		{record.RunQuery{Q: "no such text"}, []string{}},
	}
	for _, tc := range tests {
		for _, limit := range []int{0, 2} {
			q := tc.q
			q.Limit = limit
			all, _ := listAllRuns(t, s, q)
			if got := runIDs(all); !slices.Equal(got, tc.want) {
				t.Errorf("ListRuns(Q %q, Status %q, Limit %d) = %v, want %v", q.Q, q.Status, limit, got, tc.want)
			}
		}
	}
}

func testRunDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, id := range []string{"gone", "stays"} {
		mustCreateRun(t, s, record.Run{ID: id})
		for i := range 3 {
			if err := s.PutStepResult(ctx, record.StepResult{RunID: id, StepID: fmt.Sprint("s", i), Index: i, Status: record.StepCompleted}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.RunEvents().AppendEvents(ctx, id, ev("a", `1`), ev("b", `2`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteRun(ctx, "gone"); err != nil {
		t.Fatalf("DeleteRun: %v", err)
	}
	_, err := s.GetRun(ctx, "gone")
	wantErrIs(t, "GetRun after delete", err, record.ErrNotFound)
	_, err = s.StepResults(ctx, "gone")
	wantErrIs(t, "StepResults after delete", err, record.ErrNotFound)
	_, err = s.RunEvents().ReadEvents(ctx, "gone", 0, 0)
	wantErrIs(t, "ReadEvents after delete", err, record.ErrNotFound)
	wantErrIs(t, "second DeleteRun", s.DeleteRun(ctx, "gone"), record.ErrNotFound)
	wantErrIs(t, "DeleteRun of an unknown id", s.DeleteRun(ctx, "never"), record.ErrNotFound)

	if got := mustGetRun(t, s, "stays"); got.LastSeq != 2 {
		t.Errorf("other run LastSeq = %d, want 2", got.LastSeq)
	}
	if got := stepIDs(mustSteps(t, s, "stays")); !slices.Equal(got, []string{"s0", "s1", "s2"}) {
		t.Errorf("other run's steps = %v", got)
	}

	// A recreated id is a new run: nothing of the old one leaks in.
	mustCreateRun(t, s, record.Run{ID: "gone"})
	if got := mustSteps(t, s, "gone"); len(got) != 0 {
		t.Errorf("recreated run's steps = %v", stepIDs(got))
	}
	got, err := s.RunEvents().AppendEvents(ctx, "gone", ev("x", `{}`))
	if err != nil || got[0].Seq != 1 {
		t.Errorf("recreated run's first event = %v, %v; want seq 1", got, err)
	}
}

func testRunSteps(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateRun(t, s, record.Run{ID: "r"})
	mustCreateRun(t, s, record.Run{ID: "other"})
	if got := mustSteps(t, s, "r"); got == nil || len(got) != 0 {
		t.Errorf("StepResults of a run without steps = %#v, want an empty slice", got)
	}
	start := time.Date(2025, 5, 5, 5, 5, 5, 5, time.FixedZone("Y", -7200))
	put := func(st record.StepResult) {
		t.Helper()
		if err := s.PutStepResult(ctx, st); err != nil {
			t.Fatalf("PutStepResult(%+v): %v", st, err)
		}
	}
	put(record.StepResult{RunID: "r", StepID: "fetch", Index: 1, Status: record.StepRunning, StartedAt: start})
	put(record.StepResult{RunID: "r", StepID: "plan", Index: 0, Status: record.StepCompleted,
		Result: json.RawMessage(`{ "text" : "kept as is", "n":[1,2] }`), StartedAt: start, FinishedAt: start.Add(time.Second)})
	put(record.StepResult{RunID: "r", StepID: "b-tie", Index: 2, Status: record.StepSkipped})
	put(record.StepResult{RunID: "r", StepID: "a-tie", Index: 2, Status: record.StepCancelled})
	put(record.StepResult{RunID: "other", StepID: "fetch", Index: 0, Status: record.StepFailed, Error: "other's"})
	// Upsert: the same step again replaces every field.
	put(record.StepResult{RunID: "r", StepID: "fetch", Index: 1, Status: record.StepFailed, Error: "timeout", Result: json.RawMessage(`null`),
		StartedAt: start, FinishedAt: start.Add(2 * time.Second)})

	want := []record.StepResult{
		{RunID: "r", StepID: "plan", Index: 0, Status: record.StepCompleted, Result: json.RawMessage(`{ "text" : "kept as is", "n":[1,2] }`), StartedAt: start, FinishedAt: start.Add(time.Second)},
		{RunID: "r", StepID: "fetch", Index: 1, Status: record.StepFailed, Error: "timeout", Result: json.RawMessage(`null`), StartedAt: start, FinishedAt: start.Add(2 * time.Second)},
		{RunID: "r", StepID: "a-tie", Index: 2, Status: record.StepCancelled},
		{RunID: "r", StepID: "b-tie", Index: 2, Status: record.StepSkipped},
	}
	got := mustSteps(t, s, "r")
	same(t, "StepResults", got, want)
	for _, st := range got {
		if !st.StartedAt.IsZero() {
			checkUTC(t, "StartedAt", st.StartedAt)
		}
		if (st.Result == nil) != (st.StepID == "a-tie" || st.StepID == "b-tie") {
			t.Errorf("step %s result %q", st.StepID, st.Result)
		}
	}
	// Moving a step to another index reorders it.
	put(record.StepResult{RunID: "r", StepID: "plan", Index: 3, Status: record.StepCompleted})
	if got := stepIDs(mustSteps(t, s, "r")); !slices.Equal(got, []string{"fetch", "a-tie", "b-tie", "plan"}) {
		t.Errorf("after moving plan: %v", got)
	}
	if got := mustSteps(t, s, "other"); len(got) != 1 || got[0].Error != "other's" {
		t.Errorf("other run's steps = %+v", got)
	}

	wantErrIs(t, "PutStepResult to an unknown run", s.PutStepResult(ctx, record.StepResult{RunID: "nope", StepID: "x", Status: record.StepRunning}), record.ErrNotFound)
	_, err := s.StepResults(ctx, "nope")
	wantErrIs(t, "StepResults of an unknown run", err, record.ErrNotFound)
	for name, st := range map[string]record.StepResult{
		"empty step id":  {RunID: "r", Status: record.StepRunning},
		"unknown status": {RunID: "r", StepID: "x", Status: "waiting"},
		"invalid result": {RunID: "r", StepID: "x", Status: record.StepCompleted, Result: json.RawMessage(`{"a"`)},
	} {
		if err := s.PutStepResult(ctx, st); err == nil {
			t.Errorf("PutStepResult with %s succeeded", name)
		}
	}
	if got := len(mustSteps(t, s, "r")); got != 4 {
		t.Errorf("%d steps after refused puts, want 4", got)
	}
}

func testRunDeleteSteps(t *testing.T, s store.Store) {
	ctx := t.Context()
	statuses := []string{record.StepCompleted, record.StepCompleted, record.StepFailed, record.StepCompleted, record.StepCancelled}
	for _, id := range []string{"r", "other"} {
		mustCreateRun(t, s, record.Run{ID: id})
		for i, st := range statuses {
			if err := s.PutStepResult(ctx, record.StepResult{RunID: id, StepID: fmt.Sprint("s", i), Index: i, Status: st,
				Result: json.RawMessage(fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	steps := []struct {
		name string
		keep func(record.StepResult) bool
		want []string
	}{
		{"keep all", func(record.StepResult) bool { return true }, []string{"s0", "s1", "s2", "s3", "s4"}},
		{"resume: keep completed", func(r record.StepResult) bool { return r.Status == record.StepCompleted }, []string{"s0", "s1", "s3"}},
		{"rewind: keep the first 2", func(r record.StepResult) bool { return r.Index < 2 }, []string{"s0", "s1"}},
		{"keep sees whole results", func(r record.StepResult) bool { return string(r.Result) == "1" && r.RunID == "r" }, []string{"s1"}},
		{"nil drops all", nil, []string{}},
	}
	for _, st := range steps {
		if err := s.DeleteStepResults(ctx, "r", st.keep); err != nil {
			t.Fatalf("%s: DeleteStepResults: %v", st.name, err)
		}
		if got := stepIDs(mustSteps(t, s, "r")); !slices.Equal(got, st.want) {
			t.Errorf("%s: steps %v, want %v", st.name, got, st.want)
		}
	}
	if got := stepIDs(mustSteps(t, s, "other")); len(got) != len(statuses) {
		t.Errorf("other run's steps = %v", got)
	}
	wantErrIs(t, "DeleteStepResults of an unknown run", s.DeleteStepResults(ctx, "nope", nil), record.ErrNotFound)
}

func testRunInterrupt(t *testing.T, s store.Store) {
	ctx := t.Context()
	ids, err := s.InterruptRuns(ctx)
	if err != nil || len(ids) != 0 {
		t.Errorf("InterruptRuns on an empty store = %v, %v", ids, err)
	}
	old := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	all := []string{record.RunPlanning, record.RunAwaitingApproval, record.RunRunning, record.RunCompleted, record.RunFailed, record.RunCancelled, record.RunInterrupted}
	before := map[string]record.Run{}
	for i, st := range all {
		for j := range 2 {
			id := fmt.Sprintf("%d-%s-%d", len(all)-i, st, j) // not in status order
			before[id] = mustCreateRun(t, s, record.Run{ID: id, Status: st, Summary: "keep", CreatedAt: old})
		}
	}
	ids, err = s.InterruptRuns(ctx)
	if err != nil {
		t.Fatalf("InterruptRuns: %v", err)
	}
	var want []string
	for id, r := range before {
		switch r.Status {
		case record.RunPlanning, record.RunAwaitingApproval, record.RunRunning:
			want = append(want, id)
		}
	}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("InterruptRuns = %v, want %v", ids, want)
	}
	for id, r := range before {
		got := mustGetRun(t, s, id)
		if slices.Contains(want, id) {
			if got.Status != record.RunInterrupted || !got.UpdatedAt.After(old) {
				t.Errorf("%s after interrupt: status %q UpdatedAt %v", id, got.Status, got.UpdatedAt)
			}
			if got.Summary != "keep" || !got.CreatedAt.Equal(old) {
				t.Errorf("%s: interrupt changed more than status: %+v", id, got)
			}
		} else {
			same(t, "run "+id+" not live", got, r)
		}
	}
	ids, err = s.InterruptRuns(ctx)
	if err != nil || len(ids) != 0 {
		t.Errorf("second InterruptRuns = %v, %v; want none", ids, err)
	}
}

func testRunEvents(t *testing.T, s store.Store) {
	ctx := t.Context()
	log := s.RunEvents()
	mustCreateRun(t, s, record.Run{ID: "a"})
	mustCreateRun(t, s, record.Run{ID: "b"})
	// A session with a run's id has its own, separate log.
	mustCreate(t, s, record.Session{ID: "a"})
	mustAppend(t, s, "a", ev("session", `1`))

	steps := []struct {
		run   string
		n     int
		first int64
	}{{"a", 1, 1}, {"a", 3, 2}, {"b", 2, 1}, {"a", 0, 5}, {"b", 1, 3}}
	at := time.Date(2025, 12, 31, 23, 59, 59, 1, time.FixedZone("E", 3600))
	for i, st := range steps {
		events := make([]event.Event, st.n)
		for j := range events {
			events[j] = ev("t", fmt.Sprintf(`{"step":%d,"j":%d}`, i, j))
			events[j].SessionID, events[j].Seq = "ignored", 77
			if j == 0 {
				events[j].CreatedAt = at
			}
		}
		got, err := log.AppendEvents(ctx, st.run, events...)
		if err != nil {
			t.Fatalf("step %d: AppendEvents(%q): %v", i, st.run, err)
		}
		if want := seqRange(st.first, st.first+int64(st.n)-1); !slices.Equal(seqs(got), want) {
			t.Errorf("step %d: seqs %v, want %v", i, seqs(got), want)
		}
		for j, e := range got {
			if e.SessionID != st.run || string(e.Data) != string(events[j].Data) {
				t.Errorf("step %d: returned event %+v", i, e)
			}
			checkUTC(t, "event CreatedAt", e.CreatedAt)
			if j == 0 && !e.CreatedAt.Equal(at) {
				t.Errorf("CreatedAt %v, want %v", e.CreatedAt, at)
			}
		}
	}
	for id, last := range map[string]int64{"a": 4, "b": 3} {
		if got := mustGetRun(t, s, id).LastSeq; got != last {
			t.Errorf("run %q LastSeq = %d, want %d", id, got, last)
		}
		got, err := log.ReadEvents(ctx, id, 0, 0)
		if err != nil || !slices.Equal(seqs(got), seqRange(1, last)) {
			t.Errorf("run %q events: seqs %v, %v; want 1..%d", id, seqs(got), err, last)
		}
	}
	for _, tc := range []struct {
		after int64
		limit int
		want  []int64
	}{{0, 2, []int64{1, 2}}, {2, 0, []int64{3, 4}}, {3, 5, []int64{4}}, {4, 0, nil}, {100, 1, nil}} {
		got, err := log.ReadEvents(ctx, "a", tc.after, tc.limit)
		if err != nil || !slices.Equal(seqs(got), tc.want) {
			t.Errorf("ReadEvents(a, after %d, limit %d) = %v, %v; want %v", tc.after, tc.limit, seqs(got), err, tc.want)
		}
	}
	if got := mustRead(t, s, "a", 0, 0); len(got) != 1 || got[0].Type != "session" {
		t.Errorf("session a's events = %+v, want its one own event", got)
	}
	if got := mustGet(t, s, "a").LastSeq; got != 1 {
		t.Errorf("session a LastSeq = %d, want 1", got)
	}

	_, err := log.AppendEvents(ctx, "nope", ev("x", `1`))
	wantErrIs(t, "AppendEvents to an unknown run", err, record.ErrNotFound)
	_, err = log.AppendEvents(ctx, "nope")
	wantErrIs(t, "AppendEvents of nothing to an unknown run", err, record.ErrNotFound)
	_, err = log.ReadEvents(ctx, "nope", 0, 0)
	wantErrIs(t, "ReadEvents of an unknown run", err, record.ErrNotFound)
	if _, err := log.AppendEvents(ctx, "a", ev("ok", `1`), ev("bad", `{`)); err == nil {
		t.Error("AppendEvents with invalid JSON data succeeded")
	}
	if got := mustGetRun(t, s, "a").LastSeq; got != 4 {
		t.Errorf("LastSeq after a failed batch = %d, want 4", got)
	}
}

func testRunEventsConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	log := s.RunEvents()
	mustCreateRun(t, s, record.Run{ID: "hot"})
	mustCreate(t, s, record.Session{ID: "hot"})
	const workers, calls = 8, 15
	var (
		wg                sync.WaitGroup
		mu                sync.Mutex
		runSeqs, sessSeqs []int64
	)
	for w := range workers {
		wg.Go(func() {
			for c := range calls {
				// Session and run appends interleave in shared groups.
				var (
					got []event.Event
					err error
				)
				if w%2 == 0 || c%3 == 0 {
					got, err = log.AppendEvents(ctx, "hot", ev("r", `1`), ev("r", `2`))
				} else {
					got, err = s.AppendEvents(ctx, "hot", ev("s", `1`))
				}
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
				mu.Lock()
				if got[0].Type == "r" {
					if got[1].Seq != got[0].Seq+1 {
						t.Errorf("run batch not contiguous: %v", seqs(got))
					}
					runSeqs = append(runSeqs, seqs(got)...)
				} else {
					sessSeqs = append(sessSeqs, seqs(got)...)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for name, got := range map[string][]int64{"run": runSeqs, "session": sessSeqs} {
		slices.Sort(got)
		if !slices.Equal(got, seqRange(1, int64(len(got)))) {
			t.Errorf("%s seqs are not 1..%d without gaps or duplicates", name, len(got))
		}
	}
	stored, err := log.ReadEvents(ctx, "hot", 0, 0)
	if err != nil || !slices.Equal(seqs(stored), seqRange(1, int64(len(runSeqs)))) {
		t.Errorf("stored run events: %d, %v; want 1..%d", len(stored), err, len(runSeqs))
	}
}

func testRunsCanceled(t *testing.T, s store.Store) {
	mustCreateRun(t, s, record.Run{ID: "r"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	checks := map[string]error{}
	_, checks["CreateRun"] = s.CreateRun(ctx, record.Run{ID: "new"})
	checks["UpdateRun"] = s.UpdateRun(ctx, record.Run{ID: "r", Status: record.RunFailed})
	checks["PutStepResult"] = s.PutStepResult(ctx, record.StepResult{RunID: "r", StepID: "s", Status: record.StepRunning})
	_, checks["AppendEvents"] = s.RunEvents().AppendEvents(ctx, "r", ev("x", `1`))
	_, checks["InterruptRuns"] = s.InterruptRuns(ctx)
	checks["AppendAudit"] = s.AppendAudit(ctx, record.AuditEntry{SessionID: "x", Outcome: record.AuditAllowed})
	_, checks["CreateWorkflow"] = s.CreateWorkflow(ctx, record.Workflow{ID: "w", Name: "w"})
	for name, err := range checks {
		if err == nil {
			t.Errorf("%s with a canceled context succeeded", name)
		}
	}
	got := mustGetRun(t, s, "r")
	if got.Status != record.RunPlanning || got.LastSeq != 0 {
		t.Errorf("canceled writes changed the run: %+v", got)
	}
	if _, err := s.GetRun(t.Context(), "new"); !errors.Is(err, record.ErrNotFound) {
		t.Errorf("canceled CreateRun stored the run (%v)", err)
	}
	if got := mustSteps(t, s, "r"); len(got) != 0 {
		t.Errorf("canceled PutStepResult stored %v", stepIDs(got))
	}
}
