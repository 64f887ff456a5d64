package postgres

import (
	"context"
	"os"
	"testing"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/postgres/pgtest"
	"github.com/weft-run/weft/store/storetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	if benchSrv != nil {
		benchSrv.Stop()
	}
	os.Exit(code)
}

// openTest opens a store on a new, empty database of the shared server.
func openTest(t testing.TB) (*DB, string) {
	t.Helper()
	dsn := pgtest.Shared(t).NewDatabase(t)
	db, err := Open(context.Background(), dsn, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return db, dsn
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		db, _ := openTest(t)
		return db
	})
}

// TestConformanceNotify: the suite again with every append announced
// (Options.Notify), which adds a statement to each append's transaction.
func TestConformanceNotify(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		db, err := Open(context.Background(), pgtest.Shared(t).NewDatabase(t), Options{Notify: true})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db
	})
}
