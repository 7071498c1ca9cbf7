//! What the identity service tells a client it refuses, in both languages: one variant per
//! situation, with its error code. Storage and handlers name a variant; the texts live here.

use crate::catalogue::refusals;

refusals! {
    /// A refusal of the identity service.
    pub enum IdentityRefusal {
        /// Registering an email that an account (a deleted one too) already has.
        EmailTaken => (Conflict,
            "Пользователь с таким email уже существует",
            "A user with this email already exists"),
        /// Signing in to a deleted account.
        AccountDeleted => (Unauthorized,
            "Учётная запись удалена",
            "This account was deleted"),
        /// Signing in to an account a platform administrator blocked.
        AccountBlocked => (Forbidden,
            "Учётная запись заблокирована администратором платформы",
            "This account was blocked by a platform administrator"),
        /// Deleting one's account while still owning organizations.
        OwnsOrganizations => (BusinessRule,
            "Сначала удалите организации, которыми вы владеете",
            "Delete the organizations you own first"),
        /// A refresh token that is unknown, revoked or expired.
        RefreshTokenInvalid => (Unauthorized,
            "Токен обновления недействителен или истёк",
            "The refresh token is invalid or expired"),
        /// A mailed link (verification, password reset) that cannot be used.
        MailLinkUnusable => (BusinessRule,
            "Ссылка недействительна, уже использована или истекла",
            "The link is invalid, already used or expired"),
        /// Too many mails of one kind to one address within the window.
        TooManyMails => (RateLimitExceeded,
            "Слишком много писем на этот адрес, повторите через час",
            "Too many mails to this address, try again in an hour"),
        /// Messenger sign-in without a bot configured.
        MessengerNotConfigured => (ServiceUnavailable,
            "Вход через мессенджер не настроен",
            "Messenger sign-in is not configured"),
        /// Messenger sign-in data older than allowed.
        MessengerDataStale => (Unauthorized,
            "Данные входа устарели, войдите снова",
            "The sign-in data is too old, sign in again"),
        /// Messenger sign-in data whose signature does not check out.
        MessengerSignatureInvalid => (Unauthorized,
            "Подпись данных входа неверна",
            "The sign-in data signature is invalid"),
        /// An organization (or a request for one) names a slug a live organization uses.
        SlugTaken => (Conflict,
            "Этот адрес (slug) уже занят организацией",
            "This slug is already used by an organization"),
        /// The slug is asked for in another user's request awaiting review.
        SlugRequested => (Conflict,
            "Этот адрес (slug) уже запрошен в другой заявке, ожидающей рассмотрения",
            "This slug is asked for in another request awaiting review"),
        /// The slug is kept for another user's approved request (7 days from approval).
        SlugReserved => (Conflict,
            "Этот адрес (slug) закреплён за другой одобренной заявкой",
            "This slug is reserved for another approved request"),
        /// A second organization request while one is pending.
        RequestPending => (BusinessRule,
            "У вас уже есть заявка на рассмотрении",
            "You already have a pending request"),
        /// Reviewing a request that was already reviewed.
        RequestReviewed => (BusinessRule,
            "Заявка уже рассмотрена",
            "The request has already been reviewed"),
        /// Creating an organization without an approved request.
        NoApprovedRequest => (BusinessRule,
            "Нет одобренной заявки на создание организации",
            "There is no approved organization request to create from"),
        /// Accepting an invite that was already used.
        InviteUsed => (BusinessRule,
            "Приглашение уже использовано",
            "The invite was already used"),
        /// Accepting an invite after its expiry.
        InviteExpired => (BusinessRule,
            "Срок действия приглашения истёк",
            "The invite has expired"),
        /// Joining an organization one is already a member of.
        AlreadyMember => (Conflict,
            "Вы уже состоите в этой организации",
            "You are already a member of this organization"),
        /// Joining a group one is already a member of.
        AlreadyInGroup => (Conflict,
            "Вы уже состоите в этой группе",
            "You are already a member of this group"),
        /// Changing the owner's role or removing the owner.
        OwnerIsFixed => (BusinessRule,
            "Роль владельца нельзя изменить, а владельца нельзя удалить",
            "The owner's role cannot be changed and the owner cannot be removed"),
        /// Making a second owner.
        OneOwner => (BusinessRule,
            "В организации может быть только один владелец",
            "An organization has exactly one owner"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ErrorCode, Refusal};

    #[test]
    fn every_refusal_is_worded_in_both_languages() {
        crate::catalogue::assert_worded(IdentityRefusal::ALL.iter().map(|r| r.text()));
    }

    #[test]
    fn refusals_keep_their_codes_and_texts() {
        let taken = Refusal::from(IdentityRefusal::EmailTaken);
        assert_eq!(taken.code, ErrorCode::Conflict);
        assert_eq!(
            taken.text.map(|t| t.ru),
            Some("Пользователь с таким email уже существует")
        );
        assert_eq!(
            IdentityRefusal::AccountDeleted.code(),
            ErrorCode::Unauthorized
        );
        assert_eq!(
            IdentityRefusal::TooManyMails.code(),
            ErrorCode::RateLimitExceeded
        );
        assert_eq!(
            IdentityRefusal::OwnsOrganizations.code(),
            ErrorCode::BusinessRule
        );
    }
}
