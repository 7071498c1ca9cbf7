//! What the media service learns from other services: which file is an event's cover, an
//! organization's logo or a user's avatar. A file may be all of these at once; it is kept
//! while anything is attached to it, and is the daily cleanup's (24 hours after its upload)
//! once the last attachment lets go. Each event is applied once.
//!
//! The owning services check a file before they accept it, but the rule is checked here again
//! (an event's or organization's file must be of its tenant, an avatar a personal file of the
//! user): an attachment keeps a file alive, so whatever reaches the broker must not be able
//! to take another owner's file over.

use super::files;
use crate::broker::HandlerError;
use crate::db::{Schema, Tx};
use crate::inbox::{Projection, Received};
use async_trait::async_trait;
use domain::contract::{DomainEvent, Kind};
use domain::media::Attachment;
use domain::media::attachable::Holder;

/// Keeps attachments in step with the services that own the entities (consumer `media`).
/// Files of any owner can be named, so it writes across tenants.
pub struct Attachments;

#[async_trait]
impl Projection for Attachments {
    const NAME: &'static str = "media";
    const SCHEMA: Schema = Schema::MediaService;
    const TAKES: &'static [Kind] = &[
        Kind::EventCreated,
        Kind::EventCoverChanged,
        Kind::EventDeleted,
        Kind::OrganizationUpdated,
        Kind::OrganizationDeleted,
        Kind::UserUpdated,
    ];
    type Done = ();

    async fn apply(&self, tx: &Tx, received: &Received<'_>) -> Result<(), HandlerError> {
        // Who owns the entity, and so whose files it may point at.
        let event_tenant = received.envelope.tenant_id.map(Holder::Organization);
        let (kind, entity, file, holder) = match &received.event {
            DomainEvent::EventCreated(e) => (
                Attachment::EventCover,
                e.event_id,
                e.cover_image_id,
                event_tenant,
            ),
            DomainEvent::EventCoverChanged(c) => (
                Attachment::EventCover,
                c.event_id,
                c.cover_image_id,
                event_tenant,
            ),
            DomainEvent::EventDeleted(e) => (Attachment::EventCover, e.event_id, None, None),
            // An organization's id is its tenant id.
            DomainEvent::OrganizationUpdated(o) => (
                Attachment::OrganizationLogo,
                o.organization_id.as_uuid(),
                o.logo_id,
                Some(Holder::Organization(o.organization_id)),
            ),
            DomainEvent::OrganizationDeleted(o) => (
                Attachment::OrganizationLogo,
                o.organization_id.as_uuid(),
                None,
                None,
            ),
            DomainEvent::UserUpdated(u) => (
                Attachment::UserAvatar,
                u.user_id.as_uuid(),
                if u.deleted { None } else { u.avatar_id },
                Some(Holder::User(u.user_id)),
            ),
            _ => return Ok(()),
        };
        // A file without a known holder is attached to nothing; what the entity had before is
        // let go all the same, since it no longer points at it.
        let file = file.and_then(|f| holder.map(|h| (f, h)));
        files::attach(tx, kind, entity, file, received.envelope.occurred_at).await?;
        Ok(())
    }
}
