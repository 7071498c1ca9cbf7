//! Who may change which member of an organization. Exactly one OWNER, who cannot be demoted
//! or removed; only the OWNER assigns roles; ownership is not transferable.

use super::refusals::IdentityRefusal;
use crate::error::Refusal;
use crate::roles::Role;

fn owner_is_fixed() -> Refusal {
    Refusal::from(IdentityRefusal::OwnerIsFixed)
}

fn one_owner() -> Refusal {
    Refusal::from(IdentityRefusal::OneOwner)
}

/// Whether `caller` may set `target`'s role (currently `target_role`) to `new_role`.
pub fn may_change_role(caller: Role, target_role: Role, new_role: Role) -> Result<(), Refusal> {
    if caller != Role::Owner {
        return Err(Refusal::forbidden());
    }
    if target_role == Role::Owner {
        return Err(owner_is_fixed());
    }
    if new_role == Role::Owner {
        return Err(one_owner());
    }
    Ok(())
}

/// Whether `caller` may remove `target`: the OWNER removes anyone but themself; any other
/// member may only leave.
pub fn may_remove(caller: Role, caller_is_target: bool, target_role: Role) -> Result<(), Refusal> {
    if target_role == Role::Owner {
        return Err(owner_is_fixed());
    }
    if caller == Role::Owner || caller_is_target {
        Ok(())
    } else {
        Err(Refusal::forbidden())
    }
}

/// Whether an invite may carry `role`: invites add moderators only.
pub fn may_invite_as(role: Role) -> Result<(), Refusal> {
    match role {
        Role::Moderator => Ok(()),
        Role::Owner => Err(one_owner()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use Role::*;

    #[test]
    fn only_the_owner_assigns_roles_and_the_owner_stays() {
        assert!(may_change_role(Owner, Moderator, Moderator).is_ok());
        assert_eq!(
            may_change_role(Moderator, Moderator, Moderator),
            Err(Refusal::forbidden())
        );
        assert!(
            may_change_role(Owner, Owner, Moderator).unwrap_err().code == ErrorCode::BusinessRule
        );
        assert!(
            may_change_role(Owner, Moderator, Owner).unwrap_err().code == ErrorCode::BusinessRule
        );
    }

    #[test]
    fn removal_rules() {
        assert!(may_remove(Owner, false, Moderator).is_ok());
        assert!(may_remove(Moderator, true, Moderator).is_ok());
        assert_eq!(
            may_remove(Moderator, false, Moderator),
            Err(Refusal::forbidden())
        );
        assert!(may_remove(Owner, true, Owner).unwrap_err().code == ErrorCode::BusinessRule);
        assert!(may_remove(Moderator, false, Owner).unwrap_err().code == ErrorCode::BusinessRule);
    }

    #[test]
    fn invites_add_moderators_only() {
        assert!(may_invite_as(Moderator).is_ok());
        assert!(may_invite_as(Owner).is_err());
    }
}
