//go:build !nopostgres

package run

import (
	"context"
	"testing"
	"time"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store/postgres"
	"github.com/weft-run/weft/store/postgres/pgtest"
)

// TestFollowStore: a run's events emitted on one node reach a reader of
// the run on another node live (before FollowStore, the reader had what
// the store held when it started and then waited for ever).
func TestFollowStore(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	srv, err := pgtest.Start(pgtest.Options{NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	dsn := srv.NewDatabase(t)
	ctx := t.Context()
	var nodes [2]*Service
	for i := range nodes {
		db, err := postgres.Open(ctx, dsn, postgres.Options{Notify: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if nodes[i], err = New(ctx, Config{Runs: db}); err != nil {
			t.Fatal(err)
		}
		if err := nodes[i].FollowStore(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := nodes[0].cfg.Runs.CreateRun(ctx, record.Run{ID: "r", Goal: "g", Status: "running"}); err != nil {
		t.Fatal(err)
	}
	rd := nodes[1].Subscribe("r", 0)
	defer rd.Close()
	for i := range 3 {
		if _, err := nodes[0].emit(ctx, "r", "step", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ev, err := rd.Next(rctx)
		cancel()
		if err != nil || ev.Seq != int64(i+1) || ev.Type != "step" {
			t.Fatalf("event %d on the other node: %+v %v", i, ev, err)
		}
	}
}
