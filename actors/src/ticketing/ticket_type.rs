//! The actor of one ticket type. It takes every request waiting in its mailbox (up to a
//! batch), judges them against one locked row and commits them together, then answers each.
//! It stops after a while without work; the registry starts a new one on the next request.

use chrono::Utc;
use domain::clock::Clock;
use domain::ids::TenantId;
use std::sync::Arc;
use std::time::Duration;
use storage::Database;
use storage::events::registrations::{self, SeatOutcome, SeatRequest};
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

/// Runs the actor until it is idle or its mailbox closes.
pub async fn run(
    db: Database,
    clock: Arc<dyn Clock>,
    tenant: TenantId,
    ticket_type: Uuid,
    batch: usize,
    mut mailbox: mpsc::Receiver<Job>,
) {
    let batch = batch.max(1);
    let mut jobs = Vec::with_capacity(batch);
    loop {
        jobs.clear();
        match tokio::time::timeout(IDLE, mailbox.recv_many(&mut jobs, batch)).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let requests: Vec<SeatRequest> = jobs.iter().map(|j| j.request.clone()).collect();
        let now = clock.now();
        let started = std::time::Instant::now();
        let committed = registrations::commit_batch(&db, tenant, ticket_type, &requests, now).await;
        tracing::debug!(
            %ticket_type,
            batch = requests.len(),
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            conflict = committed.as_ref().err().is_some_and(registrations::is_conflict),
            "group commit"
        );
        let outcomes = match committed {
            Ok(outcomes) => outcomes.into_iter().map(Ok).collect(),
            // A concurrent writer (another process, another type of the same event) or a code
            // collision broke the batch: judge each request on its own.
            Err(e) if registrations::is_conflict(&e) => {
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

/// One request on its own: the row lock is taken in the caller's transaction (the baseline
/// without actors, and the fallback after a conflict).
pub async fn single(
    db: &Database,
    tenant: TenantId,
    ticket_type: Uuid,
    request: &SeatRequest,
    now: chrono::DateTime<Utc>,
) -> Result<SeatOutcome, String> {
    for _ in 0..3 {
        match registrations::commit_batch(
            db,
            tenant,
            ticket_type,
            std::slice::from_ref(request),
            now,
        )
        .await
        {
            Ok(mut outcome) => return outcome.pop().ok_or_else(|| "empty outcome".to_string()),
            // The user registered through another path in the meantime.
            Err(e) if registrations::is_conflict(&e) => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(SeatOutcome::AlreadyRegistered)
}
