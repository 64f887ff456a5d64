package session_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
)

// TestHealth: the store's failure and the runtime's shutdown show in
// Health, whether the store can Ping (SQLite) or only be read (a store
// seen through the bare interface).
func TestHealth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		wrap func(*sqlite.DB) store.Store
	}{
		{"Ping", func(db *sqlite.DB) store.Store { return db }},
		{"a read", func(db *sqlite.DB) store.Store { return struct{ store.Store }{db} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			for _, breakIt := range []string{"close the store", "shut down"} {
				db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "h.db"), sqlite.Options{})
				if err != nil {
					t.Fatal(err)
				}
				rt, err := session.New(session.Config{Store: tc.wrap(db), Models: models{llmtest.NewScripted("scripted")}, DefaultModel: "scripted:m"})
				if err != nil {
					t.Fatal(err)
				}
				if err := rt.Health(ctx); err != nil {
					t.Fatalf("healthy: %v", err)
				}
				if breakIt == "close the store" {
					_ = db.Close()
					if err := rt.Health(ctx); err == nil || errors.Is(err, session.ErrClosed) {
						t.Fatalf("store closed: %v", err)
					}
					_ = rt.Shutdown(ctx)
					continue
				}
				_ = rt.Shutdown(ctx)
				if err := rt.Health(ctx); !errors.Is(err, session.ErrClosed) {
					t.Fatalf("shut down: %v", err)
				}
				_ = db.Close()
			}
		})
	}
}
