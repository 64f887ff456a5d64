// Package record holds the records weft keeps: sessions, runs and their
// step results, workflows, schedules, memories and audit entries, with the
// errors every store and service shares. The services (session, run,
// schedule, memory, policy/audit) and the stores (store/sqlite,
// store/memstore) both import it, so that neither reaches the other for a
// type; it imports nothing of weft.
package record

import (
	"encoding/json"
	"errors"
	"time"
)

// Errors callers branch on (errors.Is).
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	// ErrConflict: an optimistic update lost the race (the stored revision
	// is not the one the caller read).
	ErrConflict = errors.New("conflict")
	// ErrInvalidCursor: a list cursor the store did not hand out. Callers
	// must not fall back to the first page: a client paging with a
	// corrupted cursor would silently see items twice.
	ErrInvalidCursor = errors.New("invalid list cursor")
	// ErrClosed: the service is shutting down and takes no new work.
	ErrClosed = errors.New("weft is shutting down")
	// ErrForbidden: a change the server's posture does not allow
	// (choosing bypass when the server was not started with it).
	ErrForbidden = errors.New("forbidden")
)

// InvalidError is a request a service refuses as malformed (a rule that
// does not parse, a plan that does not validate); front doors map it to
// a 400.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// Session is a stored conversation's header.
type Session struct {
	ID        string          `json:"session_id"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	Title     string          `json:"title,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"` // opaque to the store (model, workspace, ...)
	// MessageCount is the number of stored conversation messages.
	MessageCount int `json:"message_count"`
	// LastSeq is the highest event seq appended, 0 when none.
	LastSeq int64 `json:"last_seq"`
}

// ListOptions pages through sessions, newest first.
type ListOptions struct {
	Limit  int    // 0 means 50; at most 500
	Cursor string // from the previous page's NextCursor; "" for the first page
}

// SessionPage is one page of sessions.
type SessionPage struct {
	Sessions   []Session `json:"sessions"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// OpenTurns is a session whose event log ends with work in progress: a
// message accepted and neither started nor dropped, or a turn started and
// not done (the turn framing: see package event).
type OpenTurns struct {
	SessionID string
	// Accepted is the seq of the session's last user_message event;
	// Answered the message_seq of its last message_consumed or
	// message_dropped (every message up to it was started or dropped);
	// Running the message_seq of a message_consumed no done followed, 0
	// when none. The messages in (Answered, Accepted] never started.
	Accepted, Answered, Running int64
}

// Lease is a named piece of work held by one holder (a node) until
// ExpiresAt, by the store's clock. Epoch grows with every new holder, so
// that a holder that lost the lease and got it back is told apart.
type Lease struct {
	Name       string    `json:"name"`
	Holder     string    `json:"holder"`
	Epoch      int64     `json:"epoch"`
	AcquiredAt time.Time `json:"acquired_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}
