package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/record"
)

// Group commit. A commit costs a round trip and a WAL flush, far more than
// the insert of a few events, and the busiest callers are many sessions
// streaming at once. Appends go to a few workers; a worker takes the first
// waiting append and every other one already queued (up to the limits
// below) and commits them as one pipelined batch: one round trip, one
// implicit transaction, one flush. Under load groups form by themselves;
// alone, an append pays one hand-off between goroutines.
const (
	maxGroupCalls  = 64
	maxGroupEvents = 1024
	// maxRetries bounds the retries of an append PostgreSQL aborted to
	// break a deadlock (appends lock rows in a fixed order, so only other
	// writers can cause one).
	maxRetries = 5
)

var errClosed = errors.New("postgres: database is closed")

type appendReq struct {
	log       *eventLog
	sessionID string // the session's or run's id
	events    []event.Event
	types     []string
	data      []*string
	created   []int64
	index     int   // the request's batch, in AppendEventBatches
	notify    bool  // an announcement follows its statement in the batch
	err       error // the request's own failure (an unknown session), after a group that committed

	// The turn framing (see framing).
	accepted          int64
	answered, running *int64

	// state lets a caller whose context ends withdraw a queued request,
	// and otherwise makes it wait for the outcome, so that an error from
	// AppendEvents always means nothing was stored.
	state atomic.Int32
	done  chan error // buffered: a worker never blocks on a caller
}

const (
	reqQueued int32 = iota
	reqTaken
	reqWithdrawn
)

type appender struct {
	db   *DB
	reqs chan *appendReq // unbuffered: a request is either with a worker or still the caller's
	quit chan struct{}
	wg   sync.WaitGroup
}

func startAppender(db *DB, workers int) *appender {
	a := &appender{db: db, reqs: make(chan *appendReq), quit: make(chan struct{})}
	for range workers {
		a.wg.Add(1)
		go a.loop()
	}
	return a
}

// stop waits for the groups in flight.
func (a *appender) stop() {
	close(a.quit)
	a.wg.Wait()
}

func (a *appender) submit(ctx context.Context, r *appendReq) error {
	if err := ctx.Err(); err != nil {
		return err
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

// runBatches commits reqs, which nobody can withdraw, in groups of up to
// maxGroupEvents events, on the caller's goroutine.
func (a *appender) runBatches(reqs []*appendReq) {
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
		for _, r := range reqs[:k] {
			r.state.Store(reqTaken)
		}
		a.commit(reqs[:k])
		reqs = reqs[k:]
	}
}

func (a *appender) loop() {
	defer a.wg.Done()
	group := make([]*appendReq, 0, maxGroupCalls)
	for {
		var first *appendReq
		select {
		case <-a.quit:
			return
		case first = <-a.reqs:
		}
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
		// Withdrawn requests are dropped; the rest can no longer be.
		taken := group[:0]
		for _, r := range group {
			if r.state.CompareAndSwap(reqQueued, reqTaken) {
				taken = append(taken, r)
			}
		}
		a.commit(taken)
	}
}

// commit appends reqs in one transaction and sends each its outcome. A
// failed group (one bad request fails the whole transaction) is retried one
// request at a time, so that one append's failure is its own.
func (a *appender) commit(reqs []*appendReq) {
	if len(reqs) == 0 {
		return
	}
	// Rows are locked in one order (table, then id) by every group on
	// every node, so groups never deadlock each other. Stable, so that one
	// session's appends keep their order.
	slices.SortStableFunc(reqs, func(x, y *appendReq) int {
		return cmp.Or(cmp.Compare(x.log.kind, y.log.kind), cmp.Compare(x.sessionID, y.sessionID))
	})
	err := a.group(reqs)
	// Only a transaction the server refused is known to have stored
	// nothing and may be run again; a lost connection may have committed.
	var pe *pgconn.PgError
	if err == nil || len(reqs) == 1 || !errors.As(err, &pe) {
		for _, r := range reqs {
			r.done <- r.outcome(err)
		}
		return
	}
	for _, r := range reqs {
		r.done <- r.outcome(a.group([]*appendReq{r}))
	}
}

// outcome is r's result after a group that ended with err.
func (r *appendReq) outcome(err error) error {
	if err != nil {
		return fmt.Errorf("postgres: append events to %s %q: %w", r.log.kind, r.sessionID, err)
	}
	return r.err
}

// group runs reqs as one batch. A request whose session does not exist
// gets its error in r.err without failing the others; err is for the
// whole transaction, which then stored nothing (or, on a connection lost
// at commit, may have: the caller cannot know, as with any database).
func (a *appender) group(reqs []*appendReq) error {
	var err error
	for attempt := 0; attempt < maxRetries; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), a.db.opt.WriteTimeout)
		b := &pgx.Batch{}
		for _, r := range reqs {
			r.err = nil
			r.queue(b)
			r.notify = r.queueNotify(b)
		}
		err = a.db.batch(ctx, b, func(br pgx.BatchResults) error {
			for _, r := range reqs {
				err := r.result(br)
				if err != nil && !errors.Is(err, record.ErrNotFound) {
					return err
				}
				r.err = err
				if r.notify {
					if _, err := br.Exec(); err != nil {
						return err
					}
				}
			}
			return nil
		})
		cancel()
		if !retryable(err) {
			return err
		}
	}
	return err
}
