-- Organizers find a person among an event's registrations by any part of a name or an email:
-- a trigram index over both, lower case, so `LIKE '%ann smi%'` reads the index rather than
-- every registration of the event (the confirmation code has its own unique index).
-- pg_trgm is a trusted extension: the database's owner may create it. It lives in this
-- service's schema, which needs nothing of `public`.
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA event_service;

CREATE INDEX IF NOT EXISTS registrations_search ON event_service.registrations
    USING gin ((lower(first_name || ' ' || last_name || ' ' || coalesce(email, '')))
               event_service.gin_trgm_ops);
