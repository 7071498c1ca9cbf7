-- The outbox by day. One table took every burst's rows wherever its free space map pointed:
-- after a week of sales and the vacuum that follows, pages all over the table, read back from
-- disk and written whole into the WAL. Partitions by the v7 id (its first 48 bits are the
-- instant it was minted) send new rows to today's table, and forgetting a published day is
-- dropping its table instead of deleting its rows one by one.
ALTER TABLE {s}.outbox RENAME TO outbox_before_days;
ALTER INDEX {s}.outbox_pkey RENAME TO outbox_before_days_pkey;
ALTER INDEX {s}.outbox_id_key RENAME TO outbox_before_days_id_key;
ALTER INDEX {s}.outbox_pending RENAME TO outbox_before_days_pending;

CREATE TABLE {s}.outbox (
    seq          BIGINT NOT NULL DEFAULT nextval('{s}.outbox_seq_seq'),
    id           UUID NOT NULL,
    event_type   TEXT NOT NULL,
    tenant_id    UUID,
    actor_id     UUID,
    occurred_at  TIMESTAMPTZ NOT NULL,
    data         JSONB NOT NULL,
    published_at TIMESTAMPTZ,
    PRIMARY KEY (id)
) PARTITION BY RANGE (id);
ALTER SEQUENCE {s}.outbox_seq_seq OWNED BY {s}.outbox.seq;
CREATE INDEX outbox_pending ON {s}.outbox (seq) WHERE published_at IS NULL;
-- Rows whose day has no table (a clock far off, days without maintenance) land here, and are
-- deleted one by one once published and old.
CREATE TABLE {s}.outbox_default PARTITION OF {s}.outbox DEFAULT;

-- The lowest v7 id minted at `at` (domain::ids::v7_floor).
CREATE FUNCTION {s}.outbox_v7_floor(at TIMESTAMPTZ) RETURNS UUID
LANGUAGE sql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$ SELECT (lpad(to_hex(floor(extract(epoch FROM at) * 1000)::bigint), 12, '0')
              || '00000000000000000000')::uuid $$;

-- Makes a table for each UTC day from `since` to `until` that has none. The application role
-- owns no table, so this runs as the owner; it can only add days.
CREATE FUNCTION {s}.outbox_cover(since TIMESTAMPTZ, until TIMESTAMPTZ) RETURNS INTEGER
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    day  TIMESTAMP;
    name TEXT;
    made INTEGER := 0;
BEGIN
    -- A day waits for the next round rather than queue every writer of the outbox behind it.
    PERFORM set_config('lock_timeout', '200ms', true);
    FOR day IN SELECT generate_series(date_trunc('day', since AT TIME ZONE 'UTC'),
                                      until AT TIME ZONE 'UTC', interval '1 day')
    LOOP
        name := 'outbox_' || to_char(day, 'YYYYMMDD');
        CONTINUE WHEN to_regclass(format('{s}.%I', name)) IS NOT NULL;
        BEGIN
            -- Made apart and attached: attaching does not lock out the writers.
            EXECUTE format('CREATE TABLE {s}.%I (LIKE {s}.outbox INCLUDING DEFAULTS)', name);
            EXECUTE format('ALTER TABLE {s}.outbox ATTACH PARTITION {s}.%I FOR VALUES FROM (%L) TO (%L)',
                           name,
                           {s}.outbox_v7_floor(day AT TIME ZONE 'UTC'),
                           {s}.outbox_v7_floor((day + interval '1 day') AT TIME ZONE 'UTC'));
            made := made + 1;
        EXCEPTION
            -- Covered already (the table from before the days), rows of that day waiting in
            -- the default table, or the lock not had in time: the day stays as it is.
            WHEN invalid_object_definition OR check_violation OR lock_not_available THEN
                NULL;
        END;
    END LOOP;
    RETURN made;
END
$$;

-- Drops the tables of days that ended before `before` and whose every event was published
-- before it; returns how many events went with them.
CREATE FUNCTION {s}.outbox_drop_published(before TIMESTAMPTZ) RETURNS BIGINT
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    part    REGCLASS;
    upper   UUID;
    kept    BIGINT;
    total   BIGINT;
    dropped BIGINT := 0;
BEGIN
    PERFORM set_config('lock_timeout', '200ms', true);
    FOR part, upper IN
        SELECT c.oid::regclass,
               (regexp_match(pg_get_expr(c.relpartbound, c.oid), $r$TO \('([0-9a-f-]+)'\)$r$))[1]::uuid
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = '{s}.outbox'::regclass
    LOOP
        CONTINUE WHEN upper IS NULL OR upper > {s}.outbox_v7_floor(before);
        EXECUTE format('SELECT count(*) FILTER (WHERE published_at IS NULL OR published_at >= $1), count(*) FROM %s', part)
            INTO kept, total USING before;
        CONTINUE WHEN kept > 0;
        BEGIN
            EXECUTE format('DROP TABLE %s', part);
            dropped := dropped + total;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
    END LOOP;
    RETURN dropped;
END
$$;
REVOKE ALL ON FUNCTION {s}.outbox_cover(TIMESTAMPTZ, TIMESTAMPTZ) FROM PUBLIC;
REVOKE ALL ON FUNCTION {s}.outbox_drop_published(TIMESTAMPTZ) FROM PUBLIC;

-- What was written before stays where it is, as the table of everything up to tomorrow (UTC),
-- and goes once all of it is a week past its publication; an empty one is not kept.
DO $$
DECLARE
    tomorrow UUID := {s}.outbox_v7_floor(date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '1 day');
BEGIN
    IF EXISTS (SELECT 1 FROM {s}.outbox_before_days) THEN
        ALTER TABLE {s}.outbox_before_days DROP CONSTRAINT outbox_before_days_pkey;
        ALTER TABLE {s}.outbox_before_days ALTER COLUMN seq DROP DEFAULT;
        -- Ids beyond tomorrow (not v7, or a clock far ahead) would stop the attachment.
        WITH moved AS (DELETE FROM {s}.outbox_before_days WHERE id >= tomorrow RETURNING *)
        INSERT INTO {s}.outbox_default SELECT * FROM moved;
        EXECUTE format('ALTER TABLE {s}.outbox ATTACH PARTITION {s}.outbox_before_days FOR VALUES FROM (MINVALUE) TO (%L)', tomorrow);
    ELSE
        DROP TABLE {s}.outbox_before_days;
    END IF;
END
$$;
SELECT {s}.outbox_cover(now(), now() + interval '2 days');
