//! The error kinds every service reports. The HTTP layer maps each to a status; the texts
//! live in `i18n`.

use serde::Serialize;

/// A machine-readable error code, serialized in snake case as the `code` of an error body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The request body, path or query failed validation.
    ValidationError,
    /// The body exceeds the size limit of the endpoint.
    PayloadTooLarge,
    /// The body has a content type the endpoint does not take.
    UnsupportedMediaType,
    /// No valid credentials were presented.
    Unauthorized,
    /// Wrong email or password.
    InvalidCredentials,
    /// Too many failed logins; the account is locked for a while.
    AccountLocked,
    /// The caller is known but lacks the right.
    Forbidden,
    /// The resource does not exist, or the caller may not know it exists.
    NotFound,
    /// The HTTP method is not served on this path.
    MethodNotAllowed,
    /// A unique value is already taken.
    Conflict,
    /// A business rule refuses the change.
    BusinessRule,
    /// No seat of the ticket type is left.
    SoldOut,
    /// The idempotency key was already used with a different request.
    IdempotencyKeyReused,
    /// A request with the same idempotency key is still being processed.
    IdempotencyInProgress,
    /// Too many requests in the current window.
    RateLimitExceeded,
    /// A backing service (database, broker) does not answer.
    ServiceUnavailable,
    /// An unexpected failure; details are in the server log under the correlation id.
    Internal,
}

impl ErrorCode {
    /// The snake-case code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ValidationError => "validation_error",
            Self::PayloadTooLarge => "payload_too_large",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::Unauthorized => "unauthorized",
            Self::InvalidCredentials => "invalid_credentials",
            Self::AccountLocked => "account_locked",
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::Conflict => "conflict",
            Self::BusinessRule => "business_rule_violation",
            Self::SoldOut => "sold_out",
            Self::IdempotencyKeyReused => "idempotency_key_reused",
            Self::IdempotencyInProgress => "idempotency_in_progress",
            Self::RateLimitExceeded => "rate_limit_exceeded",
            Self::ServiceUnavailable => "service_unavailable",
            Self::Internal => "internal_error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_code_matches_serde() {
        for code in [
            ErrorCode::ValidationError,
            ErrorCode::RateLimitExceeded,
            ErrorCode::IdempotencyKeyReused,
        ] {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, code.as_str());
        }
    }
}

/// A request refused by a rule: the error kind and, when the generic text is not enough, a
/// specific wording. Storage and services return it; the HTTP layer renders it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The kind of refusal.
    pub code: ErrorCode,
    /// Specific wording, if any.
    pub text: Option<crate::i18n::Text>,
}

impl Refusal {
    /// A refusal with the generic text of its code.
    pub fn new(code: ErrorCode) -> Refusal {
        Refusal { code, text: None }
    }

    /// A refusal with its own wording. Storage and handlers name a variant of their service's
    /// catalogue (`events::refusals`, `identity::refusals`, …) instead, so every text lives in
    /// one place per service.
    pub fn with(code: ErrorCode, ru: &'static str, en: &'static str) -> Refusal {
        Refusal {
            code,
            text: Some(crate::i18n::Text { ru, en }),
        }
    }

    /// 404.
    pub fn not_found() -> Refusal {
        Refusal::new(ErrorCode::NotFound)
    }

    /// 403.
    pub fn forbidden() -> Refusal {
        Refusal::new(ErrorCode::Forbidden)
    }
}
