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

/// The largest magnitude of a number in a free-form object (settings, custom fields): 2^53 − 1,
/// what a browser holds exactly. PostgreSQL keeps any size but writes a huge one back in full
/// digits that nothing downstream reads as a number: a row stored with one could not be read.
pub const JSON_NUMBER_MAX: i64 = 9_007_199_254_740_991;

/// A free-form object that is stored as `jsonb` and read back: an object of at most
/// `max_bytes` serialized, no NUL in keys or strings (`jsonb` refuses it), numbers within
/// ±`JSON_NUMBER_MAX`.
pub fn check_stored_object(
    errors: &mut FieldErrors,
    field: &str,
    value: &serde_json::Value,
    max_bytes: usize,
) {
    use serde_json::Value;
    fn storable(value: &Value) -> Result<(), FieldError> {
        match value {
            Value::Number(n) => {
                let limit = JSON_NUMBER_MAX as u64;
                let within = match (n.as_i64(), n.as_u64(), n.as_f64()) {
                    (Some(i), _, _) => i.unsigned_abs() <= limit,
                    (None, Some(u), _) => u <= limit,
                    (None, None, Some(f)) => f.abs() <= JSON_NUMBER_MAX as f64,
                    _ => false,
                };
                if within {
                    Ok(())
                } else {
                    Err(FieldError::OutOfRange {
                        min: -JSON_NUMBER_MAX,
                        max: JSON_NUMBER_MAX,
                    })
                }
            }
            Value::String(s) if s.contains('\0') => Err(FieldError::InvalidFormat),
            Value::Array(items) => items.iter().try_for_each(storable),
            Value::Object(map) => map.iter().try_for_each(|(key, item)| {
                if key.contains('\0') {
                    Err(FieldError::InvalidFormat)
                } else {
                    storable(item)
                }
            }),
            _ => Ok(()),
        }
    }
    if !value.is_object() {
        let expected = "object".into();
        errors.add(field, FieldError::WrongType { expected });
    } else if serde_json::to_vec(value).map_or(true, |b| b.len() > max_bytes) {
        errors.add(field, FieldError::TooLong { max: max_bytes });
    } else if let Err(error) = storable(value) {
        errors.add(field, error);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_object_holds_only_what_can_be_read_back() {
        let refused = |v: serde_json::Value| {
            let mut errors = FieldErrors::new();
            check_stored_object(&mut errors, "settings", &v, 1024);
            errors.get("settings").cloned()
        };
        let fine =
            serde_json::json!({"a": [1, 2.5, -9_007_199_254_740_991i64, {"b": "x"}], "c": null});
        assert_eq!(refused(fine), None);
        assert!(matches!(
            refused(serde_json::json!([])),
            Some(FieldError::WrongType { .. })
        ));
        let huge = serde_json::json!({"a": [[-1.797_693_134_862_315_7e308]]});
        assert!(matches!(refused(huge), Some(FieldError::OutOfRange { .. })));
        let past = serde_json::json!({"a": 9_007_199_254_740_992u64});
        assert!(matches!(refused(past), Some(FieldError::OutOfRange { .. })));
        let nul_key = serde_json::json!({"a": {"b\u{0}": 1}});
        assert_eq!(refused(nul_key), Some(FieldError::InvalidFormat));
        let nul_text = serde_json::json!({"a": ["x\u{0}"]});
        assert_eq!(refused(nul_text), Some(FieldError::InvalidFormat));
        let long = serde_json::json!({"a": "x".repeat(1024)});
        assert_eq!(refused(long), Some(FieldError::TooLong { max: 1024 }));
    }

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

/// Whether `text` is an address a browser can open: `http://` or `https://` (any case), a host
/// (a name, an IPv4 address or a bracketed IPv6 one), and no spaces or control characters.
/// Clients put such values straight into links and `<img src>`, and other programs parse them,
/// so one that only starts like an address (`http://[`) is refused rather than stored.
pub fn is_web_address(text: &str) -> bool {
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    // The parser forgives what a browser forgives (`https:///host`, `http:\\host`); an
    // address typed into bilet is taken as written or not at all.
    let rest = ["https://", "http://"].iter().find_map(|scheme| {
        text.get(..scheme.len())
            .filter(|head| head.eq_ignore_ascii_case(scheme))
            .map(|_| &text[scheme.len()..])
    });
    if rest.is_none_or(|rest| rest.is_empty() || rest.starts_with(['/', '\\', '?', '#'])) {
        return false;
    }
    url::Url::parse(text).is_ok_and(|u| {
        matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty())
    })
}

#[cfg(test)]
mod web_address_tests {
    use super::is_web_address;

    #[test]
    fn only_whole_http_addresses_with_a_host_pass() {
        for ok in [
            "https://example.org",
            "HTTP://Example.org/a?b=c#d",
            "http://127.0.0.1:8080/x",
            "https://[::1]/",
            "https://пример.рф/путь",
        ] {
            assert!(is_web_address(ok), "{ok}");
        }
        for bad in [
            "http://[",
            "http://[::1",
            "https://",
            "https:///path",
            "http:\\\\example.org",
            "http://\\example.org",
            "http://exa mple.org",
            "http://a\u{0}b",
            "javascript:alert(1)",
            "ftp://example.org",
            "example.org",
            "",
        ] {
            assert!(!is_web_address(bad), "{bad}");
        }
    }
}
