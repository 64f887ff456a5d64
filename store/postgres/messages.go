package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/store"
)

// encodeMessages marshals with HTML escaping off, so that what providers
// sent is stored as sent (see store/sqlite).
func encodeMessages(msgs []llm.Message) ([]string, error) {
	out := make([]string, len(msgs))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range msgs {
		buf.Reset()
		if err := enc.Encode(&msgs[i]); err != nil {
			return nil, fmt.Errorf("postgres: encode message %d: %w", i, err)
		}
		out[i] = string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	return out, nil
}

// AppendMessages implements store.Messages: one statement reserves the
// positions on the session's row (its lock orders concurrent appenders,
// on any node) and inserts the messages after them.
func (db *DB) AppendMessages(ctx context.Context, sessionID string, msgs ...llm.Message) error {
	data, err := encodeMessages(msgs)
	if err != nil {
		return err
	}
	var pk int64
	err = db.pool.QueryRow(ctx, `WITH s AS (
			UPDATE sessions SET message_count = message_count + $1, updated_at = GREATEST(updated_at, $2)
			WHERE id = $3 RETURNING pk, message_count),
		ins AS (
			INSERT INTO messages (session_pk, position, data)
			SELECT s.pk, s.message_count - $1 + u.ord - 1, u.data
			FROM s, unnest($4::text[]) WITH ORDINALITY AS u(data, ord))
		SELECT pk FROM s`, len(data), now().UnixNano(), sessionID, data).Scan(&pk)
	if noRows(err) {
		return notFound(sessionID)
	}
	if err != nil {
		return fmt.Errorf("postgres: append messages to %q: %w", sessionID, err)
	}
	return nil
}

// ReplaceMessages implements store.Messages: three statements in one
// implicit transaction (one round trip).
func (db *DB) ReplaceMessages(ctx context.Context, sessionID string, msgs []llm.Message) error {
	data, err := encodeMessages(msgs)
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE sessions SET message_count = $1, updated_at = GREATEST(updated_at, $2)
		WHERE id = $3 RETURNING pk`, len(data), now().UnixNano(), sessionID)
	b.Queue(`DELETE FROM messages WHERE session_pk = (SELECT pk FROM sessions WHERE id = $1)`, sessionID)
	b.Queue(`INSERT INTO messages (session_pk, position, data)
		SELECT s.pk, u.ord - 1, u.data FROM sessions s, unnest($2::text[]) WITH ORDINALITY AS u(data, ord)
		WHERE s.id = $1`, sessionID, data)
	var found bool
	err = db.batch(ctx, b, func(br pgx.BatchResults) error {
		var pk int64
		err := br.QueryRow().Scan(&pk)
		if noRows(err) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		if _, err := br.Exec(); err != nil {
			return err
		}
		_, err = br.Exec()
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: replace messages of %q: %w", sessionID, err)
	}
	if !found {
		return notFound(sessionID)
	}
	return nil
}

// LoadMessages implements store.Messages.
func (db *DB) LoadMessages(ctx context.Context, sessionID string) ([]llm.Message, error) {
	rows, err := db.pool.Query(ctx, `SELECT m.data FROM sessions s
		LEFT JOIN messages m ON m.session_pk = s.pk
		WHERE s.id = $1 ORDER BY m.position`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("postgres: load messages of %q: %w", sessionID, err)
	}
	defer rows.Close()
	var (
		msgs  []llm.Message
		found bool
	)
	for rows.Next() {
		found = true
		var data *string
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("postgres: load messages of %q: %w", sessionID, err)
		}
		if data == nil {
			continue // the session's row with no messages joined
		}
		var m llm.Message
		if err := json.Unmarshal([]byte(*data), &m); err != nil {
			return nil, fmt.Errorf("postgres: load messages of %q: message %d: %w", sessionID, len(msgs), err)
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: load messages of %q: %w", sessionID, err)
	}
	if !found {
		return nil, notFound(sessionID)
	}
	return msgs, nil
}

var _ store.Messages = (*DB)(nil)
