package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// AppendUsage implements store.Usage. Records are checked before the write
// transaction starts.
func (db *DB) AppendUsage(ctx context.Context, recs ...record.UsageRecord) error {
	if len(recs) == 0 {
		return nil
	}
	rows := make([][]any, len(recs))
	t := now()
	for i, r := range recs {
		if err := r.Validate(); err != nil {
			return err
		}
		if r.Time.IsZero() {
			r.Time = t
		}
		at, err := nanos("usage time", r.Time)
		if err != nil {
			return err
		}
		rows[i] = []any{at, record.UsageDay(r.Time), r.SessionID, r.RunID, r.Provider, r.Model,
			r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens, r.CostUSD}
	}
	return db.write(ctx, func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO usage (at, day, session_id, run_id, provider, model,
			input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd) VALUES (?,?,?,?,?,?,?,?,?,?,?)`)
		if err != nil {
			return fmt.Errorf("sqlite: append usage: %w", err)
		}
		defer ins.Close()
		for _, r := range rows {
			if _, err := ins.ExecContext(ctx, r...); err != nil {
				return fmt.Errorf("sqlite: append usage: %w", err)
			}
		}
		return nil
	})
}

// usageColumn is the column of each grouping; the query is built from
// these constants only.
var usageColumn = map[string]string{
	record.UsageTotal:     "''",
	record.UsageByModel:   "model",
	record.UsageBySession: "session_id",
	record.UsageByDay:     "day",
}

// QueryUsage implements store.Usage.
func (db *DB) QueryUsage(ctx context.Context, q record.UsageQuery) ([]record.UsageGroup, error) {
	col, ok := usageColumn[q.GroupBy]
	if !ok {
		return nil, fmt.Errorf("%w: group_by %q: want model, session or day", record.ErrInvalidUsage, q.GroupBy)
	}
	var where []string
	var args []any
	if !q.Since.IsZero() {
		since, err := nanos("usage since", q.Since)
		if err != nil {
			if q.Since.After(maxTime) {
				return emptyUsage(q), nil
			}
		} else {
			where, args = append(where, "at >= ?"), append(args, since)
		}
	}
	if !q.Until.IsZero() {
		until, err := nanos("usage until", q.Until)
		if err != nil {
			if q.Until.Before(minTime) {
				return emptyUsage(q), nil
			}
		} else {
			where, args = append(where, "at < ?"), append(args, until)
		}
	}
	if q.SessionID != "" {
		where, args = append(where, "session_id = ?"), append(args, q.SessionID)
	}
	query := `SELECT ` + col + `, COUNT(*), COALESCE(SUM(input_tokens),0), COALESCE(SUM(output_tokens),0),
		COALESCE(SUM(cache_read_tokens),0), COALESCE(SUM(cache_write_tokens),0), COALESCE(SUM(cost_usd),0) FROM usage`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	if q.GroupBy != record.UsageTotal {
		query += " GROUP BY " + col + " ORDER BY " + col
	}
	rows, err := db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: query usage: %w", err)
	}
	defer rows.Close()
	out := []record.UsageGroup{}
	for rows.Next() {
		var g record.UsageGroup
		if err := rows.Scan(&g.Key, &g.Calls, &g.InputTokens, &g.OutputTokens, &g.CacheReadTokens, &g.CacheWriteTokens, &g.CostUSD); err != nil {
			return nil, fmt.Errorf("sqlite: query usage: %w", err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: query usage: %w", err)
	}
	return out, nil
}

// emptyUsage is what a query that can match nothing returns.
func emptyUsage(q record.UsageQuery) []record.UsageGroup {
	if q.GroupBy == record.UsageTotal {
		return []record.UsageGroup{{}}
	}
	return []record.UsageGroup{}
}

var _ store.Usage = (*DB)(nil)
