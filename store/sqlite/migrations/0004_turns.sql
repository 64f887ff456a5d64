-- The turn framing of each session's event log (store.Turns): the seq of
-- the last user_message, the message_seq of the last message_consumed or
-- message_dropped, and the message_seq of a message_consumed that no done
-- has followed yet. Kept by the append that inserts those events, in its
-- transaction, so that after a crash the sessions with work in progress
-- are one scan of this table rather than of every event log. Sessions
-- from before this migration start at zero: nothing open.
ALTER TABLE sessions ADD COLUMN turn_accepted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN turn_answered INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN turn_running INTEGER NOT NULL DEFAULT 0;
