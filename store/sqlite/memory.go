package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// AddMemory implements store.Memories. An assigned ID is random
// (crypto/rand.Text), so ids say nothing about the user or the order.
func (db *DB) AddMemory(ctx context.Context, m record.Memory) (record.Memory, error) {
	if m.Text == "" {
		return record.Memory{}, errors.New("sqlite: add memory: empty text")
	}
	if m.ID == "" {
		m.ID = rand.Text()
	}
	var tags any
	if len(m.Tags) > 0 {
		b, err := json.Marshal(m.Tags)
		if err != nil {
			return record.Memory{}, fmt.Errorf("sqlite: add memory: %w", err)
		}
		tags = string(b)
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = now()
	}
	created, err := nanos("memory created_at", m.CreatedAt)
	if err != nil {
		return record.Memory{}, err
	}
	res, err := db.st.addMemory.ExecContext(ctx, m.ID, m.UserID, m.Text, tags, created)
	if err != nil {
		return record.Memory{}, fmt.Errorf("sqlite: add memory %q: %w", m.ID, err)
	}
	if err := affected(res, existsErr("memory", m.ID)); err != nil {
		return record.Memory{}, err
	}
	m.CreatedAt = fromNanos(created)
	if len(m.Tags) == 0 {
		m.Tags = nil
	} else {
		m.Tags = append([]string(nil), m.Tags...)
	}
	return m, nil
}

// ListMemories implements store.Memories.
func (db *DB) ListMemories(ctx context.Context, userID string) ([]record.Memory, error) {
	rows, err := db.st.listMemories.QueryContext(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list memories of %q: %w", userID, err)
	}
	defer rows.Close()
	out := []record.Memory{}
	for rows.Next() {
		var (
			m       record.Memory
			tags    sql.NullString
			created int64
		)
		if err := rows.Scan(&m.ID, &m.UserID, &m.Text, &tags, &created); err != nil {
			return nil, fmt.Errorf("sqlite: list memories of %q: %w", userID, err)
		}
		if tags.Valid {
			if err := json.Unmarshal([]byte(tags.String), &m.Tags); err != nil {
				return nil, fmt.Errorf("sqlite: memory %q tags: %w", m.ID, err)
			}
		}
		m.CreatedAt = fromNanos(created)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list memories of %q: %w", userID, err)
	}
	return out, nil
}

// DeleteMemory implements store.Memories.
func (db *DB) DeleteMemory(ctx context.Context, userID, id string) error {
	res, err := db.st.deleteMemory.ExecContext(ctx, id, userID)
	if err != nil {
		return fmt.Errorf("sqlite: delete memory %q: %w", id, err)
	}
	return affected(res, notFoundErr("memory", id))
}

var _ store.Memories = (*DB)(nil)
