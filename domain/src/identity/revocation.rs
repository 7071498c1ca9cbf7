//! Which access tokens have been revoked before their expiry. The gateway keeps the recent
//! revocations (one access-token lifetime of them) in a [`Revocations`] set and asks it about
//! every token it accepts; older ones concern tokens that have expired anyway.

use super::tokens::Claims;
use crate::ids::UserId;
use chrono::{DateTime, Duration, Utc};
use std::collections::HashMap;
use uuid::Uuid;

/// What a revocation ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Revoked {
    /// Every token of the user issued below this access version (a membership, role or the
    /// account changed).
    Below(i64),
    /// Every token of this session (logout, a reused refresh token, a session pushed out).
    Session(Uuid),
}

/// One recorded revocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revocation {
    /// Whose tokens.
    pub user: UserId,
    /// Which of them.
    pub revoked: Revoked,
    /// When it was recorded.
    pub at: DateTime<Utc>,
}

/// How far back a reader looks again at each read: a revocation is inserted before its
/// transaction commits, so a later-inserted one may be seen first; applying one twice is
/// harmless.
pub fn overlap() -> Duration {
    Duration::seconds(10)
}

/// How long a revocation must be remembered: a token issued just before it lives this long,
/// plus the leeway the gateway grants on expiry.
pub fn memory() -> Duration {
    super::limits::access_token_ttl() + Duration::minutes(1)
}

/// The revocations of the last token lifetime, by user and by session.
#[derive(Debug, Default)]
pub struct Revocations {
    versions: HashMap<UserId, (i64, DateTime<Utc>)>,
    sessions: HashMap<Uuid, DateTime<Utc>>,
}

impl Revocations {
    /// Adds revocations read from the log, in any order and any number of times.
    pub fn apply(&mut self, revocations: &[Revocation]) {
        for r in revocations {
            match r.revoked {
                Revoked::Below(version) => {
                    let entry = self.versions.entry(r.user).or_insert((version, r.at));
                    if version >= entry.0 {
                        *entry = (version, r.at);
                    }
                }
                Revoked::Session(session) => {
                    self.sessions.insert(session, r.at);
                }
            }
        }
    }

    /// Forgets revocations recorded before `before`: every token they could end has expired.
    pub fn forget_before(&mut self, before: DateTime<Utc>) {
        self.versions.retain(|_, (_, at)| *at >= before);
        self.sessions.retain(|_, at| *at >= before);
    }

    /// Whether a token with these (verified) claims is still good.
    pub fn allows(&self, claims: &Claims) -> bool {
        if let Some(session) = claims.sid
            && self.sessions.contains_key(&session)
        {
            return false;
        }
        match self.versions.get(&claims.sub) {
            Some((version, _)) => claims.ver >= *version,
            None => true,
        }
    }

    /// Users and sessions remembered.
    pub fn len(&self) -> usize {
        self.versions.len() + self.sessions.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(user: UserId, ver: i64, sid: Option<Uuid>) -> Claims {
        Claims {
            sub: user,
            email: None,
            tenant_id: None,
            roles: vec![],
            exp: 0,
            iat: 0,
            sid,
            ver,
        }
    }

    fn at(minute: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + Duration::minutes(minute)
    }

    #[test]
    fn a_version_bump_ends_older_tokens_of_that_user_only() {
        let (alice, bob) = (UserId::new(), UserId::new());
        let mut set = Revocations::default();
        set.apply(&[Revocation {
            user: alice,
            revoked: Revoked::Below(3),
            at: at(0),
        }]);
        assert!(!set.allows(&claims(alice, 2, None)));
        assert!(
            !set.allows(&claims(alice, 0, None)),
            "tokens without a version"
        );
        assert!(
            set.allows(&claims(alice, 3, None)),
            "issued after the change"
        );
        assert!(set.allows(&claims(bob, 0, None)));
    }

    #[test]
    fn an_ended_session_ends_its_tokens_only() {
        let user = UserId::new();
        let (ended, other) = (Uuid::new_v4(), Uuid::new_v4());
        let mut set = Revocations::default();
        set.apply(&[Revocation {
            user,
            revoked: Revoked::Session(ended),
            at: at(0),
        }]);
        assert!(!set.allows(&claims(user, 0, Some(ended))));
        assert!(set.allows(&claims(user, 0, Some(other))));
        assert!(set.allows(&claims(user, 0, None)));
    }

    #[test]
    fn versions_only_rise_whatever_the_order_of_reading() {
        let user = UserId::new();
        let mut set = Revocations::default();
        let bump = |minute, v| Revocation {
            user,
            revoked: Revoked::Below(v),
            at: at(minute),
        };
        set.apply(&[bump(1, 2), bump(2, 5)]);
        // The overlapping next read sees the older one again, or sees it late.
        set.apply(&[bump(1, 2), bump(0, 1)]);
        assert!(!set.allows(&claims(user, 4, None)));
        assert!(set.allows(&claims(user, 5, None)));
    }

    #[test]
    fn old_revocations_are_forgotten() {
        let user = UserId::new();
        let session = Uuid::new_v4();
        let mut set = Revocations::default();
        set.apply(&[
            Revocation {
                user,
                revoked: Revoked::Below(1),
                at: at(0),
            },
            Revocation {
                user,
                revoked: Revoked::Session(session),
                at: at(10),
            },
        ]);
        set.forget_before(at(5));
        assert_eq!(set.len(), 1);
        assert!(set.allows(&claims(user, 0, None)));
        assert!(!set.allows(&claims(user, 1, Some(session))));
        set.forget_before(at(11));
        assert!(set.is_empty());
    }
}
