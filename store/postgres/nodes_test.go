package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/postgres/pgtest"
)

// openNodes opens n stores on one new database, each with its own pool:
// n weft nodes sharing PostgreSQL.
func openNodes(t *testing.T, n int) []*DB {
	t.Helper()
	dsn := pgtest.Shared(t).NewDatabase(t)
	nodes := make([]*DB, n)
	for i := range nodes {
		db, err := Open(t.Context(), dsn, Options{})
		if err != nil {
			t.Fatalf("Open node %d: %v", i, err)
		}
		t.Cleanup(func() { db.Close() })
		nodes[i] = db
	}
	return nodes
}

// TestMigrationsConcurrentStart: nodes starting at once on an empty
// database all open it, and each migration is applied exactly once.
func TestMigrationsConcurrentStart(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	const nodes = 8
	var (
		wg   sync.WaitGroup
		errs = make([]error, nodes)
		dbs  = make([]*DB, nodes)
	)
	start := make(chan struct{})
	for i := range nodes {
		wg.Go(func() {
			<-start
			dbs[i], errs[i] = Open(t.Context(), dsn, Options{MaxConns: 2})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("node %d: Open: %v", i, err)
			continue
		}
		defer dbs[i].Close()
	}
	if t.Failed() {
		return
	}
	ctx := t.Context()
	rows, err := dbs[0].pool.Query(ctx, `SELECT version FROM schema_version ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int32, SchemaVersion())
	for i := range want {
		want[i] = int32(i + 1)
	}
	if !slices.Equal(versions, want) {
		t.Errorf("schema_version = %v, want %v", versions, want)
	}
	// Every node let go of the migration lock.
	var held int
	if err := dbs[0].pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND (classid::bigint << 32 | objid::bigint) = $1`, migrateLock).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if held != 0 {
		t.Errorf("%d advisory migration locks still held", held)
	}
	// And every node works.
	for i, db := range dbs {
		if _, err := db.CreateSession(ctx, record.Session{ID: fmt.Sprint("s", i)}); err != nil {
			t.Errorf("node %d: CreateSession: %v", i, err)
		}
	}
}

func TestSchemaTooNew(t *testing.T) {
	t.Parallel()
	db, dsn := openTest(t)
	if _, err := db.pool.Exec(t.Context(), `INSERT INTO schema_version VALUES ($1, 0)`, SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err := Open(t.Context(), dsn, Options{}); !errors.Is(err, ErrSchemaTooNew) {
		if err == nil {
			db.Close()
		}
		t.Fatalf("Open of a newer schema: err %v, want ErrSchemaTooNew", err)
	}
}

// TestSeqsAcrossNodes: writers on two nodes (two pools) append to the same
// sessions and run at once, one event or several per call, and in
// batches; the seqs they get back are exactly 1..N per session, each
// event stored under the seq it was given, and a reader tailing the log
// meanwhile never sees a seq before every lower one.
func TestSeqsAcrossNodes(t *testing.T) {
	t.Parallel()
	nodes := openNodes(t, 2)
	ctx := t.Context()
	sessions := []string{"a", "b", "c"}
	for _, id := range sessions {
		if _, err := nodes[0].CreateSession(ctx, record.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := nodes[1].CreateRun(ctx, record.Run{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	const writersPerNode, callsPerWriter = 8, 25
	type key struct {
		log, id string
	}
	var (
		mu   sync.Mutex
		got  = map[key]map[int64]string{} // seq -> the event's tag
		wg   sync.WaitGroup
		done = make(chan struct{})
	)
	record := func(log, id string, evs []event.Event) {
		mu.Lock()
		defer mu.Unlock()
		k := key{log, id}
		if got[k] == nil {
			got[k] = map[int64]string{}
		}
		for _, e := range evs {
			if prev, dup := got[k][e.Seq]; dup {
				t.Errorf("%s %s: seq %d handed out twice (%s and %s)", log, id, e.Seq, prev, e.Data)
			}
			got[k][e.Seq] = string(e.Data)
		}
	}
	tag := func(n, w, c, i int) event.Event {
		return event.Event{Type: "x", Data: json.RawMessage(fmt.Sprintf(`{"n":%d,"w":%d,"c":%d,"i":%d}`, n, w, c, i))}
	}
	for n, db := range nodes {
		for w := range writersPerNode {
			wg.Go(func() {
				for c := range callsPerWriter {
					k := 1 + (n+w+c)%3
					evs := make([]event.Event, k)
					for i := range evs {
						evs[i] = tag(n, w, c, i)
					}
					switch c % 4 {
					case 0, 1:
						id := sessions[(w+c)%len(sessions)]
						out, err := db.AppendEvents(ctx, id, evs...)
						if err != nil {
							t.Errorf("AppendEvents: %v", err)
							return
						}
						record("session", id, out)
					case 2:
						// Two sessions in opposite orders on the two nodes:
						// groups lock rows in a fixed order, so no deadlock.
						ids := []string{"a", "b"}
						if n == 1 {
							ids = []string{"b", "a"}
						}
						half := []event.Event{tag(n, w, c, 100)}
						out, errs := db.AppendEventBatches(ctx, []store.EventBatch{{SessionID: ids[0], Events: evs}, {SessionID: ids[1], Events: half}})
						for i, err := range errs {
							if err != nil {
								t.Errorf("AppendEventBatches: %v", err)
								return
							}
							record("session", ids[i], out[i])
						}
					case 3:
						out, err := db.RunEvents().AppendEvents(ctx, "a", evs...)
						if err != nil {
							t.Errorf("run AppendEvents: %v", err)
							return
						}
						record("run", "a", out)
					}
				}
			})
		}
	}
	// A reader on the other node than half the writers: whatever it reads
	// continues exactly where it left off.
	readerErr := make(chan error, 1)
	go func() {
		var last int64
		for {
			select {
			case <-done:
				readerErr <- nil
				return
			default:
			}
			evs, err := nodes[1].ReadEvents(ctx, "a", last, 0)
			if err != nil {
				readerErr <- err
				return
			}
			for _, e := range evs {
				if e.Seq != last+1 {
					readerErr <- fmt.Errorf("reader saw seq %d after %d", e.Seq, last)
					return
				}
				last = e.Seq
			}
		}
	}()
	wg.Wait()
	close(done)
	if err := <-readerErr; err != nil {
		t.Error(err)
	}
	for k, m := range got {
		var evs []event.Event
		var err error
		if k.log == "run" {
			evs, err = nodes[0].RunEvents().ReadEvents(ctx, k.id, 0, 0)
		} else {
			evs, err = nodes[0].ReadEvents(ctx, k.id, 0, 0)
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != len(m) {
			t.Errorf("%v: %d events stored, %d handed out", k, len(evs), len(m))
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Errorf("%v: event %d has seq %d", k, i, e.Seq)
				break
			}
			if m[e.Seq] != string(e.Data) {
				t.Errorf("%v: seq %d stored %s, handed out for %s", k, e.Seq, e.Data, m[e.Seq])
			}
		}
		if k.log == "session" {
			s, err := nodes[1].GetSession(ctx, k.id)
			if err != nil {
				t.Fatal(err)
			}
			if s.LastSeq != int64(len(evs)) {
				t.Errorf("%v: LastSeq %d, want %d", k, s.LastSeq, len(evs))
			}
		}
	}
}

// TestAuditIDsInCommitOrder: a reader paging through the audit trail by id
// while two nodes append must see every entry: ids are handed out in
// commit order, so no entry can appear behind the reader's position.
func TestAuditIDsInCommitOrder(t *testing.T) {
	t.Parallel()
	nodes := openNodes(t, 2)
	ctx := t.Context()
	const writers, per = 6, 30
	var wg sync.WaitGroup
	for n, db := range nodes {
		for w := range writers {
			wg.Go(func() {
				for i := range per {
					e := record.AuditEntry{SessionID: "s", ToolName: "Bash", Operation: "execute", Outcome: record.AuditAllowed,
						Reason: fmt.Sprintf("%d/%d/%d", n, w, i)}
					if err := db.AppendAudit(ctx, e); err != nil {
						t.Errorf("AppendAudit: %v", err)
						return
					}
				}
			})
		}
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	seen := map[string]bool{}
	var after int64
	for {
		stop := false
		select {
		case <-finished:
			stop = true // one more pass after the last commit
		default:
		}
		page, err := nodes[1].ListAudit(ctx, record.AuditQuery{AfterID: after, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			seen[e.Reason] = true
			after = e.ID
		}
		if stop && len(page) == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if want := 2 * writers * per; len(seen) != want {
		t.Errorf("the paging reader saw %d entries, want %d", len(seen), want)
	}
}

// TestCloseDuringAppends: appends racing Close either succeed or fail with
// an error; none hangs, and every one that succeeded is stored.
func TestCloseDuringAppends(t *testing.T) {
	t.Parallel()
	db, dsn := openTest(t)
	ctx := t.Context()
	if _, err := db.CreateSession(ctx, record.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	var (
		wg sync.WaitGroup
		mu sync.Mutex
		ok int64
	)
	for range 16 {
		wg.Go(func() {
			for {
				out, err := db.AppendEvents(ctx, "s", event.Event{Type: "x"})
				if err != nil {
					return
				}
				mu.Lock()
				ok = max(ok, out[0].Seq)
				mu.Unlock()
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	db.Close()
	wg.Wait()
	db2, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	s, err := db2.GetSession(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if s.LastSeq < ok {
		t.Errorf("LastSeq %d after Close, but seq %d was acknowledged", s.LastSeq, ok)
	}
}
