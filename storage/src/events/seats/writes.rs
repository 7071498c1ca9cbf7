//! What a seat transaction writes once its batches are judged: the new registrations with
//! their ticket types' counts, and every request's idempotency record. Each is one statement
//! of arrays for all the transaction's ticket types.

use super::SeatRequest;
use crate::Tx;
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::events::registrations::RegistrationStatus;
use domain::events::seats::SeatRefusal;
use domain::ids::TenantId;
use std::collections::HashSet;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

/// The idempotency records of a transaction, written as arrays in one statement.
#[derive(Default)]
pub(super) struct Records<'a> {
    tenants: Vec<Uuid>,
    users: Vec<Uuid>,
    keys: Vec<Uuid>,
    hashes: Vec<&'a [u8]>,
    outcomes: Vec<&'static str>,
    registrations: Vec<Option<Uuid>>,
}

impl<'a> Records<'a> {
    pub(super) fn push(
        &mut self,
        tenant: TenantId,
        request: &'a SeatRequest,
        outcome: &'static str,
        registration: Option<Uuid>,
    ) {
        self.tenants.push(tenant.as_uuid());
        self.users.push(request.user.as_uuid());
        self.keys.push(request.key);
        self.hashes.push(&request.request_hash);
        self.outcomes.push(outcome);
        self.registrations.push(registration);
    }

    /// Records the seats whose registration the insert skipped (the person already holds one
    /// for the event) as refused for that reason.
    pub(super) fn already_registered(&mut self, inserted: &HashSet<Uuid>) {
        for (outcome, registration) in self.outcomes.iter_mut().zip(&mut self.registrations) {
            if registration.is_some_and(|id| !inserted.contains(&id)) {
                *outcome = SeatRefusal::AlreadyRegistered.as_str();
                *registration = None;
            }
        }
    }

    /// Prepares `insert`'s statement on `tx`'s connection (once per connection), so that
    /// `insert` goes out at once, ahead of the commit sent behind it.
    pub(super) async fn prepare(tx: &Tx) -> Result<tokio_postgres::Statement> {
        Ok(tx
            .prepare_cached(
                "INSERT INTO event_service.seat_requests (tenant_id, user_id, key, request_hash, outcome, registration_id)
                 SELECT u.tenant_id, u.user_id, u.key, u.hash, u.outcome, u.registration_id
                 FROM UNNEST($1::uuid[], $2::uuid[], $3::uuid[], $4::bytea[], $5::text[], $6::uuid[])
                      AS u(tenant_id, user_id, key, hash, outcome, registration_id)",
            )
            .await?)
    }

    pub(super) async fn insert(&self, tx: &Tx) -> Result<()> {
        if self.users.is_empty() {
            return Ok(());
        }
        let stmt = Self::prepare(tx).await?;
        let params: [&(dyn ToSql + Sync); 6] = [
            &self.tenants,
            &self.users,
            &self.keys,
            &self.hashes,
            &self.outcomes,
            &self.registrations,
        ];
        tx.execute(&stmt, &params).await?;
        Ok(())
    }
}

/// A seat handed out, to be written as a registration.
pub(super) struct NewRegistration<'a> {
    pub id: Uuid,
    pub code: String,
    pub tenant: TenantId,
    pub event: Uuid,
    pub ticket_type: Uuid,
    pub status: RegistrationStatus,
    pub price: i64,
    pub currency: &'a str,
    pub expires_at: Option<DateTime<Utc>>,
    pub now: DateTime<Utc>,
    pub request: &'a SeatRequest,
}

/// Inserts the registrations and adds the seats of those inserted to their ticket types'
/// counts, in one statement; returns the registrations as stored (`registrations::COLUMNS`).
/// A person who already holds an active registration for the event (committed, or written
/// earlier in this transaction) gets no row: the one-active index's conflict is skipped, and
/// their seat is not counted.
pub(super) async fn insert(
    tx: &Tx,
    new: &[NewRegistration<'_>],
) -> Result<Vec<tokio_postgres::Row>> {
    if new.is_empty() {
        return Ok(Vec::new());
    }
    let column = |f: &dyn Fn(&NewRegistration<'_>) -> Uuid| new.iter().map(f).collect::<Vec<_>>();
    let ids = column(&|n| n.id);
    let tenants = column(&|n| n.tenant.as_uuid());
    let events = column(&|n| n.event);
    let types = column(&|n| n.ticket_type);
    let users = column(&|n| n.request.user.as_uuid());
    let statuses: Vec<&str> = new.iter().map(|n| n.status.as_str()).collect();
    let prices: Vec<i64> = new.iter().map(|n| n.price).collect();
    let currencies: Vec<&str> = new.iter().map(|n| n.currency).collect();
    let expiries: Vec<Option<DateTime<Utc>>> = new.iter().map(|n| n.expires_at).collect();
    let times: Vec<DateTime<Utc>> = new.iter().map(|n| n.now).collect();
    let codes: Vec<&str> = new.iter().map(|n| n.code.as_str()).collect();
    let emails: Vec<Option<&str>> = new.iter().map(|n| n.request.email.as_deref()).collect();
    let firsts: Vec<&str> = new.iter().map(|n| n.request.first_name.as_str()).collect();
    let lasts: Vec<&str> = new.iter().map(|n| n.request.last_name.as_str()).collect();
    let fields: Vec<&serde_json::Value> = new.iter().map(|n| &n.request.custom_fields).collect();
    let sources: Vec<Option<&str>> = new.iter().map(|n| n.request.source.as_deref()).collect();
    let (sold, reserved): (Vec<i32>, Vec<i32>) =
        new.iter().map(|n| n.status.seat().counts()).unzip();
    let stmt = tx
        .prepare_cached(&format!(
            "WITH r AS (
                INSERT INTO event_service.registrations (id, tenant_id, event_id, ticket_type_id, user_id, email,
                    first_name, last_name, confirmation_code, status, custom_fields, price_cents, currency,
                    expires_at, created_at, updated_at, source)
                SELECT u.id, u.tenant_id, u.event_id, u.ticket_type_id, u.user_id, COALESCE(u.email, p.email),
                       COALESCE(NULLIF(u.first_name, ''), p.first_name, ''),
                       COALESCE(NULLIF(u.last_name, ''), p.last_name, ''),
                       u.code, u.status, u.fields, u.price, u.currency, u.expires_at, u.at, u.at, u.source
                FROM UNNEST($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::uuid[], $6::text[], $7::text[],
                            $8::text[], $9::text[], $10::text[], $11::jsonb[], $12::int8[], $13::text[],
                            $14::timestamptz[], $15::timestamptz[], $16::text[])
                     AS u(id, tenant_id, event_id, ticket_type_id, user_id, email, first_name, last_name,
                          code, status, fields, price, currency, expires_at, at, source)
                LEFT JOIN LATERAL (SELECT p.email, p.first_name, p.last_name FROM event_service.people p
                    WHERE p.user_id = u.user_id LIMIT 1) p ON true
                ON CONFLICT (event_id, user_id) WHERE status IN ('RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN')
                DO NOTHING
                RETURNING *
             ), counted AS (
                UPDATE event_service.ticket_types t
                SET sold_count = t.sold_count + c.sold, reserved_count = t.reserved_count + c.reserved
                FROM (SELECT r.ticket_type_id AS id, sum(k.sold)::int4 AS sold, sum(k.reserved)::int4 AS reserved
                      FROM r JOIN UNNEST($1::uuid[], $17::int4[], $18::int4[]) AS k(id, sold, reserved) ON k.id = r.id
                      GROUP BY r.ticket_type_id) AS c
                WHERE t.id = c.id RETURNING 1
             ) SELECT {COLUMNS} FROM r",
            COLUMNS = super::super::registrations::COLUMNS
        ))
        .await?;
    let params: [&(dyn ToSql + Sync); 18] = [
        &ids,
        &tenants,
        &events,
        &types,
        &users,
        &emails,
        &firsts,
        &lasts,
        &codes,
        &statuses,
        &fields,
        &prices,
        &currencies,
        &expiries,
        &times,
        &sources,
        &sold,
        &reserved,
    ];
    Ok(tx.query(&stmt, &params).await?)
}
