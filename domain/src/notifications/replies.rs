//! What the bot answers to commands, in MarkdownV2 (fixed text pre-escaped, values escaped
//! with `templates::escape`).

use super::templates::escape;
use crate::i18n::Lang;

/// An answer of the bot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `/help` and a bare `/start`.
    Help,
    /// A link token that was used before.
    LinkUsed,
    /// A link token that expired.
    LinkExpired,
    /// A payload that is neither a link token nor an invite code.
    UnknownCode,
    /// An invite code sent from a chat not linked to an account yet.
    LinkFirst,
    /// An invite accepted: the organization or group joined, by name.
    Joined(String),
    /// An invite that cannot be accepted (expired, used, or meant for someone else).
    InviteRefused,
    /// `/tickets` from a chat not linked to an account.
    TicketsNeedLink,
    /// `/tickets` with nothing ahead.
    NoTickets,
    /// `/tickets`: one line per upcoming ticket (title, date, code).
    Tickets(Vec<(String, String, String)>),
    /// Text that is not a command.
    NotUnderstood,
    /// Something on our side failed; the user may try again.
    TryLater,
}

/// How many tickets one `/tickets` answer lists.
pub const TICKETS_SHOWN: usize = 20;

impl Reply {
    /// The MarkdownV2 text of the answer in `lang`.
    pub fn text(&self, lang: Lang) -> String {
        let ru = lang == Lang::Ru;
        match self {
            Reply::Help => if ru {
                "Это бот bilet\\.\n/start — привязать чат: откройте ссылку из профиля на сайте\n/tickets — ваши ближайшие билеты и коды\n/help — эта справка"
            } else {
                "This is the bilet bot\\.\n/start — link this chat: open the link from your profile on the site\n/tickets — your upcoming tickets and codes\n/help — this help"
            }
            .into(),
            Reply::LinkUsed => pick(ru, "Эта ссылка уже использована\\. Получите новую в профиле\\.", "This link was already used\\. Get a new one from your profile\\."),
            Reply::LinkExpired => pick(ru, "Срок действия ссылки истёк\\. Получите новую в профиле\\.", "This link has expired\\. Get a new one from your profile\\."),
            Reply::UnknownCode => pick(ru, "Ссылка или приглашение не найдены\\.", "This link or invite was not found\\."),
            Reply::LinkFirst => pick(ru, "Сначала привяжите чат к аккаунту: откройте ссылку из профиля на сайте, затем снова откройте приглашение\\.", "Link this chat to your account first: open the link from your profile on the site, then open the invite again\\."),
            Reply::Joined(name) => if ru {
                format!("Приглашение принято: *{}*\\.", escape(name))
            } else {
                format!("Invite accepted: *{}*\\.", escape(name))
            },
            Reply::InviteRefused => pick(ru, "Это приглашение нельзя принять: оно истекло, уже использовано или предназначено другому\\.", "This invite cannot be accepted: it expired, was used, or is meant for someone else\\."),
            Reply::TicketsNeedLink => pick(ru, "Чат не привязан к аккаунту\\. Откройте ссылку из профиля на сайте\\.", "This chat is not linked to an account\\. Open the link from your profile on the site\\."),
            Reply::NoTickets => pick(ru, "Предстоящих билетов нет\\.", "You have no upcoming tickets\\."),
            Reply::Tickets(lines) => {
                let mut out = pick(ru, "Ваши билеты:", "Your tickets:");
                for (title, date, code) in lines.iter().take(TICKETS_SHOWN) {
                    out.push_str(&format!("\n\n*{}*\n{}\n`{}`", escape(title), escape(date), escape(code)));
                }
                out
            }
            Reply::NotUnderstood => pick(ru, "Не понял\\. Команды: /tickets, /help", "Sorry, I did not get that\\. Commands: /tickets, /help"),
            Reply::TryLater => pick(ru, "Не получилось, попробуйте чуть позже\\.", "Something went wrong, please try again a little later\\."),
        }
    }
}

fn pick(ru: bool, ru_text: &str, en_text: &str) -> String {
    if ru { ru_text } else { en_text }.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_in_replies_are_escaped() {
        let joined = Reply::Joined("*Club_1* [x](y)".into()).text(Lang::En);
        assert_eq!(
            joined,
            "Invite accepted: *\\*Club\\_1\\* \\[x\\]\\(y\\)*\\."
        );
        let list =
            Reply::Tickets(vec![("A.B".into(), "1 Dec".into(), "K7M2".into())]).text(Lang::Ru);
        assert!(
            list.contains("*A\\.B*") && list.contains("`K7M2`"),
            "{list}"
        );
    }
}
