//! The ClickHouse dialect over its HTTP interface (18.16 and later). Values in the SQL are
//! ids and times bilet formats itself, never client text; properties travel as JSON rows.

use super::Query;
use crate::export::ExportRow;
use crate::figures::{Counts, DayFigures, SourceFigures, TicketTypeFigures};
use crate::record::Record;
use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

/// Why a ClickHouse call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClickHouseError {
    /// Not reachable.
    #[error("clickhouse request: {0}")]
    Request(#[from] reqwest::Error),
    /// An error answer.
    #[error("clickhouse answered {status}: {body}")]
    Status {
        /// HTTP status.
        status: u16,
        /// The start of the answer.
        body: String,
    },
    /// An answer of an unexpected shape.
    #[error("clickhouse answer: {0}")]
    Shape(String),
}

const COUNTS: &str = "countIf(event_type = 'page.view'),
    uniqExactIf(cityHash64(viewer), event_type = 'page.view'),
    countIf(event_type = 'registration.started'),
    countIf(event_type = 'registration.completed'),
    countIf((event_type = 'registration.completed' AND status = 'CONFIRMED') OR event_type = 'payment.completed'),
    countIf(event_type = 'checkin.completed')";

fn n(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.parse().unwrap_or(0),
        Value::Number(n) => n.as_u64().unwrap_or(0),
        _ => 0,
    }
}

fn s(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn counts_at(row: &[Value], at: usize) -> Counts {
    let get = |i: usize| row.get(at + i).map(n).unwrap_or(0);
    Counts {
        views: get(0),
        unique_views: get(1),
        started: get(2),
        registrations: get(3),
        confirmed: get(4),
        checked_in: get(5),
    }
}

fn time(t: DateTime<Utc>) -> String {
    format!("toDateTime('{}', 'UTC')", t.format("%Y-%m-%d %H:%M:%S"))
}

/// Whether the period's ends (if any) fall on midnight UTC, where the daily counts give
/// exactly what the records give.
fn whole_days(q: &Query) -> bool {
    [q.period.from, q.period.to]
        .iter()
        .flatten()
        .all(|t| t.timestamp() % 86_400 == 0)
}

fn event_filter(q: &Query) -> String {
    match q.event {
        Some(e) => format!("AND event_id = '{e}'"),
        None => String::new(),
    }
}

/// The ClickHouse store.
#[derive(Clone)]
pub struct ClickHouseStore {
    url: String,
    database: String,
    client: reqwest::Client,
}

impl ClickHouseStore {
    /// A store at `url` (the HTTP interface) using `database`.
    pub fn new(url: &str, database: &str) -> ClickHouseStore {
        ClickHouseStore {
            url: url.trim_end_matches('/').to_string(),
            database: database.to_string(),
            client: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(30))
                .build()
                .unwrap_or_default(),
        }
    }

    async fn run(&self, sql: String, body: Option<String>) -> Result<String, ClickHouseError> {
        let request = match body {
            Some(body) => self
                .client
                .post(&self.url)
                .query(&[("query", sql)])
                .body(body),
            None => self.client.post(&self.url).body(sql),
        };
        let response = request.send().await?;
        let status = response.status().as_u16();
        let text = response.text().await?;
        if status != 200 {
            return Err(ClickHouseError::Status {
                status,
                body: text.chars().take(300).collect(),
            });
        }
        Ok(text)
    }

    /// Creates the database and table (idempotent).
    pub async fn migrate(&self) -> Result<(), ClickHouseError> {
        self.run(
            format!("CREATE DATABASE IF NOT EXISTS {}", self.database),
            None,
        )
        .await?;
        let ddl = include_str!("../../../migrations/clickhouse/V1__analytics_events.sql")
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .collect::<Vec<_>>()
            .join("\n")
            .replace("{db}", &self.database);
        // The HTTP interface takes one statement per request.
        for statement in ddl.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            self.run(statement.to_string(), None).await?;
        }
        Ok(())
    }

    /// Whether the record is stored already (looked up through the table's sort key).
    pub async fn contains(&self, r: &Record) -> Result<bool, ClickHouseError> {
        let rows = self
            .data(format!(
                "SELECT count() FROM {}.analytics_events
                 WHERE tenant_id = '{}' AND event_id = '{}' AND event_type = '{}' AND id = '{}'
                 FORMAT JSONCompact",
                self.database,
                r.tenant_id.as_uuid(),
                r.event_id.map(|e| e.to_string()).unwrap_or_default(),
                r.event_type.as_str(),
                r.id
            ))
            .await?;
        Ok(rows.first().and_then(|r| r.first()).map(n).unwrap_or(0) > 0)
    }

    /// Writes records as JSON rows.
    pub async fn insert(&self, records: &[Record]) -> Result<(), ClickHouseError> {
        let mut body = String::with_capacity(records.len() * 300);
        for r in records {
            let row = serde_json::json!({
                "id": r.id.to_string(),
                "tenant_id": r.tenant_id.as_uuid().to_string(),
                "event_type": r.event_type.as_str(),
                "event_id": r.event_id.map(|e| e.to_string()).unwrap_or_default(),
                "user_id": r.user_id.map(|u| u.to_string()).unwrap_or_default(),
                "properties": r.properties.to_string(),
                "created_at": r.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                "day": r.day().to_string(),
                "ticket_type": r.ticket_type(),
                "source": r.source(),
                "status": r.status(),
                "viewer": r.viewer(),
            });
            body.push_str(&row.to_string());
            body.push('\n');
        }
        self.run(
            format!(
                "INSERT INTO {}.analytics_events FORMAT JSONEachRow",
                self.database
            ),
            Some(body),
        )
        .await?;
        Ok(())
    }

    /// Grouped counts: from the daily table when the period's ends fall on midnight (UTC),
    /// where it gives exactly what the records would; from the records otherwise.
    async fn grouped(
        &self,
        q: &Query,
        key: &str,
        counts: &[&str],
        types: &str,
    ) -> Result<Vec<Vec<Value>>, ClickHouseError> {
        if !whole_days(q) {
            let select = std::iter::once(key.to_string())
                .chain(counts.iter().map(|c| format!("countIf({c})")))
                .collect::<Vec<_>>()
                .join(", ");
            return self
                .rows(
                    q,
                    &select,
                    &format!("AND event_type IN ({types}) GROUP BY {key} ORDER BY {key}"),
                )
                .await;
        }
        let (from, to) = q.period.bounds();
        let select = std::iter::once(key.to_string())
            .chain(counts.iter().map(|c| format!("sumIf(n, {c})")))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT {select} FROM {}.analytics_daily WHERE tenant_id = '{}' {}
             AND day >= toDate({}) AND day < toDate({}) AND event_type IN ({types})
             GROUP BY {key} ORDER BY {key} FORMAT JSONCompact",
            self.database,
            q.tenant.as_uuid(),
            event_filter(q),
            time(from),
            time(to)
        );
        self.data(sql).await
    }

    async fn data(&self, sql: String) -> Result<Vec<Vec<Value>>, ClickHouseError> {
        let answer: Value = serde_json::from_str(&self.run(sql, None).await?)
            .map_err(|e| ClickHouseError::Shape(e.to_string()))?;
        let data = answer["data"]
            .as_array()
            .ok_or_else(|| ClickHouseError::Shape("no data".into()))?;
        Ok(data
            .iter()
            .map(|r| r.as_array().cloned().unwrap_or_default())
            .collect())
    }

    async fn rows(
        &self,
        q: &Query,
        select: &str,
        tail: &str,
    ) -> Result<Vec<Vec<Value>>, ClickHouseError> {
        let (from, to) = q.period.bounds();
        let sql = format!(
            "SELECT {select} FROM {}.analytics_events WHERE tenant_id = '{}' {}
             AND created_at >= {} AND created_at < {} {tail} FORMAT JSONCompact",
            self.database,
            q.tenant.as_uuid(),
            event_filter(q),
            time(from),
            time(to)
        );
        self.data(sql).await
    }

    /// Headline counts.
    pub async fn counts(&self, q: &Query) -> Result<Counts, ClickHouseError> {
        if !whole_days(q) {
            let rows = self.rows(q, COUNTS, "").await?;
            return Ok(rows.first().map(|r| counts_at(r, 0)).unwrap_or_default());
        }
        // Whole days: the plain counts from the daily table, and only the page views read
        // for the exact number of distinct viewers.
        let (from, to) = q.period.bounds();
        let sums = format!(
            "SELECT sumIf(n, event_type = 'page.view'), sumIf(n, event_type = 'registration.started'),
                    sumIf(n, event_type = 'registration.completed'),
                    sumIf(n, (event_type = 'registration.completed' AND status = 'CONFIRMED') OR event_type = 'payment.completed'),
                    sumIf(n, event_type = 'checkin.completed')
             FROM {}.analytics_daily WHERE tenant_id = '{}' {} AND day >= toDate({}) AND day < toDate({})
             FORMAT JSONCompact",
            self.database,
            q.tenant.as_uuid(),
            event_filter(q),
            time(from),
            time(to)
        );
        let (sums, unique) = tokio::try_join!(
            self.data(sums),
            self.rows(
                q,
                "uniqExact(cityHash64(viewer))",
                "AND event_type = 'page.view'"
            )
        )?;
        let get = |i: usize| sums.first().and_then(|r| r.get(i)).map(n).unwrap_or(0);
        Ok(Counts {
            views: get(0),
            unique_views: unique.first().and_then(|r| r.first()).map(n).unwrap_or(0),
            started: get(1),
            registrations: get(2),
            confirmed: get(3),
            checked_in: get(4),
        })
    }

    /// Per UTC day.
    pub async fn by_day(&self, q: &Query) -> Result<Vec<DayFigures>, ClickHouseError> {
        let rows = self
            .grouped(
                q,
                "toString(day)",
                &[
                    "event_type = 'page.view'",
                    "event_type = 'registration.completed'",
                    "event_type = 'checkin.completed'",
                ],
                "'page.view', 'registration.completed', 'checkin.completed'",
            )
            .await?;
        rows.iter()
            .map(|r| {
                Ok(DayFigures {
                    date: s(&r[0])
                        .parse()
                        .map_err(|e: chrono::ParseError| ClickHouseError::Shape(e.to_string()))?,
                    views: n(&r[1]),
                    registrations: n(&r[2]),
                    checked_in: n(&r[3]),
                })
            })
            .collect()
    }

    /// Per ticket type.
    pub async fn by_ticket_type(
        &self,
        q: &Query,
    ) -> Result<Vec<TicketTypeFigures>, ClickHouseError> {
        let rows = self
            .grouped(
                q,
                "ticket_type",
                &[
                    "event_type = 'registration.completed'",
                    "event_type = 'checkin.completed'",
                ],
                "'registration.completed', 'checkin.completed'",
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| TicketTypeFigures {
                ticket_type_id: s(&r[0]),
                registrations: n(&r[1]),
                checked_in: n(&r[2]),
            })
            .collect())
    }

    /// Per traffic source.
    pub async fn by_source(&self, q: &Query) -> Result<Vec<SourceFigures>, ClickHouseError> {
        let rows = self
            .grouped(
                q,
                "source",
                &[
                    "event_type = 'page.view'",
                    "event_type = 'registration.completed'",
                ],
                "'page.view', 'registration.completed'",
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| SourceFigures {
                source: s(&r[0]),
                views: n(&r[1]),
                registrations: n(&r[2]),
            })
            .collect())
    }

    /// Counts per event of the organization.
    pub async fn per_event(&self, q: &Query) -> Result<Vec<(Uuid, Counts)>, ClickHouseError> {
        let rows = self
            .rows(
                q,
                &format!("event_id, {COUNTS}"),
                "AND event_id != '' GROUP BY event_id",
            )
            .await?;
        Ok(rows
            .iter()
            .filter_map(|r| Some((s(&r[0]).parse().ok()?, counts_at(r, 1))))
            .collect())
    }

    /// One page of records in (created_at, id) order, after `after`.
    pub async fn export_page(
        &self,
        q: &Query,
        after: Option<(DateTime<Utc>, Uuid)>,
        limit: usize,
    ) -> Result<Vec<ExportRow>, ClickHouseError> {
        let after = match after {
            Some((t, id)) => format!(
                "AND (created_at > {t} OR (created_at = {t} AND id > '{id}'))",
                t = time(t)
            ),
            None => String::new(),
        };
        let rows = self
            .rows(
                q,
                "id, toString(created_at), event_type, event_id, user_id, ticket_type, source, properties",
                &format!("{after} ORDER BY created_at, id LIMIT {limit}"),
            )
            .await?;
        let uuid = |v: &Value| s(v).parse::<Uuid>().ok();
        rows.iter()
            .map(|r| {
                let created = chrono::NaiveDateTime::parse_from_str(&s(&r[1]), "%Y-%m-%d %H:%M:%S")
                    .map_err(|e| ClickHouseError::Shape(e.to_string()))?
                    .and_utc();
                let properties: Value = serde_json::from_str(&s(&r[7])).unwrap_or(Value::Null);
                Ok(ExportRow {
                    id: uuid(&r[0]).ok_or_else(|| ClickHouseError::Shape("id".into()))?,
                    created_at: created,
                    event_type: s(&r[2]),
                    event_id: uuid(&r[3]),
                    user_id: uuid(&r[4]),
                    ticket_type: s(&r[5]),
                    source: s(&r[6]),
                    properties: properties.to_string(),
                })
            })
            .collect()
    }

    /// Removes records created before `before`, and the daily counts of the days wholly before
    /// it (mutations; 18.16 has no TTL).
    pub async fn purge(&self, before: DateTime<Utc>) -> Result<(), ClickHouseError> {
        self.run(
            format!(
                "ALTER TABLE {}.analytics_events DELETE WHERE created_at < {}",
                self.database,
                time(before)
            ),
            None,
        )
        .await?;
        self.run(
            format!(
                "ALTER TABLE {}.analytics_daily DELETE WHERE day < toDate({})",
                self.database,
                time(before)
            ),
            None,
        )
        .await?;
        Ok(())
    }
}
