//! The wording of the fields the analytics service refuses, in both languages.

use crate::catalogue::field_texts;

field_texts! {
    /// The wording of a field the analytics service refuses.
    pub enum AnalyticsFieldText {
        /// A tracked event type clients may not send.
        UntrackedType => (
            "Допустимо: page.view, registration.started",
            "One of page.view, registration.started"),
        /// A period whose `to` is not after its `from`.
        ToNotAfterFrom => (
            "Должно быть позже from",
            "Must be after from"),
        /// An export whose `dateTo` is not after its `dateFrom`.
        DateToNotAfterDateFrom => (
            "Должно быть позже dateFrom",
            "Must be after dateFrom"),
        /// An export period longer than `MAX_EXPORT_DAYS`.
        PeriodTooLong => (
            "Период не длиннее 366 дней",
            "The period is at most 366 days"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_text_is_worded_in_both_languages() {
        crate::catalogue::assert_worded(AnalyticsFieldText::ALL.iter().map(|t| t.text()));
    }
}
