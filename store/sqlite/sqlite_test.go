package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/storetest"
)

func openTest(t testing.TB, path string) *DB {
	t.Helper()
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	return db
}

// openForeign opens a second handle on a file another DB holds, without
// the one-writer lock: it stands for a foreign writer (the sqlite3 shell,
// a script), which the lock does not stop and the seq cache must notice.
func openForeign(t testing.TB, path string) *DB {
	t.Helper()
	db, err := open(context.Background(), path, Options{}, false)
	if err != nil {
		t.Fatalf("open(%q): %v", path, err)
	}
	return db
}

func TestConformanceFile(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		return openTest(t, filepath.Join(t.TempDir(), "weft.db"))
	})
}

func TestConformanceMemory(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		return openTest(t, ":memory:")
	})
}

// TestMemoryDatabasesArePrivate guards against a shared-cache or pooled
// ":memory:" setup, where two stores (or two connections of one) would see
// the same, or different, databases.
func TestMemoryDatabasesArePrivate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, b := openTest(t, ":memory:"), openTest(t, ":memory:")
	defer a.Close()
	defer b.Close()
	if _, err := a.CreateSession(ctx, record.Session{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetSession(ctx, "x"); !errors.Is(err, record.ErrNotFound) {
		t.Errorf("second in-memory store sees the first's session (err %v)", err)
	}
	// Concurrent readers must all see the one database.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := a.GetSession(ctx, "x"); err != nil {
				t.Errorf("GetSession from a concurrent reader: %v", err)
			}
		})
	}
	wg.Wait()
}

func TestReopenKeepsEverything(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "weft.db")

	db := openTest(t, path)
	created, err := db.CreateSession(ctx, record.Session{ID: "s", Title: "durable", Metadata: json.RawMessage(`{"model":"m"}`)})
	if err != nil {
		t.Fatal(err)
	}
	conv := []llm.Message{
		llm.UserText("hello"),
		{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.Thinking("hm", map[string]string{"anthropic.signature": "sig"}),
			llm.ToolUse("t1", "Read", json.RawMessage(`{"path":"a.go"}`)),
		}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("t1", false, llm.Text("package a"))}},
	}
	if err := db.AppendMessages(ctx, "s", conv...); err != nil {
		t.Fatal(err)
	}
	first, err := db.AppendEvents(ctx, "s", event.Event{Type: "a", Data: json.RawMessage(`1`)}, event.Event{Type: "b", Data: json.RawMessage(`2`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	db = openTest(t, path)
	defer db.Close()
	got, err := db.GetSession(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != created.Title || string(got.Metadata) != string(created.Metadata) ||
		!got.CreatedAt.Equal(created.CreatedAt) || got.MessageCount != 3 || got.LastSeq != 2 {
		t.Errorf("reopened session = %+v", got)
	}
	msgs, err := db.LoadMessages(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(msgs, conv, func(a, b llm.Message) bool {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		return string(ja) == string(jb)
	}) {
		t.Errorf("reopened conversation = %+v", msgs)
	}
	events, err := db.ReadEvents(ctx, "s", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[1].Seq != 2 || !events[1].CreatedAt.Equal(first[1].CreatedAt) || string(events[1].Data) != "2" {
		t.Errorf("reopened events = %+v", events)
	}
	next, err := db.AppendEvents(ctx, "s", event.Event{Type: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if next[0].Seq != 3 {
		t.Errorf("first seq after reopen = %d, want 3", next[0].Seq)
	}
}

// TestCrashKeepsCommitted kills a process that has written without closing
// the database (its WAL never checkpointed): every acknowledged write must
// be there on the next open.
func TestCrashKeepsCommitted(t *testing.T) {
	if path := os.Getenv("WEFT_SQLITE_CRASH_CHILD"); path != "" {
		crashChild(path)
		return
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "weft.db")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestCrashKeepsCommitted$")
	cmd.Env = append(os.Environ(), "WEFT_SQLITE_CRASH_CHILD="+path)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Logf("no WAL left behind (%v): the crash was not abrupt", err)
	}
	db := openTest(t, path)
	defer db.Close()
	got, err := db.GetSession(t.Context(), "crash")
	if err != nil {
		t.Fatal(err)
	}
	if got.LastSeq != 100 || got.MessageCount != 1 {
		t.Errorf("after crash: LastSeq %d MessageCount %d, want 100 1", got.LastSeq, got.MessageCount)
	}
	events, err := db.ReadEvents(t.Context(), "crash", 0, 0)
	if err != nil || len(events) != 100 {
		t.Errorf("after crash: %d events, %v", len(events), err)
	}
}

func crashChild(path string) {
	ctx := context.Background()
	db, err := Open(ctx, path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if _, err := db.CreateSession(ctx, record.Session{ID: "crash"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := db.AppendMessages(ctx, "crash", llm.UserText("before the crash")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for i := range 100 {
		if _, err := db.AppendEvents(ctx, "crash", event.Event{Type: "e", Data: json.RawMessage(fmt.Sprint(i))}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(3) // no Close: deferred functions and finalizers do not run
}

func TestOpenCreatesPrivateFileInWALMode(t *testing.T) {
	t.Parallel()
	// Characters that end or escape a URI path must reach the file name.
	path := filepath.Join(t.TempDir(), "new dir", "a?b#c%20d", "weft.db")
	db := openTest(t, path)
	defer db.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("database not at %s: %v", path, err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("database mode %v, want 0600", fi.Mode().Perm())
	}
	var mode string
	if err := db.r.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v", mode, err)
	}
	for _, c := range []struct {
		db     *sql.DB
		pragma string
		want   int
	}{
		{db.w, "foreign_keys", 1},
		{db.w, "synchronous", 1}, // NORMAL
		{db.w, "busy_timeout", 5000},
		{db.r, "busy_timeout", 5000},
		{db.r, "query_only", 1},
	} {
		var v int
		if err := c.db.QueryRowContext(t.Context(), "PRAGMA "+c.pragma).Scan(&v); err != nil || v != c.want {
			t.Errorf("PRAGMA %s = %d, %v; want %d", c.pragma, v, err, c.want)
		}
	}
}

func TestOpenOptions(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "x.db"), Options{BusyTimeout: 1500 * time.Millisecond, SyncFull: true, MaxReadConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct {
		pragma string
		want   int
	}{{"busy_timeout", 1500}, {"synchronous", 2},
		{"cache_size", -2000}, {"wal_autocheckpoint", 0}, {"journal_size_limit", walSizeLimit}} {
		var v int
		if err := db.w.QueryRowContext(t.Context(), "PRAGMA "+c.pragma).Scan(&v); err != nil || v != c.want {
			t.Errorf("PRAGMA %s = %d, %v; want %d", c.pragma, v, err, c.want)
		}
	}
	if got := db.r.Stats().MaxOpenConnections; got != 2 {
		t.Errorf("read pool size %d, want 2", got)
	}
	if _, err := Open(t.Context(), "", Options{}); err == nil {
		t.Error("Open(\"\") succeeded")
	}
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), filepath.Join(notDir, "x.db"), Options{}); err == nil || !strings.Contains(err.Error(), notDir) {
		t.Errorf("Open under a regular file: %v, want an error naming the path", err)
	}
}

// TestTimeRange: times UnixNano cannot hold are refused, not stored as
// garbage.
func TestTimeRange(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := openTest(t, ":memory:")
	defer db.Close()
	for _, tm := range []time.Time{
		time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		if _, err := db.CreateSession(ctx, record.Session{ID: "s", CreatedAt: tm}); err == nil || !strings.Contains(err.Error(), "storable range") {
			t.Errorf("CreateSession at %v: %v", tm, err)
		}
	}
	for _, tm := range []time.Time{
		time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		s, err := db.CreateSession(ctx, record.Session{ID: tm.String(), CreatedAt: tm})
		if err != nil || !s.CreatedAt.Equal(tm) {
			t.Errorf("CreateSession at %v: %v, %v", tm, s.CreatedAt, err)
		}
	}
	if _, err := db.CreateSession(ctx, record.Session{ID: "e"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendEvents(ctx, "e", event.Event{Type: "x", CreatedAt: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}); err == nil {
		t.Error("AppendEvents with a year-9999 time succeeded")
	}
}

func TestFutureSchemaRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "weft.db")
	db := openTest(t, path)
	future := SchemaVersion() + 1
	if _, err := db.w.Exec("INSERT INTO schema_version (version, applied_at) VALUES (?, 0)", future); err != nil {
		t.Fatal(err)
	}
	db.Close()

	_, err := Open(t.Context(), path, Options{})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of a future schema: %v, want ErrSchemaTooNew", err)
	}
	for _, want := range []string{path, fmt.Sprint("version ", future), fmt.Sprint("up to ", SchemaVersion()), "upgrade weft"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestSchemaVersionRecorded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "weft.db")
	for range 2 { // the second open must apply nothing
		db := openTest(t, path)
		rows, err := db.r.Query("SELECT version FROM schema_version ORDER BY version")
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		}
		rows.Close()
		want := make([]int, SchemaVersion())
		for i := range want {
			want[i] = i + 1
		}
		if !slices.Equal(got, want) {
			t.Errorf("schema_version rows %v, want %v", got, want)
		}
		db.Close()
	}
	if SchemaVersion() < 1 {
		t.Error("no migrations embedded")
	}
}

func TestLoadMigrations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		files   []string
		want    []int
		wantErr string
	}{
		{"ordered", []string{"0002_b.sql", "0001_a.sql", "0003_c.sql"}, []int{1, 2, 3}, ""},
		{"gap", []string{"0001_a.sql", "0003_c.sql"}, nil, "want version 2"},
		{"duplicate", []string{"0001_a.sql", "001_again.sql"}, nil, "want version 2"},
		{"no number", []string{"init.sql"}, nil, "NNNN_description"},
		{"zero", []string{"0000_a.sql"}, nil, "NNNN_description"},
		{"none", nil, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for _, f := range tc.files {
				fsys["migrations/"+f] = &fstest.MapFile{Data: []byte("SELECT 1;")}
			}
			ms, err := loadMigrations(fsys)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, m := range ms {
				got = append(got, m.version)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("versions %v, want %v", got, tc.want)
			}
		})
	}
}

// TestForeignWriterOnOneFile: a writer that is not a DB (the sqlite3 shell,
// a script) appending to the same file concurrently meets SQLite's lock,
// not database/sql's queue: both wait for each other (busy_timeout, BEGIN
// IMMEDIATE) instead of failing, and the DB's seq cache notices the other
// commits (data_version), so seqs stay 1..n. (Two DBs on one file are
// refused: TestOneWriterPerDatabase.)
func TestForeignWriterOnOneFile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "weft.db")
	a := openTest(t, path)
	defer a.Close()
	q := url.Values{}
	q.Set("_busy_timeout", "5000")
	q.Set("_txlock", "immediate")
	b, err := sql.Open("sqlite", fileURI(path)+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.CreateSession(ctx, record.Session{ID: "shared"}); err != nil {
		t.Fatal(err)
	}
	const workers, calls = 4, 25
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		all []int64
	)
	for range workers {
		wg.Go(func() {
			for range calls {
				got, err := a.AppendEvents(ctx, "shared", event.Event{Type: "e"})
				if err != nil {
					t.Errorf("AppendEvents: %v", err)
					return
				}
				mu.Lock()
				all = append(all, got[0].Seq)
				mu.Unlock()
			}
		})
		wg.Go(func() {
			for range calls {
				var seq int64
				err := func() error {
					tx, err := b.BeginTx(ctx, nil)
					if err != nil {
						return err
					}
					defer tx.Rollback()
					if err := tx.QueryRowContext(ctx, `INSERT INTO events (session_pk, seq, type, created_at)
						SELECT pk, COALESCE((SELECT MAX(seq) FROM events WHERE session_pk = sessions.pk), 0) + 1, 'e', 0
						FROM sessions WHERE id = 'shared' RETURNING seq`).Scan(&seq); err != nil {
						return err
					}
					return tx.Commit()
				}()
				if err != nil {
					t.Errorf("foreign insert: %v", err)
					return
				}
				mu.Lock()
				all = append(all, seq)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(all)
	for i, s := range all {
		if s != int64(i+1) {
			t.Fatalf("seqs from two writers are not 1..%d: %v", 2*workers*calls, all)
		}
	}
}

// TestOneWriterPerDatabase: a second Open of a database file, in this
// process or another, is refused with ErrLocked and a message naming the
// holder, instead of two writers handing out the same seqs; the lock goes
// with Close, and with the holder's process however it dies (kill -9).
// Before issue 12 both opens succeeded.
func TestOneWriterPerDatabase(t *testing.T) {
	if path := os.Getenv("WEFT_SQLITE_LOCK_CHILD"); path != "" {
		db, err := Open(context.Background(), path, Options{})
		if err != nil {
			fmt.Println("open failed:", err)
			os.Exit(1)
		}
		fmt.Println("open")
		_, _ = io.Copy(io.Discard, os.Stdin) // hold it until killed
		db.Close()
		os.Exit(0)
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "weft.db")
	a := openTest(t, path)
	_, err := Open(t.Context(), path, Options{})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "this process") || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Open in one process = %v, want ErrLocked naming this process and the file", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := openTest(t, path)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestOneWriterPerDatabase$")
	cmd.Env = append(os.Environ(), "WEFT_SQLITE_LOCK_CHILD="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "open" {
		_ = cmd.Process.Kill()
		t.Fatalf("child: %q, %v", line, err)
	}
	_, err = Open(t.Context(), path, Options{})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", cmd.Process.Pid)) {
		t.Fatalf("Open while another process holds the file = %v, want ErrLocked naming pid %d", err, cmd.Process.Pid)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	c := openTest(t, path) // the kernel dropped the dead holder's lock
	c.Close()
}

func TestInvalidCursorIsTyped(t *testing.T) {
	t.Parallel()
	db := openTest(t, ":memory:")
	defer db.Close()
	_, err := db.ListSessions(t.Context(), record.ListOptions{Cursor: "garbage"})
	if !errors.Is(err, ErrInvalidCursor) {
		t.Errorf("ListSessions(garbage cursor) = %v, want ErrInvalidCursor", err)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []cursor{
		{CreatedAt: 0, ID: "a"},
		{CreatedAt: -1, ID: "x.y.z"},
		{CreatedAt: 1 << 62, ID: "with space/é"},
		{CreatedAt: -1 << 63, ID: "\x00"},
		{CreatedAt: time.Now().UnixNano(), ID: "01JB8Z5S3Q4X6W7Y8Z9A0B1C2D"},
	} {
		s := encodeCursor(c)
		got, err := decodeCursor(s)
		if err != nil || got != c {
			t.Errorf("decodeCursor(encodeCursor(%+v)) = %+v, %v", c, got, err)
		}
	}
}

// FuzzDecodeCursor: no input panics, and whatever decodes is exactly a
// cursor this package could have handed out (so a mangled cursor is an
// error, never a different position).
func FuzzDecodeCursor(f *testing.F) {
	f.Add("")
	f.Add("garbage")
	f.Add(encodeCursor(cursor{CreatedAt: 1700000000000000000, ID: "s1"}))
	f.Add(encodeCursor(cursor{CreatedAt: -5, ID: "a.b"}))
	f.Add(encodeCursor(cursor{CreatedAt: 5, ID: "a"}) + "\n")
	f.Add(base64.RawURLEncoding.EncodeToString(binary.BigEndian.AppendUint32([]byte("1.01.a"), crc32.ChecksumIEEE([]byte("1.01.a"))))) // a non-canonical number
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeCursor(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidCursor) {
				t.Fatalf("decodeCursor(%q) error %v does not wrap ErrInvalidCursor", s, err)
			}
			return
		}
		if s == "" || c.ID == "" {
			t.Fatalf("decodeCursor(%q) = %+v, want an error", s, c)
		}
		if enc := encodeCursor(c); enc != s {
			t.Fatalf("decodeCursor(%q) = %+v, which encodes as %q", s, c, enc)
		}
	})
}

// BenchmarkAppendEvents measures durable appends (WAL, synchronous=NORMAL
// unless noted) to a file database.
func BenchmarkAppendEvents(b *testing.B) {
	payload := json.RawMessage(`{"type":"text_delta","index":0,"text":"The quick brown fox jumps over the lazy dog; the lazy dog sleeps on.","turn":3,"run_id":"01JB8Z5S3Q4X6W7Y8Z9A0B1C2D"}`)
	for _, bc := range []struct {
		name     string
		batch    int
		parallel bool
		opt      Options
	}{
		{"batch=1", 1, false, Options{}},
		{"batch=16", 16, false, Options{}},
		{"batch=1/parallel=16", 1, true, Options{}},
		{"batch=1/sync=full", 1, false, Options{SyncFull: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			db, err := Open(ctx, filepath.Join(b.TempDir(), "bench.db"), bc.opt)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if _, err := db.CreateSession(ctx, record.Session{ID: "bench"}); err != nil {
				b.Fatal(err)
			}
			batch := make([]event.Event, bc.batch)
			for i := range batch {
				batch[i] = event.Event{Type: "text_delta", Data: payload}
			}
			b.ReportAllocs()
			b.ResetTimer()
			if bc.parallel {
				// 16 sessions streaming at once (8 per core), as a busy
				// server has them: what group commit is for.
				var sessions atomic.Int32
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					id := fmt.Sprint("bench-", sessions.Add(1))
					if _, err := db.CreateSession(ctx, record.Session{ID: id}); err != nil {
						b.Error(err)
						return
					}
					for pb.Next() {
						if _, err := db.AppendEvents(ctx, id, batch...); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				for b.Loop() {
					if _, err := db.AppendEvents(ctx, "bench", batch...); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N*bc.batch)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
