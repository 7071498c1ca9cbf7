//! Tenant-scoped transactions. Each request runs in one transaction that first sets
//! `app.tenant_id` and `app.user_id` (transaction-local), so the row level security policies
//! see who is asking. With neither set, the policies see nothing.

use super::DbError;
use deadpool_postgres::Object;
use domain::ids::{TenantId, UserId};
use std::ops::Deref;

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
    client: Option<Object>,
}

impl Tx {
    pub(super) async fn begin(client: Object, scope: Scope) -> Result<Tx, DbError> {
        client.batch_execute("BEGIN").await?;
        let tx = Tx {
            client: Some(client),
        };
        let tenant = scope.tenant.map(|t| t.to_string()).unwrap_or_default();
        let user = scope.user.map(|u| u.to_string()).unwrap_or_default();
        // set_config with is_local = true is SET LOCAL with bind parameters: the values
        // never become SQL text.
        let system = if scope.system { "on" } else { "" };
        tx.execute(
            "SELECT set_config('app.tenant_id', $1, true), set_config('app.user_id', $2, true),
                    set_config('app.system', $3, true)",
            &[&tenant, &user, &system],
        )
        .await?;
        Ok(tx)
    }

    /// Makes the changes permanent.
    pub async fn commit(mut self) -> Result<(), DbError> {
        let client = self.client.take();
        if let Some(client) = client {
            client.batch_execute("COMMIT").await?;
        }
        Ok(())
    }

    /// Discards the changes.
    pub async fn rollback(mut self) -> Result<(), DbError> {
        if let Some(client) = self.client.take() {
            client.batch_execute("ROLLBACK").await?;
        }
        Ok(())
    }
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
                        drop(Object::take(client));
                    }
                });
            }
            Err(_) => drop(Object::take(client)),
        }
    }
}
