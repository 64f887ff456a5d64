package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"
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

// migrations are the embedded files named NNNN_description.sql, in version
// order. Versions must be 1, 2, 3, ...: a gap means a file was lost, and
// applying the rest would build a schema no release ever had.
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
			return nil, fmt.Errorf("sqlite: migration %s: name must be NNNN_description.sql", name)
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
			return nil, fmt.Errorf("sqlite: migration %s: want version %d (versions must be contiguous from 1)", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this binary creates and understands.
func SchemaVersion() int { return len(migrations) }

const createVersionTable = `CREATE TABLE IF NOT EXISTS schema_version (
	version    INTEGER PRIMARY KEY,
	applied_at INTEGER NOT NULL
) STRICT`

// migrate applies the migrations the database lacks, each in its own
// transaction together with its schema_version row, so that a failure
// leaves the database at the last complete version. The version is read
// inside each (IMMEDIATE) transaction, so two processes opening a fresh
// file at once cannot both apply the same migration.
func migrate(ctx context.Context, w *sql.DB) error {
	if _, err := w.ExecContext(ctx, createVersionTable); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	v, err := currentVersion(ctx, w)
	if err != nil {
		return err
	}
	if v > len(migrations) {
		return fmt.Errorf("schema version %d, this binary knows up to %d; upgrade weft or use another database file: %w",
			v, len(migrations), ErrSchemaTooNew)
	}
	for _, m := range migrations {
		if err := applyMigration(ctx, w, m); err != nil {
			return err
		}
	}
	return nil
}

type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func currentVersion(ctx context.Context, q queryRower) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

func applyMigration(ctx context.Context, w *sql.DB, m migration) error {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	v, err := currentVersion(ctx, tx)
	if err != nil {
		return err
	}
	if v >= m.version {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_version (version, applied_at) VALUES (?, ?)",
		m.version, time.Now().UnixNano()); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	return nil
}
