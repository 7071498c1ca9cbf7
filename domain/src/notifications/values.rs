//! The values templates are filled with, written for a reader: dates on the event's clock
//! with its zone, sums with their currency, places from whichever of address and link the
//! event has.

use super::times::{self, Zone};
use crate::i18n::Lang;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// What a message may tell about an event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventFacts {
    /// Title.
    pub title: String,
    /// Start.
    pub starts_at: Option<DateTime<Utc>>,
    /// The event's time zone: every time about it is written on its clock.
    pub zone: Zone,
    /// Street address, for events in a place.
    pub location_address: Option<String>,
    /// Link, for online events.
    pub location_url: Option<String>,
    /// Where the event can be seen.
    pub url: String,
}

/// Writes a sum of minor units with its currency (`1500.00 RUB`).
pub fn amount(cents: i64, currency: &str) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.unsigned_abs();
    format!("{sign}{}.{:02} {currency}", cents / 100, cents % 100)
}

/// Where the event takes place: the address, else the link, else nothing.
pub fn location(facts: &EventFacts) -> Option<String> {
    facts
        .location_address
        .clone()
        .filter(|a| !a.trim().is_empty())
        .or_else(|| facts.location_url.clone().filter(|u| !u.trim().is_empty()))
}

/// The variables of a message about `event` to a person called `first_name`.
pub fn for_event(first_name: &str, event: &EventFacts, lang: Lang) -> BTreeMap<String, String> {
    let mut values = BTreeMap::new();
    values.insert("firstName".into(), first_name.to_string());
    values.insert("eventTitle".into(), event.title.clone());
    if let Some(at) = event.starts_at {
        values.insert("eventDate".into(), times::date(at, event.zone, lang));
    }
    if let Some(place) = location(event) {
        values.insert("eventLocation".into(), place);
    }
    values.insert("eventUrl".into(), event.url.clone());
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn sums_read_naturally() {
        assert_eq!(amount(150_000, "RUB"), "1500.00 RUB");
        assert_eq!(amount(5, "EUR"), "0.05 EUR");
        assert_eq!(amount(-250, "USD"), "-2.50 USD");
    }

    #[test]
    fn the_place_is_the_address_or_else_the_link() {
        let mut e = EventFacts {
            location_url: Some("https://meet".into()),
            ..EventFacts::default()
        };
        assert_eq!(location(&e).as_deref(), Some("https://meet"));
        e.location_address = Some("Main st 1".into());
        assert_eq!(location(&e).as_deref(), Some("Main st 1"));
        e.location_address = Some("  ".into());
        e.location_url = None;
        assert_eq!(location(&e), None);
        let v = for_event("Ann", &e, Lang::En);
        assert_eq!(v["firstName"], "Ann");
        assert!(!v.contains_key("eventLocation") && !v.contains_key("eventDate"));
    }

    #[test]
    fn the_date_is_on_the_event_clock() {
        let e = EventFacts {
            starts_at: Some(Utc.with_ymd_and_hms(2026, 12, 1, 9, 0, 0).unwrap()),
            zone: Zone::named("Asia/Vladivostok").unwrap(),
            ..EventFacts::default()
        };
        assert_eq!(
            for_event("Ann", &e, Lang::Ru)["eventDate"],
            "01.12.2026 19:00 UTC+10"
        );
    }
}
