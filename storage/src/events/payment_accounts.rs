//! An organization's own payment provider accounts (its YooKassa shop, its Stripe account):
//! the keys arrive sealed by `payments::credentials` and leave sealed; nothing here reads them.

use crate::db::{Database, Scope};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::error::Refusal;
use domain::events::checkout::ProviderKind;
use domain::ids::{TenantId, UserId};
use tokio_postgres::Row;

/// An account as stored.
#[derive(Clone, Debug)]
pub struct StoredAccount {
    /// The organization.
    pub tenant_id: TenantId,
    /// YooKassa or Stripe.
    pub provider: ProviderKind,
    /// YooKassa's shop id ("" for Stripe).
    pub shop_id: String,
    /// The secret key, sealed.
    pub secret_sealed: Vec<u8>,
    /// The webhook signing secret (Stripe), sealed.
    pub webhook_secret_sealed: Option<Vec<u8>>,
    /// Send 54-FZ receipts with its YooKassa payments.
    pub receipts: bool,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str =
    "tenant_id, provider, shop_id, secret_sealed, webhook_secret_sealed, receipts, updated_at";

fn from_row(row: &Row) -> StoredAccount {
    StoredAccount {
        tenant_id: TenantId::from(row.get::<_, uuid::Uuid>(0)),
        provider: ProviderKind::parse(row.get(1)).unwrap_or(ProviderKind::YooKassa),
        shop_id: row.get(2),
        secret_sealed: row.get(3),
        webhook_secret_sealed: row.get(4),
        receipts: row.get(5),
        updated_at: row.get(6),
    }
}

/// Stores (or replaces) `account`, as `user` of its organization.
pub async fn put(db: &Database, user: UserId, account: &StoredAccount) -> Result<StoredAccount> {
    let tx = db
        .begin(Scope::tenant(account.tenant_id, Some(user)))
        .await?;
    let row = tx
        .query_one(
            &format!(
                "INSERT INTO event_service.payment_accounts (tenant_id, provider, shop_id, secret_sealed,
                    webhook_secret_sealed, receipts, updated_by, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                 ON CONFLICT (tenant_id, provider) DO UPDATE SET shop_id = EXCLUDED.shop_id,
                    secret_sealed = EXCLUDED.secret_sealed, webhook_secret_sealed = EXCLUDED.webhook_secret_sealed,
                    receipts = EXCLUDED.receipts, updated_by = EXCLUDED.updated_by, updated_at = EXCLUDED.updated_at
                 RETURNING {COLUMNS}"
            ),
            &[
                &account.tenant_id.as_uuid(),
                &account.provider.as_str(),
                &account.shop_id,
                &account.secret_sealed,
                &account.webhook_secret_sealed,
                &account.receipts,
                &user.as_uuid(),
                &account.updated_at,
            ],
        )
        .await?;
    tx.commit().await?;
    Ok(from_row(&row))
}

/// The accounts of `tenant`.
pub async fn of_tenant(db: &Database, tenant: TenantId) -> Result<Vec<StoredAccount>> {
    let tx = db.begin(Scope::tenant(tenant, None)).await?;
    let rows = tx
        .query(
            &format!(
                "SELECT {COLUMNS} FROM event_service.payment_accounts WHERE tenant_id = $1 ORDER BY provider"
            ),
            &[&tenant.as_uuid()],
        )
        .await?;
    tx.commit().await?;
    Ok(rows.iter().map(from_row).collect())
}

/// Removes `tenant`'s account at `provider`; one that does not exist is not found.
pub async fn delete(
    db: &Database,
    tenant: TenantId,
    user: UserId,
    provider: ProviderKind,
) -> Result<()> {
    let tx = db.begin(Scope::tenant(tenant, Some(user))).await?;
    let gone = tx
        .execute(
            "DELETE FROM event_service.payment_accounts WHERE tenant_id = $1 AND provider = $2",
            &[&tenant.as_uuid(), &provider.as_str()],
        )
        .await?;
    if gone == 0 {
        return Err(Refusal::not_found().into());
    }
    tx.commit().await?;
    Ok(())
}

/// The organization a registration belongs to, if it exists.
pub async fn tenant_of_registration(
    db: &Database,
    registration: uuid::Uuid,
) -> Result<Option<TenantId>> {
    let tx = db.begin(Scope::system()).await?;
    let row = tx
        .query_opt(
            "SELECT tenant_id FROM event_service.registrations WHERE id = $1",
            &[&registration],
        )
        .await?;
    tx.commit().await?;
    Ok(row.map(|r| TenantId::from(r.get::<_, uuid::Uuid>(0))))
}
