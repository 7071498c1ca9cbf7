//! The registrations of an event as a CSV file for its organizers: every registration (no page
//! cap), read page by page and streamed as it comes. UTF-8 with a byte order mark (so Excel
//! reads Cyrillic names), CRLF line ends, every field quoted as RFC 4180 allows, and every part
//! of a cell that a spreadsheet in any locale would run as a formula (`=`, `+`, `-`, `@`, tab or
//! CR at its start or after a `,` or `;`) given a leading apostrophe, by the analytics export's
//! `csv_field`.

use super::organizer;
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Path, Query};
use crate::state::AppState;
use analytics::export::csv_line;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use chrono::{DateTime, SecondsFormat, Utc};
use domain::events::registrations::RegistrationStatus;
use domain::ids::{TenantId, UserId};
use serde::Deserialize;
use storage::Database;
use storage::events::catalog;
use storage::events::registrations::RegistrationFilter;
use storage::events::registrations_export::{self, ExportRow, PAGE};
use tokio::sync::mpsc;
use uuid::Uuid;

/// Filters of the download: those of the registration list.
#[derive(Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct RegistrationExportQuery {
    /// Only this status.
    pub status: Option<RegistrationStatus>,
    /// Only this ticket type.
    pub ticket_type_id: Option<Uuid>,
}

/// The columns, in order.
pub const HEADER: [&str; 12] = [
    "firstName",
    "lastName",
    "email",
    "ticketType",
    "status",
    "confirmationCode",
    "registeredAt",
    "checkedInAt",
    "source",
    "currency",
    "paidCents",
    "refundedCents",
];

/// The byte order mark that tells Excel the file is UTF-8.
const BOM: &str = "\u{feff}";

/// Downloads the event's registrations as CSV (OWNER or MODERATOR of the event's
/// organization), oldest first, filtered like the registration list. Columns: firstName,
/// lastName, email, ticketType (its name), status, confirmationCode, registeredAt,
/// checkedInAt (UTC, RFC 3339, empty when not checked in), source, currency, paidCents (every
/// completed payment) and refundedCents (refunds the provider made).
#[utoipa::path(get, path = "/api/v1/events/{id}/registrations/export", tag = "registrations", params(RegistrationExportQuery),
    responses(
        (status = 200, description = "the CSV file (text/csv; charset=utf-8, UTF-8 with a byte order mark, CRLF lines)", content_type = "text/csv", body = String,
            headers(("Content-Disposition" = String, description = "attachment; filename=\"bilet-registrations-{eventId}.csv\""))),
        (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn export(
    State(state): State<AppState>,
    caller: Caller,
    Path(event_id): Path<Uuid>,
    Query(query): Query<RegistrationExportQuery>,
) -> Result<Response, ApiError> {
    // As the registration list: the organizers of the event's own organization see everyone;
    // here nobody else gets anything (403 without an organizer's token, 404 for an event of
    // another organization, visible or not).
    let (tenant, user) = organizer(&caller)?;
    let event = catalog::get(&state.db, caller.scope(), event_id).await?;
    if event.tenant_id != tenant {
        return Err(ApiError::not_found());
    }
    let filter = RegistrationFilter {
        status: query.status,
        ticket_type_id: query.ticket_type_id,
        active_only: false,
        search: None,
    };
    // The first page is read before answering, so a failing database is an error answer
    // rather than a cut file.
    let first =
        registrations_export::page(&state.db, tenant, user, event_id, &filter, None, PAGE).await?;
    let (sink, receiver) = mpsc::channel(4);
    tokio::spawn(write(
        state.db.clone(),
        tenant,
        user,
        event_id,
        filter,
        first,
        sink,
    ));
    let body =
        axum::body::Body::from_stream(futures_util::stream::unfold(receiver, |mut r| async move {
            r.recv().await.map(|chunk| (chunk, r))
        }));
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"bilet-registrations-{event_id}.csv\""),
            ),
        ],
        body,
    )
        .into_response())
}

/// Sends the header, `first` and every following page into `sink`; stops early when the
/// receiver goes away (the client disconnected), and ends the body with an error when a read
/// fails.
async fn write(
    db: Database,
    tenant: TenantId,
    user: UserId,
    event: Uuid,
    filter: RegistrationFilter,
    first: Vec<ExportRow>,
    sink: mpsc::Sender<Result<Bytes, std::io::Error>>,
) {
    let header: Vec<String> = HEADER.iter().map(|h| h.to_string()).collect();
    let mut chunk = String::from(BOM);
    chunk.push_str(&csv_line(&header));
    let mut rows = first;
    loop {
        let full = rows.len() as i64 >= PAGE;
        let after = rows.last().map(|r| (r.created_at, r.id));
        for row in &rows {
            chunk.push_str(&csv_line(&cells(row)));
        }
        if sink
            .send(Ok(Bytes::from(std::mem::take(&mut chunk))))
            .await
            .is_err()
        {
            return;
        }
        let Some(after) = after.filter(|_| full) else {
            return;
        };
        rows =
            match registrations_export::page(&db, tenant, user, event, &filter, Some(after), PAGE)
                .await
            {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::error!(error = %e, "registration export read failed");
                    let _ = sink.send(Err(std::io::Error::other(e.to_string()))).await;
                    return;
                }
            };
    }
}

fn time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn cells(r: &ExportRow) -> [String; 12] {
    [
        r.first_name.clone(),
        r.last_name.clone(),
        r.email.clone().unwrap_or_default(),
        r.ticket_type.clone(),
        r.status.as_str().to_string(),
        r.confirmation_code.clone(),
        time(r.created_at),
        r.checked_in_at.map(time).unwrap_or_default(),
        r.source.clone().unwrap_or_default(),
        r.currency.clone(),
        r.paid_cents.to_string(),
        r.refunded_cents.to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_quoted_and_formulas_defused() {
        let cells = [
            "Doe, \"Jr\"".to_string(),
            "=HYPERLINK(\"x\")".to_string(),
            "two\nlines".to_string(),
            String::new(),
        ];
        assert_eq!(
            csv_line(&cells),
            "\"Doe, \"\"Jr\"\"\",\"'=HYPERLINK(\"\"x\"\")\",\"two\nlines\",\"\"\r\n"
        );
    }

    #[test]
    fn times_are_utc_to_the_second() {
        let at = DateTime::parse_from_rfc3339("2026-03-01T10:20:30.123456+03:00")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(time(at), "2026-03-01T07:20:30Z");
    }
}
