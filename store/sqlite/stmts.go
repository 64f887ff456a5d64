package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// stmts are prepared once at Open: parsing and planning cost more than
// executing the small statements an append is made of.
type stmts struct {
	// Write path (the single write connection).
	createSession    *sql.Stmt
	updateSession    *sql.Stmt
	deleteSession    *sql.Stmt
	lastSeq          *sql.Stmt
	dataVersion      *sql.Stmt
	insertEvent      *sql.Stmt
	updateTurns      *sql.Stmt
	reservePositions *sql.Stmt
	resetMessages    *sql.Stmt
	deleteMessages   *sql.Stmt
	insertMessage    *sql.Stmt

	// Read path.
	getSession   *sql.Stmt
	listFirst    *sql.Stmt
	listAfter    *sql.Stmt
	readEvents   *sql.Stmt
	loadMessages *sql.Stmt
	openTurns    *sql.Stmt

	// Runs (runs.go).
	createRun      *sql.Stmt
	updateRun      *sql.Stmt
	deleteRun      *sql.Stmt
	interruptRuns  *sql.Stmt
	runLastSeq     *sql.Stmt
	insertRunEvent *sql.Stmt
	putStep        *sql.Stmt
	runPK          *sql.Stmt
	stepsOfPK      *sql.Stmt
	deleteStep     *sql.Stmt
	getRun         *sql.Stmt
	listRunsFirst  *sql.Stmt
	listRunsAfter  *sql.Stmt
	readRunEvents  *sql.Stmt
	stepResults    *sql.Stmt

	// Workflows and schedules (workflows.go).
	createWorkflow         *sql.Stmt
	updateWorkflow         *sql.Stmt
	workflowRevision       *sql.Stmt
	deleteWorkflow         *sql.Stmt
	getWorkflow            *sql.Stmt
	listWorkflows          *sql.Stmt
	listPublishedWorkflows *sql.Stmt
	createSchedule         *sql.Stmt
	updateSchedule         *sql.Stmt
	deleteSchedule         *sql.Stmt
	getSchedule            *sql.Stmt
	listSchedules          *sql.Stmt
	listActiveSchedules    *sql.Stmt

	// Memories (memory.go).
	addMemory    *sql.Stmt
	deleteMemory *sql.Stmt
	listMemories *sql.Stmt

	// Audit (audit.go).
	insertAudit        *sql.Stmt
	listAuditAll       *sql.Stmt
	listAuditSince     *sql.Stmt
	listAuditOfSession *sql.Stmt

	all []*sql.Stmt
}

const sessionColumns = `id, created_at, updated_at, title, metadata, message_count,
	COALESCE((SELECT MAX(seq) FROM events WHERE session_pk = sessions.pk), 0)`

const runColumns = `id, goal, status, plan, config, inputs, files, posture,
	workflow_id, parent_id, batch_id, summary, error, created_at, updated_at,
	COALESCE((SELECT MAX(seq) FROM run_events WHERE run_pk = runs.pk), 0)`

const stepColumns = `step_id, idx, status, result, error, started_at, finished_at`

const workflowColumns = `id, name, description, input_schema, plan, canvas, published, revision, created_at, updated_at`

const scheduleColumns = `id, workflow_id, inputs, interval_seconds, recurring, active,
	next_run_at, expires_at, created_at, last_run_at, run_count, last_task_id,
	last_error, last_error_at`

const auditColumns = `id, session_id, turn_number, ts, tool_name, operation, resource, actor_id, outcome, reason, extra`

// liveRuns are the statuses InterruptRuns ends.
const liveRuns = `('planning', 'awaiting_approval', 'running')`

// touch keeps updated_at from going backwards when the wall clock does.
const touch = `updated_at = max(updated_at, ?)`

func (s *stmts) prepare(ctx context.Context, w, r *sql.DB) error {
	for _, p := range []struct {
		dst  **sql.Stmt
		db   *sql.DB
		text string
	}{
		{&s.createSession, w, `INSERT INTO sessions (id, created_at, updated_at, title, metadata)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`},
		{&s.updateSession, w, `UPDATE sessions SET title = ?, metadata = ?, ` + touch + ` WHERE id = ?`},
		{&s.deleteSession, w, `DELETE FROM sessions WHERE id = ?`},
		// Run under the write lock, so MAX(seq) cannot move before the
		// inserts that follow it commit.
		{&s.lastSeq, w, `SELECT pk, COALESCE((SELECT MAX(seq) FROM events WHERE session_pk = sessions.pk), 0)
			FROM sessions WHERE id = ?`},
		// Changes when another connection (another process) commits: what
		// tells the seq cache (seqCache) that it may be stale.
		{&s.dataVersion, w, `PRAGMA data_version`},
		{&s.insertEvent, w, `INSERT INTO events (session_pk, seq, type, data, created_at) VALUES (?, ?, ?, ?, ?)`},
		// NULL leaves a column as it is (turns.go).
		{&s.updateTurns, w, `UPDATE sessions SET turn_accepted = COALESCE(?, turn_accepted),
			turn_answered = COALESCE(?, turn_answered), turn_running = COALESCE(?, turn_running) WHERE pk = ?`},
		{&s.reservePositions, w, `UPDATE sessions SET message_count = message_count + ?, ` + touch + `
			WHERE id = ? RETURNING pk, message_count`},
		{&s.resetMessages, w, `UPDATE sessions SET message_count = ?, ` + touch + ` WHERE id = ? RETURNING pk`},
		{&s.deleteMessages, w, `DELETE FROM messages WHERE session_pk = ?`},
		{&s.insertMessage, w, `INSERT INTO messages (session_pk, position, data) VALUES (?, ?, ?)`},

		{&s.getSession, r, `SELECT ` + sessionColumns + ` FROM sessions WHERE id = ?`},
		{&s.listFirst, r, `SELECT ` + sessionColumns + ` FROM sessions
			ORDER BY created_at DESC, id DESC LIMIT ?`},
		{&s.listAfter, r, `SELECT ` + sessionColumns + ` FROM sessions
			WHERE (created_at, id) < (?, ?) ORDER BY created_at DESC, id DESC LIMIT ?`},
		// The LEFT JOIN from sessions tells "no such session" (no row) from
		// "nothing new" (one row of NULLs) in one statement and one
		// snapshot: tailing readers mostly get the latter.
		{&s.readEvents, r, `SELECT e.seq, e.type, e.data, e.created_at FROM sessions s
			LEFT JOIN events e ON e.session_pk = s.pk AND e.seq > ?
			WHERE s.id = ? ORDER BY e.seq LIMIT ?`},
		{&s.openTurns, r, `SELECT id, turn_accepted, turn_answered, turn_running FROM sessions
			WHERE turn_accepted > turn_answered OR turn_running != 0`},
		{&s.loadMessages, r, `SELECT m.data FROM sessions s
			LEFT JOIN messages m ON m.session_pk = s.pk
			WHERE s.id = ? ORDER BY m.position`},

		{&s.createRun, w, `INSERT INTO runs (id, goal, status, plan, config, inputs, files, posture,
			workflow_id, parent_id, batch_id, summary, error, search, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`},
		{&s.updateRun, w, `UPDATE runs SET goal = ?, status = ?, plan = ?, config = ?, inputs = ?,
			files = ?, posture = ?, workflow_id = ?, parent_id = ?, batch_id = ?, summary = ?,
			error = ?, search = ?, ` + touch + ` WHERE id = ?`},
		{&s.deleteRun, w, `DELETE FROM runs WHERE id = ?`},
		{&s.interruptRuns, w, `UPDATE runs SET status = 'interrupted', ` + touch + `
			WHERE status IN ` + liveRuns + ` RETURNING id`},
		{&s.runLastSeq, w, `SELECT pk, COALESCE((SELECT MAX(seq) FROM run_events WHERE run_pk = runs.pk), 0)
			FROM runs WHERE id = ?`},
		{&s.insertRunEvent, w, `INSERT INTO run_events (run_pk, seq, type, data, created_at) VALUES (?, ?, ?, ?, ?)`},
		// One statement: no run, no row inserted (the WHERE also settles
		// SQLite's INSERT ... SELECT ... ON CONFLICT parsing ambiguity).
		{&s.putStep, w, `INSERT INTO run_steps (run_pk, step_id, idx, status, result, error, started_at, finished_at)
			SELECT pk, ?, ?, ?, ?, ?, ?, ? FROM runs WHERE id = ?
			ON CONFLICT (run_pk, step_id) DO UPDATE SET idx = excluded.idx, status = excluded.status,
				result = excluded.result, error = excluded.error,
				started_at = excluded.started_at, finished_at = excluded.finished_at`},
		{&s.runPK, w, `SELECT pk FROM runs WHERE id = ?`},
		{&s.stepsOfPK, w, `SELECT ` + stepColumns + ` FROM run_steps WHERE run_pk = ? ORDER BY idx, step_id`},
		{&s.deleteStep, w, `DELETE FROM run_steps WHERE run_pk = ? AND step_id = ?`},
		{&s.getRun, r, `SELECT ` + runColumns + ` FROM runs WHERE id = ?`},
		// The filters are parameters (''/0 = off) rather than statement
		// variants: the newest-first index drives the scan either way.
		{&s.listRunsFirst, r, `SELECT ` + runColumns + ` FROM runs
			WHERE (?1 = '' OR status = ?1) AND (?2 = '' OR instr(search, ?2) > 0)
			ORDER BY created_at DESC, id DESC LIMIT ?3`},
		{&s.listRunsAfter, r, `SELECT ` + runColumns + ` FROM runs
			WHERE (?1 = '' OR status = ?1) AND (?2 = '' OR instr(search, ?2) > 0)
				AND (created_at, id) < (?4, ?5)
			ORDER BY created_at DESC, id DESC LIMIT ?3`},
		{&s.readRunEvents, r, `SELECT e.seq, e.type, e.data, e.created_at FROM runs r
			LEFT JOIN run_events e ON e.run_pk = r.pk AND e.seq > ?
			WHERE r.id = ? ORDER BY e.seq LIMIT ?`},
		{&s.stepResults, r, `SELECT s.step_id, s.idx, s.status, s.result, s.error, s.started_at, s.finished_at
			FROM runs r LEFT JOIN run_steps s ON s.run_pk = r.pk
			WHERE r.id = ? ORDER BY s.idx, s.step_id`},

		{&s.createWorkflow, w, `INSERT INTO workflows (` + workflowColumns + `)
			VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT (id) DO NOTHING`},
		{&s.updateWorkflow, w, `UPDATE workflows SET name = ?1, description = ?2, input_schema = ?3,
			plan = ?4, canvas = ?5, published = ?6, revision = revision + 1,
			updated_at = max(updated_at, ?7)
			WHERE id = ?8 AND (?9 = 0 OR revision = ?9)
			RETURNING revision, created_at, updated_at`},
		{&s.workflowRevision, w, `SELECT revision FROM workflows WHERE id = ?`},
		{&s.deleteWorkflow, w, `DELETE FROM workflows WHERE id = ?`},
		{&s.getWorkflow, r, `SELECT ` + workflowColumns + ` FROM workflows WHERE id = ?`},
		{&s.listWorkflows, r, `SELECT ` + workflowColumns + ` FROM workflows ORDER BY name, id`},
		{&s.listPublishedWorkflows, r, `SELECT ` + workflowColumns + ` FROM workflows
			WHERE published = 1 ORDER BY name, id`},
		{&s.createSchedule, w, `INSERT INTO schedules (` + scheduleColumns + `)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`},
		{&s.updateSchedule, w, `UPDATE schedules SET workflow_id = ?, inputs = ?, interval_seconds = ?,
			recurring = ?, active = ?, next_run_at = ?, expires_at = ?, last_run_at = ?,
			run_count = ?, last_task_id = ?, last_error = ?, last_error_at = ? WHERE id = ?`},
		{&s.deleteSchedule, w, `DELETE FROM schedules WHERE id = ?`},
		{&s.getSchedule, r, `SELECT ` + scheduleColumns + ` FROM schedules WHERE id = ?`},
		{&s.listSchedules, r, `SELECT ` + scheduleColumns + ` FROM schedules ORDER BY next_run_at, id`},
		{&s.listActiveSchedules, r, `SELECT ` + scheduleColumns + ` FROM schedules
			WHERE active = 1 ORDER BY next_run_at, id`},

		{&s.addMemory, w, `INSERT INTO memories (id, user_id, text, tags, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`},
		{&s.deleteMemory, w, `DELETE FROM memories WHERE id = ? AND user_id = ?`},
		{&s.listMemories, r, `SELECT id, user_id, text, tags, created_at FROM memories
			WHERE user_id = ? ORDER BY created_at DESC, pk DESC`},

		{&s.insertAudit, w, `INSERT INTO audit (session_id, turn_number, ts, tool_name, operation,
			resource, actor_id, outcome, reason, extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&s.listAuditAll, r, `SELECT ` + auditColumns + ` FROM audit WHERE id > ? ORDER BY id LIMIT ?`},
		// Every entry since a time has an id at least the smallest such
		// entry's, so the id-ordered scan can start there (found on the
		// ts index) instead of at the oldest entry. Exact even when
		// timestamps do not follow ids. No entry since: max() is NULL and
		// nothing matches.
		{&s.listAuditSince, r, `SELECT ` + auditColumns + ` FROM audit
			WHERE id > max(?1, (SELECT MIN(id) FROM audit INDEXED BY audit_by_time WHERE ts >= ?2) - 1)
				AND ts >= ?2
			ORDER BY id LIMIT ?3`},
		{&s.listAuditOfSession, r, `SELECT ` + auditColumns + ` FROM audit
			WHERE session_id = ? AND id > ? AND ts >= ? ORDER BY id LIMIT ?`},
	} {
		st, err := p.db.PrepareContext(ctx, p.text)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", p.text, err)
		}
		*p.dst = st
		s.all = append(s.all, st)
	}
	return nil
}

func (s *stmts) close() error {
	var errs []error
	for _, st := range s.all {
		errs = append(errs, st.Close())
	}
	s.all = nil
	return errors.Join(errs...)
}
