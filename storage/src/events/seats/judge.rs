//! The seat rules applied to one batch, in memory, against what the transaction read.

use super::reads::{Answered, Offer, People};
use super::{SeatBatch, SeatOutcome};
use domain::events::lifecycle::EventStatus;
use domain::events::seats::{SeatRefusal, Viewer, type_offered, visible};
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// The judgement of one request before seats are handed out.
pub(super) enum Verdict {
    /// Decided.
    Done(SeatOutcome),
    /// Eligible for a seat.
    Seat,
    /// The same key and request as an earlier request of the batch.
    RepeatOf(usize),
}

/// Applies the seat rules to each request of `batch` in arrival order, except the counting of
/// seats.
pub(super) fn judge(
    batch: &SeatBatch<'_>,
    offer: &Offer,
    people: &People,
    answered: &Answered,
) -> Vec<Verdict> {
    let tenant = batch.tenant;
    let mut seated: HashSet<Uuid> = HashSet::new();
    let mut first_use: HashMap<(Uuid, Uuid), (usize, &[u8])> = HashMap::new();
    let mut verdicts = Vec::with_capacity(batch.requests.len());
    for (i, request) in batch.requests.iter().enumerate() {
        let user = request.user.as_uuid();
        let key = (user, request.key);
        if let Some((j, hash)) = first_use.get(&key) {
            verdicts.push(if *hash == request.request_hash.as_slice() {
                Verdict::RepeatOf(*j)
            } else {
                Verdict::Done(SeatOutcome::KeyReused)
            });
            continue;
        }
        if let Some((hash, outcome)) = answered.get(&(tenant.as_uuid(), user, request.key)) {
            verdicts.push(Verdict::Done(if *hash == request.request_hash {
                SeatOutcome::Replayed(Box::new(outcome.clone()))
            } else {
                SeatOutcome::KeyReused
            }));
            continue;
        }
        first_use.insert(key, (i, request.request_hash.as_slice()));
        let viewer = Viewer {
            same_tenant: request.caller_tenant == Some(tenant),
            in_group: people.members.contains(&(offer.event, user)),
        };
        let verdict = if request.event != offer.event
            || !visible(offer.status, offer.deleted, offer.private, viewer)
            || !type_offered(offer.active, viewer)
        {
            Verdict::Done(SeatOutcome::NotFound)
        } else if offer.status != EventStatus::Published {
            Verdict::Done(SeatOutcome::Refused(SeatRefusal::NotPublished))
        } else if !offer.on_sale {
            Verdict::Done(SeatOutcome::Refused(SeatRefusal::NotOnSale))
        } else if offer.waiting_room && !request.admitted {
            Verdict::Done(SeatOutcome::AdmissionRequired)
        } else if people.registered.contains(&(offer.event, user)) || !seated.insert(user) {
            Verdict::Done(SeatOutcome::Refused(SeatRefusal::AlreadyRegistered))
        } else {
            Verdict::Seat
        };
        verdicts.push(verdict);
    }
    verdicts
}
