-- Half of each page of the outbox's tables is kept for the one rewrite of each row: the
-- relay stamping published_at. A row is written once and rewritten once; the rewrite's new
-- version stays on its page, and once the old versions are vacuumed away a page has about
-- half of itself free, less than an insert asks for (its row and the half kept), so new rows
-- go to the end of today's table. Filled to the brim, every page of the day was left with
-- room for a row or two by the vacuum after its rewrites, and a burst's rows went one each
-- into pages all over the day: read back from disk and written whole into the WAL after a
-- checkpoint (docs/decisions.md).

-- Sets it on every table of the outbox that lacks it (a lock not had in time waits for the
-- next round).
CREATE FUNCTION {s}.outbox_keep_half_pages() RETURNS INTEGER
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    part    REGCLASS;
    altered INTEGER := 0;
BEGIN
    FOR part IN
        SELECT c.oid::regclass
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = '{s}.outbox'::regclass
           AND NOT coalesce(c.reloptions @> ARRAY['fillfactor=50'], false)
    LOOP
        BEGIN
            EXECUTE format('ALTER TABLE %s SET (fillfactor = 50)', part);
            altered := altered + 1;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
    END LOOP;
    RETURN altered;
END
$$;
REVOKE ALL ON FUNCTION {s}.outbox_keep_half_pages() FROM PUBLIC;

-- The days are made as before, then given the setting before any row reaches them.
ALTER FUNCTION {s}.outbox_cover(TIMESTAMPTZ, TIMESTAMPTZ) RENAME TO outbox_cover_days;
CREATE FUNCTION {s}.outbox_cover(since TIMESTAMPTZ, until TIMESTAMPTZ) RETURNS INTEGER
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    made INTEGER;
BEGIN
    made := {s}.outbox_cover_days(since, until);
    PERFORM {s}.outbox_keep_half_pages();
    RETURN made;
END
$$;
REVOKE ALL ON FUNCTION {s}.outbox_cover(TIMESTAMPTZ, TIMESTAMPTZ) FROM PUBLIC;

SELECT {s}.outbox_keep_half_pages();
