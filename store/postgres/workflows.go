package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

const workflowColumns = `id, name, description, input_schema, plan, canvas, published, revision, created_at, updated_at`

const scheduleColumns = `id, workflow_id, inputs, interval_seconds, recurring, active,
	next_run_at, expires_at, created_at, last_run_at, run_count, last_task_id,
	last_error, last_error_at`

// workflowArgs validates w and returns name .. published in column order.
func workflowArgs(w record.Workflow) ([]any, error) {
	if w.Name == "" {
		return nil, fmt.Errorf("postgres: workflow %q: empty name", w.ID)
	}
	args := []any{w.Name, w.Description}
	for _, f := range []struct {
		name string
		raw  []byte
	}{{"input schema", w.InputSchema}, {"plan", w.Plan}, {"canvas", w.Canvas}} {
		// Validated, then stored as the very bytes given.
		v, err := jsonText(fmt.Sprintf("workflow %q %s", w.ID, f.name), f.raw)
		if err != nil {
			return nil, err
		}
		args = append(args, v)
	}
	return append(args, w.Published), nil
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
	tag, err := db.pool.Exec(ctx, `INSERT INTO workflows (`+workflowColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $9) ON CONFLICT (id) DO NOTHING`, args...)
	if err != nil {
		return record.Workflow{}, fmt.Errorf("postgres: create workflow %q: %w", w.ID, err)
	}
	if err := affected(tag, existsErr("workflow", w.ID)); err != nil {
		return record.Workflow{}, err
	}
	w.InputSchema, w.Plan, w.Canvas = cloneRaw(w.InputSchema), cloneRaw(w.Plan), cloneRaw(w.Canvas)
	w.Revision = 1
	return w, nil
}

// GetWorkflow implements store.Workflows.
func (db *DB) GetWorkflow(ctx context.Context, id string) (record.Workflow, error) {
	w, err := scanWorkflow(db.pool.QueryRow(ctx, `SELECT `+workflowColumns+` FROM workflows WHERE id = $1`, id))
	if noRows(err) {
		return record.Workflow{}, notFoundErr("workflow", id)
	}
	if err != nil {
		return record.Workflow{}, fmt.Errorf("postgres: get workflow %q: %w", id, err)
	}
	return w, nil
}

// UpdateWorkflow implements store.Workflows. The revision check and the
// update are one statement (the row lock makes it atomic across nodes);
// only when it changes nothing does a second read tell a missing workflow
// from a stale revision.
func (db *DB) UpdateWorkflow(ctx context.Context, w record.Workflow, expectRevision int) (record.Workflow, error) {
	args, err := workflowArgs(w)
	if err != nil {
		return record.Workflow{}, err
	}
	args = append(args, time.Now().UnixNano(), w.ID, max(expectRevision, 0))
	var created, updated int64
	err = db.pool.QueryRow(ctx, `UPDATE workflows SET name = $1, description = $2, input_schema = $3,
		plan = $4, canvas = $5, published = $6, revision = revision + 1,
		updated_at = GREATEST(updated_at, $7)
		WHERE id = $8 AND ($9::bigint = 0 OR revision = $9::bigint)
		RETURNING revision, created_at, updated_at`, args...).Scan(&w.Revision, &created, &updated)
	switch {
	case err == nil:
		w.CreatedAt, w.UpdatedAt = fromNanos(created), fromNanos(updated)
		w.InputSchema, w.Plan, w.Canvas = cloneRaw(w.InputSchema), cloneRaw(w.Plan), cloneRaw(w.Canvas)
		return w, nil
	case !noRows(err):
		return record.Workflow{}, fmt.Errorf("postgres: update workflow %q: %w", w.ID, err)
	}
	var current int
	err = db.pool.QueryRow(ctx, `SELECT revision FROM workflows WHERE id = $1`, w.ID).Scan(&current)
	switch {
	case noRows(err):
		return record.Workflow{}, notFoundErr("workflow", w.ID)
	case err != nil:
		return record.Workflow{}, fmt.Errorf("postgres: update workflow %q: %w", w.ID, err)
	}
	return record.Workflow{}, fmt.Errorf("workflow %q is at revision %d, not %d: %w", w.ID, current, expectRevision, record.ErrConflict)
}

// DeleteWorkflow implements store.Workflows.
func (db *DB) DeleteWorkflow(ctx context.Context, id string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM workflows WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("postgres: delete workflow %q: %w", id, err)
	}
	return affected(tag, notFoundErr("workflow", id))
}

// ListWorkflows implements store.Workflows.
func (db *DB) ListWorkflows(ctx context.Context, publishedOnly bool) ([]record.Workflow, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+workflowColumns+` FROM workflows
		WHERE published OR NOT $1 ORDER BY name, id`, publishedOnly)
	if err != nil {
		return nil, fmt.Errorf("postgres: list workflows: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (record.Workflow, error) { return scanWorkflow(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: list workflows: %w", err)
	}
	if out == nil {
		out = []record.Workflow{}
	}
	return out, nil
}

func scanWorkflow(row pgx.Row) (record.Workflow, error) {
	var (
		w                    record.Workflow
		schema, plan, canvas *string
		created, updated     int64
		rev                  int64
	)
	if err := row.Scan(&w.ID, &w.Name, &w.Description, &schema, &plan, &canvas, &w.Published, &rev, &created, &updated); err != nil {
		return record.Workflow{}, err
	}
	w.Revision = int(rev)
	w.InputSchema, w.Plan, w.Canvas = rawOrNil(schema), rawOrNil(plan), rawOrNil(canvas)
	w.CreatedAt, w.UpdatedAt = fromNanos(created), fromNanos(updated)
	return w, nil
}

// scheduleArgs validates s and returns workflow_id .. last_error_at in the
// column order of the update.
func scheduleArgs(s record.Schedule) ([]any, error) {
	if s.WorkflowID == "" {
		return nil, fmt.Errorf("postgres: schedule %q: empty workflow id", s.ID)
	}
	if s.IntervalSeconds < 0 || s.RunCount < 0 {
		return nil, fmt.Errorf("postgres: schedule %q: negative interval or run count", s.ID)
	}
	inputs, err := jsonText(fmt.Sprintf("schedule %q inputs", s.ID), s.Inputs)
	if err != nil {
		return nil, err
	}
	args := []any{s.WorkflowID, inputs, s.IntervalSeconds, s.Recurring, s.Active}
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
	return append(args, s.RunCount, s.LastTaskID, octets(s.LastError), errAt), nil
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
	// Column order: id, workflow_id .. expires_at, created_at, last_run_at ..
	args := append([]any{s.ID}, a[:7]...)
	args = append(args, created)
	args = append(args, a[7:]...)
	tag, err := db.pool.Exec(ctx, `INSERT INTO schedules (`+scheduleColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (id) DO NOTHING`, args...)
	if err != nil {
		return record.Schedule{}, fmt.Errorf("postgres: create schedule %q: %w", s.ID, err)
	}
	if err := affected(tag, existsErr("schedule", s.ID)); err != nil {
		return record.Schedule{}, err
	}
	s.Inputs = cloneRaw(s.Inputs)
	s.CreatedAt = fromNanos(created)
	s.NextRunAt, s.ExpiresAt, s.LastRunAt = utcOrZero(s.NextRunAt), utcOrZero(s.ExpiresAt), utcOrZero(s.LastRunAt)
	s.LastErrorAt = utcOrZero(s.LastErrorAt)
	return s, nil
}

// GetSchedule implements store.Schedules.
func (db *DB) GetSchedule(ctx context.Context, id string) (record.Schedule, error) {
	s, err := scanSchedule(db.pool.QueryRow(ctx, `SELECT `+scheduleColumns+` FROM schedules WHERE id = $1`, id))
	if noRows(err) {
		return record.Schedule{}, notFoundErr("schedule", id)
	}
	if err != nil {
		return record.Schedule{}, fmt.Errorf("postgres: get schedule %q: %w", id, err)
	}
	return s, nil
}

// UpdateSchedule implements store.Schedules.
func (db *DB) UpdateSchedule(ctx context.Context, s record.Schedule) error {
	args, err := scheduleArgs(s)
	if err != nil {
		return err
	}
	tag, err := db.pool.Exec(ctx, `UPDATE schedules SET workflow_id = $1, inputs = $2, interval_seconds = $3,
		recurring = $4, active = $5, next_run_at = $6, expires_at = $7, last_run_at = $8,
		run_count = $9, last_task_id = $10, last_error = $11, last_error_at = $12 WHERE id = $13`, append(args, s.ID)...)
	if err != nil {
		return fmt.Errorf("postgres: update schedule %q: %w", s.ID, err)
	}
	return affected(tag, notFoundErr("schedule", s.ID))
}

// DeleteSchedule implements store.Schedules.
func (db *DB) DeleteSchedule(ctx context.Context, id string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM schedules WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("postgres: delete schedule %q: %w", id, err)
	}
	return affected(tag, notFoundErr("schedule", id))
}

// ListSchedules implements store.Schedules. A zero NextRunAt (NULL) sorts
// first, as on SQLite.
func (db *DB) ListSchedules(ctx context.Context, activeOnly bool) ([]record.Schedule, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+scheduleColumns+` FROM schedules
		WHERE active OR NOT $1 ORDER BY next_run_at NULLS FIRST, id`, activeOnly)
	if err != nil {
		return nil, fmt.Errorf("postgres: list schedules: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (record.Schedule, error) { return scanSchedule(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: list schedules: %w", err)
	}
	if out == nil {
		out = []record.Schedule{}
	}
	return out, nil
}

func scanSchedule(row pgx.Row) (record.Schedule, error) {
	var (
		s                             record.Schedule
		inputs                        *string
		next, expires, lastRun, errAt *int64
		created, interval, count      int64
		lastErr                       []byte
	)
	if err := row.Scan(&s.ID, &s.WorkflowID, &inputs, &interval, &s.Recurring, &s.Active,
		&next, &expires, &created, &lastRun, &count, &s.LastTaskID, &lastErr, &errAt); err != nil {
		return record.Schedule{}, err
	}
	s.LastError = string(lastErr)
	s.IntervalSeconds, s.RunCount = int(interval), int(count)
	s.Inputs = rawOrNil(inputs)
	s.NextRunAt, s.ExpiresAt, s.LastRunAt = fromOptNanos(next), fromOptNanos(expires), fromOptNanos(lastRun)
	s.LastErrorAt = fromOptNanos(errAt)
	s.CreatedAt = fromNanos(created)
	return s, nil
}

var (
	_ store.Workflows = (*DB)(nil)
	_ store.Schedules = (*DB)(nil)
)
