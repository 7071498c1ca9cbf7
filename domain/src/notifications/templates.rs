//! Message templates: Telegram MarkdownV2 text with `{{variable}}` placeholders, in Russian and
//! English. The fixed text is written already escaped; every variable is escaped when it is
//! put in, so no name or title a user typed can open or break formatting.

use super::Kind;
use crate::i18n::Lang;
use std::collections::BTreeMap;

/// The characters MarkdownV2 reserves.
const SPECIAL: &[char] = &[
    '_', '*', '[', ']', '(', ')', '~', '`', '>', '#', '+', '-', '=', '|', '{', '}', '.', '!', '\\',
];

/// Escapes text for MarkdownV2.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if SPECIAL.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The template of `kind` in `lang`.
pub fn text(kind: Kind, lang: Lang) -> &'static str {
    match (kind, lang) {
        (Kind::UserWelcome, Lang::Ru) => {
            "Здравствуйте, {{firstName}}\\! Аккаунт bilet привязан к этому чату\\. Билеты: /tickets"
        }
        (Kind::UserWelcome, Lang::En) => {
            "Hello, {{firstName}}\\! Your bilet account is linked to this chat\\. Tickets: /tickets"
        }
        (Kind::RegistrationConfirmed, Lang::Ru) => {
            "*{{eventTitle}}*\n{{firstName}}, вы зарегистрированы\\.\nКогда: {{eventDate}}\nГде: {{eventLocation}}\nКод: `{{confirmationCode}}`"
        }
        (Kind::RegistrationConfirmed, Lang::En) => {
            "*{{eventTitle}}*\n{{firstName}}, you are registered\\.\nWhen: {{eventDate}}\nWhere: {{eventLocation}}\nCode: `{{confirmationCode}}`"
        }
        (Kind::RegistrationReserved, Lang::Ru) => {
            "*{{eventTitle}}*\n{{firstName}}, место за вами до {{expiresAt}}\\. Оплатите, чтобы подтвердить регистрацию: билет с кодом придёт после оплаты\\.\nКогда: {{eventDate}}\nГде: {{eventLocation}}"
        }
        (Kind::RegistrationReserved, Lang::En) => {
            "*{{eventTitle}}*\n{{firstName}}, your seat is held until {{expiresAt}}\\. Pay to confirm it: the ticket with its code comes once you have paid\\.\nWhen: {{eventDate}}\nWhere: {{eventLocation}}"
        }
        (Kind::RegistrationPending, Lang::Ru) => {
            "*{{eventTitle}}*\n{{firstName}}, место за вами до оплаты\\. Оплатите, чтобы подтвердить регистрацию: билет с кодом придёт после оплаты\\.\nКогда: {{eventDate}}\nГде: {{eventLocation}}"
        }
        (Kind::RegistrationPending, Lang::En) => {
            "*{{eventTitle}}*\n{{firstName}}, your seat is held until you pay\\. Pay to confirm it: the ticket with its code comes once you have paid\\.\nWhen: {{eventDate}}\nWhere: {{eventLocation}}"
        }
        (Kind::RegistrationCancelled, Lang::Ru) => {
            "{{firstName}}, ваша регистрация на *{{eventTitle}}* отменена\\."
        }
        (Kind::RegistrationCancelled, Lang::En) => {
            "{{firstName}}, your registration for *{{eventTitle}}* was cancelled\\."
        }
        (Kind::ReservationExpired, Lang::Ru) => {
            "{{firstName}}, бронь на *{{eventTitle}}* истекла до оплаты, место освобождено\\."
        }
        (Kind::ReservationExpired, Lang::En) => {
            "{{firstName}}, your reservation for *{{eventTitle}}* expired before payment; the seat was released\\."
        }
        (Kind::EventReminder, Lang::Ru) => {
            "*{{eventTitle}}* начнётся {{eventWhen}}\\.\nКогда: {{eventDate}}\nГде: {{eventLocation}}\nКод: `{{confirmationCode}}`"
        }
        (Kind::EventReminder, Lang::En) => {
            "*{{eventTitle}}* starts {{eventWhen}}\\.\nWhen: {{eventDate}}\nWhere: {{eventLocation}}\nCode: `{{confirmationCode}}`"
        }
        (Kind::EventChanged, Lang::Ru) => {
            "*{{eventTitle}}* изменилось\\.\nКогда: {{eventDate}}\nГде: {{eventLocation}}"
        }
        (Kind::EventChanged, Lang::En) => {
            "*{{eventTitle}}* has changed\\.\nWhen: {{eventDate}}\nWhere: {{eventLocation}}"
        }
        (Kind::EventCancelled, Lang::Ru) => "{{firstName}}, событие *{{eventTitle}}* отменено\\.",
        (Kind::EventCancelled, Lang::En) => "{{firstName}}, *{{eventTitle}}* has been cancelled\\.",
        (Kind::WaitlistAvailable, Lang::Ru) => {
            "{{firstName}}, освободилось место на *{{eventTitle}}*\\. Оно ваше до {{expiresAt}}: {{eventUrl}}\nКогда: {{eventDate}}"
        }
        (Kind::WaitlistAvailable, Lang::En) => {
            "{{firstName}}, a seat for *{{eventTitle}}* is free\\. It is held for you until {{expiresAt}}: {{eventUrl}}\nWhen: {{eventDate}}"
        }
        (Kind::PaymentReceipt, Lang::Ru) => {
            "Оплата получена: *{{eventTitle}}*\nСумма: {{amount}}\nКод: `{{confirmationCode}}`"
        }
        (Kind::PaymentReceipt, Lang::En) => {
            "Payment received: *{{eventTitle}}*\nAmount: {{amount}}\nCode: `{{confirmationCode}}`"
        }
        (Kind::PaymentRefund, Lang::Ru) => {
            "{{firstName}}, оплата {{amount}} за *{{eventTitle}}* пришла, когда места уже не было\\. Деньги будут возвращены\\."
        }
        (Kind::PaymentRefund, Lang::En) => {
            "{{firstName}}, your payment of {{amount}} for *{{eventTitle}}* arrived when no seat was left\\. It will be returned\\."
        }
        (Kind::RefundSucceeded, Lang::Ru) => {
            "{{firstName}}, {{amount}} за *{{eventTitle}}* возвращены вам\\."
        }
        (Kind::RefundSucceeded, Lang::En) => {
            "{{firstName}}, {{amount}} for *{{eventTitle}}* has been returned to you\\."
        }
        (Kind::QueueAdmitted, Lang::Ru) => {
            "{{firstName}}, подошла ваша очередь на *{{eventTitle}}*\\! Откройте страницу очереди и зарегистрируйтесь в течение {{minutes}} мин\\.: {{queueUrl}}"
        }
        (Kind::QueueAdmitted, Lang::En) => {
            "{{firstName}}, it is your turn for *{{eventTitle}}*\\! Open the queue page and register within {{minutes}} minutes: {{queueUrl}}"
        }
    }
}

/// The variables a template uses, in order of first use.
pub fn variables(kind: Kind) -> Vec<String> {
    let template = text(kind, Lang::En);
    let mut found = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let name = after[..end].to_string();
        if !found.contains(&name) {
            found.push(name);
        }
        rest = &after[end + 2..];
    }
    found
}

/// Renders a template: each `{{name}}` becomes the escaped value (an absent one becomes "—").
pub fn render(kind: Kind, lang: Lang, values: &BTreeMap<String, String>) -> String {
    let template = text(kind, lang);
    let mut out = String::with_capacity(template.len() + 64);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let name = &after[..end];
        let value = values.get(name).map(String::as_str).unwrap_or("—");
        out.push_str(&escape(value));
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Characters MarkdownV2 reads as formatting that are not escaped, outside code spans.
    fn unescaped_specials(text: &str) -> Vec<char> {
        let mut found = Vec::new();
        let mut chars = text.chars();
        let mut in_code = false;
        while let Some(c) = chars.next() {
            if c == '\\' {
                chars.next();
                continue;
            }
            if c == '`' {
                in_code = !in_code;
                continue;
            }
            if !in_code && SPECIAL.contains(&c) {
                found.push(c);
            }
        }
        found
    }

    #[test]
    fn hostile_names_cannot_break_or_inject_formatting() {
        let hostile = "*Bo_b* [x](http://evil) `rm` ~~ > #1 + - = | {a} . ! \\";
        let values: BTreeMap<String, String> = [
            "firstName",
            "eventTitle",
            "eventDate",
            "eventLocation",
            "eventUrl",
            "confirmationCode",
            "amount",
            "expiresAt",
            "eventWhen",
        ]
        .iter()
        .map(|k| (k.to_string(), hostile.to_string()))
        .collect();
        for kind in Kind::ALL {
            for lang in [Lang::Ru, Lang::En] {
                let rendered = render(kind, lang, &values);
                // Only the template's own bold markers stay unescaped, in pairs.
                let specials = unescaped_specials(&rendered);
                assert!(
                    specials.iter().all(|c| *c == '*'),
                    "{} {lang:?}: {specials:?} in {rendered}",
                    kind.as_str()
                );
                assert_eq!(specials.len() % 2, 0, "{} {lang:?}", kind.as_str());
                assert!(!rendered.contains("{{"), "every placeholder filled");
                assert!(
                    rendered.contains("\\*Bo\\_b\\*")
                        || !variables(kind)
                            .iter()
                            .any(|v| v == "firstName" || v == "eventTitle")
                );
            }
        }
    }

    #[test]
    fn both_languages_use_the_same_variables() {
        for kind in Kind::ALL {
            let names = |lang| {
                let mut v: Vec<&str> = text(kind, lang)
                    .split("{{")
                    .skip(1)
                    .filter_map(|p| p.split("}}").next())
                    .collect();
                v.sort_unstable();
                v
            };
            assert_eq!(names(Lang::Ru), names(Lang::En), "{}", kind.as_str());
            assert!(!variables(kind).is_empty());
        }
    }

    #[test]
    fn messages_awaiting_payment_carry_no_code() {
        let uses = |kind, name: &str| variables(kind).iter().any(|v| v == name);
        for kind in [Kind::RegistrationReserved, Kind::RegistrationPending] {
            assert!(!uses(kind, "confirmationCode"), "{}", kind.as_str());
        }
        assert!(uses(Kind::RegistrationReserved, "expiresAt"));
        assert!(!uses(Kind::RegistrationPending, "expiresAt"));
        assert!(uses(Kind::RegistrationConfirmed, "confirmationCode"));
        assert!(uses(Kind::EventReminder, "eventWhen"));
    }

    #[test]
    fn escaping_marks_every_reserved_character() {
        assert_eq!(escape("a.b!"), "a\\.b\\!");
        assert_eq!(escape("Иван_Петров"), "Иван\\_Петров");
        assert_eq!(escape("plain"), "plain");
    }
}
