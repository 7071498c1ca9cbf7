//! What the platform itself (gateway, service trust, proxy, the database's limits) tells a
//! client it refuses, in both languages; each service's own refusals live with the service.

use crate::catalogue::refusals;

refusals! {
    /// A refusal of the platform, not of any one service.
    pub enum PlatformRefusal {
        /// A path that could be read two ways (encoded separators, dot segments, …).
        AmbiguousPath => (ValidationError,
            "Путь запроса неоднозначен",
            "The request path is ambiguous"),
        /// An access token that does not verify or has expired.
        AccessTokenInvalid => (Unauthorized,
            "Токен доступа недействителен или истёк",
            "The access token is invalid or expired"),
        /// A token that verifies but was revoked before its expiry: the member was removed or
        /// their role changed, the account was deleted, or the session ended.
        AccessRevoked => (Unauthorized,
            "Токен доступа отозван: обновите его или войдите заново",
            "The access token was revoked (membership, role, account or session changed): refresh it or sign in again"),
        /// The gateway cannot currently tell whether a token was revoked.
        RevocationsUnknown => (ServiceUnavailable,
            "Не удаётся проверить токен доступа, повторите позже",
            "The access token cannot be checked right now, try again later"),
        /// A request to a service that is not signed by a gateway or another service.
        UnsignedRequest => (Unauthorized,
            "Сервис принимает только запросы, подписанные шлюзом или другим сервисом",
            "This service answers only requests signed by a gateway or another service"),
        /// A gateway's client on a route for services.
        ServicesOnly => (Forbidden,
            "Этот маршрут доступен только сервисам",
            "This route is for services only"),
        /// The service a gateway forwards to does not answer.
        ServiceUnavailable => (ServiceUnavailable,
            "Сервис временно недоступен, повторите позже",
            "The service is temporarily unavailable, try again later"),
        /// A value PostgreSQL cannot store (a NUL byte, a number or date out of range).
        UnstorableValue => (ValidationError,
            "Значение нельзя сохранить: недопустимые символы (например, нулевой байт) или выход за пределы",
            "A value cannot be stored: characters that are not allowed (such as a NUL byte) or out of range"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn every_refusal_is_worded_in_both_languages() {
        crate::catalogue::assert_worded(PlatformRefusal::ALL.iter().map(|r| r.text()));
        assert_eq!(
            PlatformRefusal::AmbiguousPath.code(),
            ErrorCode::ValidationError
        );
        assert_eq!(PlatformRefusal::ServicesOnly.code(), ErrorCode::Forbidden);
    }
}
