//! Finding a person among an event's registrations: every word typed begins the first name,
//! the last name or the email (case does not matter), or the whole term is a confirmation
//! code. Beginnings rather than any part, so that one index range answers each word (the
//! storage keeps lower-cased copies of the fields for it).

use crate::validation::FieldError;

/// Longest search an organizer may type.
pub const MAX_SEARCH_CHARS: usize = 100;

/// A search of an event's registrations, made from what was typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistrationSearch {
    /// The word the index is asked for: the longest, so the range read is the narrowest.
    lead: String,
    /// The other words, each of which must also begin a field (checked on the rows the lead
    /// found).
    rest: Vec<String>,
    /// The term as a confirmation code, when it can be one (8 letters and digits).
    code: Option<String>,
    /// Whether a name is all it may match: a participant of an open event sees the others'
    /// names, not their emails or codes.
    names_only: bool,
}

impl RegistrationSearch {
    /// The search for `raw`; None for nothing but spaces (no search). Words keep their case:
    /// the database lower-cases them as it lower-cased the stored fields, so both sides follow
    /// one rule.
    pub fn parse(raw: &str) -> Result<Option<RegistrationSearch>, FieldError> {
        let term = raw.trim();
        if term.is_empty() {
            return Ok(None);
        }
        if term.chars().count() > MAX_SEARCH_CHARS {
            return Err(FieldError::TooLong {
                max: MAX_SEARCH_CHARS,
            });
        }
        if term.chars().any(char::is_control) {
            return Err(FieldError::InvalidFormat);
        }
        let mut words: Vec<String> = Vec::new();
        for word in term.split_whitespace() {
            if !words
                .iter()
                .any(|w| w.to_lowercase() == word.to_lowercase())
            {
                words.push(word.to_owned());
            }
        }
        // The longest word first; among equals, the one typed first.
        let longest = (0..words.len())
            .max_by_key(|&i| (words[i].chars().count(), std::cmp::Reverse(i)))
            .unwrap_or(0);
        let lead = words.remove(longest);
        let code = (term.len() == 8 && term.chars().all(|c| c.is_ascii_alphanumeric()))
            .then(|| term.to_ascii_uppercase());
        Ok(Some(RegistrationSearch {
            lead,
            rest: words,
            code,
            names_only: false,
        }))
    }

    /// The same search over names alone.
    pub fn names_only(self) -> RegistrationSearch {
        RegistrationSearch {
            code: None,
            names_only: true,
            ..self
        }
    }

    pub fn lead(&self) -> &str {
        &self.lead
    }

    pub fn rest(&self) -> &[String] {
        &self.rest
    }

    pub fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }

    pub fn is_names_only(&self) -> bool {
        self.names_only
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_word_leads_and_the_others_follow() {
        let s = RegistrationSearch::parse("  Ann Smith ").unwrap().unwrap();
        assert_eq!(s.lead(), "Smith");
        assert_eq!(s.rest(), ["Ann"]);
        assert_eq!(s.code(), None);
        let s = RegistrationSearch::parse("анна  попова").unwrap().unwrap();
        assert_eq!(s.lead(), "попова");
        assert_eq!(s.rest(), ["анна"]);
        assert_eq!(RegistrationSearch::parse("   ").unwrap(), None);
    }

    #[test]
    fn equal_lengths_keep_the_typed_order_and_repeats_count_once() {
        let s = RegistrationSearch::parse("Lee Kim lee").unwrap().unwrap();
        assert_eq!(s.lead(), "Lee");
        assert_eq!(s.rest(), ["Kim"]);
    }

    #[test]
    fn a_code_is_also_a_word() {
        let s = RegistrationSearch::parse("ab12cd34").unwrap().unwrap();
        assert_eq!(s.code(), Some("AB12CD34"));
        assert_eq!(s.lead(), "ab12cd34");
        assert!(s.rest().is_empty());
        let s = RegistrationSearch::parse("ab12 cd34").unwrap().unwrap();
        assert_eq!(s.code(), None);
    }

    #[test]
    fn wildcards_are_plain_characters() {
        let s = RegistrationSearch::parse("50%_off\\").unwrap().unwrap();
        assert_eq!(s.lead(), "50%_off\\");
    }

    #[test]
    fn too_long_or_control_characters_are_refused() {
        let long = "a".repeat(MAX_SEARCH_CHARS + 1);
        assert_eq!(
            RegistrationSearch::parse(&long),
            Err(FieldError::TooLong {
                max: MAX_SEARCH_CHARS
            })
        );
        assert!(RegistrationSearch::parse(&"я".repeat(MAX_SEARCH_CHARS)).is_ok());
        assert_eq!(
            RegistrationSearch::parse("a\u{0}b"),
            Err(FieldError::InvalidFormat)
        );
    }

    #[test]
    fn a_participant_searches_names_only() {
        let s = RegistrationSearch::parse("AB12CD34")
            .unwrap()
            .unwrap()
            .names_only();
        assert!(s.is_names_only());
        assert_eq!(s.code(), None);
    }
}
