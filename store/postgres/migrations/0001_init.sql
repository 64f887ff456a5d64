-- weft's schema on PostgreSQL: the tables of store/sqlite's migrations
-- 0001-0004 in one step, with two differences that make several nodes
-- safe on one database:
--   * sessions and runs carry last_seq, which an append advances in the
--     statement that inserts its events: the row lock it takes serialises
--     appenders on every node, and seqs are assigned in commit order;
--   * audit ids come from an identity column, and appends take an
--     advisory lock so that ids are also in commit order (readers page by
--     id and must never skip an entry committed late with a low id).
-- Times are unix nanoseconds (UTC) as in store/sqlite, so they round-trip
-- exactly. Ids and names sort in byte order (COLLATE "C") whatever the
-- database's locale. JSON is text, byte for byte (jsonb would normalise).
-- Free text that models, tools and users write (titles, goals, summaries,
-- errors, memories, audited resources and reasons) is BYTEA: PostgreSQL
-- text refuses NUL bytes and invalid UTF-8, which a model's output or a
-- file name can hold, and refusing them would lose a run's outcome or an
-- audit entry.

CREATE TABLE sessions (
    pk            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id            TEXT COLLATE "C" NOT NULL UNIQUE,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    title         BYTEA  NOT NULL DEFAULT '',
    metadata      TEXT,
    message_count BIGINT NOT NULL DEFAULT 0,
    last_seq      BIGINT NOT NULL DEFAULT 0,
    turn_accepted BIGINT NOT NULL DEFAULT 0,
    turn_answered BIGINT NOT NULL DEFAULT 0,
    turn_running  BIGINT NOT NULL DEFAULT 0
);

CREATE INDEX sessions_newest_first ON sessions (created_at DESC, id DESC);
CREATE INDEX sessions_open_turns ON sessions (pk)
    WHERE turn_accepted > turn_answered OR turn_running <> 0;

CREATE TABLE messages (
    session_pk BIGINT NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
    position   BIGINT NOT NULL,
    data       TEXT   NOT NULL,
    PRIMARY KEY (session_pk, position)
);

CREATE TABLE events (
    session_pk BIGINT NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
    seq        BIGINT NOT NULL,
    type       TEXT   NOT NULL,
    data       TEXT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (session_pk, seq)
);

CREATE TABLE runs (
    pk          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id          TEXT COLLATE "C" NOT NULL UNIQUE,
    goal        BYTEA  NOT NULL,
    status      TEXT   NOT NULL,
    plan        TEXT,
    config      TEXT,
    inputs      TEXT,
    files       TEXT,
    posture     TEXT,
    workflow_id TEXT   NOT NULL DEFAULT '',
    parent_id   TEXT   NOT NULL DEFAULT '',
    batch_id    TEXT   NOT NULL DEFAULT '',
    summary     BYTEA  NOT NULL DEFAULT '',
    error       BYTEA  NOT NULL DEFAULT '',
    search      BYTEA  NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    last_seq    BIGINT NOT NULL DEFAULT 0
);

CREATE INDEX runs_newest_first ON runs (created_at DESC, id DESC);
CREATE INDEX runs_by_status ON runs (status, created_at DESC, id DESC);

CREATE TABLE run_steps (
    run_pk      BIGINT NOT NULL REFERENCES runs (pk) ON DELETE CASCADE,
    step_id     TEXT COLLATE "C" NOT NULL,
    idx         BIGINT NOT NULL,
    status      TEXT   NOT NULL,
    result      TEXT,
    error       BYTEA  NOT NULL DEFAULT '',
    started_at  BIGINT,
    finished_at BIGINT,
    PRIMARY KEY (run_pk, step_id)
);

CREATE INDEX run_steps_by_index ON run_steps (run_pk, idx, step_id);

CREATE TABLE run_events (
    run_pk     BIGINT NOT NULL REFERENCES runs (pk) ON DELETE CASCADE,
    seq        BIGINT NOT NULL,
    type       TEXT   NOT NULL,
    data       TEXT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (run_pk, seq)
);

CREATE TABLE workflows (
    id           TEXT COLLATE "C" PRIMARY KEY,
    name         TEXT COLLATE "C" NOT NULL,
    description  TEXT    NOT NULL DEFAULT '',
    input_schema TEXT,
    plan         TEXT,
    canvas       TEXT,
    published    BOOLEAN NOT NULL DEFAULT false,
    revision     BIGINT  NOT NULL,
    created_at   BIGINT  NOT NULL,
    updated_at   BIGINT  NOT NULL
);

CREATE INDEX workflows_by_name ON workflows (name, id);

CREATE TABLE schedules (
    id               TEXT COLLATE "C" PRIMARY KEY,
    workflow_id      TEXT    NOT NULL,
    inputs           TEXT,
    interval_seconds BIGINT  NOT NULL,
    recurring        BOOLEAN NOT NULL,
    active           BOOLEAN NOT NULL,
    next_run_at      BIGINT,
    expires_at       BIGINT,
    created_at       BIGINT  NOT NULL,
    last_run_at      BIGINT,
    run_count        BIGINT  NOT NULL DEFAULT 0,
    last_task_id     TEXT    NOT NULL DEFAULT '',
    last_error       BYTEA   NOT NULL DEFAULT '',
    last_error_at    BIGINT
);

CREATE INDEX schedules_due ON schedules (next_run_at NULLS FIRST, id);

CREATE TABLE memories (
    pk         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id         TEXT COLLATE "C" NOT NULL UNIQUE,
    user_id    TEXT   NOT NULL,
    text       BYTEA  NOT NULL,
    tags       TEXT,
    created_at BIGINT NOT NULL
);

CREATE INDEX memories_by_user ON memories (user_id, created_at DESC, pk DESC);

CREATE TABLE audit (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id  TEXT   NOT NULL,
    turn_number BIGINT NOT NULL,
    ts          BIGINT NOT NULL,
    tool_name   BYTEA  NOT NULL,
    operation   TEXT   NOT NULL,
    resource    BYTEA  NOT NULL DEFAULT '',
    actor_id    TEXT   NOT NULL DEFAULT '',
    outcome     TEXT   NOT NULL,
    reason      BYTEA  NOT NULL DEFAULT '',
    extra       TEXT
);

CREATE INDEX audit_by_session ON audit (session_id, id);
CREATE INDEX audit_by_time ON audit (ts);
