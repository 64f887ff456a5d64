package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/weft-run/weft/store"
)

// framing records the turn framing of r's events (store.Turns) on the
// session's row, inside the append's transaction tx: one UPDATE for the
// few appends that carry a framing event, none for the rest (the text
// deltas that are most of the traffic).
func (l *eventLog) framing(ctx context.Context, tx *sql.Tx, pk int64, r *appendReq) error {
	var accepted, answered, running sql.NullInt64
	for _, e := range r.events {
		switch e.Type {
		case store.EventUserMessage:
			accepted = sql.NullInt64{Int64: e.Seq, Valid: true}
		case store.EventMessageConsumed, store.EventMessageDropped:
			var d struct {
				MessageSeq int64 `json:"message_seq"`
			}
			if json.Unmarshal(e.Data, &d) != nil || d.MessageSeq <= 0 {
				continue // not framing anything this store can use
			}
			answered = sql.NullInt64{Int64: d.MessageSeq, Valid: true}
			if e.Type == store.EventMessageConsumed {
				running = sql.NullInt64{Int64: d.MessageSeq, Valid: true}
			}
		case store.EventDone:
			running = sql.NullInt64{Int64: 0, Valid: true}
		}
	}
	if !accepted.Valid && !answered.Valid && !running.Valid {
		return nil
	}
	if _, err := tx.StmtContext(ctx, l.updateTurns).ExecContext(ctx, accepted, answered, running, pk); err != nil {
		return fmt.Errorf("sqlite: append events to %s %q: turn framing: %w", l.kind, r.sessionID, err)
	}
	return nil
}

// ListOpenTurns implements store.Turns.
func (db *DB) ListOpenTurns(ctx context.Context) ([]store.OpenTurns, error) {
	rows, err := db.st.openTurns.QueryContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list open turns: %w", err)
	}
	defer rows.Close()
	out := []store.OpenTurns{}
	for rows.Next() {
		var t store.OpenTurns
		if err := rows.Scan(&t.SessionID, &t.Accepted, &t.Answered, &t.Running); err != nil {
			return nil, fmt.Errorf("sqlite: list open turns: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list open turns: %w", err)
	}
	return out, nil
}
