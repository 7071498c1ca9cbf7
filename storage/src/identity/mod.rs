//! Storage of the identity service (schema user_service). Each operation runs in one
//! transaction, applies the rules of `domain::identity` and writes its events to the outbox.

pub mod admins;
pub mod groups;
pub mod invites;
pub mod mail_consumer;
pub mod mail_tokens;
pub mod members;
pub mod organizations;
pub mod requests;
pub mod revocations;
pub mod sessions;
pub mod users;

use crate::db::{DbError, Schema, Tx};
use domain::contract::DomainEvent;
use domain::envelope::Envelope;
use domain::ids::{TenantId, UserId};

/// Writes an identity event into the outbox of `tx`.
pub(crate) async fn publish(
    tx: &Tx,
    tenant: Option<TenantId>,
    actor: Option<UserId>,
    event: DomainEvent,
) -> Result<(), DbError> {
    crate::outbox::enqueue(
        tx,
        Schema::UserService,
        &Envelope::of(&event, tenant, actor),
    )
    .await
}

/// Takes the transaction-long lock named `key`: checks that read before they write (the pending
/// request of a user, the holders of a slug, the mails to an address) are serialized by it.
pub(crate) async fn lock(tx: &Tx, key: &str) -> Result<(), DbError> {
    tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&key])
        .await?;
    Ok(())
}

/// A random code of `len` characters from an alphabet without look-alikes (no 0/O, 1/I/L).
pub fn random_code(len: usize) -> String {
    const ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZabcdefghjkmnpqrstuvwxyz";
    let mut bytes = vec![0u8; len];
    rand::fill(&mut bytes[..]);
    bytes
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}
