//! Typed identifiers. Every id is a UUID (v7, time ordered, when we mint it), but a `TenantId`
//! can never be passed where a `UserId` is expected.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use uuid::Uuid;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A fresh, time-ordered id.
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }

            /// The raw UUID.
            pub fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }

        impl From<Uuid> for $name {
            fn from(id: Uuid) -> Self {
                Self(id)
            }
        }
    };
}

id_type!(
    /// An organization, which is also the tenant of every business row.
    TenantId
);
id_type!(
    /// A user account.
    UserId
);
id_type!(
    /// A domain event published through the outbox.
    EventId
);

/// The smallest v7 id minted at `at`: every id we minted before `at` sorts below it, so
/// "older than" becomes a range of a table's id index instead of a scan of the whole table.
pub fn v7_floor(at: chrono::DateTime<chrono::Utc>) -> Uuid {
    let millis = u128::try_from(at.timestamp_millis()).unwrap_or(0) & ((1 << 48) - 1);
    Uuid::from_u128(millis << 80)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_of_an_instant_sorts_between_ids_minted_before_and_after_it() {
        let before = TenantId::new().as_uuid();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let floor = v7_floor(chrono::Utc::now());
        std::thread::sleep(std::time::Duration::from_millis(2));
        let after = TenantId::new().as_uuid();
        assert!(before < floor && floor < after, "{before} {floor} {after}");
        assert_eq!(
            v7_floor(chrono::DateTime::from_timestamp_millis(0x0123_4567_89ab).unwrap())
                .to_string(),
            "01234567-89ab-0000-0000-000000000000"
        );
        assert_eq!(v7_floor(chrono::DateTime::UNIX_EPOCH), Uuid::nil());
    }

    #[test]
    fn ids_are_time_ordered_and_round_trip() {
        let a = TenantId::new();
        let b = TenantId::new();
        assert!(a < b, "v7 ids minted later sort later");
        assert_eq!(a.to_string().parse::<TenantId>().unwrap(), a);
        assert!("not-a-uuid".parse::<UserId>().is_err());
    }
}
