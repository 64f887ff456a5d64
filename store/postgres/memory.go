package postgres

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// AddMemory implements store.Memories. An assigned ID is random.
func (db *DB) AddMemory(ctx context.Context, m record.Memory) (record.Memory, error) {
	if m.Text == "" {
		return record.Memory{}, errors.New("postgres: add memory: empty text")
	}
	if m.ID == "" {
		m.ID = rand.Text()
	}
	var tags *string
	if len(m.Tags) > 0 {
		b, err := json.Marshal(m.Tags)
		if err != nil {
			return record.Memory{}, fmt.Errorf("postgres: add memory: %w", err)
		}
		s := string(b)
		tags = &s
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = now()
	}
	created, err := nanos("memory created_at", m.CreatedAt)
	if err != nil {
		return record.Memory{}, err
	}
	tag, err := db.pool.Exec(ctx, `INSERT INTO memories (id, user_id, text, tags, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`, m.ID, m.UserID, octets(m.Text), tags, created)
	if err != nil {
		return record.Memory{}, fmt.Errorf("postgres: add memory %q: %w", m.ID, err)
	}
	if err := affected(tag, existsErr("memory", m.ID)); err != nil {
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
	rows, err := db.pool.Query(ctx, `SELECT id, user_id, text, tags, created_at FROM memories
		WHERE user_id = $1 ORDER BY created_at DESC, pk DESC`, userID)
	if err != nil {
		return nil, fmt.Errorf("postgres: list memories of %q: %w", userID, err)
	}
	defer rows.Close()
	out := []record.Memory{}
	for rows.Next() {
		var (
			m       record.Memory
			tags    *string
			created int64
			text    []byte
		)
		if err := rows.Scan(&m.ID, &m.UserID, &text, &tags, &created); err != nil {
			return nil, fmt.Errorf("postgres: list memories of %q: %w", userID, err)
		}
		m.Text = string(text)
		if tags != nil {
			if err := json.Unmarshal([]byte(*tags), &m.Tags); err != nil {
				return nil, fmt.Errorf("postgres: memory %q tags: %w", m.ID, err)
			}
		}
		m.CreatedAt = fromNanos(created)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list memories of %q: %w", userID, err)
	}
	return out, nil
}

// DeleteMemory implements store.Memories.
func (db *DB) DeleteMemory(ctx context.Context, userID, id string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM memories WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return fmt.Errorf("postgres: delete memory %q: %w", id, err)
	}
	return affected(tag, notFoundErr("memory", id))
}

var _ store.Memories = (*DB)(nil)
