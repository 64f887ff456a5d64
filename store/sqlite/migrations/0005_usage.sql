-- The cost history (store.Usage): one row per model call. Independent of
-- sessions (no foreign key): deleting a session keeps what it cost. day is
-- the UTC day of at, computed when the row is written, so that grouping by
-- day is an index scan and agrees with every other store.
CREATE TABLE usage (
    id                 INTEGER PRIMARY KEY,
    at                 INTEGER NOT NULL, -- unix nanoseconds, UTC
    day                TEXT    NOT NULL, -- YYYY-MM-DD, UTC
    session_id         TEXT    NOT NULL DEFAULT '',
    run_id             TEXT    NOT NULL DEFAULT '',
    provider           TEXT    NOT NULL DEFAULT '',
    model              TEXT    NOT NULL,
    input_tokens       INTEGER NOT NULL,
    output_tokens      INTEGER NOT NULL,
    cache_read_tokens  INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    cost_usd           REAL    NOT NULL
);
CREATE INDEX usage_at ON usage (at);
CREATE INDEX usage_session_at ON usage (session_id, at);
