-- Who may read a ticket type: its organization (or the system), or anyone who can see its event
-- while it is active. PostgreSQL joins the permissive policies with OR in an order of its own,
-- and it put this one first: every statement that reads ticket types evaluated the event
-- subquery (built as a hash over every event the reader may see, or probed once a row) before
-- it looked at the tenant check that already let the row through. The seat transaction acts as
-- the system; over 64 events the subplans were about a twentieth of PostgreSQL's work a
-- registration (0.015 of about 0.3 ms), and the hash grew with the events stored
-- (bench/README.md). The cheap checks now come first inside this policy too, so whichever order
-- the two policies are joined in, the subquery runs only for a reader the tenant check did not
-- already admit. Who may read what is unchanged: the first two tests are the tenant policy's own.
ALTER POLICY ticket_types_visible ON event_service.ticket_types
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
           OR current_setting('app.system', true) = 'on'
           OR (is_active AND EXISTS (SELECT 1 FROM event_service.events e WHERE e.id = event_id)));
