package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrSchemaTooNew is wrapped by Open's error for a database whose schema
// was written by a newer weft.
var ErrSchemaTooNew = errors.New("database schema is newer than this weft")

//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations are the embedded files NNNN_description.sql, contiguous from 1.
var migrations = mustLoadMigrations(migrationFS)

func mustLoadMigrations(fsys fs.FS) []migration {
	ms, err := loadMigrations(fsys)
	if err != nil {
		panic(err)
	}
	return ms
}

func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("postgres: migration %s: name must be NNNN_description.sql", name)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(body)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("postgres: migration %s: want version %d (versions must be contiguous from 1)", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this binary creates and understands.
func SchemaVersion() int { return len(migrations) }

// migrateLock is the advisory lock key migrations run under ("weftmigr").
// Advisory locks are per database, so nodes on other databases of the same
// server do not wait for each other.
const migrateLock int64 = 0x7765_6674_6d69_6772

// migrate applies the migrations the database lacks, each in its own
// transaction with its schema_version row, holding a session-level
// advisory lock from before the version table is created until the last
// one: nodes starting at once queue, and each migration runs once (without
// the lock, two CREATE TABLE IF NOT EXISTS can still collide in the
// catalog). If this connection dies, the server releases the lock.
func migrate(ctx context.Context, pool *pgxpool.Pool) (err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLock); err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	defer func() {
		// A fresh context: the caller's may be why we are leaving, and an
		// unreleased lock would hold every other node back until this
		// connection closed.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, uerr := conn.Exec(uctx, "SELECT pg_advisory_unlock($1)", migrateLock); uerr != nil {
			// Do not return a connection with the lock held to the pool.
			_ = conn.Conn().Close(uctx)
			err = errors.Join(err, fmt.Errorf("migration unlock: %w", uerr))
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    INTEGER PRIMARY KEY,
		applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	var v int
	if err := conn.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("schema version %d, this binary knows up to %d; upgrade weft or use another database: %w",
			v, len(migrations), ErrSchemaTooNew)
	}
	for _, m := range migrations[v:] {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			_ = tx.Rollback(ctx)
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_version (version, applied_at) VALUES ($1, $2)",
			m.version, time.Now().UnixNano()); err != nil {
			_ = tx.Rollback(ctx)
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	return nil
}
