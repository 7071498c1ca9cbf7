//! What the bot understands: `/start [payload]`, `/help`, `/tickets`, optionally addressed
//! to the bot (`/help@bilet_bot`), and nothing else.

/// A command a user sent to the bot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `/start` with the deep-link payload, if any: a link token or an invite code.
    Start(Option<String>),
    /// `/help`.
    Help,
    /// `/tickets`.
    Tickets,
    /// Any other text.
    Unknown,
}

/// Longest payload Telegram passes with `/start`.
const MAX_PAYLOAD: usize = 64;

impl Command {
    /// Reads a message text; `bot` is the bot's username, for addressed commands.
    pub fn parse(text: &str, bot: &str) -> Command {
        let text = text.trim();
        let Some(rest) = text.strip_prefix('/') else {
            return Command::Unknown;
        };
        let (head, args) = match rest.split_once(char::is_whitespace) {
            Some((h, a)) => (h, a.trim()),
            None => (rest, ""),
        };
        let name = match head.split_once('@') {
            Some((name, to)) if to.eq_ignore_ascii_case(bot) => name,
            Some(_) => return Command::Unknown,
            None => head,
        };
        match name.to_ascii_lowercase().as_str() {
            "start" => {
                let payload = args.split_whitespace().next().filter(|p| {
                    p.len() <= MAX_PAYLOAD
                        && p.chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                });
                Command::Start(payload.map(str::to_string))
            }
            "help" => Command::Help,
            "tickets" => Command::Tickets,
            _ => Command::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_read_with_and_without_the_bot_name() {
        assert_eq!(
            Command::parse("/start abc-DEF_1", "bilet_bot"),
            Command::Start(Some("abc-DEF_1".into()))
        );
        assert_eq!(Command::parse("/start", "bilet_bot"), Command::Start(None));
        assert_eq!(
            Command::parse("/help@Bilet_Bot", "bilet_bot"),
            Command::Help
        );
        assert_eq!(
            Command::parse("/help@other_bot", "bilet_bot"),
            Command::Unknown
        );
        assert_eq!(Command::parse(" /TICKETS ", "bilet_bot"), Command::Tickets);
        assert_eq!(Command::parse("hello", "bilet_bot"), Command::Unknown);
        assert_eq!(Command::parse("/stop", "bilet_bot"), Command::Unknown);
    }

    #[test]
    fn odd_payloads_are_dropped() {
        assert_eq!(Command::parse("/start <script>", "b"), Command::Start(None));
        assert_eq!(
            Command::parse(&format!("/start {}", "a".repeat(65)), "b"),
            Command::Start(None)
        );
    }
}
