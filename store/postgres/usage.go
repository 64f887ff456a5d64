package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// AppendUsage implements store.Usage: every record is checked first, then
// all are inserted in one statement (all or none).
func (db *DB) AppendUsage(ctx context.Context, recs ...record.UsageRecord) error {
	if len(recs) == 0 {
		return nil
	}
	var (
		ats, ins, outs, reads, writes []int64
		days                          []string
		sessions, runs, provs, models [][]byte
		costs                         []float64
	)
	t := now()
	for _, r := range recs {
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
		ats, days = append(ats, at), append(days, record.UsageDay(r.Time))
		sessions, runs = append(sessions, []byte(r.SessionID)), append(runs, []byte(r.RunID))
		provs, models = append(provs, []byte(r.Provider)), append(models, []byte(r.Model))
		ins, outs = append(ins, r.InputTokens), append(outs, r.OutputTokens)
		reads, writes, costs = append(reads, r.CacheReadTokens), append(writes, r.CacheWriteTokens), append(costs, r.CostUSD)
	}
	_, err := db.pool.Exec(ctx, `INSERT INTO usage (at, day, session_id, run_id, provider, model,
			input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd)
		SELECT a, b, c, d, e, f, g, h, i, j, k FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::bytea[], $5::bytea[],
			$6::bytea[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::float8[]) AS u(a, b, c, d, e, f, g, h, i, j, k)`,
		ats, days, sessions, runs, provs, models, ins, outs, reads, writes, costs)
	if err != nil {
		return fmt.Errorf("postgres: append usage: %w", err)
	}
	return nil
}

// usageColumn is the column of each grouping; the query is built from
// these constants only.
var usageColumn = map[string]string{
	record.UsageTotal:     "''::bytea",
	record.UsageByModel:   "model",
	record.UsageBySession: "session_id",
	record.UsageByDay:     "convert_to(day, 'UTF8')",
}

// QueryUsage implements store.Usage.
func (db *DB) QueryUsage(ctx context.Context, q record.UsageQuery) ([]record.UsageGroup, error) {
	col, ok := usageColumn[q.GroupBy]
	if !ok {
		return nil, fmt.Errorf("%w: group_by %q: want model, session or day", record.ErrInvalidUsage, q.GroupBy)
	}
	var where []string
	var args []any
	arg := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if !q.Since.IsZero() {
		since, err := nanos("usage since", q.Since)
		switch {
		case err == nil:
			arg("at >= ?", since)
		case q.Since.After(maxTime):
			return emptyUsage(q), nil
		}
	}
	if !q.Until.IsZero() {
		until, err := nanos("usage until", q.Until)
		switch {
		case err == nil:
			arg("at < ?", until)
		case q.Until.Before(minTime):
			return emptyUsage(q), nil
		}
	}
	if q.SessionID != "" {
		arg("session_id = ?", []byte(q.SessionID))
	}
	query := `SELECT ` + col + `, COUNT(*), COALESCE(SUM(input_tokens),0)::bigint, COALESCE(SUM(output_tokens),0)::bigint,
		COALESCE(SUM(cache_read_tokens),0)::bigint, COALESCE(SUM(cache_write_tokens),0)::bigint, COALESCE(SUM(cost_usd),0) FROM usage`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	if q.GroupBy != record.UsageTotal {
		query += " GROUP BY 1 ORDER BY 1"
	}
	rows, err := db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: query usage: %w", err)
	}
	defer rows.Close()
	out := []record.UsageGroup{}
	for rows.Next() {
		var (
			g   record.UsageGroup
			key []byte
		)
		if err := rows.Scan(&key, &g.Calls, &g.InputTokens, &g.OutputTokens, &g.CacheReadTokens, &g.CacheWriteTokens, &g.CostUSD); err != nil {
			return nil, fmt.Errorf("postgres: query usage: %w", err)
		}
		g.Key = string(key)
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: query usage: %w", err)
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
