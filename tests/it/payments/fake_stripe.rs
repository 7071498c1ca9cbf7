//! A fake Stripe served by the test: Checkout Sessions, their expiry and refunds, each request
//! checked as Stripe documents it (Bearer secret key, form encoding, `Idempotency-Key`, amounts
//! as integers in the smallest unit, lower-case currency, `expires_at` 30 minutes to 24 hours
//! ahead), and webhook events signed with the endpoint's secret the way Stripe signs them.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub const SECRET_KEY: &str = "sk_test_51Hc9fakeFAKEfake0123456789";
pub const WEBHOOK_SECRET: &str = "whsec_fake0123456789abcdefFAKEfake";

#[derive(Default)]
struct Account {
    sessions: HashMap<String, Value>,
    session_keys: HashMap<String, String>,
    refunds: HashMap<String, Value>,
    refund_keys: HashMap<String, String>,
    expired: Vec<String>,
    refusals: Vec<String>,
}

type Shared = Arc<Mutex<Account>>;

#[derive(Clone)]
pub struct FakeStripe {
    /// `http://127.0.0.1:port`.
    pub api: String,
    account: Shared,
}

fn refuse(account: &Shared, why: String) -> Response {
    account.lock().unwrap().refusals.push(why.clone());
    (
        StatusCode::BAD_REQUEST,
        axum::Json(json!({"error": {"type": "invalid_request_error", "message": why}})),
    )
        .into_response()
}

fn check(headers: &HeaderMap) -> Result<Option<String>, String> {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if auth != format!("Bearer {SECRET_KEY}") {
        return Err("bad secret key".into());
    }
    let form = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !form.starts_with("application/x-www-form-urlencoded") {
        return Err(format!("content type `{form}`"));
    }
    Ok(headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string))
}

fn form(body: &str) -> HashMap<String, String> {
    form_urlencoded::parse(body.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn require<'a>(f: &'a HashMap<String, String>, name: &str) -> Result<&'a str, String> {
    f.get(name)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| format!("{name} missing"))
}

fn check_session(f: &HashMap<String, String>) -> Result<(i64, String), String> {
    if require(f, "mode")? != "payment" {
        return Err("mode must be payment".into());
    }
    require(f, "success_url")?;
    require(f, "line_items[0][price_data][product_data][name]")?;
    if require(f, "line_items[0][quantity]")? != "1" {
        return Err("quantity 1 expected".into());
    }
    let currency = require(f, "line_items[0][price_data][currency]")?;
    if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_lowercase()) {
        return Err(format!(
            "currency `{currency}` must be three lower-case letters"
        ));
    }
    let amount: i64 = require(f, "line_items[0][price_data][unit_amount]")?
        .parse()
        .map_err(|_| "unit_amount must be an integer".to_string())?;
    if amount <= 0 {
        return Err("unit_amount must be positive".into());
    }
    let expires: i64 = require(f, "expires_at")?
        .parse()
        .map_err(|_| "expires_at must be a timestamp".to_string())?;
    let now = chrono::Utc::now().timestamp();
    if expires < now + 30 * 60 || expires > now + 24 * 3600 {
        return Err("expires_at must be 30 minutes to 24 hours ahead".into());
    }
    require(f, "metadata[registration_id]")?;
    Ok((amount, currency.to_string()))
}

async fn create_session(
    State(account): State<Shared>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let key = match check(&headers) {
        Ok(Some(key)) => key,
        Ok(None) => return refuse(&account, "Idempotency-Key missing".into()),
        Err(why) => return refuse(&account, why),
    };
    let f = form(&body);
    let (amount, currency) = match check_session(&f) {
        Ok(v) => v,
        Err(why) => return refuse(&account, why),
    };
    let mut a = account.lock().unwrap();
    if let Some(id) = a.session_keys.get(&key) {
        return axum::Json(a.sessions[id].clone()).into_response();
    }
    let id = format!("cs_test_{}", uuid::Uuid::new_v4().simple());
    let session = json!({
        "id": id, "object": "checkout.session", "url": format!("https://checkout.stripe.example/c/pay/{id}"),
        "status": "open", "payment_status": "unpaid", "payment_intent": null,
        "amount_total": amount, "currency": currency,
        "client_reference_id": f.get("client_reference_id"),
        "metadata": {"registration_id": f["metadata[registration_id]"]},
        "customer_email": f.get("customer_email"),
        "expires_at": f["expires_at"].parse::<i64>().unwrap_or(0),
    });
    a.sessions.insert(id.clone(), session.clone());
    a.session_keys.insert(key, id);
    axum::Json(session).into_response()
}

async fn expire_session(
    State(account): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Err(why) = check(&headers) {
        return refuse(&account, why);
    }
    let mut a = account.lock().unwrap();
    let Some(session) = a.sessions.get_mut(&id) else {
        drop(a);
        return refuse(&account, format!("no session {id}"));
    };
    if session["status"] != "open" {
        drop(a);
        return refuse(&account, format!("session {id} is not open"));
    }
    session["status"] = json!("expired");
    let session = session.clone();
    a.expired.push(id);
    axum::Json(session).into_response()
}

async fn create_refund(
    State(account): State<Shared>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let key = match check(&headers) {
        Ok(Some(key)) => key,
        Ok(None) => return refuse(&account, "Idempotency-Key missing".into()),
        Err(why) => return refuse(&account, why),
    };
    let f = form(&body);
    let mut a = account.lock().unwrap();
    if let Some(id) = a.refund_keys.get(&key) {
        return axum::Json(a.refunds[id].clone()).into_response();
    }
    let intent = f.get("payment_intent").cloned().unwrap_or_default();
    let Some(paid) = a
        .sessions
        .values()
        .find(|s| s["payment_intent"] == intent.as_str() && s["payment_status"] == "paid")
        .map(|s| s["amount_total"].as_i64().unwrap_or(0))
    else {
        drop(a);
        return refuse(&account, format!("no paid payment intent `{intent}`"));
    };
    let amount: i64 = f.get("amount").and_then(|a| a.parse().ok()).unwrap_or(paid);
    let refunded: i64 = a
        .refunds
        .values()
        .filter(|r| r["payment_intent"] == intent.as_str())
        .map(|r| r["amount"].as_i64().unwrap_or(0))
        .sum();
    if refunded + amount > paid {
        drop(a);
        return refuse(&account, "more than was paid".into());
    }
    let id = format!("re_{}", uuid::Uuid::new_v4().simple());
    let refund = json!({"id": id, "object": "refund", "amount": amount, "payment_intent": intent,
        "status": "succeeded"});
    a.refunds.insert(id.clone(), refund.clone());
    a.refund_keys.insert(key, id);
    axum::Json(refund).into_response()
}

impl FakeStripe {
    pub async fn start() -> FakeStripe {
        let account: Shared = Arc::default();
        let app = Router::new()
            .route("/v1/checkout/sessions", post(create_session))
            .route("/v1/checkout/sessions/{id}/expire", post(expire_session))
            .route("/v1/refunds", post(create_refund))
            .with_state(account.clone());
        FakeStripe {
            api: crate::support::serve(app).await,
            account,
        }
    }

    /// The one session of `registration`.
    pub fn session_of(&self, registration: &str) -> Value {
        let a = self.account.lock().unwrap();
        let found: Vec<&Value> = a
            .sessions
            .values()
            .filter(|s| s["metadata"]["registration_id"] == registration)
            .collect();
        assert_eq!(found.len(), 1, "sessions of {registration}");
        found[0].clone()
    }

    /// The person pays: the `checkout.session.completed` event Stripe then sends.
    pub fn complete(&self, id: &str) -> Value {
        let mut a = self.account.lock().unwrap();
        let session = a.sessions.get_mut(id).unwrap();
        session["status"] = json!("complete");
        session["payment_status"] = json!("paid");
        session["payment_intent"] = json!(format!("pi_{}", uuid::Uuid::new_v4().simple()));
        event("checkout.session.completed", session.clone())
    }

    pub fn refunds(&self) -> Vec<Value> {
        self.account
            .lock()
            .unwrap()
            .refunds
            .values()
            .cloned()
            .collect()
    }

    pub fn expired(&self) -> Vec<String> {
        self.account.lock().unwrap().expired.clone()
    }

    pub fn refusals(&self) -> Vec<String> {
        self.account.lock().unwrap().refusals.clone()
    }
}

/// A Stripe event of `kind` about `object`.
pub fn event(kind: &str, object: Value) -> Value {
    json!({"id": format!("evt_{}", uuid::Uuid::new_v4().simple()), "object": "event",
           "type": kind, "data": {"object": object}, "livemode": false})
}

/// The `Stripe-Signature` of `body` at unix time `t` with `secret`.
pub fn sign(secret: &str, t: i64, body: &[u8]) -> String {
    domain::events::payments::signature_header(secret.as_bytes(), t, body)
}
