//! [`OAuthSettings`]: resource-server mode, validated once at start.

use std::time::Duration;

use kitchen::Issuer;

/// How long a JWKS fetch (discovery included) may take by default.
pub const DEFAULT_JWKS_TIMEOUT: Duration = Duration::from_secs(2);
/// The least time between two fetches of one issuer's keys by default: a
/// token with an unknown `kid` refreshes the keys at most this often.
pub const DEFAULT_JWKS_COOLDOWN: Duration = Duration::from_secs(10);
/// Clock skew allowed on `exp` and `nbf` by default.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);

/// Accept access tokens from these identity providers, for this resource.
///
/// Off unless configured (the embedded default needs no identity
/// provider); API tokens work either way.
#[derive(Debug, Clone)]
pub struct OAuthSettings {
    pub(crate) issuers: Vec<Issuer>,
    pub(crate) resource: ResourceUrl,
    pub(crate) tenant_claim: Option<String>,
    pub(crate) jwks_timeout: Duration,
    pub(crate) jwks_cooldown: Duration,
    pub(crate) leeway: Duration,
}

/// A setting that cannot be used, and why (names the setting).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(pub String);

impl OAuthSettings {
    /// Trust `issuers` (each the exact `iss` of its tokens) for access
    /// tokens whose audience is `resource`, this server's canonical URL
    /// (RFC 8707), e.g. `https://tickets.example.com/mcp`. Both must be
    /// `https://` URLs, or `http://` on a loopback host.
    pub fn new(issuers: &[String], resource: &str) -> Result<Self, SettingsError> {
        if issuers.is_empty() {
            return Err(SettingsError(
                "OAUTH_ISSUERS: name at least one identity provider (its issuer URL)".into(),
            ));
        }
        let issuers = issuers
            .iter()
            .map(|raw| {
                secure_url("OAUTH_ISSUERS", raw)?;
                Issuer::parse(raw.as_str())
                    .map_err(|e| SettingsError(format!("OAUTH_ISSUERS: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            issuers,
            resource: ResourceUrl::parse(resource)?,
            tenant_claim: None,
            jwks_timeout: DEFAULT_JWKS_TIMEOUT,
            jwks_cooldown: DEFAULT_JWKS_COOLDOWN,
            leeway: DEFAULT_LEEWAY,
        })
    }

    /// Take the tenant from this claim's value (a tenant's name) when the
    /// token's subject is not mapped to a tenant.
    #[must_use]
    pub fn tenant_claim(self, claim: Option<String>) -> Self {
        Self {
            tenant_claim: claim.filter(|c| !c.is_empty()),
            ..self
        }
    }

    /// How long fetching an issuer's keys may take before callers get `503`.
    #[must_use]
    pub fn jwks_timeout(self, timeout: Duration) -> Self {
        Self {
            jwks_timeout: timeout.max(Duration::from_millis(1)),
            ..self
        }
    }

    /// The least time between two fetches of one issuer's keys.
    #[must_use]
    pub fn jwks_cooldown(self, cooldown: Duration) -> Self {
        Self {
            jwks_cooldown: cooldown,
            ..self
        }
    }

    /// Clock skew allowed on `exp` and `nbf`.
    #[must_use]
    pub fn leeway(self, leeway: Duration) -> Self {
        Self { leeway, ..self }
    }

    /// The trusted issuers.
    pub fn issuers(&self) -> &[Issuer] {
        &self.issuers
    }

    /// This server's canonical resource URL: the audience its tokens carry.
    pub fn resource(&self) -> &str {
        self.resource.as_str()
    }
}

/// The canonical URL of this protected resource (RFC 8707 section 2,
/// RFC 9728): what clients ask tokens for, and the audience they carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResourceUrl {
    raw: String,
    metadata_url: String,
}

impl ResourceUrl {
    fn parse(raw: &str) -> Result<Self, SettingsError> {
        let url = secure_url("OAUTH_AUDIENCE", raw)?;
        if url.fragment().is_some() || url.query().is_some() {
            return Err(SettingsError(format!(
                "OAUTH_AUDIENCE {raw:?}: a resource URL has no query or fragment (RFC 8707)"
            )));
        }
        let origin = url.origin().ascii_serialization();
        let path = url.path().trim_end_matches('/');
        Ok(Self {
            raw: raw.to_owned(),
            metadata_url: format!("{origin}{METADATA_PATH}{path}"),
        })
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.raw
    }

    /// Where its metadata is (RFC 9728 section 3.1: the well-known path
    /// inserted between the host and the resource's path).
    pub(crate) fn metadata_url(&self) -> &str {
        &self.metadata_url
    }
}

/// The well-known path of protected resource metadata (RFC 9728).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// `raw` as a URL that is `https`, or `http` on a loopback host (a
/// development identity provider).
fn secure_url(setting: &str, raw: &str) -> Result<url::Url, SettingsError> {
    let url = url::Url::parse(raw)
        .map_err(|e| SettingsError(format!("{setting} {raw:?}: not a URL ({e})")))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(name)) => name == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" if url.host().is_some() => Ok(url),
        "http" if loopback => Ok(url),
        _ => Err(SettingsError(format!(
            "{setting} {raw:?}: use an https:// URL (http:// only on a loopback host)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_is_the_well_known_path_before_the_resource_path() {
        let at = |resource: &str| {
            OAuthSettings::new(&["https://idp.example".into()], resource)
                .expect("valid")
                .resource
                .metadata_url()
                .to_owned()
        };
        assert_eq!(
            at("https://tickets.example.com/mcp"),
            "https://tickets.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            at("https://tickets.example.com"),
            "https://tickets.example.com/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            at("http://127.0.0.1:8080/mcp"),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"
        );
    }

    #[test]
    fn insecure_or_odd_urls_are_refused_naming_the_setting() {
        let issuers = ["https://idp.example".to_owned()];
        for (resource, why) in [
            ("http://tickets.example.com/mcp", "https"),
            ("https://tickets.example.com/mcp#x", "fragment"),
            ("https://tickets.example.com/mcp?a=b", "query"),
            ("not a url", "not a URL"),
        ] {
            let err = OAuthSettings::new(&issuers, resource).expect_err(resource);
            assert!(err.0.contains("OAUTH_AUDIENCE"), "{err}");
            assert!(err.0.contains(why), "{err}");
        }
        let err = OAuthSettings::new(&["http://idp.example".into()], "https://t.example")
            .expect_err("insecure issuer");
        assert!(err.0.contains("OAUTH_ISSUERS"), "{err}");
        assert!(OAuthSettings::new(&[], "https://t.example").is_err());
    }
}
