package store

import "context"

// Notification says that an event log reached Seq: its events up to Seq
// are committed and readable from the store, by any node. It carries no
// event: readers fetch from the store, so a notification is small and a
// missed one costs only latency.
type Notification struct {
	// Kind is "session" or "run" (an append: ID is the session's or
	// run's id), or, for store.Commands, "command" (a command was added)
	// or "result" (one was done): ID is then the session's id and Seq the
	// command's id.
	Kind string
	ID   string
	Seq  int64
	// Resync is set, with no Kind, ID or Seq, when notifications may have
	// been missed (the connection that receives them was lost and is back):
	// a reader re-reads every log it follows.
	Resync bool
}

// Notifier is implemented by stores shared by several nodes
// (store/postgres): every append, by any node, is announced once it is
// committed.
type Notifier interface {
	// Notifications delivers notifications until ctx ends, then closes the
	// channel. Several notifications of one log waiting for a slow reader
	// are merged into the latest.
	Notifications(ctx context.Context) (<-chan Notification, error)
}
