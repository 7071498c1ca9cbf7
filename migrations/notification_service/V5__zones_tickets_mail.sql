-- Messages write an event's times on its own clock, so the projection keeps its IANA zone
-- (events announced before carry none: UTC, which is what their messages said until now).
ALTER TABLE notification_service.events ADD COLUMN timezone TEXT NOT NULL DEFAULT 'UTC';

-- A registration's ticket (the QR message) goes out once, when the registration is confirmed:
-- at creation, or when its payment arrives. Registrations recorded before this got theirs at
-- creation whatever their status.
ALTER TABLE notification_service.participants ADD COLUMN ticket_sent_at TIMESTAMPTZ;
UPDATE notification_service.participants SET ticket_sent_at = updated_at;

-- A waiting-list offer to someone no chat reaches goes by mail; the queue and the log say so.
ALTER TABLE notification_service.messages ADD COLUMN channel TEXT NOT NULL DEFAULT 'messenger'
    CHECK (channel IN ('messenger', 'email'));
ALTER TABLE notification_service.send_log ADD COLUMN channel TEXT NOT NULL DEFAULT 'messenger'
    CHECK (channel IN ('messenger', 'email'));

-- The account's address (from user.registered / user.updated), for an offer whose waiting-list
-- entry gave none.
ALTER TABLE notification_service.users ADD COLUMN email TEXT;
