-- A send-log row is vouched for by the transaction that writes it, not by a foreign key. Every
-- row is written with its message's id in hand, in the transaction that writes or finishes
-- that message (`storage::notifications::queue`), and messages are never deleted. The key's
-- check is a plan each connection makes once and keeps: made while the messages table was
-- small (a new installation's first sale), it scanned the whole table for every log row, the
-- consumer's costliest statement in a first burst (docs/decisions.md).
ALTER TABLE notification_service.send_log
    DROP CONSTRAINT IF EXISTS send_log_message_id_fkey;
