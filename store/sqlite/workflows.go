package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// workflowArgs validates w's JSON fields and returns name .. published in
// column order.
func workflowArgs(w record.Workflow) ([]any, error) {
	if w.Name == "" {
		return nil, fmt.Errorf("sqlite: workflow %q: empty name", w.ID)
	}
	args := []any{w.Name, w.Description}
	for _, f := range []struct {
		name string
		raw  []byte
	}{{"input schema", w.InputSchema}, {"plan", w.Plan}, {"canvas", w.Canvas}} {
		// Validated, then stored as the very bytes given: the canvas must
		// come back exactly as the UI sent it.
		v, err := jsonText(fmt.Sprintf("workflow %q %s", w.ID, f.name), f.raw)
		if err != nil {
			return nil, err
		}
		args = append(args, v)
	}
	return append(args, boolInt(w.Published)), nil
}

// CreateWorkflow implements store.Workflows.
func (db *DB) CreateWorkflow(ctx context.Context, w record.Workflow) (record.Workflow, error) {
	if err := requireID("create workflow", w.ID); err != nil {
		return record.Workflow{}, err
	}
	args, err := workflowArgs(w)
	if err != nil {
		return record.Workflow{}, err
	}
	created, updated, err := createdUpdated(&w.CreatedAt, &w.UpdatedAt)
	if err != nil {
		return record.Workflow{}, err
	}
	args = append(append([]any{w.ID}, args...), created, updated)
	res, err := db.st.createWorkflow.ExecContext(ctx, args...)
	if err != nil {
		return record.Workflow{}, fmt.Errorf("sqlite: create workflow %q: %w", w.ID, err)
	}
	if err := affected(res, existsErr("workflow", w.ID)); err != nil {
		return record.Workflow{}, err
	}
	w.InputSchema, w.Plan, w.Canvas = cloneRaw(w.InputSchema), cloneRaw(w.Plan), cloneRaw(w.Canvas)
	w.Revision = 1
	return w, nil
}

// GetWorkflow implements store.Workflows.
func (db *DB) GetWorkflow(ctx context.Context, id string) (record.Workflow, error) {
	w, err := scanWorkflow(db.st.getWorkflow.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return record.Workflow{}, notFoundErr("workflow", id)
	}
	if err != nil {
		return record.Workflow{}, fmt.Errorf("sqlite: get workflow %q: %w", id, err)
	}
	return w, nil
}

// UpdateWorkflow implements store.Workflows. The revision check and the
// update are one statement; only when it changes nothing does a second
// look (in the same transaction) tell a missing workflow from a stale
// revision.
func (db *DB) UpdateWorkflow(ctx context.Context, w record.Workflow, expectRevision int) (record.Workflow, error) {
	args, err := workflowArgs(w)
	if err != nil {
		return record.Workflow{}, err
	}
	args = append(args, time.Now().UnixNano(), w.ID, max(expectRevision, 0))
	err = db.write(ctx, func(tx *sql.Tx) error {
		var created, updated int64
		err := tx.StmtContext(ctx, db.st.updateWorkflow).QueryRowContext(ctx, args...).Scan(&w.Revision, &created, &updated)
		if err == nil {
			w.CreatedAt, w.UpdatedAt = fromNanos(created), fromNanos(updated)
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: update workflow %q: %w", w.ID, err)
		}
		var current int
		err = tx.StmtContext(ctx, db.st.workflowRevision).QueryRowContext(ctx, w.ID).Scan(&current)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return notFoundErr("workflow", w.ID)
		case err != nil:
			return fmt.Errorf("sqlite: update workflow %q: %w", w.ID, err)
		}
		return fmt.Errorf("workflow %q is at revision %d, not %d: %w", w.ID, current, expectRevision, record.ErrConflict)
	})
	if err != nil {
		return record.Workflow{}, err
	}
	w.InputSchema, w.Plan, w.Canvas = cloneRaw(w.InputSchema), cloneRaw(w.Plan), cloneRaw(w.Canvas)
	return w, nil
}

// DeleteWorkflow implements store.Workflows.
func (db *DB) DeleteWorkflow(ctx context.Context, id string) error {
	res, err := db.st.deleteWorkflow.ExecContext(ctx, id)
	if err != nil {
		return fmt.Errorf("sqlite: delete workflow %q: %w", id, err)
	}
	return affected(res, notFoundErr("workflow", id))
}

// ListWorkflows implements store.Workflows.
func (db *DB) ListWorkflows(ctx context.Context, publishedOnly bool) ([]record.Workflow, error) {
	st := db.st.listWorkflows
	if publishedOnly {
		st = db.st.listPublishedWorkflows
	}
	rows, err := st.QueryContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list workflows: %w", err)
	}
	defer rows.Close()
	out := []record.Workflow{}
	for rows.Next() {
		w, err := scanWorkflow(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list workflows: %w", err)
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list workflows: %w", err)
	}
	return out, nil
}

func scanWorkflow(row scanner) (record.Workflow, error) {
	var (
		w                    record.Workflow
		schema, plan, canvas sql.NullString
		published            int
		created, updated     int64
	)
	if err := row.Scan(&w.ID, &w.Name, &w.Description, &schema, &plan, &canvas, &published, &w.Revision, &created, &updated); err != nil {
		return record.Workflow{}, err
	}
	w.InputSchema, w.Plan, w.Canvas = rawOrNil(schema), rawOrNil(plan), rawOrNil(canvas)
	w.Published = published != 0
	w.CreatedAt, w.UpdatedAt = fromNanos(created), fromNanos(updated)
	return w, nil
}

// scheduleArgs validates s and returns workflow_id .. last_error_at in the
// column order of updateSchedule.
func scheduleArgs(s record.Schedule) ([]any, error) {
	if s.WorkflowID == "" {
		return nil, fmt.Errorf("sqlite: schedule %q: empty workflow id", s.ID)
	}
	if s.IntervalSeconds < 0 || s.RunCount < 0 {
		return nil, fmt.Errorf("sqlite: schedule %q: negative interval or run count", s.ID)
	}
	inputs, err := jsonText(fmt.Sprintf("schedule %q inputs", s.ID), s.Inputs)
	if err != nil {
		return nil, err
	}
	args := []any{s.WorkflowID, inputs, s.IntervalSeconds, boolInt(s.Recurring), boolInt(s.Active)}
	for _, t := range []struct {
		name string
		t    time.Time
	}{{"next_run_at", s.NextRunAt}, {"expires_at", s.ExpiresAt}, {"last_run_at", s.LastRunAt}} {
		v, err := optNanos("schedule "+t.name, t.t)
		if err != nil {
			return nil, err
		}
		args = append(args, v)
	}
	errAt, err := optNanos("schedule last_error_at", s.LastErrorAt)
	if err != nil {
		return nil, err
	}
	return append(args, s.RunCount, s.LastTaskID, s.LastError, errAt), nil
}

// CreateSchedule implements store.Schedules.
func (db *DB) CreateSchedule(ctx context.Context, s record.Schedule) (record.Schedule, error) {
	if err := requireID("create schedule", s.ID); err != nil {
		return record.Schedule{}, err
	}
	a, err := scheduleArgs(s)
	if err != nil {
		return record.Schedule{}, err
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now()
	}
	created, err := nanos("schedule created_at", s.CreatedAt)
	if err != nil {
		return record.Schedule{}, err
	}
	// Column order: id, workflow_id .. active, next_run_at, expires_at,
	// created_at, last_run_at, run_count, last_task_id, last_error,
	// last_error_at.
	args := append([]any{s.ID}, a[:7]...)
	args = append(args, created)
	args = append(args, a[7:]...)
	res, err := db.st.createSchedule.ExecContext(ctx, args...)
	if err != nil {
		return record.Schedule{}, fmt.Errorf("sqlite: create schedule %q: %w", s.ID, err)
	}
	if err := affected(res, existsErr("schedule", s.ID)); err != nil {
		return record.Schedule{}, err
	}
	s.Inputs = cloneRaw(s.Inputs)
	s.CreatedAt = fromNanos(created)
	s.NextRunAt, s.ExpiresAt, s.LastRunAt = utcOrZero(s.NextRunAt), utcOrZero(s.ExpiresAt), utcOrZero(s.LastRunAt)
	s.LastErrorAt = utcOrZero(s.LastErrorAt)
	return s, nil
}

// utcOrZero is t as it will read back: UTC without a monotonic reading.
func utcOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return fromNanos(t.UnixNano())
}

// GetSchedule implements store.Schedules.
func (db *DB) GetSchedule(ctx context.Context, id string) (record.Schedule, error) {
	s, err := scanSchedule(db.st.getSchedule.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return record.Schedule{}, notFoundErr("schedule", id)
	}
	if err != nil {
		return record.Schedule{}, fmt.Errorf("sqlite: get schedule %q: %w", id, err)
	}
	return s, nil
}

// UpdateSchedule implements store.Schedules.
func (db *DB) UpdateSchedule(ctx context.Context, s record.Schedule) error {
	args, err := scheduleArgs(s)
	if err != nil {
		return err
	}
	res, err := db.st.updateSchedule.ExecContext(ctx, append(args, s.ID)...)
	if err != nil {
		return fmt.Errorf("sqlite: update schedule %q: %w", s.ID, err)
	}
	return affected(res, notFoundErr("schedule", s.ID))
}

// DeleteSchedule implements store.Schedules.
func (db *DB) DeleteSchedule(ctx context.Context, id string) error {
	res, err := db.st.deleteSchedule.ExecContext(ctx, id)
	if err != nil {
		return fmt.Errorf("sqlite: delete schedule %q: %w", id, err)
	}
	return affected(res, notFoundErr("schedule", id))
}

// ListSchedules implements store.Schedules. A zero NextRunAt (NULL) sorts
// first.
func (db *DB) ListSchedules(ctx context.Context, activeOnly bool) ([]record.Schedule, error) {
	st := db.st.listSchedules
	if activeOnly {
		st = db.st.listActiveSchedules
	}
	rows, err := st.QueryContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list schedules: %w", err)
	}
	defer rows.Close()
	out := []record.Schedule{}
	for rows.Next() {
		s, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list schedules: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list schedules: %w", err)
	}
	return out, nil
}

func scanSchedule(row scanner) (record.Schedule, error) {
	var (
		s                      record.Schedule
		inputs                 sql.NullString
		recurring, active      int
		next, expires, lastRun sql.NullInt64
		errAt                  sql.NullInt64
		created                int64
	)
	if err := row.Scan(&s.ID, &s.WorkflowID, &inputs, &s.IntervalSeconds, &recurring, &active,
		&next, &expires, &created, &lastRun, &s.RunCount, &s.LastTaskID, &s.LastError, &errAt); err != nil {
		return record.Schedule{}, err
	}
	s.Inputs = rawOrNil(inputs)
	s.Recurring, s.Active = recurring != 0, active != 0
	s.NextRunAt, s.ExpiresAt, s.LastRunAt = fromOptNanos(next), fromOptNanos(expires), fromOptNanos(lastRun)
	s.LastErrorAt = fromOptNanos(errAt)
	s.CreatedAt = fromNanos(created)
	return s, nil
}

var (
	_ store.Workflows = (*DB)(nil)
	_ store.Schedules = (*DB)(nil)
)
