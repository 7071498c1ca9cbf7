-- The relay stamps published_at on every outbox row once the broker confirmed it. That column
-- is in the pending index's predicate, so the update is never HOT and its new version needs
-- room: on a full page PostgreSQL takes whatever page its free space map offers, which in a
-- table holding days of published events is an old page read back from outside the buffers
-- (43,000 reads in a 30,000-registration burst with a million registrations of history).
-- Rows are inserted into half of each page, and the other half takes their stamped versions.
ALTER TABLE event_service.outbox SET (fillfactor = 50);
