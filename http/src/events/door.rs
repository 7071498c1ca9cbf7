//! The door's view of an event: the live figures ("312 of 450 in", per ticket type) and, for
//! a phone that may lose the network, every ticket that lets someone in.

use super::organizer;
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Json, Path, Query};
use crate::state::AppState;
use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use storage::events::door::{self, DoorTicket, TypeCount};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// What the door asks for.
#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
pub struct DoorQuery {
    /// With every ticket that lets someone in (for checking in without a network).
    #[serde(default)]
    pub tickets: bool,
}

/// One ticket type at the door.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DoorTypeDto {
    pub ticket_type_id: Uuid,
    pub name: String,
    /// Confirmed or checked-in tickets of the type.
    pub expected: i64,
    pub checked_in: i64,
}

/// A ticket as the door keeps it offline.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DoorTicketDto {
    pub code: String,
    /// "First Last"; empty when none was given.
    pub name: String,
    pub ticket_type_id: Uuid,
    /// When it was checked in (null: not yet).
    pub checked_in_at: Option<DateTime<Utc>>,
}

/// The event at the door.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DoorDto {
    pub event_id: Uuid,
    /// When these figures were read: a phone offline shows how old its list is.
    pub read_at: DateTime<Utc>,
    pub expected: i64,
    pub checked_in: i64,
    pub by_type: Vec<DoorTypeDto>,
    /// Only with `tickets=true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tickets: Option<Vec<DoorTicketDto>>,
}

impl From<TypeCount> for DoorTypeDto {
    fn from(c: TypeCount) -> Self {
        DoorTypeDto {
            ticket_type_id: c.ticket_type_id,
            name: c.name,
            expected: c.expected,
            checked_in: c.checked_in,
        }
    }
}

impl From<DoorTicket> for DoorTicketDto {
    fn from(t: DoorTicket) -> Self {
        DoorTicketDto {
            code: t.code,
            name: t.name,
            ticket_type_id: t.ticket_type_id,
            checked_in_at: t.checked_in_at,
        }
    }
}

/// Checked in against expected, per ticket type, and with `tickets=true` every valid ticket
/// (code, name, type, when checked in): for the organization's staff (OWNER or MODERATOR);
/// another organization's event is 404.
#[utoipa::path(get, path = "/api/v1/events/{id}/door", tag = "registrations", params(DoorQuery),
    responses((status = 200, body = DoorDto), (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody)))]
pub async fn view(
    State(state): State<AppState>,
    caller: Caller,
    Path(event_id): Path<Uuid>,
    Query(query): Query<DoorQuery>,
) -> Result<Json<DoorDto>, ApiError> {
    let (tenant, staff) = organizer(&caller)?;
    let read_at = state.clock.now();
    let (counts, tickets) = door::read(&state.db, tenant, staff, event_id, query.tickets).await?;
    let tickets = tickets.map(|all| all.into_iter().map(DoorTicketDto::from).collect());
    Ok(Json(DoorDto {
        event_id,
        read_at,
        expected: counts.iter().map(|c| c.expected).sum(),
        checked_in: counts.iter().map(|c| c.checked_in).sum(),
        by_type: counts.into_iter().map(DoorTypeDto::from).collect(),
        tickets,
    }))
}
