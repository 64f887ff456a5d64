package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/keyset"
)

// runSearch is what RunQuery.Q is matched against: goal, summary and error,
// lower-cased by Go because SQLite folds ASCII only. The separator keeps a
// query from matching across two fields.
func runSearch(r record.Run) string {
	return strings.ToLower(r.Goal + "\x00" + r.Summary + "\x00" + r.Error)
}

// runArgs validates r's mutable fields and returns them in the column order
// of createRun and updateRun (goal .. search).
func runArgs(r record.Run) ([]any, error) {
	if !record.ValidRunStatus(r.Status) {
		return nil, fmt.Errorf("sqlite: run %q: unknown status %q", r.ID, r.Status)
	}
	args := []any{r.Goal, r.Status}
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
	return append(args, r.WorkflowID, r.ParentID, r.BatchID, r.Summary, r.Error, runSearch(r)), nil
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
	res, err := db.st.createRun.ExecContext(ctx, args...)
	if err != nil {
		return record.Run{}, fmt.Errorf("sqlite: create run %q: %w", r.ID, err)
	}
	if err := affected(res, existsErr("run", r.ID)); err != nil {
		return record.Run{}, err
	}
	r.Plan, r.Config, r.Inputs = cloneRaw(r.Plan), cloneRaw(r.Config), cloneRaw(r.Inputs)
	r.Files, r.Posture = cloneRaw(r.Files), cloneRaw(r.Posture)
	r.LastSeq = 0
	return r, nil
}

// GetRun implements store.Runs.
func (db *DB) GetRun(ctx context.Context, id string) (record.Run, error) {
	r, err := scanRun(db.st.getRun.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return record.Run{}, notFoundErr("run", id)
	}
	if err != nil {
		return record.Run{}, fmt.Errorf("sqlite: get run %q: %w", id, err)
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
	res, err := db.st.updateRun.ExecContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("sqlite: update run %q: %w", r.ID, err)
	}
	return affected(res, notFoundErr("run", r.ID))
}

// ListRuns implements store.Runs.
func (db *DB) ListRuns(ctx context.Context, q record.RunQuery) (record.RunPage, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	limit = min(limit, maxListLimit)
	needle := strings.ToLower(q.Q)

	var (
		rows *sql.Rows
		err  error
	)
	// One row more than asked tells whether there is a next page.
	if q.Cursor == "" {
		rows, err = db.st.listRunsFirst.QueryContext(ctx, q.Status, needle, limit+1)
	} else {
		c, cerr := decodeCursor(q.Cursor)
		if cerr != nil {
			return record.RunPage{}, cerr
		}
		rows, err = db.st.listRunsAfter.QueryContext(ctx, q.Status, needle, limit+1, c.CreatedAt, c.ID)
	}
	if err != nil {
		return record.RunPage{}, fmt.Errorf("sqlite: list runs: %w", err)
	}
	defer rows.Close()
	page := record.RunPage{Runs: make([]record.Run, 0, min(limit, 64))}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return record.RunPage{}, fmt.Errorf("sqlite: list runs: %w", err)
		}
		if len(page.Runs) == limit {
			last := page.Runs[limit-1]
			page.NextCursor = encodeCursor(keyset.After(last.CreatedAt, last.ID))
			break
		}
		page.Runs = append(page.Runs, r)
	}
	if err := rows.Err(); err != nil {
		return record.RunPage{}, fmt.Errorf("sqlite: list runs: %w", err)
	}
	return page, nil
}

// DeleteRun implements store.Runs. Step results and events go with the run
// (ON DELETE CASCADE), in the same transaction.
func (db *DB) DeleteRun(ctx context.Context, id string) error {
	// In a transaction, so that no append runs between the delete and
	// forgetting the run's cached pk and seq (see seqCache).
	return db.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, db.st.deleteRun).ExecContext(ctx, id)
		if err != nil {
			return fmt.Errorf("sqlite: delete run %q: %w", id, err)
		}
		db.seqs.forget(&db.runEvents, id)
		return affected(res, notFoundErr("run", id))
	})
}

// InterruptRuns implements store.Runs.
func (db *DB) InterruptRuns(ctx context.Context) ([]string, error) {
	var ids []string
	err := db.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.StmtContext(ctx, db.st.interruptRuns).QueryContext(ctx, time.Now().UnixNano())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: interrupt runs: %w", err)
	}
	slices.Sort(ids)
	return ids, nil
}

// PutStepResult implements store.Runs.
func (db *DB) PutStepResult(ctx context.Context, s record.StepResult) error {
	if s.StepID == "" {
		return fmt.Errorf("sqlite: run %q: step result with an empty step id", s.RunID)
	}
	if !record.ValidStepStatus(s.Status) {
		return fmt.Errorf("sqlite: run %q step %q: unknown status %q", s.RunID, s.StepID, s.Status)
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
	res, err := db.st.putStep.ExecContext(ctx, s.StepID, s.Index, s.Status, result, s.Error, started, finished, s.RunID)
	if err != nil {
		return fmt.Errorf("sqlite: put step %q of run %q: %w", s.StepID, s.RunID, err)
	}
	return affected(res, notFoundErr("run", s.RunID))
}

// StepResults implements store.Runs.
func (db *DB) StepResults(ctx context.Context, runID string) ([]record.StepResult, error) {
	rows, err := db.st.stepResults.QueryContext(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: step results of run %q: %w", runID, err)
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
			return nil, fmt.Errorf("sqlite: step results of run %q: %w", runID, err)
		}
		if !ok {
			break // the run's row with no steps joined
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: step results of run %q: %w", runID, err)
	}
	if !found {
		return nil, notFoundErr("run", runID)
	}
	return out, nil
}

// DeleteStepResults implements store.Runs.
func (db *DB) DeleteStepResults(ctx context.Context, runID string, keep func(record.StepResult) bool) error {
	return db.write(ctx, func(tx *sql.Tx) error {
		var pk int64
		err := tx.StmtContext(ctx, db.st.runPK).QueryRowContext(ctx, runID).Scan(&pk)
		if errors.Is(err, sql.ErrNoRows) {
			return notFoundErr("run", runID)
		}
		if err != nil {
			return fmt.Errorf("sqlite: delete step results of run %q: %w", runID, err)
		}
		rows, err := tx.StmtContext(ctx, db.st.stepsOfPK).QueryContext(ctx, pk)
		if err != nil {
			return fmt.Errorf("sqlite: delete step results of run %q: %w", runID, err)
		}
		var drop []string
		for rows.Next() {
			s, _, err := scanStep(rows, runID)
			if err != nil {
				rows.Close()
				return fmt.Errorf("sqlite: delete step results of run %q: %w", runID, err)
			}
			if keep == nil || !keep(s) {
				drop = append(drop, s.StepID)
			}
		}
		// Closed before the deletes: the connection is the only one.
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("sqlite: delete step results of run %q: %w", runID, err)
		}
		del := tx.StmtContext(ctx, db.st.deleteStep)
		for _, id := range drop {
			if _, err := del.ExecContext(ctx, pk, id); err != nil {
				return fmt.Errorf("sqlite: delete step results of run %q: %w", runID, err)
			}
		}
		return nil
	})
}

func scanRun(row scanner) (record.Run, error) {
	var (
		r                                    record.Run
		plan, config, inputs, files, posture sql.NullString
		created, updated                     int64
	)
	if err := row.Scan(&r.ID, &r.Goal, &r.Status, &plan, &config, &inputs, &files, &posture,
		&r.WorkflowID, &r.ParentID, &r.BatchID, &r.Summary, &r.Error, &created, &updated, &r.LastSeq); err != nil {
		return record.Run{}, err
	}
	r.Plan, r.Config, r.Inputs, r.Files, r.Posture = rawOrNil(plan), rawOrNil(config), rawOrNil(inputs), rawOrNil(files), rawOrNil(posture)
	r.CreatedAt, r.UpdatedAt = fromNanos(created), fromNanos(updated)
	return r, nil
}

// scanStep reads a step row; ok is false for the all-NULL row of a LEFT
// JOIN that found no step.
func scanStep(row scanner, runID string) (s record.StepResult, ok bool, err error) {
	var (
		stepID, status, errText sql.NullString
		idx, started, finished  sql.NullInt64
		result                  sql.NullString
	)
	if err := row.Scan(&stepID, &idx, &status, &result, &errText, &started, &finished); err != nil {
		return record.StepResult{}, false, err
	}
	if !stepID.Valid {
		return record.StepResult{}, false, nil
	}
	return record.StepResult{
		RunID:      runID,
		StepID:     stepID.String,
		Index:      int(idx.Int64),
		Status:     status.String,
		Result:     rawOrNil(result),
		Error:      errText.String,
		StartedAt:  fromOptNanos(started),
		FinishedAt: fromOptNanos(finished),
	}, true, nil
}

var _ store.Runs = (*DB)(nil)
