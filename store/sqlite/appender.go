package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-run/weft/store"
)

// Group commit. A commit costs far more than an insert (WAL frame writes,
// lock round trips), and the store's busiest callers are many sessions
// streaming events at once. An AppendEvents call that finds no other
// append in progress commits on its own goroutine; calls arriving while
// one is committing queue for one goroutine that commits everything
// waiting in one transaction. Under load, appends per second approach
// batched appends (about 3x single appends with 16 writers on 2 cores).
const (
	maxGroupCalls  = 64
	maxGroupEvents = 1024
)

var errClosed = errors.New("sqlite: database is closed")

type appendReq struct {
	log       *eventLog
	sessionID string // the session's or run's id
	events    []store.Event
	data      []any
	created   []int64
	index     int // the request's batch, in AppendEventBatches

	// state lets a caller whose context ends withdraw a queued request,
	// and otherwise makes it wait for the outcome, so that an error from
	// AppendEvents always means nothing was stored.
	state atomic.Int32
	done  chan error // buffered: the writer never blocks on a caller
}

const (
	reqQueued int32 = iota
	reqTaken
	reqWithdrawn
)

type appender struct {
	db   *DB
	reqs chan *appendReq // unbuffered: a request is either with the writer or still the caller's
	quit chan struct{}
	done chan struct{}
	busy atomic.Int32 // appends committing, directly or as a group
}

func startAppender(db *DB) *appender {
	a := &appender{db: db, reqs: make(chan *appendReq), quit: make(chan struct{}), done: make(chan struct{})}
	go a.loop()
	return a
}

// stop waits for the group in flight to finish.
func (a *appender) stop() {
	close(a.quit)
	<-a.done
}

func (a *appender) submit(ctx context.Context, r *appendReq) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Nobody else appending: commit on the caller's goroutine and skip the
	// hand-off. Callers arriving meanwhile see busy and queue, so groups
	// form exactly when there is contention.
	if a.busy.CompareAndSwap(0, 1) {
		defer a.busy.Add(-1)
		select {
		case <-a.quit:
			return errClosed
		default:
		}
		return a.write(ctx, func(tx *sql.Tx) error { return r.log.insert(ctx, tx, r) })
	}
	select {
	case a.reqs <- r:
	case <-a.quit:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqWithdrawn) {
			return ctx.Err()
		}
		return <-r.done
	}
}

// runBatches commits reqs, which nobody can withdraw, in transactions of
// up to maxGroupEvents events; each request's outcome goes to its done.
// Appends arriving meanwhile queue for the loop, as they would behind a
// group.
func (a *appender) runBatches(reqs []*appendReq) {
	a.busy.Add(1)
	defer a.busy.Add(-1)
	for len(reqs) > 0 {
		select {
		case <-a.quit:
			for _, r := range reqs {
				r.done <- errClosed
			}
			return
		default:
		}
		k, n := 1, len(reqs[0].events)
		for k < len(reqs) && n+len(reqs[k].events) <= maxGroupEvents {
			n += len(reqs[k].events)
			k++
		}
		a.run(reqs[:k])
		reqs = reqs[k:]
	}
}

func (a *appender) loop() {
	defer close(a.done)
	group := make([]*appendReq, 0, maxGroupCalls)
	for {
		var first *appendReq
		select {
		case <-a.quit:
			return
		case first = <-a.reqs:
		}
		a.busy.Add(1)
		group = append(group[:0], first)
		n := len(first.events)
	drain:
		for len(group) < maxGroupCalls && n < maxGroupEvents {
			select {
			case r := <-a.reqs:
				group = append(group, r)
				n += len(r.events)
			default:
				break drain
			}
		}
		a.run(group)
		a.busy.Add(-1)
	}
}

func (a *appender) run(group []*appendReq) {
	// The callers' contexts no longer apply: a caller can withdraw its
	// request until the transaction below takes it, and after that waits
	// for the outcome.
	ctx := context.Background()
	taken := make([]bool, len(group))
	errs := make([]error, len(group))
	culprit := -1
	err := a.write(ctx, func(tx *sql.Tx) error {
		for i, r := range group {
			if !r.state.CompareAndSwap(reqQueued, reqTaken) {
				continue
			}
			taken[i] = true
			errs[i] = r.log.insert(ctx, tx, r)
			// A missing session wrote nothing, so the others can go on.
			if errs[i] != nil && !errors.Is(errs[i], store.ErrNotFound) {
				culprit = i
				return errs[i]
			}
		}
		return nil
	})
	if err == nil {
		for i, r := range group {
			if taken[i] {
				r.done <- errs[i]
			}
		}
		return
	}
	// Nothing was stored. One request's failure must not fail the others:
	// they go again without it. A failure of the transaction itself
	// (begin, commit) is everyone's.
	var rest []*appendReq
	for i, r := range group {
		if !taken[i] && !r.state.CompareAndSwap(reqQueued, reqTaken) {
			continue // withdrawn
		}
		switch {
		case i == culprit:
			r.done <- err
		case culprit >= 0:
			r.state.Store(reqQueued)
			rest = append(rest, r)
		default:
			r.done <- err
		}
	}
	if len(rest) > 0 {
		a.run(rest)
	}
}

// write runs an append transaction: fn runs once the seq cache is known to
// be current, and a transaction that fails (rolled back, or its commit
// uncertain) leaves the cache empty, since fn may have advanced it.
func (a *appender) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	err := a.db.write(ctx, func(tx *sql.Tx) error {
		var v int64
		if err := tx.StmtContext(ctx, a.db.st.dataVersion).QueryRowContext(ctx).Scan(&v); err != nil {
			return fmt.Errorf("sqlite: append events: data_version: %w", err)
		}
		a.db.seqs.check(v)
		return fn(tx)
	})
	if err != nil {
		a.db.seqs.reset()
		return err
	}
	a.db.fitCache(ctx, a.db.seqs.activeSessions())
	return nil
}

// insert assigns r's seqs after the session's (or run's) last one and
// inserts its events, inside tx.
func (l *eventLog) insert(ctx context.Context, tx *sql.Tx, r *appendReq) error {
	pos, ok := l.db.seqs.get(l, r.sessionID)
	if !ok {
		err := tx.StmtContext(ctx, l.lastSeq).QueryRowContext(ctx, r.sessionID).Scan(&pos.pk, &pos.last)
		if errors.Is(err, sql.ErrNoRows) {
			return l.notFound(r.sessionID)
		}
		if err != nil {
			return fmt.Errorf("sqlite: append events to %s %q: %w", l.kind, r.sessionID, err)
		}
	}
	ins := tx.StmtContext(ctx, l.insertEvent)
	for i := range r.events {
		r.events[i].Seq = pos.last + 1 + int64(i)
		if _, err := ins.ExecContext(ctx, pos.pk, r.events[i].Seq, r.events[i].Type, r.data[i], r.created[i]); err != nil {
			return fmt.Errorf("sqlite: append events to %s %q: %w", l.kind, r.sessionID, err)
		}
	}
	pos.last += int64(len(r.events))
	l.db.seqs.put(l, r.sessionID, pos)
	if l.updateTurns != nil {
		return l.framing(ctx, tx, pos.pk, r)
	}
	return nil
}

// seqCache remembers, for the sessions and runs appended to, their pk and
// last seq, so that an append does not read them from the database each
// time (that read cost about as much as the insert of a one-event append).
// It is read and advanced only inside write transactions, which the
// single write connection serialises, and it is trusted only while no
// other connection has committed (PRAGMA data_version, checked at the start
// of every append transaction): another process appending to or deleting a
// session makes the next append read again. Deletes through this DB forget
// their entry inside their transaction; a failed append transaction
// empties the cache.
type seqCache struct {
	mu      sync.Mutex // for the race detector's sake: the write connection already serialises users
	version int64
	known   bool
	m       map[seqKey]seqPos
	// sec is the current second (of clock, time.Now by default) and
	// active the sessions and runs appended to in it: the load fitCache
	// sizes the write cache for.
	clock  func() time.Time
	sec    int64
	active int
}

type seqKey struct {
	log *eventLog
	id  string
}

type seqPos struct {
	pk, last int64
	sec      int64 // the second of the last append (seqCache.active)
}

// maxSeqCache bounds the cache; past it the cache starts over, which costs
// one read per session appended to afterwards.
const maxSeqCache = 100_000

// check empties the cache unless the database's data_version is v, the
// one it was filled under.
func (c *seqCache) check(v int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known || c.version != v {
		clear(c.m)
		c.version, c.known = v, true
	}
	now := time.Now
	if c.clock != nil {
		now = c.clock
	}
	if s := now().Unix(); s != c.sec {
		c.sec, c.active = s, 0
	}
}

// activeSessions is how many sessions and runs were appended to in the
// current second.
func (c *seqCache) activeSessions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active
}

func (c *seqCache) get(l *eventLog, id string) (seqPos, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[seqKey{l, id}]
	return p, ok
}

func (c *seqCache) put(l *eventLog, id string, p seqPos) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := seqKey{l, id}
	old, ok := c.m[k]
	if c.m == nil {
		c.m = make(map[seqKey]seqPos)
	} else if !ok && len(c.m) >= maxSeqCache {
		clear(c.m)
	}
	if !ok || old.sec != c.sec {
		c.active++
	}
	p.sec = c.sec
	c.m[k] = p
}

func (c *seqCache) forget(l *eventLog, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, seqKey{l, id})
}

// reset empties the cache and makes the next check start over.
func (c *seqCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
	c.known = false
}
