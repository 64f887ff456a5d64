package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/weft-run/weft/store"
)

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
	out := make([]store.Event, len(events))
	data := make([]any, len(events))
	created := make([]int64, len(events))
	t := now()
	for i, e := range events {
		if e.Data != nil {
			if !json.Valid(e.Data) {
				return nil, fmt.Errorf("sqlite: append events to %q: event %d (%s): data is not valid JSON", sessionID, i, e.Type)
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
		e.SessionID = sessionID
		e.CreatedAt = fromNanos(created[i])
		e.Data = cloneRaw(e.Data)
		out[i] = e
	}
	req := &appendReq{sessionID: sessionID, events: out, data: data, created: created, done: make(chan error, 1)}
	if err := db.appender.submit(ctx, req); err != nil {
		return nil, err
	}
	return out, nil
}

// ReadEvents implements store.Events. A limit <= 0 means no limit.
func (db *DB) ReadEvents(ctx context.Context, sessionID string, after int64, limit int) ([]store.Event, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := db.st.readEvents.QueryContext(ctx, after, sessionID, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read events of %q: %w", sessionID, err)
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
			return nil, fmt.Errorf("sqlite: read events of %q: %w", sessionID, err)
		}
		if !seq.Valid {
			break // the session's row with nothing after `after` joined
		}
		out = append(out, store.Event{
			SessionID: sessionID,
			Seq:       seq.Int64,
			Type:      typ.String,
			Data:      json.RawMessage(data),
			CreatedAt: fromNanos(created.Int64),
		})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: read events of %q: %w", sessionID, err)
	}
	if !found {
		return nil, notFound(sessionID)
	}
	return out, nil
}
