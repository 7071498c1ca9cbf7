//! The whole platform end to end, over the gateway only: an organizer gets an organization, a
//! moderator joins through the bot, an event with a cover and two ticket types is published,
//! participants register (free and paid), pay, queue on the waiting list and get the freed
//! seat, receive their tickets in the bot and are checked in; the organizer reads the dashboard
//! and exports XLSX. Run in one process on embedded defaults, and as one process per service
//! on RabbitMQ, ClickHouse and the S3 server.

pub mod cluster;

use crate::fake_telegram::FakeTelegram;
use crate::identity::{PASSWORD, Session, session};
use crate::support::{Reply, eventually, send};
use chrono::{Duration, Utc};
use domain::envelope::Envelope;
use serde_json::{Value, json};
use std::sync::Arc;
use storage::Database;
use storage::broker::Broker;

/// What the scenario drives and checks.
pub struct Platform {
    /// The gateway.
    pub base: String,
    /// The database (for the administrator grant and the final audit).
    pub db: Database,
    /// Its owner connection URL, for checks the application role may not make.
    pub owner_url: String,
    /// Where the payment provider publishes.
    pub broker: Arc<dyn Broker>,
    /// The Bot API the notification service talks to.
    pub telegram: FakeTelegram,
    /// An HTTP client.
    pub http: reqwest::Client,
}

/// What the scenario left behind, for the callers' own checks.
pub struct Outcome {
    /// The event.
    pub event: String,
    /// Its ticket types (free, paid).
    pub types: (String, String),
    /// The organizer.
    pub organizer: Session,
}

impl Platform {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub(crate) async fn post(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        let mut r = self
            .http
            .post(self.url(path))
            .header("Accept-Language", "en")
            .json(&body);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        send(r).await
    }

    pub(crate) async fn post_empty(&self, path: &str, token: &str) -> Reply {
        send(self.http.post(self.url(path)).bearer_auth(token)).await
    }

    pub(crate) async fn get(&self, path: &str, token: &str) -> Reply {
        send(self.http.get(self.url(path)).bearer_auth(token)).await
    }

    /// Signs up and in.
    pub async fn user(&self, first_name: &str) -> Session {
        let email = format!("e2e{}@example.com", uuid::Uuid::now_v7().simple());
        let r = self
            .post(
                "/api/v1/auth/register",
                None,
                json!({"email": email, "password": PASSWORD, "firstName": first_name, "lastName": "E2E"}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
        let r = self
            .post(
                "/api/v1/auth/login",
                None,
                json!({"email": email, "password": PASSWORD}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        session(&r.body, &email)
    }

    /// A token switched into `org`.
    pub(crate) async fn switch(&self, s: &Session, org: &str) -> String {
        let r = self
            .post_empty(&format!("/api/v1/organizations/{org}/switch"), &s.access)
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.body["accessToken"].as_str().unwrap().to_string()
    }

    /// Links `user` to `chat` through the bot.
    async fn link(&self, user: &Session, chat: i64) {
        let r = self
            .post_empty("/api/v1/notifications/link", &user.access)
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        let token = r.body["url"]
            .as_str()
            .unwrap()
            .rsplit('=')
            .next()
            .unwrap()
            .to_string();
        let before = self.telegram.delivered_to(chat).len();
        self.telegram.says(chat, &format!("/start {token}"));
        assert_eq!(
            self.telegram.wait_for(chat, before + 1, 30).await.len(),
            before + 1,
            "chat {chat} welcomed"
        );
    }

    /// Registers for a ticket type.
    async fn register(&self, user: &Session, event: &str, ticket_type: &str) -> Reply {
        send(
            self.http
                .post(self.url(&format!("/api/v1/events/{event}/registrations")))
                .bearer_auth(&user.access)
                .header("X-Idempotency-Key", uuid::Uuid::new_v4().to_string())
                .header("Accept-Language", "en")
                .json(&json!({"ticketTypeId": ticket_type, "firstName": "P", "lastName": "E2E"})),
        )
        .await
    }
}

fn cover_jpeg() -> Vec<u8> {
    let img = image::RgbImage::from_fn(800, 450, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 120])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut out, image::ImageFormat::Jpeg)
        .unwrap();
    out.into_inner()
}

/// `admin` (an administrator, granted already) approves `organizer`'s request for an
/// organization, which the organizer then creates: its id.
pub async fn organization(p: &Platform, admin: &Session, organizer: &Session) -> String {
    let admin_token = p
        .post(
            "/api/v1/auth/login",
            None,
            json!({"email": admin.email, "password": PASSWORD}),
        )
        .await
        .body["accessToken"]
        .as_str()
        .unwrap()
        .to_string();
    let slug = format!("e2e-{}", &uuid::Uuid::now_v7().simple().to_string()[20..]);
    let request = p
        .post(
            "/api/v1/organization-requests",
            Some(&organizer.access),
            json!({"name": "E2E Club", "slug": slug}),
        )
        .await;
    assert_eq!(request.status, 201, "{}", request.body);
    let approved = p
        .post_empty(
            &format!(
                "/api/v1/organization-requests/{}/approve",
                request.body["id"].as_str().unwrap()
            ),
            &admin_token,
        )
        .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    let org = p
        .post_empty("/api/v1/organizations", &organizer.access)
        .await;
    assert_eq!(org.status, 201, "{}", org.body);
    org.body["id"].as_str().unwrap().to_string()
}

/// Runs the scenario; chats 1..=6 are used from `chat_base`.
pub async fn run(p: &Platform, chat_base: i64) -> Outcome {
    // An organizer asks for an organization; an administrator approves; the organizer creates it.
    let mut organizer = p.user("Olga").await;
    let admin = p.user("Adam").await;
    storage::identity::admins::grant(&p.db, &admin.email)
        .await
        .unwrap();
    let org = organization(p, &admin, &organizer).await;
    organizer.access = p.switch(&organizer, &org).await;

    // A moderator accepts the invite in the bot.
    let invite = p
        .post_empty(
            &format!("/api/v1/organizations/{org}/invite"),
            &organizer.access,
        )
        .await;
    assert_eq!(invite.status, 201, "{}", invite.body);
    let mut moderator = p.user("Max").await;
    p.link(&moderator, chat_base + 1).await;
    p.telegram.says(
        chat_base + 1,
        &format!("/start {}", invite.body["inviteCode"].as_str().unwrap()),
    );
    // (A late welcome may come too: look for the answer, not at a position.)
    let accepted = || async {
        p.telegram
            .delivered_to(chat_base + 1)
            .iter()
            .any(|m| m.text.contains("E2E Club"))
    };
    assert!(
        eventually(30, accepted).await,
        "the invite is accepted: {:?}",
        p.telegram.delivered_to(chat_base + 1)
    );
    moderator.access = p.switch(&moderator, &org).await;

    // A private group, and a public event with a cover and two ticket types, published.
    let group = p
        .post(
            &format!("/api/v1/organizations/{org}/groups"),
            Some(&organizer.access),
            json!({"name": "Insiders"}),
        )
        .await;
    assert_eq!(group.status, 201, "{}", group.body);
    let boundary = "e2e-boundary";
    let mut body =
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cover.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n")
            .into_bytes();
    body.extend_from_slice(&cover_jpeg());
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let cover = send(
        p.http
            .post(p.url("/api/v1/media/upload"))
            .bearer_auth(&organizer.access)
            .header(
                "content-type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body),
    )
    .await;
    assert_eq!(cover.status, 201, "{}", cover.body);
    let cover = cover.body["id"].as_str().unwrap().to_string();
    let event = p
        .post(
            "/api/v1/events",
            Some(&organizer.access),
            json!({"title": "E2E Fest", "startsAt": (Utc::now() + Duration::days(5)).to_rfc3339(),
                   "locationType": "OFFLINE", "locationAddress": "Main st. 1", "coverImageId": cover}),
        )
        .await;
    assert_eq!(event.status, 201, "{}", event.body);
    let event = event.body["id"].as_str().unwrap().to_string();
    let free = p
        .post(
            &format!("/api/v1/events/{event}/ticket-types"),
            Some(&organizer.access),
            json!({"name": "Free", "quantity": 2}),
        )
        .await;
    assert_eq!(free.status, 201, "{}", free.body);
    let paid = p
        .post(
            &format!("/api/v1/events/{event}/ticket-types"),
            Some(&organizer.access),
            json!({"name": "Paid", "quantity": 10, "priceCents": 50000, "currency": "RUB", "reservationMinutes": 30}),
        )
        .await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    let (free, paid) = (
        free.body["id"].as_str().unwrap().to_string(),
        paid.body["id"].as_str().unwrap().to_string(),
    );
    let published = p
        .post_empty(
            &format!("/api/v1/events/{event}/publish"),
            &organizer.access,
        )
        .await;
    assert_eq!(published.status, 200, "{}", published.body);
    // The cover is now attached: a signed link to it works without a token.
    let link = p
        .get(&format!("/api/v1/media/{cover}/url"), &organizer.access)
        .await;
    assert_eq!(link.status, 200, "{}", link.body);

    // Visitors look at the page (once analytics has heard that the event is published).
    let view =
        json!({"eventType": "page.view", "eventId": event, "properties": {"source": "telegram"}});
    assert!(
        eventually(30, || async {
            p.post("/api/v1/analytics/track", None, view.clone())
                .await
                .status
                == 202
        })
        .await,
        "analytics learns of the event"
    );
    for _ in 0..3 {
        let r = p
            .post("/api/v1/analytics/track", None, json!({"eventType": "page.view", "eventId": event, "properties": {"source": "telegram"}}))
            .await;
        assert_eq!(r.status, 202, "{}", r.body);
    }

    // Participants, each with a linked chat.
    let mut people = Vec::new();
    for (i, name) in ["Pia", "Pat", "Pen", "Paz"].iter().enumerate() {
        let user = p.user(name).await;
        p.link(&user, chat_base + 2 + i as i64).await;
        people.push(user);
    }
    let chat = |i: usize| chat_base + 2 + i as i64;

    // Two free seats go; the third person queues.
    let mut registrations = Vec::new();
    for person in &people[..2] {
        let r = p.register(person, &event, &free).await;
        assert_eq!(
            (r.status, r.body["status"].as_str()),
            (201, Some("CONFIRMED")),
            "{}",
            r.body
        );
        registrations.push(r.body.clone());
    }
    let sold_out = p.register(&people[2], &event, &free).await;
    assert_eq!(
        (sold_out.status, sold_out.body["code"].as_str()),
        (422, Some("sold_out")),
        "{}",
        sold_out.body
    );
    let queued = p
        .post(
            &format!("/api/v1/events/{event}/waitlist"),
            Some(&people[2].access),
            json!({"ticketTypeId": free}),
        )
        .await;
    assert_eq!(queued.status, 201, "{}", queued.body);
    // Tickets arrive in the bot as QR photos.
    // (A welcome may come first or not at all, depending on whether the chat was linked when
    // user.registered was read: look for the ticket itself.)
    for (i, registration) in registrations.iter().enumerate() {
        let code = registration["confirmationCode"].as_str().unwrap();
        let ticketed = || async {
            p.telegram
                .delivered_to(chat(i))
                .iter()
                .any(|c| c.method == "sendPhoto" && c.text.contains(code))
        };
        assert!(
            eventually(30, ticketed).await,
            "ticket for participant {i}: {:?}",
            p.telegram.delivered_to(chat(i))
        );
    }

    // The second cancels; the first in the queue is offered the seat and takes it.
    let cancelled = send(
        p.http
            .delete(p.url(&format!(
                "/api/v1/registrations/{}",
                registrations[1]["id"].as_str().unwrap()
            )))
            .bearer_auth(&people[1].access),
    )
    .await;
    assert_eq!(cancelled.status, 204, "{}", cancelled.body);
    let offered = || async {
        p.telegram
            .delivered_to(chat(2))
            .iter()
            .any(|c| c.method == "sendMessage" && c.text.contains("E2E Fest"))
    };
    assert!(
        eventually(30, offered).await,
        "waiting-list offer: {:?}",
        p.telegram.delivered_to(chat(2))
    );
    let converted = p.register(&people[2], &event, &free).await;
    assert_eq!(
        (converted.status, converted.body["status"].as_str()),
        (201, Some("CONFIRMED")),
        "{}",
        converted.body
    );
    let code = converted.body["confirmationCode"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let ticketed = || async {
        p.telegram
            .delivered_to(chat(2))
            .iter()
            .any(|c| c.method == "sendPhoto" && c.text.contains(&code))
    };
    assert!(eventually(30, ticketed).await, "the freed seat's ticket");

    // A paid seat: reserved, then paid through the payment provider's event.
    let reserved = p.register(&people[3], &event, &paid).await;
    assert_eq!(
        (reserved.status, reserved.body["status"].as_str()),
        (201, Some("RESERVED")),
        "{}",
        reserved.body
    );
    let paid_id = reserved.body["id"].as_str().unwrap().to_string();
    p.broker
        .publish(&[Envelope::new(
            "payment.completed",
            None,
            None,
            json!({"registrationId": paid_id, "amountCents": 50000, "currency": "RUB"}),
        )])
        .await
        .unwrap();
    let path = format!("/api/v1/registrations/{paid_id}");
    assert!(
        eventually(30, || async {
            p.get(&path, &people[3].access).await.body["status"] == "CONFIRMED"
        })
        .await,
        "payment confirms the seat"
    );
    // The receipt and the ticket (the event service's confirmation) come in whichever order
    // they are delivered; the held seat before them unless the confirmation overtook it, and a
    // late welcome may be among them: look for each message, not at positions.
    let texts = || {
        p.telegram
            .delivered_to(chat(3))
            .into_iter()
            .map(|m| (m.text, m.photo.is_some()))
            .collect::<Vec<_>>()
    };
    let receipt = |m: &(String, bool)| m.0.contains("500\\.00 RUB");
    let ticket = |m: &(String, bool)| m.1;
    assert!(
        eventually(30, || async {
            let got = texts();
            got.iter().any(receipt) && got.iter().any(ticket)
        })
        .await,
        "a receipt and the ticket, a QR photo: {:?}",
        texts()
    );
    let got = texts();
    assert_eq!(
        got.iter().filter(|m| ticket(m)).count(),
        1,
        "one ticket: {got:?}"
    );
    assert_eq!(
        got.iter().filter(|m| receipt(m)).count(),
        1,
        "one receipt: {got:?}"
    );
    if let Some(held) = got
        .iter()
        .position(|m| m.0.contains("held until") || m.0.contains("место за вами"))
    {
        assert!(
            held < got.iter().position(ticket).unwrap_or(usize::MAX),
            "a held seat is never announced after its ticket: {got:?}"
        );
    }

    // The door: the moderator checks the first participant in by the code on their ticket, once.
    let code = registrations[0]["confirmationCode"].as_str().unwrap();
    let door = p
        .post(
            &format!("/api/v1/events/{event}/check-in"),
            Some(&moderator.access),
            json!({"confirmationCode": code, "method": "QR_CODE"}),
        )
        .await;
    assert_eq!(
        (door.status, door.body["status"].as_str()),
        (200, Some("CHECKED_IN")),
        "{}",
        door.body
    );
    let again = p
        .post(
            &format!("/api/v1/events/{event}/check-in"),
            Some(&moderator.access),
            json!({"confirmationCode": code}),
        )
        .await;
    assert!(again.status == 409 || again.status == 422, "{}", again.body);

    // /tickets in the bot lists the participant's ticket.
    let before = p.telegram.delivered_to(chat(0)).len();
    p.telegram.says(chat(0), "/tickets");
    let answered = || async {
        p.telegram.delivered_to(chat(0))[before..]
            .iter()
            .any(|m| m.method == "sendMessage" && m.text.contains(code))
    };
    assert!(
        eventually(30, answered).await,
        "the /tickets answer lists the code: {:?}",
        p.telegram.delivered_to(chat(0))
    );

    // The organizer's dashboard counts it all, and the export is a workbook.
    let dashboard = format!("/api/v1/analytics/events/{event}/dashboard");
    let counted = eventually(60, || async {
        let d = p.get(&dashboard, &organizer.access).await.body;
        d["totalViews"] == 4 && d["totalRegistrations"] == 4 && d["checkedIn"] == 1
    })
    .await;
    assert!(
        counted,
        "dashboard: {}",
        p.get(&dashboard, &organizer.access).await.body
    );
    let export = p
        .http
        .post(p.url("/api/v1/analytics/export"))
        .bearer_auth(&organizer.access)
        .json(&json!({"organizationId": org, "dateFrom": (Utc::now() - Duration::days(1)).to_rfc3339(),
                      "dateTo": (Utc::now() + Duration::days(1)).to_rfc3339(), "format": "xlsx"}))
        .send()
        .await
        .unwrap();
    assert_eq!(export.status(), 200);
    assert_eq!(
        export.headers()["content-type"],
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    );
    let bytes = export.bytes().await.unwrap();
    assert!(bytes.starts_with(b"PK"), "an XLSX is a zip");

    Outcome {
        event,
        types: (free, paid),
        organizer,
    }
}

/// After the scenario (and any fault): seat counts match the registrations, nothing is stuck
/// reserved, and no chat got a message twice.
pub async fn audit(p: &Platform, outcome: &Outcome) {
    for ticket_type in [&outcome.types.0, &outcome.types.1] {
        let (sold, reserved, active, holding) =
            storage::events::registrations::seat_audit(&p.db, ticket_type.parse().unwrap())
                .await
                .unwrap();
        assert_eq!(
            (sold as i64, reserved as i64),
            (active, holding),
            "counts equal rows"
        );
    }
    let mut seen = std::collections::HashSet::new();
    for call in p.telegram.sends().iter().filter(|c| c.status == 200) {
        assert!(
            seen.insert((call.chat_id, call.text.clone())),
            "chat {} got the same message twice: {}",
            call.chat_id,
            call.text
        );
    }
}

#[tokio::test]
async fn in_one_process_on_embedded_defaults() {
    let (ctx, telegram) = crate::notifications::with_bot(|_| {}).await;
    let platform = Platform {
        base: ctx.base.clone(),
        db: ctx.t.db.clone(),
        owner_url: ctx.t.url.clone(),
        broker: ctx.broker(),
        telegram,
        http: reqwest::Client::new(),
    };
    let outcome = run(&platform, 11_000).await;
    audit(&platform, &outcome).await;
}
