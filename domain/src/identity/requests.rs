//! Organization requests: PENDING until a platform administrator approves or rejects them.

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
}
