// Package store is weft's persistence contract: interfaces shaped by how
// the runtime uses them (sessions, their conversation, their event log;
// plan-and-execute runs with their step results and event log; saved
// workflows, schedules, memories and the audit trail), with an embedded
// SQLite implementation (store/sqlite) as the default. The conformance
// suite in store/storetest runs against every implementation.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/weft-run/weft/llm"
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
)

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

// Event is one appended event of a session. Seq is per session, strictly
// increasing from 1 with no gaps.
type Event struct {
	SessionID string          `json:"session_id"`
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
	CreatedAt time.Time       `json:"created_at"`
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

// Sessions stores session headers.
type Sessions interface {
	// CreateSession stores s; ErrExists when the id is taken. CreatedAt and
	// UpdatedAt are set by the store when zero.
	CreateSession(ctx context.Context, s Session) (Session, error)
	// GetSession returns the session with its message count and last seq.
	GetSession(ctx context.Context, id string) (Session, error)
	// ListSessions pages through sessions, newest first.
	ListSessions(ctx context.Context, opt ListOptions) (SessionPage, error)
	// DeleteSession removes a session with its messages and events.
	DeleteSession(ctx context.Context, id string) error
	// UpdateSession replaces Title and Metadata.
	UpdateSession(ctx context.Context, s Session) error
}

// Messages stores the conversation the model sees.
type Messages interface {
	// AppendMessages appends to the session's conversation; ErrNotFound for
	// an unknown session.
	AppendMessages(ctx context.Context, sessionID string, msgs ...llm.Message) error
	// ReplaceMessages swaps the whole conversation atomically (history
	// repair, compaction, /clear).
	ReplaceMessages(ctx context.Context, sessionID string, msgs []llm.Message) error
	// LoadMessages returns the conversation in order.
	LoadMessages(ctx context.Context, sessionID string) ([]llm.Message, error)
}

// Events stores a session's event log.
type Events interface {
	// AppendEvents stores events, assigning each the session's next seq
	// atomically (concurrent appenders never get the same seq), and returns
	// them with Seq and CreatedAt set. ErrNotFound for an unknown session.
	AppendEvents(ctx context.Context, sessionID string, events ...Event) ([]Event, error)
	// ReadEvents returns up to limit events with seq > after, in order.
	ReadEvents(ctx context.Context, sessionID string, after int64, limit int) ([]Event, error)
}

// Turn framing. A session's event log frames its turns with four event
// types, which the store understands so that the work a crash cut off can
// be found without reading event logs:
//   - user_message: a message accepted (its seq is the message's);
//   - message_consumed, data {"message_seq": N}: message N's turn started;
//   - message_dropped, data {"message_seq": N}: message N will never run;
//   - done: the running turn ended.
//
// Messages are started or dropped in the order of their seqs.
const (
	EventUserMessage     = "user_message"
	EventMessageConsumed = "message_consumed"
	EventMessageDropped  = "message_dropped"
	EventDone            = "done"
)

// OpenTurns is a session whose event log ends with work in progress: a
// message accepted and neither started nor dropped, or a turn started and
// not done.
type OpenTurns struct {
	SessionID string
	// Accepted is the seq of the session's last user_message event;
	// Answered the message_seq of its last message_consumed or
	// message_dropped (every message up to it was started or dropped);
	// Running the message_seq of a message_consumed no done followed, 0
	// when none. The messages in (Answered, Accepted] never started.
	Accepted, Answered, Running int64
}

// Turns finds the sessions a crash left with work in progress. A store
// keeps what it needs as events are appended (the turn framing above), so
// that finding them costs nothing like reading every event log.
type Turns interface {
	// ListOpenTurns returns every session with Accepted > Answered or
	// Running != 0, in no particular order.
	ListOpenTurns(ctx context.Context) ([]OpenTurns, error)
}

// EventBatch is one session's (or run's) events, for BatchEvents.
type EventBatch struct {
	SessionID string
	Events    []Event
}

// BatchEvents is implemented by event stores that store many sessions'
// events for about the price of one append (store/sqlite: one transaction
// instead of one per session). The event log's persister uses it when the
// store has it.
type BatchEvents interface {
	// AppendEventBatches appends each batch as AppendEvents would. out[i]
	// and errs[i] are batch i's stored events and error: one batch's
	// failure does not fail the others.
	AppendEventBatches(ctx context.Context, batches []EventBatch) (out [][]Event, errs []error)
}

// Store is everything the runtime persists.
type Store interface {
	Sessions
	Messages
	Events
	Turns
	Runs
	Workflows
	Schedules
	Memories
	Audits
	Usage
	Close() error
}
