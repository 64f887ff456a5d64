-- Plan-and-execute runs. Like sessions, addressed by text id, referenced
-- by integer pk. search is lower(goal, summary, error) computed in Go
-- (SQLite's lower() and LIKE fold ASCII only), so that ?q= is one instr()
-- per row.
CREATE TABLE runs (
    pk          INTEGER PRIMARY KEY,
    id          TEXT    NOT NULL UNIQUE,
    goal        TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    plan        TEXT,
    config      TEXT,
    inputs      TEXT,
    files       TEXT,
    posture     TEXT,
    -- Not foreign keys: a run outlives the workflow it ran and the run it
    -- was forked from.
    workflow_id TEXT    NOT NULL DEFAULT '',
    parent_id   TEXT    NOT NULL DEFAULT '',
    batch_id    TEXT    NOT NULL DEFAULT '',
    summary     TEXT    NOT NULL DEFAULT '',
    error       TEXT    NOT NULL DEFAULT '',
    search      TEXT    NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL, -- unix nanoseconds, UTC
    updated_at  INTEGER NOT NULL
) STRICT;

CREATE INDEX runs_newest_first ON runs (created_at DESC, id DESC);
-- Start-up's InterruptRuns, and listing by status.
CREATE INDEX runs_by_status ON runs (status, created_at DESC, id DESC);

-- A rowid table: a step's result can be large (tool output).
CREATE TABLE run_steps (
    run_pk      INTEGER NOT NULL REFERENCES runs (pk) ON DELETE CASCADE,
    step_id     TEXT    NOT NULL,
    idx         INTEGER NOT NULL,
    status      TEXT    NOT NULL,
    result      TEXT,
    error       TEXT    NOT NULL DEFAULT '',
    started_at  INTEGER, -- NULL: not started
    finished_at INTEGER, -- NULL: not finished
    UNIQUE (run_pk, step_id)
) STRICT;

CREATE INDEX run_steps_by_index ON run_steps (run_pk, idx, step_id);

-- The runs' event log, shaped like events (see 0001) for the same reasons.
CREATE TABLE run_events (
    run_pk     INTEGER NOT NULL REFERENCES runs (pk) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    type       TEXT    NOT NULL,
    data       TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (run_pk, seq)
) STRICT, WITHOUT ROWID;

-- canvas is kept exactly as the UI sent it: TEXT, never re-encoded.
CREATE TABLE workflows (
    id           TEXT    PRIMARY KEY,
    name         TEXT    NOT NULL,
    description  TEXT    NOT NULL DEFAULT '',
    input_schema TEXT,
    plan         TEXT,
    canvas       TEXT,
    published    INTEGER NOT NULL DEFAULT 0,
    revision     INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX workflows_by_name ON workflows (name, id);
CREATE INDEX workflows_published_by_name ON workflows (name, id) WHERE published = 1;

-- Not tied to workflows by a foreign key: the runtime decides what a
-- schedule of a deleted workflow does.
CREATE TABLE schedules (
    id               TEXT    PRIMARY KEY,
    workflow_id      TEXT    NOT NULL,
    inputs           TEXT,
    interval_seconds INTEGER NOT NULL,
    recurring        INTEGER NOT NULL,
    active           INTEGER NOT NULL,
    next_run_at      INTEGER, -- NULL: zero time
    expires_at       INTEGER,
    created_at       INTEGER NOT NULL,
    last_run_at      INTEGER,
    run_count        INTEGER NOT NULL DEFAULT 0,
    last_task_id     TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX schedules_due ON schedules (next_run_at, id);
CREATE INDEX schedules_active_due ON schedules (next_run_at, id) WHERE active = 1;

CREATE TABLE memories (
    pk         INTEGER PRIMARY KEY,
    id         TEXT    NOT NULL UNIQUE,
    user_id    TEXT    NOT NULL,
    text       TEXT    NOT NULL,
    tags       TEXT, -- JSON array of strings, NULL when none
    created_at INTEGER NOT NULL
) STRICT;

CREATE INDEX memories_by_user ON memories (user_id, created_at DESC, pk DESC);

-- The audit trail is append-only and outlives sessions: no foreign key.
-- AUTOINCREMENT so that an id is never reused, even after the newest
-- entries are pruned: readers page by id.
CREATE TABLE audit (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT    NOT NULL,
    turn_number INTEGER NOT NULL,
    ts          INTEGER NOT NULL, -- unix nanoseconds, UTC
    tool_name   TEXT    NOT NULL,
    operation   TEXT    NOT NULL,
    resource    TEXT    NOT NULL DEFAULT '',
    actor_id    TEXT    NOT NULL DEFAULT '',
    outcome     TEXT    NOT NULL,
    reason      TEXT    NOT NULL DEFAULT '',
    extra       TEXT -- JSON object of strings, NULL when none
) STRICT;

CREATE INDEX audit_by_session ON audit (session_id, id);
CREATE INDEX audit_by_time ON audit (ts);
