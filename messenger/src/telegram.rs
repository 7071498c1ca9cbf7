//! The messenger: Telegram's Bot API through teloxide-core, at the base URL the configuration
//! names (tests point it at a fake API they serve). Without a token it is off, and every
//! message is recorded as skipped.

use domain::config::MessengerConfig;
use domain::notifications::delivery::Failure;
use std::time::Duration;
use storage::notifications::queue::Button;
use teloxide_core::payloads::{GetUpdatesSetters, SendMessageSetters, SendPhotoSetters};
use teloxide_core::requests::Requester;
use teloxide_core::types::{
    AllowedUpdate, ChatId, InlineKeyboardButton, InlineKeyboardMarkup, InputFile, ParseMode, Update,
};
use teloxide_core::{ApiError, Bot, RequestError};

/// Why the messenger could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// `messenger.api_url` is not a URL.
    #[error("messenger.api_url `{0}` is not a valid URL")]
    ApiUrl(String),
}

/// The Bot API, or nothing when no token is configured.
#[derive(Clone)]
pub enum Telegram {
    /// No token: nothing is sent.
    Off,
    /// A bot with its token and API address.
    Bot(Bot),
}

impl Telegram {
    /// The messenger the configuration describes.
    pub fn from_config(config: &MessengerConfig) -> Result<Telegram, SetupError> {
        let Some(token) = &config.bot_token else {
            return Ok(Telegram::Off);
        };
        let url = reqwest::Url::parse(config.api_url.trim_end_matches('/'))
            .map_err(|_| SetupError::ApiUrl(config.api_url.clone()))?;
        // Long polls hold the connection for the poll timeout; the client waits a little longer.
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(
                u64::from(config.poll_timeout_secs) + 15,
            ))
            .build()
            .unwrap_or_default();
        Ok(Telegram::Bot(
            Bot::with_client(token.expose(), client).set_api_url(url),
        ))
    }

    /// Whether messages can go out at all.
    pub fn is_on(&self) -> bool {
        matches!(self, Telegram::Bot(_))
    }

    /// Sends `text` (MarkdownV2) to `chat`; with `photo`, as the caption of that PNG; with
    /// `button`, a link button under it.
    pub async fn send(
        &self,
        chat: i64,
        text: &str,
        photo: Option<Vec<u8>>,
        button: Option<&Button>,
    ) -> Result<(), Failure> {
        let Telegram::Bot(bot) = self else {
            return Err(Failure::Permanent("bot_disabled".into()));
        };
        let keyboard = match button {
            Some(b) => Some(InlineKeyboardMarkup::new([[InlineKeyboardButton::url(
                b.text.clone(),
                reqwest::Url::parse(&b.url)
                    .map_err(|_| Failure::Permanent("button_url_invalid".into()))?,
            )]])),
            None => None,
        };
        let sent = match (photo, keyboard) {
            (Some(png), keyboard) => {
                let mut request = bot
                    .send_photo(ChatId(chat), InputFile::memory(png).file_name("ticket.png"))
                    .caption(text)
                    .parse_mode(ParseMode::MarkdownV2);
                if let Some(k) = keyboard {
                    request = request.reply_markup(k);
                }
                request.await.map(drop)
            }
            (None, keyboard) => {
                let mut request = bot
                    .send_message(ChatId(chat), text)
                    .parse_mode(ParseMode::MarkdownV2);
                if let Some(k) = keyboard {
                    request = request.reply_markup(k);
                }
                request.await.map(drop)
            }
        };
        sent.map_err(|e| classify(&e))
    }

    /// The updates after `offset`, waiting up to `timeout` seconds for one to arrive.
    pub async fn updates(&self, offset: i32, timeout: u32) -> Result<Vec<Update>, Failure> {
        let Telegram::Bot(bot) = self else {
            return Ok(Vec::new());
        };
        bot.get_updates()
            .offset(offset)
            .timeout(timeout)
            .allowed_updates([AllowedUpdate::Message])
            .await
            .map_err(|e| classify(&e))
    }
}

/// Sorts a Bot API failure into what the send queue does with it.
pub fn classify(error: &RequestError) -> Failure {
    match error {
        RequestError::RetryAfter(wait) => Failure::RetryAfter(wait.duration()),
        RequestError::Network(e) => Failure::Transient(format!("network: {e}")),
        RequestError::Io(e) => Failure::Transient(format!("io: {e}")),
        RequestError::InvalidJson { raw, .. } => Failure::Transient(format!(
            "unreadable answer: {}",
            raw.chars().take(120).collect::<String>()
        )),
        RequestError::Api(ApiError::Unknown(text)) if is_server_trouble(text) => {
            Failure::Transient(text.clone())
        }
        RequestError::Api(api) => Failure::Permanent(api.to_string()),
        RequestError::MigrateToChatId(to) => Failure::Permanent(format!("chat migrated to {to}")),
    }
}

/// Telegram describes its own failures in words; these are worth another try.
fn is_server_trouble(description: &str) -> bool {
    let d = description.to_ascii_lowercase();
    [
        "internal server error",
        "bad gateway",
        "gateway timeout",
        "service unavailable",
        "too many requests",
    ]
    .iter()
    .any(|t| d.contains(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_sorted_for_the_queue() {
        assert_eq!(
            classify(&RequestError::RetryAfter(
                teloxide_core::types::Seconds::from_seconds(3)
            )),
            Failure::RetryAfter(Duration::from_secs(3))
        );
        assert!(matches!(
            classify(&RequestError::Api(ApiError::BotBlocked)),
            Failure::Permanent(_)
        ));
        assert!(matches!(
            classify(&RequestError::Api(ApiError::Unknown(
                "Internal Server Error".into()
            ))),
            Failure::Transient(_)
        ));
        assert!(matches!(
            classify(&RequestError::Api(ApiError::Unknown(
                "Bad Request: odd".into()
            ))),
            Failure::Permanent(_)
        ));
    }
}
