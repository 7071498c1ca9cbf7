//! The two mails the platform sends: address verification and password reset.

use crate::i18n::Lang;

/// Subject and body of the verification mail.
pub fn verification(lang: Lang, link: &str) -> (String, String) {
    match lang {
        Lang::Ru => (
            "Подтвердите адрес электронной почты".into(),
            format!(
                "Здравствуйте!\n\nЧтобы подтвердить адрес, откройте ссылку (действует 24 часа):\n{link}\n\nЕсли вы не регистрировались в bilet, просто удалите это письмо.\n"
            ),
        ),
        Lang::En => (
            "Confirm your email address".into(),
            format!(
                "Hello!\n\nTo confirm your address, open this link (valid for 24 hours):\n{link}\n\nIf you did not sign up for bilet, just delete this message.\n"
            ),
        ),
    }
}

/// Subject and body of the password reset mail.
pub fn password_reset(lang: Lang, link: &str) -> (String, String) {
    match lang {
        Lang::Ru => (
            "Сброс пароля".into(),
            format!(
                "Здравствуйте!\n\nЧтобы задать новый пароль, откройте ссылку (действует 1 час):\n{link}\n\nЕсли вы не запрашивали сброс, ничего делать не нужно.\n"
            ),
        ),
        Lang::En => (
            "Password reset".into(),
            format!(
                "Hello!\n\nTo choose a new password, open this link (valid for 1 hour):\n{link}\n\nIf you did not ask for a reset, there is nothing to do.\n"
            ),
        ),
    }
}
