package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/record"
)

// TestMigrateFromV1: a database written by a weft with only the first
// migration opens, keeps its sessions and gains the newer tables.
func TestMigrateFromV1(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	if err := prepareFile(path); err != nil {
		t.Fatal(err)
	}
	q := url.Values{}
	q.Set("_foreign_keys", "on")
	q.Set("_journal_mode", "WAL")
	old, err := sql.Open("sqlite", fileURI(path)+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{createVersionTable, migrations[0].sql,
		"INSERT INTO schema_version (version, applied_at) VALUES (1, 0)",
		"INSERT INTO sessions (id, created_at, updated_at, title) VALUES ('kept', 1, 1, 'from v1')",
	} {
		if _, err := old.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%.40s: %v", stmt, err)
		}
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	db := openTest(t, path)
	defer db.Close()
	s, err := db.GetSession(ctx, "kept")
	if err != nil || s.Title != "from v1" {
		t.Fatalf("session from v1 = %+v, %v", s, err)
	}
	if _, err := db.CreateRun(ctx, record.Run{ID: "r"}); err != nil {
		t.Fatalf("CreateRun after migrating: %v", err)
	}
	if err := db.AppendAudit(ctx, record.AuditEntry{SessionID: "kept", Outcome: record.AuditAllowed}); err != nil {
		t.Fatalf("AppendAudit after migrating: %v", err)
	}
	var v int
	if err := db.r.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_version").Scan(&v); err != nil || v != SchemaVersion() {
		t.Errorf("schema version %d, %v; want %d", v, err, SchemaVersion())
	}
}

func TestListRunsInvalidCursorIsTyped(t *testing.T) {
	t.Parallel()
	db := openTest(t, ":memory:")
	defer db.Close()
	_, err := db.ListRuns(t.Context(), record.RunQuery{Cursor: "garbage"})
	if !errors.Is(err, ErrInvalidCursor) {
		t.Errorf("ListRuns(garbage cursor) = %v, want ErrInvalidCursor", err)
	}
}

// TestRunDeleteCascadesInSQL checks the rows themselves: no step or event
// of a deleted run is left behind for a recycled pk to pick up.
func TestRunDeleteCascadesInSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t, ":memory:")
	defer db.Close()
	if _, err := db.CreateRun(ctx, record.Run{ID: "r"}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutStepResult(ctx, record.StepResult{RunID: "r", StepID: "a", Status: record.StepRunning}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RunEvents().AppendEvents(ctx, "r", event.Event{Type: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRun(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"runs", "run_steps", "run_events"} {
		var n int
		if err := db.r.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s has %d rows after DeleteRun (%v)", table, n, err)
		}
	}
}
