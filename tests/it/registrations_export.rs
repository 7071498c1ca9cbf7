//! The organizer's download of an event's registrations as CSV
//! (`GET /api/v1/events/{id}/registrations/export`): the exact file (byte order mark, header,
//! CRLF, RFC 4180 quoting, formulas defused), the list's filters, every row past one page, and
//! who may download it.

use crate::identity::{Ctx, Session};
use crate::support::send;
use crate::ticketing::{participant, setup};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

const BOM: &str = "\u{feff}";
const HEADER: &str = "\"firstName\",\"lastName\",\"email\",\"ticketType\",\"status\",\"confirmationCode\",\"registeredAt\",\"checkedInAt\",\"source\",\"currency\",\"paidCents\",\"refundedCents\"\r\n";

/// A record as the file writes it: every cell quoted, quotes doubled, CRLF. The cells are
/// given already defused.
fn record(cells: &[&str]) -> String {
    let quoted: Vec<String> = cells
        .iter()
        .map(|c| format!("\"{}\"", c.replace('"', "\"\"")))
        .collect();
    format!("{}\r\n", quoted.join(","))
}

/// A registration of `body` (names, email, source) for `ticket_type`; the answer.
async fn register(
    ctx: &Ctx,
    token: &str,
    event: &str,
    ticket_type: &str,
    mut body: Value,
) -> Value {
    body["ticketTypeId"] = json!(ticket_type);
    let r = send(
        ctx.http
            .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
            .bearer_auth(token)
            .header("X-Idempotency-Key", Uuid::new_v4().to_string())
            .header("Accept-Language", "en")
            .json(&body),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.body
}

/// The download as `token` sees it: status, content type, disposition and the raw body.
async fn download(
    ctx: &Ctx,
    event: &str,
    query: &str,
    token: Option<&str>,
) -> (u16, String, String, Vec<u8>) {
    let mut request = ctx
        .http
        .get(format!(
            "{}/api/v1/events/{event}/registrations/export{query}",
            ctx.base
        ))
        .header("Accept-Language", "en");
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    };
    let content_type = header("content-type");
    let disposition = header("content-disposition");
    let body = response.bytes().await.unwrap().to_vec();
    (status, content_type, disposition, body)
}

/// The body of a successful download, as text.
async fn csv(ctx: &Ctx, event: &str, query: &str, token: &str) -> String {
    let (status, content_type, disposition, body) = download(ctx, event, query, Some(token)).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(content_type, "text/csv; charset=utf-8");
    assert_eq!(
        disposition,
        format!("attachment; filename=\"bilet-registrations-{event}.csv\"")
    );
    assert!(
        body.starts_with(&[0xEF, 0xBB, 0xBF]),
        "a UTF-8 byte order mark"
    );
    String::from_utf8(body).unwrap()
}

/// A time of a JSON answer as the file writes it: UTC, to the second.
fn at(v: &Value) -> String {
    DateTime::parse_from_rfc3339(v.as_str().unwrap())
        .unwrap()
        .with_timezone(&Utc)
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn code(r: &Value) -> &str {
    r["confirmationCode"].as_str().unwrap()
}

fn status(r: &Value) -> &str {
    r["status"].as_str().unwrap()
}

/// An organization with a published event, two ticket types ("Free" and a reserved "Paid")
/// and four registrations: one checked in with an email and a source, one whose names a
/// spreadsheet would take for formulas, one in Cyrillic on the paid type, and one whose names
/// (set in the database, as the API refuses control characters) hold a leading tab and a
/// line break. Answers the owner, the organization, the event, the paid type, the first
/// participant's token and the expected lines of the four, in order.
struct Seed {
    owner: Session,
    org: String,
    event: String,
    free: String,
    paid: String,
    participant: String,
    lines: [String; 4],
}

async fn seed(ctx: &Ctx) -> Seed {
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let (event, free) = setup(ctx, &owner, json!({"name": "Free", "quantity": 10})).await;
    let paid = ctx
        .post(
            &format!("/api/v1/events/{event}/ticket-types"),
            Some(&owner.access),
            json!({"name": "Paid", "quantity": 5, "priceCents": 500, "reservationMinutes": 30}),
        )
        .await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    let paid = paid.body["id"].as_str().unwrap().to_string();

    let (_, anna_token) = participant();
    let anna = register(
        ctx,
        &anna_token,
        &event,
        &free,
        json!({"firstName": "Anna", "lastName": "Doe, \"Jr\"", "email": "anna@example.com", "source": "vk"}),
    )
    .await;
    ctx.clock.advance(chrono::Duration::seconds(1));
    let (_, formula_token) = participant();
    let formula = register(
        ctx,
        &formula_token,
        &event,
        &free,
        json!({"firstName": "=SUM(1,2)", "lastName": "@cmd"}),
    )
    .await;
    ctx.clock.advance(chrono::Duration::seconds(1));
    let (_, petr_token) = participant();
    let petr = register(
        ctx,
        &petr_token,
        &event,
        &paid,
        json!({"firstName": "Пётр", "lastName": "Иванов"}),
    )
    .await;
    ctx.clock.advance(chrono::Duration::seconds(1));
    let (_, odd_token) = participant();
    let odd = register(
        ctx,
        &odd_token,
        &event,
        &free,
        json!({"firstName": "Tab", "lastName": "Lines"}),
    )
    .await;
    let db = ctx.t.owner().await;
    let odd_id: Uuid = odd["id"].as_str().unwrap().parse().unwrap();
    let changed = db
        .execute(
            "UPDATE event_service.registrations SET first_name = $2, last_name = $3 WHERE id = $1",
            &[&odd_id, &"\t=cmd", &"two\nlines"],
        )
        .await
        .unwrap();
    assert_eq!(changed, 1);

    let checked = ctx
        .post(
            &format!(
                "/api/v1/registrations/{}/check-in",
                anna["id"].as_str().unwrap()
            ),
            Some(&owner.access),
            json!({"method": "QR_CODE"}),
        )
        .await;
    assert_eq!(checked.status, 200, "{}", checked.body);
    let anna_id: Uuid = anna["id"].as_str().unwrap().parse().unwrap();
    let checked_in_at: DateTime<Utc> = db
        .query_one(
            "SELECT checked_in_at FROM event_service.check_ins WHERE registration_id = $1",
            &[&anna_id],
        )
        .await
        .unwrap()
        .get(0);

    let lines = [
        record(&[
            "Anna",
            "Doe, \"Jr\"",
            "anna@example.com",
            "Free",
            "CHECKED_IN",
            code(&anna),
            &at(&anna["createdAt"]),
            &checked_in_at.to_rfc3339_opts(SecondsFormat::Secs, true),
            "vk",
            "RUB",
            "0",
            "0",
        ]),
        record(&[
            "'=SUM(1,2)",
            "'@cmd",
            "",
            "Free",
            status(&formula),
            code(&formula),
            &at(&formula["createdAt"]),
            "",
            "",
            "RUB",
            "0",
            "0",
        ]),
        record(&[
            "Пётр",
            "Иванов",
            "",
            "Paid",
            status(&petr),
            code(&petr),
            &at(&petr["createdAt"]),
            "",
            "",
            "RUB",
            "0",
            "0",
        ]),
        record(&[
            "'\t'=cmd",
            "two\nlines",
            "",
            "Free",
            status(&odd),
            code(&odd),
            &at(&odd["createdAt"]),
            "",
            "",
            "RUB",
            "0",
            "0",
        ]),
    ];
    assert_eq!(status(&formula), "CONFIRMED");
    assert_eq!(status(&odd), "CONFIRMED");
    assert_ne!(
        status(&petr),
        "CONFIRMED",
        "a paid seat waits for its payment"
    );
    Seed {
        owner,
        org,
        event,
        free,
        paid,
        participant: anna_token,
        lines,
    }
}

#[tokio::test]
async fn the_file_holds_every_registration_quoted_and_defused() {
    let ctx = Ctx::new().await;
    let s = seed(&ctx).await;
    let text = csv(&ctx, &s.event, "", &s.owner.access).await;
    assert_eq!(text, format!("{BOM}{HEADER}{}", s.lines.concat()));

    // A moderator of the organization downloads it too.
    let moderator = ctx.moderator(&s.owner, &s.org).await;
    assert_eq!(csv(&ctx, &s.event, "", &moderator.access).await, text);
}

#[tokio::test]
async fn the_list_filters_apply() {
    let ctx = Ctx::new().await;
    let s = seed(&ctx).await;
    assert_eq!(
        csv(&ctx, &s.event, "?status=CONFIRMED", &s.owner.access).await,
        format!("{BOM}{HEADER}{}{}", s.lines[1], s.lines[3])
    );
    assert_eq!(
        csv(&ctx, &s.event, "?status=CHECKED_IN", &s.owner.access).await,
        format!("{BOM}{HEADER}{}", s.lines[0])
    );
    assert_eq!(
        csv(
            &ctx,
            &s.event,
            &format!("?ticketTypeId={}", s.paid),
            &s.owner.access
        )
        .await,
        format!("{BOM}{HEADER}{}", s.lines[2])
    );
    assert_eq!(
        csv(
            &ctx,
            &s.event,
            &format!("?status=CONFIRMED&ticketTypeId={}", s.paid),
            &s.owner.access
        )
        .await,
        format!("{BOM}{HEADER}"),
        "nothing matches: the header alone"
    );
    for bad in [
        "?status=NOPE",
        "?status=confirmed",
        "?ticketTypeId=not-a-uuid",
    ] {
        let (status, content_type, _, body) =
            download(&ctx, &s.event, bad, Some(&s.owner.access)).await;
        assert_eq!(status, 400, "{bad}");
        assert!(
            content_type.starts_with("application/json"),
            "{bad}: {content_type}"
        );
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["code"], "validation_error", "{bad}: {body}");
    }
}

#[tokio::test]
async fn only_the_events_organizers_download_it() {
    let ctx = Ctx::new().await;
    let s = seed(&ctx).await;
    let admin = ctx.admin().await;
    let (other_owner, _) = ctx.owner(&admin).await;

    let refused = |expected: u16, who: &'static str, token: Option<String>| {
        let ctx = &ctx;
        let event = s.event.clone();
        async move {
            let (status, content_type, disposition, body) =
                download(ctx, &event, "", token.as_deref()).await;
            assert_eq!(
                status,
                expected,
                "{who}: {}",
                String::from_utf8_lossy(&body)
            );
            assert!(!content_type.starts_with("text/csv"), "{who}");
            assert!(disposition.is_empty(), "{who}");
            let text = String::from_utf8_lossy(&body).to_string();
            assert!(
                !text.contains("Anna") && !text.contains("anna@"),
                "{who}: {text}"
            );
        }
    };
    refused(
        403,
        "a participant of the event",
        Some(s.participant.clone()),
    )
    .await;
    let signed_up = ctx.user().await;
    refused(
        403,
        "a user outside the organization",
        Some(signed_up.access),
    )
    .await;
    refused(
        404,
        "the owner of another organization",
        Some(other_owner.access.clone()),
    )
    .await;
    refused(401, "no token", None).await;

    let (status, ..) = download(&ctx, &Uuid::now_v7().to_string(), "", Some(&s.owner.access)).await;
    assert_eq!(status, 404, "no such event");
    let (status, ..) = download(&ctx, "not-a-uuid", "", Some(&s.owner.access)).await;
    assert_eq!(status, 400, "not an id");
}

#[tokio::test]
async fn every_row_comes_out_past_one_page() {
    let ctx = Ctx::new().await;
    let s = seed(&ctx).await;
    // 1,205 more (cancelled, so no seat is counted), written straight into the table.
    let event: Uuid = s.event.parse().unwrap();
    let added = ctx
        .t
        .owner()
        .await
        .execute(
            "INSERT INTO event_service.registrations
                (id, tenant_id, event_id, ticket_type_id, user_id, first_name, last_name,
                 confirmation_code, status, created_at, updated_at)
             SELECT md5('id' || n)::uuid, r.tenant_id, r.event_id, r.ticket_type_id, md5('user' || n)::uuid,
                    'Bulk', 'N' || n, 'B' || lpad(n::text, 7, '0'), 'CANCELLED',
                    r.created_at + n * interval '1 second', r.updated_at
             FROM (SELECT * FROM event_service.registrations WHERE event_id = $1
                   ORDER BY created_at DESC LIMIT 1) r,
                  generate_series(1, 1205) n",
            &[&event],
        )
        .await
        .unwrap();
    assert_eq!(added, 1205);

    let all = csv(&ctx, &s.event, "", &s.owner.access).await;
    assert!(
        all.starts_with(&format!("{BOM}{HEADER}{}", s.lines.concat())),
        "the seeded rows first"
    );
    let records = all.matches("\r\n").count();
    assert_eq!(records, 1 + 4 + 1205, "the header and every registration");

    let cancelled = csv(&ctx, &s.event, "?status=CANCELLED", &s.owner.access).await;
    let lines: Vec<&str> = cancelled
        .trim_start_matches(BOM)
        .split("\r\n")
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len(), 1 + 1205);
    for (n, line) in lines[1..].iter().enumerate() {
        let expected = format!(
            "\"Bulk\",\"N{}\",\"\",\"Free\",\"CANCELLED\",\"B{:07}\",",
            n + 1,
            n + 1
        );
        assert!(line.starts_with(&expected), "row {}: {line}", n + 1);
    }
}

/// The records of `csv` as Python's `csv` module reads them with `delimiter`: a real reader,
/// with its own idea of quotes, rather than ours.
fn python_reads(csv: &str, delimiter: char) -> Vec<Vec<String>> {
    use std::io::Write;
    const SCRIPT: &str = "import csv, io, json, sys
text = sys.stdin.buffer.read().decode('utf-8-sig')
rows = list(csv.reader(io.StringIO(text, newline=''), delimiter=sys.argv[1]))
json.dump(rows, sys.stdout)";
    let mut child = std::process::Command::new("python3")
        .args(["-c", SCRIPT, &delimiter.to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(csv.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "python csv with {delimiter:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Where a spreadsheet may see a formula in `text`: the first character of the text and of
/// every part after a `,`, `;`, tab or line end, past blanks and quotes.
fn formula_parts(text: &str) -> Vec<String> {
    text.split([',', ';', '\t', '\r', '\n'])
        .chain([text])
        .filter(|part| {
            part.chars()
                .find(|&c| c != '"' && !(c.is_whitespace() && c != '\t' && c != '\r'))
                .is_some_and(|c| ['=', '+', '-', '@', '\t', '\r'].contains(&c))
        })
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn a_real_csv_reader_finds_no_formula_with_either_separator() {
    let ctx = Ctx::new().await;
    let s = seed(&ctx).await;
    // Names set in the database: the API refuses control characters, and an import or an
    // older version could have left any text there.
    let tricks = [
        ("Ivan;=1+1;", "Petrov; -2"),
        ("x;\"=cmd|' /C calc'!A0", "a, @SUM(1)"),
        ("  +7 999 123", "ok;  \"@x\""),
        ("a;\t=1", "two\r\n@lines"),
        ("\r=cr", "q\"\t-3"),
    ];
    let db = ctx.t.owner().await;
    for (first, last) in tricks.iter() {
        let (_, token) = participant();
        let r = register(
            &ctx,
            &token,
            &s.event,
            &s.free,
            json!({"firstName": "Name", "lastName": "Name"}),
        )
        .await;
        let id: Uuid = r["id"].as_str().unwrap().parse().unwrap();
        db.execute(
            "UPDATE event_service.registrations SET first_name = $2, last_name = $3 WHERE id = $1",
            &[&id, first, last],
        )
        .await
        .unwrap();
    }
    let names: Vec<&str> = tricks.iter().flat_map(|(f, l)| [*f, *l]).collect();
    for name in &names {
        assert!(!formula_parts(name).is_empty(), "{name:?} is a trick");
    }

    let file = csv(&ctx, &s.event, "", &s.owner.access).await;
    for delimiter in [',', ';'] {
        let rows = python_reads(&file, delimiter);
        assert!(rows.len() > names.len() / 2, "{delimiter:?}: {rows:?}");
        for cell in rows.iter().flatten() {
            assert!(
                formula_parts(cell).is_empty(),
                "{delimiter:?}: a formula in {cell:?}: {:?}",
                formula_parts(cell)
            );
        }
        // The text is still there behind the apostrophes, whatever the reader made of it.
        let flat: String = rows
            .iter()
            .flatten()
            .map(|c| c.replace(['\'', '"'], ""))
            .collect::<Vec<_>>()
            .join("\u{1}");
        for name in &names {
            for piece in name.split([';', ',', '\r', '\n']) {
                let piece = piece.replace(['\'', '"'], "");
                assert!(
                    flat.contains(&piece),
                    "{delimiter:?}: {piece:?} of {name:?} is gone"
                );
            }
        }
    }
    // With the file's own separator every cell comes back whole: the name behind the
    // apostrophes, in its own column.
    let rows = python_reads(&file, ',');
    for (first, last) in tricks.iter() {
        assert!(
            rows.iter()
                .any(|r| r[0].replace('\'', "") == first.replace('\'', "")
                    && r[1].replace('\'', "") == last.replace('\'', "")),
            "{first:?} {last:?} in {rows:?}"
        );
    }
}
