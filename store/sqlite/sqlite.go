// Package sqlite is weft's embedded store: a store.Store on one SQLite file
// (modernc.org/sqlite, pure Go, no cgo): sessions, their conversations and
// event logs; runs with their step results and event logs; workflows,
// schedules, memories and the audit trail.
//
// # Concurrency
//
// SQLite allows one writer at a time. Every write goes through a pool of
// exactly one connection whose transactions begin IMMEDIATE, so writers in
// this process queue in database/sql instead of failing with SQLITE_BUSY,
// and a writer in another process is waited for (Options.BusyTimeout)
// rather than deadlocking on a lock upgrade. Concurrent event appends, to
// session and run logs alike, share transactions (group commit, see
// appender.go). Reads use a separate pool; in WAL mode they see the last
// committed state without blocking the writer or each other.
//
// # Durability
//
// The database runs in WAL mode with synchronous=NORMAL: a commit is
// written to the WAL but not fsynced (the WAL is synced at checkpoints). A
// crash of the process never loses a committed transaction: the write is
// in the OS page cache, and the next open replays the WAL. A power loss or
// kernel crash can lose the transactions committed since the last sync,
// but leaves a consistent database. Options.SyncFull (fsync per commit)
// closes that window at a large cost in append throughput.
//
// # Timestamps
//
// Times are stored as UTC unix nanoseconds, so they round-trip exactly
// (returned in UTC, without a monotonic reading) between the years 1678
// and 2262; times outside that range are rejected. A session's UpdatedAt
// moves whenever its header or conversation changes (not on event
// appends), and never backwards; so does a run's on UpdateRun and a
// workflow's on UpdateWorkflow. Optional times (a step's start and finish,
// a schedule's next and last run, its expiry) are NULL when zero and come
// back zero.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/weft-run/weft/store"
)

// Options tunes Open. The zero value is the recommended configuration.
type Options struct {
	// BusyTimeout is how long a statement waits for a lock held by another
	// process (another weft, the sqlite3 shell) before failing. Writers in
	// this process never wait on SQLite's lock: they queue for the single
	// write connection. Zero means 5s.
	BusyTimeout time.Duration

	// MaxReadConns bounds the read pool. Zero means max(4, GOMAXPROCS).
	// Ignored for ":memory:", where reads share the write connection.
	MaxReadConns int

	// SyncFull fsyncs the WAL on every commit (synchronous=FULL), so that a
	// power loss cannot drop acknowledged writes either. It costs most of
	// the append throughput on ordinary disks.
	SyncFull bool
}

// DB is a store.Store backed by one SQLite database. It is safe for
// concurrent use.
type DB struct {
	path string
	w    *sql.DB // exactly one connection: the write path
	r    *sql.DB // the read pool; == w for ":memory:"
	st   stmts

	appender *appender // nil until Open succeeds
	seqs     seqCache  // the event tables' last seqs, for appends

	// The two event tables, over statements in st.
	sessionEvents eventLog
	runEvents     eventLog

	bigCache atomic.Bool // the write cache has grown (fitCache)

	lock *lockFile // nil for ":memory:"

	ckpt *checkpointer // nil for ":memory:"

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*DB)(nil)

// Tuning of the write connection (see Open and fitCache).
const (
	// checkpointEvery is how often the checkpointer copies the WAL back
	// into the database (checkpoint.go).
	checkpointEvery = time.Second
	walSizeLimit    = 64 << 20
	// bigCacheSessions is the number of sessions (and runs) appended to
	// within one second from which the write cache grows from SQLite's
	// default 2 MiB to bigCacheKiB.
	bigCacheSessions = 256
	bigCacheKiB      = 8 << 10
)

// Open opens (creating it, and its parent directory, if needed) the
// database at path and brings its schema up to date. path ":memory:" opens
// a private in-memory database that lives until Close.
//
// A database written by a newer weft (a schema version this binary does
// not know) is refused with an error wrapping ErrSchemaTooNew rather than
// risk misreading it. A database file another DB has open, in this
// process or another, is refused with an error wrapping ErrLocked (one
// writer per database, see lockFile); Close releases it.
func Open(ctx context.Context, path string, opt Options) (*DB, error) {
	return open(ctx, path, opt, true)
}

// open is Open; lock false skips the one-writer lock, for tests whose
// second handle stands for a foreign writer (the sqlite3 shell).
func open(ctx context.Context, path string, opt Options, lock bool) (*DB, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path (use \":memory:\" for a temporary database)")
	}
	busy := opt.BusyTimeout
	if busy <= 0 {
		busy = 5 * time.Second
	}
	sync := "NORMAL"
	if opt.SyncFull {
		sync = "FULL"
	}
	memory := path == ":memory:"

	var (
		base string
		held *lockFile
	)
	if memory {
		base = ":memory:"
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", path, err)
		}
		if err := prepareFile(abs); err != nil {
			return nil, err
		}
		path = abs
		base = fileURI(abs)
		if lock {
			if held, err = acquireLock(abs); err != nil {
				return nil, err
			}
		}
	}

	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busy.Milliseconds()))
	q.Set("_foreign_keys", "on")
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", sync)
	q.Set("_txlock", "immediate")
	// No checkpoint on the commit path: a checkpoint copying thousands of
	// pages stalled the commit that triggered it by 50-200 ms, and with
	// events visible only once committed, every stream with it. The
	// checkpointer (checkpoint.go) does it on a connection of its own
	// instead. The WAL file is cut back to 64 MiB when it restarts. The
	// write connection's cache grows under load too (fitCache).
	if !memory {
		q.Add("_pragma", "wal_autocheckpoint(0)")
	}
	q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walSizeLimit))
	w, err := sql.Open("sqlite", base+"?"+q.Encode())
	if err != nil {
		_ = held.release()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// One connection makes database/sql the write queue. For ":memory:" it
	// is also the only copy of the database, so it must never be recycled.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	db := &DB{path: path, w: w, r: w, lock: held}
	fail := func(err error) (*DB, error) {
		db.Close()
		return nil, err
	}
	if err := w.PingContext(ctx); err != nil {
		return fail(fmt.Errorf("sqlite: open %s: %w", path, err))
	}
	if !memory {
		var mode string
		if err := w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			return fail(fmt.Errorf("sqlite: open %s: %w", path, err))
		}
		if !strings.EqualFold(mode, "wal") {
			return fail(fmt.Errorf("sqlite: open %s: journal_mode is %q, want wal (is the file on a network filesystem?)", path, mode))
		}
	}
	if err := migrate(ctx, w); err != nil {
		return fail(fmt.Errorf("sqlite: open %s: %w", path, err))
	}

	if !memory {
		rq := url.Values{}
		rq.Set("_busy_timeout", fmt.Sprint(busy.Milliseconds()))
		// A guard, not a permission: nothing on the read path should write.
		rq.Set("_query_only", "1")
		r, err := sql.Open("sqlite", base+"?"+rq.Encode())
		if err != nil {
			return fail(fmt.Errorf("sqlite: open %s: %w", path, err))
		}
		n := opt.MaxReadConns
		if n <= 0 {
			n = max(4, runtime.GOMAXPROCS(0))
		}
		r.SetMaxOpenConns(n)
		r.SetMaxIdleConns(n)
		db.r = r
	}
	if err := db.st.prepare(ctx, db.w, db.r); err != nil {
		return fail(fmt.Errorf("sqlite: open %s: %w", path, err))
	}
	db.sessionEvents = eventLog{db: db, kind: "session", lastSeq: db.st.lastSeq, insertEvent: db.st.insertEvent, readEvents: db.st.readEvents, updateTurns: db.st.updateTurns}
	db.runEvents = eventLog{db: db, kind: "run", lastSeq: db.st.runLastSeq, insertEvent: db.st.insertRunEvent, readEvents: db.st.readRunEvents}
	db.appender = startAppender(db)
	if !memory {
		if err := db.startCheckpointer(base, busy, checkpointEvery); err != nil {
			return fail(fmt.Errorf("sqlite: open %s: %w", path, err))
		}
	}
	return db, nil
}

// Close closes the database, after the appends in flight. Calls after
// Close fail; Close itself can be called again.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		if db.appender != nil {
			db.appender.stop()
		}
		if db.ckpt != nil {
			db.ckpt.stop()
		}
		errs := []error{db.st.close()}
		// Readers first, so that the writer is the last connection and
		// checkpoints the WAL back into the database file.
		if db.r != db.w && db.r != nil {
			errs = append(errs, db.r.Close())
		}
		errs = append(errs, db.w.Close())
		// Last: the next writer may open the file as soon as this returns.
		errs = append(errs, db.lock.release())
		db.closeErr = errors.Join(errs...)
	})
	return db.closeErr
}

// prepareFile creates the parent directory and an empty database file, both
// private to the user: the database holds whole conversations, and SQLite
// gives its WAL and shared-memory files the mode of the database file.
func prepareFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("sqlite: create directory for %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return f.Close()
}

// fileURI turns an absolute path into a SQLite URI, escaping what would
// otherwise end the path ('?', '#') or be decoded ('%').
func fileURI(abs string) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows drive letters: file:///C:/...
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// fitCache grows the write connection's page cache once bigCacheSessions
// sessions have been appended to within one second (sessions is that
// count). The working set of such a load is the last leaf page of every
// session streaming events plus the pages above them, more than SQLite's
// default 2 MiB holds at about 1,000 sessions, so each commit re-read most
// of them from the OS (bench/serveload: about a tenth less server CPU at
// 1,000 sessions x 10 deltas/s with 8 MiB). It counts sessions per second
// rather than per transaction because the event log commits as often as
// it can (natural group commit): under a steady load a transaction holds
// a few dozen sessions, while the working set is every session streaming.
// A server that never sees such a load keeps the default, so idle
// sessions do not pay for it. A failure leaves the default in place, to be
// tried again later.
func (db *DB) fitCache(ctx context.Context, sessions int) {
	if sessions < bigCacheSessions || db.bigCache.Load() {
		return
	}
	if _, err := db.w.ExecContext(ctx, fmt.Sprintf("PRAGMA cache_size = -%d", bigCacheKiB)); err == nil {
		db.bigCache.Store(true)
	}
}
