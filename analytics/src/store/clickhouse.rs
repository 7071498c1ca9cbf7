//! The ClickHouse dialect over its HTTP interface (18.16 and later). Values in the SQL are
//! ids and times bilet formats itself, never client text; properties travel as JSON rows.
//! Rows come back as `JSONEachRow` and are read by column name into the structs below, so a
//! reordered or added column cannot shift a figure into the wrong field.

use super::Query;
use crate::export::ExportRow;
use crate::figures::{Counts, DayFigures, QueueCounts, SourceFigures, TicketTypeFigures};
use crate::record::Record;
use chrono::{DateTime, Utc};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
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

/// The headline counts over the records, each named as [`CountsRow`] reads it. The aliases
/// are no column names: ClickHouse lets an alias shadow a column in WHERE as well.
const COUNTS: &str = "countIf(event_type = 'page.view') AS views,
    uniqExactIf(cityHash64(viewer), event_type = 'page.view') AS unique_views,
    countIf(event_type = 'registration.started') AS started,
    countIf(event_type = 'registration.completed') AS registrations,
    countIf((event_type = 'registration.completed' AND status = 'CONFIRMED') OR event_type = 'payment.completed') AS confirmed,
    countIf(event_type = 'checkin.completed') AS checked_in";

/// Asks for 64-bit integers as JSON numbers. ClickHouse (18.16 as well as today's) quotes
/// them by default, since JavaScript cannot hold them; [`uint`] still reads either form, in
/// case a server profile overrides the setting.
const SETTINGS: [(&str, &str); 1] = [("output_format_json_quote_64bit_integers", "0")];

/// Reads a `UInt64` given as a JSON number or as a quoted one.
fn uint<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Uint {
        Number(u64),
        Quoted(String),
    }
    match Uint::deserialize(deserializer)? {
        Uint::Number(n) => Ok(n),
        Uint::Quoted(s) => s.parse().map_err(D::Error::custom),
    }
}

/// Whether a record is stored.
#[derive(Deserialize)]
struct Found {
    #[serde(deserialize_with = "uint")]
    found: u64,
}

/// The headline counts over the records ([`COUNTS`]).
#[derive(Default, Deserialize)]
struct CountsRow {
    #[serde(deserialize_with = "uint")]
    views: u64,
    #[serde(deserialize_with = "uint")]
    unique_views: u64,
    #[serde(deserialize_with = "uint")]
    started: u64,
    #[serde(deserialize_with = "uint")]
    registrations: u64,
    #[serde(deserialize_with = "uint")]
    confirmed: u64,
    #[serde(deserialize_with = "uint")]
    checked_in: u64,
}

impl From<CountsRow> for Counts {
    fn from(r: CountsRow) -> Counts {
        Counts {
            views: r.views,
            unique_views: r.unique_views,
            started: r.started,
            registrations: r.registrations,
            confirmed: r.confirmed,
            checked_in: r.checked_in,
        }
    }
}

/// The headline counts of whole days, summed from the daily table (all but the distinct
/// viewers, which only the records give).
#[derive(Default, Deserialize)]
struct DailySums {
    #[serde(deserialize_with = "uint")]
    views: u64,
    #[serde(deserialize_with = "uint")]
    started: u64,
    #[serde(deserialize_with = "uint")]
    registrations: u64,
    #[serde(deserialize_with = "uint")]
    confirmed: u64,
    #[serde(deserialize_with = "uint")]
    checked_in: u64,
}

/// The counts of a waiting room ([`ClickHouseStore::queue`]).
#[derive(Default, Deserialize)]
struct QueueRow {
    #[serde(deserialize_with = "uint")]
    joined: u64,
    #[serde(deserialize_with = "uint")]
    admitted: u64,
    #[serde(deserialize_with = "uint")]
    gone: u64,
    #[serde(deserialize_with = "uint")]
    registered: u64,
    average_wait: f64,
}

/// The number of distinct viewers.
#[derive(Default, Deserialize)]
struct UniqueViews {
    #[serde(deserialize_with = "uint")]
    unique_views: u64,
}

/// The counts of one event of the organization.
#[derive(Deserialize)]
struct EventCountsRow {
    event_id: String,
    #[serde(flatten)]
    counts: CountsRow,
}

/// One UTC day of the dashboard.
#[derive(Deserialize)]
struct DayRow {
    /// `toString(day)`, named apart from the `day` column it is made of.
    #[serde(rename = "utc_day")]
    date: String,
    #[serde(deserialize_with = "uint")]
    views: u64,
    #[serde(deserialize_with = "uint")]
    registrations: u64,
    #[serde(deserialize_with = "uint")]
    checked_in: u64,
}

/// One ticket type of the dashboard.
#[derive(Deserialize)]
struct TicketTypeRow {
    ticket_type: String,
    #[serde(deserialize_with = "uint")]
    registrations: u64,
    #[serde(deserialize_with = "uint")]
    checked_in: u64,
}

/// One traffic source of the dashboard.
#[derive(Deserialize)]
struct SourceRow {
    source: String,
    #[serde(deserialize_with = "uint")]
    views: u64,
    #[serde(deserialize_with = "uint")]
    registrations: u64,
}

/// One record for export.
#[derive(Deserialize)]
struct ExportRecord {
    id: String,
    /// `toString(created_at)`, named apart from the column the page is ordered and cut by.
    #[serde(rename = "created_text")]
    created_at: String,
    event_type: String,
    event_id: String,
    user_id: String,
    ticket_type: String,
    source: String,
    properties: String,
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
        let request = self.client.post(&self.url).query(&SETTINGS);
        let request = match body {
            Some(body) => request.query(&[("query", sql)]).body(body),
            None => request.body(sql),
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
        let rows: Vec<Found> = self
            .select(format!(
                "SELECT count() AS found FROM {}.analytics_events
                 WHERE tenant_id = '{}' AND event_id = '{}' AND event_type = '{}' AND id = '{}'",
                self.database,
                r.tenant_id.as_uuid(),
                r.event_id.map(|e| e.to_string()).unwrap_or_default(),
                r.event_type.as_str(),
                r.id
            ))
            .await?;
        Ok(rows.first().is_some_and(|r| r.found > 0))
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

    /// Grouped counts, one row per value of `key` (an expression and the name it is read
    /// by), each of `counts` (a name and a condition) counted: from the daily table when the
    /// period's ends fall on midnight (UTC), where it gives exactly what the records would;
    /// from the records otherwise.
    async fn grouped<T: DeserializeOwned>(
        &self,
        q: &Query,
        key: (&str, &str),
        counts: &[(&str, &str)],
        types: &str,
    ) -> Result<Vec<T>, ClickHouseError> {
        let (expression, name) = key;
        // `x AS x` is left out: older servers can take it for a cyclic alias.
        let key = if expression == name {
            name.to_string()
        } else {
            format!("{expression} AS {name}")
        };
        if !whole_days(q) {
            let select = std::iter::once(key)
                .chain(
                    counts
                        .iter()
                        .map(|(alias, c)| format!("countIf({c}) AS {alias}")),
                )
                .collect::<Vec<_>>()
                .join(", ");
            return self
                .rows(
                    q,
                    &select,
                    &format!("AND event_type IN ({types}) GROUP BY {name} ORDER BY {name}"),
                )
                .await;
        }
        let (from, to) = q.period.bounds();
        let select = std::iter::once(key)
            .chain(
                counts
                    .iter()
                    .map(|(alias, c)| format!("sumIf(n, {c}) AS {alias}")),
            )
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT {select} FROM {}.analytics_daily WHERE tenant_id = '{}' {}
             AND day >= toDate({}) AND day < toDate({}) AND event_type IN ({types})
             GROUP BY {name} ORDER BY {name}",
            self.database,
            q.tenant.as_uuid(),
            event_filter(q),
            time(from),
            time(to)
        );
        self.select(sql).await
    }

    /// Runs a SELECT (given without a FORMAT clause) and reads each row by column name.
    async fn select<T: DeserializeOwned>(&self, sql: String) -> Result<Vec<T>, ClickHouseError> {
        let answer = self.run(format!("{sql}\nFORMAT JSONEachRow"), None).await?;
        answer
            .lines()
            .filter(|line| !line.trim().is_empty())
            .enumerate()
            .map(|(i, line)| {
                serde_json::from_str(line).map_err(|e| {
                    ClickHouseError::Shape(format!(
                        "row {i} as {}: {e}: {}",
                        std::any::type_name::<T>(),
                        line.chars().take(200).collect::<String>()
                    ))
                })
            })
            .collect()
    }

    /// The rows of `select` over the records of the query's organization, event and period.
    async fn rows<T: DeserializeOwned>(
        &self,
        q: &Query,
        select: &str,
        tail: &str,
    ) -> Result<Vec<T>, ClickHouseError> {
        let (from, to) = q.period.bounds();
        let sql = format!(
            "SELECT {select} FROM {}.analytics_events WHERE tenant_id = '{}' {}
             AND created_at >= {} AND created_at < {} {tail}",
            self.database,
            q.tenant.as_uuid(),
            event_filter(q),
            time(from),
            time(to)
        );
        self.select(sql).await
    }

    /// Headline counts.
    pub async fn counts(&self, q: &Query) -> Result<Counts, ClickHouseError> {
        if !whole_days(q) {
            let rows: Vec<CountsRow> = self.rows(q, COUNTS, "").await?;
            return Ok(rows.into_iter().next().unwrap_or_default().into());
        }
        // Whole days: the plain counts from the daily table, and only the page views read
        // for the exact number of distinct viewers.
        let (from, to) = q.period.bounds();
        let sums = format!(
            "SELECT sumIf(n, event_type = 'page.view') AS views,
                    sumIf(n, event_type = 'registration.started') AS started,
                    sumIf(n, event_type = 'registration.completed') AS registrations,
                    sumIf(n, (event_type = 'registration.completed' AND status = 'CONFIRMED') OR event_type = 'payment.completed') AS confirmed,
                    sumIf(n, event_type = 'checkin.completed') AS checked_in
             FROM {}.analytics_daily WHERE tenant_id = '{}' {} AND day >= toDate({}) AND day < toDate({})",
            self.database,
            q.tenant.as_uuid(),
            event_filter(q),
            time(from),
            time(to)
        );
        let (sums, unique) = tokio::try_join!(
            self.select::<DailySums>(sums),
            self.rows::<UniqueViews>(
                q,
                "uniqExact(cityHash64(viewer)) AS unique_views",
                "AND event_type = 'page.view'"
            )
        )?;
        let sums = sums.into_iter().next().unwrap_or_default();
        Ok(Counts {
            views: sums.views,
            unique_views: unique.into_iter().next().unwrap_or_default().unique_views,
            started: sums.started,
            registrations: sums.registrations,
            confirmed: sums.confirmed,
            checked_in: sums.checked_in,
        })
    }

    /// The counts of an event's waiting room; a registration counts as the queue's when the
    /// same person was let in by it. (`gone`, not `left`: LEFT is a keyword of joins.)
    pub async fn queue(&self, q: &Query) -> Result<QueueCounts, ClickHouseError> {
        let (from, to) = q.period.bounds();
        let admitted = format!(
            "SELECT user_id FROM {}.analytics_events WHERE tenant_id = '{}' {}
             AND created_at >= {} AND created_at < {} AND event_type = 'queue.admitted'",
            self.database,
            q.tenant.as_uuid(),
            event_filter(q),
            time(from),
            time(to)
        );
        let select = format!(
            "countIf(event_type = 'queue.joined') AS joined,
             countIf(event_type = 'queue.admitted') AS admitted,
             countIf(event_type = 'queue.left') AS gone,
             uniqExactIf(user_id, event_type = 'registration.completed' AND user_id IN ({admitted})) AS registered,
             if(countIf(event_type = 'queue.admitted') = 0, 0,
                avgIf(visitParamExtractFloat(properties, 'waitedSeconds'), event_type = 'queue.admitted')) AS average_wait"
        );
        let rows: Vec<QueueRow> = self.rows(q, &select, "").await?;
        let row = rows.into_iter().next().unwrap_or_default();
        Ok(QueueCounts {
            joined: row.joined,
            admitted: row.admitted,
            left: row.gone,
            registered: row.registered,
            average_wait_seconds: row.average_wait,
        })
    }

    /// Per UTC day.
    pub async fn by_day(&self, q: &Query) -> Result<Vec<DayFigures>, ClickHouseError> {
        let rows: Vec<DayRow> = self
            .grouped(
                q,
                ("toString(day)", "utc_day"),
                &[
                    ("views", "event_type = 'page.view'"),
                    ("registrations", "event_type = 'registration.completed'"),
                    ("checked_in", "event_type = 'checkin.completed'"),
                ],
                "'page.view', 'registration.completed', 'checkin.completed'",
            )
            .await?;
        rows.into_iter()
            .map(|r| {
                Ok(DayFigures {
                    date: r.date.parse().map_err(|e: chrono::ParseError| {
                        ClickHouseError::Shape(format!("day {:?}: {e}", r.date))
                    })?,
                    views: r.views,
                    registrations: r.registrations,
                    checked_in: r.checked_in,
                })
            })
            .collect()
    }

    /// Per ticket type.
    pub async fn by_ticket_type(
        &self,
        q: &Query,
    ) -> Result<Vec<TicketTypeFigures>, ClickHouseError> {
        let rows: Vec<TicketTypeRow> = self
            .grouped(
                q,
                ("ticket_type", "ticket_type"),
                &[
                    ("registrations", "event_type = 'registration.completed'"),
                    ("checked_in", "event_type = 'checkin.completed'"),
                ],
                "'registration.completed', 'checkin.completed'",
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| TicketTypeFigures {
                ticket_type_id: r.ticket_type,
                registrations: r.registrations,
                checked_in: r.checked_in,
            })
            .collect())
    }

    /// Per traffic source.
    pub async fn by_source(&self, q: &Query) -> Result<Vec<SourceFigures>, ClickHouseError> {
        let rows: Vec<SourceRow> = self
            .grouped(
                q,
                ("source", "source"),
                &[
                    ("views", "event_type = 'page.view'"),
                    ("registrations", "event_type = 'registration.completed'"),
                ],
                "'page.view', 'registration.completed'",
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| SourceFigures {
                source: r.source,
                views: r.views,
                registrations: r.registrations,
            })
            .collect())
    }

    /// Counts per event of the organization.
    pub async fn per_event(&self, q: &Query) -> Result<Vec<(Uuid, Counts)>, ClickHouseError> {
        let rows: Vec<EventCountsRow> = self
            .rows(
                q,
                &format!("event_id, {COUNTS}"),
                "AND event_id != '' GROUP BY event_id",
            )
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|r| Some((r.event_id.parse().ok()?, r.counts.into())))
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
        let rows: Vec<ExportRecord> = self
            .rows(
                q,
                "id, toString(created_at) AS created_text, event_type, event_id, user_id, ticket_type, source, properties",
                &format!("{after} ORDER BY created_at, id LIMIT {limit}"),
            )
            .await?;
        // Empty strings stand for "none" in the table (18.16 cannot sort by a nullable).
        let uuid = |v: &str| v.parse::<Uuid>().ok();
        rows.into_iter()
            .map(|r| {
                let created =
                    chrono::NaiveDateTime::parse_from_str(&r.created_at, "%Y-%m-%d %H:%M:%S")
                        .map_err(|e| {
                            ClickHouseError::Shape(format!("created_at {:?}: {e}", r.created_at))
                        })?
                        .and_utc();
                let properties: Value = serde_json::from_str(&r.properties).unwrap_or(Value::Null);
                Ok(ExportRow {
                    id: uuid(&r.id)
                        .ok_or_else(|| ClickHouseError::Shape(format!("id {:?}", r.id)))?,
                    created_at: created,
                    event_type: r.event_type,
                    event_id: uuid(&r.event_id),
                    user_id: uuid(&r.user_id),
                    ticket_type: r.ticket_type,
                    source: r.source,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_read_by_name_whatever_the_order_and_quoting() {
        // 18.16 quotes 64-bit integers unless told not to; either form reads the same.
        let quoted: EventCountsRow = serde_json::from_str(
            r#"{"checked_in":"6","confirmed":"5","registrations":"4","started":"3",
                "unique_views":"2","views":"1","event_id":"x"}"#,
        )
        .unwrap();
        let plain: EventCountsRow = serde_json::from_str(
            r#"{"event_id":"x","views":1,"unique_views":2,"started":3,"registrations":4,
                "confirmed":5,"checked_in":6}"#,
        )
        .unwrap();
        for row in [quoted, plain] {
            assert_eq!(row.event_id, "x");
            let c = Counts::from(row.counts);
            assert_eq!(
                [
                    c.views,
                    c.unique_views,
                    c.started,
                    c.registrations,
                    c.confirmed,
                    c.checked_in
                ],
                [1, 2, 3, 4, 5, 6]
            );
        }
        let day: DayRow = serde_json::from_str(
            r#"{"views":"7","utc_day":"2026-11-20","checked_in":0,"registrations":"1"}"#,
        )
        .unwrap();
        assert_eq!(
            (
                day.date.as_str(),
                day.views,
                day.registrations,
                day.checked_in
            ),
            ("2026-11-20", 7, 1, 0)
        );
    }

    #[test]
    fn a_missing_column_or_a_non_number_is_an_error() {
        assert!(serde_json::from_str::<SourceRow>(r#"{"source":"ads","views":"1"}"#).is_err());
        assert!(
            serde_json::from_str::<Found>(r#"{"found":"many"}"#).is_err(),
            "not a count"
        );
        assert!(serde_json::from_str::<Found>(r#"{"found":-1}"#).is_err());
    }
}
