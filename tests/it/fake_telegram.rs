//! A fake Telegram Bot API served by the test: it records every call, hands out the updates
//! the test queues through getUpdates (long polling), refuses MarkdownV2 that Telegram would
//! refuse, and answers 429 or 500 when told to.

use axum::Router;
use axum::body::Body;
use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// One call the bot made.
#[derive(Clone, Debug)]
pub struct Call {
    /// sendMessage, sendPhoto, getUpdates, ...
    pub method: String,
    /// The chat it was sent to.
    pub chat_id: i64,
    /// Text or caption.
    pub text: String,
    /// parse_mode.
    pub parse_mode: String,
    /// The photo's bytes, for sendPhoto.
    pub photo: Option<Vec<u8>>,
    /// The link buttons under it: (text, url), checked as Telegram checks them (https).
    pub buttons: Vec<(String, String)>,
    /// When it arrived.
    pub at: Instant,
    /// What the fake answered (200, 400, 429, 500).
    pub status: u16,
}

/// A scripted answer to the next send.
#[derive(Clone, Copy, Debug)]
pub enum Trouble {
    /// 429 with this retry_after.
    TooMany(u64),
    /// 500 Internal Server Error.
    ServerError,
}

#[derive(Default)]
struct Inner {
    calls: Mutex<Vec<Call>>,
    updates: Mutex<VecDeque<Value>>,
    next_update: Mutex<i64>,
    arrived: Notify,
    trouble: Mutex<VecDeque<Trouble>>,
}

/// The fake API; its address goes into `messenger.api_url`.
#[derive(Clone)]
pub struct FakeTelegram {
    inner: Arc<Inner>,
    /// `http://127.0.0.1:port`.
    pub url: String,
}

impl FakeTelegram {
    /// Starts the fake on an OS-chosen port.
    pub async fn start() -> FakeTelegram {
        let inner = Arc::new(Inner::default());
        let app = Router::new().fallback(handle).with_state(inner.clone());
        let url = crate::support::serve(app).await;
        FakeTelegram { inner, url }
    }

    /// A user writes `text` to the bot from a private chat `chat` (the user's id too).
    pub fn says(&self, chat: i64, text: &str) {
        let mut id = self.inner.next_update.lock().unwrap();
        *id += 1;
        self.inner.updates.lock().unwrap().push_back(json!({
            "update_id": *id,
            "message": {
                "message_id": *id,
                "date": 1_700_000_000,
                "chat": {"id": chat, "type": "private", "first_name": "Chat"},
                "from": {"id": chat, "is_bot": false, "first_name": "Chat", "language_code": "en"},
                "text": text,
            }
        }));
        self.inner.arrived.notify_waiters();
    }

    /// The next sends get these answers, in order.
    pub fn trouble(&self, answers: &[Trouble]) {
        self.inner
            .trouble
            .lock()
            .unwrap()
            .extend(answers.iter().copied());
    }

    /// Every send (sendMessage and sendPhoto) so far, accepted or not.
    pub fn sends(&self) -> Vec<Call> {
        self.inner
            .calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.method == "sendMessage" || c.method == "sendPhoto")
            .cloned()
            .collect()
    }

    /// How many times `method` was called.
    pub fn count(&self, method: &str) -> usize {
        self.inner
            .calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.method == method)
            .count()
    }

    /// Accepted sends to `chat`.
    pub fn delivered_to(&self, chat: i64) -> Vec<Call> {
        self.sends()
            .into_iter()
            .filter(|c| c.chat_id == chat && c.status == 200)
            .collect()
    }

    /// Waits until `chat` has `n` accepted sends, and returns them.
    pub async fn wait_for(&self, chat: i64, n: usize, seconds: u64) -> Vec<Call> {
        let deadline = Instant::now() + Duration::from_secs(seconds);
        loop {
            let got = self.delivered_to(chat);
            if got.len() >= n || Instant::now() > deadline {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn handle(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let path = request.uri().path().to_string();
    let Some(method) = path.rsplit('/').next().map(str::to_string) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if !path.starts_with("/bot") {
        return StatusCode::NOT_FOUND.into_response();
    }
    // Telegram reads method names case-insensitively (teloxide sends `GetUpdates`).
    let method = match method.to_ascii_lowercase().as_str() {
        "sendmessage" => "sendMessage".to_string(),
        "sendphoto" => "sendPhoto".to_string(),
        "getupdates" => "getUpdates".to_string(),
        "getme" => "getMe".to_string(),
        _ => method,
    };
    match method.as_str() {
        "getUpdates" => get_updates(&inner, request).await,
        "getMe" => ok(
            json!({"id": 1, "is_bot": true, "first_name": "bilet", "username": "bilet_test_bot"}),
        ),
        "sendMessage" | "sendPhoto" => send(&inner, &method, request).await,
        _ => ok(json!(true)),
    }
}

async fn get_updates(inner: &Inner, request: Request) -> Response {
    inner.calls.lock().unwrap().push(Call {
        method: "getUpdates".into(),
        chat_id: 0,
        text: String::new(),
        parse_mode: String::new(),
        photo: None,
        buttons: Vec::new(),
        at: Instant::now(),
        status: 200,
    });
    let bytes = axum::body::to_bytes(request.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    let params: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let offset = params["offset"].as_i64().unwrap_or(0);
    let timeout = params["timeout"].as_u64().unwrap_or(0).min(2);
    let deadline = Instant::now() + Duration::from_secs(timeout);
    loop {
        let notified = inner.arrived.notified();
        {
            let mut queue = inner.updates.lock().unwrap();
            queue.retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
            if !queue.is_empty() {
                return ok(Value::Array(queue.iter().cloned().collect()));
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return ok(json!([]));
        }
        let _ = tokio::time::timeout(left, notified).await;
    }
}

async fn send(inner: &Inner, method: &str, request: Request) -> Response {
    let is_multipart = request
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/"));
    let (chat_id, text, parse_mode, photo, markup) = if is_multipart {
        let mut form = Multipart::from_request(request, &()).await.unwrap();
        let mut fields = std::collections::HashMap::new();
        while let Ok(Some(field)) = form.next_field().await {
            let name = field.name().unwrap_or_default().to_string();
            let bytes = field.bytes().await.unwrap_or_default();
            fields.insert(name, bytes.to_vec());
        }
        let value = |name: &str| {
            fields
                .get(name)
                .map(|b| String::from_utf8_lossy(b).trim_matches('"').to_string())
                .unwrap_or_default()
        };
        // The file travels in its own part, named by `attach://<part>` (or in `photo` itself).
        let photo = match value("photo").strip_prefix("attach://") {
            Some(part) => fields.get(part).cloned(),
            None => fields.get("photo").cloned(),
        };
        let markup = fields
            .get("reply_markup")
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or(Value::Null);
        (
            value("chat_id").parse().unwrap_or(0),
            value("caption"),
            value("parse_mode"),
            photo,
            markup,
        )
    } else {
        let bytes = axum::body::to_bytes(request.into_body(), 1 << 20)
            .await
            .unwrap_or_default();
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (
            body["chat_id"].as_i64().unwrap_or(0),
            body["text"].as_str().unwrap_or_default().to_string(),
            body["parse_mode"].as_str().unwrap_or_default().to_string(),
            None,
            body["reply_markup"].clone(),
        )
    };
    let buttons: Vec<(String, String)> = markup["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .map(|b| {
            (
                b["text"].as_str().unwrap_or_default().to_string(),
                b["url"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    // Telegram refuses a button that does not lead to a public https address.
    let bad_button = buttons
        .iter()
        .any(|(text, url)| text.is_empty() || !url.starts_with("https://"));
    let trouble = inner.trouble.lock().unwrap().pop_front();
    let (status, response) = match trouble {
        Some(Trouble::TooMany(secs)) => (
            429,
            json!({"ok": false, "error_code": 429, "description": format!("Too Many Requests: retry after {secs}"),
                   "parameters": {"retry_after": secs}}),
        ),
        Some(Trouble::ServerError) => (
            500,
            json!({"ok": false, "error_code": 500, "description": "Internal Server Error"}),
        ),
        None if bad_button => (
            400,
            json!({"ok": false, "error_code": 400, "description": "Bad Request: BUTTON_URL_INVALID"}),
        ),
        None => match markdown_v2_error(&text) {
            Some(why) if parse_mode == "MarkdownV2" => (
                400,
                json!({"ok": false, "error_code": 400, "description": format!("Bad Request: can't parse entities: {why}")}),
            ),
            _ => (
                200,
                json!({"ok": true, "result": {
                    "message_id": 1, "date": 1_700_000_000,
                    "chat": {"id": chat_id, "type": "private", "first_name": "Chat"},
                    "text": "ok"
                }}),
            ),
        },
    };
    inner.calls.lock().unwrap().push(Call {
        method: method.to_string(),
        chat_id,
        text,
        parse_mode,
        photo,
        buttons,
        at: Instant::now(),
        status,
    });
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(response.to_string()))
        .unwrap()
}

fn ok(result: Value) -> Response {
    axum::Json(json!({"ok": true, "result": result})).into_response()
}

/// Why Telegram would refuse `text` as MarkdownV2: a reserved character not escaped, or a
/// bold, italic, strike or code span left open.
pub fn markdown_v2_error(text: &str) -> Option<String> {
    const RESERVED: &str = "_*[]()~`>#+-=|{}.!";
    let mut chars = text.chars().peekable();
    let mut open: Vec<char> = Vec::new();
    while let Some(c) = chars.next() {
        let in_code = open.last() == Some(&'`');
        if c == '\\' {
            if chars.next().is_none() {
                return Some("a trailing backslash".into());
            }
            continue;
        }
        if in_code {
            if c == '`' {
                open.pop();
            }
            continue;
        }
        match c {
            '*' | '_' | '~' | '`' => {
                if open.last() == Some(&c) {
                    open.pop();
                } else {
                    open.push(c);
                }
            }
            c if RESERVED.contains(c) => {
                return Some(format!("character '{c}' is reserved and must be escaped"));
            }
            _ => {}
        }
    }
    if let Some(c) = open.pop() {
        return Some(format!("can't find end of the entity starting with '{c}'"));
    }
    None
}

#[test]
fn the_fake_refuses_what_telegram_refuses() {
    assert_eq!(markdown_v2_error("*bold* and `co.de` \\."), None);
    assert!(markdown_v2_error("a.b").is_some());
    assert!(markdown_v2_error("*open").is_some());
    assert!(markdown_v2_error("[x](y)").is_some());
}
