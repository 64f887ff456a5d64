package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/store"
)

// notifyChannel is the LISTEN/NOTIFY channel appends are announced on.
const notifyChannel = "weft_events"

// maxNotifyID bounds the ids announced: a NOTIFY payload must stay under
// 8000 bytes, and an append must not fail for want of announcing it. A
// log with a longer id is followed by polling only.
const maxNotifyID = 7900

// The announcement, queued after an append in the same transaction, so
// that PostgreSQL delivers it only if and once the append commits (and in
// commit order). The payload is "<kind> <seq> <id>": the id last, so it
// may hold spaces. The seq is the row's last_seq, which this transaction
// just set.
const (
	notifySession = `SELECT pg_notify('` + notifyChannel + `', 'session ' || last_seq || ' ' || id) FROM sessions WHERE id = $1`
	notifyRun     = `SELECT pg_notify('` + notifyChannel + `', 'run ' || last_seq || ' ' || id) FROM runs WHERE id = $1`
)

// queueNotify adds r's announcement to b, when the store announces.
func (r *appendReq) queueNotify(b *pgx.Batch) bool {
	if !r.log.db.opt.Notify || len(r.sessionID) > maxNotifyID {
		return false
	}
	if r.log.turns {
		b.Queue(notifySession, r.sessionID)
	} else {
		b.Queue(notifyRun, r.sessionID)
	}
	return true
}

func parseNotification(payload string) (store.Notification, bool) {
	kind, rest, ok1 := strings.Cut(payload, " ")
	seq, id, ok2 := strings.Cut(rest, " ")
	n, err := strconv.ParseInt(seq, 10, 64)
	if !ok1 || !ok2 || err != nil || (kind != "session" && kind != "run" && kind != NotifyCommand && kind != NotifyResult) {
		return store.Notification{}, false
	}
	return store.Notification{Kind: kind, ID: id, Seq: n}, true
}

var _ store.Notifier = (*DB)(nil)

// Notifications implements store.Notifier: a connection of its own
// (outside the pool) LISTENs on the channel every node's appends are
// announced on, when those nodes run with Options.Notify. If that
// connection is lost, it reconnects (backing off up to 5s) and sends a
// Resync notification, since announcements made meanwhile are lost.
// Several notifications of one log waiting for the reader are merged into
// the latest (the highest seq), so a slow reader holds one entry per log.
func (db *DB) Notifications(ctx context.Context) (<-chan store.Notification, error) {
	conn, err := db.listen(ctx)
	if err != nil {
		return nil, err
	}
	q := &notifyQueue{pending: map[notifyKey]int64{}, wake: make(chan struct{}, 1)}
	out := make(chan store.Notification)
	go q.receive(ctx, db, conn)
	go q.deliver(ctx, out)
	return out, nil
}

func (db *DB) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("postgres: notifications: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		_ = conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: notifications: %w", err)
	}
	return conn, nil
}

type notifyKey struct{ kind, id string }

// notifyQueue merges notifications between the connection and the reader.
type notifyQueue struct {
	mu      sync.Mutex
	pending map[notifyKey]int64
	order   []notifyKey // pending's keys, oldest first
	resync  bool
	wake    chan struct{}
}

func (q *notifyQueue) push(n store.Notification) {
	q.mu.Lock()
	if n.Resync {
		q.resync = true
	} else {
		k := notifyKey{n.Kind, n.ID}
		if old, ok := q.pending[k]; !ok {
			q.order = append(q.order, k)
			q.pending[k] = n.Seq
		} else if n.Seq > old {
			q.pending[k] = n.Seq
		}
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take removes and returns what is pending, a resync first.
func (q *notifyQueue) take() []store.Notification {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []store.Notification
	if q.resync {
		out = append(out, store.Notification{Resync: true})
		q.resync = false
	}
	for _, k := range q.order {
		out = append(out, store.Notification{Kind: k.kind, ID: k.id, Seq: q.pending[k]})
	}
	clear(q.pending)
	q.order = q.order[:0]
	return out
}

func (q *notifyQueue) receive(ctx context.Context, db *DB, conn *pgx.Conn) {
	backoff := 50 * time.Millisecond
	for {
		for conn != nil {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				_ = conn.Close(context.Background())
				conn = nil
				break
			}
			if parsed, ok := parseNotification(n.Payload); ok {
				q.push(parsed)
			}
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		c, err := db.listen(ctx)
		if err != nil {
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		conn, backoff = c, 50*time.Millisecond
		q.push(store.Notification{Resync: true})
	}
}

func (q *notifyQueue) deliver(ctx context.Context, out chan<- store.Notification) {
	defer close(out)
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
		for _, n := range q.take() {
			select {
			case out <- n:
			case <-ctx.Done():
				return
			}
		}
	}
}
