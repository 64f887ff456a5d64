package store

import (
	"context"
	"time"
)

// Node is a `weft serve` process sharing the store with others, as it
// last reported itself.
type Node struct {
	ID      string `json:"id"`
	Addr    string `json:"addr,omitempty"`
	Version string `json:"version,omitempty"`
	// StartedAt is when the node started; HeartbeatAt its last heartbeat,
	// by the database's clock.
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
}

// Nodes is implemented by stores shared by several nodes
// (store/postgres): the registry of the nodes that run on them, so that
// an operator sees which are alive and what each holds (GET /v1/nodes).
type Nodes interface {
	// Heartbeat records n (ID required) as alive now, by the database's
	// clock, and returns it as stored. StartedAt becomes now at an id's
	// first heartbeat and when start is true (the process starting; a
	// node id may be reused by a restarted node), and stays otherwise.
	Heartbeat(ctx context.Context, n Node, start bool) (Node, error)
	// LeaveNode removes the node: it shut down and holds nothing.
	LeaveNode(ctx context.Context, id string) error
	// ListNodes returns the nodes whose last heartbeat is within alive of
	// now, by id.
	ListNodes(ctx context.Context, alive time.Duration) ([]Node, error)
}
