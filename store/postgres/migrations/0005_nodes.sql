-- The nodes sharing this database (issue 20, item 4): each `weft serve`
-- heartbeats its row every third of its lease TTL; a node is alive while
-- its heartbeat is within the TTL. Times come from the database's clock,
-- as the leases' do. A node that shuts down cleanly deletes its row; one
-- that dies leaves it, and it ages out of GET /v1/nodes.
CREATE TABLE nodes (
    id           TEXT COLLATE "C" PRIMARY KEY,
    addr         TEXT        NOT NULL,
    version      TEXT        NOT NULL,
    started_at   TIMESTAMPTZ NOT NULL,
    heartbeat_at TIMESTAMPTZ NOT NULL
);
