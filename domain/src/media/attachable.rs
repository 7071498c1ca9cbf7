//! What may be attached to what. A file is shown by whatever points at it and kept alive by
//! that attachment, so only its owner may point at it: a user's avatar must be a personal file
//! of that user (uploaded outside any organization), an organization's logo or an event's
//! cover a file of that organization. Only finished images count, never a PDF, an upload still
//! in flight or a deleted file.

use super::MediaStatus;
use crate::ids::{TenantId, UserId};

/// Whom an attachment would belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// A user, for their avatar.
    User(UserId),
    /// An organization, for its logo and its events' covers.
    Organization(TenantId),
}

/// What the rule needs to know of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate<'a> {
    /// The organization it was uploaded in, if any.
    pub tenant: Option<TenantId>,
    /// Who uploaded it.
    pub owner: UserId,
    /// Its sniffed MIME type.
    pub content_type: &'a str,
    /// Where it is in its life.
    pub status: MediaStatus,
}

/// Whether `file` may be attached to something `holder` owns.
pub fn may_attach(file: &Candidate<'_>, holder: Holder) -> bool {
    // Stored content types are the sniffed ones, so the prefix is the format's kind.
    let usable = file.content_type.starts_with("image/")
        && matches!(file.status, MediaStatus::Processing | MediaStatus::Ready);
    let owned = match holder {
        Holder::User(user) => file.tenant.is_none() && file.owner == user,
        Holder::Organization(tenant) => file.tenant == Some(tenant),
    };
    usable && owned
}

#[cfg(test)]
mod tests {
    use super::*;

    fn personal(owner: UserId) -> Candidate<'static> {
        Candidate {
            tenant: None,
            owner,
            content_type: "image/png",
            status: MediaStatus::Ready,
        }
    }

    #[test]
    fn an_avatar_is_a_personal_image_of_the_same_user() {
        let user = UserId::new();
        assert!(may_attach(&personal(user), Holder::User(user)));
        assert!(!may_attach(&personal(UserId::new()), Holder::User(user)));
        // Uploaded by the user, but inside an organization: the organization's file.
        let in_org = Candidate {
            tenant: Some(TenantId::new()),
            ..personal(user)
        };
        assert!(!may_attach(&in_org, Holder::User(user)));
    }

    #[test]
    fn a_logo_or_cover_is_an_image_of_the_same_organization() {
        let org = TenantId::new();
        let uploader = UserId::new();
        let file = Candidate {
            tenant: Some(org),
            ..personal(uploader)
        };
        assert!(may_attach(&file, Holder::Organization(org)));
        assert!(!may_attach(&file, Holder::Organization(TenantId::new())));
        assert!(
            !may_attach(&personal(uploader), Holder::Organization(org)),
            "a personal file is no organization's"
        );
    }

    #[test]
    fn only_finished_images_that_are_not_deleted() {
        let user = UserId::new();
        let with = |content_type, status| Candidate {
            content_type,
            status,
            ..personal(user)
        };
        assert!(may_attach(
            &with("image/jpeg", MediaStatus::Processing),
            Holder::User(user)
        ));
        assert!(!may_attach(
            &with("application/pdf", MediaStatus::Ready),
            Holder::User(user)
        ));
        assert!(!may_attach(
            &with("image/png", MediaStatus::Deleted),
            Holder::User(user)
        ));
        assert!(!may_attach(
            &with("image/png", MediaStatus::Uploading),
            Holder::User(user)
        ));
    }
}
