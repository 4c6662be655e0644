//! `WWW-Authenticate` values (RFC 6750 section 3), for both doors.
//!
//! With OAuth on, every challenge names this server's protected resource
//! metadata (RFC 9728 section 5.1), which is how an MCP client that follows
//! the MCP authorization spec finds the identity provider; a missing token
//! also gets the scopes worth asking for. With OAuth off no metadata is
//! named, so such a client is not sent into a sign-in flow that cannot
//! succeed, and the description says to send a static token instead.

use kitchen::Scopes;

/// The realm of every challenge.
const REALM: &str = "tickets";

/// Builds this server's challenges.
#[derive(Debug, Clone, Default)]
pub struct Challenges {
    /// Where the protected resource metadata is; `None` with OAuth off.
    resource_metadata: Option<String>,
}

impl Challenges {
    pub(crate) fn new(resource_metadata: Option<String>) -> Self {
        Self { resource_metadata }
    }

    /// No token was sent.
    pub fn missing(&self) -> String {
        match &self.resource_metadata {
            None => self.challenge(
                None,
                None,
                "send Authorization: Bearer <token> (a static token from tickets token issue)",
            ),
            Some(_) => self.challenge(
                None,
                Some(Scopes::ALL),
                "sign in with the identity provider named in the resource metadata, or send a \
                 static API token as Authorization: Bearer <token>",
            ),
        }
    }

    /// The token was not accepted; `why` says why.
    pub fn invalid(&self, why: &str) -> String {
        self.challenge(Some("invalid_token"), None, why)
    }

    /// The token is valid but lacks `needed` (only the scopes this request
    /// needs and the token lacks, as RFC 6750 section 3.1 and the MCP
    /// authorization spec ask: a client adds them to what it holds).
    pub fn insufficient(&self, needed: Scopes) -> String {
        self.challenge(
            Some("insufficient_scope"),
            Some(needed),
            &format!("this request needs the scope {needed}"),
        )
    }

    fn challenge(&self, error: Option<&str>, scope: Option<Scopes>, description: &str) -> String {
        let mut value = format!("Bearer realm=\"{REALM}\"");
        if let Some(url) = &self.resource_metadata {
            value.push_str(&format!(", resource_metadata=\"{}\"", quoted(url)));
        }
        if let Some(error) = error {
            value.push_str(&format!(", error=\"{error}\""));
        }
        if let Some(scope) = scope {
            value.push_str(&format!(", scope=\"{scope}\""));
        }
        value.push_str(&format!(", error_description=\"{}\"", quoted(description)));
        value
    }
}

/// `text` as the inside of a quoted string RFC 6750 allows: printable ASCII
/// without `"` and `\` (those become `'`, anything else a `?`).
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            ' '..='~' => c,
            _ => '?',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use kitchen::Scope;

    use super::*;

    #[test]
    fn without_oauth_the_challenges_name_no_metadata() {
        let off = Challenges::default();
        assert_eq!(
            off.missing(),
            r#"Bearer realm="tickets", error_description="send Authorization: Bearer <token> (a static token from tickets token issue)""#
        );
        assert_eq!(
            off.invalid("the bearer token is unknown or revoked"),
            r#"Bearer realm="tickets", error="invalid_token", error_description="the bearer token is unknown or revoked""#
        );
    }

    #[test]
    fn descriptions_cannot_break_out_of_their_quotes() {
        let on = Challenges::new(Some(
            "https://t.example/.well-known/oauth-protected-resource".into(),
        ));
        let value = on.invalid("issuer \"x\\\" é\n");
        assert!(
            value.ends_with(r#"error_description="issuer 'x'' ??""#),
            "{value}"
        );
        assert!(
            on.insufficient(Scopes::only(Scope::Write))
                .contains(r#"error="insufficient_scope", scope="tickets:write""#)
        );
    }
}
