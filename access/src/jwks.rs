//! Each trusted issuer's signing keys (its JWKS), fetched, cached and
//! refreshed within bounds.
//!
//! The keys are found the standard way: the issuer's metadata (RFC 8414
//! `/.well-known/oauth-authorization-server`, else OpenID Connect's
//! `/.well-known/openid-configuration`) names `jwks_uri`, and must name the
//! issuer itself. Then:
//!
//! - A token signed with a key the cache knows is checked without a fetch.
//! - A token with an unknown `kid` (the issuer rotated its keys) refreshes
//!   the set, but one issuer's keys are fetched at most once per cooldown,
//!   and concurrent requests share one fetch: a flood of tokens with made-up
//!   `kid`s cannot make this server hammer the identity provider.
//! - A set older than [`MAX_AGE`] is fetched again on next use (keys that
//!   were withdrawn stop working).
//! - Every fetch, discovery included, is bounded by the timeout. A fetch
//!   that fails or times out leaves the cached set in use (stale keys are
//!   better than none while the provider is down); a token whose key is
//!   not in it is answered "unavailable" (`503` with `Retry-After`), never
//!   let through and never held past the timeout.
//! - Symmetric (`oct`) keys and keys for encryption are ignored: a token
//!   can only be verified with a public key whose algorithm family matches
//!   its `alg`, so an `HS256` token "signed" with a public key is refused.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use kitchen::Issuer;
use serde::Deserialize;

/// A key set is fetched again after this long, even if every `kid` is known.
pub const MAX_AGE: Duration = Duration::from_secs(600);
/// Largest metadata or JWKS document read, in bytes.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// A public key an issuer signs with, and the algorithms it verifies.
#[derive(Clone)]
pub(crate) struct SigningKey {
    pub(crate) key: DecodingKey,
    pub(crate) algorithms: Vec<Algorithm>,
}

/// What a lookup found.
pub(crate) enum Found {
    /// The key with that id (or the one key, for a token without a `kid`).
    Key(SigningKey),
    /// The issuer does not publish such a key (after a refresh, or within
    /// the cooldown of the last one).
    Unknown,
    /// The keys could not be fetched; try again after this long.
    Unavailable { why: String, retry_after: Duration },
}

#[derive(Default)]
struct KeySet {
    by_kid: HashMap<String, SigningKey>,
    /// Keys published without a `kid`.
    unnamed: Vec<SigningKey>,
    fetched_at: Option<Instant>,
}

impl KeySet {
    fn find(&self, kid: Option<&str>) -> Option<SigningKey> {
        match kid {
            Some(kid) => self.by_kid.get(kid).cloned(),
            // Without a kid, only an unambiguous set can answer.
            None => match (self.by_kid.len(), self.unnamed.as_slice()) {
                (0, [only]) => Some(only.clone()),
                (1, []) => self.by_kid.values().next().cloned(),
                _ => None,
            },
        }
    }

    fn fresh(&self) -> bool {
        self.fetched_at.is_some_and(|at| at.elapsed() < MAX_AGE)
    }
}

/// When the last fetch was tried, and where the keys are.
#[derive(Default)]
struct FetchState {
    last_attempt: Option<Instant>,
    last_error: Option<String>,
    jwks_uri: Option<String>,
}

/// One issuer's keys.
struct IssuerKeys {
    issuer: Issuer,
    current: RwLock<Arc<KeySet>>,
    /// Held while fetching: one fetch at a time per issuer.
    fetch: tokio::sync::Mutex<FetchState>,
}

/// The keys of every trusted issuer.
pub(crate) struct KeyStore {
    http: reqwest::Client,
    timeout: Duration,
    cooldown: Duration,
    issuers: HashMap<String, IssuerKeys>,
}

impl KeyStore {
    pub(crate) fn new(
        issuers: &[Issuer],
        timeout: Duration,
        cooldown: Duration,
    ) -> Result<Self, reqwest::Error> {
        // The whole fetch (discovery and keys) is bounded by `timeout` in
        // `key`; a connection that cannot even be opened fails at once.
        let http = reqwest::Client::builder()
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let issuers = issuers
            .iter()
            .map(|issuer| {
                (
                    issuer.as_str().to_owned(),
                    IssuerKeys {
                        issuer: issuer.clone(),
                        current: RwLock::new(Arc::new(KeySet::default())),
                        fetch: tokio::sync::Mutex::new(FetchState::default()),
                    },
                )
            })
            .collect();
        Ok(Self {
            http,
            timeout,
            cooldown,
            issuers,
        })
    }

    /// The trusted issuer named `iss`, if it is one.
    pub(crate) fn trusts(&self, iss: &str) -> Option<&Issuer> {
        self.issuers.get(iss).map(|keys| &keys.issuer)
    }

    /// The key `kid` of `issuer` (a trusted one), fetching the set when it
    /// is missing, old, or lacks `kid` and the cooldown has passed.
    pub(crate) async fn key(&self, issuer: &str, kid: Option<&str>) -> Found {
        let Some(keys) = self.issuers.get(issuer) else {
            return Found::Unknown;
        };
        let snapshot = keys.snapshot();
        if snapshot.fresh()
            && let Some(key) = snapshot.find(kid)
        {
            return Found::Key(key);
        }
        // One fetch at a time: whoever waited here may find the set already
        // refreshed by the fetch it waited for.
        let mut state = keys.fetch.lock().await;
        let snapshot = keys.snapshot();
        if snapshot.fresh()
            && let Some(key) = snapshot.find(kid)
        {
            return Found::Key(key);
        }
        let cooling = state
            .last_attempt
            .map(|at| self.cooldown.saturating_sub(at.elapsed()))
            .filter(|left| !left.is_zero());
        if let Some(left) = cooling {
            // Fetched (or tried) moments ago: answer from what there is.
            return match (snapshot.find(kid), &state.last_error) {
                (Some(key), _) => Found::Key(key),
                // The last fetch failed: whether the key exists is unknown.
                (None, Some(why)) => Found::Unavailable {
                    why: why.clone(),
                    retry_after: left,
                },
                (None, _) => Found::Unknown,
            };
        }
        state.last_attempt = Some(Instant::now());
        let fetched =
            tokio::time::timeout(self.timeout, self.fetch(&keys.issuer, &mut state.jwks_uri)).await;
        let fetched = match fetched {
            Ok(result) => result,
            Err(_) => Err(format!(
                "the identity provider {} did not answer within {} ms",
                keys.issuer,
                self.timeout.as_millis()
            )),
        };
        match fetched {
            Ok(set) => {
                state.last_error = None;
                let found = set.find(kid);
                keys.replace(set);
                match found {
                    Some(key) => Found::Key(key),
                    None => Found::Unknown,
                }
            }
            Err(why) => {
                tracing::warn!(issuer = %keys.issuer, error = %why, "cannot fetch the issuer's keys");
                state.last_error = Some(why.clone());
                // Keep using what was fetched before, if it has the key.
                match snapshot.find(kid) {
                    Some(key) => Found::Key(key),
                    None => Found::Unavailable {
                        why,
                        retry_after: self.cooldown.max(Duration::from_secs(1)),
                    },
                }
            }
        }
    }

    /// Discovers `jwks_uri` (once) and fetches the key set.
    async fn fetch(
        &self,
        issuer: &Issuer,
        jwks_uri: &mut Option<String>,
    ) -> Result<KeySet, String> {
        let uri = match jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let uri = self.discover(issuer).await?;
                *jwks_uri = Some(uri.clone());
                uri
            }
        };
        let body = self.get(&uri).await?;
        let set: RawKeySet = serde_json::from_slice(&body)
            .map_err(|e| format!("the key set at {uri} is not a JWKS ({e})"))?;
        let mut keys = KeySet {
            fetched_at: Some(Instant::now()),
            ..KeySet::default()
        };
        for raw in set.keys {
            let Ok(jwk) = serde_json::from_value::<Jwk>(raw) else {
                continue;
            };
            let Some(key) = signing_key(&jwk) else {
                continue;
            };
            match jwk.common.key_id {
                Some(kid) => {
                    keys.by_kid.insert(kid, key);
                }
                None => keys.unnamed.push(key),
            }
        }
        tracing::info!(%issuer, keys = keys.by_kid.len() + keys.unnamed.len(), "fetched the issuer's keys");
        Ok(keys)
    }

    /// The issuer's `jwks_uri`, from its metadata (RFC 8414, then OpenID
    /// Connect Discovery), which must name the issuer exactly.
    async fn discover(&self, issuer: &Issuer) -> Result<String, String> {
        let iss = issuer.as_str().trim_end_matches('/');
        let rfc8414 = match iss
            .find("://")
            .and_then(|i| iss[i + 3..].find('/').map(|j| i + 3 + j))
        {
            // https://host/path → https://host/.well-known/oauth-authorization-server/path
            Some(path_at) => format!(
                "{}/.well-known/oauth-authorization-server{}",
                &iss[..path_at],
                &iss[path_at..]
            ),
            None => format!("{iss}/.well-known/oauth-authorization-server"),
        };
        let oidc = format!("{iss}/.well-known/openid-configuration");
        let mut tried = Vec::new();
        for url in [rfc8414, oidc] {
            match self.get(&url).await {
                Ok(body) => {
                    let metadata: Metadata = serde_json::from_slice(&body)
                        .map_err(|e| format!("the metadata at {url} is not JSON metadata ({e})"))?;
                    if metadata.issuer != issuer.as_str() {
                        return Err(format!(
                            "the metadata at {url} names issuer {:?}, not {issuer:?}",
                            metadata.issuer
                        ));
                    }
                    return Ok(metadata.jwks_uri);
                }
                Err(why) => tried.push(why),
            }
        }
        Err(format!(
            "cannot discover the keys of {issuer}: {}",
            tried.join("; ")
        ))
    }

    /// `GET url`, a `200` body of at most [`MAX_DOCUMENT_BYTES`].
    async fn get(&self, url: &str) -> Result<Vec<u8>, String> {
        let mut response = self
            .http
            .get(url)
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("GET {url}: {e}"))?;
        if response.status() != reqwest::StatusCode::OK {
            return Err(format!("GET {url}: {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("GET {url}: {e}"))?
        {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(format!(
                    "GET {url}: larger than {} KiB",
                    MAX_DOCUMENT_BYTES / 1024
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

impl IssuerKeys {
    fn snapshot(&self) -> Arc<KeySet> {
        self.current
            .read()
            .map(|set| Arc::clone(&set))
            .unwrap_or_default()
    }

    fn replace(&self, set: KeySet) {
        if let Ok(mut current) = self.current.write() {
            *current = Arc::new(set);
        }
    }
}

#[derive(Deserialize)]
struct RawKeySet {
    keys: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
struct Metadata {
    issuer: String,
    jwks_uri: String,
}

/// The key a JWK describes, with the algorithms it may verify; `None` for
/// keys this server never verifies with (symmetric, for encryption, of an
/// unknown kind, or whose `alg` contradicts their type).
fn signing_key(jwk: &Jwk) -> Option<SigningKey> {
    if matches!(
        jwk.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    ) {
        return None;
    }
    let by_kind: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => AlgorithmFamily::Rsa.algorithms().to_vec(),
        AlgorithmParameters::EllipticCurve(p) => match p.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => {
            vec![Algorithm::EdDSA]
        }
        // Symmetric keys (and anything else) are never used.
        _ => return None,
    };
    let algorithms = match jwk.common.key_algorithm {
        None => by_kind,
        Some(named) => {
            let named = Algorithm::try_from(named).ok()?;
            if !by_kind.contains(&named) {
                return None;
            }
            vec![named]
        }
    };
    let key = DecodingKey::from_jwk(jwk).ok()?;
    Some(SigningKey { key, algorithms })
}
