package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store/internal/keyset"
)

const (
	defaultListLimit = 50
	maxListLimit     = 500
)

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// nanos converts t to its stored form; what refuses is a time UnixNano
// cannot represent, which would otherwise be stored as garbage.
func nanos(what string, t time.Time) (int64, error) {
	if t.Before(minTime) || t.After(maxTime) {
		return 0, fmt.Errorf("sqlite: %s %s is outside the storable range (years 1678 to 2262)", what, t.Format(time.RFC3339))
	}
	return t.UnixNano(), nil
}

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// now is the store's clock, rounded to what it stores so that a value it
// returns equals the value it later reads back.
func now() time.Time { return fromNanos(time.Now().UnixNano()) }

// jsonText validates raw JSON for a nullable TEXT column: nil stays NULL.
func jsonText(what string, raw json.RawMessage) (any, error) {
	if raw == nil {
		return nil, nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("sqlite: %s is not valid JSON", what)
	}
	return string(raw), nil
}

func notFound(id string) error {
	return fmt.Errorf("session %q: %w", id, record.ErrNotFound)
}

// CreateSession implements store.Sessions.
func (db *DB) CreateSession(ctx context.Context, s record.Session) (record.Session, error) {
	if s.ID == "" {
		return record.Session{}, errors.New("sqlite: create session: empty id")
	}
	t := now()
	if s.CreatedAt.IsZero() {
		s.CreatedAt = t
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = s.CreatedAt
	}
	created, err := nanos("created_at", s.CreatedAt)
	if err != nil {
		return record.Session{}, err
	}
	updated, err := nanos("updated_at", s.UpdatedAt)
	if err != nil {
		return record.Session{}, err
	}
	meta, err := jsonText("session metadata", s.Metadata)
	if err != nil {
		return record.Session{}, err
	}
	res, err := db.st.createSession.ExecContext(ctx, s.ID, created, updated, s.Title, meta)
	if err != nil {
		return record.Session{}, fmt.Errorf("sqlite: create session %q: %w", s.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return record.Session{}, fmt.Errorf("sqlite: create session %q: %w", s.ID, err)
	} else if n == 0 {
		return record.Session{}, fmt.Errorf("session %q: %w", s.ID, record.ErrExists)
	}
	s.CreatedAt = fromNanos(created)
	s.UpdatedAt = fromNanos(updated)
	s.Metadata = cloneRaw(s.Metadata)
	s.MessageCount, s.LastSeq = 0, 0
	return s, nil
}

// GetSession implements store.Sessions.
func (db *DB) GetSession(ctx context.Context, id string) (record.Session, error) {
	s, err := scanSession(db.st.getSession.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return record.Session{}, notFound(id)
	}
	if err != nil {
		return record.Session{}, fmt.Errorf("sqlite: get session %q: %w", id, err)
	}
	return s, nil
}

// ListSessions implements store.Sessions.
func (db *DB) ListSessions(ctx context.Context, opt record.ListOptions) (record.SessionPage, error) {
	limit := opt.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	limit = min(limit, maxListLimit)

	var (
		rows *sql.Rows
		err  error
	)
	// One row more than asked tells whether there is a next page without
	// handing out a cursor to an empty one.
	if opt.Cursor == "" {
		rows, err = db.st.listFirst.QueryContext(ctx, limit+1)
	} else {
		c, cerr := decodeCursor(opt.Cursor)
		if cerr != nil {
			return record.SessionPage{}, cerr
		}
		rows, err = db.st.listAfter.QueryContext(ctx, c.CreatedAt, c.ID, limit+1)
	}
	if err != nil {
		return record.SessionPage{}, fmt.Errorf("sqlite: list sessions: %w", err)
	}
	defer rows.Close()
	page := record.SessionPage{Sessions: make([]record.Session, 0, min(limit, 64))}
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return record.SessionPage{}, fmt.Errorf("sqlite: list sessions: %w", err)
		}
		if len(page.Sessions) == limit {
			last := page.Sessions[limit-1]
			page.NextCursor = encodeCursor(keyset.After(last.CreatedAt, last.ID))
			break
		}
		page.Sessions = append(page.Sessions, s)
	}
	if err := rows.Err(); err != nil {
		return record.SessionPage{}, fmt.Errorf("sqlite: list sessions: %w", err)
	}
	return page, nil
}

// DeleteSession implements store.Sessions. Messages and events go with the
// session (ON DELETE CASCADE), in the same transaction.
func (db *DB) DeleteSession(ctx context.Context, id string) error {
	// In a transaction, so that no append runs between the delete and
	// forgetting the session's cached pk and seq (see seqCache).
	return db.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, db.st.deleteSession).ExecContext(ctx, id)
		if err != nil {
			return fmt.Errorf("sqlite: delete session %q: %w", id, err)
		}
		db.seqs.forget(&db.sessionEvents, id)
		return requireRow(res, id)
	})
}

// UpdateSession implements store.Sessions.
func (db *DB) UpdateSession(ctx context.Context, s record.Session) error {
	meta, err := jsonText("session metadata", s.Metadata)
	if err != nil {
		return err
	}
	res, err := db.st.updateSession.ExecContext(ctx, s.Title, meta, time.Now().UnixNano(), s.ID)
	if err != nil {
		return fmt.Errorf("sqlite: update session %q: %w", s.ID, err)
	}
	return requireRow(res, s.ID)
}

func requireRow(res sql.Result, id string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlite: session %q: %w", id, err)
	}
	if n == 0 {
		return notFound(id)
	}
	return nil
}

type scanner interface{ Scan(dest ...any) error }

func scanSession(row scanner) (record.Session, error) {
	var (
		s                record.Session
		created, updated int64
		meta             sql.NullString
	)
	if err := row.Scan(&s.ID, &created, &updated, &s.Title, &meta, &s.MessageCount, &s.LastSeq); err != nil {
		return record.Session{}, err
	}
	s.CreatedAt, s.UpdatedAt = fromNanos(created), fromNanos(updated)
	if meta.Valid {
		s.Metadata = json.RawMessage(meta.String)
	}
	return s, nil
}

// cloneRaw keeps a returned value from aliasing the caller's buffer, as a
// value read back from the database would not.
func cloneRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}
