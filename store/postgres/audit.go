package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

const (
	defaultAuditLimit = 100
	maxAuditLimit     = 1000
)

// auditLock serialises audit appends ("weftaudt"). An identity column
// hands out ids when rows are inserted, not when they commit, so without
// it a reader paging by id could pass an id whose transaction commits a
// moment later and never see that entry.
const auditLock int64 = 0x7765_6674_6175_6474

// AppendAudit implements store.Audits: the lock and the inserts are one
// implicit transaction (one round trip).
func (db *DB) AppendAudit(ctx context.Context, entries ...record.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	var (
		sessions, ops, actors, outcomes []string
		tools, resources, reasons       [][]byte
		turns, stamps                   []int64
		extras                          []*string
	)
	t := now()
	for _, e := range entries {
		if e.Timestamp.IsZero() {
			e.Timestamp = t
		}
		ts, err := nanos("audit timestamp", e.Timestamp)
		if err != nil {
			return err
		}
		var extra *string
		if len(e.Extra) > 0 {
			b, err := json.Marshal(e.Extra)
			if err != nil {
				return fmt.Errorf("postgres: append audit: %w", err)
			}
			s := string(b)
			extra = &s
		}
		sessions, turns, stamps = append(sessions, e.SessionID), append(turns, int64(e.TurnNumber)), append(stamps, ts)
		tools, ops, resources = append(tools, octets(e.ToolName)), append(ops, e.Operation), append(resources, octets(e.Resource))
		actors, outcomes, reasons = append(actors, e.ActorID), append(outcomes, e.Outcome), append(reasons, octets(e.Reason))
		extras = append(extras, extra)
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_advisory_xact_lock($1)`, auditLock)
	b.Queue(`INSERT INTO audit (session_id, turn_number, ts, tool_name, operation, resource, actor_id, outcome, reason, extra)
		SELECT a, b, c, d, e, f, g, h, i, j FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bytea[], $5::text[], $6::bytea[],
			$7::text[], $8::text[], $9::bytea[], $10::text[]) WITH ORDINALITY AS u(a, b, c, d, e, f, g, h, i, j, ord)
		ORDER BY ord`, sessions, turns, stamps, tools, ops, resources, actors, outcomes, reasons, extras)
	err := db.batch(ctx, b, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		_, err := br.Exec()
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: append audit: %w", err)
	}
	return nil
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
	rows, err := db.pool.Query(ctx, `SELECT id, session_id, turn_number, ts, tool_name, operation, resource,
			actor_id, outcome, reason, extra FROM audit
		WHERE ($1 = '' OR session_id = $1) AND id > $2 AND ts >= $3 ORDER BY id LIMIT $4`,
		q.SessionID, q.AfterID, since, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: list audit: %w", err)
	}
	defer rows.Close()
	out := []record.AuditEntry{}
	for rows.Next() {
		var (
			e        record.AuditEntry
			ts, turn int64
			extra    *string
			tool     []byte
			res      []byte
			reason   []byte
		)
		if err := rows.Scan(&e.ID, &e.SessionID, &turn, &ts, &tool, &e.Operation,
			&res, &e.ActorID, &e.Outcome, &reason, &extra); err != nil {
			return nil, fmt.Errorf("postgres: list audit: %w", err)
		}
		e.ToolName, e.Resource, e.Reason = string(tool), string(res), string(reason)
		if extra != nil {
			if err := json.Unmarshal([]byte(*extra), &e.Extra); err != nil {
				return nil, fmt.Errorf("postgres: audit entry %d extra: %w", e.ID, err)
			}
		}
		e.TurnNumber = int(turn)
		e.Timestamp = fromNanos(ts)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list audit: %w", err)
	}
	return out, nil
}

var _ store.Audits = (*DB)(nil)
