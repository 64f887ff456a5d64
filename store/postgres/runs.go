package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/keyset"
)

const runColumns = `id, goal, status, plan, config, inputs, files, posture,
	workflow_id, parent_id, batch_id, summary, error, created_at, updated_at, last_seq`

const stepColumns = `step_id, idx, status, result, error, started_at, finished_at`

// runSearch is what RunQuery.Q is matched against: goal, summary and error,
// lower-cased by Go (Unicode folding, whatever the database's locale). The
// separator keeps a query from matching across two fields; it is not NUL,
// which PostgreSQL text cannot hold.
func runSearch(r record.Run) string {
	return strings.ToLower(r.Goal + "\x1f" + r.Summary + "\x1f" + r.Error)
}

// runArgs validates r's mutable fields and returns them in column order
// (goal .. search).
func runArgs(r record.Run) ([]any, error) {
	if !record.ValidRunStatus(r.Status) {
		return nil, fmt.Errorf("postgres: run %q: unknown status %q", r.ID, r.Status)
	}
	args := []any{octets(r.Goal), r.Status}
	for _, f := range []struct {
		name string
		raw  []byte
	}{{"plan", r.Plan}, {"config", r.Config}, {"inputs", r.Inputs}, {"files", r.Files}, {"posture", r.Posture}} {
		v, err := jsonText(fmt.Sprintf("run %q %s", r.ID, f.name), f.raw)
		if err != nil {
			return nil, err
		}
		args = append(args, v)
	}
	return append(args, r.WorkflowID, r.ParentID, r.BatchID, octets(r.Summary), octets(r.Error), octets(runSearch(r))), nil
}

// CreateRun implements store.Runs.
func (db *DB) CreateRun(ctx context.Context, r record.Run) (record.Run, error) {
	if err := requireID("create run", r.ID); err != nil {
		return record.Run{}, err
	}
	if r.Status == "" {
		r.Status = record.RunPlanning
	}
	args, err := runArgs(r)
	if err != nil {
		return record.Run{}, err
	}
	created, updated, err := createdUpdated(&r.CreatedAt, &r.UpdatedAt)
	if err != nil {
		return record.Run{}, err
	}
	args = append(append([]any{r.ID}, args...), created, updated)
	tag, err := db.pool.Exec(ctx, `INSERT INTO runs (id, goal, status, plan, config, inputs, files, posture,
		workflow_id, parent_id, batch_id, summary, error, search, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
		ON CONFLICT (id) DO NOTHING`, args...)
	if err != nil {
		return record.Run{}, fmt.Errorf("postgres: create run %q: %w", r.ID, err)
	}
	if err := affected(tag, existsErr("run", r.ID)); err != nil {
		return record.Run{}, err
	}
	r.Plan, r.Config, r.Inputs = cloneRaw(r.Plan), cloneRaw(r.Config), cloneRaw(r.Inputs)
	r.Files, r.Posture = cloneRaw(r.Files), cloneRaw(r.Posture)
	r.LastSeq = 0
	return r, nil
}

// GetRun implements store.Runs.
func (db *DB) GetRun(ctx context.Context, id string) (record.Run, error) {
	r, err := scanRun(db.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
	if noRows(err) {
		return record.Run{}, notFoundErr("run", id)
	}
	if err != nil {
		return record.Run{}, fmt.Errorf("postgres: get run %q: %w", id, err)
	}
	return r, nil
}

// UpdateRun implements store.Runs.
func (db *DB) UpdateRun(ctx context.Context, r record.Run) error {
	args, err := runArgs(r)
	if err != nil {
		return err
	}
	args = append(args, time.Now().UnixNano(), r.ID)
	tag, err := db.pool.Exec(ctx, `UPDATE runs SET goal = $1, status = $2, plan = $3, config = $4, inputs = $5,
		files = $6, posture = $7, workflow_id = $8, parent_id = $9, batch_id = $10, summary = $11,
		error = $12, search = $13, updated_at = GREATEST(updated_at, $14) WHERE id = $15`, args...)
	if err != nil {
		return fmt.Errorf("postgres: update run %q: %w", r.ID, err)
	}
	return affected(tag, notFoundErr("run", r.ID))
}

// ListRuns implements store.Runs.
func (db *DB) ListRuns(ctx context.Context, q record.RunQuery) (record.RunPage, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	limit = min(limit, maxListLimit)
	needle := octets(strings.ToLower(q.Q))
	var (
		rows pgx.Rows
		err  error
	)
	// The filters are parameters ('' = off) rather than statement variants.
	const filter = `($1 = '' OR status = $1) AND (octet_length($2::bytea) = 0 OR position($2::bytea IN search) > 0)`
	if q.Cursor == "" {
		rows, err = db.pool.Query(ctx, `SELECT `+runColumns+` FROM runs WHERE `+filter+`
			ORDER BY created_at DESC, id DESC LIMIT $3`, q.Status, needle, limit+1)
	} else {
		c, cerr := decodeCursor(q.Cursor)
		if cerr != nil {
			return record.RunPage{}, cerr
		}
		rows, err = db.pool.Query(ctx, `SELECT `+runColumns+` FROM runs WHERE `+filter+`
			AND (created_at, id) < ($4, $5) ORDER BY created_at DESC, id DESC LIMIT $3`,
			q.Status, needle, limit+1, c.CreatedAt, c.ID)
	}
	if err != nil {
		return record.RunPage{}, fmt.Errorf("postgres: list runs: %w", err)
	}
	defer rows.Close()
	page := record.RunPage{Runs: make([]record.Run, 0, min(limit, 64))}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return record.RunPage{}, fmt.Errorf("postgres: list runs: %w", err)
		}
		if len(page.Runs) == limit {
			last := page.Runs[limit-1]
			page.NextCursor = encodeCursor(keyset.After(last.CreatedAt, last.ID))
			break
		}
		page.Runs = append(page.Runs, r)
	}
	if err := rows.Err(); err != nil {
		return record.RunPage{}, fmt.Errorf("postgres: list runs: %w", err)
	}
	return page, nil
}

// DeleteRun implements store.Runs: step results and events go with it.
func (db *DB) DeleteRun(ctx context.Context, id string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM runs WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("postgres: delete run %q: %w", id, err)
	}
	return affected(tag, notFoundErr("run", id))
}

// InterruptRuns implements store.Runs. On a database shared by several
// nodes this also ends the runs other live nodes are running: call it only
// where a single server uses the database (docs/deploy.md).
func (db *DB) InterruptRuns(ctx context.Context) ([]string, error) {
	rows, err := db.pool.Query(ctx, `UPDATE runs SET status = 'interrupted', updated_at = GREATEST(updated_at, $1)
		WHERE status IN ('planning', 'awaiting_approval', 'running') RETURNING id`, time.Now().UnixNano())
	if err != nil {
		return nil, fmt.Errorf("postgres: interrupt runs: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: interrupt runs: %w", err)
	}
	slices.Sort(ids)
	return ids, nil
}

// PutStepResult implements store.Runs.
func (db *DB) PutStepResult(ctx context.Context, s record.StepResult) error {
	if s.StepID == "" {
		return fmt.Errorf("postgres: run %q: step result with an empty step id", s.RunID)
	}
	if !record.ValidStepStatus(s.Status) {
		return fmt.Errorf("postgres: run %q step %q: unknown status %q", s.RunID, s.StepID, s.Status)
	}
	result, err := jsonText(fmt.Sprintf("run %q step %q result", s.RunID, s.StepID), s.Result)
	if err != nil {
		return err
	}
	started, err := optNanos("step started_at", s.StartedAt)
	if err != nil {
		return err
	}
	finished, err := optNanos("step finished_at", s.FinishedAt)
	if err != nil {
		return err
	}
	tag, err := db.pool.Exec(ctx, `INSERT INTO run_steps (run_pk, step_id, idx, status, result, error, started_at, finished_at)
		SELECT pk, $1, $2, $3, $4, $5, $6, $7 FROM runs WHERE id = $8
		ON CONFLICT (run_pk, step_id) DO UPDATE SET idx = excluded.idx, status = excluded.status,
			result = excluded.result, error = excluded.error,
			started_at = excluded.started_at, finished_at = excluded.finished_at`,
		s.StepID, s.Index, s.Status, result, octets(s.Error), started, finished, s.RunID)
	if err != nil {
		return fmt.Errorf("postgres: put step %q of run %q: %w", s.StepID, s.RunID, err)
	}
	return affected(tag, notFoundErr("run", s.RunID))
}

// StepResults implements store.Runs.
func (db *DB) StepResults(ctx context.Context, runID string) ([]record.StepResult, error) {
	rows, err := db.pool.Query(ctx, `SELECT s.step_id, s.idx, s.status, s.result, s.error, s.started_at, s.finished_at
		FROM runs r LEFT JOIN run_steps s ON s.run_pk = r.pk
		WHERE r.id = $1 ORDER BY s.idx, s.step_id`, runID)
	if err != nil {
		return nil, fmt.Errorf("postgres: step results of run %q: %w", runID, err)
	}
	defer rows.Close()
	var (
		out   = []record.StepResult{}
		found bool
	)
	for rows.Next() {
		found = true
		s, ok, err := scanStep(rows, runID)
		if err != nil {
			return nil, fmt.Errorf("postgres: step results of run %q: %w", runID, err)
		}
		if !ok {
			break // the run's row with no steps joined
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: step results of run %q: %w", runID, err)
	}
	if !found {
		return nil, notFoundErr("run", runID)
	}
	return out, nil
}

// DeleteStepResults implements store.Runs. keep runs with the run's row
// locked (FOR UPDATE), which holds back step writes on every node: theirs
// check the run through a foreign key, which waits for that lock.
func (db *DB) DeleteStepResults(ctx context.Context, runID string, keep func(record.StepResult) bool) error {
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		var pk int64
		err := tx.QueryRow(ctx, `SELECT pk FROM runs WHERE id = $1 FOR UPDATE`, runID).Scan(&pk)
		if noRows(err) {
			return notFoundErr("run", runID)
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+stepColumns+` FROM run_steps WHERE run_pk = $1 ORDER BY idx, step_id`, pk)
		if err != nil {
			return err
		}
		var drop []string
		for rows.Next() {
			s, _, err := scanStep(rows, runID)
			if err != nil {
				rows.Close()
				return err
			}
			if keep == nil || !keep(s) {
				drop = append(drop, s.StepID)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(drop) == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `DELETE FROM run_steps WHERE run_pk = $1 AND step_id = ANY($2)`, pk, drop)
		return err
	})
	if err != nil && !errors.Is(err, record.ErrNotFound) {
		return fmt.Errorf("postgres: delete step results of run %q: %w", runID, err)
	}
	return err
}

func scanRun(row pgx.Row) (record.Run, error) {
	var (
		r                                    record.Run
		plan, config, inputs, files, posture *string
		created, updated                     int64
		goal, summary, errText               []byte
	)
	if err := row.Scan(&r.ID, &goal, &r.Status, &plan, &config, &inputs, &files, &posture,
		&r.WorkflowID, &r.ParentID, &r.BatchID, &summary, &errText, &created, &updated, &r.LastSeq); err != nil {
		return record.Run{}, err
	}
	r.Goal, r.Summary, r.Error = string(goal), string(summary), string(errText)
	r.Plan, r.Config, r.Inputs, r.Files, r.Posture = rawOrNil(plan), rawOrNil(config), rawOrNil(inputs), rawOrNil(files), rawOrNil(posture)
	r.CreatedAt, r.UpdatedAt = fromNanos(created), fromNanos(updated)
	return r, nil
}

// scanStep reads a step row; ok is false for the all-NULL row of a LEFT
// JOIN that found no step.
func scanStep(row pgx.Row, runID string) (s record.StepResult, ok bool, err error) {
	var (
		stepID, status, result *string
		errText                []byte
		idx, started, finished *int64
	)
	if err := row.Scan(&stepID, &idx, &status, &result, &errText, &started, &finished); err != nil {
		return record.StepResult{}, false, err
	}
	if stepID == nil {
		return record.StepResult{}, false, nil
	}
	return record.StepResult{
		RunID:      runID,
		StepID:     *stepID,
		Index:      int(*idx),
		Status:     *status,
		Result:     rawOrNil(result),
		Error:      string(errText),
		StartedAt:  fromOptNanos(started),
		FinishedAt: fromOptNanos(finished),
	}, true, nil
}

var _ store.Runs = (*DB)(nil)
