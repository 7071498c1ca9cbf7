//! The actor of one ticket type. It takes every request waiting in its mailbox (up to a
//! batch), judges them against one locked row and commits them together, then answers each.
//! It stops after a while without work; the registry starts a new one on the next request.

use chrono::Utc;
use domain::clock::Clock;
use domain::events::seats::SeatRefusal;
use domain::ids::TenantId;
use std::sync::Arc;
use std::time::Duration;
use storage::Database;
use storage::events::seats::{self, SeatOutcome, SeatRequest};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

/// An actor without requests for this long stops.
pub const IDLE: Duration = Duration::from_secs(300);

/// A request and where to send its answer.
pub struct Job {
    /// The request.
    pub request: SeatRequest,
    /// The answer channel.
    pub reply: oneshot::Sender<Result<SeatOutcome, String>>,
}

/// Runs the actor until it is idle or its mailbox closes. It first learns which tenant owns
/// the ticket type; for an unknown ticket type it answers "not found" to what it holds and
/// stops.
pub async fn run(
    db: Database,
    clock: Arc<dyn Clock>,
    ticket_type: Uuid,
    batch: usize,
    mut mailbox: mpsc::Receiver<Job>,
) {
    let batch = batch.max(1);
    let mut jobs = Vec::with_capacity(batch);
    let tenant = match seats::owner(&db, ticket_type).await {
        Ok(Some(tenant)) => tenant,
        Ok(None) => return answer_all(mailbox, Ok(SeatOutcome::NotFound)).await,
        Err(e) => {
            tracing::warn!(%ticket_type, error = %e, "ticket type lookup failed");
            return answer_all(mailbox, Err(e.to_string())).await;
        }
    };
    loop {
        jobs.clear();
        match tokio::time::timeout(IDLE, mailbox.recv_many(&mut jobs, batch)).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let requests: Vec<SeatRequest> = jobs.iter().map(|j| j.request.clone()).collect();
        let now = clock.now();
        let started = std::time::Instant::now();
        let committed = seats::commit_batch(&db, tenant, ticket_type, &requests, now).await;
        tracing::debug!(
            %ticket_type,
            batch = requests.len(),
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            conflict = committed.as_ref().err().is_some_and(seats::is_conflict),
            "group commit"
        );
        let outcomes = match committed {
            Ok(outcomes) => outcomes.into_iter().map(Ok).collect(),
            // A concurrent writer (another process, another type of the same event) or a code
            // collision broke the batch: judge each request on its own.
            Err(e) if seats::is_conflict(&e) => {
                let mut one_by_one = Vec::with_capacity(requests.len());
                for request in &requests {
                    one_by_one.push(single(&db, tenant, ticket_type, request, now).await);
                }
                one_by_one
            }
            Err(e) => {
                tracing::error!(%ticket_type, error = %e, "group commit failed");
                vec![Err(e.to_string()); requests.len()]
            }
        };
        for (job, outcome) in jobs.drain(..).zip(outcomes) {
            let _ = job.reply.send(outcome);
        }
    }
}

/// Gives every waiting request the same answer and closes the mailbox.
async fn answer_all(mut mailbox: mpsc::Receiver<Job>, answer: Result<SeatOutcome, String>) {
    mailbox.close();
    while let Some(job) = mailbox.recv().await {
        let _ = job.reply.send(answer.clone());
    }
}

/// One request on its own, without an actor: the baseline that takes the row lock per
/// request (`ticketing.mode = "direct"`).
pub async fn direct(
    db: &Database,
    ticket_type: Uuid,
    request: &SeatRequest,
    now: chrono::DateTime<Utc>,
) -> Result<SeatOutcome, String> {
    match seats::owner(db, ticket_type).await {
        Ok(Some(tenant)) => single(db, tenant, ticket_type, request, now).await,
        Ok(None) => Ok(SeatOutcome::NotFound),
        Err(e) => Err(e.to_string()),
    }
}

/// One request on its own (the baseline, and the fallback after a conflict).
pub async fn single(
    db: &Database,
    tenant: TenantId,
    ticket_type: Uuid,
    request: &SeatRequest,
    now: chrono::DateTime<Utc>,
) -> Result<SeatOutcome, String> {
    for _ in 0..3 {
        match seats::commit_batch(db, tenant, ticket_type, std::slice::from_ref(request), now).await
        {
            Ok(mut outcome) => return outcome.pop().ok_or_else(|| "empty outcome".to_string()),
            // The user registered, or used the key, through another path in the meantime: the
            // next attempt sees it.
            Err(e) if seats::is_conflict(&e) => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(SeatOutcome::Refused(SeatRefusal::AlreadyRegistered))
}
