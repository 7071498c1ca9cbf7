//! Field rules of events and ticket types.

use crate::i18n::Text;
use crate::validation::{FieldError, FieldErrors};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Where an event takes place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum LocationType {
    /// At an address.
    Offline,
    /// At a URL.
    Online,
    /// Both.
    Hybrid,
}

impl LocationType {
    /// Database spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Offline => "OFFLINE",
            Self::Online => "ONLINE",
            Self::Hybrid => "HYBRID",
        }
    }

    /// From the database spelling.
    pub fn parse(s: &str) -> Option<LocationType> {
        match s {
            "OFFLINE" => Some(Self::Offline),
            "ONLINE" => Some(Self::Online),
            "HYBRID" => Some(Self::Hybrid),
            _ => None,
        }
    }
}

/// Active ISO 4217 currency codes.
const CURRENCIES: &str = "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP BYN BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD UYU UZS VES VND VUV WST XAF XCD XOF XPF YER ZAR ZMW ZWL";

/// Whether `code` is an active ISO 4217 currency code (upper case).
pub fn is_currency(code: &str) -> bool {
    code.len() == 3 && CURRENCIES.split(' ').any(|c| c == code)
}

/// Every code `is_currency` accepts, for the OpenAPI document's enumeration.
pub fn currencies() -> impl Iterator<Item = &'static str> {
    CURRENCIES.split(' ')
}

/// A time zone the tz database knows (`Europe/Moscow`, `UTC`): messages write the event's
/// times on its clock, so a made-up zone would have no clock to write them on.
pub fn is_time_zone(name: &str) -> bool {
    name.len() <= 64 && name.parse::<chrono_tz::Tz>().is_ok()
}

/// The earliest start accepted: 2000-01-01T00:00:00Z. Nothing bilet sells happened before
/// it; an earlier date is a typo or a client sending a zero timestamp.
pub const EARLIEST_START: DateTime<Utc> = DateTime::from_timestamp_nanos(946_684_800_000_000_000);

/// The start is not before the year 2000.
pub fn check_start(errors: &mut FieldErrors, starts_at: DateTime<Utc>) {
    if starts_at < EARLIEST_START {
        errors.add(
            "startsAt",
            FieldError::Invalid(Text {
                ru: "Начало не может быть раньше 2000 года",
                en: "The start cannot be before the year 2000",
            }),
        );
    }
}

/// The end, when given, is after the start.
pub fn check_times(
    errors: &mut FieldErrors,
    starts_at: DateTime<Utc>,
    ends_at: Option<DateTime<Utc>>,
) {
    if ends_at.is_some_and(|end| end <= starts_at) {
        errors.add(
            "endsAt",
            FieldError::Invalid(Text {
                ru: "Окончание должно быть позже начала",
                en: "The end must be after the start",
            }),
        );
    }
}

/// Checks a URL field: http(s), at most 500 characters.
pub fn check_url(errors: &mut FieldErrors, field: &str, url: &str) {
    if url.chars().count() > 500 {
        errors.add(field, FieldError::TooLong { max: 500 });
    } else if !crate::validation::is_web_address(url) {
        errors.add(field, FieldError::InvalidFormat);
    }
}

/// Ticket type numbers: price, quantity, reservation minutes, prepayment, sales window.
pub struct TicketNumbers {
    /// Price in the smallest unit.
    pub price_cents: i64,
    /// Seats.
    pub quantity: i32,
    /// Minutes a paid reservation is held, if any.
    pub reservation_minutes: Option<i32>,
    /// Share paid upfront.
    pub prepayment_percent: i32,
    /// Sales open.
    pub sales_start: Option<DateTime<Utc>>,
    /// Sales close.
    pub sales_end: Option<DateTime<Utc>>,
}

/// Highest price accepted: 100 million units of any currency.
const MAX_PRICE_CENTS: i64 = 10_000_000_000;

/// Checks the numbers of a ticket type.
pub fn check_ticket_numbers(errors: &mut FieldErrors, n: &TicketNumbers) {
    if !(0..=MAX_PRICE_CENTS).contains(&n.price_cents) {
        errors.add(
            "priceCents",
            FieldError::OutOfRange {
                min: 0,
                max: MAX_PRICE_CENTS,
            },
        );
    }
    if !(0..=1_000_000).contains(&n.quantity) {
        errors.add(
            "quantity",
            FieldError::OutOfRange {
                min: 0,
                max: 1_000_000,
            },
        );
    }
    if n.reservation_minutes
        .is_some_and(|m| !(1..=10_080).contains(&m))
    {
        errors.add(
            "reservationMinutes",
            FieldError::OutOfRange {
                min: 1,
                max: 10_080,
            },
        );
    }
    if !(0..=100).contains(&n.prepayment_percent) {
        errors.add(
            "prepaymentPercent",
            FieldError::OutOfRange { min: 0, max: 100 },
        );
    }
    if let (Some(start), Some(end)) = (n.sales_start, n.sales_end)
        && end <= start
    {
        errors.add(
            "salesEnd",
            FieldError::Invalid(Text {
                ru: "Окончание продаж должно быть позже начала",
                en: "Sales must end after they start",
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn currencies_and_zones() {
        assert!(is_currency("RUB") && is_currency("EUR"));
        assert!(!is_currency("rub") && !is_currency("XXX") && !is_currency("RUBL"));
        assert!(currencies().all(is_currency));
        assert!(currencies().any(|c| c == "RUB"));
        assert!(
            is_time_zone("Europe/Moscow")
                && is_time_zone("UTC")
                && is_time_zone("America/Argentina/Buenos_Aires")
        );
        assert!(
            !is_time_zone("moscow") && !is_time_zone("Europe/") && !is_time_zone("../etc/passwd")
        );
        assert!(
            !is_time_zone("Mars/Olympus")
                && !is_time_zone("Europe/Atlantis")
                && is_time_zone("Asia/Vladivostok")
        );
    }

    #[test]
    fn events_start_in_2000_or_later() {
        let at = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
        assert_eq!(EARLIEST_START, at("2000-01-01T00:00:00Z"));
        let mut e = FieldErrors::new();
        check_start(&mut e, at("2000-01-01T00:00:00Z"));
        check_start(&mut e, at("2031-06-01T18:00:00Z"));
        assert!(e.is_empty());
        check_start(&mut e, at("1999-12-31T23:59:59Z"));
        assert!(e.get("startsAt").is_some());
        let mut e = FieldErrors::new();
        check_start(&mut e, DateTime::UNIX_EPOCH);
        assert!(e.get("startsAt").is_some());
    }

    #[test]
    fn ticket_numbers() {
        let mut e = FieldErrors::new();
        check_ticket_numbers(
            &mut e,
            &TicketNumbers {
                price_cents: -1,
                quantity: 10,
                reservation_minutes: Some(0),
                prepayment_percent: 101,
                sales_start: None,
                sales_end: None,
            },
        );
        assert!(
            e.get("priceCents").is_some()
                && e.get("reservationMinutes").is_some()
                && e.get("prepaymentPercent").is_some()
        );
        assert!(e.get("quantity").is_none());
    }
}
