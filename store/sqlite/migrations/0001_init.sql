-- Sessions are addressed by their text id, but children reference the
-- integer pk: events are the hot, numerous rows, and an integer key keeps
-- each of them small.
CREATE TABLE sessions (
    pk            INTEGER PRIMARY KEY,
    id            TEXT    NOT NULL UNIQUE,
    created_at    INTEGER NOT NULL, -- unix nanoseconds, UTC
    updated_at    INTEGER NOT NULL,
    title         TEXT    NOT NULL DEFAULT '',
    metadata      TEXT,
    -- Denormalized so that an append learns its positions from the UPDATE
    -- that records it, and so that listing sessions never counts rows.
    message_count INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX sessions_newest_first ON sessions (created_at DESC, id DESC);

-- A rowid table: messages (images, tool output) are often far larger than
-- the fraction of a page where clustering on the key pays off, and they
-- are written a few per turn.
CREATE TABLE messages (
    session_pk INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    data       TEXT    NOT NULL, -- llm.Message as JSON
    UNIQUE (session_pk, position)
) STRICT;

-- Events are the hot path, so an append touches as few pages as possible:
-- clustered on (session, seq), a single event is one leaf page (plus
-- overflow pages for a large payload), where a rowid table would also
-- write an index page. The session's last seq is MAX(seq), one seek on
-- this key, rather than a column on sessions that every append would have
-- to rewrite.
CREATE TABLE events (
    session_pk INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    type       TEXT    NOT NULL,
    data       TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_pk, seq)
) STRICT, WITHOUT ROWID;
