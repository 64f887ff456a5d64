package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/store"
)

var _ store.Nodes = (*DB)(nil)

// Heartbeat implements store.Nodes.
func (db *DB) Heartbeat(ctx context.Context, n store.Node, start bool) (store.Node, error) {
	if n.ID == "" {
		return store.Node{}, errors.New("postgres: heartbeat: empty node id")
	}
	out, err := scanNode(db.pool.QueryRow(ctx, `INSERT INTO nodes AS n (id, addr, version, started_at, heartbeat_at)
		VALUES ($1, $2, $3, clock_timestamp(), clock_timestamp())
		ON CONFLICT (id) DO UPDATE SET addr = excluded.addr, version = excluded.version,
			started_at = CASE WHEN $4 THEN excluded.started_at ELSE n.started_at END,
			heartbeat_at = excluded.heartbeat_at
		RETURNING id, addr, version, started_at, heartbeat_at`, n.ID, n.Addr, n.Version, start))
	if err != nil {
		return store.Node{}, fmt.Errorf("postgres: heartbeat of node %q: %w", n.ID, err)
	}
	return out, nil
}

// LeaveNode implements store.Nodes.
func (db *DB) LeaveNode(ctx context.Context, id string) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM nodes WHERE id = $1`, id); err != nil {
		return fmt.Errorf("postgres: node %q leaving: %w", id, err)
	}
	return nil
}

// ListNodes implements store.Nodes.
func (db *DB) ListNodes(ctx context.Context, alive time.Duration) ([]store.Node, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, addr, version, started_at, heartbeat_at FROM nodes
		WHERE heartbeat_at > clock_timestamp() - $1 * interval '1 microsecond' ORDER BY id`, alive.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("postgres: list nodes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Node, error) { return scanNode(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: list nodes: %w", err)
	}
	if out == nil {
		out = []store.Node{}
	}
	return out, nil
}

func scanNode(row pgx.Row) (store.Node, error) {
	var n store.Node
	if err := row.Scan(&n.ID, &n.Addr, &n.Version, &n.StartedAt, &n.HeartbeatAt); err != nil {
		return store.Node{}, err
	}
	n.StartedAt, n.HeartbeatAt = n.StartedAt.UTC(), n.HeartbeatAt.UTC()
	return n, nil
}
