//! Human-readable texts. Russian is the default language of every message; English is given
//! to clients that ask for it with `Accept-Language: en`.

use crate::error::ErrorCode;
use crate::validation::FieldError;

/// A language a message can be rendered in.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// Russian, the default.
    #[default]
    Ru,
    /// English.
    En,
}

impl Lang {
    /// Picks the language from an `Accept-Language` header value: the first listed language
    /// we speak wins, honouring q-values; anything else falls back to Russian.
    pub fn from_accept_language(header: &str) -> Lang {
        let mut best: Option<(f32, Lang)> = None;
        for part in header.split(',') {
            let mut pieces = part.trim().split(';');
            let tag = pieces.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = pieces
                .find_map(|p| p.trim().strip_prefix("q="))
                .and_then(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            let primary = tag.split('-').next().unwrap_or("");
            let lang = match primary {
                "ru" => Lang::Ru,
                "en" => Lang::En,
                _ => continue,
            };
            if best.is_none_or(|(bq, _)| q > bq) {
                best = Some((q, lang));
            }
        }
        best.map(|(_, l)| l).unwrap_or_default()
    }
}

/// The message shown for an error code.
pub fn error_message(code: ErrorCode, lang: Lang) -> &'static str {
    use ErrorCode::*;
    match (code, lang) {
        (ValidationError, Lang::Ru) => "Ошибка проверки данных",
        (ValidationError, Lang::En) => "Validation failed",
        (PayloadTooLarge, Lang::Ru) => "Тело запроса слишком большое",
        (PayloadTooLarge, Lang::En) => "The request body is too large",
        (UnsupportedMediaType, Lang::Ru) => "Неподдерживаемый тип содержимого",
        (UnsupportedMediaType, Lang::En) => "Unsupported content type",
        (Unauthorized, Lang::Ru) => "Требуется аутентификация",
        (Unauthorized, Lang::En) => "Authentication is required",
        (InvalidCredentials, Lang::Ru) => "Неверный email или пароль",
        (InvalidCredentials, Lang::En) => "Wrong email or password",
        (AccountLocked, Lang::Ru) => {
            "Учётная запись временно заблокирована после неудачных попыток входа"
        }
        (AccountLocked, Lang::En) => {
            "The account is locked for a while after failed sign-in attempts"
        }
        (Forbidden, Lang::Ru) => "Недостаточно прав",
        (Forbidden, Lang::En) => "You do not have the rights for this",
        (NotFound, Lang::Ru) => "Ресурс не найден",
        (NotFound, Lang::En) => "Resource not found",
        (MethodNotAllowed, Lang::Ru) => "Метод не поддерживается",
        (MethodNotAllowed, Lang::En) => "Method not allowed",
        (Conflict, Lang::Ru) => "Конфликт: значение уже занято",
        (Conflict, Lang::En) => "Conflict: the value is already taken",
        (SoldOut, Lang::Ru) => "Билеты этого типа закончились",
        (SoldOut, Lang::En) => "This ticket type is sold out",
        (BusinessRule, Lang::Ru) => "Операция нарушает бизнес-правило",
        (BusinessRule, Lang::En) => "The operation violates a business rule",
        (IdempotencyKeyReused, Lang::Ru) => {
            "Ключ идемпотентности уже использован с другим запросом"
        }
        (IdempotencyKeyReused, Lang::En) => {
            "The idempotency key was already used with a different request"
        }
        (IdempotencyInProgress, Lang::Ru) => "Запрос с этим ключом идемпотентности ещё выполняется",
        (IdempotencyInProgress, Lang::En) => {
            "A request with this idempotency key is still in progress"
        }
        (RateLimitExceeded, Lang::Ru) => "Слишком много запросов, повторите позже",
        (RateLimitExceeded, Lang::En) => "Too many requests, try again later",
        (ServiceUnavailable, Lang::Ru) => "Сервис временно недоступен",
        (ServiceUnavailable, Lang::En) => "The service is temporarily unavailable",
        (Internal, Lang::Ru) => "Внутренняя ошибка сервера",
        (Internal, Lang::En) => "Internal server error",
    }
}

/// The message shown next to a field that failed validation.
pub fn field_message(error: &FieldError, lang: Lang) -> String {
    match (error, lang) {
        (FieldError::Required, Lang::Ru) => "Обязательное поле".into(),
        (FieldError::Required, Lang::En) => "This field is required".into(),
        (FieldError::WrongType { expected }, Lang::Ru) => {
            format!("Неверный тип значения, ожидается {expected}")
        }
        (FieldError::WrongType { expected }, Lang::En) => {
            format!("Wrong value type, expected {expected}")
        }
        (FieldError::Unknown, Lang::Ru) => "Неизвестное поле".into(),
        (FieldError::Unknown, Lang::En) => "Unknown field".into(),
        (FieldError::TooShort { min }, Lang::Ru) => format!("Минимальная длина: {min}"),
        (FieldError::TooShort { min }, Lang::En) => format!("Minimum length is {min}"),
        (FieldError::TooLong { max }, Lang::Ru) => format!("Максимальная длина: {max}"),
        (FieldError::TooLong { max }, Lang::En) => format!("Maximum length is {max}"),
        (FieldError::OutOfRange { min, max }, Lang::Ru) => {
            format!("Значение должно быть от {min} до {max}")
        }
        (FieldError::OutOfRange { min, max }, Lang::En) => {
            format!("The value must be between {min} and {max}")
        }
        (FieldError::NotAllowed { allowed }, Lang::Ru) => {
            format!("Допустимые значения: {}", allowed.join(", "))
        }
        (FieldError::NotAllowed { allowed }, Lang::En) => {
            format!("Allowed values: {}", allowed.join(", "))
        }
        (FieldError::MalformedJson { line, column }, Lang::Ru) => {
            format!("Некорректный JSON (строка {line}, позиция {column})")
        }
        (FieldError::MalformedJson { line, column }, Lang::En) => {
            format!("Malformed JSON (line {line}, column {column})")
        }
        (FieldError::InvalidFormat, Lang::Ru) => "Неверный формат".into(),
        (FieldError::InvalidFormat, Lang::En) => "Invalid format".into(),
        (FieldError::Invalid(text), _) => text.get(lang).to_string(),
    }
}

/// A text given in both languages, for rules that need their own wording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Text {
    /// Russian wording.
    pub ru: &'static str,
    /// English wording.
    pub en: &'static str,
}

impl Text {
    /// The wording for a language.
    pub fn get(&self, lang: Lang) -> &'static str {
        match lang {
            Lang::Ru => self.ru,
            Lang::En => self.en,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_language_picks_best_supported() {
        assert_eq!(Lang::from_accept_language("en"), Lang::En);
        assert_eq!(Lang::from_accept_language("en-US,en;q=0.9"), Lang::En);
        assert_eq!(Lang::from_accept_language("de, en;q=0.5"), Lang::En);
        assert_eq!(Lang::from_accept_language("en;q=0.3, ru;q=0.8"), Lang::Ru);
        assert_eq!(Lang::from_accept_language("fr"), Lang::Ru);
        assert_eq!(Lang::from_accept_language(""), Lang::Ru);
    }

    #[test]
    fn every_code_has_two_distinct_texts() {
        use ErrorCode::*;
        for code in [
            ValidationError,
            PayloadTooLarge,
            UnsupportedMediaType,
            Unauthorized,
            InvalidCredentials,
            AccountLocked,
            Forbidden,
            NotFound,
            MethodNotAllowed,
            Conflict,
            BusinessRule,
            SoldOut,
            IdempotencyKeyReused,
            IdempotencyInProgress,
            RateLimitExceeded,
            ServiceUnavailable,
            Internal,
        ] {
            assert_ne!(error_message(code, Lang::Ru), error_message(code, Lang::En));
        }
    }
}
