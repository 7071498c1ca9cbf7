//! Extractors that turn every malformed input into a `validation_error` naming the field,
//! instead of axum's plain-text rejections: JSON bodies, path parameters and query strings.

use crate::error::ApiError;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use domain::ErrorCode;
use domain::validation::{FieldError, FieldErrors};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A JSON body. Answers 415 for another content type, 413 above the body limit, and 400
/// `validation_error` for malformed JSON, wrong types, missing or unknown fields.
pub struct Json<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Json<T>, ApiError> {
        if !is_json(req.headers().get(header::CONTENT_TYPE)) {
            return Err(ApiError::new(ErrorCode::UnsupportedMediaType));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(ErrorCode::PayloadTooLarge)
            } else {
                ApiError::field("body", FieldError::InvalidFormat)
            }
        })?;
        parse_json(&bytes).map(Json)
    }
}

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

fn is_json(content_type: Option<&axum::http::HeaderValue>) -> bool {
    let Some(value) = content_type.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let mime = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
}

/// Deserializes a JSON body, mapping each serde error onto the field it concerns.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    // Every body is an object; serde would also read a struct from an array of its fields.
    if bytes.trim_ascii_start().first() == Some(&b'[') {
        return Err(ApiError::field(
            "body",
            FieldError::WrongType {
                expected: "an object".into(),
            },
        ));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = match serde_path_to_error::deserialize(&mut deserializer) {
        Ok(value) => value,
        Err(error) => {
            let inner = error.inner();
            if matches!(
                inner.classify(),
                serde_json::error::Category::Syntax
                    | serde_json::error::Category::Eof
                    | serde_json::error::Category::Io
            ) {
                return Err(malformed(inner));
            }
            let message = inner.to_string();
            // JSON has one number type: `3.0` is the integer 3, as JSON Schema says too.
            // Such input is rare, so only then is the body read again with its whole floats
            // made integers; the common path reads the bytes once.
            if message.starts_with("invalid type: floating point")
                && let Some(read) = with_whole_floats_as_integers(bytes)
            {
                return read;
            }
            let (field, field_error) = classify_data_error(&error.path().to_string(), &message);
            return Err(ApiError::validation(FieldErrors::single(
                field,
                field_error,
            )));
        }
    };
    deserializer.end().map_err(|e| malformed(&e))?;
    Ok(value)
}

fn malformed(e: &serde_json::Error) -> ApiError {
    ApiError::field(
        "body",
        FieldError::MalformedJson {
            line: e.line(),
            column: e.column(),
        },
    )
}

/// Reads the body again with every float that is a whole number (`-201.0`) as an integer;
/// `None` when nothing changed, so the first error stands.
fn with_whole_floats_as_integers<T: DeserializeOwned>(bytes: &[u8]) -> Option<Result<T, ApiError>> {
    fn whole(value: &mut serde_json::Value) -> bool {
        match value {
            serde_json::Value::Number(n) if n.is_f64() => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                    *value = serde_json::Value::from(f as i64);
                    true
                }
                _ => false,
            },
            serde_json::Value::Array(items) => items.iter_mut().fold(false, |c, v| whole(v) | c),
            serde_json::Value::Object(fields) => {
                fields.values_mut().fold(false, |c, v| whole(v) | c)
            }
            _ => false,
        }
    }
    let mut value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    if !whole(&mut value) {
        return None;
    }
    Some(serde_path_to_error::deserialize(value).map_err(|error| {
        let (field, field_error) =
            classify_data_error(&error.path().to_string(), &error.inner().to_string());
        ApiError::validation(FieldErrors::single(field, field_error))
    }))
}

/// Turns a serde data error into (field path, reason). serde reports missing and unknown
/// fields on the enclosing object, so their name is taken from the message.
fn classify_data_error(path: &str, message: &str) -> (String, FieldError) {
    let join = |name: &str| {
        if path.is_empty() || path == "." {
            name.to_string()
        } else if path == name || path.ends_with(&format!(".{name}")) {
            path.to_string()
        } else {
            format!("{path}.{name}")
        }
    };
    let quoted = |msg: &str| -> Option<String> {
        let start = msg.find('`')? + 1;
        let end = msg[start..].find('`')? + start;
        Some(msg[start..end].to_string())
    };
    let here = if path.is_empty() || path == "." {
        "body".to_string()
    } else {
        path.to_string()
    };
    if message.starts_with("missing field") {
        let name = quoted(message).unwrap_or_default();
        (join(&name), FieldError::Required)
    } else if message.starts_with("unknown field") {
        let name = quoted(message).unwrap_or_default();
        (join(&name), FieldError::Unknown)
    } else if message.starts_with("invalid type: null") {
        (here, FieldError::Required)
    } else if message.starts_with("invalid type") {
        let expected = message
            .split("expected ")
            .nth(1)
            .map(|e| e.split(" at line").next().unwrap_or(e).trim().to_string())
            .unwrap_or_else(|| "another type".into());
        (here, FieldError::WrongType { expected })
    } else if message.starts_with("invalid value") && message.contains("expected ") {
        let expected = message
            .split("expected ")
            .nth(1)
            .map(|e| e.split(" at line").next().unwrap_or(e).trim().to_string())
            .unwrap_or_default();
        (here, FieldError::WrongType { expected })
    } else if message.starts_with("unknown variant") {
        let allowed = message
            .split("expected ")
            .nth(1)
            .map(|list| {
                list.split(" at line")
                    .next()
                    .unwrap_or(list)
                    .split(['`', ',', ' '])
                    .filter(|w| !w.is_empty() && *w != "or" && *w != "one" && *w != "of")
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        (here, FieldError::NotAllowed { allowed })
    } else {
        (here, FieldError::InvalidFormat)
    }
}

/// Path parameters; a malformed one (a bad uuid) is a `validation_error` naming it.
pub struct Path<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Path<T>, ApiError> {
        use axum::extract::path::ErrorKind;
        use axum::extract::rejection::PathRejection;
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(Path(value)),
            Err(PathRejection::FailedToDeserializePathParams(e)) => {
                let field = match e.kind() {
                    ErrorKind::ParseErrorAtKey { key, .. }
                    | ErrorKind::DeserializeError { key, .. }
                    | ErrorKind::InvalidUtf8InPathParam { key } => key.clone(),
                    // A single parameter is reported without its name; take it from the route.
                    _ => single_param_name(parts, state)
                        .await
                        .unwrap_or_else(|| "path".to_string()),
                };
                Err(ApiError::field(&field, FieldError::InvalidFormat))
            }
            Err(other) => Err(ApiError::internal(&other)),
        }
    }
}

async fn single_param_name<S: Send + Sync>(parts: &mut Parts, state: &S) -> Option<String> {
    let raw = axum::extract::RawPathParams::from_request_parts(parts, state)
        .await
        .ok()?;
    let mut names = raw.iter().map(|(name, _)| name.to_string());
    match (names.next(), names.next()) {
        (Some(name), None) => Some(name),
        _ => None,
    }
}

/// Query parameters with per-field errors.
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Query<T>, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        let deserializer =
            serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(deserializer)
            .map(Query)
            .map_err(|error| {
                let (field, reason) =
                    classify_data_error(&error.path().to_string(), &error.inner().to_string());
                ApiError::validation(FieldErrors::single(field, reason))
            })
    }
}

/// For `Option<Option<T>>` fields: an absent field stays `None`, an explicit null becomes
/// `Some(None)` (use with `#[serde(default, deserialize_with = "crate::extract::nullable")]`).
pub fn nullable<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    serde::Deserialize::deserialize(d).map(Some)
}

/// A JSON body that may be absent: an empty body gives `None`, anything else is checked like
/// `Json`.
pub struct MaybeJson<T>(pub Option<T>);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for MaybeJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<MaybeJson<T>, ApiError> {
        let has_type = req.headers().contains_key(header::CONTENT_TYPE);
        if has_type && !is_json(req.headers().get(header::CONTENT_TYPE)) {
            return Err(ApiError::new(ErrorCode::UnsupportedMediaType));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(ErrorCode::PayloadTooLarge)
            } else {
                ApiError::field("body", FieldError::InvalidFormat)
            }
        })?;
        // No body, or `null`, is the absent body the document allows.
        let text = bytes.trim_ascii();
        if text.is_empty() || text == b"null" {
            return Ok(MaybeJson(None));
        }
        parse_json(&bytes).map(|v| MaybeJson(Some(v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[allow(dead_code)]
    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Body {
        name: String,
        seats: u32,
        inner: Option<Inner>,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        flag: bool,
    }

    fn details(bytes: &str) -> serde_json::Value {
        let err = parse_json::<Body>(bytes.as_bytes()).unwrap_err();
        assert_eq!(err.code, ErrorCode::ValidationError);
        serde_json::to_value(err.body(domain::Lang::En)).unwrap()["details"].clone()
    }

    #[test]
    fn each_kind_of_bad_body_names_its_field() {
        assert_eq!(details(r#"{"seats": 1}"#)["name"], "This field is required");
        assert_eq!(
            details(r#"{"name": "a", "seats": "x"}"#)["seats"],
            "Wrong value type, expected u32"
        );
        assert_eq!(
            details(r#"{"name": "a", "seats": 1, "bogus": 1}"#)["bogus"],
            "Unknown field"
        );
        assert_eq!(
            details(r#"{"name": "a", "seats": 1, "inner": {"flag": 3}}"#)["inner.flag"],
            "Wrong value type, expected a boolean"
        );
        assert_eq!(
            details(r#"{"name": null, "seats": 1}"#)["name"],
            "This field is required"
        );
        assert!(
            details(r#"{"name": "a", "#)["body"]
                .as_str()
                .unwrap()
                .starts_with("Malformed JSON")
        );
        assert!(
            details(r#"{"name":"a","seats":1} trailing"#)["body"]
                .as_str()
                .unwrap()
                .starts_with("Malformed JSON")
        );
        assert!(parse_json::<Body>(br#"{"name":"a","seats":1}"#).is_ok());
        assert_eq!(
            details(r#" ["a", 1, null]"#)["body"],
            "Wrong value type, expected an object"
        );
    }

    #[test]
    fn a_whole_float_is_an_integer_and_a_fraction_is_not() {
        let body = parse_json::<Body>(br#"{"name":"a","seats":12.0,"inner":null}"#).unwrap();
        assert_eq!(body.seats, 12);
        assert_eq!(
            details(r#"{"name": "a", "seats": 12.5}"#)["seats"],
            "Wrong value type, expected u32"
        );
        assert_eq!(
            details(r#"{"name": "a", "seats": -3.0}"#)["seats"],
            "Wrong value type, expected u32"
        );
    }
}
