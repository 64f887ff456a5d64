-- The cost history (store.Usage): one row per model call, independent of
-- sessions (deleting a session keeps what it cost). The keys a query groups
-- by are bytea, so that they order byte by byte as in every other store
-- and any string is stored as it is; day is the UTC day of at.
CREATE TABLE usage (
    id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at                 BIGINT NOT NULL, -- unix nanoseconds, UTC
    day                TEXT   NOT NULL, -- YYYY-MM-DD, UTC
    session_id         BYTEA  NOT NULL,
    run_id             BYTEA  NOT NULL,
    provider           BYTEA  NOT NULL,
    model              BYTEA  NOT NULL,
    input_tokens       BIGINT NOT NULL,
    output_tokens      BIGINT NOT NULL,
    cache_read_tokens  BIGINT NOT NULL,
    cache_write_tokens BIGINT NOT NULL,
    cost_usd           DOUBLE PRECISION NOT NULL
);
CREATE INDEX usage_at ON usage (at);
CREATE INDEX usage_session_at ON usage (session_id, at);
