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
/// Verification or reset mails per email address and kind within `mail_window`.
pub const MAILS_PER_WINDOW: i64 = 3;
/// The window of the mail limit.
pub fn mail_window() -> Duration {
    Duration::hours(1)
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
