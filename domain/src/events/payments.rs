//! Payments: what a payment notice does to a registration, and the signature of the payment
//! provider's webhook. A payment never disappears: it confirms the registration it was for,
//! takes a free seat when its reservation ran out, or asks for a refund.

use super::refusals::EventRefusal;
use super::registrations::RegistrationStatus;
use crate::error::Refusal;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// What the provider says happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaymentKind {
    /// The money arrived.
    Completed,
    /// The payment did not go through.
    Failed,
    /// The money went back.
    Refunded,
}

impl PaymentKind {
    /// From the routing key or webhook type (`payment.completed` …).
    pub fn from_type(event_type: &str) -> Option<PaymentKind> {
        match event_type {
            "payment.completed" => Some(Self::Completed),
            "payment.failed" => Some(Self::Failed),
            "payment.refunded" => Some(Self::Refunded),
            _ => None,
        }
    }

    /// Database spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "COMPLETED",
            Self::Failed => "FAILED",
            Self::Refunded => "REFUNDED",
        }
    }
}

/// How a payment reached bilet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Channel {
    /// A payment event on the broker.
    Broker,
    /// The provider's signed webhook.
    Webhook,
    /// An organizer confirming cash or a bank transfer.
    Manual,
}

impl Channel {
    /// Database spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Broker => "BROKER",
            Self::Webhook => "WEBHOOK",
            Self::Manual => "MANUAL",
        }
    }
}

/// What a payment did.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PaymentOutcome {
    /// A registration awaiting payment is confirmed.
    Confirmed,
    /// A registration that had run out (or was cancelled) got a free seat again.
    SeatTaken,
    /// Nothing can be given for the money: a refund is asked for.
    RefundRequested,
    /// A failure or refund cancelled the registration.
    Cancelled,
    /// Nothing to change (a failure for a registration no longer active).
    NoChange,
}

impl PaymentOutcome {
    /// Database spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Confirmed => "CONFIRMED",
            Self::SeatTaken => "SEAT_TAKEN",
            Self::RefundRequested => "REFUND_REQUESTED",
            Self::Cancelled => "CANCELLED",
            Self::NoChange => "NO_CHANGE",
        }
    }

    /// From the database spelling.
    pub fn parse(s: &str) -> Option<PaymentOutcome> {
        [
            Self::Confirmed,
            Self::SeatTaken,
            Self::RefundRequested,
            Self::Cancelled,
            Self::NoChange,
        ]
        .into_iter()
        .find(|o| o.as_str() == s)
    }
}

/// Whether a late payment could still buy the seat it was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeatChance {
    /// The event takes registrations (published) and the ticket type is on sale.
    pub open: bool,
    /// A seat of the type is free.
    pub seat_free: bool,
    /// The person holds another active registration for the event.
    pub registered_otherwise: bool,
}

/// Whether a payment of `amount` in `currency` (either unknown: trusted) pays for a ticket of
/// `price_cents` in `ticket_currency` with `prepayment_percent` due up front.
pub fn covers(
    amount: Option<i64>,
    currency: Option<&str>,
    price_cents: i64,
    ticket_currency: &str,
    prepayment_percent: i32,
) -> bool {
    let due = super::checkout::amount_due(price_cents, prepayment_percent);
    currency.is_none_or(|c| c.eq_ignore_ascii_case(ticket_currency))
        && amount.is_none_or(|a| a >= due)
}

/// What a payment of `kind` does to a registration in `status`; a completed payment that does
/// not cover the ticket (`covered` false) buys nothing and is returned.
pub fn effect(
    kind: PaymentKind,
    status: RegistrationStatus,
    chance: SeatChance,
    covered: bool,
) -> PaymentOutcome {
    use RegistrationStatus::*;
    match kind {
        PaymentKind::Completed if !covered => PaymentOutcome::RefundRequested,
        PaymentKind::Completed => match status {
            Reserved | Pending => PaymentOutcome::Confirmed,
            // Paid once already: the second payment buys nothing.
            Confirmed | CheckedIn => PaymentOutcome::RefundRequested,
            Expired | Cancelled
                if chance.open && chance.seat_free && !chance.registered_otherwise =>
            {
                PaymentOutcome::SeatTaken
            }
            Expired | Cancelled => PaymentOutcome::RefundRequested,
        },
        PaymentKind::Failed | PaymentKind::Refunded if status.is_active() => {
            PaymentOutcome::Cancelled
        }
        PaymentKind::Failed | PaymentKind::Refunded => PaymentOutcome::NoChange,
    }
}

/// The cancellation reason a failed or refunded payment leaves.
pub fn cancellation_reason(kind: PaymentKind) -> &'static str {
    match kind {
        PaymentKind::Refunded => "PAYMENT_REFUNDED",
        _ => "PAYMENT_FAILED",
    }
}

/// What an organizer taking cash does to a registration in `status`: it confirms what awaits
/// payment, takes a free seat for a reservation that ran out, and changes nothing for a
/// registration already paid (a second click is not a second payment); without a seat it is
/// refused, since the money is still in the organizer's hand.
pub fn manual_effect(
    status: RegistrationStatus,
    chance: SeatChance,
) -> Result<PaymentOutcome, Refusal> {
    use RegistrationStatus::*;
    match status {
        Confirmed | CheckedIn => Ok(PaymentOutcome::NoChange),
        _ => match effect(PaymentKind::Completed, status, chance, true) {
            PaymentOutcome::RefundRequested => Err(Refusal::from(EventRefusal::NoSeatForCash)),
            outcome => Ok(outcome),
        },
    }
}

/// How old a webhook signature may be.
pub const SIGNATURE_TOLERANCE_SECONDS: i64 = 300;

/// Why a webhook signature was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// No `X-Bilet-Signature` header.
    #[error("the X-Bilet-Signature header is missing")]
    Missing,
    /// Not `t=<unix seconds>,v1=<hex>`.
    #[error("the X-Bilet-Signature header is malformed")]
    Malformed,
    /// Older (or newer) than five minutes.
    #[error("the signature is older than five minutes")]
    Stale,
    /// Not made with the shared secret over this body.
    #[error("the signature does not match the body")]
    Mismatch,
}

fn mac(secret: &[u8], t: i64, body: &[u8]) -> Option<Hmac<Sha256>> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).ok()?;
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Some(mac)
}

/// The header a provider sends for `body` at unix time `t`.
pub fn signature_header(secret: &[u8], t: i64, body: &[u8]) -> String {
    let hex = mac(secret, t, body)
        .map(|m| hex::encode(m.finalize().into_bytes()))
        .unwrap_or_default();
    format!("t={t},v1={hex}")
}

/// Checks `X-Bilet-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`.
/// Several `v1` values are accepted (a provider rotating its secret sends both).
pub fn verify_signature(
    secret: &[u8],
    header: Option<&str>,
    body: &[u8],
    now: i64,
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let mut t: Option<i64> = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => {
                t = Some(value.parse().map_err(|_| SignatureError::Malformed)?);
            }
            Some(("v1", value)) => {
                signatures.push(hex::decode(value).map_err(|_| SignatureError::Malformed)?);
            }
            Some(_) => {}
            None => return Err(SignatureError::Malformed),
        }
    }
    let t = t.ok_or(SignatureError::Malformed)?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    // abs_diff, not (now - t).abs(): `t` comes from the caller and i64::MIN would overflow.
    if now.abs_diff(t) > SIGNATURE_TOLERANCE_SECONDS.unsigned_abs() {
        return Err(SignatureError::Stale);
    }
    for signature in signatures {
        if let Some(mac) = mac(secret, t, body)
            && mac.verify_slice(&signature).is_ok()
        {
            return Ok(());
        }
    }
    Err(SignatureError::Mismatch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use RegistrationStatus::*;

    const OPEN: SeatChance = SeatChance {
        open: true,
        seat_free: true,
        registered_otherwise: false,
    };

    #[test]
    fn cash_confirms_once_and_never_without_a_seat() {
        let full = SeatChance {
            seat_free: false,
            ..OPEN
        };
        assert_eq!(manual_effect(Pending, OPEN), Ok(PaymentOutcome::Confirmed));
        assert_eq!(manual_effect(Confirmed, OPEN), Ok(PaymentOutcome::NoChange));
        assert_eq!(manual_effect(Expired, OPEN), Ok(PaymentOutcome::SeatTaken));
        assert_eq!(
            manual_effect(Expired, full),
            Err(Refusal::from(EventRefusal::NoSeatForCash))
        );
        assert!(manual_effect(Cancelled, full).is_err());
    }

    #[test]
    fn a_completed_payment_confirms_or_takes_a_free_seat_or_asks_for_a_refund() {
        let done = PaymentKind::Completed;
        let effect = |k, s, c| effect(k, s, c, true);
        assert_eq!(effect(done, Reserved, OPEN), PaymentOutcome::Confirmed);
        assert_eq!(effect(done, Pending, OPEN), PaymentOutcome::Confirmed);
        assert_eq!(effect(done, Expired, OPEN), PaymentOutcome::SeatTaken);
        assert_eq!(effect(done, Cancelled, OPEN), PaymentOutcome::SeatTaken);
        for closed in [
            SeatChance {
                open: false,
                ..OPEN
            },
            SeatChance {
                seat_free: false,
                ..OPEN
            },
            SeatChance {
                registered_otherwise: true,
                ..OPEN
            },
        ] {
            assert_eq!(
                effect(done, Expired, closed),
                PaymentOutcome::RefundRequested
            );
            assert_eq!(
                effect(done, Cancelled, closed),
                PaymentOutcome::RefundRequested
            );
        }
        assert_eq!(
            effect(done, Confirmed, OPEN),
            PaymentOutcome::RefundRequested
        );
        assert_eq!(
            effect(done, CheckedIn, OPEN),
            PaymentOutcome::RefundRequested
        );
    }

    #[test]
    fn a_failure_or_refund_cancels_from_any_active_state() {
        let effect = |k, s, c| effect(k, s, c, true);
        for kind in [PaymentKind::Failed, PaymentKind::Refunded] {
            for status in [Reserved, Pending, Confirmed, CheckedIn] {
                assert_eq!(effect(kind, status, OPEN), PaymentOutcome::Cancelled);
            }
            for status in [Cancelled, Expired] {
                assert_eq!(effect(kind, status, OPEN), PaymentOutcome::NoChange);
            }
        }
    }

    #[test]
    fn a_payment_must_cover_what_is_due() {
        assert!(covers(Some(1500), Some("RUB"), 1500, "RUB", 100));
        assert!(covers(Some(1500), Some("rub"), 1500, "RUB", 100));
        assert!(
            !covers(Some(1), Some("RUB"), 1500, "RUB", 100),
            "a cent is not a ticket"
        );
        assert!(
            !covers(Some(1500), Some("USD"), 1500, "RUB", 100),
            "another currency"
        );
        assert!(
            covers(Some(450), Some("RUB"), 1500, "RUB", 30),
            "the prepayment is due"
        );
        assert!(!covers(Some(449), Some("RUB"), 1500, "RUB", 30));
        assert!(
            covers(None, None, 1500, "RUB", 100),
            "nothing said: trusted"
        );
        assert_eq!(
            effect(
                PaymentKind::Completed,
                RegistrationStatus::Reserved,
                OPEN,
                false
            ),
            PaymentOutcome::RefundRequested
        );
        assert_eq!(
            effect(
                PaymentKind::Failed,
                RegistrationStatus::Reserved,
                OPEN,
                false
            ),
            PaymentOutcome::Cancelled,
            "a failure needs no amount"
        );
    }

    #[test]
    fn signatures_are_checked_for_secret_body_and_age() {
        let secret = b"whsec_test";
        let body = br#"{"id":"pay_1"}"#;
        let header = signature_header(secret, 1_000, body);
        assert!(header.starts_with("t=1000,v1="));
        assert_eq!(verify_signature(secret, Some(&header), body, 1_100), Ok(()));
        assert_eq!(
            verify_signature(secret, Some(&header), body, 1_301),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify_signature(secret, Some(&header), br#"{"id":"pay_2"}"#, 1_000),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_signature(b"other", Some(&header), body, 1_000),
            Err(SignatureError::Mismatch)
        );
        let rotated = format!("{header},v1={}", "00".repeat(32));
        assert_eq!(
            verify_signature(secret, Some(&rotated), body, 1_000),
            Ok(())
        );
        for bad in [
            "",
            "t=1000",
            "v1=00",
            "t=x,v1=00",
            "t=1000,v1=zz",
            "garbage",
        ] {
            assert_eq!(
                verify_signature(secret, Some(bad), body, 1_000),
                Err(SignatureError::Malformed),
                "{bad}"
            );
        }
        assert_eq!(
            verify_signature(secret, None, body, 1_000),
            Err(SignatureError::Missing)
        );
        for extreme in [i64::MIN, i64::MAX] {
            let header = signature_header(secret, extreme, body);
            assert_eq!(
                verify_signature(secret, Some(&header), body, 1_000),
                Err(SignatureError::Stale),
                "t={extreme}"
            );
        }
    }
}
