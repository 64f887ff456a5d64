-- Leases (issue 20, item 3): a named piece of work (a session's turns, a
-- run, a schedule's firing) held by one node until its lease expires.
-- Times come from the database's clock, never a node's, so nodes with
-- skewed clocks agree on who holds what. epoch grows with every new
-- holder: a fencing token a holder can check its writes against.
CREATE TABLE leases (
    name        TEXT COLLATE "C" PRIMARY KEY,
    holder      TEXT        NOT NULL,
    epoch       BIGINT      NOT NULL,
    acquired_at TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);

CREATE INDEX leases_by_expiry ON leases (expires_at);
