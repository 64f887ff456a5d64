package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/weft-run/weft/store"
)

// TestCheckpointOffTheCommitPath: the write connection never checkpoints
// (SQLite's automatic checkpoint stalled the commit that triggered it by
// 50-200 ms under load, and readers wait for commits), and the
// checkpointer keeps the WAL from growing without bound even when the
// writer never pauses: the writer starts the WAL over again and again.
// With one PASSIVE pass per tick it never did (the WAL grew to a GiB in a
// test).
func TestCheckpointOffTheCommitPath(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := openTest(t, filepath.Join(t.TempDir(), "weft.db"))
	defer db.Close()
	var auto int
	if err := db.w.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&auto); err != nil || auto != 0 {
		t.Fatalf("wal_autocheckpoint = %d, %v; want 0 (no checkpoint in the commit path)", auto, err)
	}
	// A faster checkpointer, for the test's sake.
	db.ckpt.stop()
	if err := db.startCheckpointer(fileURI(db.path), 5*time.Second, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		createSessions(t, db, fmt.Sprintf("s%d", i))
	}
	data := []byte(`{"text":"a delta of a few words "}`)
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; db.ckpt.restarts.Load() < 3; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("the WAL was never started over in 20s of writes (%d restarts)", db.ckpt.restarts.Load())
		}
		b := make([]store.EventBatch, 10)
		for k := range b {
			b[k] = store.EventBatch{SessionID: fmt.Sprintf("s%d", (i*10+k)%200), Events: []store.Event{{Type: "text_delta", Data: data}}}
		}
		if _, errs := db.AppendEventBatches(ctx, b); errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
}
