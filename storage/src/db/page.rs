//! One page of a list query: the rows of the page and the total count, with the sort taken
//! only from a whitelist.

use super::DbError;
use domain::paging::{Page, PageRequest};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row};

/// Runs `SELECT {columns} {from_where}` for one page, ordered by the request's whitelisted
/// sort with `tiebreak` (a unique column) as the last key.
pub async fn fetch<T>(
    client: &Client,
    columns: &str,
    from_where: &str,
    params: &[&(dyn ToSql + Sync)],
    request: &PageRequest,
    tiebreak: &str,
    map: impl Fn(&Row) -> T,
) -> Result<Page<T>, DbError> {
    let total: i64 = client
        .query_one(&format!("SELECT count(*) {from_where}"), params)
        .await?
        .get(0);
    let sql = format!(
        "SELECT {columns} {from_where} {} LIMIT {} OFFSET {}",
        request.sort.order_by(tiebreak),
        request.limit(),
        request.offset()
    );
    let rows = client.query(&sql, params).await?;
    Ok(Page::new(
        rows.iter().map(map).collect(),
        request,
        total.max(0) as u64,
    ))
}
