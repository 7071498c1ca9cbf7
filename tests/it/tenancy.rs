//! Row level security: the database itself keeps tenants apart, even when the SQL forgets its
//! WHERE clause.

use crate::support::TestDb;
use chrono::Utc;
use domain::ids::{TenantId, UserId};
use storage::Scope;
use uuid::Uuid;

async fn insert_event(
    tx: &storage::Tx,
    tenant: TenantId,
    title: &str,
) -> Result<u64, storage::DbError> {
    Ok(tx
        .execute(
            "INSERT INTO event_service.events (id, tenant_id, organizer_id, title, slug, starts_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &Uuid::now_v7(),
                &tenant.as_uuid(),
                &Uuid::now_v7(),
                &title,
                &format!("{title}-{}", Uuid::now_v7()),
                &Utc::now(),
            ],
        )
        .await?)
}

async fn seed(t: &TestDb, tenant: TenantId, titles: &[&str]) {
    let tx =
        t.db.begin(Scope::tenant(tenant, Some(UserId::new())))
            .await
            .unwrap();
    for title in titles {
        insert_event(&tx, tenant, title).await.unwrap();
    }
    tx.commit().await.unwrap();
}

async fn titles_seen(t: &TestDb, scope: Scope) -> Vec<String> {
    let tx = t.db.begin(scope).await.unwrap();
    // Deliberately no WHERE clause: only the policy filters.
    let rows = tx
        .query("SELECT title FROM event_service.events ORDER BY title", &[])
        .await
        .unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

#[tokio::test]
async fn select_without_where_sees_only_current_tenant() {
    let t = TestDb::new().await;
    let (a, b) = (TenantId::new(), TenantId::new());
    seed(&t, a, &["a1", "a2"]).await;
    seed(&t, b, &["b1"]).await;
    assert_eq!(
        titles_seen(&t, Scope::tenant(a, None)).await,
        vec!["a1", "a2"]
    );
    assert_eq!(titles_seen(&t, Scope::tenant(b, None)).await, vec!["b1"]);
}

#[tokio::test]
async fn no_tenant_set_sees_nothing() {
    let t = TestDb::new().await;
    seed(&t, TenantId::new(), &["x"]).await;
    assert!(titles_seen(&t, Scope::anonymous()).await.is_empty());
    assert!(titles_seen(&t, Scope::user(UserId::new())).await.is_empty());
    // A plain connection outside any request transaction sees nothing either.
    let client = t.db.client().await.unwrap();
    let n: i64 = client
        .query_one("SELECT count(*) FROM event_service.events", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 0);
}

#[tokio::test]
async fn insert_with_another_tenants_id_is_refused_by_the_database() {
    let t = TestDb::new().await;
    let (a, b) = (TenantId::new(), TenantId::new());
    let tx = t.db.begin(Scope::tenant(a, None)).await.unwrap();
    let err = insert_event(&tx, b, "smuggled").await.unwrap_err();
    assert_eq!(
        err.sqlstate(),
        Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
        "{err}"
    );
    drop(tx);
    assert!(titles_seen(&t, Scope::tenant(b, None)).await.is_empty());
}

#[tokio::test]
async fn update_and_delete_without_where_touch_only_current_tenant() {
    let t = TestDb::new().await;
    let (a, b) = (TenantId::new(), TenantId::new());
    seed(&t, a, &["a1"]).await;
    seed(&t, b, &["b1", "b2"]).await;
    let tx = t.db.begin(Scope::tenant(a, None)).await.unwrap();
    assert_eq!(
        tx.execute("UPDATE event_service.events SET title = 'hijacked'", &[])
            .await
            .unwrap(),
        1
    );
    // Moving a row into another tenant is refused as well.
    let moved = tx
        .execute(
            "UPDATE event_service.events SET tenant_id = $1",
            &[&b.as_uuid()],
        )
        .await;
    assert!(moved.is_err());
    drop(tx);
    let tx = t.db.begin(Scope::tenant(a, None)).await.unwrap();
    assert_eq!(
        tx.execute("DELETE FROM event_service.events", &[])
            .await
            .unwrap(),
        1
    );
    tx.commit().await.unwrap();
    assert_eq!(
        titles_seen(&t, Scope::tenant(b, None)).await,
        vec!["b1", "b2"]
    );
}

#[tokio::test]
async fn dropped_transaction_rolls_back() {
    let t = TestDb::new().await;
    let a = TenantId::new();
    {
        let tx = t.db.begin(Scope::tenant(a, None)).await.unwrap();
        insert_event(&tx, a, "never").await.unwrap();
    }
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert!(titles_seen(&t, Scope::tenant(a, None)).await.is_empty());
}

#[tokio::test]
async fn application_role_owns_nothing_and_every_tenant_table_forces_rls() {
    let t = TestDb::new().await;
    let owner = t.owner().await;
    let app = t.config.database.app_role_name();
    let role = owner
        .query_one(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = $1",
            &[&app],
        )
        .await
        .unwrap();
    assert!(!role.get::<_, bool>(0) && !role.get::<_, bool>(1));
    let owned: i64 = owner
        .query_one("SELECT count(*) FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner WHERE r.rolname = $1", &[&app])
        .await
        .unwrap()
        .get(0);
    assert_eq!(owned, 0, "{app} must own no relation");
    // Every table with a tenant column, except the outbox and its days' tables
    // (infrastructure read by the relay), must have row level security enabled and forced.
    let unprotected = owner
        .query(
            "SELECT c.table_schema || '.' || c.table_name
             FROM information_schema.columns c
             JOIN pg_class k ON k.relname = c.table_name
             JOIN pg_namespace n ON n.oid = k.relnamespace AND n.nspname = c.table_schema
             WHERE c.column_name = 'tenant_id'
               AND c.table_schema LIKE '%\\_service'
               AND c.table_name <> 'outbox'
               AND NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = k.oid
                                  AND i.inhparent = (c.table_schema || '.outbox')::regclass)
               AND NOT (k.relrowsecurity AND k.relforcerowsecurity)",
            &[],
        )
        .await
        .unwrap();
    let names: Vec<String> = unprotected.iter().map(|r| r.get(0)).collect();
    assert!(
        names.is_empty(),
        "tenant tables without forced RLS: {names:?}"
    );
    let protected: i64 = owner
        .query_one(
            "SELECT count(*) FROM pg_class WHERE relrowsecurity AND relforcerowsecurity AND relname = 'events'
               AND relnamespace = 'event_service'::regnamespace",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(protected, 1);
}

#[tokio::test]
async fn migrations_are_idempotent() {
    let t = TestDb::new().await;
    storage::db::migrate(&t.config.database).await.unwrap();
    let owner = t.owner().await;
    let applied: i64 = owner
        .query_one(
            "SELECT count(*) FROM event_service.refinery_schema_history",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    // V1 (the schema itself), one row per file, the outbox by day and its half pages (two
    // templates of every service's), each once after two runs.
    let files = std::fs::read_dir(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/migrations/event_service"
    ))
    .unwrap()
    .filter(|f| {
        f.as_ref()
            .is_ok_and(|f| f.file_name().to_string_lossy().ends_with(".sql"))
    })
    .count();
    assert_eq!(applied, files as i64 + 3);
}
