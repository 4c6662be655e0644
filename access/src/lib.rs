//! Access: who is calling, and may they do this.
//!
//! Both doors take a bearer token, and both must agree on what it means,
//! so this crate says it once, outside either door (neither depends on the
//! other) and outside the kitchen (which depends on no web crate: verifying
//! an identity provider's token means fetching its keys over HTTP).
//!
//! - [`Authenticator`]: a bearer token to a [`Caller`]. An API token (made
//!   by `tickets token issue`) is looked up by the kitchen. With
//!   resource-server mode on ([`OAuthSettings`]), a JWT from a trusted
//!   identity provider is verified here (`jwt`, with the issuer's keys from
//!   `jwks`) and its subject or tenant claim resolved to a tenant by the
//!   kitchen; the tenant never comes from anything else.
//! - [`policy`]: the one table of which scope each REST route and each MCP
//!   tool needs.
//! - [`Challenges`]: the `WWW-Authenticate` values of `401` and `403`,
//!   naming the protected resource metadata (RFC 9728) when OAuth is on.
//!
//! Status codes and bodies stay with the doors: this crate says what
//! happened ([`Refusal`]), each door answers it in its own dialect.

use std::sync::Arc;
use std::time::Duration;

use kitchen::{Caller, Issuer, Kitchen, KitchenError};

mod challenge;
mod jwks;
mod jwt;
pub mod policy;
mod settings;

pub use challenge::Challenges;
pub use jwks::MAX_AGE as JWKS_MAX_AGE;
pub use jwt::MAX_TOKEN_BYTES;
pub use settings::{
    DEFAULT_JWKS_COOLDOWN, DEFAULT_JWKS_TIMEOUT, DEFAULT_LEEWAY, METADATA_PATH, OAuthSettings,
    SettingsError,
};

/// Why a request was not authenticated.
#[derive(Debug)]
pub enum Refusal {
    /// No bearer token.
    Missing,
    /// A token that is not accepted: unknown or revoked, or an access token
    /// that failed verification or names no tenant here. Says why (safe to
    /// show the caller).
    Invalid(String),
    /// The identity provider's keys could not be fetched, so the token can
    /// be neither accepted nor refused now.
    Unavailable {
        /// What failed.
        why: String,
        /// When to try again.
        retry_after: Duration,
    },
    /// The database failed.
    Failed(KitchenError),
}

impl Refusal {
    /// What an identity provider that cannot be reached means for the
    /// caller, in the words both doors answer with.
    pub fn unavailable_detail(why: &str, retry_after: Duration) -> String {
        format!(
            "The identity provider's signing keys could not be fetched ({why}), so the token \
             can be neither accepted nor refused now. Nothing was done: retry in {} s.",
            kitchen::whole_seconds(retry_after)
        )
    }
}

/// The token of an `Authorization: Bearer <token>` header, if there is one:
/// how both doors read a caller's credentials.
pub fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The words of a refused API token, the same whatever the reason.
pub const UNKNOWN_TOKEN: &str = "the bearer token is unknown or revoked";

/// Turns bearer tokens into callers. Cheap to clone.
#[derive(Clone)]
pub struct Authenticator {
    inner: Arc<Inner>,
}

struct Inner {
    kitchen: Kitchen,
    oauth: Option<(OAuthSettings, jwt::Verifier)>,
    challenges: Challenges,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("oauth", &self.oauth())
            .finish_non_exhaustive()
    }
}

/// The HTTP client for the identity providers could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the HTTP client for identity providers: {0}")]
pub struct SetupError(#[from] reqwest::Error);

impl Authenticator {
    /// API tokens through `kitchen`, and with `oauth`, access tokens from
    /// its trusted issuers.
    pub fn new(kitchen: Kitchen, oauth: Option<OAuthSettings>) -> Result<Self, SetupError> {
        let oauth = match oauth {
            None => None,
            Some(settings) => {
                let verifier = jwt::Verifier::new(&settings)?;
                Some((settings, verifier))
            }
        };
        let challenges = Challenges::new(
            oauth
                .as_ref()
                .map(|(settings, _)| settings.resource.metadata_url().to_owned()),
        );
        Ok(Self {
            inner: Arc::new(Inner {
                kitchen,
                oauth,
                challenges,
            }),
        })
    }

    /// The settings of resource-server mode, when it is on.
    pub fn oauth(&self) -> Option<&OAuthSettings> {
        self.inner.oauth.as_ref().map(|(settings, _)| settings)
    }

    /// The protected resource metadata's URL, when OAuth is on.
    pub fn metadata_url(&self) -> Option<&str> {
        self.oauth().map(|s| s.resource.metadata_url())
    }

    /// The issuers whose tokens are accepted (none with OAuth off).
    pub fn issuers(&self) -> &[Issuer] {
        self.oauth().map_or(&[], |s| s.issuers.as_slice())
    }

    /// This server's challenges.
    pub fn challenges(&self) -> &Challenges {
        &self.inner.challenges
    }

    /// The caller `bearer` (the token of `Authorization: Bearer`, if any)
    /// authenticates.
    pub async fn authenticate(&self, bearer: Option<&str>) -> Result<Caller, Refusal> {
        let token = bearer.ok_or(Refusal::Missing)?;
        if token.len() > MAX_TOKEN_BYTES {
            return Err(Refusal::Invalid(format!(
                "the token is larger than {} KiB",
                MAX_TOKEN_BYTES / 1024
            )));
        }
        if let Some((_, verifier)) = &self.inner.oauth
            && looks_like_a_jwt(token)
        {
            return self.access_token(verifier, token).await;
        }
        self.inner
            .kitchen
            .authenticate(token)
            .await
            .map_err(Refusal::Failed)?
            .ok_or_else(|| Refusal::Invalid(UNKNOWN_TOKEN.into()))
    }

    async fn access_token(&self, verifier: &jwt::Verifier, token: &str) -> Result<Caller, Refusal> {
        let verified = verifier
            .verify(token)
            .await
            .map_err(|rejected| match rejected {
                jwt::Rejected::Invalid(why) => Refusal::Invalid(why),
                jwt::Rejected::Unavailable { why, retry_after } => {
                    Refusal::Unavailable { why, retry_after }
                }
            })?;
        let caller = self
            .inner
            .kitchen
            .oauth_caller(&verified.identity, verified.scopes)
            .await
            .map_err(Refusal::Failed)?;
        caller.ok_or_else(|| {
            let who = &verified.identity;
            let mapping = format!(
                "subject {:?} of {} is not mapped to a tenant (tickets oauth map)",
                who.subject.as_str(),
                who.issuer
            );
            Refusal::Invalid(match (verifier.tenant_claim(), &who.tenant_claim) {
                (None, _) => format!("the {mapping}; tenants are never created from a token"),
                (Some(claim), None) => {
                    format!("the token has no {claim} claim and its {mapping}")
                }
                (Some(claim), Some(value)) => format!(
                    "the token's {claim} claim {value:?} names no tenant here and its {mapping}; \
                     tenants are never created from a token"
                ),
            })
        })
    }
}

/// Whether `token` has a JWT's shape (three dot-separated parts) and is
/// not an API token.
fn looks_like_a_jwt(token: &str) -> bool {
    !token.starts_with("tkt_") && token.bytes().filter(|b| *b == b'.').count() == 2
}
