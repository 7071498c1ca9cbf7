//! Organization requests: PENDING until a platform administrator approves or rejects them,
//! and the one rule that says whether a slug is free for a requester.

use super::refusals::IdentityRefusal;
use crate::ids::UserId;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// Status of an organization request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum RequestStatus {
    /// Awaiting review.
    Pending,
    /// Approved; the requester may create the organization.
    Approved,
    /// Rejected with a reason.
    Rejected,
}

/// A review decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Review {
    /// Approve.
    Approve,
    /// Reject.
    Reject,
}

impl RequestStatus {
    /// Database and wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "PENDING",
            Self::Approved => "APPROVED",
            Self::Rejected => "REJECTED",
        }
    }

    /// The state after a review, or None when the request was already reviewed: only a
    /// PENDING request can be approved or rejected, and a decision is final.
    pub fn review(self, review: Review) -> Option<RequestStatus> {
        match (self, review) {
            (Self::Pending, Review::Approve) => Some(Self::Approved),
            (Self::Pending, Review::Reject) => Some(Self::Rejected),
            _ => None,
        }
    }
}

/// A request naming the slug, as far as the slug rule cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlugClaim {
    /// Requester.
    pub user_id: UserId,
    /// State.
    pub status: RequestStatus,
    /// Until when an approved request keeps the slug.
    pub reserved_until: Option<DateTime<Utc>>,
    /// Whether an organization was created from it (that organization then holds the slug
    /// while it lives).
    pub used: bool,
}

/// Everything known about who holds a slug.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlugFacts {
    /// An organization that is not deleted uses it.
    pub live_organization: bool,
    /// Every request naming it.
    pub claims: Vec<SlugClaim>,
}

/// Why a slug is not free for a requester.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlugHolder {
    /// A live organization uses it.
    Organization,
    /// Another user's request for it awaits review.
    PendingRequest,
    /// Another user's approved request keeps it until then.
    Reservation(DateTime<Utc>),
}

impl From<SlugHolder> for IdentityRefusal {
    fn from(holder: SlugHolder) -> IdentityRefusal {
        match holder {
            SlugHolder::Organization => IdentityRefusal::SlugTaken,
            SlugHolder::PendingRequest => IdentityRefusal::SlugRequested,
            SlugHolder::Reservation(_) => IdentityRefusal::SlugReserved,
        }
    }
}

/// Who keeps `requester` from the slug at `now`, or None when it is free for them: a live
/// organization, another user's pending request, or another user's approved request whose
/// 7-day reservation runs and from which nothing was created yet. The requester's own
/// requests never hold it against them; a deleted organization and a lapsed reservation hold
/// it for nobody. Submission, approval and creation all ask this, so a slug is free at one
/// step exactly when it would be at the others.
pub fn slug_holder(facts: &SlugFacts, requester: UserId, now: DateTime<Utc>) -> Option<SlugHolder> {
    if facts.live_organization {
        return Some(SlugHolder::Organization);
    }
    let others = facts.claims.iter().filter(|c| c.user_id != requester);
    let mut holder = None;
    for claim in others {
        match (claim.status, claim.reserved_until) {
            (RequestStatus::Pending, _) => return Some(SlugHolder::PendingRequest),
            (RequestStatus::Approved, Some(until)) if !claim.used && until > now => {
                holder = Some(SlugHolder::Reservation(until));
            }
            _ => {}
        }
    }
    holder
}

impl FromStr for RequestStatus {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "PENDING" => Ok(Self::Pending),
            "APPROVED" => Ok(Self::Approved),
            "REJECTED" => Ok(Self::Rejected),
            _ => Err(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pending_requests_are_reviewed() {
        assert_eq!(
            RequestStatus::Pending.review(Review::Approve),
            Some(RequestStatus::Approved)
        );
        assert_eq!(
            RequestStatus::Pending.review(Review::Reject),
            Some(RequestStatus::Rejected)
        );
        assert_eq!(RequestStatus::Approved.review(Review::Reject), None);
        assert_eq!(RequestStatus::Rejected.review(Review::Approve), None);
        assert_eq!("APPROVED".parse(), Ok(RequestStatus::Approved));
    }

    fn at(hours: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + hours * 3600, 0).unwrap()
    }

    fn claim(user: UserId, status: RequestStatus, until: Option<i64>, used: bool) -> SlugClaim {
        SlugClaim {
            user_id: user,
            status,
            reserved_until: until.map(at),
            used,
        }
    }

    fn facts(claims: Vec<SlugClaim>) -> SlugFacts {
        SlugFacts {
            live_organization: false,
            claims,
        }
    }

    #[test]
    fn a_slug_nobody_holds_is_free() {
        assert_eq!(
            slug_holder(&SlugFacts::default(), UserId::new(), at(0)),
            None
        );
        let rejected = claim(UserId::new(), RequestStatus::Rejected, None, false);
        assert_eq!(
            slug_holder(&facts(vec![rejected]), UserId::new(), at(0)),
            None
        );
    }

    #[test]
    fn a_live_organization_holds_it_against_everyone() {
        let a = UserId::new();
        let mut f = facts(vec![claim(a, RequestStatus::Approved, Some(100), true)]);
        f.live_organization = true;
        assert_eq!(slug_holder(&f, a, at(0)), Some(SlugHolder::Organization));
        assert_eq!(
            slug_holder(&f, UserId::new(), at(0)),
            Some(SlugHolder::Organization)
        );
        // Deleted: the request it came from no longer holds the slug either.
        f.live_organization = false;
        assert_eq!(slug_holder(&f, UserId::new(), at(0)), None);
    }

    #[test]
    fn another_users_pending_request_holds_it() {
        let (a, b) = (UserId::new(), UserId::new());
        let f = facts(vec![claim(a, RequestStatus::Pending, None, false)]);
        assert_eq!(slug_holder(&f, b, at(0)), Some(SlugHolder::PendingRequest));
        assert_eq!(
            slug_holder(&f, a, at(0)),
            None,
            "not against its own requester"
        );
    }

    #[test]
    fn an_approval_holds_it_for_seven_days_then_lapses() {
        let (a, b) = (UserId::new(), UserId::new());
        let f = facts(vec![claim(a, RequestStatus::Approved, Some(168), false)]);
        assert_eq!(
            slug_holder(&f, b, at(167)),
            Some(SlugHolder::Reservation(at(168)))
        );
        assert_eq!(slug_holder(&f, a, at(167)), None, "the requester's own");
        assert_eq!(slug_holder(&f, b, at(168)), None, "lapsed at its end");
        assert_eq!(slug_holder(&f, b, at(500)), None);
    }

    #[test]
    fn the_a_b_story() {
        // A's approval lapsed, B asked for the slug and got approved: B holds it, and A's
        // old approval no longer lets A create with it.
        let (a, b) = (UserId::new(), UserId::new());
        let mut f = facts(vec![
            claim(a, RequestStatus::Approved, Some(168), false),
            claim(b, RequestStatus::Pending, None, false),
        ]);
        assert_eq!(
            slug_holder(&f, a, at(200)),
            Some(SlugHolder::PendingRequest)
        );
        f.claims[1] = claim(b, RequestStatus::Approved, Some(368), false);
        assert_eq!(
            slug_holder(&f, a, at(200)),
            Some(SlugHolder::Reservation(at(368)))
        );
        assert_eq!(slug_holder(&f, b, at(200)), None, "B may create");
        // A pending request outranks a reservation in the answer, whatever the order.
        f.claims
            .push(claim(UserId::new(), RequestStatus::Pending, None, false));
        assert_eq!(
            slug_holder(&f, a, at(200)),
            Some(SlugHolder::PendingRequest)
        );
    }

    #[test]
    fn every_holder_is_refused_with_its_own_conflict() {
        use crate::error::ErrorCode;
        for (holder, refusal) in [
            (SlugHolder::Organization, IdentityRefusal::SlugTaken),
            (SlugHolder::PendingRequest, IdentityRefusal::SlugRequested),
            (
                SlugHolder::Reservation(at(1)),
                IdentityRefusal::SlugReserved,
            ),
        ] {
            assert_eq!(IdentityRefusal::from(holder), refusal);
            assert_eq!(
                crate::error::Refusal::from(refusal).code,
                ErrorCode::Conflict
            );
        }
    }
}
