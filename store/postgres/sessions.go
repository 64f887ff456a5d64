package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store/internal/keyset"
)

const sessionColumns = `id, created_at, updated_at, title, metadata, message_count, last_seq`

// CreateSession implements store.Sessions.
func (db *DB) CreateSession(ctx context.Context, s record.Session) (record.Session, error) {
	if s.ID == "" {
		return record.Session{}, errors.New("postgres: create session: empty id")
	}
	created, updated, err := createdUpdated(&s.CreatedAt, &s.UpdatedAt)
	if err != nil {
		return record.Session{}, err
	}
	meta, err := jsonText("session metadata", s.Metadata)
	if err != nil {
		return record.Session{}, err
	}
	tag, err := db.pool.Exec(ctx, `INSERT INTO sessions (id, created_at, updated_at, title, metadata)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`, s.ID, created, updated, octets(s.Title), meta)
	if err != nil {
		return record.Session{}, fmt.Errorf("postgres: create session %q: %w", s.ID, err)
	}
	if err := affected(tag, existsErr("session", s.ID)); err != nil {
		return record.Session{}, err
	}
	s.Metadata = cloneRaw(s.Metadata)
	s.MessageCount, s.LastSeq = 0, 0
	return s, nil
}

// GetSession implements store.Sessions.
func (db *DB) GetSession(ctx context.Context, id string) (record.Session, error) {
	s, err := scanSession(db.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1`, id))
	if noRows(err) {
		return record.Session{}, notFound(id)
	}
	if err != nil {
		return record.Session{}, fmt.Errorf("postgres: get session %q: %w", id, err)
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
		rows pgx.Rows
		err  error
	)
	// One row more than asked tells whether there is a next page.
	if opt.Cursor == "" {
		rows, err = db.pool.Query(ctx, `SELECT `+sessionColumns+` FROM sessions
			ORDER BY created_at DESC, id DESC LIMIT $1`, limit+1)
	} else {
		c, cerr := decodeCursor(opt.Cursor)
		if cerr != nil {
			return record.SessionPage{}, cerr
		}
		rows, err = db.pool.Query(ctx, `SELECT `+sessionColumns+` FROM sessions
			WHERE (created_at, id) < ($1, $2) ORDER BY created_at DESC, id DESC LIMIT $3`, c.CreatedAt, c.ID, limit+1)
	}
	if err != nil {
		return record.SessionPage{}, fmt.Errorf("postgres: list sessions: %w", err)
	}
	defer rows.Close()
	page := record.SessionPage{Sessions: make([]record.Session, 0, min(limit, 64))}
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return record.SessionPage{}, fmt.Errorf("postgres: list sessions: %w", err)
		}
		if len(page.Sessions) == limit {
			last := page.Sessions[limit-1]
			page.NextCursor = encodeCursor(keyset.After(last.CreatedAt, last.ID))
			break
		}
		page.Sessions = append(page.Sessions, s)
	}
	if err := rows.Err(); err != nil {
		return record.SessionPage{}, fmt.Errorf("postgres: list sessions: %w", err)
	}
	return page, nil
}

// DeleteSession implements store.Sessions: messages and events go with it
// (ON DELETE CASCADE). An append racing it either commits first or finds
// no session.
func (db *DB) DeleteSession(ctx context.Context, id string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM sessions WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("postgres: delete session %q: %w", id, err)
	}
	return affected(tag, notFound(id))
}

// UpdateSession implements store.Sessions. updated_at never goes backwards,
// even when this node's clock is behind the last writer's.
func (db *DB) UpdateSession(ctx context.Context, s record.Session) error {
	meta, err := jsonText("session metadata", s.Metadata)
	if err != nil {
		return err
	}
	tag, err := db.pool.Exec(ctx, `UPDATE sessions SET title = $1, metadata = $2,
		updated_at = GREATEST(updated_at, $3) WHERE id = $4`, octets(s.Title), meta, time.Now().UnixNano(), s.ID)
	if err != nil {
		return fmt.Errorf("postgres: update session %q: %w", s.ID, err)
	}
	return affected(tag, notFound(s.ID))
}

func scanSession(row pgx.Row) (record.Session, error) {
	var (
		s                record.Session
		created, updated int64
		meta             *string
		count            int64
		title            []byte
	)
	if err := row.Scan(&s.ID, &created, &updated, &title, &meta, &count, &s.LastSeq); err != nil {
		return record.Session{}, err
	}
	s.Title = string(title)
	s.CreatedAt, s.UpdatedAt = fromNanos(created), fromNanos(updated)
	s.Metadata = rawOrNil(meta)
	s.MessageCount = int(count)
	return s, nil
}
