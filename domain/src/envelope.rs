//! The envelope every domain event travels in, on every broker: `{id, type, occurredAt,
//! tenantId, actorId, data}`. The routing key is the type.

use crate::ids::{EventId, TenantId, UserId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A domain event as published and consumed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    /// Unique id; consumers use it to ignore duplicates.
    pub id: EventId,
    /// Dotted type, also the routing key, e.g. `registration.created`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// When the change happened.
    pub occurred_at: DateTime<Utc>,
    /// The organization the change belongs to, if any.
    pub tenant_id: Option<TenantId>,
    /// The user who caused it, if any.
    pub actor_id: Option<UserId>,
    /// The payload, shaped per type.
    pub data: serde_json::Value,
}

impl Envelope {
    /// A new event happening now.
    pub fn new(
        event_type: impl Into<String>,
        tenant_id: Option<TenantId>,
        actor_id: Option<UserId>,
        data: serde_json::Value,
    ) -> Self {
        Envelope {
            id: EventId::new(),
            event_type: event_type.into(),
            occurred_at: Utc::now(),
            tenant_id,
            actor_id,
            data,
        }
    }
}

/// Whether a topic pattern (`*` one word, `#` zero or more words, as in AMQP) matches a
/// routing key. The in-process broker uses it to route exactly like RabbitMQ does.
pub fn topic_matches(pattern: &str, key: &str) -> bool {
    fn go(p: &[&str], k: &[&str]) -> bool {
        match (p.first(), k.first()) {
            (None, None) => true,
            (Some(&"#"), _) => go(&p[1..], k) || (!k.is_empty() && go(p, &k[1..])),
            (Some(&"*"), Some(_)) => go(&p[1..], &k[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &k[1..]),
            _ => false,
        }
    }
    let p: Vec<&str> = pattern.split('.').collect();
    let k: Vec<&str> = key.split('.').collect();
    go(&p, &k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_patterns_follow_amqp() {
        assert!(topic_matches(
            "registration.created",
            "registration.created"
        ));
        assert!(topic_matches("registration.*", "registration.created"));
        assert!(!topic_matches("registration.*", "registration.a.b"));
        assert!(topic_matches("#", "organization.member.role.changed"));
        assert!(topic_matches("organization.#", "organization.member.added"));
        assert!(topic_matches("organization.#", "organization"));
        assert!(!topic_matches("event.*", "registration.created"));
    }

    #[test]
    fn envelope_wire_shape() {
        let e = Envelope::new("user.registered", None, None, serde_json::json!({"a": 1}));
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["type"], "user.registered");
        assert!(v.get("occurredAt").is_some() && v.get("tenantId").is_some());
        let back: Envelope = serde_json::from_value(v).unwrap();
        assert_eq!(back, e);
    }
}
