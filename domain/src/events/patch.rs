//! Changing an event: in which status it may change, how a change merges into its current
//! fields, and which notices a saved change calls for.

use super::lifecycle::{EventStatus, ParticipantsVisibility};
use super::refusals::EventRefusal;
use super::validation::LocationType;
use crate::error::Refusal;
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// The fields of an event an organizer may change.
#[derive(Clone, Debug, PartialEq)]
pub struct EventFields {
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// The group it is private to, if any.
    pub group_id: Option<Uuid>,
    /// Who sees the participants.
    pub participants_visibility: ParticipantsVisibility,
    /// Start.
    pub starts_at: DateTime<Utc>,
    /// End.
    pub ends_at: Option<DateTime<Utc>>,
    /// Time zone for display.
    pub timezone: String,
    /// Kind of place.
    pub location_type: Option<LocationType>,
    /// Address.
    pub location_address: Option<String>,
    /// URL.
    pub location_url: Option<String>,
    /// Cover image.
    pub cover_image_id: Option<Uuid>,
    /// Settings object.
    pub settings: serde_json::Value,
}

/// A change to an event (already validated field by field); `None` keeps a field, `Some(None)`
/// clears an optional one.
#[derive(Clone, Debug, Default)]
pub struct EventPatch {
    /// Title.
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Group.
    pub group_id: Option<Option<Uuid>>,
    /// Participant visibility.
    pub participants_visibility: Option<ParticipantsVisibility>,
    /// Start.
    pub starts_at: Option<DateTime<Utc>>,
    /// End.
    pub ends_at: Option<Option<DateTime<Utc>>>,
    /// Time zone.
    pub timezone: Option<String>,
    /// Kind of place.
    pub location_type: Option<Option<LocationType>>,
    /// Address.
    pub location_address: Option<Option<String>>,
    /// URL.
    pub location_url: Option<Option<String>>,
    /// Cover image.
    pub cover_image_id: Option<Option<Uuid>>,
    /// Settings.
    pub settings: Option<serde_json::Value>,
}

/// Whether an event in `status` (or one of its ticket types) may change at all: every field
/// may while it is a draft or published; nothing does once it is cancelled or completed.
pub fn may_change(status: EventStatus) -> Result<(), Refusal> {
    if status.is_final() {
        Err(Refusal::from(EventRefusal::FinalState))
    } else {
        Ok(())
    }
}

/// The fields after `patch` is applied to `current`, or why they cannot be saved: the end,
/// when there is one, must stay after the start (either may be the one that changed).
pub fn merge(current: &EventFields, patch: &EventPatch) -> Result<EventFields, Refusal> {
    let keep = |new: &Option<String>, old: &String| new.clone().unwrap_or_else(|| old.clone());
    let merged = EventFields {
        title: keep(&patch.title, &current.title),
        description: keep(&patch.description, &current.description),
        group_id: patch.group_id.unwrap_or(current.group_id),
        participants_visibility: patch
            .participants_visibility
            .unwrap_or(current.participants_visibility),
        starts_at: patch.starts_at.unwrap_or(current.starts_at),
        ends_at: patch.ends_at.unwrap_or(current.ends_at),
        timezone: keep(&patch.timezone, &current.timezone),
        location_type: patch.location_type.unwrap_or(current.location_type),
        location_address: patch
            .location_address
            .clone()
            .unwrap_or_else(|| current.location_address.clone()),
        location_url: patch
            .location_url
            .clone()
            .unwrap_or_else(|| current.location_url.clone()),
        cover_image_id: patch.cover_image_id.unwrap_or(current.cover_image_id),
        settings: patch
            .settings
            .clone()
            .unwrap_or_else(|| current.settings.clone()),
    };
    if merged.ends_at.is_some_and(|end| end <= merged.starts_at) {
        return Err(Refusal::from(EventRefusal::EndNotAfterStart));
    }
    Ok(merged)
}

/// The notices a saved change calls for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Notices {
    /// `event.changed`: the time or place of a published event moved, so its participants are
    /// told (a draft has nobody to tell; a new title or description is not worth a message).
    pub changed: bool,
    /// `event.cover_changed`: the cover was replaced or removed, so the media service can
    /// let the old file go.
    pub cover_changed: bool,
}

/// What a change from `before` to `after` of an event in `status` announces.
pub fn notices(status: EventStatus, before: &EventFields, after: &EventFields) -> Notices {
    let moved = before.starts_at != after.starts_at
        || before.ends_at != after.ends_at
        || before.location_type != after.location_type
        || before.location_address != after.location_address
        || before.location_url != after.location_url;
    Notices {
        changed: status == EventStatus::Published && moved,
        cover_changed: before.cover_image_id != after.cover_image_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn event() -> EventFields {
        let start = DateTime::parse_from_rfc3339("2030-05-01T18:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        EventFields {
            title: "Concert".into(),
            description: "Live".into(),
            group_id: None,
            participants_visibility: ParticipantsVisibility::Closed,
            starts_at: start,
            ends_at: Some(start + Duration::hours(2)),
            timezone: "Europe/Moscow".into(),
            location_type: Some(LocationType::Offline),
            location_address: Some("Tverskaya 1".into()),
            location_url: None,
            cover_image_id: Some(Uuid::nil()),
            settings: serde_json::json!({}),
        }
    }

    #[test]
    fn only_drafts_and_published_events_change() {
        assert_eq!(may_change(EventStatus::Draft), Ok(()));
        assert_eq!(may_change(EventStatus::Published), Ok(()));
        for status in [EventStatus::Cancelled, EventStatus::Completed] {
            assert_eq!(
                may_change(status),
                Err(Refusal::from(EventRefusal::FinalState))
            );
        }
    }

    #[test]
    fn an_empty_patch_keeps_everything() {
        assert_eq!(merge(&event(), &EventPatch::default()), Ok(event()));
    }

    #[test]
    fn a_patch_sets_and_clears_fields() {
        let patch = EventPatch {
            title: Some("Gala".into()),
            ends_at: Some(None),
            location_address: Some(None),
            location_url: Some(Some("https://example.com".into())),
            location_type: Some(Some(LocationType::Online)),
            cover_image_id: Some(None),
            ..EventPatch::default()
        };
        let after = merge(&event(), &patch).unwrap();
        assert_eq!(after.title, "Gala");
        assert_eq!(after.description, "Live", "untouched");
        assert_eq!(after.ends_at, None);
        assert_eq!(after.location_address, None);
        assert_eq!(after.location_url.as_deref(), Some("https://example.com"));
        assert_eq!(after.location_type, Some(LocationType::Online));
        assert_eq!(after.cover_image_id, None);
    }

    #[test]
    fn the_end_stays_after_the_start() {
        let current = event();
        let late_start = EventPatch {
            starts_at: Some(current.ends_at.unwrap()),
            ..EventPatch::default()
        };
        assert_eq!(
            merge(&current, &late_start),
            Err(Refusal::from(EventRefusal::EndNotAfterStart)),
            "moving the start onto the kept end"
        );
        let early_end = EventPatch {
            ends_at: Some(Some(current.starts_at - Duration::minutes(1))),
            ..EventPatch::default()
        };
        assert!(merge(&current, &early_end).is_err());
        let open_end = EventPatch {
            starts_at: Some(current.starts_at + Duration::days(3)),
            ends_at: Some(None),
            ..EventPatch::default()
        };
        assert!(
            merge(&current, &open_end).is_ok(),
            "no end, nothing to compare"
        );
    }

    #[test]
    fn only_a_published_event_that_moved_is_announced() {
        let before = event();
        let mut moved = before.clone();
        moved.starts_at += Duration::hours(1);
        moved.ends_at = Some(moved.starts_at + Duration::hours(2));
        assert!(notices(EventStatus::Published, &before, &moved).changed);
        assert!(!notices(EventStatus::Draft, &before, &moved).changed);

        let mut relocated = before.clone();
        relocated.location_address = Some("Arbat 2".into());
        assert!(notices(EventStatus::Published, &before, &relocated).changed);

        let mut renamed = before.clone();
        renamed.title = "Gala".into();
        renamed.description = "New words".into();
        renamed.settings = serde_json::json!({"x": 1});
        assert_eq!(
            notices(EventStatus::Published, &before, &renamed),
            Notices::default()
        );
    }

    #[test]
    fn a_new_cover_is_announced_in_any_status() {
        let before = event();
        let mut after = before.clone();
        after.cover_image_id = None;
        for status in [EventStatus::Draft, EventStatus::Published] {
            let n = notices(status, &before, &after);
            assert!(n.cover_changed && !n.changed, "{status:?}");
        }
    }
}
