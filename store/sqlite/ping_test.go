package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

func TestPing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, path := range []string{filepath.Join(t.TempDir(), "p.db"), ":memory:"} {
		db, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Ping(ctx); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		// A write transaction holding the writer past the deadline makes
		// Ping fail rather than wait.
		tx, err := db.w.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		if err := db.Ping(short); err == nil {
			t.Fatalf("%s: Ping succeeded while the writer was held", path)
		}
		cancel()
		_ = tx.Rollback()
		if err := db.Ping(ctx); err != nil {
			t.Fatalf("%s: after the writer came free: %v", path, err)
		}
		_ = db.Close()
		if err := db.Ping(ctx); err == nil {
			t.Fatalf("%s: Ping after Close", path)
		}
	}
}
