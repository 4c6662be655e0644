//! Tenants and their API tokens.

use std::fmt;

use serde::Serialize;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use super::identity::{Issuer, Subject, TenantVia};
use super::scope::Scopes;
use super::slug::{is_slug, slug_rule};
use super::text::refuse_nul;
use super::uuid_id::uuid_id;

uuid_id!(
    /// A tenant's id.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
    #[serde(transparent)]
    TenantId
);

/// A tenant's unique name, a slug such as `acme`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct TenantName(String);

impl TenantName {
    /// Parses a tenant name; the error says what a valid one looks like.
    pub fn parse(raw: impl Into<String>) -> Result<Self, String> {
        let raw = raw.into();
        // The admin CLI shows only the message, so the shared NUL rule is
        // reported by its text; the error type stays a plain `String`.
        refuse_nul("tenant name", &raw).map_err(|v| v.message)?;
        if is_slug(&raw) {
            Ok(Self(raw))
        } else {
            Err(format!("a tenant name {}", slug_rule()))
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TenantName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Someone who owns tickets and operation keys. Every read and write is
/// scoped to one tenant, and the tenant always comes from authentication.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tenant {
    /// The tenant's id.
    pub id: TenantId,
    /// The tenant's unique name.
    pub name: TenantName,
    /// When the tenant was created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// An authenticated caller: the tenant it acts for, how it authenticated,
/// and what it may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The tenant.
    pub tenant: Tenant,
    /// The credential it authenticated with.
    pub credential: Credential,
    /// What it may do: an API token's scopes, or what an access token
    /// granted of this service's scopes.
    pub scopes: Scopes,
}

impl Caller {
    /// The API token it authenticated with, if it used one (the history of
    /// its writes shows it).
    pub fn token(&self) -> Option<TokenId> {
        match &self.credential {
            Credential::ApiToken(id) => Some(*id),
            Credential::OAuth { .. } => None,
        }
    }
}

/// How a caller authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// An API token issued by `tickets token issue`.
    ApiToken(TokenId),
    /// An access token from a trusted identity provider.
    OAuth {
        /// The issuer that signed it.
        issuer: Issuer,
        /// Its subject.
        subject: Subject,
        /// How the subject found its tenant.
        via: TenantVia,
    },
}

/// Who is writing: the tenant from authentication, and the token it
/// authenticated with when the door knows it (the ticket history shows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Actor {
    /// The tenant, from authentication; never from a body or an argument.
    pub tenant: TenantId,
    /// The API token used, if any.
    pub token: Option<TokenId>,
}

impl From<TenantId> for Actor {
    fn from(tenant: TenantId) -> Self {
        Self {
            tenant,
            token: None,
        }
    }
}

impl From<&Caller> for Actor {
    fn from(caller: &Caller) -> Self {
        Self {
            tenant: caller.tenant.id,
            token: caller.token(),
        }
    }
}

uuid_id!(
    /// An API token's id: safe to show and log, used to revoke the token.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    #[serde(transparent)]
    TokenId
);

impl From<uuid::Uuid> for TokenId {
    fn from(id: uuid::Uuid) -> Self {
        Self(id)
    }
}

/// Prefix of every API token, so a leaked token is recognisable in a scan.
pub(crate) const TOKEN_PREFIX: &str = "tkt_";

/// A freshly issued API token. The secret exists only in this value: the
/// kitchen stores its SHA-256 and can never show it again.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    /// The token's id, for revoking it.
    pub id: TokenId,
    /// The tenant the token acts for.
    pub tenant_id: TenantId,
    /// What the token may do.
    pub scopes: Scopes,
    /// The secret to put in `Authorization: Bearer …`. Shown once.
    pub secret: String,
}

impl IssuedToken {
    pub(crate) fn generate(tenant_id: TenantId, scopes: Scopes) -> Self {
        use rand::RngCore;
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        Self {
            id: TokenId::new_v7(),
            tenant_id,
            scopes,
            secret: format!("{TOKEN_PREFIX}{}", hex::encode(bytes)),
        }
    }
}

/// An API token as an operator may see it: never its secret (only its hash
/// is stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    /// The token's id, for revoking it.
    pub id: TokenId,
    /// What the token may do.
    pub scopes: Scopes,
    /// When it was issued.
    pub created_at: OffsetDateTime,
    /// When it was revoked; `None` while it is live.
    pub revoked_at: Option<OffsetDateTime>,
}

/// The stored form of a token secret. Looking a token up by its hash keeps
/// the comparison off the secret itself, and a database leak reveals no token.
pub(crate) fn token_hash(secret: &str) -> Vec<u8> {
    Sha256::digest(secret.as_bytes()).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_name_with_nul_says_so() {
        let message = TenantName::parse("ac\0me").expect_err("NUL is refused");
        assert!(
            message.starts_with("tenant name must not contain the NUL character (U+0000)"),
            "{message}"
        );
        assert!(
            TenantName::parse("Acme")
                .expect_err("not a slug")
                .contains("lowercase")
        );
        assert!(TenantName::parse("acme").is_ok());
    }
}
