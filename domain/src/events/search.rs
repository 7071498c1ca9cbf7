//! Finding a person among an event's registrations: by any part of a name or an email
//! (case does not matter), or by the whole confirmation code.

use crate::validation::FieldError;

/// Longest search an organizer may type.
pub const MAX_SEARCH_CHARS: usize = 100;

/// A search of an event's registrations, made from what was typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistrationSearch {
    /// `%term%` for `LIKE`, lower case, its own `%`, `_` and `\` escaped.
    pattern: String,
    /// The term as a confirmation code, when it can be one (8 letters and digits).
    code: Option<String>,
    /// Whether a name is all it may match: a participant of an open event sees the others'
    /// names, not their emails or codes.
    names_only: bool,
}

impl RegistrationSearch {
    /// The search for `raw`; None for nothing but spaces (no search).
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
        let mut pattern = String::with_capacity(term.len() + 2);
        pattern.push('%');
        for c in term.to_lowercase().chars() {
            if matches!(c, '%' | '_' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push('%');
        let code = (term.len() == 8 && term.chars().all(|c| c.is_ascii_alphanumeric()))
            .then(|| term.to_ascii_uppercase());
        Ok(Some(RegistrationSearch {
            pattern,
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

    pub fn pattern(&self) -> &str {
        &self.pattern
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
    fn what_is_typed_becomes_a_pattern_and_maybe_a_code() {
        let s = RegistrationSearch::parse("  Ann Smi ").unwrap().unwrap();
        assert_eq!(s.pattern(), "%ann smi%");
        assert_eq!(s.code(), None);
        let s = RegistrationSearch::parse("ab12cd34").unwrap().unwrap();
        assert_eq!(s.code(), Some("AB12CD34"));
        assert_eq!(s.pattern(), "%ab12cd34%");
        assert_eq!(RegistrationSearch::parse("   ").unwrap(), None);
    }

    #[test]
    fn wildcards_are_literal() {
        let s = RegistrationSearch::parse("50%_off\\").unwrap().unwrap();
        assert_eq!(s.pattern(), "%50\\%\\_off\\\\%");
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
