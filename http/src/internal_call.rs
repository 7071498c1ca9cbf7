//! One service asking another's `/internal/` route when they run in different processes:
//! a GET signed as the calling service, over one client shared by the process so connections
//! are reused. The callers decide what a failure means for their own request (usually 503
//! naming the service that could not be asked).

use crate::state::AppState;
use crate::trust::Trust;
use axum::http::{HeaderMap, Method};
use domain::config::Service;
use serde::de::DeserializeOwned;
use std::sync::OnceLock;
use std::time::Duration;

fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(1))
            .build()
            .unwrap_or_default()
    })
}

/// GETs `path_and_query` of `service` signed as `caller`, within `timeout`: its JSON answer,
/// `None` for 404, or why there is no answer (unreachable, refused, failing, unreadable).
pub async fn get<T: DeserializeOwned>(
    state: &AppState,
    service: Service,
    caller: Service,
    path_and_query: &str,
    timeout: Duration,
) -> Result<Option<T>, String> {
    let base = state
        .config
        .services
        .get(&service)
        .map(|addr| addr.url.trim_end_matches('/'))
        .ok_or_else(|| {
            format!(
                "no address of the {} service in the configuration",
                service.name()
            )
        })?;
    let url = reqwest::Url::parse(&format!("{base}{path_and_query}")).map_err(|e| e.to_string())?;
    let mut headers = HeaderMap::new();
    Trust::from_config(&state.config).sign(caller, &Method::GET, &url, &mut headers);
    let reply = client()
        .get(url)
        .headers(headers)
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if reply.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !reply.status().is_success() {
        return Err(format!("{} answered {}", service.name(), reply.status()));
    }
    reply.json().await.map(Some).map_err(|e| e.to_string())
}
