//! Checkout: a participant paying a registration through a payment provider. One open payment
//! per registration at a time; a declined one may be followed by another (a new attempt, a new
//! idempotency key); what the provider finally says reaches the registration through
//! `payments::effect`, like every other payment.

use super::refusals::EventRefusal;
use super::registrations::RegistrationStatus;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The payment providers bilet talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// bilet's own pages with Pay and Decline, for development; never in production.
    Test,
    /// YooKassa (roubles).
    #[serde(rename = "yookassa")]
    YooKassa,
    /// Stripe Checkout (other currencies).
    Stripe,
}

impl ProviderKind {
    /// Every provider.
    pub const ALL: [ProviderKind; 3] = [Self::Test, Self::YooKassa, Self::Stripe];

    /// Its name in settings, paths and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Test => "test",
            Self::YooKassa => "yookassa",
            Self::Stripe => "stripe",
        }
    }

    /// From its name.
    pub fn parse(s: &str) -> Option<ProviderKind> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// Where a checkout stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CheckoutStatus {
    /// Written, the provider not yet (or not surely) asked: asking again with the same key
    /// returns the same payment.
    Creating,
    /// The provider holds a payment waiting for the person.
    Open,
    /// The provider took the money.
    Paid,
    /// The person declined or the provider refused; another attempt may follow.
    Declined,
    /// The reservation ended first; the provider's payment is cancelled where it allows.
    Closed,
}

impl CheckoutStatus {
    /// Database spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Creating => "CREATING",
            Self::Open => "OPEN",
            Self::Paid => "PAID",
            Self::Declined => "DECLINED",
            Self::Closed => "CLOSED",
        }
    }

    /// From the database spelling.
    pub fn parse(s: &str) -> Option<CheckoutStatus> {
        [
            Self::Creating,
            Self::Open,
            Self::Paid,
            Self::Declined,
            Self::Closed,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
    }

    /// Still waiting for the person: a checkout asked for now returns this one.
    pub fn is_open(self) -> bool {
        matches!(self, Self::Creating | Self::Open)
    }

    /// Whether the provider's word `to` may follow. A payment settled (paid) stays settled;
    /// a late success after a decline or a close is still money received, so it is taken.
    pub fn may_become(self, to: CheckoutStatus) -> bool {
        use CheckoutStatus::*;
        matches!(
            (self, to),
            (Creating, Open)
                | (Creating | Open, Declined | Closed)
                | (Creating | Open | Declined | Closed, Paid)
        )
    }
}

/// Whether a registration in `status` can be paid at a provider now.
pub fn may_check_out(status: RegistrationStatus) -> Result<(), EventRefusal> {
    match status {
        RegistrationStatus::Reserved | RegistrationStatus::Pending => Ok(()),
        _ => Err(EventRefusal::NotAwaitingPayment),
    }
}

/// What is due up front for a ticket of `price_cents` with `prepayment_percent` (rounded up to
/// the smallest unit: a percentage never makes a ticket cheaper by a fraction of a kopeck).
pub fn amount_due(price_cents: i64, prepayment_percent: i32) -> i64 {
    let due = (i128::from(price_cents) * i128::from(prepayment_percent.clamp(0, 100)) + 99) / 100;
    i64::try_from(due).unwrap_or(i64::MAX)
}

/// Which providers the installation (or the organization) has the keys for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Configured {
    /// YooKassa's shop id and secret key are set.
    pub yookassa: bool,
    /// Stripe's secret key is set.
    pub stripe: bool,
    /// The `test` provider may be used (never in production).
    pub test: bool,
}

/// The provider a payment in `currency` goes to: `test` when it is the chosen one; YooKassa
/// for roubles; Stripe for every other currency (and for roubles when YooKassa has no keys).
pub fn choose_provider(
    chosen: ProviderKind,
    currency: &str,
    configured: Configured,
) -> Result<ProviderKind, EventRefusal> {
    match chosen {
        ProviderKind::Test if configured.test => Ok(ProviderKind::Test),
        ProviderKind::Test => Err(EventRefusal::PaymentsNotConfigured),
        _ if currency.eq_ignore_ascii_case("RUB") && configured.yookassa => {
            Ok(ProviderKind::YooKassa)
        }
        _ if configured.stripe => Ok(ProviderKind::Stripe),
        _ if configured.yookassa => Err(EventRefusal::CurrencyNotSupported),
        _ => Err(EventRefusal::PaymentsNotConfigured),
    }
}

/// The provider a payment in `currency` goes to when the organization has accounts of its own
/// (`own`) besides the platform's (`platform`), and whether it is the organization's own: its
/// own account wins wherever it covers the currency, and having one means real providers for
/// its events even where the platform pays with the test provider.
pub fn choose_account(
    chosen: ProviderKind,
    currency: &str,
    platform: Configured,
    own: Configured,
) -> Result<(ProviderKind, bool), EventRefusal> {
    let has_own = own.yookassa || own.stripe;
    let chosen = match chosen {
        ProviderKind::Test if has_own => ProviderKind::YooKassa,
        other => other,
    };
    let combined = Configured {
        yookassa: platform.yookassa || own.yookassa,
        stripe: platform.stripe || own.stripe,
        test: platform.test,
    };
    let kind = choose_provider(chosen, currency, combined)?;
    let is_own = match kind {
        ProviderKind::YooKassa => own.yookassa,
        ProviderKind::Stripe => own.stripe,
        ProviderKind::Test => false,
    };
    Ok((kind, is_own))
}

/// The key the provider deduplicates a payment by: the registration and the attempt, so a
/// retried request finds the same payment and a new attempt after a decline makes a new one.
pub fn idempotency_key(registration: Uuid, attempt: i32) -> String {
    format!("bilet-{}-{attempt}", registration.simple())
}

/// An amount as providers write it in JSON (YooKassa): units, a dot, two decimals.
pub fn decimal_amount(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let abs = cents.unsigned_abs();
    format!("{sign}{}.{:02}", abs / 100, abs % 100)
}

/// Reads an amount written as units with at most two decimals (`"1500.00"`, `"3.5"`) back
/// into the smallest unit.
pub fn parse_decimal_amount(text: &str) -> Option<i64> {
    let (units, fraction) = text.split_once('.').unwrap_or((text, ""));
    if units.is_empty()
        || fraction.len() > 2
        || !units.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let units: i64 = units.parse().ok()?;
    let fraction: i64 = match fraction.len() {
        0 => 0,
        1 => fraction.parse::<i64>().ok()? * 10,
        _ => fraction.parse().ok()?,
    };
    units.checked_mul(100)?.checked_add(fraction)
}

/// A description the provider shows the payer: the event and the ticket type, cut to `max`
/// characters (YooKassa takes 128).
pub fn description(event_title: &str, ticket_type: &str, max: usize) -> String {
    let full = format!("{event_title} — {ticket_type}");
    if full.chars().count() <= max {
        return full;
    }
    let mut cut: String = full.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_registrations_awaiting_payment_check_out() {
        use RegistrationStatus::*;
        assert!(may_check_out(Reserved).is_ok());
        assert!(may_check_out(Pending).is_ok());
        for s in [Confirmed, CheckedIn, Cancelled, Expired] {
            assert_eq!(may_check_out(s), Err(EventRefusal::NotAwaitingPayment));
        }
    }

    #[test]
    fn the_prepayment_is_rounded_up() {
        assert_eq!(amount_due(150_000, 100), 150_000);
        assert_eq!(amount_due(999, 50), 500);
        assert_eq!(amount_due(1000, 0), 0);
        assert_eq!(amount_due(1000, 250), 1000, "clamped to the price");
    }

    #[test]
    fn roubles_go_to_yookassa_and_the_rest_to_stripe() {
        let both = Configured {
            yookassa: true,
            stripe: true,
            test: false,
        };
        assert_eq!(
            choose_provider(ProviderKind::YooKassa, "RUB", both),
            Ok(ProviderKind::YooKassa)
        );
        assert_eq!(
            choose_provider(ProviderKind::YooKassa, "EUR", both),
            Ok(ProviderKind::Stripe)
        );
        assert_eq!(
            choose_provider(ProviderKind::Stripe, "RUB", both),
            Ok(ProviderKind::YooKassa)
        );
        let yookassa = Configured {
            yookassa: true,
            ..Configured::default()
        };
        assert_eq!(
            choose_provider(ProviderKind::YooKassa, "EUR", yookassa),
            Err(EventRefusal::CurrencyNotSupported)
        );
        assert_eq!(
            choose_provider(ProviderKind::Stripe, "USD", Configured::default()),
            Err(EventRefusal::PaymentsNotConfigured)
        );
        assert_eq!(
            choose_provider(ProviderKind::Test, "RUB", both),
            Err(EventRefusal::PaymentsNotConfigured),
            "production never pays with the test provider"
        );
        let dev = Configured {
            test: true,
            ..Configured::default()
        };
        assert_eq!(
            choose_provider(ProviderKind::Test, "EUR", dev),
            Ok(ProviderKind::Test)
        );
    }

    #[test]
    fn an_organizations_own_account_wins_where_it_covers_the_currency() {
        let dev = Configured {
            test: true,
            ..Configured::default()
        };
        let own_shop = Configured {
            yookassa: true,
            ..Configured::default()
        };
        assert_eq!(
            choose_account(ProviderKind::Test, "RUB", dev, own_shop),
            Ok((ProviderKind::YooKassa, true))
        );
        assert_eq!(
            choose_account(ProviderKind::Test, "RUB", dev, Configured::default()),
            Ok((ProviderKind::Test, false))
        );
        let platform_stripe = Configured {
            stripe: true,
            ..Configured::default()
        };
        assert_eq!(
            choose_account(ProviderKind::Stripe, "EUR", platform_stripe, own_shop),
            Ok((ProviderKind::Stripe, false)),
            "euros through the platform's Stripe"
        );
        assert_eq!(
            choose_account(ProviderKind::Stripe, "RUB", platform_stripe, own_shop),
            Ok((ProviderKind::YooKassa, true))
        );
        assert_eq!(
            choose_account(ProviderKind::Test, "EUR", dev, own_shop),
            Err(EventRefusal::CurrencyNotSupported)
        );
    }

    #[test]
    fn amounts_have_two_decimals_both_ways() {
        assert_eq!(decimal_amount(150_000), "1500.00");
        assert_eq!(decimal_amount(5), "0.05");
        assert_eq!(decimal_amount(-1234), "-12.34");
        assert_eq!(parse_decimal_amount("1500.00"), Some(150_000));
        assert_eq!(parse_decimal_amount("3.5"), Some(350));
        assert_eq!(parse_decimal_amount("7"), Some(700));
        for bad in ["", ".5", "1.234", "1,00", "-1.00", "1e3", "abc"] {
            assert_eq!(parse_decimal_amount(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_new_attempt_gets_a_new_key() {
        let r = Uuid::nil();
        assert_ne!(idempotency_key(r, 1), idempotency_key(r, 2));
        assert_eq!(idempotency_key(r, 1), idempotency_key(r, 1));
    }

    #[test]
    fn settled_payments_stay_settled() {
        use CheckoutStatus::*;
        assert!(Creating.may_become(Open));
        assert!(Open.may_become(Paid));
        assert!(
            Declined.may_become(Paid),
            "a late success is money received"
        );
        assert!(!Paid.may_become(Declined));
        assert!(!Paid.may_become(Closed));
        assert!(!Declined.may_become(Open));
    }

    #[test]
    fn descriptions_fit_the_provider() {
        assert_eq!(description("Opera", "Stalls", 128), "Opera — Stalls");
        let long = description(&"x".repeat(200), "Stalls", 128);
        assert_eq!(long.chars().count(), 128);
        assert!(long.ends_with('…'));
    }
}
