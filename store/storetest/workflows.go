package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

func mustCreateWorkflow(t *testing.T, s store.Store, w record.Workflow) record.Workflow {
	t.Helper()
	got, err := s.CreateWorkflow(t.Context(), w)
	if err != nil {
		t.Fatalf("CreateWorkflow(%q): %v", w.ID, err)
	}
	return got
}

func mustGetWorkflow(t *testing.T, s store.Store, id string) record.Workflow {
	t.Helper()
	got, err := s.GetWorkflow(t.Context(), id)
	if err != nil {
		t.Fatalf("GetWorkflow(%q): %v", id, err)
	}
	return got
}

func workflowIDs(ws []record.Workflow) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.ID
	}
	return out
}

func testWorkflows(t *testing.T, s store.Store) {
	ctx := t.Context()
	in := record.Workflow{
		ID:          "wf",
		Name:        "Weekly digest",
		Description: "collects and summarises",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"]}`),
		Plan:        json.RawMessage(`{"steps":[{"id":"a","tool":"Search","args":{"q":"{{inputs.topic}}"}}]}`),
		Canvas:      json.RawMessage(`{"nodes":[],"edges":[]}`),
		Published:   true,
		Revision:    7, // ignored: a new workflow is at revision 1
	}
	got := mustCreateWorkflow(t, s, in)
	want := in
	want.Revision, want.CreatedAt, want.UpdatedAt = 1, got.CreatedAt, got.UpdatedAt
	same(t, "CreateWorkflow result", got, want)
	checkUTC(t, "CreatedAt", got.CreatedAt)
	if !got.UpdatedAt.Equal(got.CreatedAt) {
		t.Errorf("UpdatedAt %v, want CreatedAt %v", got.UpdatedAt, got.CreatedAt)
	}
	same(t, "GetWorkflow", mustGetWorkflow(t, s, "wf"), got)

	_, err := s.CreateWorkflow(ctx, record.Workflow{ID: "wf", Name: "again"})
	wantErrIs(t, "CreateWorkflow of a taken id", err, record.ErrExists)
	for name, w := range map[string]record.Workflow{
		"empty id":       {Name: "x"},
		"empty name":     {ID: "noname"},
		"invalid plan":   {ID: "bad", Name: "x", Plan: json.RawMessage(`{`)},
		"invalid schema": {ID: "bad", Name: "x", InputSchema: json.RawMessage(`nope`)},
		"invalid canvas": {ID: "bad", Name: "x", Canvas: json.RawMessage(`{"nodes":[}`)},
	} {
		if _, err := s.CreateWorkflow(ctx, w); err == nil {
			t.Errorf("CreateWorkflow with %s succeeded", name)
		}
	}
	_, err = s.GetWorkflow(ctx, "bad")
	wantErrIs(t, "GetWorkflow after refused creates", err, record.ErrNotFound)

	// Updates: expectRevision 0 skips the check; otherwise it must match.
	prev := got
	for i, st := range []struct {
		expect int
		name   string
	}{{0, "renamed"}, {2, "checked"}, {3, "unpublished"}} {
		upd := prev
		upd.Name, upd.Published = st.name, i == 0
		upd.Plan = json.RawMessage(fmt.Sprintf(`{"steps":[],"v":%d}`, i))
		upd.Revision, upd.CreatedAt, upd.UpdatedAt = 99, time.Now().Add(time.Hour), time.Time{}
		got, err := s.UpdateWorkflow(ctx, upd, st.expect)
		if err != nil {
			t.Fatalf("update %d: UpdateWorkflow(expect %d): %v", i, st.expect, err)
		}
		want := upd
		want.Revision, want.CreatedAt, want.UpdatedAt = prev.Revision+1, prev.CreatedAt, got.UpdatedAt
		same(t, fmt.Sprintf("update %d result", i), got, want)
		if got.UpdatedAt.Before(prev.UpdatedAt) {
			t.Errorf("update %d: UpdatedAt went back", i)
		}
		checkUTC(t, "UpdatedAt", got.UpdatedAt)
		same(t, fmt.Sprintf("update %d stored", i), mustGetWorkflow(t, s, "wf"), got)
		prev = got
	}
	stale := prev
	stale.Name = "stale write"
	_, err = s.UpdateWorkflow(ctx, stale, prev.Revision-1)
	wantErrIs(t, "UpdateWorkflow with a stale revision", err, record.ErrConflict)
	if errors.Is(err, record.ErrNotFound) {
		t.Errorf("stale revision reported as not found: %v", err)
	}
	_, err = s.UpdateWorkflow(ctx, stale, prev.Revision+1)
	wantErrIs(t, "UpdateWorkflow with a future revision", err, record.ErrConflict)
	same(t, "workflow after refused updates", mustGetWorkflow(t, s, "wf"), prev)

	_, err = s.UpdateWorkflow(ctx, record.Workflow{ID: "nope", Name: "x"}, 0)
	wantErrIs(t, "UpdateWorkflow of an unknown id", err, record.ErrNotFound)
	_, err = s.UpdateWorkflow(ctx, record.Workflow{ID: "nope", Name: "x"}, 3)
	wantErrIs(t, "UpdateWorkflow of an unknown id with a revision", err, record.ErrNotFound)
	if _, err := s.UpdateWorkflow(ctx, record.Workflow{ID: "wf", Name: "x", Canvas: json.RawMessage(`[`)}, 0); err == nil {
		t.Error("UpdateWorkflow with an invalid canvas succeeded")
	}

	if err := s.DeleteWorkflow(ctx, "wf"); err != nil {
		t.Fatalf("DeleteWorkflow: %v", err)
	}
	_, err = s.GetWorkflow(ctx, "wf")
	wantErrIs(t, "GetWorkflow after delete", err, record.ErrNotFound)
	wantErrIs(t, "second DeleteWorkflow", s.DeleteWorkflow(ctx, "wf"), record.ErrNotFound)
	if re := mustCreateWorkflow(t, s, record.Workflow{ID: "wf", Name: "new"}); re.Revision != 1 {
		t.Errorf("recreated workflow at revision %d, want 1", re.Revision)
	}
}

// testWorkflowCanvas: the canvas (and the other JSON) is the UI's bytes,
// not a re-encoding of them.
func testWorkflowCanvas(t *testing.T, s store.Store) {
	ctx := t.Context()
	canvases := []string{
		`{"z":1,"a":2}`,
		"{\n\t\"nodes\" : [ {\"id\":\"n1\",\"x\": 1.50, \"y\":-0.0} ],\r\n  \"edges\":[]   }",
		`  {"a":1}  `,
		`{"dup":1,"dup":2}`,
		`{"html":"<b>&amp;</b>","esc":"\u00e9\u4e2d\/","raw":"é中","big":12345678901234567890123}`,
		`[]`,
		`"just a string"`,
		`null`,
	}
	for i, c := range canvases {
		id := fmt.Sprint("c", i)
		created := mustCreateWorkflow(t, s, record.Workflow{ID: id, Name: id, Canvas: json.RawMessage(c), Plan: json.RawMessage(c), InputSchema: json.RawMessage(c)})
		for _, w := range []record.Workflow{created, mustGetWorkflow(t, s, id)} {
			if string(w.Canvas) != c || string(w.Plan) != c || string(w.InputSchema) != c {
				t.Errorf("canvas %d came back as %q / %q / %q, want %q", i, w.Canvas, w.Plan, w.InputSchema, c)
			}
		}
		next := canvases[(i+1)%len(canvases)]
		updated, err := s.UpdateWorkflow(ctx, record.Workflow{ID: id, Name: id, Canvas: json.RawMessage(next)}, 1)
		if err != nil {
			t.Fatalf("UpdateWorkflow: %v", err)
		}
		if got := mustGetWorkflow(t, s, id); string(got.Canvas) != next || string(updated.Canvas) != next || got.Plan != nil {
			t.Errorf("updated canvas %d came back as %q (plan %q), want %q", i, got.Canvas, got.Plan, next)
		}
	}
	all, err := s.ListWorkflows(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range all {
		var i int
		fmt.Sscanf(w.ID, "c%d", &i)
		if want := canvases[(i+1)%len(canvases)]; string(w.Canvas) != want {
			t.Errorf("listed canvas of %s = %q, want %q", w.ID, w.Canvas, want)
		}
	}
}

func testWorkflowList(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, p := range []bool{false, true} {
		got, err := s.ListWorkflows(ctx, p)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("ListWorkflows(%v) on an empty store = %#v, %v; want an empty slice", p, got, err)
		}
	}
	for _, w := range []record.Workflow{
		{ID: "3", Name: "beta", Published: true},
		{ID: "1", Name: "alpha"},
		{ID: "2", Name: "gamma", Published: true},
		{ID: "5", Name: "beta"},
		{ID: "4", Name: "Zeta", Published: true},
	} {
		mustCreateWorkflow(t, s, w)
	}
	for _, tc := range []struct {
		published bool
		want      []string
	}{{false, []string{"4", "1", "3", "5", "2"}}, {true, []string{"4", "3", "2"}}} {
		got, err := s.ListWorkflows(ctx, tc.published)
		if err != nil {
			t.Fatal(err)
		}
		if ids := workflowIDs(got); !slices.Equal(ids, tc.want) {
			t.Errorf("ListWorkflows(%v) = %v, want %v", tc.published, ids, tc.want)
		}
		for _, w := range got {
			same(t, "listed workflow "+w.ID, w, mustGetWorkflow(t, s, w.ID))
		}
	}
	// Unpublishing takes it off the published list at once.
	if _, err := s.UpdateWorkflow(ctx, record.Workflow{ID: "3", Name: "beta"}, 1); err != nil {
		t.Fatal(err)
	}
	got, _ := s.ListWorkflows(ctx, true)
	if ids := workflowIDs(got); !slices.Equal(ids, []string{"4", "2"}) {
		t.Errorf("published after unpublishing 3 = %v", ids)
	}
}

// testWorkflowConcurrent: of many updates expecting the same revision,
// exactly one wins; the others get ErrConflict.
func testWorkflowConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreateWorkflow(t, s, record.Workflow{ID: "w", Name: "start"})
	const writers = 12
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		winners   []string
		conflicts int
	)
	for i := range writers {
		wg.Go(func() {
			name := fmt.Sprint("writer ", i)
			_, err := s.UpdateWorkflow(ctx, record.Workflow{ID: "w", Name: name}, 1)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				winners = append(winners, name)
			case errors.Is(err, record.ErrConflict):
				conflicts++
			default:
				t.Errorf("UpdateWorkflow: %v", err)
			}
		})
	}
	wg.Wait()
	if len(winners) != 1 || conflicts != writers-1 {
		t.Fatalf("%d winners %v, %d conflicts; want 1 and %d", len(winners), winners, conflicts, writers-1)
	}
	if got := mustGetWorkflow(t, s, "w"); got.Name != winners[0] || got.Revision != 2 {
		t.Errorf("stored %q at revision %d, want %q at 2", got.Name, got.Revision, winners[0])
	}
}

func mustGetSchedule(t *testing.T, s store.Store, id string) record.Schedule {
	t.Helper()
	got, err := s.GetSchedule(t.Context(), id)
	if err != nil {
		t.Fatalf("GetSchedule(%q): %v", id, err)
	}
	return got
}

func testSchedules(t *testing.T, s store.Store) {
	ctx := t.Context()
	zone := time.FixedZone("Z", 5*3600)
	next := time.Date(2026, 3, 1, 9, 0, 0, 1, zone)
	full := record.Schedule{
		ID: "full", WorkflowID: "wf", Inputs: json.RawMessage(`{ "topic" : "go" }`),
		IntervalSeconds: 3600, Recurring: true, Active: true,
		NextRunAt: next, ExpiresAt: next.Add(7 * 24 * time.Hour), CreatedAt: next.Add(-time.Hour),
		LastRunAt: next.Add(-time.Minute), RunCount: 3, LastTaskID: "task-9",
		LastError: `workflow "wf" is not published`, LastErrorAt: next.Add(-2 * time.Minute),
	}
	before := time.Now().Add(-time.Second)
	for _, in := range []record.Schedule{full, {ID: "min", WorkflowID: "wf"}} {
		got, err := s.CreateSchedule(ctx, in)
		if err != nil {
			t.Fatalf("CreateSchedule(%q): %v", in.ID, err)
		}
		want := in
		if in.CreatedAt.IsZero() {
			if got.CreatedAt.Before(before) || got.CreatedAt.After(time.Now().Add(time.Second)) {
				t.Errorf("CreatedAt %v is not about now", got.CreatedAt)
			}
			want.CreatedAt = got.CreatedAt
		}
		same(t, "CreateSchedule result", got, want)
		stored := mustGetSchedule(t, s, in.ID)
		same(t, "GetSchedule", stored, got)
		checkUTC(t, "CreatedAt", stored.CreatedAt)
		if in.ID == "min" && (!stored.NextRunAt.IsZero() || !stored.LastRunAt.IsZero() || !stored.ExpiresAt.IsZero() || stored.Inputs != nil ||
			stored.LastError != "" || !stored.LastErrorAt.IsZero()) {
			t.Errorf("zero fields came back set: %+v", stored)
		}
	}
	_, err := s.CreateSchedule(ctx, record.Schedule{ID: "full", WorkflowID: "other"})
	wantErrIs(t, "CreateSchedule of a taken id", err, record.ErrExists)
	for name, sc := range map[string]record.Schedule{
		"empty id":          {WorkflowID: "wf"},
		"empty workflow":    {ID: "x"},
		"invalid inputs":    {ID: "x", WorkflowID: "wf", Inputs: json.RawMessage(`{`)},
		"negative interval": {ID: "x", WorkflowID: "wf", IntervalSeconds: -1},
	} {
		if _, err := s.CreateSchedule(ctx, sc); err == nil {
			t.Errorf("CreateSchedule with %s succeeded", name)
		}
	}
	_, err = s.GetSchedule(ctx, "x")
	wantErrIs(t, "GetSchedule after refused creates", err, record.ErrNotFound)

	// A firing: everything but ID and CreatedAt is replaced, zero times
	// included.
	fired := full
	fired.Active, fired.RunCount, fired.LastTaskID = false, 4, "task-10"
	fired.LastRunAt, fired.NextRunAt = next, time.Time{}
	fired.LastError, fired.LastErrorAt = "", time.Time{} // a success clears them
	fired.Inputs = nil
	fired.CreatedAt = time.Now() // ignored
	if err := s.UpdateSchedule(ctx, fired); err != nil {
		t.Fatalf("UpdateSchedule: %v", err)
	}
	want := fired
	want.CreatedAt = full.CreatedAt
	same(t, "schedule after UpdateSchedule", mustGetSchedule(t, s, "full"), want)
	wantErrIs(t, "UpdateSchedule of an unknown id", s.UpdateSchedule(ctx, record.Schedule{ID: "nope", WorkflowID: "wf"}), record.ErrNotFound)
	if err := s.UpdateSchedule(ctx, record.Schedule{ID: "full"}); err == nil {
		t.Error("UpdateSchedule without a workflow id succeeded")
	}

	if err := s.DeleteSchedule(ctx, "full"); err != nil {
		t.Fatalf("DeleteSchedule: %v", err)
	}
	_, err = s.GetSchedule(ctx, "full")
	wantErrIs(t, "GetSchedule after delete", err, record.ErrNotFound)
	wantErrIs(t, "second DeleteSchedule", s.DeleteSchedule(ctx, "full"), record.ErrNotFound)
	mustGetSchedule(t, s, "min")
}

func testScheduleList(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, a := range []bool{false, true} {
		got, err := s.ListSchedules(ctx, a)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("ListSchedules(%v) on an empty store = %#v, %v; want an empty slice", a, got, err)
		}
	}
	base := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	for _, sc := range []struct {
		id     string
		next   int // minutes from base; -1 means zero
		active bool
	}{{"d", 30, true}, {"a", 10, false}, {"c", 20, true}, {"b", 20, true}, {"zero", -1, true}, {"e", 5, false}} {
		in := record.Schedule{ID: sc.id, WorkflowID: "wf", Active: sc.active, IntervalSeconds: 60}
		if sc.next >= 0 {
			in.NextRunAt = base.Add(time.Duration(sc.next) * time.Minute)
		}
		if _, err := s.CreateSchedule(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(ss []record.Schedule) []string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = s.ID
		}
		return out
	}
	for _, tc := range []struct {
		active bool
		want   []string
	}{{false, []string{"zero", "e", "a", "b", "c", "d"}}, {true, []string{"zero", "b", "c", "d"}}} {
		got, err := s.ListSchedules(ctx, tc.active)
		if err != nil {
			t.Fatal(err)
		}
		if g := ids(got); !slices.Equal(g, tc.want) {
			t.Errorf("ListSchedules(%v) = %v, want %v", tc.active, g, tc.want)
		}
		for _, sc := range got {
			same(t, "listed schedule "+sc.ID, sc, mustGetSchedule(t, s, sc.ID))
		}
	}
}

func testMemories(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, u := range []string{"alice", ""} {
		got, err := s.ListMemories(ctx, u)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("ListMemories(%q) on an empty store = %#v, %v; want an empty slice", u, got, err)
		}
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	before := time.Now().Add(-time.Second)
	add := func(m record.Memory) record.Memory {
		t.Helper()
		got, err := s.AddMemory(ctx, m)
		if err != nil {
			t.Fatalf("AddMemory(%+v): %v", m, err)
		}
		if got.ID == "" || got.UserID != m.UserID || got.Text != m.Text || !slices.Equal(got.Tags, m.Tags) {
			t.Errorf("AddMemory(%+v) = %+v", m, got)
		}
		if m.ID != "" && got.ID != m.ID {
			t.Errorf("AddMemory kept id %q as %q", m.ID, got.ID)
		}
		checkUTC(t, "CreatedAt", got.CreatedAt)
		return got
	}
	old := add(record.Memory{ID: "m-old", UserID: "alice", Text: "prefers tabs", Tags: []string{"style", "go"}, CreatedAt: base})
	gen1 := add(record.Memory{UserID: "alice", Text: "works on weft"})
	gen2 := add(record.Memory{UserID: "alice", Text: "lives in Lyon", Tags: []string{}})
	bob := add(record.Memory{UserID: "bob", Text: "bob's fact"})
	anon := add(record.Memory{Text: "single-user fact"})
	if gen1.ID == gen2.ID || gen1.ID == bob.ID {
		t.Errorf("assigned ids are not unique: %q %q %q", gen1.ID, gen2.ID, bob.ID)
	}
	if gen1.CreatedAt.Before(before) || !old.CreatedAt.Equal(base) {
		t.Errorf("CreatedAt: assigned %v, given %v", gen1.CreatedAt, old.CreatedAt)
	}
	if gen2.Tags != nil {
		t.Errorf("empty tags came back as %#v, want nil", gen2.Tags)
	}

	got, err := s.ListMemories(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	// Newest first; the two added now may share a timestamp, so they are
	// checked as a set.
	if len(got) != 3 || got[2].ID != "m-old" {
		t.Fatalf("alice's memories = %+v", got)
	}
	if ids := []string{got[0].ID, got[1].ID}; !slices.Contains(ids, gen1.ID) || !slices.Contains(ids, gen2.ID) {
		t.Errorf("alice's newest memories = %v", ids)
	}
	same(t, "listed old memory", got[2], old)
	if l, _ := s.ListMemories(ctx, ""); len(l) != 1 || l[0].ID != anon.ID {
		t.Errorf("the anonymous user's memories = %+v", l)
	}

	_, err = s.AddMemory(ctx, record.Memory{ID: "m-old", UserID: "bob", Text: "steal"})
	wantErrIs(t, "AddMemory of a taken id", err, record.ErrExists)
	if _, err := s.AddMemory(ctx, record.Memory{UserID: "alice"}); err == nil {
		t.Error("AddMemory with empty text succeeded")
	}
	wantErrIs(t, "DeleteMemory of another user's memory", s.DeleteMemory(ctx, "bob", "m-old"), record.ErrNotFound)
	if err := s.DeleteMemory(ctx, "alice", "m-old"); err != nil {
		t.Fatalf("DeleteMemory: %v", err)
	}
	wantErrIs(t, "second DeleteMemory", s.DeleteMemory(ctx, "alice", "m-old"), record.ErrNotFound)
	if l, _ := s.ListMemories(ctx, "alice"); len(l) != 2 {
		t.Errorf("alice has %d memories after a delete, want 2", len(l))
	}
	if l, _ := s.ListMemories(ctx, "bob"); len(l) != 1 {
		t.Errorf("bob has %d memories, want 1", len(l))
	}
	// Strict newest-first with distinct times.
	for i := range 3 {
		add(record.Memory{ID: fmt.Sprint("o", i), UserID: "carol", Text: "x", CreatedAt: base.Add(time.Duration(i) * time.Hour)})
	}
	if l, _ := s.ListMemories(ctx, "carol"); len(l) != 3 || l[0].ID != "o2" || l[2].ID != "o0" {
		t.Errorf("carol's memories out of order: %+v", l)
	}
}
