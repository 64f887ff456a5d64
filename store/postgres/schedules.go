package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/weft-run/weft/record"
)

// SwapSchedule replaces s as UpdateSchedule does, only if the stored
// schedule is still as the caller read it: active as prevActive, due at
// prevNextRunAt. It reports whether it did. Schedulers on several nodes
// claim a firing with it (schedule.Swapper): of two that read the same
// due slot, one moves NextRunAt on and fires, the other finds it moved
// and does not.
func (db *DB) SwapSchedule(ctx context.Context, s record.Schedule, prevNextRunAt time.Time, prevActive bool) (bool, error) {
	args, err := scheduleArgs(s)
	if err != nil {
		return false, err
	}
	prev, err := optNanos("schedule previous next_run_at", prevNextRunAt)
	if err != nil {
		return false, err
	}
	tag, err := db.pool.Exec(ctx, `UPDATE schedules SET workflow_id = $1, inputs = $2, interval_seconds = $3,
		recurring = $4, active = $5, next_run_at = $6, expires_at = $7, last_run_at = $8,
		run_count = $9, last_task_id = $10, last_error = $11, last_error_at = $12
		WHERE id = $13 AND next_run_at IS NOT DISTINCT FROM $14 AND active = $15`, append(args, s.ID, prev, prevActive)...)
	if err != nil {
		return false, fmt.Errorf("postgres: swap schedule %q: %w", s.ID, err)
	}
	return tag.RowsAffected() == 1, nil
}
