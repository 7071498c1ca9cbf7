//! Accepting an organization or group invite from the bot, through the identity service's
//! own HTTP API (this service never touches identity's tables). The call goes to the
//! identity service directly with the user header, signed as the notification service's
//! (`domain::trust`), since identity answers nothing unsigned.

use domain::ids::UserId;
use std::time::Duration;

/// What accepting an invite code did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Accepted {
    /// Joined the organization or group of this name.
    Joined(String),
    /// The code exists but cannot be used by this person now (expired, used, member already).
    Refused,
    /// No invite has this code.
    Unknown,
}

/// The identity service's invite endpoints.
#[derive(Clone)]
pub struct Invites {
    http: reqwest::Client,
    base: String,
    secret: std::sync::Arc<[u8]>,
}

impl Invites {
    /// Invites accepted at the identity service listening at `base_url`, signed with the
    /// cluster's service secret.
    pub fn new(base_url: &str, secret: &[u8]) -> Invites {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        Invites {
            http,
            base: base_url.trim_end_matches('/').to_string(),
            secret: secret.into(),
        }
    }

    /// Accepts `code` for `user`: an organization invite if one has that code, else a group's.
    pub async fn accept(&self, user: UserId, code: &str) -> Result<Accepted, String> {
        for kind in ["organizations", "groups"] {
            let url = reqwest::Url::parse(&format!("{}/api/v1/{kind}/join/{code}", self.base))
                .map_err(|e| format!("no usable identity address: {e}"))?;
            let target = match url.query() {
                Some(query) => format!("{}?{query}", url.path()),
                None => url.path().to_string(),
            };
            let user_id = user.to_string();
            let assertion = domain::trust::sign(
                &self.secret,
                domain::config::Service::Notifications,
                chrono::Utc::now().timestamp(),
                &domain::trust::Request {
                    method: "POST",
                    target: &target,
                    user: &user_id,
                    ..Default::default()
                },
            );
            let response = self
                .http
                .post(url)
                .header("x-user-id", user_id)
                .header(domain::trust::HEADER, assertion)
                .header("accept-language", "en")
                .send()
                .await
                .map_err(|e| format!("identity unreachable: {e}"))?;
            let status = response.status();
            if status.is_success() {
                let body: serde_json::Value = response
                    .json()
                    .await
                    .map_err(|e| format!("identity answered oddly: {e}"))?;
                let name = body["name"].as_str().unwrap_or_default().to_string();
                return Ok(Accepted::Joined(name));
            }
            match status.as_u16() {
                404 => continue,
                400..=499 => return Ok(Accepted::Refused),
                _ => return Err(format!("identity answered {status}")),
            }
        }
        Ok(Accepted::Unknown)
    }
}
