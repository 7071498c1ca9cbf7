//! Ticket types of an event.

use super::dto::{CreateTicketTypeRequest, TicketTypeDto};
use super::organizer;
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Json, Path};
use crate::paging::PageParams;
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use domain::events::validation::{self, TicketNumbers};
use domain::paging::{Page, SortDir, SortField, SortWhitelist};
use domain::validation::{FieldError, FieldErrors};
use storage::events::ticket_types::{self, TicketFields};
use uuid::Uuid;

pub(crate) const SORT: SortWhitelist = SortWhitelist {
    fields: &[SortField {
        api: "sortOrder",
        column: "sort_order",
    }],
    default: ("sortOrder", SortDir::Asc),
};

fn fields(body: CreateTicketTypeRequest) -> Result<TicketFields, ApiError> {
    let mut errors = FieldErrors::new();
    errors.check_length("name", body.name.trim(), 1, 255);
    errors.check_length("description", &body.description, 0, 5_000);
    let currency = body
        .currency
        .unwrap_or_else(|| "RUB".into())
        .trim()
        .to_uppercase();
    if !validation::is_currency(&currency) {
        errors.add("currency", FieldError::InvalidFormat);
    }
    let prepayment_percent = body.prepayment_percent.unwrap_or(100);
    validation::check_ticket_numbers(
        &mut errors,
        &TicketNumbers {
            price_cents: body.price_cents,
            quantity: body.quantity,
            reservation_minutes: body.reservation_minutes,
            prepayment_percent,
            sales_start: body.sales_start,
            sales_end: body.sales_end,
        },
    );
    errors.into_result()?;
    Ok(TicketFields {
        name: body.name.trim().to_string(),
        description: body.description,
        price_cents: body.price_cents,
        currency,
        quantity: body.quantity,
        reservation_minutes: body.reservation_minutes,
        prepayment_percent,
        sales_start: body.sales_start,
        sales_end: body.sales_end,
        sort_order: body.sort_order,
        is_active: body.is_active.unwrap_or(true),
    })
}

/// Ticket types of an event the caller may see (organizers also see inactive ones).
#[utoipa::path(get, path = "/api/v1/events/{id}/ticket-types", tag = "events", params(PageParams),
    responses((status = 200, description = "a page of TicketTypeDto"), (status = 404, body = crate::error::ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    paging: PageParams,
) -> Result<Json<Page<TicketTypeDto>>, ApiError> {
    let page = paging.resolve(&SORT)?;
    let mut all = ticket_types::list(&state.db, caller.scope(), id).await?;
    if page.sort.dir == SortDir::Desc {
        all.reverse();
    }
    let total = all.len() as u64;
    let data = all
        .into_iter()
        .skip(page.offset() as usize)
        .take(page.limit() as usize)
        .map(Into::into)
        .collect();
    Ok(Json(Page::new(data, &page, total)))
}

/// Adds a ticket type (OWNER or MODERATOR; not to a cancelled or completed event).
#[utoipa::path(post, path = "/api/v1/events/{id}/ticket-types", tag = "events", request_body = CreateTicketTypeRequest,
    responses((status = 201, body = TicketTypeDto), (status = 400, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Json(body): Json<CreateTicketTypeRequest>,
) -> Result<(StatusCode, Json<TicketTypeDto>), ApiError> {
    let (tenant, user) = organizer(&caller)?;
    let fields = fields(body)?;
    let created =
        ticket_types::create(&state.db, tenant, user, id, &fields, state.clock.now()).await?;
    Ok((StatusCode::CREATED, Json(created.into())))
}

/// Replaces a ticket type; seats never drop below sold + reserved.
#[utoipa::path(put, path = "/api/v1/events/{id}/ticket-types/{type_id}", tag = "events", request_body = CreateTicketTypeRequest,
    responses((status = 200, body = TicketTypeDto), (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, type_id)): Path<(Uuid, Uuid)>,
    Json(body): Json<CreateTicketTypeRequest>,
) -> Result<Json<TicketTypeDto>, ApiError> {
    let (tenant, user) = organizer(&caller)?;
    let fields = fields(body)?;
    Ok(Json(
        ticket_types::update(
            &state.db,
            tenant,
            user,
            id,
            type_id,
            &fields,
            state.clock.now(),
        )
        .await?
        .into(),
    ))
}

/// Deletes a ticket type, or retires one with sales (any registration, cancelled ones too, or
/// sold or reserved seats): off sale and kept for its tickets. 204 either way.
#[utoipa::path(delete, path = "/api/v1/events/{id}/ticket-types/{type_id}", tag = "events",
    responses((status = 204, description = "deleted, or retired when it has sales"), (status = 404, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody, description = "the event is cancelled or completed")))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, type_id)): Path<(Uuid, Uuid)>,
) -> Result<StatusCode, ApiError> {
    let (tenant, user) = organizer(&caller)?;
    ticket_types::delete(&state.db, tenant, user, id, type_id, state.clock.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}
