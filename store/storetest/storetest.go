// Package storetest is the conformance suite every store.Store
// implementation must pass. An implementation's test calls Run with a
// function that opens a fresh, empty store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			db, err := mystore.Open(...)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return db
//		})
//	}
//
// Run closes each store it opens when its subtest ends. Subtests run in
// parallel, each on its own store.
//
// Beyond what store.go spells out, the suite pins down what the runtime
// relies on:
//   - a session id must be non-empty;
//   - times come back in UTC and equal (time.Time.Equal) to what was stored
//     or returned at creation;
//   - messages come back deeply equal, tool input byte for byte when it was
//     compact JSON (whitespace may be compacted, nothing else changes);
//   - event data and session metadata come back byte for byte; they are
//     validated: invalid JSON fails the call, and an invalid event fails
//     its whole batch;
//   - ReadEvents with limit <= 0 returns everything after the position;
//   - LoadMessages, ReadEvents, AppendMessages, ReplaceMessages and
//     AppendEvents on an unknown session fail with record.ErrNotFound, even
//     with nothing to append;
//   - an invalid ListOptions.Cursor (garbage, truncated, extended) is an
//     error, never a first page;
//   - UpdateSession changes Title and Metadata only, and never moves
//     UpdatedAt backwards;
//   - readers never see an event before every lower seq is visible;
//   - runs, workflows and schedules: ids must be non-empty; their JSON
//     fields (plan, config, canvas, inputs, ...) are validated and come
//     back byte for byte; statuses must be known ones; zero optional times
//     come back zero;
//   - run events follow the session events' contract, per run, and are
//     independent of a session with the same id;
//   - ListRuns pages with the cursor rules of ListSessions; a filtered
//     query pages through exactly the matching runs;
//   - list methods return empty, non-nil slices when nothing matches;
//   - audit entries outlive their session;
//   - ListOpenTurns follows the turn framing however the events were
//     appended (one per call, several, batched);
//   - usage records outlive their session; an invalid record fails its
//     whole batch; groups come back ordered by key, costs summed to
//     within float rounding.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// Run runs the conformance suite. open returns a new, empty store each time
// it is called.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"CreateGetSession", testCreateGet},
		{"CreateSessionErrors", testCreateErrors},
		{"UpdateSession", testUpdate},
		{"DeleteSessionCascades", testDelete},
		{"ListSessionsOrder", testListOrder},
		{"ListSessionsPaging", testListPaging},
		{"ListSessionsLimits", testListLimits},
		{"ListSessionsCursorStable", testListCursorStable},
		{"ListSessionsInvalidCursor", testListInvalidCursor},
		{"MessagesRoundTrip", testMessagesRoundTrip},
		{"MessagesAppendReplace", testMessagesAppendReplace},
		{"MessagesUnknownSession", testMessagesUnknown},
		{"MessagesConcurrentAppend", testMessagesConcurrent},
		{"EventsSeq", testEventsSeq},
		{"EventsFields", testEventsFields},
		{"EventsReadBoundaries", testEventsRead},
		{"EventsUnknownSession", testEventsUnknown},
		{"EventsInvalidBatchIsAtomic", testEventsAtomic},
		{"EventsConcurrentOneSession", testEventsConcurrentOne},
		{"EventsConcurrentManySessions", testEventsConcurrentMany},
		{"CanceledContext", testCanceled},
		{"Turns", testTurns},

		{"CreateGetRun", testRunCreateGet},
		{"UpdateRun", testRunUpdate},
		{"ListRunsOrderAndPaging", testRunListPaging},
		{"ListRunsLimits", testRunListLimits},
		{"ListRunsFilters", testRunListFilters},
		{"DeleteRunCascades", testRunDelete},
		{"StepResults", testRunSteps},
		{"DeleteStepResults", testRunDeleteSteps},
		{"InterruptRuns", testRunInterrupt},
		{"RunEvents", testRunEvents},
		{"RunEventsConcurrent", testRunEventsConcurrent},
		{"RunsCanceledContext", testRunsCanceled},
		{"Workflows", testWorkflows},
		{"WorkflowCanvasByteForByte", testWorkflowCanvas},
		{"ListWorkflows", testWorkflowList},
		{"WorkflowConcurrentUpdates", testWorkflowConcurrent},
		{"Schedules", testSchedules},
		{"ListSchedules", testScheduleList},
		{"Memories", testMemories},
		{"Audit", testAudit},
		{"AuditQueries", testAuditQueries},
		{"AuditLimits", testAuditLimits},
		{"AuditConcurrent", testAuditConcurrent},
		{"TextBytes", testTextBytes},
		{"Usage", testUsage},
		{"UsageConcurrent", testUsageConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, s)
		})
	}
}

// --- helpers -------------------------------------------------------------

func mustCreate(t *testing.T, s store.Store, sess record.Session) record.Session {
	t.Helper()
	got, err := s.CreateSession(t.Context(), sess)
	if err != nil {
		t.Fatalf("CreateSession(%q): %v", sess.ID, err)
	}
	return got
}

func mustGet(t *testing.T, s store.Store, id string) record.Session {
	t.Helper()
	got, err := s.GetSession(t.Context(), id)
	if err != nil {
		t.Fatalf("GetSession(%q): %v", id, err)
	}
	return got
}

func mustAppend(t *testing.T, s store.Store, id string, events ...event.Event) []event.Event {
	t.Helper()
	got, err := s.AppendEvents(t.Context(), id, events...)
	if err != nil {
		t.Fatalf("AppendEvents(%q, %d events): %v", id, len(events), err)
	}
	if len(got) != len(events) {
		t.Fatalf("AppendEvents(%q) returned %d events, want %d", id, len(got), len(events))
	}
	return got
}

func mustRead(t *testing.T, s store.Store, id string, after int64, limit int) []event.Event {
	t.Helper()
	got, err := s.ReadEvents(t.Context(), id, after, limit)
	if err != nil {
		t.Fatalf("ReadEvents(%q, after=%d, limit=%d): %v", id, after, limit, err)
	}
	return got
}

func ev(typ string, data string) event.Event {
	e := event.Event{Type: typ}
	if data != "" {
		e.Data = json.RawMessage(data)
	}
	return e
}

func seqs(events []event.Event) []int64 {
	out := make([]int64, len(events))
	for i, e := range events {
		out[i] = e.Seq
	}
	return out
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func wantErrIs(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want errors.Is %v", what, err, target)
	}
}

func checkUTC(t *testing.T, what string, tm time.Time) {
	t.Helper()
	if tm.IsZero() {
		t.Errorf("%s is zero", what)
	}
	if tm.Location() != time.UTC {
		t.Errorf("%s location is %v, want UTC", what, tm.Location())
	}
}

// sameSession compares sessions with time.Equal for the times.
func sameSession(t *testing.T, what string, got, want record.Session) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, diff)
	}
}

// --- sessions ------------------------------------------------------------

func testCreateGet(t *testing.T, s store.Store) {
	before := time.Now().Add(-time.Second)
	fixed := time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.FixedZone("UTC+2", 2*3600))
	tests := []struct {
		name string
		in   record.Session
	}{
		{"zero times", record.Session{ID: "zero"}},
		{"title and metadata", record.Session{ID: "meta", Title: "Fix the build ✓", Metadata: json.RawMessage(`{"model":"anthropic:claude","workspace":"/w","n":[1,2]}`)}},
		{"explicit times in another zone", record.Session{ID: "fixed", CreatedAt: fixed, UpdatedAt: fixed.Add(time.Hour)}},
		{"created only", record.Session{ID: "created-only", CreatedAt: fixed}},
		{"odd id", record.Session{ID: "with space/slash?&=%.é"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := mustCreate(t, s, tc.in)
			if got.ID != tc.in.ID || got.Title != tc.in.Title || string(got.Metadata) != string(tc.in.Metadata) {
				t.Errorf("CreateSession returned %+v for %+v", got, tc.in)
			}
			checkUTC(t, "CreatedAt", got.CreatedAt)
			checkUTC(t, "UpdatedAt", got.UpdatedAt)
			if got.MessageCount != 0 || got.LastSeq != 0 {
				t.Errorf("new session has MessageCount %d, LastSeq %d; want 0, 0", got.MessageCount, got.LastSeq)
			}
			switch {
			case tc.in.CreatedAt.IsZero():
				if got.CreatedAt.Before(before) || got.CreatedAt.After(time.Now().Add(time.Second)) {
					t.Errorf("CreatedAt %v is not about now", got.CreatedAt)
				}
				if got.UpdatedAt.Before(got.CreatedAt) {
					t.Errorf("UpdatedAt %v before CreatedAt %v", got.UpdatedAt, got.CreatedAt)
				}
			default:
				if !got.CreatedAt.Equal(tc.in.CreatedAt) {
					t.Errorf("CreatedAt %v, want %v", got.CreatedAt, tc.in.CreatedAt)
				}
				if !tc.in.UpdatedAt.IsZero() && !got.UpdatedAt.Equal(tc.in.UpdatedAt) {
					t.Errorf("UpdatedAt %v, want %v", got.UpdatedAt, tc.in.UpdatedAt)
				}
			}
			reread := mustGet(t, s, tc.in.ID)
			sameSession(t, "GetSession after CreateSession", reread, got)
			checkUTC(t, "GetSession CreatedAt", reread.CreatedAt)
		})
	}
}

func testCreateErrors(t *testing.T, s store.Store) {
	ctx := t.Context()
	orig := mustCreate(t, s, record.Session{ID: "dup", Title: "first"})

	_, err := s.CreateSession(ctx, record.Session{ID: "dup", Title: "second"})
	wantErrIs(t, "CreateSession of a taken id", err, record.ErrExists)
	sameSession(t, "session after a refused duplicate", mustGet(t, s, "dup"), orig)

	if _, err := s.CreateSession(ctx, record.Session{}); err == nil {
		t.Error("CreateSession with an empty id succeeded")
	}
	if _, err := s.CreateSession(ctx, record.Session{ID: "badmeta", Metadata: json.RawMessage(`{"open":`)}); err == nil {
		t.Error("CreateSession with invalid metadata JSON succeeded")
	}
	_, err = s.GetSession(ctx, "badmeta")
	wantErrIs(t, "GetSession after a refused create", err, record.ErrNotFound)
	_, err = s.GetSession(ctx, "nope")
	wantErrIs(t, "GetSession of an unknown id", err, record.ErrNotFound)
}

func testUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	created := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	orig := mustCreate(t, s, record.Session{ID: "u", Title: "old", Metadata: json.RawMessage(`{"a":1}`), CreatedAt: created, UpdatedAt: created})
	other := mustCreate(t, s, record.Session{ID: "other", Title: "keep"})

	steps := []struct {
		title string
		meta  json.RawMessage
	}{
		{"new title", json.RawMessage(`{"b":[true,null]}`)},
		{"", nil},
		{"again", json.RawMessage(`"just a string"`)},
	}
	prev := orig
	for i, st := range steps {
		in := prev
		in.Title, in.Metadata = st.title, st.meta
		// What the store computes is not the caller's to overwrite.
		in.CreatedAt, in.MessageCount, in.LastSeq = time.Now(), 99, 99
		if err := s.UpdateSession(ctx, in); err != nil {
			t.Fatalf("step %d: UpdateSession: %v", i, err)
		}
		got := mustGet(t, s, "u")
		if got.Title != st.title || string(got.Metadata) != string(st.meta) {
			t.Errorf("step %d: got title %q metadata %s, want %q %s", i, got.Title, got.Metadata, st.title, st.meta)
		}
		if !got.CreatedAt.Equal(created) {
			t.Errorf("step %d: CreatedAt changed to %v", i, got.CreatedAt)
		}
		if got.UpdatedAt.Before(prev.UpdatedAt) {
			t.Errorf("step %d: UpdatedAt went back from %v to %v", i, prev.UpdatedAt, got.UpdatedAt)
		}
		if got.MessageCount != 0 || got.LastSeq != 0 {
			t.Errorf("step %d: MessageCount %d LastSeq %d, want 0 0", i, got.MessageCount, got.LastSeq)
		}
		checkUTC(t, "UpdatedAt", got.UpdatedAt)
		prev = got
	}
	if !prev.UpdatedAt.After(created) {
		t.Errorf("UpdatedAt %v not moved past %v by UpdateSession", prev.UpdatedAt, created)
	}
	sameSession(t, "untouched session", mustGet(t, s, "other"), other)

	err := s.UpdateSession(ctx, record.Session{ID: "nope", Title: "x"})
	wantErrIs(t, "UpdateSession of an unknown id", err, record.ErrNotFound)
	if err := s.UpdateSession(ctx, record.Session{ID: "u", Metadata: json.RawMessage(`{`)}); err == nil {
		t.Error("UpdateSession with invalid metadata JSON succeeded")
	}
	if got := mustGet(t, s, "u"); got.Title != prev.Title || string(got.Metadata) != string(prev.Metadata) {
		t.Errorf("refused update changed the session: %+v", got)
	}
}

func testDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, id := range []string{"gone", "stays"} {
		mustCreate(t, s, record.Session{ID: id, Title: id})
		if err := s.AppendMessages(ctx, id, llm.UserText("hi "+id), llm.UserText("again")); err != nil {
			t.Fatal(err)
		}
		mustAppend(t, s, id, ev("a", `1`), ev("b", `2`), ev("c", `3`))
	}

	if err := s.DeleteSession(ctx, "gone"); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	_, err := s.GetSession(ctx, "gone")
	wantErrIs(t, "GetSession after delete", err, record.ErrNotFound)
	_, err = s.LoadMessages(ctx, "gone")
	wantErrIs(t, "LoadMessages after delete", err, record.ErrNotFound)
	_, err = s.ReadEvents(ctx, "gone", 0, 0)
	wantErrIs(t, "ReadEvents after delete", err, record.ErrNotFound)
	wantErrIs(t, "second DeleteSession", s.DeleteSession(ctx, "gone"), record.ErrNotFound)
	wantErrIs(t, "DeleteSession of an unknown id", s.DeleteSession(ctx, "never"), record.ErrNotFound)

	page, err := s.ListSessions(ctx, record.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != 1 || page.Sessions[0].ID != "stays" {
		t.Errorf("ListSessions after delete = %+v, want only %q", page.Sessions, "stays")
	}
	if got := mustGet(t, s, "stays"); got.MessageCount != 2 || got.LastSeq != 3 {
		t.Errorf("other session: MessageCount %d LastSeq %d, want 2 3", got.MessageCount, got.LastSeq)
	}
	if got := mustRead(t, s, "stays", 0, 0); !slices.Equal(seqs(got), []int64{1, 2, 3}) {
		t.Errorf("other session's events: seqs %v", seqs(got))
	}

	// A recreated id is a new session: nothing of the old one leaks in.
	re := mustCreate(t, s, record.Session{ID: "gone"})
	if re.Title != "" || re.MessageCount != 0 || re.LastSeq != 0 {
		t.Errorf("recreated session = %+v", re)
	}
	if msgs, err := s.LoadMessages(ctx, "gone"); err != nil || len(msgs) != 0 {
		t.Errorf("recreated session's messages = %v, %v; want none", msgs, err)
	}
	if got := mustRead(t, s, "gone", 0, 0); len(got) != 0 {
		t.Errorf("recreated session's events: seqs %v; want none", seqs(got))
	}
	if got := mustAppend(t, s, "gone", ev("x", `{}`)); got[0].Seq != 1 {
		t.Errorf("recreated session's first seq = %d, want 1", got[0].Seq)
	}
}

// createAt creates sessions with the given ids and created_at offsets (in
// seconds from a fixed base) and returns the order ListSessions must give.
func createAt(t *testing.T, s store.Store, ids []string, offsets []int) []string {
	t.Helper()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type rec struct {
		id string
		at time.Time
	}
	var recs []rec
	for i, id := range ids {
		at := base.Add(time.Duration(offsets[i]) * time.Second)
		mustCreate(t, s, record.Session{ID: id, CreatedAt: at})
		recs = append(recs, rec{id, at})
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

func ids(ss []record.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

// listAll pages through every session with the given page size.
func listAll(t *testing.T, s store.Store, limit int) (all []record.Session, pages int) {
	t.Helper()
	cursor := ""
	for {
		page, err := s.ListSessions(t.Context(), record.ListOptions{Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListSessions(limit %d, page %d): %v", limit, pages, err)
		}
		pages++
		if len(page.Sessions) > limit {
			t.Fatalf("page of %d sessions for limit %d", len(page.Sessions), limit)
		}
		if page.NextCursor != "" && len(page.Sessions) != limit {
			t.Errorf("page %d: short page (%d of %d) with a next cursor", pages, len(page.Sessions), limit)
		}
		all = append(all, page.Sessions...)
		if page.NextCursor == "" {
			return all, pages
		}
		if pages > 1000 {
			t.Fatal("ListSessions never ends")
		}
		cursor = page.NextCursor
	}
}

func testListOrder(t *testing.T, s store.Store) {
	ctx := t.Context()
	page, err := s.ListSessions(ctx, record.ListOptions{})
	if err != nil {
		t.Fatalf("ListSessions on an empty store: %v", err)
	}
	if len(page.Sessions) != 0 || page.NextCursor != "" {
		t.Errorf("empty store lists %+v", page)
	}

	// Ties on created_at are ordered by id, newest (greatest) first, so
	// that paging is stable.
	want := createAt(t, s,
		[]string{"m", "b", "z", "a", "c", "y", "tie-b", "tie-a", "tie-c"},
		[]int{5, 1, 3, 9, 2, 7, 4, 4, 4})
	page, err = s.ListSessions(ctx, record.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(page.Sessions); !slices.Equal(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
	if page.NextCursor != "" {
		t.Errorf("single page has next cursor %q", page.NextCursor)
	}

	// Counts are reported in listings too.
	if err := s.AppendMessages(ctx, "m", llm.UserText("1"), llm.UserText("2")); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "m", ev("e", ""), ev("e", ""), ev("e", ""))
	page, err = s.ListSessions(ctx, record.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range page.Sessions {
		want := mustGet(t, s, got.ID)
		sameSession(t, "listed session "+got.ID, got, want)
		if got.ID == "m" && (got.MessageCount != 2 || got.LastSeq != 3) {
			t.Errorf("listed %q: MessageCount %d LastSeq %d, want 2 3", got.ID, got.MessageCount, got.LastSeq)
		}
	}
}

func testListPaging(t *testing.T, s store.Store) {
	const n = 23
	var idList []string
	var offsets []int
	for i := range n {
		idList = append(idList, fmt.Sprintf("s%02d", i))
		offsets = append(offsets, (i*7)%11) // many ties
	}
	want := createAt(t, s, idList, offsets)

	for _, limit := range []int{1, 2, 3, 5, 7, 11, 22, 23, 24, 100} {
		t.Run(fmt.Sprint("limit=", limit), func(t *testing.T) {
			all, pages := listAll(t, s, limit)
			if got := ids(all); !slices.Equal(got, want) {
				t.Errorf("paged order = %v, want %v", got, want)
			}
			if wantPages := (n + limit - 1) / limit; pages != wantPages {
				t.Errorf("%d pages, want %d", pages, wantPages)
			}
		})
	}
}

func testListLimits(t *testing.T, s store.Store) {
	ctx := t.Context()
	const n = 501
	base := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		mustCreate(t, s, record.Session{ID: fmt.Sprintf("s%03d", i), CreatedAt: base.Add(time.Duration(i) * time.Millisecond)})
	}
	tests := []struct {
		limit, want int
	}{
		{0, 50},
		{-3, 50},
		{500, 500},
		{501, 500},
		{10000, 500},
	}
	for _, tc := range tests {
		page, err := s.ListSessions(ctx, record.ListOptions{Limit: tc.limit})
		if err != nil {
			t.Fatalf("ListSessions(limit %d): %v", tc.limit, err)
		}
		if len(page.Sessions) != tc.want {
			t.Errorf("limit %d: %d sessions, want %d", tc.limit, len(page.Sessions), tc.want)
		}
		if page.NextCursor == "" {
			t.Errorf("limit %d: no next cursor with %d sessions stored", tc.limit, n)
		}
		if page.Sessions[0].ID != "s500" {
			t.Errorf("limit %d: first is %q, want newest s500", tc.limit, page.Sessions[0].ID)
		}
	}
}

func testListCursorStable(t *testing.T, s store.Store) {
	ctx := t.Context()
	want := createAt(t, s, []string{"a", "b", "c", "d", "e", "f"}, []int{1, 2, 3, 4, 5, 6})
	first, err := s.ListSessions(ctx, record.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	// New sessions (newer than everything) and a deleted one must not shift
	// the pages after a cursor.
	createAt(t, s, []string{"new1", "new2"}, []int{100, 101})
	// Deleting the session a cursor points after must not break it.
	for _, id := range []string{"e", "b"} {
		if err := s.DeleteSession(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	want = slices.DeleteFunc(want, func(id string) bool { return id == "b" })
	got := ids(first.Sessions)
	cursor := first.NextCursor
	for cursor != "" {
		page, err := s.ListSessions(ctx, record.ListOptions{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ids(page.Sessions)...)
		cursor = page.NextCursor
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages across changes = %v, want %v", got, want)
	}
}

func testListInvalidCursor(t *testing.T, s store.Store) {
	createAt(t, s, []string{"a", "b", "c"}, []int{1, 2, 3})
	valid, err := s.ListSessions(t.Context(), record.ListOptions{Limit: 1})
	if err != nil || valid.NextCursor == "" {
		t.Fatalf("ListSessions: %+v, %v", valid, err)
	}
	for _, c := range []string{
		"x", "!!!", "====", " ", "null", "{}", "%",
		valid.NextCursor + "x", valid.NextCursor[:len(valid.NextCursor)-1], "x" + valid.NextCursor,
		strings.Repeat("A", 10000),
	} {
		page, err := s.ListSessions(t.Context(), record.ListOptions{Cursor: c})
		if err == nil {
			t.Errorf("cursor %.40q: got %d sessions and no error", c, len(page.Sessions))
		}
	}
}

// --- messages ------------------------------------------------------------

// allBlocks is a conversation using every block kind and field.
func allBlocks() []llm.Message {
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	return []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Block{
			llm.Text("Look at this <picture> & tell me \"why\" ✓\n\ttabs"),
			llm.Image("image/png", binary),
			{Type: llm.BlockImage, URL: "https://example.com/a.png?x=1&y=2", MediaType: "image/png"},
			{Type: llm.BlockText, Text: "cached", CacheHint: true},
		}},
		{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.Thinking("Let me think… step 1 < step 2", map[string]string{
				"anthropic.signature": "EqQBCkYIARgCIkB/sig==",
				"openai.reasoning":    "reasoning_content",
			}),
			{Type: llm.BlockThinking, Meta: map[string]string{"anthropic.redacted": "ZW5jcnlwdGVk"}},
			llm.Text("I'll run two tools."),
			// Keys out of order, HTML-ish characters, unicode, nesting:
			// stored compact JSON must come back byte for byte.
			llm.ToolUse("toolu_01", "Bash", json.RawMessage(`{"z":1,"command":"ls -la <dir> && echo \"done\"","a":{"nested":[1,2.5,"é",null,false]}}`)),
			llm.ToolUse("toolu_02", "Read", json.RawMessage(`{}`)),
		}},
		{Role: llm.RoleUser, Content: []llm.Block{
			llm.ToolResult("toolu_01", true, llm.Text("exit status 1"), llm.Image("image/jpeg", []byte{0xff, 0xd8, 0x00})),
			llm.ToolResult("toolu_02", false, llm.Text("file contents")),
			{Type: llm.BlockToolResult, ToolUseID: "toolu_03", Content: []llm.Block{
				{Type: llm.BlockText, Text: "deep", Meta: map[string]string{"k": "v"}},
			}},
		}},
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("")}},
	}
}

func testMessagesRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreate(t, s, record.Session{ID: "rt"})
	want := allBlocks()
	if err := s.AppendMessages(ctx, "rt", want...); err != nil {
		t.Fatalf("AppendMessages: %v", err)
	}
	got, err := s.LoadMessages(ctx, "rt")
	if err != nil {
		t.Fatalf("LoadMessages: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}
	// Byte-for-byte, not just cmp-equal: providers' prompt caches key on
	// the exact bytes sent back.
	if g, w := string(got[1].Content[3].Input), string(want[1].Content[3].Input); g != w {
		t.Errorf("tool input = %s, want %s", g, w)
	}

	// Whitespace in tool input may be compacted; the JSON value may not
	// change.
	mustCreate(t, s, record.Session{ID: "ws"})
	spaced := `{ "b" : [ 1, 2 ],
	  "a": "x y" }`
	if err := s.AppendMessages(ctx, "ws", llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
		llm.ToolUse("t", "n", json.RawMessage(spaced)),
	}}); err != nil {
		t.Fatal(err)
	}
	got, err = s.LoadMessages(ctx, "ws")
	if err != nil {
		t.Fatal(err)
	}
	if g := string(got[0].Content[0].Input); g != spaced && g != `{"b":[1,2],"a":"x y"}` {
		t.Errorf("spaced tool input came back as %s", g)
	}

	if got := mustGet(t, s, "rt"); got.MessageCount != len(want) {
		t.Errorf("MessageCount = %d, want %d", got.MessageCount, len(want))
	}
}

func testMessagesAppendReplace(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreate(t, s, record.Session{ID: "c"})
	mustCreate(t, s, record.Session{ID: "other"})
	if err := s.AppendMessages(ctx, "other", llm.UserText("other's")); err != nil {
		t.Fatal(err)
	}

	msg := func(i int) llm.Message {
		role := llm.RoleUser
		if i%2 == 1 {
			role = llm.RoleAssistant
		}
		return llm.Message{Role: role, Content: []llm.Block{llm.Text(fmt.Sprintf("message %d", i))}}
	}
	var want []llm.Message
	check := func(step string) {
		t.Helper()
		got, err := s.LoadMessages(ctx, "c")
		if err != nil {
			t.Fatalf("%s: LoadMessages: %v", step, err)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: conversation mismatch (-want +got):\n%s", step, diff)
		}
		if n := mustGet(t, s, "c").MessageCount; n != len(want) {
			t.Errorf("%s: MessageCount = %d, want %d", step, n, len(want))
		}
	}

	steps := []struct {
		name    string
		replace bool
		msgs    []llm.Message
	}{
		{"empty at first", false, nil},
		{"append one", false, []llm.Message{msg(0)}},
		{"append none", false, nil},
		{"append three", false, []llm.Message{msg(1), msg(2), msg(3)}},
		{"replace with two", true, []llm.Message{msg(10), msg(11)}},
		{"append after replace", false, []llm.Message{msg(12)}},
		{"replace with nothing", true, nil},
		{"append after clear", false, []llm.Message{msg(20), msg(21)}},
		{"replace with more", true, []llm.Message{msg(30), msg(31), msg(32), msg(33), msg(34)}},
	}
	for _, st := range steps {
		var err error
		if st.replace {
			err = s.ReplaceMessages(ctx, "c", st.msgs)
			want = slices.Clone(st.msgs)
		} else {
			err = s.AppendMessages(ctx, "c", st.msgs...)
			want = append(want, st.msgs...)
		}
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		check(st.name)
	}

	got, err := s.LoadMessages(ctx, "other")
	if err != nil || len(got) != 1 || got[0].Text() != "other's" {
		t.Errorf("other session's conversation = %v, %v", got, err)
	}
}

func testMessagesUnknown(t *testing.T, s store.Store) {
	ctx := t.Context()
	wantErrIs(t, "AppendMessages", s.AppendMessages(ctx, "nope", llm.UserText("x")), record.ErrNotFound)
	wantErrIs(t, "AppendMessages of nothing", s.AppendMessages(ctx, "nope"), record.ErrNotFound)
	wantErrIs(t, "ReplaceMessages", s.ReplaceMessages(ctx, "nope", []llm.Message{llm.UserText("x")}), record.ErrNotFound)
	wantErrIs(t, "ReplaceMessages with nothing", s.ReplaceMessages(ctx, "nope", nil), record.ErrNotFound)
	_, err := s.LoadMessages(ctx, "nope")
	wantErrIs(t, "LoadMessages", err, record.ErrNotFound)
}

func testMessagesConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreate(t, s, record.Session{ID: "c"})
	const workers, each = 8, 10
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if err := s.AppendMessages(ctx, "c", llm.UserText(fmt.Sprintf("%d/%d", w, i))); err != nil {
					t.Errorf("AppendMessages: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := s.LoadMessages(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != workers*each {
		t.Fatalf("%d messages, want %d", len(got), workers*each)
	}
	// Each writer's messages keep their relative order, and none is lost
	// or duplicated.
	next := make([]int, workers)
	for _, m := range got {
		var w, i int
		if _, err := fmt.Sscanf(m.Text(), "%d/%d", &w, &i); err != nil {
			t.Fatalf("unexpected message %q", m.Text())
		}
		if i != next[w] {
			t.Errorf("writer %d: message %d where %d was due", w, i, next[w])
		}
		next[w] = i + 1
	}
	if n := mustGet(t, s, "c").MessageCount; n != workers*each {
		t.Errorf("MessageCount = %d, want %d", n, workers*each)
	}
}

// --- events --------------------------------------------------------------

func testEventsSeq(t *testing.T, s store.Store) {
	mustCreate(t, s, record.Session{ID: "a"})
	mustCreate(t, s, record.Session{ID: "b"})
	steps := []struct {
		session string
		n       int
		first   int64
	}{
		{"a", 1, 1},
		{"a", 3, 2},
		{"b", 2, 1}, // per-session sequences are independent
		{"a", 0, 5},
		{"a", 16, 5},
		{"b", 1, 3},
		{"a", 1, 21},
	}
	for i, st := range steps {
		events := make([]event.Event, st.n)
		for j := range events {
			events[j] = ev(fmt.Sprintf("t%d", j), fmt.Sprintf(`{"step":%d,"j":%d}`, i, j))
		}
		got := mustAppend(t, s, st.session, events...)
		if want := seqRange(st.first, st.first+int64(st.n)-1); !slices.Equal(seqs(got), want) {
			t.Errorf("step %d: AppendEvents(%q, %d) seqs %v, want %v", i, st.session, st.n, seqs(got), want)
		}
	}
	for id, last := range map[string]int64{"a": 21, "b": 3} {
		if got := mustGet(t, s, id).LastSeq; got != last {
			t.Errorf("%q LastSeq = %d, want %d", id, got, last)
		}
		if got := seqs(mustRead(t, s, id, 0, 0)); !slices.Equal(got, seqRange(1, last)) {
			t.Errorf("%q stored seqs %v, want 1..%d", id, got, last)
		}
	}
}

func testEventsFields(t *testing.T, s store.Store) {
	mustCreate(t, s, record.Session{ID: "f"})
	before := time.Now().Add(-time.Second)
	at := time.Date(2025, 12, 31, 23, 59, 59, 123456789, time.FixedZone("EST", -5*3600))
	in := []event.Event{
		{Type: "text_delta", Data: json.RawMessage(`{"text":"<b>hi</b> & \"bye\"","i":1}`)},
		{Type: "empty_data"},
		{Type: "null_data", Data: json.RawMessage(`null`)},
		{Type: "spaced", Data: json.RawMessage(`{ "kept" : "as is" }`)},
		{Type: "timed", Data: json.RawMessage(`[]`), CreatedAt: at},
		// Ignored on input: the store assigns these.
		{Type: "preset", Data: json.RawMessage(`1`), Seq: 99, SessionID: "other"},
	}
	got := mustAppend(t, s, "f", in...)
	read := mustRead(t, s, "f", 0, 0)
	if len(read) != len(in) {
		t.Fatalf("read %d events, want %d", len(read), len(in))
	}
	for i := range in {
		for _, e := range []struct {
			src string
			e   event.Event
		}{{"returned", got[i]}, {"read", read[i]}} {
			if e.e.SessionID != "f" || e.e.Seq != int64(i+1) || e.e.Type != in[i].Type {
				t.Errorf("%s event %d = %+v", e.src, i, e.e)
			}
			if string(e.e.Data) != string(in[i].Data) || (in[i].Data == nil) != (e.e.Data == nil) {
				t.Errorf("%s event %d data = %q, want %q", e.src, i, e.e.Data, in[i].Data)
			}
			checkUTC(t, fmt.Sprintf("%s event %d CreatedAt", e.src, i), e.e.CreatedAt)
			if in[i].CreatedAt.IsZero() {
				if e.e.CreatedAt.Before(before) || e.e.CreatedAt.After(time.Now().Add(time.Second)) {
					t.Errorf("%s event %d CreatedAt %v is not about now", e.src, i, e.e.CreatedAt)
				}
			} else if !e.e.CreatedAt.Equal(in[i].CreatedAt) {
				t.Errorf("%s event %d CreatedAt %v, want %v", e.src, i, e.e.CreatedAt, in[i].CreatedAt)
			}
		}
		if !got[i].CreatedAt.Equal(read[i].CreatedAt) {
			t.Errorf("event %d: returned CreatedAt %v, read %v", i, got[i].CreatedAt, read[i].CreatedAt)
		}
	}
	// The returned data must not alias the caller's buffer.
	buf := []byte(`{"x":1}`)
	out := mustAppend(t, s, "f", event.Event{Type: "alias", Data: buf})
	copy(buf, `{"y":2}`)
	if string(out[0].Data) != `{"x":1}` {
		t.Errorf("returned event data changed with the caller's buffer: %s", out[0].Data)
	}
}

func testEventsRead(t *testing.T, s store.Store) {
	mustCreate(t, s, record.Session{ID: "r"})
	mustCreate(t, s, record.Session{ID: "empty"})
	const n = 10
	for i := range n {
		mustAppend(t, s, "r", ev("e", fmt.Sprint(i+1)))
	}
	tests := []struct {
		after int64
		limit int
		want  []int64
	}{
		{0, 0, seqRange(1, 10)},
		{0, -1, seqRange(1, 10)},
		{0, 1, []int64{1}},
		{0, 10, seqRange(1, 10)},
		{0, 11, seqRange(1, 10)},
		{0, 1000, seqRange(1, 10)},
		{-5, 3, []int64{1, 2, 3}},
		{1, 0, seqRange(2, 10)},
		{4, 3, []int64{5, 6, 7}},
		{7, 3, []int64{8, 9, 10}},
		{7, 4, []int64{8, 9, 10}},
		{9, 0, []int64{10}},
		{9, 5, []int64{10}},
		{10, 0, nil},
		{10, 1, nil},
		{11, 0, nil},
		{1 << 62, 10, nil},
	}
	for _, tc := range tests {
		got := mustRead(t, s, "r", tc.after, tc.limit)
		if !slices.Equal(seqs(got), tc.want) {
			t.Errorf("ReadEvents(after=%d, limit=%d) seqs %v, want %v", tc.after, tc.limit, seqs(got), tc.want)
		}
		for _, e := range got {
			if string(e.Data) != fmt.Sprint(e.Seq) {
				t.Errorf("event %d has data %s", e.Seq, e.Data)
			}
		}
	}
	if got := mustRead(t, s, "empty", 0, 0); len(got) != 0 {
		t.Errorf("session without events read %v", seqs(got))
	}

	// Paging by the last seq seen reads everything exactly once.
	var all []int64
	for after := int64(0); ; {
		page := mustRead(t, s, "r", after, 3)
		if len(page) == 0 {
			break
		}
		all = append(all, seqs(page)...)
		after = page[len(page)-1].Seq
	}
	if !slices.Equal(all, seqRange(1, n)) {
		t.Errorf("paged read %v", all)
	}
}

func testEventsUnknown(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.AppendEvents(ctx, "nope", ev("x", `1`))
	wantErrIs(t, "AppendEvents", err, record.ErrNotFound)
	_, err = s.AppendEvents(ctx, "nope")
	wantErrIs(t, "AppendEvents of nothing", err, record.ErrNotFound)
	_, err = s.ReadEvents(ctx, "nope", 0, 0)
	wantErrIs(t, "ReadEvents", err, record.ErrNotFound)
	_, err = s.ReadEvents(ctx, "nope", 5, 10)
	wantErrIs(t, "ReadEvents after 5", err, record.ErrNotFound)
}

func testEventsAtomic(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreate(t, s, record.Session{ID: "x"})
	mustAppend(t, s, "x", ev("ok", `1`))
	_, err := s.AppendEvents(ctx, "x", ev("ok", `2`), ev("bad", `{"unterminated":`), ev("ok", `3`))
	if err == nil {
		t.Fatal("AppendEvents with invalid JSON data succeeded")
	}
	if got := mustGet(t, s, "x").LastSeq; got != 1 {
		t.Errorf("LastSeq after a failed batch = %d, want 1", got)
	}
	if got := mustRead(t, s, "x", 0, 0); !slices.Equal(seqs(got), []int64{1}) {
		t.Errorf("events after a failed batch: %v", seqs(got))
	}
	if got := mustAppend(t, s, "x", ev("ok", `2`)); got[0].Seq != 2 {
		t.Errorf("seq after a failed batch = %d, want 2", got[0].Seq)
	}
}

// testEventsConcurrentOne appends from many goroutines to one session while
// readers tail it: seqs must be unique and gap-free, every batch
// contiguous, and a reader must never see a seq before all lower ones.
func testEventsConcurrentOne(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreate(t, s, record.Session{ID: "hot"})
	const workers, calls = 16, 20

	var (
		mu       sync.Mutex
		returned []int64
		done     = make(chan struct{})
		readers  sync.WaitGroup
	)
	for range 2 {
		readers.Go(func() {
			var seen int64
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := s.ReadEvents(ctx, "hot", seen, 0)
				if err != nil {
					t.Errorf("ReadEvents: %v", err)
					return
				}
				for _, e := range got {
					if e.Seq != seen+1 {
						t.Errorf("reader saw seq %d after %d", e.Seq, seen)
						return
					}
					seen = e.Seq
				}
			}
		})
	}

	var writers sync.WaitGroup
	for w := range workers {
		writers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for c := range calls {
				batch := make([]event.Event, 1+rng.IntN(3))
				for i := range batch {
					batch[i] = ev("w", fmt.Sprintf(`{"w":%d,"c":%d,"i":%d}`, w, c, i))
				}
				got, err := s.AppendEvents(ctx, "hot", batch...)
				if err != nil {
					t.Errorf("AppendEvents: %v", err)
					return
				}
				for i := 1; i < len(got); i++ {
					if got[i].Seq != got[i-1].Seq+1 {
						t.Errorf("batch not contiguous: %v", seqs(got))
					}
				}
				mu.Lock()
				returned = append(returned, seqs(got)...)
				mu.Unlock()
			}
		})
	}
	writers.Wait()
	close(done)
	readers.Wait()

	slices.Sort(returned)
	total := int64(len(returned))
	if !slices.Equal(returned, seqRange(1, total)) {
		t.Errorf("returned seqs are not 1..%d without gaps or duplicates", total)
	}
	stored := mustRead(t, s, "hot", 0, 0)
	if !slices.Equal(seqs(stored), seqRange(1, total)) {
		t.Errorf("stored seqs are not 1..%d without gaps or duplicates", total)
	}
	if got := mustGet(t, s, "hot").LastSeq; got != total {
		t.Errorf("LastSeq = %d, want %d", got, total)
	}
	// Each event is stored under the seq it was returned with, so each
	// writer's events keep their call order.
	last := map[int]int{}
	for _, e := range stored {
		var d struct{ W, C, I int }
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("event %d data %s: %v", e.Seq, e.Data, err)
		}
		key := d.W
		pos := d.C*10 + d.I
		if prev, ok := last[key]; ok && pos <= prev {
			t.Errorf("writer %d's events out of order at seq %d", d.W, e.Seq)
		}
		last[key] = pos
	}
}

func testEventsConcurrentMany(t *testing.T, s store.Store) {
	ctx := t.Context()
	const sessions, workersPer, calls = 8, 4, 10
	for i := range sessions {
		mustCreate(t, s, record.Session{ID: fmt.Sprint("s", i)})
	}
	var wg sync.WaitGroup
	for i := range sessions {
		for range workersPer {
			wg.Go(func() {
				for range calls {
					if _, err := s.AppendEvents(ctx, fmt.Sprint("s", i), ev("e", `{}`), ev("e", `{}`)); err != nil {
						t.Errorf("AppendEvents: %v", err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	const want = workersPer * calls * 2
	for i := range sessions {
		id := fmt.Sprint("s", i)
		if got := seqs(mustRead(t, s, id, 0, 0)); !slices.Equal(got, seqRange(1, want)) {
			t.Errorf("%s: %d events, seqs not 1..%d", id, len(got), want)
		}
		if got := mustGet(t, s, id).LastSeq; got != want {
			t.Errorf("%s: LastSeq = %d, want %d", id, got, want)
		}
	}
}

func testCanceled(t *testing.T, s store.Store) {
	mustCreate(t, s, record.Session{ID: "c"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.AppendEvents(ctx, "c", ev("x", `1`)); err == nil {
		t.Error("AppendEvents with a canceled context succeeded")
	}
	if err := s.AppendMessages(ctx, "c", llm.UserText("x")); err == nil {
		t.Error("AppendMessages with a canceled context succeeded")
	}
	if _, err := s.CreateSession(ctx, record.Session{ID: "d"}); err == nil {
		t.Error("CreateSession with a canceled context succeeded")
	}
	got := mustGet(t, s, "c")
	if got.LastSeq != 0 || got.MessageCount != 0 {
		t.Errorf("canceled writes left LastSeq %d MessageCount %d", got.LastSeq, got.MessageCount)
	}
	if _, err := s.GetSession(t.Context(), "d"); !errors.Is(err, record.ErrNotFound) {
		t.Errorf("canceled CreateSession stored the session (%v)", err)
	}
}
