-- A schedule records why its last firing failed (a workflow deleted or
-- unpublished since, inputs it no longer accepts), so GET /v1/schedules
-- shows it instead of only the server log.
ALTER TABLE schedules ADD COLUMN last_error TEXT NOT NULL DEFAULT '';
ALTER TABLE schedules ADD COLUMN last_error_at INTEGER; -- NULL: never failed
