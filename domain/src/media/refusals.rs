//! What the media service tells a client it refuses, in both languages: one variant per
//! situation, with its error code, and the wording of the fields it refuses.

use crate::catalogue::{field_texts, refusals};

refusals! {
    /// A refusal of the media service.
    pub enum MediaRefusal {
        /// The upload is not multipart, or has no field named file.
        NotMultipart => (UnsupportedMediaType,
            "Ожидается multipart/form-data с полем file",
            "Expected multipart/form-data with a field named file"),
        /// The bytes are none of the accepted formats.
        UnsupportedFormat => (UnsupportedMediaType,
            "Поддерживаются JPEG, PNG, WebP, GIF и PDF",
            "Accepted are JPEG, PNG, WebP, GIF and PDF"),
        /// The declared content type says something else than the bytes.
        TypeMismatch => (UnsupportedMediaType,
            "Заявленный тип файла не совпадает с содержимым",
            "The declared type does not match the content"),
        /// A resized variant of a document.
        DocumentHasNoVariants => (BusinessRule,
            "У документов нет вариантов",
            "Documents have no variants"),
        /// A variant that is still being made.
        VariantsNotReady => (Conflict,
            "Варианты ещё готовятся",
            "The variants are not ready yet"),
        /// A signed link past its expiry.
        LinkExpired => (Forbidden,
            "Срок действия ссылки истёк",
            "The link has expired"),
        /// A signed link whose signature does not match.
        LinkAltered => (Forbidden,
            "Ссылка недействительна",
            "The link is not valid"),
        /// A file that may not be attached where it is asked to be.
        NotAttachable => (BusinessRule,
            "Файл нельзя прикрепить: нужно неудалённое изображение, загруженное вами лично (для аватара) или в этой организации (для логотипа и обложки)",
            "The file cannot be attached: it must be an image, not deleted, uploaded by you personally (an avatar) or in this organization (a logo or cover)"),
        /// Another service could not reach the media service to check an attachment.
        Unavailable => (ServiceUnavailable,
            "Сервис файлов временно недоступен, повторите позже",
            "The media service is temporarily unavailable, try again later"),
    }
}

field_texts! {
    /// The wording of a field the media service refuses.
    pub enum MediaFieldText {
        /// The multipart body breaks off or is malformed.
        MultipartUnreadable => (
            "Не удалось прочитать multipart-тело",
            "The multipart body cannot be read"),
        /// A file of zero bytes.
        EmptyFile => (
            "Файл пуст",
            "The file is empty"),
        /// An image too wide, too tall or of too many pixels to decode.
        ImageTooLarge => (
            "Слишком большие размеры изображения",
            "The image dimensions are too large"),
        /// An image that does not decode.
        ImageUnreadable => (
            "Изображение не читается",
            "The image cannot be read"),
        /// A variant name that is not one of the variants.
        UnknownVariant => (
            "Допустимо: ORIGINAL, THUMBNAIL, SMALL, MEDIUM, LARGE",
            "One of ORIGINAL, THUMBNAIL, SMALL, MEDIUM, LARGE"),
        /// An attachment check naming both a user and a tenant, or neither.
        OneHolder => (
            "Нужен ровно один из параметров user и tenant",
            "Exactly one of user and tenant is required"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ErrorCode, Refusal};

    #[test]
    fn every_refusal_is_worded_in_both_languages() {
        crate::catalogue::assert_worded(MediaRefusal::ALL.iter().map(|r| r.text()));
        crate::catalogue::assert_worded(MediaFieldText::ALL.iter().map(|t| t.text()));
    }

    #[test]
    fn refusals_keep_their_codes_and_texts() {
        let expired = Refusal::from(MediaRefusal::LinkExpired);
        assert_eq!(expired.code, ErrorCode::Forbidden);
        assert_eq!(expired.text.map(|t| t.en), Some("The link has expired"));
        assert_eq!(
            MediaRefusal::UnsupportedFormat.code(),
            ErrorCode::UnsupportedMediaType
        );
        assert_eq!(MediaRefusal::VariantsNotReady.code(), ErrorCode::Conflict);
        assert_eq!(
            MediaRefusal::Unavailable.code(),
            ErrorCode::ServiceUnavailable
        );
    }
}
