//! Identities an identity provider vouches for, and how one finds its
//! tenant.
//!
//! An access token from a trusted issuer names a subject (`sub`) and may
//! carry a tenant claim (e.g. `org_id`). The kitchen knows nothing of tokens
//! or keys (the `access` crate verifies them); it only answers which tenant
//! an (issuer, subject) or a claim value names: an operator's explicit
//! mapping of the subject first, else a tenant whose name is the claim's
//! value. Nothing is ever created on the way: an identity that names no
//! tenant is refused.

use std::fmt;

/// Longest issuer identifier accepted, in bytes.
pub const MAX_ISSUER_LEN: usize = 2048;
/// Longest subject accepted, in characters (OpenID Connect's limit).
pub const MAX_SUBJECT_CHARS: usize = 255;

/// An issuer identifier: the `iss` of its tokens, an `http(s)` URL without
/// query or fragment, compared as an exact string (RFC 8414 section 3.3).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Issuer(String);

impl Issuer {
    /// Parses an issuer identifier; the error says what one looks like.
    pub fn parse(raw: impl Into<String>) -> Result<Self, String> {
        let raw = raw.into();
        let scheme_ok = raw.starts_with("https://") || raw.starts_with("http://");
        let printable = raw.chars().all(|c| c.is_ascii_graphic());
        if !scheme_ok
            || !printable
            || raw.contains(['?', '#'])
            || raw.len() > MAX_ISSUER_LEN
            || raw.ends_with("://")
        {
            return Err(format!(
                "an issuer is the identity provider's `iss` value: an https:// (or http:// on \
                 loopback) URL without query or fragment, at most {MAX_ISSUER_LEN} bytes; got \
                 {raw:?}"
            ));
        }
        Ok(Self(raw))
    }

    /// The identifier as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Issuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A subject: whom the issuer's token is about (`sub`), unique per issuer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Subject(String);

impl Subject {
    /// Parses a subject; the error says what one looks like.
    pub fn parse(raw: impl Into<String>) -> Result<Self, String> {
        let raw = raw.into();
        let chars = raw.chars().count();
        if chars == 0 || chars > MAX_SUBJECT_CHARS || raw.chars().any(char::is_control) {
            return Err(format!(
                "a subject is the token's `sub`: 1 to {MAX_SUBJECT_CHARS} characters without \
                 control characters; got {raw:?}"
            ));
        }
        Ok(Self(raw))
    }

    /// The subject as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who a verified access token says is calling.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OAuthIdentity {
    /// The issuer that signed the token.
    pub issuer: Issuer,
    /// The token's subject.
    pub subject: Subject,
    /// The value of the configured tenant claim, when the deployment names
    /// one and the token carries it as a string.
    pub tenant_claim: Option<String>,
}

/// How an identity found its tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TenantVia {
    /// An operator mapped the (issuer, subject) to the tenant
    /// (`tickets oauth map`).
    SubjectMapping,
    /// The tenant claim's value is the tenant's name.
    Claim,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issuers_are_urls_without_query_or_fragment() {
        assert!(Issuer::parse("https://login.example.com/tenant-1/v2.0").is_ok());
        assert!(Issuer::parse("http://127.0.0.1:9000").is_ok());
        for bad in [
            "",
            "login.example.com",
            "https://",
            "https://a.example/?x=1",
            "https://a.example/#f",
            "https://a example",
        ] {
            assert!(Issuer::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn subjects_are_short_printable_text() {
        assert!(Subject::parse("auth0|6543").is_ok());
        assert!(Subject::parse("").is_err());
        assert!(Subject::parse("a\nb").is_err());
        assert!(Subject::parse("x".repeat(256)).is_err());
    }
}
