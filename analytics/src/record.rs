//! One analytics record, as both stores keep it: the spec's fields plus the values the
//! figures group by, taken from the properties once when the record is made.

use chrono::{DateTime, NaiveDate, Utc};
use domain::analytics::TrackType;
use domain::ids::TenantId;
use uuid::Uuid;

/// An analytics record.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Identifier (the broker event's id for recorded service events, so a redelivery is
    /// recognised).
    pub id: Uuid,
    /// The organization.
    pub tenant_id: TenantId,
    /// What happened.
    pub event_type: TrackType,
    /// The event (bilet's) it is about.
    pub event_id: Option<Uuid>,
    /// Who, when known.
    pub user_id: Option<Uuid>,
    /// Free-form details.
    pub properties: serde_json::Value,
    /// When, to the second (both stores keep seconds).
    pub created_at: DateTime<Utc>,
}

impl Record {
    /// A record at `at` (truncated to the second).
    pub fn new(
        id: Uuid,
        tenant_id: TenantId,
        event_type: TrackType,
        event_id: Option<Uuid>,
        user_id: Option<Uuid>,
        properties: serde_json::Value,
        at: DateTime<Utc>,
    ) -> Record {
        let created_at = DateTime::from_timestamp(at.timestamp(), 0).unwrap_or(at);
        Record {
            id,
            tenant_id,
            event_type,
            event_id,
            user_id,
            properties,
            created_at,
        }
    }

    fn property(&self, name: &str) -> String {
        match &self.properties[name] {
            serde_json::Value::String(s) => s.chars().take(100).collect(),
            _ => String::new(),
        }
    }

    /// The ticket type, or "".
    pub fn ticket_type(&self) -> String {
        self.property("ticketTypeId")
    }

    /// The traffic source, trimmed and in lower case, or "direct". Page views name it as the
    /// client saw it and registrations as a slug, so "VK " on a page and "vk" on a
    /// registration must fall into one row of the by-source figures.
    pub fn source(&self) -> String {
        let s = self.property("source").trim().to_lowercase();
        if s.is_empty() { "direct".into() } else { s }
    }

    /// The registration status the record reports, or "".
    pub fn status(&self) -> String {
        self.property("status")
    }

    /// Who viewed: the user, else the client's visitor id, else the record itself.
    pub fn viewer(&self) -> String {
        match self.user_id {
            Some(u) => u.to_string(),
            None => {
                let v = self.property("visitorId");
                if v.is_empty() {
                    self.id.to_string()
                } else {
                    format!("v:{v}")
                }
            }
        }
    }

    /// The UTC day.
    pub fn day(&self) -> NaiveDate {
        self.created_at.date_naive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with(properties: serde_json::Value) -> Record {
        Record::new(
            Uuid::now_v7(),
            TenantId::new(),
            TrackType::RegistrationCompleted,
            None,
            None,
            properties,
            Utc::now(),
        )
    }

    #[test]
    fn a_missing_or_blank_source_is_direct_and_sources_are_folded() {
        assert_eq!(with(json!({})).source(), "direct");
        assert_eq!(with(json!({"source": null})).source(), "direct");
        assert_eq!(with(json!({"source": "  "})).source(), "direct");
        assert_eq!(with(json!({"source": 5})).source(), "direct");
        assert_eq!(with(json!({"source": " VK "})).source(), "vk");
        assert_eq!(with(json!({"source": "newsletter"})).source(), "newsletter");
    }
}
