//! The admitter: every events node runs it a few times a second. For each open room whose
//! sale has begun it draws the pre-queue once, notes whether any seat is left, and lets in
//! the visitors the room's rate owes since its last run. A room is worked on under its row's
//! lock, taken with SKIP LOCKED: two nodes never admit from one room at once, and a node that
//! finds a room busy leaves it to the other. Admitting is moving the room's cursor, in the
//! transaction that announces each visitor let in (queue.admitted: the bot tells them, analytics
//! counts them).

use super::super::publish;
use super::super::registrations::event_summary;
use crate::db::{Database, Scope, Tx};
use crate::error::Result;
use chrono::{DateTime, Duration, Utc};
use domain::contract::DomainEvent;
use domain::contract::events::QueuePlace;
use domain::events::waiting_room::{clock_after, draw, owed};
use domain::ids::{TenantId, UserId};
use uuid::Uuid;

/// At most this many visitors are let in from one room in one run; the rest are owed to the
/// next run, a fraction of a second later.
const MOST_PER_RUN: i64 = 10_000;

/// What one run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Run {
    /// Rooms whose pre-queue was drawn.
    pub drawn: usize,
    /// Visitors let in.
    pub admitted: i64,
    /// Rooms found sold out.
    pub sold_out: usize,
    /// Rooms left alone because another node was working them.
    pub busy: usize,
}

/// Works every open room whose sale has begun at `now`.
pub async fn run(db: &Database, now: DateTime<Utc>) -> Result<Run> {
    let tx = db.begin(Scope::system()).await?;
    let rooms: Vec<Uuid> = tx
        .query(
            "SELECT r.event_id FROM event_service.waiting_rooms r
             JOIN event_service.events e ON e.id = r.event_id
             WHERE r.on_sale_at <= $1 AND e.waiting_room AND e.status = 'PUBLISHED' AND e.deleted_at IS NULL",
            &[&now],
        )
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect();
    tx.commit().await?;
    let mut total = Run::default();
    for event in rooms {
        let run = room(db, event, now).await?;
        total.drawn += run.drawn;
        total.admitted += run.admitted;
        total.sold_out += run.sold_out;
        total.busy += run.busy;
    }
    Ok(total)
}

/// Works one room, unless another node is at it.
pub async fn room(db: &Database, event: Uuid, now: DateTime<Utc>) -> Result<Run> {
    let tx = db.begin(Scope::system()).await?;
    let Some(row) = tx
        .query_opt(
            "SELECT on_sale_at, shuffled_at IS NOT NULL, admitted_through, admitted_until,
                admit_per_minute, grace_minutes, sold_out_at IS NOT NULL, tenant_id, admission_minutes
             FROM event_service.waiting_rooms WHERE event_id = $1 FOR UPDATE SKIP LOCKED",
            &[&event],
        )
        .await?
    else {
        return Ok(Run {
            busy: 1,
            ..Run::default()
        });
    };
    let on_sale_at: DateTime<Utc> = row.get(0);
    let drawn: bool = row.get(1);
    let through: i64 = row.get(2);
    let clock: Option<DateTime<Utc>> = row.get(3);
    let rate: i32 = row.get(4);
    let grace: i32 = row.get(5);
    let was_sold_out: bool = row.get(6);
    let tenant = TenantId(row.get(7));
    let admission_minutes: i32 = row.get(8);
    let mut run = Run::default();
    if !drawn {
        deal_pre_queue(&tx, event).await?;
        run.drawn = 1;
    }
    // Nothing is owed for the time the event was sold out.
    let clock = if was_sold_out {
        now
    } else {
        clock.unwrap_or(on_sale_at)
    };
    let free: i64 = tx
        .query_one(
            "SELECT coalesce(sum(greatest(quantity - sold_count - reserved_count, 0)), 0)::bigint
             FROM event_service.ticket_types WHERE event_id = $1 AND is_active",
            &[&event],
        )
        .await?
        .get(0);
    let (through, admitted, clock, sold_out) = if free == 0 {
        // Nothing to let anyone in for: the clock follows now, so nobody is owed for the
        // time the event was sold out if a seat frees.
        run.sold_out = 1;
        (through, 0, now, true)
    } else {
        let kept_since = now - Duration::minutes(i64::from(grace));
        // Nothing is owed for a time nobody waited: the clock starts no earlier than the
        // arrival of the first visitor still in line (so it need not be written while the
        // line is empty).
        let first: Option<DateTime<Utc>> = tx
            .query_opt(
                "SELECT joined_at FROM event_service.waiting_room_places
                 WHERE event_id = $1 AND ordinal > $2 AND (left_at IS NULL OR left_at > $3)
                 ORDER BY ordinal LIMIT 1",
                &[&event, &through, &kept_since],
            )
            .await?
            .map(|row| row.get(0));
        let clock = first.map_or(now, |joined| clock.max(joined));
        let (due, moved) = owed(clock, rate, now);
        let due = due.min(MOST_PER_RUN);
        let let_in = if due > 0 {
            tx.query(
                "SELECT ordinal, user_id, early, joined_at FROM event_service.waiting_room_places
                 WHERE event_id = $1 AND ordinal > $2 AND (left_at IS NULL OR left_at > $3)
                 ORDER BY ordinal LIMIT $4",
                &[&event, &through, &kept_since, &due],
            )
            .await?
        } else {
            Vec::new()
        };
        if !let_in.is_empty() {
            let summary = event_summary(&tx, event).await?;
            for row in &let_in {
                let user = UserId(row.get(1));
                let said = QueuePlace {
                    event_id: event,
                    user_id: user,
                    early: row.get(2),
                    joined_at: row.get(3),
                    admission_minutes: Some(admission_minutes),
                    event: summary.clone(),
                };
                publish(
                    &tx,
                    Some(tenant),
                    Some(user),
                    DomainEvent::QueueAdmitted(said),
                )
                .await?;
            }
        }
        let given = let_in.len() as i64;
        let through = let_in.last().map_or(through, |row| row.get(0));
        (through, given, clock_after(given, due, moved, now), false)
    };
    run.admitted = admitted;
    if drawn && admitted == 0 && sold_out == was_sold_out {
        // Nothing changed: no write.
        tx.commit().await?;
        return Ok(run);
    }
    tx.execute(
        "UPDATE event_service.waiting_rooms SET shuffled_at = coalesce(shuffled_at, $2),
            admitted_through = $3, admitted_count = admitted_count + $4, admitted_until = $5,
            sold_out_at = CASE WHEN $6 THEN coalesce(sold_out_at, $2) END, updated_at = $2
         WHERE event_id = $1",
        &[&event, &now, &through, &admitted, &clock, &sold_out],
    )
    .await?;
    tx.commit().await?;
    Ok(run)
}

/// Deals the pre-queue's turns out among its visitors at random (`draw::deal`).
async fn deal_pre_queue(tx: &Tx, event: Uuid) -> Result<()> {
    let rows = tx
        .query(
            "SELECT user_id, ordinal FROM event_service.waiting_room_places
             WHERE event_id = $1 AND early",
            &[&event],
        )
        .await?;
    if rows.is_empty() {
        return Ok(());
    }
    let users: Vec<Uuid> = rows.iter().map(|row| row.get(0)).collect();
    let mut turns: Vec<i64> = rows.iter().map(|row| row.get(1)).collect();
    // The operating system's generator, through the thread's CSPRNG: nobody predicts the draw.
    draw::deal(&mut turns, &mut rand::rng());
    tx.execute(
        "UPDATE event_service.waiting_room_places p SET ordinal = d.ordinal
         FROM unnest($2::uuid[], $3::bigint[]) AS d (user_id, ordinal)
         WHERE p.event_id = $1 AND p.user_id = d.user_id",
        &[&event, &users, &turns],
    )
    .await?;
    Ok(())
}
