-- A user's notification settings (a row once they change the defaults: everything on, Russian).
CREATE TABLE notification_service.preferences (
    user_id      UUID PRIMARY KEY,
    reminders    BOOLEAN NOT NULL DEFAULT true,
    changes      BOOLEAN NOT NULL DEFAULT true,
    waiting_list BOOLEAN NOT NULL DEFAULT true,
    receipts     BOOLEAN NOT NULL DEFAULT true,
    language     TEXT NOT NULL DEFAULT 'ru' CHECK (language IN ('ru', 'en')),
    updated_at   TIMESTAMPTZ NOT NULL
);
ALTER TABLE notification_service.preferences ENABLE ROW LEVEL SECURITY;
ALTER TABLE notification_service.preferences FORCE ROW LEVEL SECURITY;
CREATE POLICY preferences_self ON notification_service.preferences
    USING (user_id = nullif(current_setting('app.user_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (user_id = nullif(current_setting('app.user_id', true), '')::uuid OR current_setting('app.system', true) = 'on');
