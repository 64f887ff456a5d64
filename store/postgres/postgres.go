// Package postgres is weft's store on PostgreSQL (jackc/pgx/v5): the
// store.Store of store/sqlite, for deployments where several `weft serve`
// nodes share one database.
//
// # Several nodes
//
// Nothing in this package assumes it is the only writer. Migrations run
// under an advisory lock, so nodes starting at once apply each migration
// once. A session's (or run's) seqs come from its row: an append advances
// last_seq in the statement that inserts the events, so the row lock
// serialises appenders on every node, seqs have no gaps or duplicates, and
// a reader never sees seq n+1 before n (the next appender cannot take the
// row before the previous one committed). Audit ids are assigned under a
// transaction-scoped advisory lock, so they follow commit order too.
//
// InterruptRuns and ListOpenTurns find the work a dead server left; on
// several nodes the runtime only acts on what no live node holds a lease
// on (run/claims.go, session/cluster.go; docs/deploy.md).
//
// # Group commit
//
// As on SQLite, concurrent appends share transactions (appender.go): a
// group is sent as one pipelined batch, one round trip and one commit.
//
// # Timestamps
//
// As in store/sqlite: UTC unix nanoseconds, exact round trips between the
// years 1678 and 2262, optional times NULL when zero.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weft-run/weft/store"
)

// Options tunes Open. The zero value is the recommended configuration.
type Options struct {
	// MaxConns bounds the connection pool. Zero means 16.
	MaxConns int32
	// AppendWorkers is how many append groups may commit at once. Zero
	// means 4.
	AppendWorkers int
	// WriteTimeout bounds one append group's commit: an append that has
	// started is not abandoned when its caller's context ends (an error
	// must mean nothing was stored), so this is what ends a hung one.
	// Zero means 30s.
	WriteTimeout time.Duration
	// Notify announces every append on the LISTEN/NOTIFY channel that
	// Notifications follows, in the append's transaction: what lets the
	// other nodes' readers follow a session without polling. It costs a
	// statement per append, and PostgreSQL serialises the commits of
	// transactions that notify.
	Notify bool
}

// DB is a store.Store on a PostgreSQL database. It is safe for concurrent
// use, by any number of DBs on any number of nodes.
type DB struct {
	pool *pgxpool.Pool
	dsn  string
	opt  Options

	appender      *appender
	sessionEvents eventLog
	runEvents     eventLog

	closeOnce sync.Once
	fence     atomic.Pointer[fence]
}

type fence struct{ prefix, holder string }

var _ store.SessionFence = (*DB)(nil)

// FenceSessions implements store.SessionFence: from now on a session's
// appends through db are refused (as for an unknown session) while a
// holder other than holder holds the live lease prefix+id. A node that
// lost a session's lease (paused past its TTL, cut off from the
// database) then cannot write after the node that took the session over
// has started: the append checks the lease in the statement that takes
// the session's row lock.
func (db *DB) FenceSessions(prefix, holder string) {
	db.fence.Store(&fence{prefix: prefix, holder: holder})
}

var (
	_ store.Store       = (*DB)(nil)
	_ store.BatchEvents = (*DB)(nil)
)

// Open connects to the database at dsn (a postgres:// URL or key=value
// connection string, as libpq takes) and brings its schema up to date.
// A database written by a newer weft is refused with an error wrapping
// ErrSchemaTooNew.
func Open(ctx context.Context, dsn string, opt Options) (*DB, error) {
	if opt.MaxConns <= 0 {
		opt.MaxConns = 16
	}
	if opt.AppendWorkers <= 0 {
		opt.AppendWorkers = 4
	}
	if opt.WriteTimeout <= 0 {
		opt.WriteTimeout = 30 * time.Second
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message quotes the DSN, password included.
		return nil, errors.New("postgres: invalid connection string")
	}
	cfg.MaxConns = opt.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	db := &DB{pool: pool, dsn: dsn, opt: opt}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	db.sessionEvents = eventLog{db: db, kind: "session", appendSQL: appendSessionEvents, readSQL: readSessionEvents, turns: true}
	db.runEvents = eventLog{db: db, kind: "run", appendSQL: appendRunEvents, readSQL: readRunEvents}
	db.appender = startAppender(db, opt.AppendWorkers)
	return db, nil
}

// Close waits for the appends in flight and closes the pool. Calls after
// Close fail; Close itself can be called again.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		if db.appender != nil {
			db.appender.stop()
		}
		db.pool.Close()
	})
	return nil
}

// Ping checks that the database answers a query within ctx.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	if err := db.pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

// Pool is the connection pool, for what builds on the same database
// (notifications, leases).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// batchResult runs b as one implicit transaction (one round trip) and
// closes it; read gets the results before the close.
func (db *DB) batch(ctx context.Context, b *pgx.Batch, read func(br pgx.BatchResults) error) error {
	br := db.pool.SendBatch(ctx, b)
	err := read(br)
	return errors.Join(err, br.Close())
}
