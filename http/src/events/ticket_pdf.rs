//! A confirmed ticket as a file for its holder: the PDF (one A4 page), and the wallet passes
//! (`super::wallet`) share the reading and the rule here: the holder only (anyone else, the
//! event's organizers included, gets the 404 of a registration they cannot see), and only
//! while the registration is CONFIRMED (409 otherwise).

use crate::context::{Caller, ClientLang};
use crate::error::ApiError;
use crate::extract::Path;
use crate::state::AppState;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use domain::error::Refusal;
use domain::events::refusals::EventRefusal;
use messenger::tickets::{self, pdf};
use storage::events::tickets::HeldTicket;
use uuid::Uuid;

/// A file's bytes: the document says `string`, `format: binary`.
pub struct FileBytes;

impl utoipa::PartialSchema for FileBytes {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .into()
    }
}

impl utoipa::ToSchema for FileBytes {}

/// The caller's own registration `id` with its event and type, refused unless CONFIRMED.
pub(crate) async fn confirmed(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
) -> Result<HeldTicket, ApiError> {
    let user = caller.require_user()?;
    let ticket = storage::events::tickets::held(&state.db, user, id).await?;
    let status = ticket.registration.status;
    if !domain::events::registrations::has_ticket_file(status) {
        return Err(
            ApiError::from(Refusal::from(EventRefusal::TicketNotConfirmed))
                .with_details(serde_json::json!({"status": status})),
        );
    }
    Ok(ticket)
}

/// A downloaded file: its type, `attachment` with its name, and never kept by a cache (it
/// carries a person's ticket).
pub(crate) fn attachment(bytes: Vec<u8>, content_type: &'static str, name: &str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
            (header::CACHE_CONTROL, "private, no-store".to_string()),
        ],
        bytes,
    )
        .into_response()
}

/// The ticket as a PDF of one A4 page: the event, its date and time on the event's clock, the
/// place, the ticket type, the participant's name, the confirmation code and its QR code
/// (what the door scans, as on the web ticket). Labels follow `Accept-Language`. The holder
/// only (anyone else: 404), and only while CONFIRMED (409 with `details.status`).
#[utoipa::path(get, path = "/api/v1/registrations/{id}/ticket.pdf", tag = "registrations",
    params(("id" = Uuid, Path, description = "the registration")),
    responses(
        (status = 200, description = "the ticket, one A4 page", content_type = "application/pdf", body = FileBytes,
            headers(("Content-Disposition" = String, description = "attachment; filename=\"ticket-{confirmationCode}.pdf\""))),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 409, description = "the registration is not confirmed", body = crate::error::ErrorBody)))]
pub async fn pdf(
    State(state): State<AppState>,
    caller: Caller,
    ClientLang(lang): ClientLang,
    Path(id): Path<Uuid>,
) -> Result<Response, ApiError> {
    let ticket = confirmed(&state, &caller, id).await?;
    let sheet = tickets::sheet(&ticket, lang);
    // Subsetting the fonts is a few milliseconds of CPU: off the request threads.
    let bytes = tokio::task::spawn_blocking(move || pdf::render(&sheet))
        .await
        .map_err(|e| ApiError::internal(&e))?
        .map_err(|e| ApiError::internal(&e))?;
    let name = format!("ticket-{}.pdf", ticket.registration.confirmation_code);
    Ok(attachment(bytes, "application/pdf", &name))
}
