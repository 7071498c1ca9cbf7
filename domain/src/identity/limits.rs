//! The identity service's numbers, from the spec's Limits table.

use chrono::Duration;

/// Failed logins that lock an account.
pub const MAX_FAILED_LOGINS: i32 = 5;
/// How long a locked account stays locked.
pub fn lock_duration() -> Duration {
    Duration::minutes(15)
}
/// Active sessions (refresh tokens) per user; older ones are revoked.
pub const MAX_SESSIONS: i64 = 10;
/// Access token lifetime.
pub fn access_token_ttl() -> Duration {
    Duration::minutes(15)
}
/// Refresh token lifetime.
pub fn refresh_token_ttl() -> Duration {
    Duration::days(7)
}
/// Email verification token validity.
pub fn email_verification_ttl() -> Duration {
    Duration::hours(24)
}
/// Password reset token validity.
pub fn password_reset_ttl() -> Duration {
    Duration::hours(1)
}
/// Verification and reset mails together per email address within `mail_window`, the
/// sign-up mail included.
pub const MAILS_PER_WINDOW: i64 = 3;
/// The window of the mail limit.
pub fn mail_window() -> Duration {
    Duration::hours(1)
}
/// Whether one more verification or reset mail may go to an address that was asked
/// `asked_in_window` of them (of either kind, sign-up included) within `mail_window`. Asks for
/// unknown addresses count alike, so the answer never tells whether an account exists.
pub fn mail_allowed(asked_in_window: i64) -> bool {
    asked_in_window < MAILS_PER_WINDOW
}
/// Organization invite validity.
pub fn invite_ttl() -> Duration {
    Duration::days(7)
}
/// How long an approved request keeps its slug for the requester.
pub fn slug_reservation() -> Duration {
    Duration::days(7)
}
/// How old a messenger sign-in payload may be.
pub fn messenger_auth_max_age() -> Duration {
    Duration::minutes(10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_mails_an_hour_whatever_their_kind() {
        assert!(mail_allowed(0));
        assert!(mail_allowed(2), "the third mail goes");
        assert!(!mail_allowed(3), "the fourth does not");
        assert!(!mail_allowed(40));
    }
}
