package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// stmts are prepared once at Open: parsing and planning cost more than
// executing the small statements an append is made of.
type stmts struct {
	// Write path (the single write connection).
	createSession    *sql.Stmt
	updateSession    *sql.Stmt
	deleteSession    *sql.Stmt
	lastSeq          *sql.Stmt
	insertEvent      *sql.Stmt
	reservePositions *sql.Stmt
	resetMessages    *sql.Stmt
	deleteMessages   *sql.Stmt
	insertMessage    *sql.Stmt

	// Read path.
	getSession   *sql.Stmt
	listFirst    *sql.Stmt
	listAfter    *sql.Stmt
	readEvents   *sql.Stmt
	loadMessages *sql.Stmt

	all []*sql.Stmt
}

const sessionColumns = `id, created_at, updated_at, title, metadata, message_count,
	COALESCE((SELECT MAX(seq) FROM events WHERE session_pk = sessions.pk), 0)`

// touch keeps updated_at from going backwards when the wall clock does.
const touch = `updated_at = max(updated_at, ?)`

func (s *stmts) prepare(ctx context.Context, w, r *sql.DB) error {
	for _, p := range []struct {
		dst  **sql.Stmt
		db   *sql.DB
		text string
	}{
		{&s.createSession, w, `INSERT INTO sessions (id, created_at, updated_at, title, metadata)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`},
		{&s.updateSession, w, `UPDATE sessions SET title = ?, metadata = ?, ` + touch + ` WHERE id = ?`},
		{&s.deleteSession, w, `DELETE FROM sessions WHERE id = ?`},
		// Run under the write lock, so MAX(seq) cannot move before the
		// inserts that follow it commit.
		{&s.lastSeq, w, `SELECT pk, COALESCE((SELECT MAX(seq) FROM events WHERE session_pk = sessions.pk), 0)
			FROM sessions WHERE id = ?`},
		{&s.insertEvent, w, `INSERT INTO events (session_pk, seq, type, data, created_at) VALUES (?, ?, ?, ?, ?)`},
		{&s.reservePositions, w, `UPDATE sessions SET message_count = message_count + ?, ` + touch + `
			WHERE id = ? RETURNING pk, message_count`},
		{&s.resetMessages, w, `UPDATE sessions SET message_count = ?, ` + touch + ` WHERE id = ? RETURNING pk`},
		{&s.deleteMessages, w, `DELETE FROM messages WHERE session_pk = ?`},
		{&s.insertMessage, w, `INSERT INTO messages (session_pk, position, data) VALUES (?, ?, ?)`},

		{&s.getSession, r, `SELECT ` + sessionColumns + ` FROM sessions WHERE id = ?`},
		{&s.listFirst, r, `SELECT ` + sessionColumns + ` FROM sessions
			ORDER BY created_at DESC, id DESC LIMIT ?`},
		{&s.listAfter, r, `SELECT ` + sessionColumns + ` FROM sessions
			WHERE (created_at, id) < (?, ?) ORDER BY created_at DESC, id DESC LIMIT ?`},
		// The LEFT JOIN from sessions tells "no such session" (no row) from
		// "nothing new" (one row of NULLs) in one statement and one
		// snapshot: tailing readers mostly get the latter.
		{&s.readEvents, r, `SELECT e.seq, e.type, e.data, e.created_at FROM sessions s
			LEFT JOIN events e ON e.session_pk = s.pk AND e.seq > ?
			WHERE s.id = ? ORDER BY e.seq LIMIT ?`},
		{&s.loadMessages, r, `SELECT m.data FROM sessions s
			LEFT JOIN messages m ON m.session_pk = s.pk
			WHERE s.id = ? ORDER BY m.position`},
	} {
		st, err := p.db.PrepareContext(ctx, p.text)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", p.text, err)
		}
		*p.dst = st
		s.all = append(s.all, st)
	}
	return nil
}

func (s *stmts) close() error {
	var errs []error
	for _, st := range s.all {
		errs = append(errs, st.Close())
	}
	s.all = nil
	return errors.Join(errs...)
}
