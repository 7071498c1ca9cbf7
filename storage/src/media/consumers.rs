//! What the media service learns from other services: which file is an event's cover, an
//! organization's logo or a user's avatar. Attached files are kept; the others are the daily
//! cleanup's after 24 hours. Each event is applied once.

use super::files;
use crate::broker::{Handler, HandlerError};
use crate::db::{Database, Schema, Scope};
use crate::inbox;
use async_trait::async_trait;
use domain::envelope::Envelope;
use domain::media::Attachment;
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
        let (kind, entity, file) = match event.event_type.as_str() {
            "event.created" | "event.cover.changed" => (
                Attachment::EventCover,
                uuid_at(event, "eventId"),
                uuid_at(event, "coverImageId"),
            ),
            "event.deleted" => (Attachment::EventCover, uuid_at(event, "eventId"), None),
            "organization.updated" => (
                Attachment::OrganizationLogo,
                uuid_at(event, "organizationId"),
                uuid_at(event, "logoId"),
            ),
            "organization.deleted" => (
                Attachment::OrganizationLogo,
                uuid_at(event, "organizationId"),
                None,
            ),
            "user.updated" => {
                let deleted = event.data["deleted"].as_bool() == Some(true);
                (
                    Attachment::UserAvatar,
                    uuid_at(event, "userId"),
                    if deleted {
                        None
                    } else {
                        uuid_at(event, "avatarId")
                    },
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
        files::attach(&tx, kind, entity, file).await?;
        tx.commit().await?;
        Ok(())
    }
}
