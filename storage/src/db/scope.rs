//! Tenant-scoped transactions. Each request runs in one transaction that first sets
//! `app.tenant_id` and `app.user_id` (transaction-local), so the row level security policies
//! see who is asking. With neither set, the policies see nothing.

use super::Connection;
use super::{DbError, Schema};
use domain::ids::{TenantId, UserId};
use std::ops::Deref;
use std::sync::atomic::{AtomicU8, Ordering};

/// Who a transaction acts for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    /// The organization whose rows are visible.
    pub tenant: Option<TenantId>,
    /// The user on whose behalf the work is done.
    pub user: Option<UserId>,
    /// A background job of a service that works across tenants (never a request).
    pub system: bool,
}

impl Scope {
    /// A member of an organization acting in it.
    pub fn tenant(tenant: TenantId, user: Option<UserId>) -> Scope {
        Scope {
            tenant: Some(tenant),
            user,
            system: false,
        }
    }

    /// A background job (expiry timers, auto-completion, archiving) that must see every
    /// tenant. Only storage code that serves such jobs uses it.
    pub fn system() -> Scope {
        Scope {
            tenant: None,
            user: None,
            system: true,
        }
    }

    /// A signed-in user outside any organization.
    pub fn user(user: UserId) -> Scope {
        Scope {
            tenant: None,
            user: Some(user),
            system: false,
        }
    }

    /// Nobody: tenant tables show no rows at all.
    pub fn anonymous() -> Scope {
        Scope::default()
    }
}

/// An open transaction. Commit it explicitly; dropping it rolls back.
pub struct Tx {
    client: Option<Connection>,
    /// Outboxes written in this transaction (a bit per schema): their relays in this process
    /// are woken once it commits.
    outboxes: AtomicU8,
}

impl Tx {
    pub(super) async fn begin(
        client: Connection,
        scope: Scope,
        extra: &str,
    ) -> Result<Tx, DbError> {
        let tx = Tx::unopened(client);
        tx.open(scope, extra).await?;
        Ok(tx)
    }

    /// A transaction whose BEGIN has not been sent: `open` must be the first thing sent on it.
    pub(super) fn unopened(client: Connection) -> Tx {
        Tx {
            client: Some(client),
            outboxes: AtomicU8::new(0),
        }
    }

    /// Sends BEGIN and the scope's settings, in one simple query.
    pub(super) async fn open(&self, scope: Scope, extra: &str) -> Result<(), DbError> {
        // The settings are UUIDs we format ourselves and constants, never text from a client,
        // so they can go into the statement itself.
        let tenant = scope
            .tenant
            .map(|t| t.as_uuid().to_string())
            .unwrap_or_default();
        let user = scope
            .user
            .map(|u| u.as_uuid().to_string())
            .unwrap_or_default();
        let system = if scope.system { "on" } else { "" };
        let sql = format!(
            "BEGIN; SELECT set_config('app.tenant_id', '{tenant}', true), set_config('app.user_id', '{user}', true), \
             set_config('app.system', '{system}', true); {extra}"
        );
        self.batch_execute(&sql).await?;
        Ok(())
    }

    /// Makes the changes permanent.
    pub async fn commit(mut self) -> Result<(), DbError> {
        if let Some(client) = self.client.take() {
            client
                .batch_execute("COMMIT")
                .await
                .map_err(commit_failed)?;
        }
        self.committed();
        Ok(())
    }

    /// Sends the statements of `last` and, behind them without waiting for their answers,
    /// the COMMIT: a transaction's last writes and its commit in one round trip. Every
    /// statement of `last` must go out when it is first polled, so each is one this
    /// connection has prepared already (a `Statement`, or a `prepare_cached` hit), never text
    /// to parse first: the COMMIT would overtake it, and the statement would run after the
    /// transaction, on its own. When a statement of `last` fails, the transaction is aborted
    /// and the server answers the COMMIT with a rollback: nothing was written, and that error
    /// is returned.
    pub async fn commit_with<T, E: From<DbError>>(
        mut self,
        last: impl AsyncFnOnce(&Tx) -> Result<T, E>,
    ) -> Result<T, E> {
        let commit = async {
            match &self.client {
                Some(client) => client.batch_execute("COMMIT").await.map_err(commit_failed),
                None => Ok(()),
            }
        };
        // Biased: polled in the order written, so `last` goes out first.
        let (done, committed) = tokio::join!(biased; last(&self), commit);
        // Whatever happened, the transaction has ended: the connection goes back as it is.
        drop(self.client.take());
        let done = done?;
        committed?;
        self.committed();
        Ok(done)
    }

    /// Rings the relays of the outboxes this committed transaction wrote.
    fn committed(&self) {
        let written = self.outboxes.load(Ordering::Relaxed);
        for schema in Schema::ALL {
            if written & schema_bit(schema) != 0 {
                crate::outbox::ring(schema);
            }
        }
    }

    /// Wakes this process's relays of `schema` once the transaction commits.
    pub(crate) fn ring_on_commit(&self, schema: Schema) {
        self.outboxes
            .fetch_or(schema_bit(schema), Ordering::Relaxed);
    }

    /// Discards the changes.
    pub async fn rollback(mut self) -> Result<(), DbError> {
        if let Some(client) = self.client.take() {
            client.batch_execute("ROLLBACK").await?;
        }
        Ok(())
    }
}

/// The server answered the COMMIT with an error (a deferred constraint, a serialization
/// failure): it rolled back. No answer at all: it may have committed.
fn commit_failed(e: tokio_postgres::Error) -> DbError {
    if e.as_db_error().is_some() {
        DbError::Query(e)
    } else {
        DbError::CommitUnknown(e)
    }
}

fn schema_bit(schema: Schema) -> u8 {
    1 << Schema::ALL.iter().position(|s| *s == schema).unwrap_or(0)
}

impl Deref for Tx {
    type Target = deadpool_postgres::ClientWrapper;

    fn deref(&self) -> &Self::Target {
        // The client is only taken by commit/rollback, which consume the Tx.
        match &self.client {
            Some(client) => client,
            None => unreachable!("a Tx is consumed when it ends"),
        }
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        let Some(client) = self.client.take() else {
            return;
        };
        // An early return (an error, a refused rule) left the transaction open. Roll it back
        // before the connection goes back to the pool; without a runtime, detach the
        // connection from the pool so the server rolls back as it closes.
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    if client.batch_execute("ROLLBACK").await.is_err() {
                        drop(client.detach());
                    }
                });
            }
            Err(_) => drop(client.detach()),
        }
    }
}
