//! Access tokens: HS256 JWTs signed by the identity service and checked by the gateway. The
//! algorithm is pinned, so `alg: none` and asymmetric algorithms are refused.

use chrono::{DateTime, Utc};
use domain::identity::limits;
use domain::identity::tokens::Claims;
use domain::ids::{TenantId, UserId};
use domain::roles::Role;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use uuid::Uuid;

/// Seconds of clock skew tolerated on expiry.
const LEEWAY_SECONDS: u64 = 5;

/// Signing and checking keys.
pub struct Tokens {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

/// A freshly signed access token.
#[derive(Clone, Debug)]
pub struct AccessToken {
    /// The JWT.
    pub token: String,
    /// Lifetime in seconds.
    pub expires_in: i64,
}

impl Tokens {
    /// Keys from the shared secret.
    pub fn new(secret: &str) -> Tokens {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = LEEWAY_SECONDS;
        validation.set_required_spec_claims(&["exp", "sub"]);
        Tokens {
            encoding: EncodingKey::from_secret(secret.as_bytes()),
            decoding: DecodingKey::from_secret(secret.as_bytes()),
            validation,
        }
    }

    /// Signs an access token valid 15 minutes from `now`, at the user's access `version`.
    #[allow(clippy::too_many_arguments)]
    pub fn issue(
        &self,
        user: UserId,
        email: Option<String>,
        tenant: Option<TenantId>,
        roles: Vec<Role>,
        session: Option<Uuid>,
        version: i64,
        now: DateTime<Utc>,
    ) -> Result<AccessToken, jsonwebtoken::errors::Error> {
        let ttl = limits::access_token_ttl();
        let claims = Claims {
            sub: user,
            email,
            tenant_id: tenant,
            roles,
            exp: (now + ttl).timestamp(),
            iat: now.timestamp(),
            sid: session,
            ver: version,
        };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)?;
        Ok(AccessToken {
            token,
            expires_in: ttl.num_seconds(),
        })
    }

    /// Checks signature, algorithm, expiry and required claims.
    pub fn verify(&self, token: &str) -> Result<Claims, jsonwebtoken::errors::Error> {
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map(|data| data.claims)
    }
}
