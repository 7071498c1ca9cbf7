//! The envelope every domain event travels in, on every broker: `{id, type, occurredAt,
//! tenantId, actorId, data}`. The routing key is the type.

use crate::ids::{EventId, TenantId, UserId};
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use std::sync::Arc;

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
    pub data: Payload,
}

impl Envelope {
    /// A new event happening now.
    pub fn new(
        event_type: impl Into<String>,
        tenant_id: Option<TenantId>,
        actor_id: Option<UserId>,
        data: impl Into<Payload>,
    ) -> Self {
        Envelope {
            id: EventId::new(),
            event_type: event_type.into(),
            occurred_at: Utc::now(),
            tenant_id,
            actor_id,
            data: data.into(),
        }
    }
}

/// An event's payload as the JSON text it travels as, shared by every copy of the envelope.
/// A sale publishes thousands of events a second, each to several consumers: kept as a tree
/// (`serde_json::Value`), each was parsed from the outbox into maps, copied for every consumer,
/// walked again to decode and freed map by map, a third of the node's CPU during a burst.
/// As text it is read from the outbox once, shared by reference and decoded straight into the
/// consumer's payload struct.
#[derive(Clone)]
pub struct Payload(Arc<RawValue>);

impl Payload {
    /// The payload of `value` (`null` should it not serialize, which a payload struct of
    /// strings, numbers and options always does).
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Payload {
        match serde_json::value::to_raw_value(value) {
            Ok(raw) => Payload(Arc::from(raw)),
            Err(_) => Payload::null(),
        }
    }

    /// The JSON `null`.
    pub fn null() -> Payload {
        Payload(Arc::from(RawValue::NULL.to_owned()))
    }

    /// The payload read as JSON text elsewhere (an outbox row, a broker message).
    pub fn from_raw(raw: Box<RawValue>) -> Payload {
        Payload(Arc::from(raw))
    }

    /// The JSON text.
    pub fn raw(&self) -> &RawValue {
        &self.0
    }

    /// The payload as a JSON tree, for code that looks into it by field name.
    pub fn value(&self) -> serde_json::Value {
        serde_json::from_str(self.0.get()).unwrap_or_default()
    }

    /// The payload read as `T`.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }
}

impl From<serde_json::Value> for Payload {
    fn from(value: serde_json::Value) -> Payload {
        Payload::of(&value)
    }
}

/// Equal when the JSON is: the same payload read back from PostgreSQL's `jsonb` has its keys
/// in another order and other spacing.
impl PartialEq for Payload {
    fn eq(&self, other: &Payload) -> bool {
        self.0.get() == other.0.get() || self.value() == other.value()
    }
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.get())
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Payload, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(Payload::from_raw)
    }
}

/// Whether a topic pattern (`*` one word, `#` zero or more words, as in AMQP) matches a
/// routing key. The in-process broker uses it to route exactly like RabbitMQ does, for every
/// event and queue, so it walks the words without collecting them.
pub fn topic_matches(pattern: &str, key: &str) -> bool {
    type Words<'a> = std::str::Split<'a, char>;
    fn go(mut p: Words<'_>, mut k: Words<'_>) -> bool {
        match p.next() {
            None => k.next().is_none(),
            Some("#") => loop {
                if go(p.clone(), k.clone()) {
                    return true;
                }
                if k.next().is_none() {
                    return false;
                }
            },
            Some("*") => k.next().is_some() && go(p, k),
            Some(word) => k.next() == Some(word) && go(p, k),
        }
    }
    go(pattern.split('.'), key.split('.'))
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
        assert!(topic_matches("#.created", "registration.created"));
        assert!(topic_matches("#.created", "created"));
        assert!(!topic_matches("#.created", "registration.created.late"));
        assert!(topic_matches(
            "registration.#.late",
            "registration.created.late"
        ));
        assert!(!topic_matches("registration.created", "registration"));
        assert!(!topic_matches("registration", "registration.created"));
    }

    #[test]
    fn envelope_wire_shape() {
        let e = Envelope::new("user.registered", None, None, serde_json::json!({"a": 1}));
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["type"], "user.registered");
        assert!(v.get("occurredAt").is_some() && v.get("tenantId").is_some());
        assert_eq!(v["data"], serde_json::json!({"a": 1}));
        let back: Envelope = serde_json::from_value(v).unwrap();
        assert_eq!(back, e);
        let wire = serde_json::to_vec(&e).unwrap();
        let back: Envelope = serde_json::from_slice(&wire).unwrap();
        assert_eq!(back.data.raw().get(), r#"{"a":1}"#);
    }

    #[test]
    fn payloads_are_equal_when_their_json_is() {
        let compact = Payload::from(serde_json::json!({"a": 1, "b": [true, null]}));
        let spaced: Payload = serde_json::from_str(r#"{"b": [true, null], "a": 1}"#).unwrap();
        assert_eq!(compact, spaced);
        assert_ne!(compact, Payload::from(serde_json::json!({"a": 2})));
        assert_eq!(Payload::null().value(), serde_json::Value::Null);
    }
}
