package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

const (
	defaultAuditLimit = 100
	maxAuditLimit     = 1000
)

// AppendAudit implements store.Audits. Entries are encoded before the
// write transaction starts, so the write connection is held only for the
// inserts.
func (db *DB) AppendAudit(ctx context.Context, entries ...record.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	rows := make([][]any, len(entries))
	t := now()
	for i, e := range entries {
		if e.Timestamp.IsZero() {
			e.Timestamp = t
		}
		ts, err := nanos("audit timestamp", e.Timestamp)
		if err != nil {
			return err
		}
		var extra any
		if len(e.Extra) > 0 {
			b, err := json.Marshal(e.Extra)
			if err != nil {
				return fmt.Errorf("sqlite: append audit: %w", err)
			}
			extra = string(b)
		}
		rows[i] = []any{e.SessionID, e.TurnNumber, ts, e.ToolName, e.Operation, e.Resource, e.ActorID, e.Outcome, e.Reason, extra}
	}
	return db.write(ctx, func(tx *sql.Tx) error {
		ins := tx.StmtContext(ctx, db.st.insertAudit)
		for _, r := range rows {
			if _, err := ins.ExecContext(ctx, r...); err != nil {
				return fmt.Errorf("sqlite: append audit: %w", err)
			}
		}
		return nil
	})
}

// ListAudit implements store.Audits.
func (db *DB) ListAudit(ctx context.Context, q record.AuditQuery) ([]record.AuditEntry, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultAuditLimit
	}
	limit = min(limit, maxAuditLimit)
	since := int64(math.MinInt64)
	if !q.Since.IsZero() {
		var err error
		if since, err = nanos("audit since", q.Since); err != nil {
			// Before or after every storable time: all or nothing.
			if q.Since.Before(minTime) {
				since = math.MinInt64
			} else {
				return []record.AuditEntry{}, nil
			}
		}
	}
	var (
		rows *sql.Rows
		err  error
	)
	switch {
	case q.SessionID != "":
		rows, err = db.st.listAuditOfSession.QueryContext(ctx, q.SessionID, q.AfterID, since, limit)
	case since != math.MinInt64:
		rows, err = db.st.listAuditSince.QueryContext(ctx, q.AfterID, since, limit)
	default:
		rows, err = db.st.listAuditAll.QueryContext(ctx, q.AfterID, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: list audit: %w", err)
	}
	defer rows.Close()
	out := []record.AuditEntry{}
	for rows.Next() {
		var (
			e     record.AuditEntry
			ts    int64
			extra sql.NullString
		)
		if err := rows.Scan(&e.ID, &e.SessionID, &e.TurnNumber, &ts, &e.ToolName, &e.Operation,
			&e.Resource, &e.ActorID, &e.Outcome, &e.Reason, &extra); err != nil {
			return nil, fmt.Errorf("sqlite: list audit: %w", err)
		}
		if extra.Valid {
			if err := json.Unmarshal([]byte(extra.String), &e.Extra); err != nil {
				return nil, fmt.Errorf("sqlite: audit entry %d extra: %w", e.ID, err)
			}
		}
		e.Timestamp = fromNanos(ts)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list audit: %w", err)
	}
	return out, nil
}

var _ store.Audits = (*DB)(nil)
