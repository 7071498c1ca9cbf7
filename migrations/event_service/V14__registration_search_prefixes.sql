-- Organizers find a person by the beginning of a first name, a last name or an email, through
-- an index the application's role may use. Under row level security PostgreSQL uses an index
-- only for a condition that is leakproof; `lower(column)` and LIKE are not, but a comparison of
-- a stored column with a value is (text_ge, text_lt). So each searched field keeps
-- a lower-cased copy, ordered byte by byte (collation "C") so that a prefix is one range of the
-- index: `search_last >= 'garc' AND search_last < 'garc' || chr(1114111)`.
-- lower() runs under the database's collation, the same one the search's lower() of each word
-- uses.
ALTER TABLE event_service.registrations
    ADD COLUMN search_first TEXT COLLATE "C" GENERATED ALWAYS AS (lower(first_name)) STORED,
    ADD COLUMN search_last  TEXT COLLATE "C" GENERATED ALWAYS AS (lower(last_name)) STORED,
    ADD COLUMN search_email TEXT COLLATE "C" GENERATED ALWAYS AS (lower(coalesce(email, ''))) STORED;
CREATE INDEX registrations_search_first ON event_service.registrations (event_id, search_first);
CREATE INDEX registrations_search_last ON event_service.registrations (event_id, search_last);
CREATE INDEX registrations_search_email ON event_service.registrations (event_id, search_email);

-- The list opens on the newest registrations: an index in that order gives its page without
-- sorting the whole event. It replaces (event_id, status): no query depends on the status being
-- in the index (the statuses of an event are mostly active ones), and every seat insert pays for
-- each index.
DROP INDEX event_service.registrations_event;
CREATE INDEX registrations_event ON event_service.registrations (event_id, created_at);
