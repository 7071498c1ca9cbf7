//! Export of analytics records as CSV or XLSX, page by page: the records are read 5,000 at a
//! time in (created_at, id) order and written out as they come, so a long period never sits in
//! memory. CSV goes straight into the response; XLSX is built in a temporary file (rows are
//! flushed to disk as they are written) and the file is then streamed.

use crate::store::{Query, Store, StoreError};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use tokio::sync::mpsc;
use uuid::Uuid;

/// Records read per page.
pub const PAGE: usize = 5_000;

/// One exported record.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportRow {
    /// Record id.
    pub id: Uuid,
    /// When.
    pub created_at: DateTime<Utc>,
    /// Type.
    pub event_type: String,
    /// The event.
    pub event_id: Option<Uuid>,
    /// The user.
    pub user_id: Option<Uuid>,
    /// Ticket type ("" when none).
    pub ticket_type: String,
    /// Source.
    pub source: String,
    /// The properties as JSON text.
    pub properties: String,
}

/// The columns, in order.
pub const HEADER: [&str; 8] = [
    "id",
    "createdAt",
    "eventType",
    "eventId",
    "userId",
    "ticketTypeId",
    "source",
    "properties",
];

impl ExportRow {
    fn cells(&self) -> [String; 8] {
        let opt = |u: Option<Uuid>| u.map(|u| u.to_string()).unwrap_or_default();
        [
            self.id.to_string(),
            self.created_at.to_rfc3339(),
            self.event_type.clone(),
            opt(self.event_id),
            opt(self.user_id),
            self.ticket_type.clone(),
            self.source.clone(),
            self.properties.clone(),
        ]
    }
}

/// A CSV field: quoted when needed, and a leading `=`, `+`, `-`, `@`, tab or carriage return
/// neutralised so a spreadsheet does not run client-supplied text as a formula (spreadsheets
/// skip a leading tab or carriage return and then read the formula behind it).
pub fn csv_field(value: &str) -> String {
    let value = if value.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{value}")
    } else {
        value.to_string()
    };
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value
    }
}

/// One CSV record, each cell quoted as `csv_field` does, ended by CRLF.
pub fn csv_line(cells: &[String]) -> String {
    let mut line = cells
        .iter()
        .map(|c| csv_field(c))
        .collect::<Vec<_>>()
        .join(",");
    line.push_str("\r\n");
    line
}

/// Streams CSV chunks of every record of `query` into `sink`; stops early when the receiver
/// goes away (the client disconnected).
pub async fn csv(store: Store, query: Query, sink: mpsc::Sender<Result<Bytes, std::io::Error>>) {
    let header: Vec<String> = HEADER.iter().map(|h| h.to_string()).collect();
    if sink.send(Ok(Bytes::from(csv_line(&header)))).await.is_err() {
        return;
    }
    let mut after = None;
    loop {
        let page = match store.export_page(&query, after, PAGE).await {
            Ok(page) => page,
            Err(e) => {
                tracing::error!(error = %e, "export read failed");
                let _ = sink.send(Err(std::io::Error::other(e.to_string()))).await;
                return;
            }
        };
        let Some(last) = page.last() else { return };
        after = Some((last.created_at, last.id));
        let mut chunk = String::with_capacity(page.len() * 200);
        for row in &page {
            chunk.push_str(&csv_line(&row.cells()));
        }
        if sink.send(Ok(Bytes::from(chunk))).await.is_err() || page.len() < PAGE {
            return;
        }
    }
}

/// Writes every record of `query` into an XLSX file at `path` (constant memory: rows go to
/// disk as they are written).
pub async fn xlsx(
    store: &Store,
    query: &Query,
    path: std::path::PathBuf,
) -> Result<(), ExportError> {
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let sheet = workbook.add_worksheet_with_constant_memory()?;
    sheet.set_name("analytics")?;
    for (col, name) in HEADER.iter().enumerate() {
        sheet.write_string(0, col as u16, *name)?;
    }
    let mut row_number = 1u32;
    let mut after = None;
    loop {
        let page = store.export_page(query, after, PAGE).await?;
        let Some(last) = page.last() else { break };
        after = Some((last.created_at, last.id));
        for row in &page {
            for (col, cell) in row.cells().iter().enumerate() {
                sheet.write_string(row_number, col as u16, cell)?;
            }
            row_number += 1;
        }
        if page.len() < PAGE {
            break;
        }
    }
    tokio::task::spawn_blocking(move || workbook.save(&path))
        .await
        .map_err(|e| ExportError::Xlsx(e.to_string()))??;
    Ok(())
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Reading failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Writing the workbook failed.
    #[error("xlsx: {0}")]
    Xlsx(String),
}

impl From<rust_xlsxwriter::XlsxError> for ExportError {
    fn from(e: rust_xlsxwriter::XlsxError) -> ExportError {
        ExportError::Xlsx(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_and_formulas_neutralised() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("=HYPERLINK(1)"), "'=HYPERLINK(1)");
        assert_eq!(csv_field("-1,2"), "\"'-1,2\"");
    }

    #[test]
    fn leading_tab_and_carriage_return_are_neutralised() {
        assert_eq!(csv_field("\t=1+1"), "'\t=1+1");
        assert_eq!(csv_field("\r=1+1"), "\"'\r=1+1\"");
        assert_eq!(csv_field("a\tb"), "a\tb", "only a leading tab counts");
    }
}
