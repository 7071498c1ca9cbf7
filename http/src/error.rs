//! The error body `{code, message, details}` of every failed request. Handlers return
//! `ApiError`; the response is rendered in Russian and re-rendered in English by the
//! conventions layer when the client asked for it.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use domain::ErrorCode;
use domain::i18n::{self, Lang, Text};
use domain::refusals::PlatformRefusal;
use domain::validation::{FieldError, FieldErrors};
use serde::Serialize;
use std::sync::Arc;

/// A failed request.
#[derive(Clone, Debug)]
pub struct ApiError {
    /// What kind of failure.
    pub code: ErrorCode,
    /// A specific wording instead of the generic text of the code.
    pub text: Option<Text>,
    /// Per-field messages of a validation error.
    pub fields: Option<FieldErrors>,
    /// Any other context.
    pub details: Option<serde_json::Value>,
    /// Seconds until a rate-limited client may retry.
    pub retry_after: Option<u64>,
    /// The transaction lost a lock race: `contention::retry` runs the request again.
    pub lost_race: bool,
    /// The request is known to have changed nothing (it failed before its transaction could
    /// commit): an idempotency key it claimed is released for a retry.
    pub uncommitted: bool,
}

/// The JSON body of an error, as documented in the OpenAPI schema.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    /// Snake-case identifier, e.g. `validation_error`.
    pub code: &'static str,
    /// Human-readable text, Russian unless `Accept-Language: en`.
    pub message: String,
    /// Context; for `validation_error` a map from field name to message.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub details: Option<serde_json::Value>,
    /// Seconds to wait, on 429 only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error with the generic text of its code.
    pub fn new(code: ErrorCode) -> ApiError {
        ApiError {
            code,
            text: None,
            fields: None,
            details: None,
            retry_after: None,
            lost_race: false,
            uncommitted: false,
        }
    }

    /// A validation error listing the offending fields.
    pub fn validation(fields: FieldErrors) -> ApiError {
        ApiError {
            fields: Some(fields),
            ..ApiError::new(ErrorCode::ValidationError)
        }
    }

    /// A validation error on one field.
    pub fn field(field: &str, error: FieldError) -> ApiError {
        ApiError::validation(FieldErrors::single(field, error))
    }

    /// Uses a specific wording.
    pub fn with_text(mut self, text: Text) -> ApiError {
        self.text = Some(text);
        self
    }

    /// Adds context.
    pub fn with_details(mut self, details: serde_json::Value) -> ApiError {
        self.details = Some(details);
        self
    }

    /// 404 in the error format.
    pub fn not_found() -> ApiError {
        ApiError::new(ErrorCode::NotFound)
    }

    /// 500 in the error format; the cause goes to the log, never to the client.
    pub fn internal(cause: &dyn std::fmt::Display) -> ApiError {
        tracing::error!(error = %cause, "internal error");
        ApiError::new(ErrorCode::Internal)
    }

    /// The HTTP status of the code.
    pub fn status(&self) -> StatusCode {
        status_of(self.code)
    }

    /// The body in a language.
    pub fn body(&self, lang: Lang) -> ErrorBody {
        let message = match &self.text {
            Some(text) => text.get(lang).to_string(),
            None => i18n::error_message(self.code, lang).to_string(),
        };
        let details = match (&self.fields, &self.details) {
            (Some(fields), _) => serde_json::to_value(fields.render(lang)).ok(),
            (None, details) => details.clone(),
        };
        ErrorBody {
            code: self.code.as_str(),
            message,
            details,
            retry_after: self.retry_after,
        }
    }

    /// The complete response in a language.
    pub fn render(&self, lang: Lang) -> Response {
        let mut response = (self.status(), axum::Json(self.body(lang))).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// The status each error code answers with.
pub fn status_of(code: ErrorCode) -> StatusCode {
    use ErrorCode::*;
    match code {
        ValidationError => StatusCode::BAD_REQUEST,
        PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        Unauthorized | InvalidCredentials | AccountLocked => StatusCode::UNAUTHORIZED,
        Forbidden => StatusCode::FORBIDDEN,
        NotFound => StatusCode::NOT_FOUND,
        MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        Conflict | IdempotencyInProgress => StatusCode::CONFLICT,
        BusinessRule | SoldOut | IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
        RateLimitExceeded => StatusCode::TOO_MANY_REQUESTS,
        ServiceUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = self.render(Lang::Ru);
        // Kept so the conventions layer can re-render it in the client's language.
        response.extensions_mut().insert(Arc::new(self));
        response
    }
}

impl From<FieldErrors> for ApiError {
    fn from(fields: FieldErrors) -> ApiError {
        ApiError::validation(fields)
    }
}

impl From<domain::error::Refusal> for ApiError {
    fn from(refusal: domain::error::Refusal) -> ApiError {
        ApiError {
            text: refusal.text,
            ..ApiError::new(refusal.code)
        }
    }
}

impl From<storage::Error> for ApiError {
    fn from(error: storage::Error) -> ApiError {
        match error {
            storage::Error::Refused(refusal) => refusal.into(),
            storage::Error::Db(e) => e.into(),
            storage::Error::Fenced(fenced) => ApiError::moved(&fenced),
        }
    }
}

impl ApiError {
    /// The event's shard is changing owner: the client retries in a second (with the same
    /// idempotency key, on whichever node then owns it).
    pub fn moved(why: &dyn std::fmt::Display) -> ApiError {
        tracing::info!(reason = %why, "request for a shard in hand-over");
        ApiError {
            uncommitted: true,
            ..ApiError::unavailable()
        }
    }

    /// 503 with `Retry-After: 1`: a part of the platform is briefly out of reach.
    pub fn unavailable() -> ApiError {
        let mut error = ApiError::new(ErrorCode::ServiceUnavailable);
        error.retry_after = Some(1);
        error
    }
}

impl From<storage::DbError> for ApiError {
    fn from(error: storage::DbError) -> ApiError {
        if unstorable_input(&error) {
            return domain::error::Refusal::from(PlatformRefusal::UnstorableValue).into();
        }
        if error.is_unavailable() {
            tracing::error!(%error, "database unavailable");
            return ApiError {
                // Unless the connection went during the COMMIT, the transaction is gone.
                uncommitted: !error.outcome_unknown(),
                ..ApiError::unavailable()
            };
        }
        if error.is_contention() {
            // Run again by `contention::retry`; a client sees this only after its last try.
            tracing::warn!(%error, "transaction lost a lock race");
            return ApiError {
                lost_race: true,
                uncommitted: true,
                ..ApiError::unavailable()
            };
        }
        ApiError::internal(&error)
    }
}

/// Whether PostgreSQL refused a value a client sent (a NUL byte in text, a number or date out
/// of range): the client's mistake, answered 400, not a server error.
fn unstorable_input(error: &storage::DbError) -> bool {
    error.sqlstate().is_some_and(|code| {
        ["22021", "22P05", "22001", "22003", "22007", "22008"].contains(&code.code())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_details_are_rendered_per_language() {
        let err = ApiError::field("email", FieldError::Required);
        let ru = serde_json::to_value(err.body(Lang::Ru)).unwrap();
        let en = serde_json::to_value(err.body(Lang::En)).unwrap();
        assert_eq!(ru["code"], "validation_error");
        assert_eq!(ru["details"]["email"], "Обязательное поле");
        assert_eq!(en["details"]["email"], "This field is required");
        assert_eq!(err.status(), StatusCode::BAD_REQUEST);
    }
}
