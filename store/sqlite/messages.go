package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/store"
)

// encodeMessages marshals before the write transaction starts, so that the
// single write connection is never held while JSON is built.
//
// HTML escaping is off so that what providers sent ("<", "&" in tool
// arguments) is stored as sent. json.RawMessage fields (tool input) come
// back compacted: whitespace between JSON tokens is not kept.
func encodeMessages(msgs []llm.Message) ([]string, error) {
	out := make([]string, len(msgs))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range msgs {
		buf.Reset()
		if err := enc.Encode(&msgs[i]); err != nil {
			return nil, fmt.Errorf("sqlite: encode message %d: %w", i, err)
		}
		out[i] = string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	return out, nil
}

// AppendMessages implements store.Messages.
func (db *DB) AppendMessages(ctx context.Context, sessionID string, msgs ...llm.Message) error {
	data, err := encodeMessages(msgs)
	if err != nil {
		return err
	}
	return db.write(ctx, func(tx *sql.Tx) error {
		var pk, count int64
		err := tx.StmtContext(ctx, db.st.reservePositions).QueryRowContext(ctx, len(data), now().UnixNano(), sessionID).Scan(&pk, &count)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(sessionID)
		}
		if err != nil {
			return fmt.Errorf("sqlite: append messages to %q: %w", sessionID, err)
		}
		ins := tx.StmtContext(ctx, db.st.insertMessage)
		first := count - int64(len(data))
		for i, d := range data {
			if _, err := ins.ExecContext(ctx, pk, first+int64(i), d); err != nil {
				return fmt.Errorf("sqlite: append messages to %q: %w", sessionID, err)
			}
		}
		return nil
	})
}

// ReplaceMessages implements store.Messages.
func (db *DB) ReplaceMessages(ctx context.Context, sessionID string, msgs []llm.Message) error {
	data, err := encodeMessages(msgs)
	if err != nil {
		return err
	}
	return db.write(ctx, func(tx *sql.Tx) error {
		var pk int64
		err := tx.StmtContext(ctx, db.st.resetMessages).QueryRowContext(ctx, len(data), now().UnixNano(), sessionID).Scan(&pk)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(sessionID)
		}
		if err != nil {
			return fmt.Errorf("sqlite: replace messages of %q: %w", sessionID, err)
		}
		if _, err := tx.StmtContext(ctx, db.st.deleteMessages).ExecContext(ctx, pk); err != nil {
			return fmt.Errorf("sqlite: replace messages of %q: %w", sessionID, err)
		}
		ins := tx.StmtContext(ctx, db.st.insertMessage)
		for i, d := range data {
			if _, err := ins.ExecContext(ctx, pk, i, d); err != nil {
				return fmt.Errorf("sqlite: replace messages of %q: %w", sessionID, err)
			}
		}
		return nil
	})
}

// LoadMessages implements store.Messages.
func (db *DB) LoadMessages(ctx context.Context, sessionID string) ([]llm.Message, error) {
	rows, err := db.st.loadMessages.QueryContext(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: load messages of %q: %w", sessionID, err)
	}
	defer rows.Close()
	var (
		msgs  []llm.Message
		found bool
	)
	for rows.Next() {
		found = true
		var data sql.RawBytes
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("sqlite: load messages of %q: %w", sessionID, err)
		}
		if data == nil {
			continue // the session's row with no messages joined
		}
		var m llm.Message
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("sqlite: load messages of %q: message %d: %w", sessionID, len(msgs), err)
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: load messages of %q: %w", sessionID, err)
	}
	if !found {
		return nil, notFound(sessionID)
	}
	return msgs, nil
}

// write runs fn in a transaction on the write connection. The DSN makes it
// BEGIN IMMEDIATE: the write lock is taken up front, so a transaction never
// fails halfway for want of upgrading a read lock.
func (db *DB) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	return nil
}

var _ store.Messages = (*DB)(nil)
