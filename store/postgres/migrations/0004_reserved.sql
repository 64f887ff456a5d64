-- Reserved: h28's migration 0004 (cross-node commands) takes this number;
-- this placeholder keeps the versions contiguous on a branch without it.
-- Drop this file when merging with it.
SELECT 1;
