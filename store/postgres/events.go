package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// The append statements. One statement per append: the UPDATE advances the
// parent's last_seq (taking its row lock until commit, which orders
// appenders on every node) and returns it, and the INSERT places the
// events right below it. No row back: no such session or run. On the
// session table the same UPDATE keeps the turn framing (store.Turns):
// $3 is the 1-based position in the batch of the last user_message (0:
// none), so its seq is the old last_seq plus $3; $4 and $5 are the
// message_seq of the last message_consumed or message_dropped and the new
// running turn (NULL: unchanged). $9 and $10 fence the append (see
// DB.FenceSessions): with $9 set, the append is refused while a holder
// other than $9 holds the live lease $10 || id.
const (
	appendSessionEvents = `WITH s AS (
			UPDATE sessions SET last_seq = last_seq + $2,
				turn_accepted = CASE WHEN $3::bigint > 0 THEN last_seq + $3::bigint ELSE turn_accepted END,
				turn_answered = COALESCE($4::bigint, turn_answered),
				turn_running = COALESCE($5::bigint, turn_running)
			WHERE id = $1 AND ($9::text IS NULL OR NOT EXISTS (SELECT 1 FROM leases
				WHERE name = $10::text || $1 AND holder <> $9::text AND expires_at > clock_timestamp()))
			RETURNING pk, last_seq),
		ins AS (
			INSERT INTO events (session_pk, seq, type, data, created_at)
			SELECT s.pk, s.last_seq - $2 + u.ord, u.type, u.data, u.created
			FROM s, unnest($6::text[], $7::text[], $8::bigint[]) WITH ORDINALITY AS u(type, data, created, ord))
		SELECT last_seq FROM s`
	appendRunEvents = `WITH r AS (
			UPDATE runs SET last_seq = last_seq + $2 WHERE id = $1 RETURNING pk, last_seq),
		ins AS (
			INSERT INTO run_events (run_pk, seq, type, data, created_at)
			SELECT r.pk, r.last_seq - $2 + u.ord, u.type, u.data, u.created
			FROM r, unnest($3::text[], $4::text[], $5::bigint[]) WITH ORDINALITY AS u(type, data, created, ord))
		SELECT last_seq FROM r`

	// The LEFT JOIN tells "no such session" (no row) from "nothing new"
	// (one row of NULLs) in one statement. LIMIT NULL is no limit.
	readSessionEvents = `SELECT e.seq, e.type, e.data, e.created_at FROM sessions s
		LEFT JOIN events e ON e.session_pk = s.pk AND e.seq > $1
		WHERE s.id = $2 ORDER BY e.seq LIMIT $3`
	readRunEvents = `SELECT e.seq, e.type, e.data, e.created_at FROM runs r
		LEFT JOIN run_events e ON e.run_pk = r.pk AND e.seq > $1
		WHERE r.id = $2 ORDER BY e.seq LIMIT $3`
)

// eventLog is one of the two event tables, sessions' and runs'. It
// implements store.Events and store.BatchEvents.
type eventLog struct {
	db        *DB
	kind      string // "session" or "run"
	appendSQL string
	readSQL   string
	turns     bool // keeps the turn framing (sessions only)
}

var (
	_ store.Events      = (*eventLog)(nil)
	_ store.BatchEvents = (*eventLog)(nil)
)

func (l *eventLog) notFound(id string) error { return notFoundErr(l.kind, id) }

// AppendEvents implements store.Events. Seqs are assigned in commit order
// per session, across every node on the database. Concurrent calls share
// transactions (appender.go); once an append has started, canceling ctx
// no longer abandons it, so an error always means nothing was stored.
// An event keeps a non-zero CreatedAt (in UTC); a zero one gets the time
// of the append.
func (db *DB) AppendEvents(ctx context.Context, sessionID string, events ...event.Event) ([]event.Event, error) {
	return db.sessionEvents.AppendEvents(ctx, sessionID, events...)
}

// ReadEvents implements store.Events. A limit <= 0 means no limit.
func (db *DB) ReadEvents(ctx context.Context, sessionID string, after int64, limit int) ([]event.Event, error) {
	return db.sessionEvents.ReadEvents(ctx, sessionID, after, limit)
}

// AppendEventBatches implements store.BatchEvents.
func (db *DB) AppendEventBatches(ctx context.Context, batches []store.EventBatch) ([][]event.Event, []error) {
	return db.sessionEvents.AppendEventBatches(ctx, batches)
}

// RunEvents implements store.Runs: the runs' event log.
func (db *DB) RunEvents() store.Events { return &db.runEvents }

// AppendEvents implements store.Events for l's table.
func (l *eventLog) AppendEvents(ctx context.Context, id string, events ...event.Event) ([]event.Event, error) {
	req, err := l.request(id, events)
	if err != nil {
		return nil, err
	}
	if err := l.db.appender.submit(ctx, req); err != nil {
		return nil, err
	}
	return req.events, nil
}

// AppendEventBatches implements store.BatchEvents for l's table: the
// batches go to the appender together and are committed in as few
// transactions as its limits allow; one batch's failure does not fail the
// others.
func (l *eventLog) AppendEventBatches(ctx context.Context, batches []store.EventBatch) ([][]event.Event, []error) {
	out := make([][]event.Event, len(batches))
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

// request checks and converts events for an append to id, and works out
// the turn framing they carry.
func (l *eventLog) request(id string, events []event.Event) (*appendReq, error) {
	r := &appendReq{log: l, sessionID: id, events: make([]event.Event, len(events)),
		types: make([]string, len(events)), data: make([]*string, len(events)),
		created: make([]int64, len(events)), done: make(chan error, 1)}
	t := now()
	for i, e := range events {
		if e.Data != nil {
			if !json.Valid(e.Data) {
				return nil, fmt.Errorf("postgres: append events to %s %q: event %d (%s): data is not valid JSON", l.kind, id, i, e.Type)
			}
			s := string(e.Data)
			r.data[i] = &s
		}
		if e.CreatedAt.IsZero() {
			e.CreatedAt = t
		}
		var err error
		if r.created[i], err = nanos("event created_at", e.CreatedAt); err != nil {
			return nil, err
		}
		e.SessionID = id
		e.CreatedAt = fromNanos(r.created[i])
		e.Data = cloneRaw(e.Data)
		e.Seq = 0
		r.events[i] = e
		r.types[i] = e.Type
	}
	if l.turns {
		r.framing()
	}
	return r, nil
}

// framing works out what r's events do to the session's turn framing
// (store.Turns), in event order: the last of each kind wins.
func (r *appendReq) framing() {
	for i, e := range r.events {
		switch e.Type {
		case event.UserMessage:
			r.accepted = int64(i + 1)
		case event.MessageConsumed, event.MessageDropped:
			var d struct {
				MessageSeq int64 `json:"message_seq"`
			}
			if json.Unmarshal(e.Data, &d) != nil || d.MessageSeq <= 0 {
				continue // not framing anything this store can use
			}
			n := d.MessageSeq
			r.answered = &n
			if e.Type == event.MessageConsumed {
				r.running = &n
			}
		case event.Done:
			var zero int64
			r.running = &zero
		}
	}
}

// queue adds r's statement to b.
func (r *appendReq) queue(b *pgx.Batch) {
	n := int64(len(r.events))
	if r.log.turns {
		var holder, prefix *string
		if f := r.log.db.fence.Load(); f != nil {
			holder, prefix = &f.holder, &f.prefix
		}
		b.Queue(r.log.appendSQL, r.sessionID, n, r.accepted, r.answered, r.running, r.types, r.data, r.created, holder, prefix)
	} else {
		b.Queue(r.log.appendSQL, r.sessionID, n, r.types, r.data, r.created)
	}
}

// result reads r's statement's result from br and numbers its events.
func (r *appendReq) result(br pgx.BatchResults) error {
	var last int64
	err := br.QueryRow().Scan(&last)
	if noRows(err) {
		if r.log.turns && r.log.db.fence.Load() != nil {
			return fmt.Errorf("session %q: unknown, or another node holds its lease: %w", r.sessionID, record.ErrNotFound)
		}
		return r.log.notFound(r.sessionID)
	}
	if err != nil {
		return err
	}
	first := last - int64(len(r.events)) + 1
	for i := range r.events {
		r.events[i].Seq = first + int64(i)
	}
	return nil
}

// ReadEvents implements store.Events for l's table. A limit <= 0 means no
// limit.
func (l *eventLog) ReadEvents(ctx context.Context, id string, after int64, limit int) ([]event.Event, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := l.db.pool.Query(ctx, l.readSQL, after, id, lim)
	if err != nil {
		return nil, fmt.Errorf("postgres: read events of %s %q: %w", l.kind, id, err)
	}
	defer rows.Close()
	var (
		out   []event.Event
		found bool
	)
	for rows.Next() {
		found = true
		var (
			seq, created *int64
			typ, data    *string
		)
		if err := rows.Scan(&seq, &typ, &data, &created); err != nil {
			return nil, fmt.Errorf("postgres: read events of %s %q: %w", l.kind, id, err)
		}
		if seq == nil {
			break // the parent's row with nothing after `after` joined
		}
		e := event.Event{SessionID: id, Seq: *seq, Type: *typ, CreatedAt: fromNanos(*created)}
		if data != nil {
			e.Data = json.RawMessage(*data)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: read events of %s %q: %w", l.kind, id, err)
	}
	if !found {
		return nil, l.notFound(id)
	}
	return out, nil
}

// ListOpenTurns implements store.Turns.
func (db *DB) ListOpenTurns(ctx context.Context) ([]record.OpenTurns, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, turn_accepted, turn_answered, turn_running FROM sessions
		WHERE turn_accepted > turn_answered OR turn_running <> 0`)
	if err != nil {
		return nil, fmt.Errorf("postgres: list open turns: %w", err)
	}
	defer rows.Close()
	out := []record.OpenTurns{}
	for rows.Next() {
		var t record.OpenTurns
		if err := rows.Scan(&t.SessionID, &t.Accepted, &t.Answered, &t.Running); err != nil {
			return nil, fmt.Errorf("postgres: list open turns: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list open turns: %w", err)
	}
	return out, nil
}
