//! What the notification service tells a client it refuses, in both languages.

use crate::catalogue::refusals;

refusals! {
    /// A refusal of the notification service.
    pub enum NotificationRefusal {
        /// Linking a chat while no messenger bot is configured.
        BotNotConfigured => (BusinessRule,
            "Бот мессенджера не настроен",
            "The messenger bot is not configured"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn every_refusal_is_worded_in_both_languages() {
        crate::catalogue::assert_worded(NotificationRefusal::ALL.iter().map(|r| r.text()));
        assert_eq!(
            NotificationRefusal::BotNotConfigured.code(),
            ErrorCode::BusinessRule
        );
    }
}
