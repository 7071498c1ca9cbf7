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
use crate::broker::{Handler, HandlerError};
use crate::db::{Database, Schema, Scope};
use crate::inbox;
use async_trait::async_trait;
use domain::envelope::Envelope;
use domain::ids::{TenantId, UserId};
use domain::media::Attachment;
use domain::media::attachable::Holder;
use uuid::Uuid;

/// The consumer name (queue `bilet.media`).
pub const CONSUMER: &str = "media";

/// The routing keys it listens to.
pub const PATTERNS: &[&str] = &[
    "event.created",
    "event.cover.changed",
    "event.deleted",
    "organization.updated",
    "organization.deleted",
    "user.updated",
];

/// Keeps attachments in step with the services that own the entities.
pub struct Attachments {
    db: Database,
}

impl Attachments {
    /// A consumer writing through `db`.
    pub fn new(db: Database) -> Attachments {
        Attachments { db }
    }
}

fn uuid_at(event: &Envelope, field: &str) -> Option<Uuid> {
    event.data[field].as_str().and_then(|s| s.parse().ok())
}

#[async_trait]
impl Handler for Attachments {
    async fn handle(&self, event: &Envelope) -> Result<(), HandlerError> {
        // Who owns the entity, and so whose files it may point at.
        let event_tenant = event.tenant_id.map(Holder::Organization);
        let (kind, entity, file, holder) = match event.event_type.as_str() {
            "event.created" | "event.cover.changed" => (
                Attachment::EventCover,
                uuid_at(event, "eventId"),
                uuid_at(event, "coverImageId"),
                event_tenant,
            ),
            "event.deleted" => (
                Attachment::EventCover,
                uuid_at(event, "eventId"),
                None,
                None,
            ),
            "organization.updated" => {
                // An organization's id is its tenant id.
                let org = uuid_at(event, "organizationId");
                (
                    Attachment::OrganizationLogo,
                    org,
                    uuid_at(event, "logoId"),
                    org.map(|o| Holder::Organization(TenantId(o))),
                )
            }
            "organization.deleted" => (
                Attachment::OrganizationLogo,
                uuid_at(event, "organizationId"),
                None,
                None,
            ),
            "user.updated" => {
                let deleted = event.data["deleted"].as_bool() == Some(true);
                let user = uuid_at(event, "userId");
                (
                    Attachment::UserAvatar,
                    user,
                    if deleted {
                        None
                    } else {
                        uuid_at(event, "avatarId")
                    },
                    user.map(|u| Holder::User(UserId(u))),
                )
            }
            _ => return Ok(()),
        };
        let Some(entity) = entity else {
            return Err(format!("{} without the entity id", event.event_type).into());
        };
        // Files of any owner can be named, so the projection writes across tenants.
        let tx = self.db.begin(Scope::system()).await?;
        if !inbox::claim(&tx, Schema::MediaService, CONSUMER, event.id).await? {
            return Ok(());
        }
        // A file without a known holder is attached to nothing; what the entity had before is
        // let go all the same, since it no longer points at it.
        let file = file.and_then(|f| holder.map(|h| (f, h)));
        files::attach(&tx, kind, entity, file, event.occurred_at).await?;
        tx.commit().await?;
        Ok(())
    }
}
