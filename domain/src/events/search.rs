//! Finding a person among an event's registrations: every word typed begins a word of the
//! first name or the last name, or begins the email (case does not matter), and at least one
//! of the longest words, or the whole term ("van der Berg"), begins a field itself; or the
//! whole term is a confirmation code. The field beginnings are what an index answers (the
//! storage keeps lower-cased copies of the fields for it); the other words are checked on the
//! rows it found.

use crate::validation::FieldError;

/// Longest search an organizer may type.
pub const MAX_SEARCH_CHARS: usize = 100;

/// How many of the words typed (the longest) are asked of the indexes.
pub const INDEXED_WORDS: usize = 3;

/// A search of an event's registrations, made from what was typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistrationSearch {
    /// The words typed, each once (case aside), in the order typed.
    words: Vec<String>,
    /// The words typed, one space between each, when there are several: a name of several
    /// words ("van der Berg", "Mary Ann") begins with it.
    whole: Option<String>,
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
        // Judged as sent, before trimming: a vertical tab or a line feed at either end is a
        // control character like any other (trimming takes them as spaces), and the limit
        // is the parameter's, as the API document states it.
        if raw.chars().count() > MAX_SEARCH_CHARS {
            return Err(FieldError::TooLong {
                max: MAX_SEARCH_CHARS,
            });
        }
        if raw.chars().any(char::is_control) {
            return Err(FieldError::InvalidFormat);
        }
        let term = raw.trim();
        if term.is_empty() {
            return Ok(None);
        }
        let typed: Vec<&str> = term.split_whitespace().collect();
        let whole = (typed.len() > 1).then(|| typed.join(" "));
        let mut words: Vec<String> = Vec::new();
        for word in typed {
            if !words
                .iter()
                .any(|w| w.to_lowercase() == word.to_lowercase())
            {
                words.push(word.to_owned());
            }
        }
        let code = (term.len() == 8 && term.chars().all(|c| c.is_ascii_alphanumeric()))
            .then(|| term.to_ascii_uppercase());
        Ok(Some(RegistrationSearch {
            words,
            whole,
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

    /// The words asked of the indexes: the longest (the narrowest ranges), at most
    /// `INDEXED_WORDS`, among equals the ones typed first; the rest of the slots empty.
    pub fn indexed(&self) -> [Option<&str>; INDEXED_WORDS] {
        let mut order: Vec<usize> = (0..self.words.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.words[i].chars().count()));
        let mut slots = [None; INDEXED_WORDS];
        for (slot, i) in slots.iter_mut().zip(order) {
            *slot = Some(self.words[i].as_str());
        }
        slots
    }

    pub fn words(&self) -> &[String] {
        &self.words
    }

    pub fn whole(&self) -> Option<&str> {
        self.whole.as_deref()
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
    fn the_longest_words_are_asked_of_the_indexes() {
        let s = RegistrationSearch::parse("  Ann Smith ").unwrap().unwrap();
        assert_eq!(s.indexed(), [Some("Smith"), Some("Ann"), None]);
        assert_eq!(s.words(), ["Ann", "Smith"]);
        assert_eq!(s.whole(), Some("Ann Smith"));
        assert_eq!(s.code(), None);
        let s = RegistrationSearch::parse("a bb ccc dddd").unwrap().unwrap();
        assert_eq!(s.indexed(), [Some("dddd"), Some("ccc"), Some("bb")]);
        assert_eq!(s.words().len(), 4);
        let s = RegistrationSearch::parse(" Lee ").unwrap().unwrap();
        assert_eq!(s.indexed(), [Some("Lee"), None, None]);
        assert_eq!(s.whole(), None);
        assert_eq!(RegistrationSearch::parse("   ").unwrap(), None);
    }

    #[test]
    fn equal_lengths_keep_the_typed_order_and_repeats_count_once() {
        let s = RegistrationSearch::parse("Lee Kim lee").unwrap().unwrap();
        assert_eq!(s.words(), ["Lee", "Kim"]);
        assert_eq!(s.indexed(), [Some("Lee"), Some("Kim"), None]);
        // The whole term is what was typed, repeats included.
        assert_eq!(s.whole(), Some("Lee Kim lee"));
    }

    #[test]
    fn a_code_is_also_a_word() {
        let s = RegistrationSearch::parse("ab12cd34").unwrap().unwrap();
        assert_eq!(s.code(), Some("AB12CD34"));
        assert_eq!(s.words(), ["ab12cd34"]);
        let s = RegistrationSearch::parse("ab12 cd34").unwrap().unwrap();
        assert_eq!(s.code(), None);
    }

    #[test]
    fn wildcards_are_plain_characters() {
        let s = RegistrationSearch::parse("50%_off\\").unwrap().unwrap();
        assert_eq!(s.words(), ["50%_off\\"]);
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
        // Trimming would take these for spaces: at either end they are refused all the same
        // (schemathesis sent "…9\u{b}" and was answered 200).
        for edge in ["Anna\u{b}", "\nAnna", "Anna\t", "\u{85}Anna"] {
            assert_eq!(
                RegistrationSearch::parse(edge),
                Err(FieldError::InvalidFormat),
                "{edge:?}"
            );
        }
        // The limit counts what was sent, spaces included.
        let padded = format!("{} ", "a".repeat(MAX_SEARCH_CHARS));
        assert!(matches!(
            RegistrationSearch::parse(&padded),
            Err(FieldError::TooLong { .. })
        ));
        assert_eq!(RegistrationSearch::parse("   "), Ok(None));
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
