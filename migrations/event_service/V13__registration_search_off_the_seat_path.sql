-- The trigram index of V12 is taken back. Under row level security PostgreSQL may not use an
-- index for a condition that is not leakproof (LIKE and lower() are not), so the search never
-- read it as the application's role, while every seat insert of an on-sale paid for its
-- entries. The search reads the event's registrations by their event instead (measured in
-- bench/README.md, "search"); an index the search can use needs a table outside row level
-- security, fed off the seat path (docs/decisions.md).
DROP INDEX IF EXISTS event_service.registrations_search;
