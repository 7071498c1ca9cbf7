//! The shape of a text catalogue. Each service declares its refusals (and the wording of its
//! field complaints) once, in its own `refusals` module, with these two macros; storage and the
//! HTTP layer name a variant and never write a text of their own.

/// Declares a catalogue of refusals: an enum whose every variant carries its error code and its
/// Russian and English wording, with `code`, `text`, `ALL` and a conversion into `Refusal`.
/// Each variant is written on one line, so its code and both texts are read together.
macro_rules! refusals {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$variant_meta:meta])*
                $variant:ident => ($code:ident, $ru:literal, $en:literal),
            )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $vis enum $name {
            $($(#[$variant_meta])* $variant,)+
        }

        impl $name {
            /// Every refusal of the catalogue, in the order declared.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The kind of error the client gets.
            pub fn code(self) -> $crate::error::ErrorCode {
                match self {
                    $($name::$variant => $crate::error::ErrorCode::$code,)+
                }
            }

            /// The wording in both languages.
            pub fn text(self) -> $crate::i18n::Text {
                match self {
                    $($name::$variant => $crate::i18n::Text { ru: $ru, en: $en },)+
                }
            }
        }

        impl From<$name> for $crate::error::Refusal {
            fn from(refusal: $name) -> $crate::error::Refusal {
                $crate::error::Refusal {
                    code: refusal.code(),
                    text: Some(refusal.text()),
                }
            }
        }
    };
}

/// Declares the wording of field complaints (a `validation_error` naming the field): an enum
/// whose every variant carries its Russian and English text, with `text`, `ALL` and a
/// conversion into `FieldError::Invalid`.
macro_rules! field_texts {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$variant_meta:meta])*
                $variant:ident => ($ru:literal, $en:literal),
            )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $vis enum $name {
            $($(#[$variant_meta])* $variant,)+
        }

        impl $name {
            /// Every text of the catalogue, in the order declared.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wording in both languages.
            pub fn text(self) -> $crate::i18n::Text {
                match self {
                    $($name::$variant => $crate::i18n::Text { ru: $ru, en: $en },)+
                }
            }
        }

        impl From<$name> for $crate::validation::FieldError {
            fn from(text: $name) -> $crate::validation::FieldError {
                $crate::validation::FieldError::Invalid(text.text())
            }
        }
    };
}

pub(crate) use field_texts;
pub(crate) use refusals;

/// Checks the texts of a catalogue: both languages given, Russian in Cyrillic, English without
/// it, and no wording used twice (two variants for one situation).
#[cfg(test)]
pub(crate) fn assert_worded(texts: impl IntoIterator<Item = crate::i18n::Text>) {
    let cyrillic = |s: &str| s.chars().any(|c| ('\u{0400}'..='\u{04FF}').contains(&c));
    let mut seen = std::collections::HashSet::new();
    for text in texts {
        assert!(
            !text.ru.trim().is_empty() && !text.en.trim().is_empty(),
            "{text:?}"
        );
        assert!(
            cyrillic(text.ru),
            "Russian text without Cyrillic: {}",
            text.ru
        );
        assert!(
            !cyrillic(text.en),
            "English text with Cyrillic: {}",
            text.en
        );
        assert!(seen.insert(text.ru), "wording used twice: {}", text.ru);
    }
}
