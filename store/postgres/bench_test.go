package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/postgres/pgtest"
	"github.com/weft-run/weft/store/sqlite"
)

// The benchmarks' own server, with fsync on (the shared test server has it
// off): what an append costs is mostly the commit's flush.
var (
	benchOnce sync.Once
	benchSrv  *pgtest.Server
	benchErr  error
)

func benchServer(b *testing.B) *pgtest.Server {
	pgtest.Require(b)
	benchOnce.Do(func() { benchSrv, benchErr = pgtest.Start(pgtest.Options{}) })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchSrv
}

// BenchmarkAppendEvents compares durable appends on PostgreSQL and on
// SQLite, both at their defaults, with one writer and with 16 writers on
// 16 sessions (group commit). PostgreSQL's default flushes the WAL at every
// commit (synchronous_commit=on); SQLite's default (synchronous=NORMAL)
// does not, so "postgres-async" adds PostgreSQL with
// synchronous_commit=off, the nearer comparison; "postgres-notify" is the
// default with Options.Notify (every append announced to other nodes).
func BenchmarkAppendEvents(b *testing.B) {
	payload := json.RawMessage(`{"type":"text_delta","index":0,"text":"The quick brown fox jumps over the lazy dog; the lazy dog sleeps on.","turn":3,"run_id":"01JB8Z5S3Q4X6W7Y8Z9A0B1C2D"}`)
	stores := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"sqlite", func(b *testing.B) store.Store {
			db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return db
		}},
		{"postgres", func(b *testing.B) store.Store {
			db, err := Open(context.Background(), benchServer(b).NewDatabase(b), Options{})
			if err != nil {
				b.Fatal(err)
			}
			return db
		}},
		{"postgres-async", func(b *testing.B) store.Store {
			db, err := Open(context.Background(), benchServer(b).NewDatabase(b)+"&synchronous_commit=off", Options{})
			if err != nil {
				b.Fatal(err)
			}
			return db
		}},
		{"postgres-notify", func(b *testing.B) store.Store {
			db, err := Open(context.Background(), benchServer(b).NewDatabase(b), Options{Notify: true})
			if err != nil {
				b.Fatal(err)
			}
			return db
		}},
	}
	for _, st := range stores {
		for _, writers := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/writers=%d", st.name, writers), func(b *testing.B) {
				ctx := context.Background()
				db := st.open(b)
				defer db.Close()
				ev := event.Event{Type: "text_delta", Data: payload}
				var sessions atomic.Int32
				b.ReportAllocs()
				b.ResetTimer()
				if writers == 1 {
					sessions.Add(1)
					if _, err := db.CreateSession(ctx, record.Session{ID: "bench"}); err != nil {
						b.Fatal(err)
					}
					for b.Loop() {
						if _, err := db.AppendEvents(ctx, "bench", ev); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					// writers/GOMAXPROCS goroutines per core, each on its
					// own session, as a busy server's streams are.
					b.SetParallelism(max(1, writers/runtime.GOMAXPROCS(0)))
					b.RunParallel(func(pb *testing.PB) {
						id := fmt.Sprint("bench-", sessions.Add(1))
						if _, err := db.CreateSession(ctx, record.Session{ID: id}); err != nil {
							b.Error(err)
							return
						}
						for pb.Next() {
							if _, err := db.AppendEvents(ctx, id, ev); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64(sessions.Load()), "writers")
			})
		}
	}
}
