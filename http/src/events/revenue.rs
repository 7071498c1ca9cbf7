//! Money over HTTP, for organizers: what an event took in, gave back and kept, per currency;
//! and the same for every event of the organization.

use super::organizer;
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Json, Path, Query};
use crate::state::AppState;
use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use storage::events::revenue::{self, Revenue};
use utoipa::ToSchema;
use uuid::Uuid;

/// Money in one currency.
#[derive(Clone, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MoneyDto {
    /// ISO 4217 code.
    pub currency: String,
    /// Received (every completed payment), in the smallest unit.
    pub paid_cents: i64,
    /// Payments received.
    pub payments: i64,
    /// Returned by the provider.
    pub refunded_cents: i64,
    /// Refunds made.
    pub refunds: i64,
    /// Asked for or sent, not returned yet.
    pub refund_pending_cents: i64,
    /// Received less returned.
    pub net_cents: i64,
}

impl From<&Revenue> for MoneyDto {
    fn from(r: &Revenue) -> MoneyDto {
        MoneyDto {
            currency: r.currency.clone(),
            paid_cents: r.paid_cents,
            payments: r.payments,
            refunded_cents: r.refunded_cents,
            refunds: r.refunds,
            refund_pending_cents: r.refund_pending_cents,
            net_cents: r.net_cents(),
        }
    }
}

impl MoneyDto {
    fn add(&mut self, other: &MoneyDto) {
        self.paid_cents += other.paid_cents;
        self.payments += other.payments;
        self.refunded_cents += other.refunded_cents;
        self.refunds += other.refunds;
        self.refund_pending_cents += other.refund_pending_cents;
        self.net_cents += other.net_cents;
    }
}

/// An event's money, per currency.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventRevenueDto {
    /// The event.
    pub event_id: Uuid,
    /// One entry per currency it took money in (none: nothing paid yet).
    pub currencies: Vec<MoneyDto>,
}

/// One event's line of the organization's revenue.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventMoneyDto {
    /// The event.
    pub event_id: Uuid,
    /// Its title.
    pub title: String,
    /// Its money in this currency.
    #[serde(flatten)]
    pub money: MoneyDto,
}

/// The organization's money.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationRevenueDto {
    /// All events together, per currency.
    pub totals: Vec<MoneyDto>,
    /// Each event and currency, most received first.
    pub events: Vec<EventMoneyDto>,
}

/// The period of the organization's revenue.
#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RevenueQuery {
    /// From (inclusive), ISO 8601.
    pub from: Option<DateTime<Utc>>,
    /// To (exclusive), ISO 8601.
    pub to: Option<DateTime<Utc>>,
}

/// What an event took in, gave back and kept (organizers of its organization), per currency.
#[utoipa::path(get, path = "/api/v1/events/{id}/revenue", tag = "registrations",
    responses((status = 200, body = EventRevenueDto), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody)))]
pub async fn of_event(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<EventRevenueDto>, ApiError> {
    let (tenant, user) = organizer(&caller)?;
    let lines = revenue::of_event(&state.db, tenant, user, id).await?;
    Ok(Json(EventRevenueDto {
        event_id: id,
        currencies: lines.iter().map(MoneyDto::from).collect(),
    }))
}

/// The money of every event of the caller's organization (organizers), within `[from, to)` when
/// given: each event per currency, and the totals per currency.
#[utoipa::path(get, path = "/api/v1/events/revenue", tag = "registrations", params(RevenueQuery),
    responses((status = 200, body = OrganizationRevenueDto), (status = 400, body = crate::error::ErrorBody),
        (status = 403, body = crate::error::ErrorBody)))]
pub async fn of_organization(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<RevenueQuery>,
) -> Result<Json<OrganizationRevenueDto>, ApiError> {
    let (tenant, user) = organizer(&caller)?;
    let lines = revenue::of_organization(&state.db, tenant, user, query.from, query.to).await?;
    let mut totals: BTreeMap<String, MoneyDto> = BTreeMap::new();
    let events = lines
        .iter()
        .map(|line| {
            let money = MoneyDto::from(line);
            totals
                .entry(line.currency.clone())
                .or_insert_with(|| MoneyDto {
                    currency: line.currency.clone(),
                    ..MoneyDto::default()
                })
                .add(&money);
            EventMoneyDto {
                event_id: line.event_id,
                title: line.title.clone(),
                money,
            }
        })
        .collect();
    Ok(Json(OrganizationRevenueDto {
        totals: totals.into_values().collect(),
        events,
    }))
}
