-- Session commands (issue 20, item 2): what a node asks of a session whose
-- turns another node runs (a message, a permission answer, a cancel, a
-- budget or elicitation answer). A command is stored before the node that
-- accepted it answers its client, announced on the notification channel,
-- and consumed once, in id order, by the node holding the session's lease,
-- which sets done_at and result in one statement.
CREATE TABLE session_commands (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    kind       TEXT   NOT NULL,
    data       TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    done_at    BIGINT,
    result     TEXT
);

CREATE INDEX session_commands_pending ON session_commands (session_id, id) WHERE done_at IS NULL;
