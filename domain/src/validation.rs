//! Field-level validation: a request either passes or yields one error per offending field,
//! reported together as the `details` of a `validation_error`.

use crate::i18n::{self, Lang, Text};
use std::collections::BTreeMap;

/// Why a single field was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldError {
    /// The field is missing or null.
    Required,
    /// The value has the wrong JSON type.
    WrongType {
        /// What was expected, e.g. "string" or "uuid".
        expected: String,
    },
    /// The field is not part of the request.
    Unknown,
    /// Shorter than allowed.
    TooShort {
        /// Minimum length in characters.
        min: usize,
    },
    /// Longer than allowed.
    TooLong {
        /// Maximum length in characters.
        max: usize,
    },
    /// A number outside its range.
    OutOfRange {
        /// Smallest allowed value.
        min: i64,
        /// Largest allowed value.
        max: i64,
    },
    /// A value outside an enumeration.
    NotAllowed {
        /// The values that are accepted.
        allowed: Vec<String>,
    },
    /// The value does not have the expected shape.
    InvalidFormat,
    /// The body is not JSON; reported under the field `body`.
    MalformedJson {
        /// Line of the first error.
        line: usize,
        /// Column of the first error.
        column: usize,
    },
    /// A rule with its own wording.
    Invalid(Text),
}

/// The errors of one request, keyed by field name (camelCase, dotted for nested fields).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldErrors(BTreeMap<String, FieldError>);

impl FieldErrors {
    /// No errors yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A single error.
    pub fn single(field: impl Into<String>, error: FieldError) -> Self {
        let mut errors = Self::new();
        errors.add(field, error);
        errors
    }

    /// Records an error; the first error of a field is kept.
    pub fn add(&mut self, field: impl Into<String>, error: FieldError) {
        self.0.entry(field.into()).or_insert(error);
    }

    /// True when nothing was refused.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The error of a field, if any.
    pub fn get(&self, field: &str) -> Option<&FieldError> {
        self.0.get(field)
    }

    /// `Ok(())` when empty, the errors otherwise.
    pub fn into_result(self) -> Result<(), FieldErrors> {
        if self.is_empty() { Ok(()) } else { Err(self) }
    }

    /// Field name to message, in the requested language.
    pub fn render(&self, lang: Lang) -> BTreeMap<String, String> {
        self.0
            .iter()
            .map(|(field, error)| (field.clone(), i18n::field_message(error, lang)))
            .collect()
    }

    /// Checks the length of a string in characters (not bytes).
    pub fn check_length(&mut self, field: &str, value: &str, min: usize, max: usize) {
        let len = value.chars().count();
        if len < min {
            if min == 1 {
                self.add(field, FieldError::Required);
            } else {
                self.add(field, FieldError::TooShort { min });
            }
        } else if len > max {
            self.add(field, FieldError::TooLong { max });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_counts_characters_not_bytes() {
        let mut errors = FieldErrors::new();
        errors.check_length("name", "Москва", 1, 6);
        assert!(errors.is_empty());
        errors.check_length("name", "Москва!", 1, 6);
        assert_eq!(errors.get("name"), Some(&FieldError::TooLong { max: 6 }));
    }

    #[test]
    fn first_error_of_a_field_wins_and_renders_in_both_languages() {
        let mut errors = FieldErrors::new();
        errors.add("email", FieldError::Required);
        errors.add("email", FieldError::InvalidFormat);
        assert_eq!(errors.render(Lang::En)["email"], "This field is required");
        assert_eq!(errors.render(Lang::Ru)["email"], "Обязательное поле");
        assert!(errors.into_result().is_err());
    }
}
