//! What the event service tells a client it refuses, in both languages: one variant per
//! situation, with its error code. Storage and handlers name a variant; the texts live here.

use crate::catalogue::{field_texts, refusals};

refusals! {
    /// A refusal of the event service.
    pub enum EventRefusal {
        /// The group of a private event is not one of the organization's.
        GroupNotInOrganization => (BusinessRule,
            "Группа не найдена в этой организации",
            "No such group in this organization"),
        /// Another event has the slug.
        SlugTaken => (Conflict,
            "Этот адрес (slug) уже занят",
            "This slug is already taken"),
        /// A change would put the end at or before the start.
        EndNotAfterStart => (BusinessRule,
            "Окончание должно быть позже начала",
            "The end must be after the start"),
        /// A published event is deleted without being cancelled first.
        PublishedNotDeletable => (BusinessRule,
            "Опубликованное событие сначала нужно отменить",
            "A published event must be cancelled before it is deleted"),
        /// A cancelled or completed event (or its ticket types) would change.
        FinalState => (BusinessRule,
            "Отменённое или завершённое событие изменить нельзя",
            "A cancelled or completed event cannot be changed"),
        /// Publishing an event that has already started.
        PublishAfterStart => (BusinessRule,
            "Опубликовать можно только событие, которое ещё не началось",
            "Only an event that has not started yet can be published"),
        /// A life-cycle action the current status does not offer.
        ActionUnavailable => (BusinessRule,
            "Это действие недоступно в текущем статусе события",
            "This action is not available in the event's current status"),
        /// Fewer seats than are already sold and reserved.
        QuantityBelowTaken => (BusinessRule,
            "Количество мест не может быть меньше проданных и забронированных",
            "The quantity cannot be lower than the seats sold and reserved"),
        /// The event is not published, so it takes no registrations (nor waiting entries).
        NotTakingRegistrations => (BusinessRule,
            "Событие не принимает регистрации",
            "The event does not take registrations"),
        /// The ticket type is inactive or outside its sales window.
        NotOnSale => (BusinessRule,
            "Продажа этого типа билета закрыта",
            "This ticket type is not on sale now"),
        /// The user already holds an active registration for the event.
        AlreadyRegistered => (Conflict,
            "Вы уже зарегистрированы на это событие",
            "You are already registered for this event"),
        /// Joining the waiting list of a ticket type that still has free seats.
        SeatsStillFree => (BusinessRule,
            "Места ещё есть — зарегистрируйтесь",
            "Seats are still available: register instead"),
        /// Joining a waiting list one is already on.
        AlreadyWaiting => (Conflict,
            "Вы уже в листе ожидания",
            "You are already on the waiting list"),
        /// Checking in a participant a second time.
        AlreadyCheckedIn => (Conflict,
            "Участник уже отмечен на входе",
            "The participant has already checked in"),
        /// A code typed at one event's door that belongs to another event of the organization.
        TicketOfAnotherEvent => (BusinessRule,
            "Это билет на другое событие",
            "This ticket is for another event"),
        /// Checking in a registration that is not confirmed.
        CheckInNotConfirmed => (BusinessRule,
            "Отметить можно только подтверждённую регистрацию",
            "Only a confirmed registration can be checked in"),
        /// A participant cancelling after check-in.
        CheckedInOrganizerOnly => (BusinessRule,
            "После входа регистрацию может отменить только организатор",
            "After check-in only an organizer can cancel the registration"),
        /// Cash for a registration that can get no seat: the organizer still holds the money.
        NoSeatForCash => (BusinessRule,
            "Свободного места для этой регистрации нет: верните деньги участнику",
            "There is no free seat for this registration: give the money back"),
        /// The provider's webhook arrives but no secret is configured to check it.
        PaymentsNotConfigured => (ServiceUnavailable,
            "Приём платежей не настроен",
            "Payments are not configured"),
        /// The provider's webhook signature is missing, stale or wrong.
        PaymentSignatureInvalid => (Unauthorized,
            "Подпись платёжного уведомления недействительна",
            "The payment notification's signature is not valid"),
        /// Paying a registration that does not await payment.
        NotAwaitingPayment => (BusinessRule,
            "Эта регистрация не ожидает оплаты",
            "This registration does not await payment"),
        /// No provider of the installation takes the ticket's currency.
        CurrencyNotSupported => (BusinessRule,
            "Оплата в этой валюте не принимается",
            "Payments in this currency are not accepted"),
        /// The payment provider did not answer in time or failed; the same request may be sent again.
        PaymentProviderUnavailable => (ServiceUnavailable,
            "Платёжная система не отвечает, попробуйте ещё раз",
            "The payment provider does not answer; try again"),
        /// The payment provider refused the payment or refund as asked.
        PaymentProviderRefused => (BusinessRule,
            "Платёжная система отклонила запрос",
            "The payment provider refused the request"),
        /// A refund of a registration nothing was paid for.
        NothingToRefund => (BusinessRule,
            "По этой регистрации нечего возвращать",
            "Nothing was paid for this registration"),
        /// A refund of a registration already refunded (or being refunded).
        AlreadyRefunded => (Conflict,
            "Возврат по этой регистрации уже оформлен",
            "This registration is already refunded"),
        /// An organization's provider keys cannot be stored: the installation has no key to seal them.
        CredentialsKeyMissing => (ServiceUnavailable,
            "Хранение ключей платёжных систем не настроено",
            "Storing payment provider keys is not configured"),
        /// A failed refund is retried, but this one has not failed.
        RefundNotFailed => (BusinessRule,
            "Повторить можно только неудавшийся возврат",
            "Only a failed refund can be retried"),
        /// A copy moved so far that its end or a sales window would leave the years 1 to 9999.
        CopyPastCalendar => (BusinessRule,
            "Даты копии вышли бы за пределы 1–9999 годов",
            "The copy's dates would fall outside the years 1 to 9999"),
        /// A ticket's PDF or wallet pass asked for a registration that is not confirmed (a
        /// reservation still to pay, a cancelled or a used ticket).
        TicketNotConfirmed => (Conflict,
            "Билет доступен только для подтверждённой регистрации",
            "The ticket is available for a confirmed registration only"),
        /// A wallet pass of a kind the installation has no signing keys for.
        WalletNotConfigured => (NotFound,
            "Карты для этого кошелька не выпускаются: ключи подписи не настроены",
            "Passes for this wallet are not issued: no signing keys are configured"),
        /// A seat asked for while the event's waiting room is on, without an admission.
        AdmissionRequired => (Forbidden,
            "Регистрация идёт через очередь: дождитесь своей очереди",
            "Registration is through the waiting room: wait for your turn"),
        /// An admission whose signature does not match what it says (made up or changed).
        AdmissionForged => (Forbidden,
            "Пропуск из очереди недействителен",
            "The waiting-room admission is not valid"),
        /// An admission past its time.
        AdmissionExpired => (Forbidden,
            "Время пропуска из очереди истекло: встаньте в очередь снова",
            "The waiting-room admission has expired: join the queue again"),
        /// An admission given to another account.
        AdmissionOfAnotherAccount => (Forbidden,
            "Этот пропуск из очереди выдан другому участнику",
            "This waiting-room admission was given to another account"),
        /// An admission for another event.
        AdmissionOfAnotherEvent => (Forbidden,
            "Этот пропуск из очереди выдан на другое событие",
            "This waiting-room admission is for another event"),
        /// Joining, reading or leaving the queue of an event without a waiting room.
        NoWaitingRoom => (NotFound,
            "У этого события нет очереди",
            "This event has no waiting room"),
        /// Reading or leaving a queue one holds no place in.
        NoPlaceInQueue => (NotFound,
            "Вы не стоите в этой очереди",
            "You hold no place in this queue"),
        /// Moving the on-sale time of a room whose sale has opened.
        OnSaleOpened => (BusinessRule,
            "Продажа через очередь уже открылась: время начала не изменить",
            "The sale has opened: its start can no longer move"),
    }
}

field_texts! {
    /// The wording of a field the event service refuses.
    pub enum EventFieldText {
        /// A currency that is not three capital letters.
        CurrencyCode => (
            "Код валюты ISO 4217 из трёх заглавных букв",
            "An ISO 4217 code of three capital letters"),
        /// A ticket type that is not one of the event's.
        NoSuchTicketType => (
            "Такого типа билета у события нет",
            "The event has no such ticket type"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ErrorCode, Refusal};
    use crate::validation::FieldError;

    #[test]
    fn every_refusal_is_worded_in_both_languages() {
        crate::catalogue::assert_worded(EventRefusal::ALL.iter().map(|r| r.text()));
        crate::catalogue::assert_worded(EventFieldText::ALL.iter().map(|t| t.text()));
    }

    #[test]
    fn refusals_keep_their_codes_and_texts() {
        let slug = Refusal::from(EventRefusal::SlugTaken);
        assert_eq!(slug.code, ErrorCode::Conflict);
        assert_eq!(slug.text.map(|t| t.en), Some("This slug is already taken"));
        assert_eq!(EventRefusal::FinalState.code(), ErrorCode::BusinessRule);
        assert_eq!(EventRefusal::AlreadyWaiting.code(), ErrorCode::Conflict);
        assert_eq!(
            EventRefusal::PaymentSignatureInvalid.code(),
            ErrorCode::Unauthorized
        );
        assert_eq!(
            EventRefusal::PaymentsNotConfigured.code(),
            ErrorCode::ServiceUnavailable
        );
    }

    #[test]
    fn field_texts_become_field_errors() {
        assert_eq!(
            FieldError::from(EventFieldText::CurrencyCode),
            FieldError::Invalid(EventFieldText::CurrencyCode.text())
        );
    }
}
