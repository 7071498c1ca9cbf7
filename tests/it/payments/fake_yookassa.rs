//! A fake YooKassa (API v3) served by the test: it checks every request the way YooKassa
//! documents it (Basic auth shopId:secretKey, `Idempotence-Key`, amounts as strings with two
//! decimals, `capture`, a redirect confirmation with its return URL, a description of at most
//! 128 characters, receipts with the customer and one item) and keeps payments and refunds
//! by their keys, as YooKassa does. Whatever it refuses is kept in `refusals`.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const SHOP: &str = "506751";
pub const KEY: &str = "test_Fh8hUAVVBGUGbjmlzba6TB0iyUbos_lueTHE-axOwM0";

#[derive(Default)]
struct Shop {
    payments: HashMap<String, Value>,
    payment_keys: HashMap<String, String>,
    refunds: HashMap<String, Value>,
    refund_keys: HashMap<String, String>,
    /// Every request for a refund, with its key.
    refund_requests: Vec<String>,
    refusals: Vec<String>,
    /// Answer a payment's creation only after this long (it is made first).
    delay: Duration,
    /// Answer a refund's creation only after this long (it is made first).
    refund_delay: Duration,
}

#[derive(Clone)]
pub struct FakeYooKassa {
    /// `http://127.0.0.1:port/v3`.
    pub api: String,
    shop: Arc<Mutex<Shop>>,
}

type Shared = Arc<Mutex<Shop>>;

fn error(status: StatusCode, code: &str, description: &str) -> Response {
    (
        status,
        axum::Json(json!({"type": "error", "code": code, "description": description})),
    )
        .into_response()
}

fn refuse(shop: &Shared, status: StatusCode, why: String) -> Response {
    shop.lock().unwrap().refusals.push(why.clone());
    error(status, "invalid_request", &why)
}

fn authorized(headers: &HeaderMap) -> bool {
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{SHOP}:{KEY}"))
    );
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == expected)
}

fn money_ok(amount: &Value) -> Result<(), String> {
    let value = amount["value"]
        .as_str()
        .ok_or("amount.value must be a string")?;
    let (units, cents) = value
        .split_once('.')
        .ok_or("amount.value needs two decimals")?;
    if units.is_empty()
        || !units.bytes().all(|b| b.is_ascii_digit())
        || cents.len() != 2
        || !cents.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(format!("amount.value `{value}` is not 0.00"));
    }
    let currency = amount["currency"]
        .as_str()
        .ok_or("amount.currency missing")?;
    if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(format!("amount.currency `{currency}`"));
    }
    Ok(())
}

fn key(headers: &HeaderMap) -> Result<String, String> {
    let key = headers
        .get("idempotence-key")
        .and_then(|v| v.to_str().ok())
        .ok_or("Idempotence-Key missing")?;
    if key.is_empty() || key.len() > 64 {
        return Err("Idempotence-Key must be 1 to 64 characters".into());
    }
    Ok(key.to_string())
}

fn check_payment(body: &Value) -> Result<(), String> {
    money_ok(&body["amount"])?;
    if body["capture"] != true {
        return Err("capture must be true".into());
    }
    if body["confirmation"]["type"] != "redirect" {
        return Err("confirmation.type must be redirect".into());
    }
    if body["confirmation"]["return_url"]
        .as_str()
        .is_none_or(str::is_empty)
    {
        return Err("confirmation.return_url missing".into());
    }
    let description = body["description"].as_str().unwrap_or("");
    if description.is_empty() || description.chars().count() > 128 {
        return Err("description must be 1 to 128 characters".into());
    }
    if let Some(receipt) = body.get("receipt") {
        if receipt["customer"]["email"]
            .as_str()
            .is_none_or(str::is_empty)
        {
            return Err("receipt.customer.email missing".into());
        }
        let items = receipt["items"].as_array().ok_or("receipt.items missing")?;
        if items.len() != 1 {
            return Err("one item expected".into());
        }
        let item = &items[0];
        money_ok(&item["amount"])?;
        if item["amount"] != body["amount"] {
            return Err("the item's amount must be the payment's".into());
        }
        for field in [
            "description",
            "quantity",
            "vat_code",
            "payment_mode",
            "payment_subject",
        ] {
            if item.get(field).is_none() {
                return Err(format!("receipt item {field} missing"));
            }
        }
    }
    Ok(())
}

/// What every creating call must bring: the shop's credentials, an idempotency key and a JSON
/// body that `check` finds right. The key and body, or the status and reason to refuse with.
fn creating(
    headers: &HeaderMap,
    body: &str,
    check: fn(&Value) -> Result<(), String>,
) -> Result<(String, Value), (StatusCode, String)> {
    if !authorized(headers) {
        return Err((StatusCode::UNAUTHORIZED, "bad credentials".into()));
    }
    let key = key(headers).map_err(|why| (StatusCode::BAD_REQUEST, why))?;
    let request = serde_json::from_str::<Value>(body)
        .map_err(|_| (StatusCode::BAD_REQUEST, "body is not JSON".to_string()))?;
    check(&request).map_err(|why| (StatusCode::BAD_REQUEST, why))?;
    Ok((key, request))
}

async fn create_payment(State(shop): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let (key, request) = match creating(&headers, &body, check_payment) {
        Ok(checked) => checked,
        Err((status, why)) => return refuse(&shop, status, why),
    };
    let (payment, delay) = {
        let mut s = shop.lock().unwrap();
        let payment = match s.payment_keys.get(&key) {
            Some(id) => s.payments[id].clone(),
            None => {
                let id = uuid::Uuid::new_v4().to_string();
                let payment = json!({
                    "id": id, "status": "pending", "paid": false, "amount": request["amount"],
                    "description": request["description"], "metadata": request["metadata"],
                    "receipt": request.get("receipt"),
                    "confirmation": {"type": "redirect",
                        "confirmation_url": format!("https://yoomoney.example/checkout/{id}")},
                    "created_at": "2026-11-26T10:00:00.000Z", "test": true, "refundable": false,
                });
                s.payments.insert(id.clone(), payment.clone());
                s.payment_keys.insert(key, id);
                payment
            }
        };
        (payment, s.delay)
    };
    tokio::time::sleep(delay).await;
    axum::Json(payment).into_response()
}

async fn get_payment(
    State(shop): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if !authorized(&headers) {
        return refuse(&shop, StatusCode::UNAUTHORIZED, "bad credentials".into());
    }
    match shop.lock().unwrap().payments.get(&id) {
        Some(p) => axum::Json(p.clone()).into_response(),
        None => error(StatusCode::NOT_FOUND, "not_found", "payment not found"),
    }
}

async fn create_refund(State(shop): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let (key, request) = match creating(&headers, &body, |r| money_ok(&r["amount"])) {
        Ok(checked) => checked,
        Err((status, why)) => return refuse(&shop, status, why),
    };
    let (refund, delay) = {
        let mut s = shop.lock().unwrap();
        s.refund_requests.push(key.clone());
        let refund = match s.refund_keys.get(&key) {
            Some(id) => s.refunds[id].clone(),
            None => {
                let payment_id = request["payment_id"].as_str().unwrap_or("").to_string();
                let Some(payment) = s.payments.get(&payment_id) else {
                    drop(s);
                    return refuse(
                        &shop,
                        StatusCode::BAD_REQUEST,
                        format!("no payment {payment_id}"),
                    );
                };
                if payment["status"] != "succeeded" {
                    drop(s);
                    return refuse(
                        &shop,
                        StatusCode::BAD_REQUEST,
                        "the payment has not succeeded".into(),
                    );
                }
                let paid = cents(&payment["amount"]["value"]);
                let refunded: i64 = s
                    .refunds
                    .values()
                    .filter(|r| r["payment_id"] == payment_id.as_str())
                    .map(|r| cents(&r["amount"]["value"]))
                    .sum();
                if refunded + cents(&request["amount"]["value"]) > paid {
                    drop(s);
                    return refuse(&shop, StatusCode::BAD_REQUEST, "more than was paid".into());
                }
                let id = format!("rf-{}", uuid::Uuid::new_v4().simple());
                let refund = json!({"id": id, "payment_id": payment_id, "status": "succeeded",
                    "amount": request["amount"], "created_at": "2026-11-26T10:00:00.000Z"});
                s.refunds.insert(id.clone(), refund.clone());
                s.refund_keys.insert(key, id);
                refund
            }
        };
        (refund, s.refund_delay)
    };
    tokio::time::sleep(delay).await;
    axum::Json(refund).into_response()
}

async fn get_refund(
    State(shop): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if !authorized(&headers) {
        return refuse(&shop, StatusCode::UNAUTHORIZED, "bad credentials".into());
    }
    match shop.lock().unwrap().refunds.get(&id) {
        Some(r) => axum::Json(r.clone()).into_response(),
        None => error(StatusCode::NOT_FOUND, "not_found", "refund not found"),
    }
}

fn cents(value: &Value) -> i64 {
    domain::events::checkout::parse_decimal_amount(value.as_str().unwrap_or("")).unwrap_or(0)
}

impl FakeYooKassa {
    pub async fn start() -> FakeYooKassa {
        let shop: Shared = Arc::default();
        let app = Router::new()
            .route("/v3/payments", post(create_payment))
            .route("/v3/payments/{id}", get(get_payment))
            .route("/v3/refunds", post(create_refund))
            .route("/v3/refunds/{id}", get(get_refund))
            .with_state(shop.clone());
        FakeYooKassa {
            api: format!("{}/v3", crate::support::serve(app).await),
            shop,
        }
    }

    /// The payments made, by id.
    pub fn payments(&self) -> HashMap<String, Value> {
        self.shop.lock().unwrap().payments.clone()
    }

    /// The one payment whose metadata names `registration` (panics on none or several).
    pub fn payment_of(&self, registration: &str) -> Value {
        let found: Vec<Value> = self
            .payments()
            .into_values()
            .filter(|p| p["metadata"]["registration_id"] == registration)
            .collect();
        assert_eq!(found.len(), 1, "payments of {registration}: {found:?}");
        found[0].clone()
    }

    /// The person pays (`amount` as YooKassa would report it, the asked one when None).
    pub fn succeed(&self, id: &str, amount: Option<&str>) {
        let mut s = self.shop.lock().unwrap();
        let p = s.payments.get_mut(id).unwrap();
        p["status"] = json!("succeeded");
        p["paid"] = json!(true);
        if let Some(amount) = amount {
            p["amount"]["value"] = json!(amount);
        }
    }

    /// A payment of this shop that bilet did not open.
    pub fn foreign_payment(&self) -> String {
        self.paid_payment("5.00")
    }

    /// A succeeded payment of `amount` made outside bilet's checkout (tests that write the
    /// checkout themselves).
    pub fn paid_payment(&self, amount: &str) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        self.shop.lock().unwrap().payments.insert(
            id.clone(),
            json!({"id": id, "status": "succeeded", "paid": true,
                   "amount": {"value": amount, "currency": "RUB"}, "metadata": {}}),
        );
        id
    }

    pub fn refunds(&self) -> Vec<Value> {
        self.shop
            .lock()
            .unwrap()
            .refunds
            .values()
            .cloned()
            .collect()
    }

    pub fn refund_requests(&self) -> Vec<String> {
        self.shop.lock().unwrap().refund_requests.clone()
    }

    pub fn refusals(&self) -> Vec<String> {
        self.shop.lock().unwrap().refusals.clone()
    }

    pub fn set_delay(&self, delay: Duration) {
        self.shop.lock().unwrap().delay = delay;
    }

    pub fn set_refund_delay(&self, delay: Duration) {
        self.shop.lock().unwrap().refund_delay = delay;
    }
}
