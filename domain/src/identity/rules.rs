//! Field rules of the identity service.

use crate::i18n::Text;
use crate::validation::{FieldError, FieldErrors};

/// Longest password accepted: bcrypt only reads 72 bytes, so longer ones would be truncated
/// silently.
pub const PASSWORD_MAX_BYTES: usize = 72;

/// Password: at least 8 characters with letters and digits, at most 72 bytes.
pub fn check_password(errors: &mut FieldErrors, field: &str, password: &str) {
    if password.chars().count() < 8 {
        errors.add(field, FieldError::TooShort { min: 8 });
    } else if password.len() > PASSWORD_MAX_BYTES {
        errors.add(
            field,
            FieldError::TooLong {
                max: PASSWORD_MAX_BYTES,
            },
        );
    } else if !(password.chars().any(char::is_alphabetic)
        && password.chars().any(|c| c.is_ascii_digit()))
    {
        errors.add(
            field,
            FieldError::Invalid(Text {
                ru: "Пароль должен содержать буквы и цифры",
                en: "The password must contain letters and digits",
            }),
        );
    }
}

/// Normalizes an email (trimmed, lower case) and checks its shape.
pub fn normalize_email(errors: &mut FieldErrors, field: &str, email: &str) -> String {
    let email = email.trim().to_lowercase();
    let valid = email.len() <= 254
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !email.chars().any(char::is_whitespace)
                && email.matches('@').count() == 1
        });
    if email.is_empty() {
        errors.add(field, FieldError::Required);
    } else if !valid {
        errors.add(field, FieldError::InvalidFormat);
    }
    email
}

/// Slug: lower-case Latin letters, digits and hyphen, 3 to 50 characters.
pub fn check_slug(errors: &mut FieldErrors, field: &str, slug: &str) {
    let len = slug.chars().count();
    if len < 3 {
        errors.add(field, FieldError::TooShort { min: 3 });
    } else if len > 50 {
        errors.add(field, FieldError::TooLong { max: 50 });
    } else if !slug
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        errors.add(
            field,
            FieldError::Invalid(Text {
                ru: "Допустимы только строчные латинские буквы, цифры и дефис",
                en: "Only lower-case Latin letters, digits and hyphen are allowed",
            }),
        );
    }
}

/// A person's name part: optional, at most 100 characters, no control characters.
pub fn check_name(errors: &mut FieldErrors, field: &str, name: &str) {
    errors.check_length(field, name, 0, 100);
    if name.chars().any(char::is_control) {
        errors.add(field, FieldError::InvalidFormat);
    }
}

/// An organization's logo URL: empty (no logo URL) or an http(s) URL with a host, at most 500
/// characters. Other schemes (`javascript:`, `data:`, `ftp:`) are refused because clients put
/// the value straight into an `<img src>` or a link.
pub fn check_logo_url(errors: &mut FieldErrors, field: &str, url: &str) {
    if url.chars().count() > 500 {
        errors.add(field, FieldError::TooLong { max: 500 });
        return;
    }
    if url.is_empty() {
        return;
    }
    if !crate::validation::is_web_address(url) {
        errors.add(
            field,
            FieldError::Invalid(Text {
                ru: "Нужен адрес http:// или https://",
                en: "An http:// or https:// URL is required",
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logo_urls_are_http_or_https() {
        let ok = |u: &str| {
            let mut e = FieldErrors::new();
            check_logo_url(&mut e, "logoUrl", u);
            e.is_empty()
        };
        assert!(ok("https://example.com/logo.png"));
        assert!(ok("HTTP://example.com"));
        assert!(ok(""), "empty removes the logo URL");
        for bad in [
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            "data:image/png;base64,AAAA",
            "ftp://example.com/logo.png",
            "//example.com/logo.png",
            "https://",
            "https:///path",
            "https://exa mple.com",
            "https://example.com/\n",
            " https://example.com",
            "logo.png",
        ] {
            assert!(!ok(bad), "{bad:?} should be refused");
        }
        assert!(!ok(&format!("https://example.com/{}", "a".repeat(500))));
    }

    fn password_ok(p: &str) -> bool {
        let mut e = FieldErrors::new();
        check_password(&mut e, "password", p);
        e.is_empty()
    }

    #[test]
    fn password_rule() {
        assert!(password_ok("abcdefg1"));
        assert!(password_ok("пароль123"));
        assert!(!password_ok("abc1"));
        assert!(!password_ok("abcdefgh"));
        assert!(!password_ok("12345678"));
        assert!(!password_ok(&format!("a1{}", "x".repeat(80))));
    }

    #[test]
    fn emails_are_lower_cased_and_checked() {
        let mut e = FieldErrors::new();
        assert_eq!(
            normalize_email(&mut e, "email", "  Alice@Example.COM "),
            "alice@example.com"
        );
        assert!(e.is_empty());
        for bad in ["", "alice", "a@b", "a@@b.c", "a b@c.d", "@c.d", "a@.c"] {
            let mut e = FieldErrors::new();
            normalize_email(&mut e, "email", bad);
            assert!(!e.is_empty(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn slug_rule() {
        let ok = |s: &str| {
            let mut e = FieldErrors::new();
            check_slug(&mut e, "slug", s);
            e.is_empty()
        };
        assert!(ok("my-org-2024"));
        assert!(!ok("ab"));
        assert!(!ok("My-Org"));
        assert!(!ok("org_name"));
        assert!(!ok("организация"));
        assert!(!ok(&"a".repeat(51)));
        assert!(ok(&"a".repeat(50)));
    }
}
