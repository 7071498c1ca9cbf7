-- A registration's event and ticket type are vouched for by the transaction that writes it,
-- not by foreign keys. Every registration is written by the seat transaction, which has
-- already locked its ticket type (FOR UPDATE) and its event (FOR KEY SHARE) and read both; a
-- ticket type is deleted only under its row lock after checking that no registration names
-- it (otherwise it is retired); an event is never deleted. The two foreign keys were two
-- lookups a row, about a third of the registrations' insert during an on-sale
-- (docs/decisions.md).
ALTER TABLE event_service.registrations
    DROP CONSTRAINT IF EXISTS registrations_event_id_fkey,
    DROP CONSTRAINT IF EXISTS registrations_ticket_type_id_fkey;
