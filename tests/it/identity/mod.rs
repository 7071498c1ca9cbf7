//! The identity service over HTTP through the gateway, against the real PostgreSQL, the SMTP
//! sink and a test consumer on the broker.

mod accounts;
pub(crate) mod auth;
mod events;
mod groups;
mod organizations;
mod requests;

use crate::support::{Reply, TestDb, send};
use async_trait::async_trait;
use bilet::node::{self, Node};
use chrono::Utc;
use domain::clock::ManualClock;
use domain::config::Service;
use domain::envelope::Envelope;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use storage::broker::{Handler, HandlerError, Subscription};

pub const BOT_TOKEN: &str = "123456:TEST-BOT-TOKEN";
pub const PASSWORD: &str = "correct-horse-1";

/// Every event seen on the broker.
#[derive(Default)]
pub struct Recorder(Mutex<Vec<Envelope>>);

#[async_trait]
impl Handler for Recorder {
    async fn handle(&self, event: &Envelope) -> Result<(), HandlerError> {
        self.0.lock().unwrap().push(event.clone());
        Ok(())
    }
}

impl Recorder {
    pub fn of(&self, kind: &str) -> Vec<Envelope> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.event_type == kind)
            .cloned()
            .collect()
    }
}

/// A signed-in user.
#[derive(Clone, Debug)]
pub struct Session {
    pub access: String,
    pub refresh: String,
    pub user_id: String,
    pub email: String,
}

/// A node with a manual clock, a recorder on the broker and an HTTP client.
pub struct Ctx {
    pub t: TestDb,
    _node: Node,
    pub base: String,
    pub clock: Arc<ManualClock>,
    pub events: Arc<Recorder>,
    pub http: reqwest::Client,
}

impl Ctx {
    pub async fn new() -> Ctx {
        Ctx::with_broker(None).await
    }

    pub async fn with_broker(amqp: Option<(String, String)>) -> Ctx {
        Ctx::build(amqp, |_| {}).await
    }

    /// A context whose node configuration `tweak` adjusts.
    pub async fn with_config(tweak: impl FnOnce(&mut domain::config::Config)) -> Ctx {
        Ctx::build(None, tweak).await
    }

    async fn build(
        amqp: Option<(String, String)>,
        tweak: impl FnOnce(&mut domain::config::Config),
    ) -> Ctx {
        let t = TestDb::new().await;
        let mut config = t.config.clone();
        config.auth.bcrypt_cost = 4;
        config.messenger.bot_token = Some(domain::config::Secret::new(BOT_TOKEN));
        config.messenger.bot_username = "bilet_test_bot".into();
        config.smtp.url = std::env::var("SMTP_URL").ok();
        // No test reaches the real Bot API; notification tests point this at a fake one.
        config.messenger.api_url = "http://127.0.0.1:9".into();
        if let Some((url, exchange)) = amqp {
            config.broker.url = url;
            config.broker.exchange = exchange;
        }
        tweak(&mut config);
        let clock = Arc::new(ManualClock::new(Utc::now()));
        let node = node::start_with_clock(config, clock.clone()).await.unwrap();
        let events = Arc::new(Recorder::default());
        node.state
            .broker
            .subscribe(Subscription {
                consumer: format!("test-recorder-{}", uuid::Uuid::now_v7().simple()),
                patterns: vec!["#".into()],
                handler: events.clone(),
            })
            .await
            .unwrap();
        let base = format!("http://{}", node.addrs[&Service::Gateway]);
        Ctx {
            t,
            _node: node,
            base,
            clock,
            events,
            http: reqwest::Client::new(),
        }
    }

    /// The node's configuration.
    pub fn config(&self) -> domain::config::Config {
        (*self._node.state.config).clone()
    }

    /// Stops the node cleanly and hands back its database.
    pub async fn stop(self) -> TestDb {
        self._node.stop().await;
        self.t
    }

    /// The node's analytics store.
    pub fn analytics_store(&self) -> analytics::store::Store {
        self._node
            .state
            .analytics
            .as_ref()
            .map(|a| a.store.clone())
            .expect("the test node runs the analytics service")
    }

    /// The node's notification consumer, to hand events to directly (bot on or off as the
    /// node's).
    pub fn notifier(&self) -> messenger::consumers::Notifier {
        let state = &self._node.state;
        let parts = state
            .notifications
            .as_ref()
            .expect("the test node runs the notification service");
        messenger::consumers::Notifier::new(
            parts.queue.clone(),
            parts.telegram.is_on(),
            &state.config.http.public_url,
            state.mailer.clone(),
            state.clock.clone(),
        )
    }

    /// The node's ticketing actors.
    pub fn ticketing(&self) -> std::sync::Arc<actors::ticketing::Ticketing> {
        self._node.state.ticketing.clone()
    }

    /// Runs the reminder sweep now, at the test clock's time, for the shards the node holds;
    /// returns how many reminders went out.
    pub async fn remind_due(&self) -> usize {
        use domain::clock::Clock;
        let fence = self.ticketing().ownership().fence();
        storage::events::catalog::remind_due(&self.t.db, &fence, self.clock.now())
            .await
            .unwrap()
    }

    /// The address of one of the node's services (`http://127.0.0.1:port`).
    pub fn service_url(&self, service: Service) -> String {
        format!("http://{}", self._node.addrs[&service])
    }

    /// The node's broker, to publish events other services would.
    pub fn broker(&self) -> std::sync::Arc<dyn storage::broker::Broker> {
        self._node.state.broker.clone()
    }

    fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
    ) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("Accept-Language", "en");
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        req
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Reply {
        send(self.request(reqwest::Method::GET, path, token)).await
    }

    pub async fn post(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        send(self.request(reqwest::Method::POST, path, token).json(&body)).await
    }

    pub async fn post_empty(&self, path: &str, token: Option<&str>) -> Reply {
        send(self.request(reqwest::Method::POST, path, token)).await
    }

    pub async fn put(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        send(self.request(reqwest::Method::PUT, path, token).json(&body)).await
    }

    pub async fn delete(&self, path: &str, token: Option<&str>) -> Reply {
        send(self.request(reqwest::Method::DELETE, path, token)).await
    }

    pub async fn register(&self, email: &str) -> Reply {
        self.post(
            "/api/v1/auth/register",
            None,
            json!({"email": email, "password": PASSWORD, "firstName": "Test", "lastName": "User"}),
        )
        .await
    }

    pub async fn login(&self, email: &str, password: &str) -> Reply {
        self.post(
            "/api/v1/auth/login",
            None,
            json!({"email": email, "password": password}),
        )
        .await
    }

    /// Registers a fresh user and signs in.
    pub async fn user(&self) -> Session {
        let email = format!("u{}@example.com", uuid::Uuid::now_v7().simple());
        assert_eq!(self.register(&email).await.status, 201);
        let reply = self.login(&email, PASSWORD).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        session(&reply.body, &email)
    }

    /// A platform administrator.
    pub async fn admin(&self) -> Session {
        let s = self.user().await;
        storage::identity::admins::grant(&self.t.db, &s.email)
            .await
            .unwrap();
        s
    }

    /// A user owning a new organization, with a token switched into it.
    pub async fn owner(&self, admin: &Session) -> (Session, String) {
        let mut owner = self.user().await;
        let slug = format!("org-{}", &uuid::Uuid::now_v7().simple().to_string()[20..]);
        let request = self
            .post(
                "/api/v1/organization-requests",
                Some(&owner.access),
                json!({"name": "Org", "slug": slug}),
            )
            .await;
        assert_eq!(request.status, 201, "{}", request.body);
        let id = request.body["id"].as_str().unwrap().to_string();
        let approved = self
            .post_empty(
                &format!("/api/v1/organization-requests/{id}/approve"),
                Some(&admin.access),
            )
            .await;
        assert_eq!(approved.status, 200, "{}", approved.body);
        let org = self
            .post_empty("/api/v1/organizations", Some(&owner.access))
            .await;
        assert_eq!(org.status, 201, "{}", org.body);
        let org_id = org.body["id"].as_str().unwrap().to_string();
        owner.access = self.switch(&owner, &org_id).await;
        (owner, org_id)
    }

    pub async fn switch(&self, s: &Session, org: &str) -> String {
        let reply = self
            .post_empty(
                &format!("/api/v1/organizations/{org}/switch"),
                Some(&s.access),
            )
            .await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.body["accessToken"].as_str().unwrap().to_string()
    }

    /// A user who joined `org` as a moderator through an invite.
    pub async fn moderator(&self, owner: &Session, org: &str) -> Session {
        let invite = self
            .post_empty(
                &format!("/api/v1/organizations/{org}/invite"),
                Some(&owner.access),
            )
            .await;
        assert_eq!(invite.status, 201, "{}", invite.body);
        let mut m = self.user().await;
        let code = invite.body["inviteCode"].as_str().unwrap();
        let joined = self
            .post_empty(
                &format!("/api/v1/organizations/join/{code}"),
                Some(&m.access),
            )
            .await;
        assert_eq!(joined.status, 200, "{}", joined.body);
        m.access = self.switch(&m, org).await;
        m
    }
}

pub fn session(body: &Value, email: &str) -> Session {
    Session {
        access: body["accessToken"].as_str().unwrap().to_string(),
        refresh: body["refreshToken"].as_str().unwrap().to_string(),
        user_id: body["user"]["id"].as_str().unwrap().to_string(),
        email: email.to_string(),
    }
}

/// The claims of a JWT, read without checking it.
pub fn claims(token: &str) -> Value {
    use base64::Engine;
    let payload = token.split('.').nth(1).unwrap();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap()
}

/// The newest mail sent to `to`, from the SMTP sink's Maildir or the file mailer.
pub async fn mail_to(ctx: &Ctx, to: &str) -> Option<String> {
    let dirs = mail_dirs(&ctx.t.config.data_dir);
    let found = crate::support::eventually(10, || {
        let dirs = dirs.clone();
        async move { dirs.iter().any(|d| find_mail(d, to).is_some()) }
    })
    .await;
    if !found {
        return None;
    }
    dirs.iter().find_map(|d| find_mail(d, to))
}

/// Every mail sent to `to` so far by a node using `data_dir`, oldest first, from the file
/// mailer's folder and the SMTP sink's Maildir.
pub fn mails_to(data_dir: &std::path::Path, to: &str) -> Vec<String> {
    let mut all: Vec<_> = mail_dirs(data_dir)
        .iter()
        .flat_map(|d| mails_in(d, to))
        .collect();
    all.sort_by_key(|(modified, _)| *modified);
    all.into_iter().map(|(_, text)| text).collect()
}

fn mail_dirs(data_dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut dirs = vec![data_dir.join("mail")];
    if let Ok(maildir) = std::env::var("TEST_MAILDIR") {
        dirs.push(std::path::Path::new(&maildir).join("new"));
        dirs.push(std::path::Path::new(&maildir).join("cur"));
    }
    dirs
}

fn find_mail(dir: &std::path::Path, to: &str) -> Option<String> {
    mails_in(dir, to)
        .into_iter()
        .max_by_key(|(modified, _)| *modified)
        .map(|(_, text)| text)
}

fn mails_in(dir: &std::path::Path, to: &str) -> Vec<(std::time::SystemTime, String)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        let text = decode_quoted_printable(&text);
        if text
            .lines()
            .any(|l| l.to_ascii_lowercase().starts_with("to:") && l.contains(to))
        {
            let Ok(modified) = entry.metadata().and_then(|m| m.modified()) else {
                continue;
            };
            found.push((modified, text));
        }
    }
    found
}

/// The token after `token=` in a mail.
pub fn token_in(mail: &str) -> String {
    let start = mail.find("token=").expect("a link with a token") + "token=".len();
    mail[start..start + 36].to_string()
}

/// The link in a mail.
pub fn link_in(mail: &str) -> String {
    let start = mail.find("http").expect("a link");
    mail[start..].split_whitespace().next().unwrap().to_string()
}

/// Decodes a quoted-printable body, as a mail client would (soft breaks and `=XX` bytes).
fn decode_quoted_printable(text: &str) -> String {
    let joined = text.replace("=\r\n", "").replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'='
            && i + 2 < bytes.len()
            && let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
