//! Verifying an identity provider's access token (a JWT) into the identity
//! and scopes it grants.
//!
//! The cryptography is `jsonwebtoken`'s (over aws-lc-rs); this module only
//! decides what to accept, in this order, refusing at the first failure:
//! the size (before anything is parsed), a header naming an asymmetric
//! algorithm (`none` and the HMAC family are refused outright: the keys are
//! public), an issuer this server trusts, a key that issuer publishes and
//! whose type fits the `alg`, the signature, `exp`, `nbf` (both with the
//! configured leeway), `iss`, and the audience: this server's canonical
//! resource URL (RFC 8707), so a token issued for another service is
//! refused. `sub` is required.

use std::collections::HashSet;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{AlgorithmFamily, Validation, decode, decode_header};
use kitchen::{OAuthIdentity, Scopes, Subject};
use serde::Deserialize;
use serde_json::Value;

use crate::jwks::{Found, KeyStore};
use crate::settings::OAuthSettings;

/// Longest bearer token accepted, in bytes; anything longer is refused
/// before it is parsed.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// A verified token: who it is about, and which of this service's scopes
/// it grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verified {
    pub(crate) identity: OAuthIdentity,
    pub(crate) scopes: Scopes,
}

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rejected {
    /// The token is not valid here; says why (safe to show the caller).
    Invalid(String),
    /// The issuer's keys could not be fetched.
    Unavailable {
        why: String,
        retry_after: std::time::Duration,
    },
}

/// Checks access tokens against the trusted issuers' keys.
pub(crate) struct Verifier {
    keys: KeyStore,
    audience: String,
    tenant_claim: Option<String>,
    leeway: u64,
}

#[derive(Deserialize)]
struct Unverified {
    iss: Option<Value>,
}

#[derive(Deserialize)]
struct Claims {
    /// Required (see the validation); optional here so that its absence is
    /// reported by name rather than as a malformed token.
    sub: Option<String>,
    /// RFC 8693 / RFC 9068: a space-separated string.
    scope: Option<Value>,
    /// Some providers (Entra ID, Okta) send `scp`, a string or a list.
    scp: Option<Value>,
    #[serde(flatten)]
    rest: serde_json::Map<String, Value>,
}

impl Verifier {
    pub(crate) fn new(settings: &OAuthSettings) -> Result<Self, reqwest::Error> {
        Ok(Self {
            keys: KeyStore::new(
                &settings.issuers,
                settings.jwks_timeout,
                settings.jwks_cooldown,
            )?,
            audience: settings.resource.as_str().to_owned(),
            tenant_claim: settings.tenant_claim.clone(),
            leeway: settings.leeway.as_secs(),
        })
    }

    pub(crate) async fn verify(&self, token: &str) -> Result<Verified, Rejected> {
        let invalid = |why: &str| Err(Rejected::Invalid(why.to_owned()));
        if token.len() > MAX_TOKEN_BYTES {
            return invalid(&format!(
                "the token is larger than {} KiB",
                MAX_TOKEN_BYTES / 1024
            ));
        }
        let Ok(header) = decode_header(token) else {
            return invalid(
                "the token is not a JWT signed with an algorithm this server accepts (RS*, PS*, \
                 ES256, ES384, EdDSA; never none)",
            );
        };
        if header.alg.family() == AlgorithmFamily::Hmac {
            return invalid("HMAC-signed tokens (HS256 and the like) are not accepted");
        }
        let iss = match jsonwebtoken::dangerous::insecure_decode_claims::<Unverified>(token) {
            Ok(Unverified {
                iss: Some(Value::String(iss)),
            }) => iss,
            Ok(_) => return invalid("the token names no issuer (iss)"),
            Err(_) => return invalid("the token's claims are not a JSON object"),
        };
        let Some(issuer) = self.keys.trusts(&iss).cloned() else {
            return invalid(&format!("issuer {iss:?} is not trusted by this server"));
        };
        let key = match self.keys.key(issuer.as_str(), header.kid.as_deref()).await {
            Found::Key(key) => key,
            Found::Unknown => {
                return invalid(&match &header.kid {
                    Some(kid) => format!(
                        "the token is signed with key {kid:?}, which {iss} does not publish"
                    ),
                    None => format!("the token names no key (kid) and {iss} publishes several"),
                });
            }
            Found::Unavailable { why, retry_after } => {
                return Err(Rejected::Unavailable { why, retry_after });
            }
        };
        if !key.algorithms.contains(&header.alg) {
            return invalid(&format!(
                "the token's algorithm {:?} does not fit the key it names",
                header.alg
            ));
        }
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.set_issuer(&[issuer.as_str()]);
        validation.aud = Some(HashSet::from([self.audience.clone()]));
        let claims = match decode::<Claims>(token, &key.key, &validation) {
            Ok(data) => data.claims,
            Err(e) => return invalid(&self.explain(e.kind())),
        };
        let Some(sub) = claims.sub else {
            return invalid("the token has no sub claim");
        };
        let subject = Subject::parse(sub)
            .map_err(|e| Rejected::Invalid(format!("the token's subject: {e}")))?;
        let scopes = granted(claims.scope.as_ref()).with_all(granted(claims.scp.as_ref()));
        let tenant_claim = self
            .tenant_claim
            .as_ref()
            .and_then(|name| claims.rest.get(name))
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok(Verified {
            identity: OAuthIdentity {
                issuer,
                subject,
                tenant_claim,
            },
            scopes,
        })
    }

    /// The tenant claim this deployment reads, if any.
    pub(crate) fn tenant_claim(&self) -> Option<&str> {
        self.tenant_claim.as_deref()
    }

    fn explain(&self, kind: &ErrorKind) -> String {
        match kind {
            ErrorKind::ExpiredSignature => "the token has expired".into(),
            ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".into(),
            ErrorKind::InvalidAudience => format!(
                "the token was issued for another audience: this server accepts only tokens \
                 whose aud is {}",
                self.audience
            ),
            ErrorKind::InvalidIssuer => "the token's issuer does not match".into(),
            ErrorKind::InvalidSignature => "the token's signature does not verify".into(),
            ErrorKind::MissingRequiredClaim(claim) => format!("the token has no {claim} claim"),
            ErrorKind::InvalidClaimFormat(claim) => {
                format!("the token's {claim} claim is malformed")
            }
            _ => "the token is malformed".into(),
        }
    }
}

/// The scopes of this service a `scope` or `scp` claim grants (a
/// space-separated string or a list of strings).
fn granted(claim: Option<&Value>) -> Scopes {
    match claim {
        Some(Value::String(words)) => Scopes::granted(words.split(' ')),
        Some(Value::Array(items)) => Scopes::granted(items.iter().filter_map(Value::as_str)),
        _ => Scopes::NONE,
    }
}

/// The union of two scope sets.
trait Union {
    fn with_all(self, other: Scopes) -> Scopes;
}

impl Union for Scopes {
    fn with_all(self, other: Scopes) -> Scopes {
        other.iter().fold(self, Scopes::with)
    }
}
