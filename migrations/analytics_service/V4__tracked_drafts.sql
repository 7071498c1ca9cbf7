-- Events are tracked from event.created on, drafts included: a draft's dashboard answers its
-- organization's members, and only they may track its pages (a draft is not public).
-- `draft` follows event.published / event.unpublished in the order they happened
-- (`status_at`, the broker event's time), whatever order they arrive in; event.created never
-- overwrites what a later event already said. Every row so far came from event.published.
ALTER TABLE analytics_service.tracked_events ALTER COLUMN published_at DROP NOT NULL;
ALTER TABLE analytics_service.tracked_events ADD COLUMN draft BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE analytics_service.tracked_events ADD COLUMN status_at TIMESTAMPTZ;
UPDATE analytics_service.tracked_events SET status_at = published_at;
ALTER TABLE analytics_service.tracked_events ALTER COLUMN status_at SET NOT NULL;
ALTER TABLE analytics_service.tracked_events ALTER COLUMN draft DROP DEFAULT;
