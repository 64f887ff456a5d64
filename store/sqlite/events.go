package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/weft-run/weft/store"
)

// eventLog is one of the database's two event tables, sessions' (events)
// and runs' (run_events): the same contract and code over different
// statements. It implements store.Events.
type eventLog struct {
	db          *DB
	kind        string // "session" or "run", for messages
	lastSeq     *sql.Stmt
	insertEvent *sql.Stmt
	readEvents  *sql.Stmt
	// updateTurns keeps the turn framing (turns.go); nil for runs.
	updateTurns *sql.Stmt
}

func (l *eventLog) notFound(id string) error {
	return fmt.Errorf("%s %q: %w", l.kind, id, store.ErrNotFound)
}

// AppendEvents implements store.Events. The batch is committed in one
// transaction on the single write connection, which reads the last seq and
// inserts after it: seqs are assigned in commit order, so a reader never
// sees seq n+1 before n. Concurrent calls share transactions (see
// appender). An append does not move the session's UpdatedAt: that would
// rewrite the session's page on every event, a third of an append's I/O.
//
// Once the append has started, canceling ctx no longer abandons it: the
// call returns what happened, so that an error always means nothing was
// stored.
//
// An event keeps a non-zero CreatedAt (converted to UTC); a zero one gets
// the time of the append.
func (db *DB) AppendEvents(ctx context.Context, sessionID string, events ...store.Event) ([]store.Event, error) {
	return db.sessionEvents.AppendEvents(ctx, sessionID, events...)
}

// ReadEvents implements store.Events. A limit <= 0 means no limit.
func (db *DB) ReadEvents(ctx context.Context, sessionID string, after int64, limit int) ([]store.Event, error) {
	return db.sessionEvents.ReadEvents(ctx, sessionID, after, limit)
}

// AppendEvents implements store.Events for l's table (see DB.AppendEvents).
func (l *eventLog) AppendEvents(ctx context.Context, id string, events ...store.Event) ([]store.Event, error) {
	req, err := l.request(id, events)
	if err != nil {
		return nil, err
	}
	if err := l.db.appender.submit(ctx, req); err != nil {
		return nil, err
	}
	return req.events, nil
}

// AppendEventBatches implements store.BatchEvents: the batches are
// committed together, in transactions of up to maxGroupEvents events, and
// a batch that fails (an unknown session) does not fail the others.
func (db *DB) AppendEventBatches(ctx context.Context, batches []store.EventBatch) ([][]store.Event, []error) {
	return db.sessionEvents.AppendEventBatches(ctx, batches)
}

// AppendEventBatches implements store.BatchEvents for l's table.
func (l *eventLog) AppendEventBatches(ctx context.Context, batches []store.EventBatch) ([][]store.Event, []error) {
	out := make([][]store.Event, len(batches))
	errs := make([]error, len(batches))
	reqs := make([]*appendReq, 0, len(batches))
	for i, b := range batches {
		if errs[i] = ctx.Err(); errs[i] != nil {
			continue
		}
		req, err := l.request(b.SessionID, b.Events)
		if err != nil {
			errs[i] = err
			continue
		}
		req.index = i
		reqs = append(reqs, req)
	}
	l.db.appender.runBatches(reqs)
	for _, r := range reqs {
		if errs[r.index] = <-r.done; errs[r.index] == nil {
			out[r.index] = r.events
		}
	}
	return out, errs
}

// request checks and converts events for an append to id.
func (l *eventLog) request(id string, events []store.Event) (*appendReq, error) {
	out := make([]store.Event, len(events))
	data := make([]any, len(events))
	created := make([]int64, len(events))
	t := now()
	for i, e := range events {
		if e.Data != nil {
			if !json.Valid(e.Data) {
				return nil, fmt.Errorf("sqlite: append events to %s %q: event %d (%s): data is not valid JSON", l.kind, id, i, e.Type)
			}
			data[i] = string(e.Data)
		}
		var err error
		if e.CreatedAt.IsZero() {
			e.CreatedAt = t
		}
		if created[i], err = nanos("event created_at", e.CreatedAt); err != nil {
			return nil, err
		}
		e.SessionID = id
		e.CreatedAt = fromNanos(created[i])
		e.Data = cloneRaw(e.Data)
		out[i] = e
	}
	return &appendReq{log: l, sessionID: id, events: out, data: data, created: created, done: make(chan error, 1)}, nil
}

// ReadEvents implements store.Events for l's table. A limit <= 0 means no
// limit.
func (l *eventLog) ReadEvents(ctx context.Context, id string, after int64, limit int) ([]store.Event, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := l.readEvents.QueryContext(ctx, after, id, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read events of %s %q: %w", l.kind, id, err)
	}
	defer rows.Close()
	var (
		out   []store.Event
		found bool
	)
	for rows.Next() {
		found = true
		var (
			seq, created sql.NullInt64
			typ          sql.NullString
			data         []byte
		)
		if err := rows.Scan(&seq, &typ, &data, &created); err != nil {
			return nil, fmt.Errorf("sqlite: read events of %s %q: %w", l.kind, id, err)
		}
		if !seq.Valid {
			break // the parent's row with nothing after `after` joined
		}
		out = append(out, store.Event{
			SessionID: id,
			Seq:       seq.Int64,
			Type:      typ.String,
			Data:      json.RawMessage(data),
			CreatedAt: fromNanos(created.Int64),
		})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: read events of %s %q: %w", l.kind, id, err)
	}
	if !found {
		return nil, l.notFound(id)
	}
	return out, nil
}

// RunEvents implements store.Runs: the runs' event log.
func (db *DB) RunEvents() store.Events { return &db.runEvents }
