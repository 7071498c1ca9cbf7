//! The analytics service over HTTP (port 8086): tracking, the event dashboard and funnel, and
//! the organization report. Figures are for members of the organization only.

use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Json, Path, Query};
use crate::state::{Analytics, AppState};
use analytics::figures::{Dashboard, Funnel, Period, Report};
use analytics::record::Record;
use analytics::tracked;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use domain::ErrorCode;
use domain::analytics::refusals::AnalyticsFieldText;
use domain::analytics::{MAX_PROPERTIES_BYTES, TrackType};
use domain::ids::TenantId;
use domain::validation::{FieldError, FieldErrors};
use serde::{Deserialize, Serialize};
use utoipa::OpenApi;
use uuid::Uuid;

mod trackable;

/// The routes of the analytics service.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/analytics/track", post(track))
        .route("/api/v1/analytics/events/{id}/dashboard", get(dashboard))
        .route("/api/v1/analytics/events/{id}/funnel", get(funnel))
        .route("/api/v1/analytics/organizations/{id}/report", get(report))
        .route("/api/v1/analytics/export", post(export))
}

#[derive(OpenApi)]
#[openapi(
    paths(track, dashboard, funnel, report, export),
    tags((name = "analytics", description = "Tracking, dashboards, funnel and reports"))
)]
struct AnalyticsApi;

/// The analytics service's part of the OpenAPI document.
pub fn openapi() -> utoipa::openapi::OpenApi {
    AnalyticsApi::openapi()
}

fn parts(state: &AppState) -> Result<&Analytics, ApiError> {
    state
        .analytics
        .as_ref()
        .ok_or_else(|| ApiError::new(ErrorCode::ServiceUnavailable))
}

/// One tracked event.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrackRequest {
    /// `page.view` or `registration.started` (the others come from the services).
    #[schema(value_type = ClientTrackType, inline)]
    pub event_type: String,
    /// The event looked at.
    pub event_id: Uuid,
    /// Details (source, ticketTypeId, visitorId…), at most 4 KB.
    #[schema(value_type = Option<Object>)]
    pub properties: Option<serde_json::Value>,
}

/// The event types clients may send to `/track`; the other `TrackType`s come from the
/// services' own events. For the document only: the handler reads the name and refuses the rest
/// with its own message.
#[derive(utoipa::ToSchema)]
pub enum ClientTrackType {
    /// Someone looked at the event page.
    #[schema(rename = "page.view")]
    PageView,
    /// Someone opened the registration form.
    #[schema(rename = "registration.started")]
    RegistrationStarted,
}

/// The answer to a tracked event.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tracked {
    /// The record's id.
    pub id: Uuid,
}

/// Tracks one event of an event: accepted at once, written in batches, from the moment the
/// event is created. A draft is tracked only for its organization's members (previewing it);
/// for anyone else it is 404, as an unknown event is, since a draft is not public. 503 with
/// Retry-After when whether the event exists cannot be found out right now.
#[utoipa::path(post, path = "/api/v1/analytics/track", tag = "analytics", request_body = TrackRequest,
    responses((status = 202, body = Tracked), (status = 400, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 503, body = crate::error::ErrorBody)))]
pub async fn track(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<TrackRequest>,
) -> Result<(StatusCode, Json<Tracked>), ApiError> {
    let parts = parts(&state)?;
    let mut errors = FieldErrors::new();
    let kind = body
        .event_type
        .parse::<TrackType>()
        .ok()
        .filter(|t| t.client_tracked());
    if kind.is_none() {
        errors.add(
            "eventType",
            FieldError::from(AnalyticsFieldText::UntrackedType),
        );
    }
    let properties = body.properties.unwrap_or_else(|| serde_json::json!({}));
    if !properties.is_object() {
        errors.add(
            "properties",
            FieldError::WrongType {
                expected: "object".into(),
            },
        );
    } else if properties.to_string().len() > MAX_PROPERTIES_BYTES {
        errors.add(
            "properties",
            FieldError::TooLong {
                max: MAX_PROPERTIES_BYTES,
            },
        );
    }
    errors.into_result()?;
    let kind = kind.ok_or_else(|| ApiError::new(ErrorCode::ValidationError))?;
    // The record belongs to the event's organization, whoever looked at it.
    let tenant = trackable::tenant_of(&state, &caller, body.event_id).await?;
    let record = Record::new(
        Uuid::now_v7(),
        tenant,
        kind,
        Some(body.event_id),
        caller.user.map(|u| u.as_uuid()),
        properties,
        state.clock.now(),
    );
    let id = record.id;
    if !parts.ingest.track(record) {
        return Err(ApiError::new(ErrorCode::ServiceUnavailable));
    }
    Ok((StatusCode::ACCEPTED, Json(Tracked { id })))
}

/// An optional period (RFC 3339; from inclusive, to exclusive).
#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct PeriodQuery {
    /// From.
    pub from: Option<DateTime<Utc>>,
    /// To.
    pub to: Option<DateTime<Utc>>,
}

impl PeriodQuery {
    fn period(&self) -> Result<Period, ApiError> {
        if let (Some(from), Some(to)) = (self.from, self.to)
            && from >= to
        {
            return Err(ApiError::field(
                "to",
                FieldError::from(AnalyticsFieldText::ToNotAfterFrom),
            ));
        }
        Ok(Period {
            from: self.from,
            to: self.to,
        })
    }
}

/// Whether the caller is a signed-in member of `tenant` (a token for it with a role).
fn is_member(caller: &Caller, tenant: TenantId) -> bool {
    caller.user.is_some() && caller.tenant == Some(tenant) && !caller.roles.is_empty()
}

/// The organization of a known event (a draft too), if the caller is one of its members; 404
/// otherwise (other organizations' events are not confirmed to exist).
async fn members_event(
    state: &AppState,
    caller: &Caller,
    event: Uuid,
) -> Result<TenantId, ApiError> {
    caller.require_user()?;
    match tracked::tenant_of(&state.db, event).await? {
        Some(tenant) if is_member(caller, tenant) => Ok(tenant),
        _ => Err(ApiError::not_found()),
    }
}

fn store_error(e: analytics::store::StoreError) -> ApiError {
    tracing::error!(error = %e, "analytics store failed");
    ApiError::new(ErrorCode::ServiceUnavailable)
}

/// The dashboard of an event.
#[utoipa::path(get, path = "/api/v1/analytics/events/{id}/dashboard", tag = "analytics", params(PeriodQuery),
    responses((status = 200, body = Dashboard), (status = 404, body = crate::error::ErrorBody)))]
pub async fn dashboard(
    State(state): State<AppState>,
    caller: Caller,
    Path(event): Path<Uuid>,
    Query(query): Query<PeriodQuery>,
) -> Result<Json<Dashboard>, ApiError> {
    let period = query.period()?;
    let tenant = members_event(&state, &caller, event).await?;
    let parts = parts(&state)?;
    Ok(Json(
        parts
            .store
            .dashboard(tenant, event, period)
            .await
            .map_err(store_error)?,
    ))
}

/// The registration funnel of an event.
#[utoipa::path(get, path = "/api/v1/analytics/events/{id}/funnel", tag = "analytics", params(PeriodQuery),
    responses((status = 200, body = Funnel), (status = 404, body = crate::error::ErrorBody)))]
pub async fn funnel(
    State(state): State<AppState>,
    caller: Caller,
    Path(event): Path<Uuid>,
    Query(query): Query<PeriodQuery>,
) -> Result<Json<Funnel>, ApiError> {
    let period = query.period()?;
    let tenant = members_event(&state, &caller, event).await?;
    let parts = parts(&state)?;
    Ok(Json(
        parts
            .store
            .funnel(tenant, event, period)
            .await
            .map_err(store_error)?,
    ))
}

/// The report of an organization: its events together and each event.
#[utoipa::path(get, path = "/api/v1/analytics/organizations/{id}/report", tag = "analytics", params(PeriodQuery),
    responses((status = 200, body = Report), (status = 403, body = crate::error::ErrorBody)))]
pub async fn report(
    State(state): State<AppState>,
    caller: Caller,
    Path(organization): Path<Uuid>,
    Query(query): Query<PeriodQuery>,
) -> Result<Json<Report>, ApiError> {
    let period = query.period()?;
    caller.require_user()?;
    let tenant = TenantId(organization);
    if caller.tenant != Some(tenant) || caller.roles.is_empty() {
        return Err(ApiError::new(ErrorCode::Forbidden));
    }
    let parts = parts(&state)?;
    Ok(Json(
        parts
            .store
            .report(tenant, period)
            .await
            .map_err(store_error)?,
    ))
}

/// The longest period one export covers (the retention).
const MAX_EXPORT_DAYS: i64 = 366;

/// A file format of the export.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// Comma-separated values.
    Csv,
    /// An Excel workbook.
    Xlsx,
}

/// What to export.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExportRequest {
    /// One event only.
    pub event_id: Option<Uuid>,
    /// The organization.
    pub organization_id: Uuid,
    /// From (inclusive).
    pub date_from: DateTime<Utc>,
    /// To (exclusive).
    pub date_to: DateTime<Utc>,
    /// csv or xlsx.
    pub format: ExportFormat,
}

/// Exports the organization's records of a period (at most 366 days) as CSV or XLSX, streamed.
#[utoipa::path(post, path = "/api/v1/analytics/export", tag = "analytics", request_body = ExportRequest,
    responses((status = 200, description = "text/csv or application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
        (status = 400, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn export(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<ExportRequest>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    caller.require_user()?;
    if body.date_from >= body.date_to {
        return Err(ApiError::field(
            "dateTo",
            FieldError::from(AnalyticsFieldText::DateToNotAfterDateFrom),
        ));
    }
    if body.date_to - body.date_from > chrono::Duration::days(MAX_EXPORT_DAYS) {
        return Err(ApiError::field(
            "dateTo",
            FieldError::from(AnalyticsFieldText::PeriodTooLong),
        ));
    }
    let tenant = TenantId(body.organization_id);
    if caller.tenant != Some(tenant) || caller.roles.is_empty() {
        return Err(ApiError::new(ErrorCode::Forbidden));
    }
    if let Some(event) = body.event_id
        && tracked::tenant_of(&state.db, event).await? != Some(tenant)
    {
        return Err(ApiError::not_found());
    }
    let store = parts(&state)?.store.clone();
    let query = analytics::store::Query {
        tenant,
        event: body.event_id,
        period: Period {
            from: Some(body.date_from),
            to: Some(body.date_to),
        },
    };
    // An event's export is named for the event, an organization's for the organization.
    let name = format!(
        "bilet-analytics-{}-{}-{}",
        body.event_id
            .map_or_else(|| body.organization_id.to_string(), |e| e.to_string()),
        body.date_from.format("%Y%m%d"),
        body.date_to.format("%Y%m%d")
    );
    let (content_type, file_name, stream_body) = match body.format {
        ExportFormat::Csv => {
            let (sink, receiver) = tokio::sync::mpsc::channel(4);
            tokio::spawn(analytics::export::csv(store, query, sink));
            (
                "text/csv; charset=utf-8",
                format!("{name}.csv"),
                axum::body::Body::from_stream(futures_util::stream::unfold(
                    receiver,
                    |mut r| async move { r.recv().await.map(|chunk| (chunk, r)) },
                )),
            )
        }
        ExportFormat::Xlsx => {
            let path = std::env::temp_dir().join(format!("bilet-export-{}.xlsx", Uuid::now_v7()));
            let written = analytics::export::xlsx(&store, &query, path.clone()).await;
            let file = match written {
                Ok(()) => tokio::fs::File::open(&path)
                    .await
                    .map_err(|e| ApiError::internal(&e)),
                Err(e) => Err(ApiError::internal(&e)),
            };
            // Unlinked now: the open handle keeps the bytes until the response is sent.
            let _ = tokio::fs::remove_file(&path).await;
            let file = file?;
            (
                "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
                format!("{name}.xlsx"),
                axum::body::Body::from_stream(futures_util::stream::unfold(
                    Some(file),
                    |file| async move {
                        use tokio::io::AsyncReadExt;
                        let mut f = file?;
                        let mut buf = vec![0u8; 64 * 1024];
                        match f.read(&mut buf).await {
                            Ok(0) => None,
                            Ok(n) => {
                                buf.truncate(n);
                                Some((Ok::<_, std::io::Error>(bytes::Bytes::from(buf)), Some(f)))
                            }
                            // The error ends the body; nothing more is read.
                            Err(e) => Some((Err(e), None)),
                        }
                    },
                )),
            )
        }
    };
    Ok((
        [
            (axum::http::header::CONTENT_TYPE, content_type.to_string()),
            (
                axum::http::header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{file_name}\""),
            ),
        ],
        stream_body,
    )
        .into_response())
}

#[cfg(test)]
mod document_tests {
    use super::*;

    #[test]
    fn the_documented_track_types_are_the_ones_clients_may_send() {
        let schema = serde_json::to_value(<ClientTrackType as utoipa::PartialSchema>::schema())
            .expect("a schema serializes");
        let documented: Vec<&str> = schema["enum"]
            .as_array()
            .expect("an enumeration")
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        let tracked: Vec<&str> = TrackType::ALL
            .into_iter()
            .filter(|t| t.client_tracked())
            .map(TrackType::as_str)
            .collect();
        assert_eq!(documented, tracked);
    }
}
