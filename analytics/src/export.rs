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

/// Characters that make a spreadsheet read the text behind them as a formula. A tab or a
/// carriage return counts because spreadsheets skip it and then read what follows.
const FORMULA_START: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// Where a spreadsheet may begin a new cell inside our field: it may open the file with `;`
/// as the separator (a Russian locale does) rather than `,`, take tabs for separators on a
/// paste, or lose track of the quoting and break the record at a line end. Each such part
/// must not start a formula either.
const PART_SEPARATORS: [char; 5] = [',', ';', '\t', '\n', '\r'];

/// Whether a part starting at `rest` would be read as a formula: its first character past
/// quotes and blanks (other than tab and CR, which are formula starters themselves) is one of
/// `FORMULA_START`.
fn starts_formula(rest: &str) -> bool {
    rest.chars()
        .find(|&c| c != '"' && !(c.is_whitespace() && c != '\t' && c != '\r'))
        .is_some_and(|c| FORMULA_START.contains(&c))
}

/// The text of a cell with a `'` put before every part (the whole text, and whatever follows
/// each `,`, `;`, tab or line end) that a spreadsheet would run as a formula, as the OWASP
/// CSV-injection guidance asks; the original text stays readable behind the apostrophes.
pub fn defuse(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    let mut part_starts = true;
    for (i, c) in value.char_indices() {
        if part_starts && starts_formula(&value[i..]) {
            out.push('\'');
        }
        out.push(c);
        part_starts = PART_SEPARATORS.contains(&c);
    }
    out
}

/// A CSV text field: always quoted (RFC 4180, quotes doubled), so a reader in any locale takes
/// `,` and `;` inside it as text, and defused as `defuse` does for a reader that does not.
pub fn csv_field(value: &str) -> String {
    format!("\"{}\"", defuse(value).replace('"', "\"\""))
}

/// One CSV record of text cells, each written by `csv_field`, ended by CRLF.
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
    fn every_field_is_quoted_with_quotes_doubled() {
        assert_eq!(csv_field("plain"), "\"plain\"");
        assert_eq!(csv_field(""), "\"\"");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_line(&["a".into(), "b;c".into()]), "\"a\",\"b;c\"\r\n");
    }

    #[test]
    fn a_formula_at_the_start_is_defused() {
        assert_eq!(csv_field("=HYPERLINK(1)"), "\"'=HYPERLINK(1)\"");
        assert_eq!(csv_field("+7 999"), "\"'+7 999\"");
        assert_eq!(csv_field("-1"), "\"'-1\"");
        assert_eq!(csv_field("@cmd"), "\"'@cmd\"");
        assert_eq!(defuse("\t=1+1"), "'\t'=1+1");
        assert_eq!(defuse("\r=1+1"), "'\r'=1+1");
        assert_eq!(
            defuse("a\tb"),
            "a\tb",
            "a tab before plain text is harmless"
        );
        assert_eq!(defuse("'=1"), "'=1", "already text");
    }

    #[test]
    fn blanks_and_quotes_do_not_hide_a_formula() {
        assert_eq!(defuse("  =1+1"), "'  =1+1");
        assert_eq!(defuse("\"=1+1\""), "'\"=1+1\"");
        assert_eq!(defuse(" \" @x"), "' \" @x");
        assert_eq!(
            defuse("\u{a0}=1"),
            "'\u{a0}=1",
            "a no-break space is a blank too"
        );
        assert_eq!(
            defuse("a = b"),
            "a = b",
            "only a part's first character counts"
        );
    }

    #[test]
    fn every_part_a_locale_could_split_off_is_defused() {
        // Excel in a Russian locale splits on `;`.
        assert_eq!(defuse("Ivan;=1+1;"), "Ivan;'=1+1;");
        assert_eq!(defuse("Ivan,=1+1"), "Ivan,'=1+1");
        assert_eq!(defuse("Ivan; =1+1"), "Ivan;' =1+1");
        assert_eq!(defuse("Ivan;\"=1+1"), "Ivan;'\"=1+1");
        assert_eq!(defuse("a;\t=1"), "a;'\t'=1");
        assert_eq!(defuse("a\t-2"), "a\t'-2");
        assert_eq!(defuse("two\n=lines"), "two\n'=lines");
        assert_eq!(defuse("two\r\n@lines"), "two\r'\n'@lines");
        assert_eq!(defuse("a;b,c"), "a;b,c", "plain parts are left alone");
        assert_eq!(
            csv_field("Ivan;=1+1;"),
            "\"Ivan;'=1+1;\"",
            "quoted, so a `,` reader sees one cell and a `;` reader no formula"
        );
        assert_eq!(
            csv_field("x\";=1"),
            "\"x\"\";'=1\"",
            "a quote cannot close the field early"
        );
    }

    #[test]
    fn the_original_text_survives_behind_the_apostrophes() {
        for text in ["Ivan;=1+1;", "\t=cmd", "Пётр; -5, +7", "two\n@lines"] {
            let defused = defuse(text);
            assert_eq!(defused.replace('\'', ""), text);
        }
    }
}
