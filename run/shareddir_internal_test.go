package run

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// The shared directories a crash left behind go at start-up; nothing else
// under the root does, and an unset root (the system temp dir, maybe
// another server's) is never swept.
func TestRemoveStaleSharedDirs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	stale := filepath.Join(root, sharedDirPrefix+"run_1-123")
	other := filepath.Join(root, "keep-me")
	for _, d := range []string{stale, other} {
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	removeStaleSharedDirs("", slog.New(slog.DiscardHandler))
	if _, err := os.Stat(stale); err != nil {
		t.Fatal("an unset root must not be swept")
	}
	removeStaleSharedDirs(root, slog.New(slog.DiscardHandler))
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale dir still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("unrelated dir removed: %v", err)
	}
}
