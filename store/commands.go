package store

import (
	"context"
	"encoding/json"
	"time"
)

// Command is something a node asked of a session whose turns another node
// runs (a message, a permission answer, a cancel, a budget or elicitation
// answer): stored, so that it survives the node that accepted it, and
// consumed once by the node holding the session's lease, in id order.
type Command struct {
	ID        int64
	SessionID string
	Kind      string
	Data      json.RawMessage
	CreatedAt time.Time
	// Done is set once the session's owner consumed it; Result is what it
	// answered (kind-specific JSON).
	Done   bool
	Result json.RawMessage
}

// Commands is implemented by stores shared by several nodes
// (store/postgres): the commands nodes send each other about sessions,
// announced through the store's Notifier (kind "command" when one is
// added, "result" when one is done; Seq is the command's id).
type Commands interface {
	// AddCommand stores a command for the session (durable when it
	// returns) and announces it. record.ErrNotFound for an unknown
	// session.
	AddCommand(ctx context.Context, sessionID, kind string, data json.RawMessage) (int64, error)
	// PendingCommands returns the session's commands not yet done, by id.
	PendingCommands(ctx context.Context, sessionID string) ([]Command, error)
	// FinishCommand marks a command done with its result, once: false
	// when it was done already.
	FinishCommand(ctx context.Context, id int64, result json.RawMessage) (bool, error)
	// GetCommand returns a command; record.ErrNotFound when unknown.
	GetCommand(ctx context.Context, id int64) (Command, error)
	// PruneCommands deletes the commands done before before (their
	// senders have read their results long since), and says how many.
	PruneCommands(ctx context.Context, before time.Time) (int64, error)
	// OrphanSessions lists up to limit sessions with work and no live
	// holder of the lease named prefix+id: a turn started and not done, a
	// message accepted and not answered, or a command not done.
	OrphanSessions(ctx context.Context, prefix string, limit int) ([]string, error)
}

// SessionFence is implemented by stores shared by several nodes
// (store/postgres): FenceSessions makes the store refuse a session's
// event appends from this node while another holder holds the session's
// live lease (named prefix+id), so that a node that lost a lease without
// noticing yet writes nothing after the next holder began.
type SessionFence interface {
	FenceSessions(prefix, holder string)
}
