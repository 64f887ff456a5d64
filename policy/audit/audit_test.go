package audit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weft-run/weft/policy/audit"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store/sqlite"
)

func entry(session string, i int) audit.Entry {
	return audit.Entry{
		SessionID: session, TurnNumber: i, ToolName: "Bash", Operation: "execute",
		Resource: fmt.Sprintf("echo <%d> && true", i), Outcome: record.AuditAllowed,
		Reason: "allow rule Bash(echo:*)", Extra: map[string]string{"i": fmt.Sprint(i)},
	}
}

// readLines parses every line of a JSONL file, failing on any that is not
// one whole entry.
func readLines(t *testing.T, path string) []audit.Entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []audit.Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e audit.Entry
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("line %d %q: %v", len(out)+1, sc.Text(), err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestJSONL(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "deep", "er", "audit.jsonl")
	j, err := audit.NewJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	if j.Path() != path {
		t.Errorf("Path() = %q, want %q", j.Path(), path)
	}
	at := time.Date(2025, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 3600))
	before := time.Now().Add(-time.Second)
	first := entry("s", 1)
	first.Timestamp = at
	if err := j.Write(first); err != nil {
		t.Fatal(err)
	}
	if err := j.Write(audit.Entry{SessionID: "s", ToolName: "Write", Operation: "write", Outcome: record.AuditBlocked, Reason: "secret_detected:count=1"}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := j.Write(entry("s", 3)); !errors.Is(err, audit.ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}

	for _, p := range []struct {
		path string
		mode os.FileMode
	}{{path, 0o600}, {filepath.Dir(path), 0o700 | os.ModeDir}} {
		fi, err := os.Stat(p.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != p.mode {
			t.Errorf("%s has mode %v, want %v", p.path, fi.Mode(), p.mode)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "echo <1> && true") {
		t.Errorf("resource was escaped: %s", raw)
	}
	lines := readLines(t, path)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	want := first
	want.Timestamp = at.UTC()
	if diff := cmp.Diff(want, lines[0]); diff != "" {
		t.Errorf("first line (-want +got):\n%s", diff)
	}
	if lines[0].Timestamp.Location() != time.UTC {
		t.Errorf("timestamp not written in UTC: %v", lines[0].Timestamp)
	}
	if ts := lines[1].Timestamp; ts.Before(before) || ts.After(time.Now().Add(time.Second)) {
		t.Errorf("unset timestamp became %v, want about now", ts)
	}

	// Reopening appends.
	j, err = audit.NewJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Write(entry("s", 4)); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if lines := readLines(t, path); len(lines) != 3 || lines[2].TurnNumber != 4 {
		t.Errorf("after reopening: %d lines, last %+v", len(lines), lines[len(lines)-1])
	}
}

func TestJSONLOpenErrors(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", filepath.Join(file, "audit.jsonl"), t.TempDir()} {
		if j, err := audit.NewJSONL(p); err == nil {
			j.Close()
			t.Errorf("NewJSONL(%q) succeeded", p)
		} else if p != "" && !strings.Contains(err.Error(), p) {
			t.Errorf("NewJSONL(%q) error %q does not name the path", p, err)
		}
	}
}

// TestJSONLConcurrent: lines from concurrent writers (two sinks on one
// file, as two processes would have) never interleave or go missing.
func TestJSONLConcurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var sinks []*audit.JSONL
	for range 2 {
		j, err := audit.NewJSONL(path)
		if err != nil {
			t.Fatal(err)
		}
		sinks = append(sinks, j)
	}
	const writers, each = 8, 50
	// Long lines, so that a torn write would show.
	long := strings.Repeat("x", 8<<10)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				e := entry(fmt.Sprint("w", w), i)
				e.Reason = long
				if err := sinks[w%2].Write(e); err != nil {
					t.Errorf("Write: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, j := range sinks {
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
	lines := readLines(t, path)
	if len(lines) != writers*each {
		t.Fatalf("%d lines, want %d", len(lines), writers*each)
	}
	next := map[string]int{}
	for _, e := range lines {
		if e.TurnNumber != next[e.SessionID] || e.Reason != long {
			t.Fatalf("writer %s: entry %d where %d was due (or a torn line)", e.SessionID, e.TurnNumber, next[e.SessionID])
		}
		next[e.SessionID]++
	}
}

func TestDefaultPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ db, want string }{
		{"/var/lib/weft/weft.db", "/var/lib/weft/audit.jsonl"},
		{"weft.db", "audit.jsonl"},
		{"data/x.sqlite", filepath.Join("data", "audit.jsonl")},
		{":memory:", ""},
		{"", ""},
	} {
		if got := audit.DefaultPath(tc.db); got != tc.want {
			t.Errorf("DefaultPath(%q) = %q, want %q", tc.db, got, tc.want)
		}
	}
}

func TestComposite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := func(name string) *audit.JSONL {
		j, err := audit.NewJSONL(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	a, b, broken1, broken2 := open("a"), open("b"), open("broken1"), open("broken2")
	broken1.Close()
	broken2.Close()

	// Fans out, with one timestamp for every copy.
	c := audit.Composite{a, nil, b, audit.Noop{}}
	if err := c.Write(entry("s", 1)); err != nil {
		t.Fatalf("Write: %v", err)
	}
	// A failing sink does not keep the entry from the others, and every
	// failure is reported.
	c = audit.Composite{broken1, a, broken2, b}
	err := c.Write(entry("s", 2))
	if !errors.Is(err, audit.ErrClosed) {
		t.Errorf("Write through closed sinks = %v, want ErrClosed", err)
	}
	for _, p := range []string{broken1.Path(), broken2.Path()} {
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("joined error %v does not report %s", err, p)
		}
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for _, j := range []*audit.JSONL{a, b} {
		lines := readLines(t, j.Path())
		if len(lines) != 2 || lines[0].TurnNumber != 1 || lines[1].TurnNumber != 2 {
			t.Errorf("%s got %+v", j.Path(), lines)
		}
		if err := j.Write(entry("s", 3)); !errors.Is(err, audit.ErrClosed) {
			t.Errorf("%s still open after Composite.Close: %v", j.Path(), err)
		}
	}
	if la, lb := readLines(t, a.Path()), readLines(t, b.Path()); !la[0].Timestamp.Equal(lb[0].Timestamp) {
		t.Errorf("copies have different timestamps: %v, %v", la[0].Timestamp, lb[0].Timestamp)
	}
	if err := (audit.Composite{}).Write(entry("s", 1)); err != nil {
		t.Errorf("empty Composite: %v", err)
	}
	if err := (audit.Noop{}).Write(entry("s", 1)); err != nil {
		t.Errorf("Noop.Write: %v", err)
	}
}

func openDB(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "weft.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestStoreSink(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	s := audit.NewStoreSink(db)
	at := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	in := []audit.Entry{entry("s1", 1), entry("s2", 2), {SessionID: "s1", ToolName: "Edit", Operation: "edit", Outcome: record.AuditError, Reason: "hook failed", Timestamp: at}}
	before := time.Now().Add(-time.Second)
	for _, e := range in {
		if err := s.Write(e); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	got, err := db.ListAudit(t.Context(), record.AuditQuery{SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("session s1 has %d entries, want 2", len(got))
	}
	want := in[0]
	want.ID = got[0].ID
	want.Timestamp = got[0].Timestamp
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if ts := got[0].Timestamp; ts.Before(before) || ts.After(time.Now().Add(time.Second)) {
		t.Errorf("unset timestamp became %v", ts)
	}
	if !got[1].Timestamp.Equal(at) {
		t.Errorf("timestamp %v, want %v", got[1].Timestamp, at)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(entry("s1", 9)); !errors.Is(err, audit.ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	// The store stays usable: closing the sink is not closing the store.
	if _, err := db.ListAudit(t.Context(), record.AuditQuery{}); err != nil {
		t.Errorf("store after the sink closed: %v", err)
	}
}

// TestStoreSinkCloseWhileWriting: after Close returns, exactly the entries
// whose Write succeeded are stored.
func TestStoreSinkCloseWhileWriting(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	s := audit.NewStoreSink(db)
	var (
		wg sync.WaitGroup
		mu sync.Mutex
		ok []int
	)
	for w := range 6 {
		wg.Go(func() {
			for i := 0; ; i++ {
				n := w*10000 + i
				if err := s.Write(entry("s", n)); err != nil {
					if !errors.Is(err, audit.ErrClosed) {
						t.Errorf("Write: %v", err)
					}
					return
				}
				mu.Lock()
				ok = append(ok, n)
				mu.Unlock()
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var turns []int
	for q := (record.AuditQuery{Limit: 1000}); ; {
		page, err := db.ListAudit(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			turns = append(turns, e.TurnNumber)
		}
		q.AfterID = page[len(page)-1].ID
	}
	wg.Wait()
	slices.Sort(turns)
	slices.Sort(ok)
	if len(ok) == 0 {
		t.Fatal("no write succeeded before Close")
	}
	if !slices.Equal(turns, ok) {
		t.Errorf("stored %d entries, %d writes succeeded", len(turns), len(ok))
	}
}
