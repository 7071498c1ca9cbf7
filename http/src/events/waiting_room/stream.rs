//! Where a visitor stands, pushed as Server-Sent Events: an event `place` (a `PlaceDto`) at
//! once and whenever it changes, `closed` if the room closes. A stream lasts 25 seconds and
//! asks the browser to come back a second later (`retry`): the browser's EventSource does so
//! by itself, each time through any gateway to any node, and no stream outlives the gateway's
//! forwarding timeout.

use super::{Keys, PlaceDto};
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::Path;
use crate::state::AppState;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use chrono::{DateTime, Utc};
use domain::events::waiting_room::PlaceStatus;
use domain::ids::UserId;
use futures_util::stream::{self, Stream};
use std::convert::Infallible;
use std::time::Duration;
use storage::events::catalog;
use storage::events::waiting_room::places::{self, Place};
use tokio::time::Instant;
use uuid::Uuid;

/// How long one stream lasts.
const LIFE: Duration = Duration::from_secs(25);
/// When the browser comes back after a stream ends.
const RETRY: Duration = Duration::from_secs(1);

/// Where the caller stands in the event's waiting room, pushed as it changes (see the module).
#[utoipa::path(get, path = "/api/v1/events/{id}/queue/events", tag = "waiting room",
    responses((status = 200, content_type = "text/event-stream", description = "`place` events, each a PlaceDto"),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn follow(
    State(state): State<AppState>,
    caller: Caller,
    Path(event): Path<Uuid>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let user = caller.require_user()?;
    let seen = catalog::get(&state.db, caller.scope(), event).await?;
    let now = state.clock.now();
    let place = places::of(&state.db, seen.tenant_id, event, user, now).await?;
    let room = state.rooms.follow(&state.db, place.room.clone());
    let follower = Follower {
        state,
        user,
        place,
        room,
        last: None,
        ends: Instant::now() + LIFE,
        first: true,
    };
    let events = stream::unfold(follower, |mut f| async move {
        let event = f.next().await?;
        Some((Ok(event), f))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(10))))
}

/// One visitor's stream.
struct Follower {
    state: AppState,
    user: UserId,
    place: Place,
    room: super::watch::Followed,
    /// The last place sent, as sent.
    last: Option<String>,
    ends: Instant,
    first: bool,
}

impl Follower {
    /// The next event to send, or `None` to end the stream.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if !self.first {
                let changed = tokio::time::timeout_at(self.ends, self.room.changed()).await;
                match changed {
                    // The stream's time is up: the browser comes back.
                    Err(_) => return None,
                    Ok(Err(_)) => return Some(Event::default().event("closed").data("{}")),
                    Ok(Ok(())) => {}
                }
            }
            self.first = false;
            let room = self.room.borrow_and_update().clone();
            let Some(room) = room else {
                return Some(Event::default().event("closed").data("{}"));
            };
            self.place.room = room;
            let now = self.state.clock.now();
            self.stamp_admission(now).await;
            let dto = PlaceDto::of(
                &self.place,
                &Keys::of(&self.state),
                self.user.as_uuid(),
                now,
            );
            let Ok(json) = serde_json::to_string(&dto) else {
                return None;
            };
            if self.last.as_deref() != Some(json.as_str()) {
                self.last = Some(json.clone());
                return Some(Event::default().event("place").retry(RETRY).data(json));
            }
        }
    }

    /// A visitor just let in is told their admission: its clock starts now, so it is stored
    /// (`places::of`), as when they read their place.
    async fn stamp_admission(&mut self, now: DateTime<Utc>) {
        if self.place.status(now) != PlaceStatus::Admitted || self.place.admitted_at.is_some() {
            return;
        }
        let tenant = self.place.room.tenant_id;
        let event = self.place.room.event_id;
        match places::of(&self.state.db, tenant, event, self.user, now).await {
            Ok(place) => self.place = place,
            Err(e) => tracing::warn!(%event, error = %e, "cannot stamp an admission"),
        }
    }
}
