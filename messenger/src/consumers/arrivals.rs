//! The on-sale path of the notification consumer. A sale publishes registration.created (and,
//! for paid tickets, registration.confirmed) thousands of times a second; applied one by one,
//! each costs a savepoint and six statements, and the consumer falls minutes behind the sale.
//! Here a run of them is applied with one statement per table for the whole run, doing what
//! `Notifier::created` and `Notifier::confirmed` do: the projection follows, a registration
//! awaiting payment is told its seat is held, one holding its seat gets its ticket once.
//! A run holding any other kind, or naming one registration twice (whose second event must
//! see what the first wrote), is left to them.

use super::{Notifier, awaiting, participant_of};
use chrono::Utc;
use domain::contract::DomainEvent;
use domain::contract::events::Registration;
use domain::envelope::Envelope;
use domain::notifications::Kind;
use std::collections::HashSet;
use storage::Tx;
use storage::broker::HandlerError;
use storage::inbox::Received;
use storage::notifications::projection::{self, EventInfo, Participant};
use storage::notifications::queue::{self, NewMessage};
use uuid::Uuid;

/// A registration event of the run.
struct Arrival<'a> {
    envelope: &'a Envelope,
    registration: &'a Registration,
    /// registration.created (else registration.confirmed).
    created: bool,
}

/// What an arrival asks of the consumer.
enum Wants {
    /// Nothing: its ticket went out already (a confirmation overtook the creation).
    Nothing,
    /// The "seat held, pay to confirm" message of this kind.
    SeatHeld(Kind),
    /// Its ticket, unless another event sent it.
    Ticket,
}

/// The arrivals of `events`, or `None` when the run is not made only of registrations
/// arriving, each named once.
fn arrivals<'a>(events: &[&'a Received<'_>]) -> Option<Vec<Arrival<'a>>> {
    let mut seen = HashSet::with_capacity(events.len());
    let mut all = Vec::with_capacity(events.len());
    for received in events {
        let (registration, created) = match &received.event {
            DomainEvent::RegistrationCreated(r) => (r, true),
            DomainEvent::RegistrationConfirmed(c) => (&c.registration, false),
            _ => return None,
        };
        if !seen.insert(registration.registration_id) {
            return None;
        }
        all.push(Arrival {
            envelope: received.envelope,
            registration,
            created,
        });
    }
    Some(all)
}

impl Notifier {
    /// Applies a run made only of registrations arriving (see the module); `None` for any
    /// other run.
    pub(super) async fn apply_arrivals(
        &self,
        tx: &Tx,
        events: &[&Received<'_>],
    ) -> Option<Result<Vec<(Vec<NewMessage>, bool)>, HandlerError>> {
        let arrivals = arrivals(events)?;
        Some(self.arrive(tx, &arrivals).await)
    }

    async fn arrive(
        &self,
        tx: &Tx,
        arrivals: &[Arrival<'_>],
    ) -> Result<Vec<(Vec<NewMessage>, bool)>, HandlerError> {
        let now = Utc::now();
        let (participants, events): (Vec<Participant>, Vec<EventInfo>) = arrivals
            .iter()
            .map(|a| participant_of(a.envelope, a.registration, true))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .unzip();
        // Read before the participants are written, as `created` reads it.
        let created: Vec<Uuid> = arrivals
            .iter()
            .filter(|a| a.created)
            .map(|a| a.registration.registration_id)
            .collect();
        let states = projection::ticket_states(tx, &created).await?;
        projection::upsert_events(tx, &events, now).await?;

        let wants: Vec<Wants> = arrivals
            .iter()
            .map(|a| {
                let id = a.registration.registration_id;
                if !a.created {
                    Wants::Ticket
                } else if states.get(&id).is_some_and(|s| s.sent) {
                    Wants::Nothing
                } else {
                    awaiting(a.registration).map_or(Wants::Ticket, Wants::SeatHeld)
                }
            })
            .collect();
        // A sale's participants are new: each is recorded with its ticket claimed in one
        // statement. Those recorded already (or a moment ago by another delivery) are
        // upserted and claimed as any other event would.
        let fresh: Vec<(&Participant, bool)> = participants
            .iter()
            .zip(&wants)
            .filter(|(p, _)| !states.contains_key(&p.registration_id))
            .map(|(p, w)| (p, matches!(w, Wants::Ticket)))
            .collect();
        let inserted = projection::insert_new_participants(tx, &fresh, now).await?;
        let known: Vec<Participant> = participants
            .iter()
            .filter(|p| !inserted.recorded.contains(&p.registration_id))
            .cloned()
            .collect();
        projection::upsert_participants(tx, &known, now).await?;
        let tickets: Vec<Uuid> = arrivals
            .iter()
            .zip(&wants)
            .filter(|(_, w)| matches!(w, Wants::Ticket))
            .map(|(a, _)| a.registration.registration_id)
            .filter(|id| !inserted.recorded.contains(id))
            .collect();
        let mut claimed = projection::claim_tickets(tx, &tickets, now).await?;
        claimed.extend(inserted.claimed);

        // Who is written to, and with which code: a held seat's message carries none.
        let mut addressed = Vec::with_capacity(arrivals.len());
        let mut people = Vec::with_capacity(arrivals.len());
        for (i, (wants, p)) in wants.iter().zip(&participants).enumerate() {
            let code = match wants {
                Wants::SeatHeld(_) => "",
                Wants::Ticket if claimed.contains(&p.registration_id) => {
                    p.confirmation_code.as_str()
                }
                _ => continue,
            };
            addressed.push(i);
            people.push((p.user_id, p.first_name.as_str(), code));
        }
        let recipients = projection::recipients(tx, &people).await?;

        let mut messages: Vec<Vec<NewMessage>> = vec![Vec::new(); arrivals.len()];
        for (i, to) in addressed.into_iter().zip(&recipients) {
            let (a, p) = (&arrivals[i], &participants[i]);
            let facts = events[i].facts(&self.public_url);
            let message = match wants[i] {
                Wants::SeatHeld(kind) => {
                    self.seat_held(kind, to, &facts, a.envelope, a.registration)
                }
                _ => self.ticket_message(p, to, &facts, a.envelope),
            };
            messages[i].push(message);
        }
        let all: Vec<NewMessage> = messages.iter().flatten().cloned().collect();
        let waiting = !queue::enqueue(tx, &all, now).await?.queued.is_empty();
        Ok(messages.into_iter().map(|m| (m, waiting)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::contract::{Kind as EventKind, samples};

    fn received(event: DomainEvent) -> (Envelope, DomainEvent) {
        (Envelope::of(&event, None, None), event)
    }

    fn with_id(kind: EventKind, id: Uuid) -> DomainEvent {
        match samples::of(kind) {
            DomainEvent::RegistrationCreated(mut r) => {
                r.registration_id = id;
                DomainEvent::RegistrationCreated(r)
            }
            DomainEvent::RegistrationConfirmed(mut c) => {
                c.registration.registration_id = id;
                DomainEvent::RegistrationConfirmed(c)
            }
            other => other,
        }
    }

    fn run_of(events: Vec<DomainEvent>) -> Option<Vec<bool>> {
        let pairs: Vec<(Envelope, DomainEvent)> = events.into_iter().map(received).collect();
        let received: Vec<Received<'_>> = pairs
            .iter()
            .map(|(envelope, event)| Received {
                envelope,
                event: event.clone(),
            })
            .collect();
        let refs: Vec<&Received<'_>> = received.iter().collect();
        arrivals(&refs).map(|all| all.iter().map(|a| a.created).collect())
    }

    #[test]
    fn only_runs_of_registrations_arriving_once_each_are_taken_at_once() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        assert_eq!(
            run_of(vec![
                with_id(EventKind::RegistrationCreated, a),
                with_id(EventKind::RegistrationConfirmed, b),
            ]),
            Some(vec![true, false])
        );
        // The confirmation of a registration created earlier in the run must see its row.
        assert_eq!(
            run_of(vec![
                with_id(EventKind::RegistrationCreated, a),
                with_id(EventKind::RegistrationConfirmed, a),
            ]),
            None
        );
        assert_eq!(
            run_of(vec![
                with_id(EventKind::RegistrationCreated, a),
                samples::of(EventKind::RegistrationCancelled),
            ]),
            None
        );
    }
}
