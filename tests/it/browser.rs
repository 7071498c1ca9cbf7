//! The web front in a real browser (Debian's chromium driven by playwright-core, axe-core for
//! accessibility; `scripts/provision/browser.sh` installs them): a participant finds an event
//! by search (its cards saying free, from a price with few seats left, or sold out), opens it
//! by its slug, signs in, registers with a double click (once), and sees the QR code on "my
//! tickets"; door staff on a phone check a ticket in by its typed code, and
//! the same code again is refused; a participant declines a payment at the test provider, pays
//! at the second attempt and finds the QR code on the ticket's page; payments that come after
//! the hold ran out take a free seat or come back, and a cancelled event's refund shows on the
//! ticket and on the organizer's pages; a participant manages their account (name, picture,
//! sessions, password) on a phone and a computer; an organizer copies an event from the list.
//! Screenshots of each page go to target/browser-artifacts.

use crate::identity::{Ctx, PASSWORD};
use serde_json::json;
use std::path::PathBuf;

/// Runs `tests/browser/{script}.mjs` with `env` to its end; its last line of output is its
/// JSON result. Screenshots go to `target/browser-artifacts/{script}`, returned with the result.
async fn run(script: &str, env: &[(&str, &str)]) -> (serde_json::Value, PathBuf) {
    Script::start(script, env).finish().await
}

/// No script error on any page and no serious or critical axe violation.
fn clean(result: &serde_json::Value) {
    assert_eq!(result["errors"], json!([]), "no script error on any page");
    assert_eq!(
        result["violations"],
        json!([]),
        "no serious or critical axe violation"
    );
}

/// Each of `pages` was screenshotted.
fn screenshots(artifacts: &std::path::Path, pages: &[&str]) {
    for page in pages {
        assert!(
            artifacts.join(format!("{page}.png")).exists(),
            "{page} screenshot"
        );
    }
}

/// A browser script that hands over to the test between its steps (`handOver` in
/// tests/browser/harness.mjs): it prints "@name" and waits for a line on its stdin.
struct Script {
    child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    stdin: Option<tokio::process::ChildStdin>,
    artifacts: PathBuf,
    said: Vec<String>,
}

impl Script {
    fn start(script: &str, env: &[(&str, &str)]) -> Script {
        use tokio::io::AsyncBufReadExt;
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let artifacts = root.join("target/browser-artifacts").join(script);
        let mut child = tokio::process::Command::new("node")
            .arg(root.join(format!("tests/browser/{script}.mjs")))
            .envs(env.iter().copied())
            .env("ARTIFACTS", &artifacts)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs (make test installs it)");
        let stdout = child.stdout.take().unwrap();
        Script {
            stdin: child.stdin.take(),
            lines: tokio::io::BufReader::new(stdout).lines(),
            child,
            artifacts,
            said: Vec::new(),
        }
    }

    /// The next line of output, kept for the failure message; None at the end.
    async fn line(&mut self) -> Option<String> {
        let line =
            tokio::time::timeout(std::time::Duration::from_secs(120), self.lines.next_line())
                .await
                .expect("the browser script said nothing for two minutes")
                .unwrap();
        if let Some(l) = &line {
            self.said.push(l.clone());
        }
        line
    }

    /// Waits until the script hands over at `step`.
    async fn reached(&mut self, step: &str) {
        while let Some(line) = self.line().await {
            if line == format!("@{step}") {
                return;
            }
        }
        let status = self.child.wait().await.unwrap();
        panic!(
            "the browser script ended ({status}) before {step}: {:?}",
            self.said
        );
    }

    /// Lets the script go on.
    async fn resume(&mut self) {
        use tokio::io::AsyncWriteExt;
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(b"go\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// Its JSON result (the last line), once it ended well, and where its screenshots are.
    async fn finish(mut self) -> (serde_json::Value, PathBuf) {
        let mut last = None;
        while let Some(line) = self.line().await {
            last = Some(line);
        }
        self.stdin.take();
        let status = self.child.wait().await.unwrap();
        assert!(status.success(), "the browser run failed: {:?}", self.said);
        let result = serde_json::from_str(&last.unwrap_or_default()).unwrap();
        (result, self.artifacts)
    }
}

#[tokio::test]
async fn a_participant_finds_an_event_registers_once_and_sees_the_qr_code() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let suffix = &uuid::Uuid::now_v7().simple().to_string()[20..];
    let title = format!("Night of strings {suffix}");
    let (_, slug) = crate::web::published_with_slug(&ctx, &owner, &title).await;
    // Beside it in the catalogue: three seats at 1,500.00 RUB (few left), and one free seat
    // someone else has taken (sold out).
    let few_title = format!("Last rows {suffix}");
    let few = json!({"name": "Last rows", "quantity": 3, "priceCents": 150000, "currency": "RUB"});
    crate::web::published_with_types(&ctx, &owner, &few_title, &[few]).await;
    let sold_title = format!("Full house {suffix}");
    let seat = json!({"name": "Only seat", "quantity": 1});
    let (sold, _) = crate::web::published_with_types(&ctx, &owner, &sold_title, &[seat]).await;
    let types = ctx
        .get(&format!("/api/v1/events/{sold}/ticket-types"), None)
        .await;
    let seat = types.body["data"][0]["id"].as_str().unwrap().to_string();
    let someone = ctx.user().await;
    let key = uuid::Uuid::new_v4().to_string();
    let taken = crate::ticketing::register(&ctx, &someone.access, &sold, &seat, &key).await;
    assert_eq!(taken.status, 201, "{}", taken.body);
    let participant = ctx.user().await;

    let (result, artifacts) = run(
        "participant",
        &[
            ("BASE", &ctx.base),
            ("SLUG", &slug),
            ("TITLE", &title),
            ("SUFFIX", suffix),
            ("FEW_TITLE", &few_title),
            ("SOLD_TITLE", &sold_title),
            ("EMAIL", &participant.email),
            ("PASSWORD", PASSWORD),
        ],
    )
    .await;
    eprintln!(
        "event page: first paint {} ms, JavaScript {} bytes ({} gzip)",
        result["firstPaintMs"], result["eventJsBytes"], result["eventJsGzipBytes"]
    );
    clean(&result);
    assert!(
        result["firstPaintMs"].as_f64().unwrap() < 1000.0,
        "{result}"
    );
    assert!(
        result["eventJsGzipBytes"].as_u64().unwrap() < 150 * 1024,
        "{result}"
    );
    assert_eq!(result["tickets"], 1, "one ticket shown: {result}");
    // The cards say what each event offers, on a computer and on a phone: free without a
    // badge, a price with "few seats left", "sold out"; each badge seen within the window.
    // (Intl writes a no-break space between the currency and the amount.)
    for width in ["1280", "390"] {
        let cards = &result["cards"][width];
        assert_eq!(cards["cards"], 3, "{width} px: {result}");
        assert_eq!(
            cards["free"],
            json!({"price": "Free", "badge": null, "badgeSeen": null, "badgeInside": null}),
            "{width} px: {result}"
        );
        assert_eq!(
            cards["few"],
            json!({"price": "from RUB\u{a0}1,500.00", "badge": "Few seats left", "badgeSeen": true, "badgeInside": true}),
            "{width} px: {result}"
        );
        assert_eq!(
            cards["sold"],
            json!({"price": "Free", "badge": "Sold out", "badgeSeen": true, "badgeInside": true}),
            "{width} px: {result}"
        );
    }
    screenshots(
        &artifacts,
        &[
            "catalogue",
            "catalogue-1280",
            "catalogue-390",
            "screen-catalogue-1280",
            "screen-catalogue-390",
            "event",
            "signin",
            "registered",
            "tickets",
            "signup",
        ],
    );

    // The double click bought once, and the code under the QR code is the registration's.
    let mine = ctx
        .get("/api/v1/registrations", Some(&participant.access))
        .await;
    let data = mine.body["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{}", mine.body);
    let code = data[0]["confirmationCode"].as_str().unwrap();
    assert!(
        result["qrLabel"].as_str().unwrap().contains(code),
        "{result}"
    );
}

#[tokio::test]
async fn the_door_accepts_a_typed_code_once_on_a_phone() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, _) = crate::web::published_with_slug(&ctx, &owner, "Door night").await;
    let types = ctx
        .get(&format!("/api/v1/events/{event}/ticket-types"), None)
        .await;
    let list = types.body.get("data").unwrap_or(&types.body);
    let ticket_type = list[0]["id"].as_str().unwrap().to_string();
    let participant = ctx.user().await;
    let registered = crate::support::send(
        reqwest::Client::new()
            .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
            .bearer_auth(&participant.access)
            .header("X-Idempotency-Key", uuid::Uuid::new_v4().to_string())
            .json(&json!({"ticketTypeId": ticket_type})),
    )
    .await;
    assert_eq!(registered.status, 201, "{}", registered.body);
    let code = registered.body["confirmationCode"].as_str().unwrap();
    let (other_event, _) = crate::web::published_with_slug(&ctx, &owner, "Other hall").await;
    let other_types = ctx
        .get(&format!("/api/v1/events/{other_event}/ticket-types"), None)
        .await;
    let other_list = other_types.body.get("data").unwrap_or(&other_types.body);
    let other = crate::support::send(
        reqwest::Client::new()
            .post(format!(
                "{}/api/v1/events/{other_event}/registrations",
                ctx.base
            ))
            .bearer_auth(&participant.access)
            .header("X-Idempotency-Key", uuid::Uuid::new_v4().to_string())
            .json(&json!({"ticketTypeId": other_list[0]["id"]})),
    )
    .await;
    assert_eq!(other.status, 201, "{}", other.body);
    let other_code = other.body["confirmationCode"].as_str().unwrap();

    let (result, artifacts) = run(
        "door",
        &[
            ("BASE", &ctx.base),
            ("EVENT", &event),
            ("CODE", code),
            ("OTHER_CODE", other_code),
            ("EMAIL", &owner.email),
            ("PASSWORD", PASSWORD),
        ],
    )
    .await;
    clean(&result);
    assert_eq!(
        result["outcomes"],
        json!(["ACCEPTED", "REFUSED", "OTHER_EVENT"])
    );
    assert!(result["already"].as_u64().unwrap() >= 1, "{result}");
    screenshots(&artifacts, &["screen-door-390", "screen-door-1280"]);
    let id = registered.body["id"].as_str().unwrap();
    let after = ctx
        .get(
            &format!("/api/v1/registrations/{id}"),
            Some(&participant.access),
        )
        .await;
    assert_eq!(after.body["status"], "CHECKED_IN", "{}", after.body);
}

#[tokio::test]
async fn the_door_camera_reads_a_qr_code_with_jsqr_where_the_browser_has_no_detector() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, _) = crate::web::published_with_slug(&ctx, &owner, "Camera night").await;
    let types = ctx
        .get(&format!("/api/v1/events/{event}/ticket-types"), None)
        .await;
    let list = types.body.get("data").unwrap_or(&types.body);
    let (_, token) = crate::ticketing::participant();
    let registered = crate::support::send(
        ctx.http
            .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
            .bearer_auth(&token)
            .header("X-Idempotency-Key", uuid::Uuid::new_v4().to_string())
            .json(
                &json!({"ticketTypeId": list[0]["id"], "firstName": "Nadia", "lastName": "Orlova"}),
            ),
    )
    .await;
    assert_eq!(registered.status, 201, "{}", registered.body);
    assert_eq!(
        registered.body["status"], "CONFIRMED",
        "{}",
        registered.body
    );
    let code = registered.body["confirmationCode"].as_str().unwrap();

    let (result, artifacts) = run(
        "door-camera",
        &[
            ("BASE", &ctx.base),
            ("EVENT", &event),
            ("CODE", code),
            ("EMAIL", &owner.email),
            ("PASSWORD", PASSWORD),
        ],
    )
    .await;
    clean(&result);
    screenshots(
        &artifacts,
        &["door-camera", "door-camera-accepted", "door-camera-refused"],
    );
    // No detector of the browser's own: jsQR did the reading, fetched once, before Start.
    assert_eq!(result["barcodeDetector"], false, "{result}");
    assert_eq!(
        result["decoderLoadsBeforeStart"], 1,
        "fetched while online, before the camera starts: {result}"
    );
    assert_eq!(result["decoderLoads"], 1, "{result}");
    assert_eq!(result["decoderLoadsAfterRestart"], 1, "{result}");
    // The code read from the picture was let in, by name, and the figures counted it.
    assert_eq!(result["first"]["title"], "ACCEPTED", "{result}");
    assert_eq!(result["first"]["code"], code, "{result}");
    assert!(
        result["first"]["detail"]
            .as_str()
            .unwrap()
            .contains("Nadia Orlova"),
        "{result}"
    );
    assert_eq!(result["figures"], "1 of 1 in", "{result}");
    assert!(
        result["typesBefore"]
            .as_str()
            .unwrap()
            .contains("Stalls: 0 of 1 in"),
        "{result}"
    );
    assert!(
        result["types"]
            .as_str()
            .unwrap()
            .contains("Stalls: 1 of 1 in"),
        "{result}"
    );
    // Held in front of the camera for seconds: still one check-in, one line of history.
    assert_eq!(result["checkInsWhileHeld"], 1, "{result}");
    assert_eq!(result["titleWhileHeld"], "ACCEPTED", "{result}");
    assert_eq!(result["historyWhileHeld"], 1, "{result}");
    // The camera started again reads it anew: refused as used.
    assert_eq!(result["second"]["title"], "REFUSED", "{result}");
    assert_eq!(
        result["second"]["detail"], "This ticket has already been used to enter.",
        "{result}"
    );
    assert_eq!(result["checkIns"], 2, "{result}");
    assert_eq!(result["history"], 2, "{result}");

    // What the server holds: one check-in, by the camera.
    let id: uuid::Uuid = registered.body["id"].as_str().unwrap().parse().unwrap();
    let rows = ctx
        .t
        .owner()
        .await
        .query(
            "SELECT method FROM event_service.check_ins WHERE registration_id = $1",
            &[&id],
        )
        .await
        .unwrap();
    let methods: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(methods, ["QR_CODE"]);
    let door = ctx
        .get(&format!("/api/v1/events/{event}/door"), Some(&owner.access))
        .await;
    assert_eq!(door.body["checkedIn"], 1, "{}", door.body);
    assert_eq!(door.body["expected"], 1, "{}", door.body);
}

/// A cover for the organizer to upload: a 1200×600 PNG with a gradient.
fn cover_png(path: &std::path::Path) {
    let img = image::RgbImage::from_fn(1200, 600, |x, y| {
        image::Rgb([(x / 5 % 256) as u8, (y / 3 % 256) as u8, 140])
    });
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    img.save_with_format(path, image::ImageFormat::Png).unwrap();
}

#[tokio::test]
async fn an_event_goes_from_an_organization_request_to_the_door_and_the_dashboard() {
    // The real object store (Garage), as in production: the cover's link is presigned by S3.
    let ctx = Ctx::with_config(|c| {
        let env = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} (make test sets it)"));
        c.storage.endpoint = Some(env("STORAGE_ENDPOINT"));
        c.storage.access_key = Some(domain::config::Secret::new(env("STORAGE_ACCESS_KEY")));
        c.storage.secret_key = Some(domain::config::Secret::new(env("STORAGE_SECRET_KEY")));
        c.storage.bucket = env("STORAGE_BUCKET");
        c.storage.region = env("STORAGE_REGION");
    })
    .await;
    let admin = ctx.admin().await;
    let organizer = ctx.user().await;
    let participant = ctx.user().await;
    let suffix = &uuid::Uuid::now_v7().simple().to_string()[20..];
    let title = format!("Spring quartets {suffix}");
    let slug = format!("spring-{suffix}");
    let org_name = format!("Chamber hall {suffix}");
    let org_slug = format!("chamber-{suffix}");
    let cover = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/browser-artifacts")
        .join(format!("cover-{suffix}.png"));
    cover_png(&cover);

    let (result, artifacts) = run(
        "organizer",
        &[
            ("BASE", &ctx.base),
            ("ADMIN_EMAIL", &admin.email),
            ("ORGANIZER_EMAIL", &organizer.email),
            ("PARTICIPANT_EMAIL", &participant.email),
            ("PASSWORD", PASSWORD),
            ("COVER", cover.to_str().unwrap()),
            ("TITLE", &title),
            ("SLUG", &slug),
            ("ORG_NAME", &org_name),
            ("ORG_SLUG", &org_slug),
        ],
    )
    .await;
    clean(&result);
    let requester = result["requester"].as_str().unwrap();
    assert!(
        requester.contains(&organizer.email) && !requester.contains(&organizer.user_id),
        "{result}"
    );

    assert_eq!(result["typeRows"], 2, "{result}");
    assert_eq!(result["offSale"], 0, "both types on sale: {result}");
    // Each section of the event's page is an address of its own, its tab marked current on
    // arrival, after a reload and after Back.
    for (view, tab) in [
        ("created", "Overview"),
        ("details", "Details"),
        ("registrations", "Registrations"),
        ("reloaded", "Registrations"),
        ("back", "Registrations"),
        ("export", "Export"),
    ] {
        assert_eq!(result["tabs"][view], tab, "{view}: {result}");
    }
    // The participant's registration, its table in a focusable region named by its heading,
    // and the row's last action (Cancel) within the window and clickable on a computer and a
    // tablet.
    assert_eq!(result["registrationRows"], 1, "{result}");
    // Found by the beginning of the email (typed in capitals), not by its middle.
    let searches = &result["searches"];
    assert_eq!(searches["start"]["count"], "1 registration", "{result}");
    assert_eq!(
        searches["start"]["emails"],
        json!([participant.email]),
        "{result}"
    );
    assert_eq!(searches["middle"]["count"], "0 registrations", "{result}");
    assert_eq!(searches["middle"]["none"], 1, "{result}");
    assert_eq!(searches["cleared"]["count"], "1 registration", "{result}");
    assert_eq!(
        result["registrationsRegion"],
        json!({"tabindex": "0", "label": "Registrations"}),
        "{result}"
    );
    for width in ["1280", "820"] {
        let action = &result["actions"][width];
        assert!(
            action["name"].as_str().unwrap().starts_with("Cancel"),
            "{width}: {result}"
        );
        assert_eq!(action["inside"], true, "{width} px: {result}");
        assert_eq!(action["reached"], true, "{width} px: {result}");
        assert_eq!(action["clickable"], true, "{width} px: {result}");
        assert!(
            action["right"].as_f64().unwrap() <= action["innerWidth"].as_f64().unwrap(),
            "{width} px: {result}"
        );
    }
    assert!(result["coverWidth"].as_u64().unwrap() > 0, "{result}");
    assert_eq!(result["participantSeesTypes"], true, "{result}");
    assert!(
        result["visitorCoverWidth"].as_u64().unwrap() > 0,
        "a visitor sees the cover: {result}"
    );
    // MEDIUM fits 600 px (LARGE and the original are wider): a card's picture, not the poster.
    let card = result["cardCoverWidth"].as_u64().unwrap();
    assert!(
        card > 0 && card <= 600,
        "the catalogue card shows the MEDIUM cover: {result}"
    );
    assert_eq!(result["door"], "ACCEPTED");
    assert_eq!(result["dashboard"]["registrations"], "1", "{result}");
    assert_eq!(result["dashboard"]["checkedIn"], "1", "{result}");
    assert!(
        result["dashboard"]["registrationBars"].as_u64().unwrap() >= 1,
        "{result}"
    );
    assert!(
        result["dashboard"]["checkInBars"].as_u64().unwrap() >= 1,
        "{result}"
    );
    let csv = &result["exports"]["csv"];
    let event = result["eventId"].as_str().unwrap();
    // The name the server gives in Content-Disposition: the event and the period.
    let named = |format: &str| {
        let name = result["exports"][format]["name"]
            .as_str()
            .unwrap()
            .to_string();
        name.starts_with(&format!("bilet-analytics-{event}-"))
            && name.ends_with(&format!(".{format}"))
    };
    assert!(named("csv"), "{result}");
    assert_eq!(
        csv["head"],
        analytics::export::csv_line(&analytics::export::HEADER.map(String::from)).trim_end(),
        "{result}"
    );
    assert!(
        csv["lines"].as_u64().unwrap() >= 4,
        "a view, a registration, a check-in: {result}"
    );
    assert!(named("xlsx"), "{result}");
    assert_eq!(result["exports"]["xlsx"]["head"], "PK", "a zip: {result}");
    // The settings page saved the description and the logo, and showed both after a reload.
    let settings = &result["settings"];
    assert_eq!(
        settings["shownDescription"], settings["description"],
        "{result}"
    );
    assert!(settings["logoWidth"].as_u64().unwrap() > 0, "{result}");
    assert_eq!(
        settings["readOnly"], 0,
        "the owner may change them: {result}"
    );
    // The report lists the organization's one event with its registration and check-in (as
    // the dashboard did), linked to the event's dashboard.
    let report = &result["report"];
    assert_eq!(report["rows"], 1, "{result}");
    assert_eq!(report["registrations"], "1", "{result}");
    assert_eq!(report["checkedIn"], "1", "{result}");
    assert_eq!(report["totalRegistrations"], "1", "{result}");
    assert_eq!(
        report["link"],
        format!("/org/events/{event}/dashboard"),
        "{result}"
    );
    screenshots(
        &artifacts,
        &[
            "org-none",
            "org-request",
            "admin-requests",
            "org-events",
            "org-event",
            "org-event-details",
            "org-registrations-1280",
            "org-registrations-820",
            "org-registrations-390",
            "org-event-390",
            "org-event-1280",
            "org-event-refunds",
            "screen-org-event-390",
            "screen-org-event-1280",
            "screen-org-registrations-390",
            "screen-org-registrations-1280",
            "participant-registered",
            "participant-tickets",
            "door-accepted",
            "dashboard",
            "org-settings",
            "org-report",
            "org-members",
            "docs",
        ],
    );

    // What the pages did is what the API holds: the event published with its two types and
    // the cover, the participant's one ticket checked in by the code under the QR code.
    let shown = ctx.get(&format!("/api/v1/events/{event}"), None).await;
    assert_eq!(shown.body["status"], "PUBLISHED", "{}", shown.body);
    assert_eq!(shown.body["slug"], slug.as_str());
    assert!(shown.body["coverImageId"].is_string(), "{}", shown.body);
    let types = ctx
        .get(&format!("/api/v1/events/{event}/ticket-types"), None)
        .await;
    let list = types.body.get("data").unwrap_or(&types.body);
    let mut names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["Balcony", "Stalls"]);
    let mine = ctx
        .get("/api/v1/registrations", Some(&participant.access))
        .await;
    let data = mine.body["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{}", mine.body);
    assert_eq!(data[0]["status"], "CHECKED_IN");
    assert_eq!(data[0]["confirmationCode"], result["code"]);
    // The organization holds the description and the logo the settings page saved.
    let orgs = ctx
        .get("/api/v1/organizations", Some(&organizer.access))
        .await;
    let org = &orgs.body["data"][0];
    assert_eq!(org["name"], org_name.as_str(), "{}", orgs.body);
    assert_eq!(org["description"], result["settings"]["description"]);
    assert!(org["logoId"].is_string(), "{}", orgs.body);
}

/// Telegram's sign-in answer for `id`, signed with `token`, as the fragment carries it
/// (base64url of the JSON, without padding).
fn telegram_pass(id: u64, auth_date: i64, token: &str) -> String {
    use base64::Engine;
    let mut fields = std::collections::BTreeMap::new();
    fields.insert("id".to_string(), id.to_string());
    fields.insert("first_name".to_string(), "Анна".to_string());
    fields.insert("username".to_string(), "anna_tg".to_string());
    fields.insert("auth_date".to_string(), auth_date.to_string());
    let hash = domain::identity::messenger::sign_widget(&fields, token);
    let body = json!({
        "id": id, "first_name": "Анна", "username": "anna_tg", "auth_date": auth_date, "hash": hash,
    });
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(body.to_string())
}

#[tokio::test]
async fn a_visitor_signs_in_with_telegram_and_a_forged_pass_is_refused() {
    use domain::clock::Clock;
    let ctx = Ctx::new().await;
    let now = ctx.clock.now().timestamp();
    let genuine = telegram_pass(4242, now, crate::identity::BOT_TOKEN);
    let forged = telegram_pass(4243, now, "999:ANOTHER-BOT");

    let (result, _) = run(
        "telegram",
        &[
            ("BASE", &ctx.base),
            ("TG_RESULT", &genuine),
            ("TG_FORGED", &forged),
        ],
    )
    .await;
    clean(&result);
    // Telegram's page was asked for our bot, by our origin, to come back to our return page.
    assert_eq!(result["asked"]["bot_id"], "123456", "{result}");
    assert_eq!(result["asked"]["origin"], ctx.base.as_str(), "{result}");
    assert_eq!(
        result["asked"]["return_to"],
        format!("{}/signin/telegram?next=%2Fme%2Ftickets", ctx.base),
        "{result}"
    );
    assert_eq!(result["addressAfter"], format!("{}/me/tickets", ctx.base));
    assert!(
        result["userName"].as_str().unwrap().contains("Анна"),
        "{result}"
    );
    assert_eq!(result["forged"], 1, "{result}");
    assert!(
        !result["forgedAddress"]
            .as_str()
            .unwrap()
            .contains("tgAuthResult"),
        "{result}"
    );

    // One account, made from the genuine pass only.
    let users: Vec<(String, String)> = ctx
        .t
        .owner()
        .await
        .query(
            "SELECT messenger_id, first_name FROM user_service.users",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(users, [("4242".to_string(), "Анна".to_string())]);
}

#[tokio::test]
async fn a_participant_registers_with_the_keyboard_alone() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let suffix = &uuid::Uuid::now_v7().simple().to_string()[20..];
    let title = format!("Keys and strings {suffix}");
    let (_, slug) = crate::web::published_with_slug(&ctx, &owner, &title).await;
    let participant = ctx.user().await;

    let (result, _) = run(
        "keyboard",
        &[
            ("BASE", &ctx.base),
            ("SLUG", &slug),
            ("TITLE", &title),
            ("EMAIL", &participant.email),
            ("PASSWORD", PASSWORD),
        ],
    )
    .await;
    clean(&result);
    assert_eq!(
        result["unmarked"],
        json!([]),
        "every focused element shows it"
    );
    assert_eq!(
        result["afterSkip"], "app",
        "the skip link moves the focus to the content"
    );
    assert_eq!(result["focusOnArrival"], "H1", "{result}");
    assert_eq!(
        result["steps"],
        json!([
            "skip link",
            "search",
            "the event",
            "sign in",
            "email",
            "password",
            "register",
            "registered"
        ])
    );
    let mine = ctx
        .get("/api/v1/registrations", Some(&participant.access))
        .await;
    assert_eq!(
        mine.body["data"].as_array().unwrap().len(),
        1,
        "{}",
        mine.body
    );
}

/// The file `who`'s account names as its avatar, checked to be their own personal file (no
/// organization's).
async fn personal_avatar(ctx: &Ctx, who: &crate::identity::Session) -> serde_json::Value {
    let me = ctx.get("/api/v1/users/me", Some(&who.access)).await;
    let avatar = me.body["avatarId"]
        .as_str()
        .unwrap_or_else(|| panic!("an avatar is set: {}", me.body))
        .to_string();
    let file = ctx
        .get(&format!("/api/v1/media/{avatar}"), Some(&who.access))
        .await;
    assert_eq!(file.status, 200, "{}", file.body);
    assert_eq!(
        file.body["tenantId"],
        serde_json::Value::Null,
        "{}",
        file.body
    );
    assert_eq!(file.body["ownerId"], who.user_id.as_str(), "{}", file.body);
    file.body
}

/// A node whose links reach its gateway: links made of `http.public_url` (the test provider's
/// payment page, the local store's pictures) point at the gateway's own address, so the
/// browser follows them there and back.
async fn linked() -> Ctx {
    let gateway = format!("127.0.0.1:{}", crate::support::free_port());
    let ctx = Ctx::with_config(|c| {
        c.services.insert(
            domain::config::Service::Gateway,
            domain::config::ServiceAddr {
                listen: gateway.clone(),
                url: format!("http://{gateway}"),
            },
        );
        c.http.public_url = format!("http://{gateway}");
    })
    .await;
    assert_eq!(ctx.base, format!("http://{gateway}"));
    ctx
}

#[tokio::test]
async fn a_participant_pays_for_a_reserved_ticket_after_declining_once() {
    let ctx = linked().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let suffix = &uuid::Uuid::now_v7().simple().to_string()[20..];
    let title = format!("Paid arias {suffix}");
    // One paid type: 1,500.00 RUB, 30 minutes to pay (the payment tests' shape).
    let paid = crate::payments::paid("RUB", 5);
    let (_, slug) = crate::web::published_with_types(&ctx, &owner, &title, &[paid]).await;
    let participant = ctx.user().await;

    let (result, artifacts) = run(
        "payments",
        &[
            ("BASE", &ctx.base),
            ("SLUG", &slug),
            ("TITLE", &title),
            ("EMAIL", &participant.email),
            ("PASSWORD", PASSWORD),
        ],
    )
    .await;
    clean(&result);
    screenshots(
        &artifacts,
        &[
            "event-reserved",
            "tickets-reserved",
            "ticket-declined",
            "ticket-paid",
            "screen-ticket-390",
            "screen-ticket-1280",
        ],
    );
    for shown in [&result["eventCountdown"], &result["countdown"]] {
        assert!(
            shown.as_str().unwrap().starts_with("Seat held for "),
            "{result}"
        );
    }
    assert_eq!(result["declined"], true, "{result}");
    assert_eq!(result["received"], true, "{result}");
    assert_eq!(
        result["payButtonsAfter"], 0,
        "nothing left to pay: {result}"
    );
    assert_ne!(
        result["firstPayment"], result["secondPayment"],
        "a new payment after the decline: {result}"
    );

    // One registration, confirmed by the second payment; both returns were to its page, and
    // the QR code holds its code.
    let mine = ctx
        .get("/api/v1/registrations", Some(&participant.access))
        .await;
    let data = mine.body["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{}", mine.body);
    assert_eq!(data[0]["status"], "CONFIRMED", "{}", mine.body);
    let id = data[0]["id"].as_str().unwrap();
    assert_eq!(
        result["returnPath"],
        format!("/me/tickets/{id}"),
        "{result}"
    );
    assert_eq!(
        result["paidReturnPath"],
        format!("/me/tickets/{id}"),
        "{result}"
    );
    let code = data[0]["confirmationCode"].as_str().unwrap();
    assert!(
        result["qrLabel"].as_str().unwrap().contains(code),
        "{result}"
    );
    let latest = ctx
        .get(
            &format!("/api/v1/registrations/{id}/checkout"),
            Some(&participant.access),
        )
        .await;
    assert_eq!(latest.status, 200, "{}", latest.body);
    assert_eq!(latest.body["status"], "PAID", "{}", latest.body);
    assert_eq!(latest.body["attempt"], 2, "{}", latest.body);

    // The ticket into a calendar: an .ics file of this event with the ticket's code, and
    // Google Calendar's form filled in.
    assert_eq!(result["icsName"], format!("{slug}.ics"), "{result}");
    let ics = result["ics"].as_str().unwrap().replace("\r\n ", "");
    assert!(ics.starts_with("BEGIN:VCALENDAR\r\n"), "{ics}");
    assert!(ics.contains(&format!("SUMMARY:{title}\r\n")), "{ics}");
    assert!(ics.contains(code), "{ics}");
    let google = result["google"].as_str().unwrap();
    assert!(
        google.starts_with("https://calendar.google.com/calendar/render?action=TEMPLATE"),
        "{google}"
    );
}

#[tokio::test]
async fn late_payments_take_a_free_seat_or_come_back_and_a_cancelled_event_is_refunded() {
    let ctx = linked().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let suffix = &uuid::Uuid::now_v7().simple().to_string()[20..];
    // One seat each, 900.00 RUB, 5 minutes to pay.
    let seat = json!({"name": "Last seat", "quantity": 1, "priceCents": 90000, "currency": "RUB",
        "reservationMinutes": 5});
    let free_title = format!("Late quartet {suffix}");
    let (free_event, free_slug) =
        crate::web::published_with_types(&ctx, &owner, &free_title, std::slice::from_ref(&seat))
            .await;
    let (taken_event, taken_slug) =
        crate::web::published_with_types(&ctx, &owner, &format!("Full trio {suffix}"), &[seat])
            .await;
    let participant = ctx.user().await;

    let mut script = Script::start(
        "late-payments",
        &[
            ("BASE", &ctx.base),
            ("FREE_SLUG", &free_slug),
            ("TAKEN_SLUG", &taken_slug),
            ("FREE_EVENT", &free_event),
            ("FREE_TITLE", &free_title),
            ("EMAIL", &participant.email),
            ("ORGANIZER_EMAIL", &owner.email),
            ("PASSWORD", PASSWORD),
        ],
    );

    // Both payment pages are open: both holds run out, and another participant takes the
    // second event's seat.
    script.reached("lapse").await;
    let mine = ctx
        .get("/api/v1/registrations", Some(&participant.access))
        .await;
    let held = mine.body["data"].as_array().unwrap().clone();
    assert_eq!(held.len(), 2, "{}", mine.body);
    let of = |event: &str| {
        held.iter()
            .find(|r| r["eventId"] == event)
            .unwrap_or_else(|| panic!("a reservation in {event}: {held:?}"))["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (kept, lost) = (of(&free_event), of(&taken_event));
    crate::payments::lapse(&ctx, &participant, &kept).await;
    crate::payments::lapse(&ctx, &participant, &lost).await;
    let other = ctx.user().await;
    let types = ctx
        .get(&format!("/api/v1/events/{taken_event}/ticket-types"), None)
        .await;
    let list = types.body.get("data").unwrap_or(&types.body);
    let taken_type = list[0]["id"].as_str().unwrap().to_string();
    let theirs = crate::payments::reserve(&ctx, &other, &taken_event, &taken_type).await;
    assert_eq!(theirs["status"], "RESERVED", "{theirs}");
    script.resume().await;

    let (result, artifacts) = script.finish().await;
    clean(&result);
    screenshots(
        &artifacts,
        &[
            "late-paid",
            "late-refunded",
            "cancelled-refunded",
            "org-event-refunds",
            "org-dashboard-revenue",
            "org-report-revenue",
        ],
    );
    assert_eq!(
        result["freePath"],
        format!("/me/tickets/{kept}"),
        "{result}"
    );
    assert_eq!(
        result["takenPath"],
        format!("/me/tickets/{lost}"),
        "{result}"
    );
    assert_eq!(result["lateWithSeat"], "QR", "{result}");
    assert_eq!(
        result["qrWithoutSeat"], 0,
        "no ticket without a seat: {result}"
    );
    let no_seat = result["lateWithoutSeat"].as_str().unwrap();
    assert!(
        no_seat.starts_with("Refund of ")
            && no_seat.contains("900")
            && no_seat.contains("seat had gone"),
        "{result}"
    );
    assert!(
        result["cancelled"]
            .as_str()
            .unwrap()
            .contains(": succeeded."),
        "{result}"
    );
    assert_eq!(
        result["organizerRefunds"], 1,
        "the cancelled event's one refund: {result}"
    );
    let dashboard = result["dashboardMoney"].as_str().unwrap();
    // Received 900.00 and refunded 900.00, net nothing.
    assert_eq!(dashboard.matches("RUB 900.00").count(), 2, "{result}");
    assert!(dashboard.contains("RUB 0.00"), "{result}");

    // What the server holds: the late payer of the free seat was refunded when the event was
    // cancelled; the late payer without a seat got the money back; the seat stayed with the
    // one who took it.
    let kept_back = crate::payments::refund_settles(&ctx, &participant, &kept, "SUCCEEDED").await;
    assert_eq!(kept_back["reason"], "EVENT_CANCELLED", "{kept_back}");
    assert_eq!(kept_back["amountCents"], 90000, "{kept_back}");
    let lost_back = crate::payments::refund_settles(&ctx, &participant, &lost, "SUCCEEDED").await;
    assert_eq!(lost_back["reason"], "NO_SEAT", "{lost_back}");
    assert_eq!(
        crate::payments::status(&ctx, &participant, &kept).await,
        "CANCELLED"
    );
    assert_eq!(
        crate::payments::status(&ctx, &participant, &lost).await,
        "EXPIRED"
    );
    let id = theirs["id"].as_str().unwrap();
    assert_eq!(crate::payments::status(&ctx, &other, id).await, "RESERVED");
    let revenue = ctx
        .get(
            &format!("/api/v1/events/{free_event}/revenue"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(revenue.status, 200, "{}", revenue.body);
    let line = &revenue.body["currencies"][0];
    assert_eq!(line["paidCents"], 90000, "{}", revenue.body);
    assert_eq!(line["refundedCents"], 90000, "{}", revenue.body);
    assert_eq!(line["netCents"], 0, "{}", revenue.body);
}

#[tokio::test]
async fn a_participant_manages_their_account_on_a_phone_and_a_computer() {
    let ctx = linked().await;
    let participant = ctx.user().await;
    // A group whose link the participant was given.
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let group = ctx
        .post(
            &format!("/api/v1/organizations/{org}/groups"),
            Some(&owner.access),
            json!({"name": "Friends of the hall"}),
        )
        .await;
    assert_eq!(group.status, 201, "{}", group.body);
    let group_id = group.body["id"].as_str().unwrap().to_string();
    let invite = ctx
        .post_empty(
            &format!("/api/v1/groups/{group_id}/invite"),
            Some(&owner.access),
        )
        .await;
    let code = invite.body["inviteCode"].as_str().unwrap().to_string();
    let mut script = Script::start(
        "self-service",
        &[
            ("BASE", &ctx.base),
            ("EMAIL", &participant.email),
            ("PASSWORD", PASSWORD),
            ("NEW_PASSWORD", "violet-hour-7"),
            ("GROUP_CODE", &code),
        ],
    );
    // The picture saved on the phone: the account names a personal file of its own, which
    // becomes the account's avatar.
    script.reached("picture-saved").await;
    let file = personal_avatar(&ctx, &participant).await;
    assert_eq!(file["contentType"], "image/png", "{file}");
    script.resume().await;
    // Removed on the computer: no avatar any more.
    script.reached("picture-removed").await;
    let me = ctx.get("/api/v1/users/me", Some(&participant.access)).await;
    assert_eq!(me.status, 200, "{}", me.body);
    assert_eq!(me.body["avatarId"], serde_json::Value::Null, "{}", me.body);
    script.resume().await;
    let (result, artifacts) = script.finish().await;
    assert!(
        result["joined"]
            .as_str()
            .unwrap()
            .contains("Friends of the hall"),
        "{result}"
    );
    assert_eq!(
        result["joinAddress"], "/me/join",
        "the code left the address: {result}"
    );
    let members = ctx
        .get(
            &format!("/api/v1/groups/{group_id}/members"),
            Some(&owner.access),
        )
        .await;
    assert!(
        members.body.to_string().contains(&participant.user_id),
        "{}",
        members.body
    );
    clean(&result);
    screenshots(
        &artifacts,
        &[
            "phone-menu-folded",
            "phone-menu-open",
            "joined",
            "profile",
            "profile-picture-390",
            "profile-picture-1280",
            "profile-picture-removed",
            "not-found",
        ],
    );
    // The picture: a text file refused on the page, a PNG previewed before saving, loaded
    // from its link after a reload and on the computer, then removed there.
    assert_eq!(
        result["pictureRefused"],
        json!({"invalid": "true", "said": "JPEG, PNG, WebP or GIF, up to 5 MB."}),
        "{result}"
    );
    assert_eq!(result["picturePreview"], true, "{result}");
    for shown in ["pictureAfterReload", "pictureOnComputer"] {
        assert!(result[shown].as_u64().unwrap_or(0) > 0, "{shown}: {result}");
    }
    assert_eq!(result["removeGone"], 0, "{result}");
    assert_eq!(result["pictureHidden"], true, "{result}");
    // The phone's menu: folded, opened, folded again after the navigation.
    assert_eq!(result["menuFolded"], "false", "{result}");
    assert_eq!(result["profileHidden"], true, "{result}");
    assert_eq!(result["menuOpened"], "true", "{result}");
    assert_eq!(result["menuFoldedAfter"], "false", "{result}");
    // Three sessions (the test's own, the computer, the phone), the phone's marked as this
    // device; two left after signing the computer out.
    assert_eq!(result["sessions"], 3, "{result}");
    assert_eq!(result["thisDevice"], 1, "{result}");
    assert_eq!(result["thisDeviceIsThePhone"], 1, "{result}");
    assert_eq!(result["sessionsAfter"], 2, "{result}");
    assert_eq!(result["computerSignedOut"], "/signin", "{result}");
    assert_eq!(result["newPasswordWorks"], true, "{result}");
    // The front's own 404, the token gone from the address, home instead of elsewhere.
    assert_eq!(result["missingStatus"], 404, "{result}");
    assert!(
        result["missingHeading"]
            .as_str()
            .unwrap()
            .contains("not found"),
        "{result}"
    );
    assert_eq!(result["resetAddress"], "/reset-password", "{result}");
    assert_eq!(
        result["afterEvilNext"],
        format!("{}/", ctx.base),
        "{result}"
    );

    // What the server holds: the new name, the new password, the old one refused.
    let fresh = ctx.login(&participant.email, "violet-hour-7").await;
    assert_eq!(fresh.status, 200, "{}", fresh.body);
    assert_eq!(fresh.body["user"]["firstName"], "Vera", "{}", fresh.body);
    assert_eq!(fresh.body["user"]["lastName"], "Pavlova", "{}", fresh.body);
    assert_eq!(ctx.login(&participant.email, PASSWORD).await.status, 401);
}

#[tokio::test]
async fn an_organizer_copies_an_event_from_the_list_and_lands_on_the_draft() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let suffix = &uuid::Uuid::now_v7().simple().to_string()[20..];
    let title = format!("Autumn recital {suffix}");
    let types = [
        json!({"name": "Stalls", "quantity": 40, "priceCents": 150000, "currency": "RUB"}),
        json!({"name": "Balcony", "quantity": 20}),
    ];
    let (source, _) = crate::web::published_with_types(&ctx, &owner, &title, &types).await;

    let (result, artifacts) = run(
        "org-copy",
        &[
            ("BASE", &ctx.base),
            ("EMAIL", &owner.email),
            ("PASSWORD", PASSWORD),
            ("EVENT", &source),
            ("TITLE", &title),
        ],
    )
    .await;
    clean(&result);
    screenshots(&artifacts, &["org-events", "org-copy", "profile-acting"]);
    assert_eq!(result["cardsBefore"], 1, "{result}");
    assert_eq!(
        result["copyButton"],
        format!("Make a copy: {title}"),
        "{result}"
    );
    assert_eq!(
        result["cardsAfter"], 2,
        "one copy, beside its source: {result}"
    );
    assert_eq!(
        result["said"],
        format!("Copy of “{title}” created as a draft — check the date."),
        "{result}"
    );
    assert_eq!(result["heading"], title.as_str(), "{result}");
    // The profile while acting for the organization: the picture saved is the organizer's
    // own file (no organization's), and it is their avatar.
    assert_eq!(result["pickerWhileActing"], 1, "{result}");
    assert_eq!(result["savedWhileActing"], true, "{result}");
    personal_avatar(&ctx, &owner).await;

    // What the server holds: the copy the page landed on is a draft of the organization with
    // both ticket types, and the source is untouched.
    let copy = result["copyId"].as_str().unwrap();
    assert_ne!(copy, source, "{result}");
    let event = ctx
        .get(&format!("/api/v1/events/{copy}"), Some(&owner.access))
        .await;
    assert_eq!(event.status, 200, "{}", event.body);
    assert_eq!(event.body["status"], "DRAFT", "{}", event.body);
    assert_eq!(event.body["title"], title.as_str(), "{}", event.body);
    assert_eq!(event.body["tenantId"], org.as_str(), "{}", event.body);
    let offered = |id: String| {
        let ctx = &ctx;
        let token = owner.access.clone();
        async move {
            let r = ctx
                .get(&format!("/api/v1/events/{id}/ticket-types"), Some(&token))
                .await;
            assert_eq!(r.status, 200, "{}", r.body);
            let mut types: Vec<(String, i64, i64)> = r.body["data"]
                .as_array()
                .unwrap_or_else(|| panic!("a list: {}", r.body))
                .iter()
                .map(|t| {
                    (
                        t["name"].as_str().unwrap().to_string(),
                        t["priceCents"].as_i64().unwrap_or(0),
                        t["quantity"].as_i64().unwrap(),
                    )
                })
                .collect();
            types.sort();
            types
        }
    };
    let expected = vec![
        ("Balcony".to_string(), 0, 20),
        ("Stalls".to_string(), 150000, 40),
    ];
    assert_eq!(offered(copy.to_string()).await, expected);
    assert_eq!(offered(source.clone()).await, expected);
    let kept = ctx
        .get(&format!("/api/v1/events/{source}"), Some(&owner.access))
        .await;
    assert_eq!(kept.body["status"], "PUBLISHED", "{}", kept.body);
}

#[tokio::test]
async fn two_phones_check_in_offline_and_a_ticket_used_on_both_is_reported() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, _) = crate::web::published_with_slug(&ctx, &owner, "Basement gig").await;
    let types = ctx
        .get(&format!("/api/v1/events/{event}/ticket-types"), None)
        .await;
    let list = types.body.get("data").unwrap_or(&types.body);
    let ticket_type = list[0]["id"].as_str().unwrap().to_string();
    let mut codes = Vec::new();
    for (first, last) in [("Ann", "Lee"), ("Boris", "Petrov"), ("Clara", "Kim")] {
        let (_, token) = crate::ticketing::participant();
        let r = crate::support::send(
            ctx.http
                .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
                .bearer_auth(&token)
                .header("X-Idempotency-Key", uuid::Uuid::new_v4().to_string())
                .json(&json!({"ticketTypeId": ticket_type, "firstName": first, "lastName": last})),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.body);
        codes.push(r.body["confirmationCode"].as_str().unwrap().to_string());
    }

    let (result, artifacts) = run(
        "door-offline",
        &[
            ("BASE", &ctx.base),
            ("EVENT", &event),
            ("EMAIL", &owner.email),
            ("PASSWORD", PASSWORD),
            ("CODE_A", &codes[0]),
            ("CODE_B", &codes[1]),
            ("CODE_C", &codes[2]),
        ],
    )
    .await;
    clean(&result);
    screenshots(&artifacts, &["door-online", "door-offline", "door-synced"]);
    assert_eq!(result["headerShown"], false, "the door's own bar: {result}");
    assert!(
        result["bar"].as_str().unwrap().contains("0 of 3 in"),
        "{result}"
    );
    // Offline, each phone decides against its own list.
    for checked in [&result["firstA"], &result["secondB"], &result["secondC"]] {
        assert_eq!(checked["title"], "ACCEPTED", "{result}");
        assert!(
            checked["detail"].as_str().unwrap().contains("offline"),
            "{result}"
        );
    }
    assert_eq!(result["firstB"], "ACCEPTED", "found by name: {result}");
    assert!(
        result["secondCAgain"]
            .as_str()
            .unwrap()
            .contains("Already used at"),
        "{result}"
    );
    assert!(
        result["firstState"]
            .as_str()
            .unwrap()
            .contains("2 check-ins wait"),
        "{result}"
    );
    assert!(
        result["secondState"]
            .as_str()
            .unwrap()
            .contains("2 check-ins wait"),
        "{result}"
    );
    // Back online: the first phone's two go through; the second's Boris is a second use.
    assert!(
        !result["firstReport"]
            .as_str()
            .unwrap()
            .contains("USED TWICE"),
        "{result}"
    );
    let report = result["secondReport"].as_str().unwrap();
    assert!(report.contains("1 needs attention"), "{result}");
    assert!(
        report.contains("USED TWICE")
            && report.contains(&codes[1])
            && report.contains("Boris Petrov"),
        "{result}"
    );
    assert_eq!(result["secondFigures"], "3 of 3 in", "{result}");

    // What the server holds: each checked in once.
    let all = ctx
        .get(
            &format!("/api/v1/events/{event}/registrations?status=CHECKED_IN"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(all.body["totalElements"], 3, "{}", all.body);
    let door = ctx
        .get(&format!("/api/v1/events/{event}/door"), Some(&owner.access))
        .await;
    assert_eq!(door.body["checkedIn"], 3, "{}", door.body);
    assert_eq!(door.body["expected"], 3, "{}", door.body);
}

#[tokio::test]
async fn a_visitor_queues_on_a_phone_and_registers_when_their_turn_comes() {
    use domain::clock::Clock;
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let suffix = &uuid::Uuid::now_v7().simple().to_string()[20..];
    let title = format!("Midnight premiere {suffix}");
    let seats = json!({"name": "Stalls", "quantity": 5});
    let (event, slug) = crate::web::published_with_types(&ctx, &owner, &title, &[seats]).await;
    let on_sale_at = ctx.clock.now() + chrono::Duration::hours(1);
    let opened = ctx
        .put(
            &format!("/api/v1/events/{event}/waiting-room"),
            Some(&owner.access),
            json!({"onSaleAt": on_sale_at, "admitPerMinute": 1}),
        )
        .await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    let participant = ctx.user().await;

    let mut script = Script::start(
        "queue",
        &[
            ("BASE", &ctx.base),
            ("SLUG", &slug),
            ("TITLE", &title),
            ("EMAIL", &participant.email),
            ("PASSWORD", PASSWORD),
        ],
    );
    // In the pre-queue: the sale opens a minute ago, and the one visitor is let in.
    script.reached("pre-queue").await;
    ctx.clock
        .advance(chrono::Duration::hours(1) + chrono::Duration::minutes(1));
    let event_id = event.parse().unwrap();
    // The node's own admitter, on the same clock, may be at it: then this waits for it.
    while storage::events::waiting_room::admitter::room(&ctx.t.db, event_id, ctx.clock.now())
        .await
        .unwrap()
        .busy
        > 0
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let room = ctx
        .get(&format!("/api/v1/events/{event}/waiting-room"), None)
        .await;
    assert!(room.body["drawnAt"].is_string(), "{}", room.body);
    assert_eq!(room.body["admitted"], 1, "{}", room.body);
    script.resume().await;

    let (result, artifacts) = script.finish().await;
    clean(&result);
    assert_eq!(
        result["registerShown"], 0,
        "the queue, not Register: {result}"
    );
    assert_eq!(result["reloaded"], 0, "the turn was pushed: {result}");
    assert_eq!(result["registered"], true, "{result}");
    assert!(
        result["fairness"]
            .as_str()
            .unwrap()
            .contains("drawn at random"),
        "the draw is announced: {result}"
    );
    screenshots(
        &artifacts,
        &[
            "event-with-room",
            "queue-pre",
            "queue-admitted",
            "registered-through-queue",
        ],
    );
    let mine = ctx
        .get("/api/v1/registrations", Some(&participant.access))
        .await;
    assert_eq!(
        mine.body["data"].as_array().unwrap().len(),
        1,
        "{}",
        mine.body
    );
}
