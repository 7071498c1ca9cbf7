//! Request and response bodies of the identity service, named as the spec's convention says.

use chrono::{DateTime, Utc};
use domain::roles::Role;
use serde::{Deserialize, Serialize};
use storage::identity::groups::{Group, GroupMember};
use storage::identity::invites::Invite;
use storage::identity::members::Member;
use storage::identity::organizations::Organization;
use storage::identity::requests::OrgRequest;
use storage::identity::users::User;
use utoipa::ToSchema;
use uuid::Uuid;

/// Registration by email.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RegisterRequest {
    /// Email, stored in lower case: one `@`, a dot inside the domain, at most 254 characters.
    /// The server also takes it with surrounding whitespace (trimmed) and with non-ASCII
    /// characters within 254 bytes; the pattern states the plain ASCII form.
    #[schema(
        max_length = 254,
        pattern = r"^[!-?A-~]+@[!-\-/-?A-~][!-?A-~]*\.[!-?A-~]*[!-\-/-?A-~]$"
    )]
    pub email: String,
    /// 8 to 72 bytes (UTF-8) with at least one letter and one digit. The pattern states the
    /// ASCII case; letters of other scripts (e.g. Cyrillic) are accepted too, within 72 bytes.
    #[schema(
        min_length = 8,
        max_length = 72,
        pattern = r"^[\x00-\x7F]*(?:[A-Za-z][\x00-\x7F]*[0-9]|[0-9][\x00-\x7F]*[A-Za-z])[\x00-\x7F]*$"
    )]
    pub password: String,
    /// First name: at most 100 characters, no control characters.
    #[serde(default)]
    #[schema(max_length = 100, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$")]
    pub first_name: String,
    /// Last name: at most 100 characters, no control characters.
    #[serde(default)]
    #[schema(max_length = 100, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$")]
    pub last_name: String,
}

/// Sign-in by email.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LoginRequest {
    /// Email (as at registration).
    #[schema(
        max_length = 254,
        pattern = r"^[!-?A-~]+@[!-\-/-?A-~][!-?A-~]*\.[!-?A-~]*[!-\-/-?A-~]$"
    )]
    pub email: String,
    /// Password; not empty.
    #[schema(min_length = 1)]
    pub password: String,
}

/// A refresh token, for refresh and logout.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RefreshRequest {
    /// The refresh token.
    pub refresh_token: String,
}

/// A mail token.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerifyEmailRequest {
    /// The token from the mail.
    pub token: String,
}

/// An address to send a mail to.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EmailRequest {
    /// Email (as at registration).
    #[schema(
        max_length = 254,
        pattern = r"^[!-?A-~]+@[!-\-/-?A-~][!-?A-~]*\.[!-?A-~]*[!-\-/-?A-~]$"
    )]
    pub email: String,
}

/// A password reset.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResetPasswordRequest {
    /// The token from the mail.
    pub token: String,
    /// The new password: 8 to 72 bytes (UTF-8) with at least one letter and one digit (the
    /// pattern states the ASCII case; letters of other scripts are accepted too).
    #[schema(
        min_length = 8,
        max_length = 72,
        pattern = r"^[\x00-\x7F]*(?:[A-Za-z][\x00-\x7F]*[0-9]|[0-9][\x00-\x7F]*[A-Za-z])[\x00-\x7F]*$"
    )]
    pub new_password: String,
}

/// Tokens and the signed-in user.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthResponse {
    /// Access token (JWT, 15 minutes).
    pub access_token: String,
    /// Refresh token (7 days, single use).
    pub refresh_token: String,
    /// Always `Bearer`.
    pub token_type: &'static str,
    /// Access token lifetime in seconds.
    pub expires_in: i64,
    /// The user.
    pub user: UserDto,
}

/// An access token for another organization.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessTokenDto {
    /// Access token (JWT, 15 minutes).
    pub access_token: String,
    /// Always `Bearer`.
    pub token_type: &'static str,
    /// Lifetime in seconds.
    pub expires_in: i64,
    /// The organization the token is for.
    pub tenant_id: Uuid,
    /// The caller's roles there.
    pub roles: Vec<Role>,
}

/// A user as shown to themself.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserDto {
    /// Id.
    pub id: Uuid,
    /// Email, if any.
    pub email: Option<String>,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// Whether the email is verified.
    pub email_verified: bool,
    /// When it was verified.
    pub email_verified_at: Option<DateTime<Utc>>,
    /// Whether a messenger account is linked.
    pub messenger_linked: bool,
    /// Avatar media file.
    pub avatar_id: Option<Uuid>,
    /// Whether the user is a platform administrator.
    pub platform_admin: bool,
    /// Last sign-in.
    pub last_login_at: Option<DateTime<Utc>>,
    /// Registration time.
    pub created_at: DateTime<Utc>,
}

impl From<User> for UserDto {
    fn from(u: User) -> UserDto {
        UserDto {
            id: u.id.as_uuid(),
            email: u.email,
            first_name: u.first_name,
            last_name: u.last_name,
            email_verified: u.email_verified,
            email_verified_at: u.email_verified_at,
            messenger_linked: u.messenger_id.is_some(),
            avatar_id: u.avatar_id,
            platform_admin: u.platform_admin,
            last_login_at: u.last_login_at,
            created_at: u.created_at,
        }
    }
}

/// Profile changes; absent fields stay, `avatarId: null` removes the avatar.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateUserRequest {
    /// First name: at most 100 characters, no control characters.
    #[schema(max_length = 100, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$")]
    pub first_name: Option<String>,
    /// Last name: at most 100 characters, no control characters.
    #[schema(max_length = 100, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$")]
    pub last_name: Option<String>,
    /// Avatar media file.
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<Uuid>)]
    pub avatar_id: Option<Option<Uuid>>,
}

/// A password change.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChangePasswordRequest {
    /// The current password (anything, for an account that has none yet).
    pub current_password: String,
    /// The new password: 8 to 72 bytes (UTF-8) with at least one letter and one digit (the
    /// pattern states the ASCII case; letters of other scripts are accepted too).
    #[schema(
        min_length = 8,
        max_length = 72,
        pattern = r"^[\x00-\x7F]*(?:[A-Za-z][\x00-\x7F]*[0-9]|[0-9][\x00-\x7F]*[A-Za-z])[\x00-\x7F]*$"
    )]
    pub new_password: String,
}

/// A request to create an organization.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateOrganizationRequestRequest {
    /// Organization name: 1 to 255 characters once surrounding whitespace is trimmed, no NUL.
    #[schema(
        min_length = 1,
        pattern = r"^[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000](?:[^\x00]{0,253}[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000])?[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$"
    )]
    pub name: String,
    /// Lower-case Latin letters, digits and hyphen, 3 to 50 (surrounding whitespace is trimmed).
    #[schema(
        min_length = 3,
        pattern = r"^[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*[a-z0-9-]{3,50}[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$"
    )]
    pub slug: String,
    /// Description: at most 5000 characters, no NUL.
    #[schema(max_length = 5000, pattern = r"^[^\x00]*$")]
    pub description: Option<String>,
}

/// A review decision; a rejection needs a reason.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReviewRequest {
    /// The reason or comment; no NUL.
    #[schema(pattern = r"^[^\x00]*$")]
    pub reason: Option<String>,
}

/// A rejection; its reason is required.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RejectRequest {
    /// Why: at least one character that is not whitespace, no NUL (stored trimmed).
    #[schema(
        min_length = 1,
        pattern = r"^[^\x00]*[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\x00]*$"
    )]
    pub reason: String,
}

/// An organization request.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationRequestDto {
    /// Id.
    pub id: Uuid,
    /// Requester.
    pub user_id: Uuid,
    /// Name.
    pub name: String,
    /// Slug.
    pub slug: String,
    /// Description.
    pub description: Option<String>,
    /// PENDING, APPROVED or REJECTED.
    pub status: domain::identity::requests::RequestStatus,
    /// Reviewer.
    pub reviewed_by: Option<Uuid>,
    /// Reason given on review.
    pub review_comment: Option<String>,
    /// Review time.
    pub reviewed_at: Option<DateTime<Utc>>,
    /// Until when the slug is kept for the requester.
    pub reserved_until: Option<DateTime<Utc>>,
    /// Organization created from it.
    pub organization_id: Option<Uuid>,
    /// Submission time.
    pub created_at: DateTime<Utc>,
    /// The requester's first and last name, when they gave one.
    pub requester_name: Option<String>,
    /// The requester's email, when the account has one.
    pub requester_email: Option<String>,
}

impl From<OrgRequest> for OrganizationRequestDto {
    fn from(r: OrgRequest) -> Self {
        OrganizationRequestDto {
            id: r.id,
            user_id: r.user_id.as_uuid(),
            name: r.name,
            slug: r.slug,
            description: r.description,
            status: r.status,
            reviewed_by: r.reviewed_by,
            review_comment: r.review_comment,
            reviewed_at: r.reviewed_at,
            reserved_until: r.reserved_until,
            organization_id: r.organization_id,
            created_at: r.created_at,
            requester_name: r.requester_name,
            requester_email: r.requester_email,
        }
    }
}

/// Creation of an organization from an approved request.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateOrganizationRequest {
    /// Which approved request to use; the latest one when absent.
    pub request_id: Option<Uuid>,
}

/// Changes to an organization; absent fields stay.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateOrganizationRequest {
    /// Name: 1 to 255 characters once surrounding whitespace is trimmed, no NUL.
    #[schema(
        min_length = 1,
        pattern = r"^[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000](?:[^\x00]{0,253}[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000])?[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$"
    )]
    pub name: Option<String>,
    /// Description: at most 5000 characters, no NUL.
    #[schema(max_length = 5000, pattern = r"^[^\x00]*$")]
    pub description: Option<String>,
    /// Logo URL: an `http://` or `https://` URL (scheme in any case) with a host, no
    /// whitespace or control characters, at most 500 characters; empty removes it.
    #[schema(
        max_length = 500,
        pattern = r"^(?:[Hh][Tt][Tt][Pp][Ss]?://[^\x00-\x20\x7F-\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000/?#][^\x00-\x20\x7F-\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*)?$"
    )]
    pub logo_url: Option<String>,
    /// Logo media file; null removes it.
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<Uuid>)]
    pub logo_id: Option<Option<Uuid>>,
    /// Settings object (replaces the current one): at most 64 KB as JSON, no NUL in keys or
    /// strings, numbers within ±9007199254740991.
    #[schema(value_type = Option<Object>)]
    pub settings: Option<serde_json::Value>,
}

/// An organization, with the caller's role in it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationDto {
    /// Id (the tenant id).
    pub id: Uuid,
    /// Owner.
    pub owner_id: Uuid,
    /// Name.
    pub name: String,
    /// Slug.
    pub slug: String,
    /// Description.
    pub description: Option<String>,
    /// Logo URL.
    pub logo_url: Option<String>,
    /// Logo media file.
    pub logo_id: Option<Uuid>,
    /// Settings.
    #[schema(value_type = Object)]
    pub settings: serde_json::Value,
    /// The caller's role.
    pub my_role: Role,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl OrganizationDto {
    /// The organization as seen by a member with `role`.
    pub fn new(o: Organization, role: Role) -> Self {
        OrganizationDto {
            id: o.id.as_uuid(),
            owner_id: o.owner_id.as_uuid(),
            name: o.name,
            slug: o.slug,
            description: o.description,
            logo_url: o.logo_url,
            logo_id: o.logo_id,
            settings: o.settings,
            my_role: role,
            created_at: o.created_at,
            updated_at: o.updated_at,
        }
    }
}

/// A member of an organization.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberDto {
    /// The user.
    pub user_id: Uuid,
    /// OWNER or MODERATOR.
    pub role: Role,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// Email.
    pub email: Option<String>,
    /// Who invited them.
    pub invited_by: Option<Uuid>,
    /// When they joined.
    pub joined_at: DateTime<Utc>,
}

impl From<Member> for MemberDto {
    fn from(m: Member) -> Self {
        MemberDto {
            user_id: m.user_id.as_uuid(),
            role: m.role,
            first_name: m.first_name,
            last_name: m.last_name,
            email: m.email,
            invited_by: m.invited_by.map(|u| u.as_uuid()),
            joined_at: m.joined_at,
        }
    }
}

/// A role change.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateMemberRequest {
    /// The new role.
    pub role: Role,
}

/// An invite to create.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateInviteRequest {
    /// The role it grants (MODERATOR, the default).
    pub role: Option<Role>,
    /// Messenger username it is meant for: at most 100 characters once surrounding whitespace
    /// and leading `@` are removed, no NUL.
    #[schema(
        pattern = r"^[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*@*[^\x00]{0,100}[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$"
    )]
    pub messenger_username: Option<String>,
}

/// An invite with its messenger deep link.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InviteDto {
    /// Id.
    pub id: Uuid,
    /// The organization.
    pub organization_id: Uuid,
    /// The code.
    pub invite_code: String,
    /// `https://t.me/<bot>?start=<code>`.
    pub deep_link: String,
    /// The role it grants.
    pub role: Role,
    /// Messenger username it is meant for.
    pub messenger_username: Option<String>,
    /// Expiry (7 days).
    pub expires_at: DateTime<Utc>,
}

impl InviteDto {
    /// The invite with a link to `bot`.
    pub fn new(i: Invite, bot: &str) -> Self {
        InviteDto {
            id: i.id,
            organization_id: i.organization_id.as_uuid(),
            deep_link: deep_link(bot, &i.code),
            invite_code: i.code,
            role: i.role,
            messenger_username: i.messenger_username,
            expires_at: i.expires_at,
        }
    }
}

/// The messenger deep link carrying a code.
pub fn deep_link(bot: &str, code: &str) -> String {
    format!("https://t.me/{bot}?start={code}")
}

/// A group to create.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateGroupRequest {
    /// Name: 1 to 255 characters once surrounding whitespace is trimmed, no NUL.
    #[schema(
        min_length = 1,
        pattern = r"^[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000](?:[^\x00]{0,253}[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000])?[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$"
    )]
    pub name: String,
    /// Description: at most 5000 characters, no NUL.
    #[serde(default)]
    #[schema(max_length = 5000, pattern = r"^[^\x00]*$")]
    pub description: String,
}

/// Changes to a group; absent fields stay.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateGroupRequest {
    /// Name: 1 to 255 characters once surrounding whitespace is trimmed, no NUL.
    #[schema(
        min_length = 1,
        pattern = r"^[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000](?:[^\x00]{0,253}[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000])?[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$"
    )]
    pub name: Option<String>,
    /// Description: at most 5000 characters, no NUL.
    #[schema(max_length = 5000, pattern = r"^[^\x00]*$")]
    pub description: Option<String>,
}

/// A group.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupDto {
    /// Id.
    pub id: Uuid,
    /// Organization.
    pub organization_id: Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Creator.
    pub created_by: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl From<Group> for GroupDto {
    fn from(g: Group) -> Self {
        GroupDto {
            id: g.id,
            organization_id: g.organization_id.as_uuid(),
            name: g.name,
            description: g.description,
            created_by: g.created_by.as_uuid(),
            created_at: g.created_at,
            updated_at: g.updated_at,
        }
    }
}

/// A group's invite code and link.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupInviteDto {
    /// The group.
    pub group_id: Uuid,
    /// The code.
    pub invite_code: String,
    /// `https://t.me/<bot>?start=<code>`.
    pub deep_link: String,
}

/// A member of a group.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupMemberDto {
    /// The user.
    pub user_id: Uuid,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// Who shared the code.
    pub invited_by: Option<Uuid>,
    /// Join time.
    pub joined_at: DateTime<Utc>,
}

impl From<GroupMember> for GroupMemberDto {
    fn from(m: GroupMember) -> Self {
        GroupMemberDto {
            user_id: m.user_id.as_uuid(),
            first_name: m.first_name,
            last_name: m.last_name,
            invited_by: m.invited_by.map(|u| u.as_uuid()),
            joined_at: m.joined_at,
        }
    }
}
