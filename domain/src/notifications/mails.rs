//! Mail that stands in for the messenger: a waiting-list offer holds a seat for a while, so
//! a person without a linked chat (or on a node whose bot is off) gets it by email. Plain
//! text, filled from the same values as the message templates.

use crate::i18n::Lang;
use std::collections::BTreeMap;

/// When a waiting-list offer goes by mail instead of the messenger: only when no message can
/// reach the person, so they get exactly one of the two.
pub fn offer_by_mail(has_chat: bool, bot_on: bool, email: Option<&str>) -> bool {
    !(has_chat && bot_on) && email.is_some_and(|e| !e.trim().is_empty())
}

/// Subject and body of the waiting-list offer, from the `waitlist.available` template's
/// values (`firstName`, `eventTitle`, `eventDate`, `expiresAt`, `eventUrl`).
pub fn waitlist_offer(values: &BTreeMap<String, String>, lang: Lang) -> (String, String) {
    let value = |name: &str| {
        values
            .get(name)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
            .unwrap_or("—")
            .to_string()
    };
    // A title is one line in a subject, whatever was typed into it.
    let title = value("eventTitle").replace(['\r', '\n'], " ");
    let (date, until, url) = (value("eventDate"), value("expiresAt"), value("eventUrl"));
    let name = values
        .get("firstName")
        .map(|n| n.trim())
        .filter(|n| !n.is_empty());
    match lang {
        Lang::Ru => (
            format!("Освободилось место: {title}"),
            format!(
                "{}\n\nОсвободилось место на «{title}» ({date}). Оно ваше до {until}: зарегистрируйтесь по ссылке, пока срок не истёк:\n{url}\n\nВы получили это письмо, потому что встали в лист ожидания, а чат с ботом bilet не привязан.\n",
                name.map_or("Здравствуйте!".to_string(), |n| format!(
                    "Здравствуйте, {n}!"
                ))
            ),
        ),
        Lang::En => (
            format!("A seat is free: {title}"),
            format!(
                "{}\n\nA seat for \"{title}\" ({date}) is free. It is held for you until {until}: register through this link before then:\n{url}\n\nYou get this mail because you joined the waiting list and have no chat linked with the bilet bot.\n",
                name.map_or("Hello!".to_string(), |n| format!("Hello, {n}!"))
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mail_goes_only_where_no_message_can() {
        let email = Some("ann@example.com");
        assert!(!offer_by_mail(true, true, email), "the chat gets it");
        assert!(offer_by_mail(false, true, email));
        assert!(offer_by_mail(true, false, email), "the bot is off");
        assert!(!offer_by_mail(false, true, None));
        assert!(!offer_by_mail(false, true, Some(" ")));
    }

    #[test]
    fn the_offer_names_the_event_the_deadline_and_the_link() {
        let values: BTreeMap<String, String> = [
            ("firstName", "Ann"),
            ("eventTitle", "Gig\r\nBcc: x@evil"),
            ("eventDate", "1 Dec 2026, 19:00 UTC+10"),
            ("expiresAt", "30 Nov 2026, 19:00 UTC+10"),
            ("eventUrl", "https://bilet.example/api/v1/events/1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let (subject, body) = waitlist_offer(&values, Lang::En);
        assert_eq!(subject, "A seat is free: Gig  Bcc: x@evil");
        assert!(body.starts_with("Hello, Ann!"));
        assert!(body.contains("(1 Dec 2026, 19:00 UTC+10)"));
        assert!(body.contains("until 30 Nov 2026, 19:00 UTC+10"));
        assert!(body.contains("https://bilet.example/api/v1/events/1"));
        let (subject, body) = waitlist_offer(&BTreeMap::new(), Lang::Ru);
        assert_eq!(subject, "Освободилось место: —");
        assert!(body.starts_with("Здравствуйте!\n"));
    }
}
