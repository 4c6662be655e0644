//! The fingerprint: what "the same request" means.
//!
//! SHA-256 over a canonical encoding of the *normalized* command: defaults
//! filled in, fields in a fixed (alphabetical) order, canonical JSON. Two
//! requests that mean the same thing fingerprint the same whatever their JSON
//! field order or omitted defaults; any change to a meaningful field changes
//! it. The key, the tenant and transport metadata are deliberately not part
//! of it: they are the scope, not the content.

use std::fmt;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::action::Action;
use super::ticket::NewTicket;

/// The encoding version new fingerprints are made with. Bump it (and keep
/// the old encoder) if the canonical form ever changes, so stored records
/// made under the old form still compare correctly.
pub const FINGERPRINT_VERSION: i16 = 1;

/// A versioned SHA-256 digest of a normalized command.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    version: i16,
    hex: String,
}

/// Version 1 of `create_ticket`'s canonical form. Field order here is the
/// encoding: keep it alphabetical and never change it without bumping the
/// version.
#[derive(Serialize)]
pub(crate) struct CanonicalV1<'a> {
    description: Option<&'a str>,
    priority: &'a str,
    project_id: &'a str,
    title: &'a str,
}

impl NewTicket {
    pub(crate) fn canonical(&self) -> CanonicalV1<'_> {
        CanonicalV1 {
            description: self.description.as_ref().map(|d| d.as_str()),
            priority: self.priority.as_str(),
            project_id: self.project_id.as_str(),
            title: self.title.as_str(),
        }
    }
}

impl Fingerprint {
    /// The fingerprint of a create command under the current version.
    pub fn of(action: Action, command: &NewTicket) -> Self {
        Self::of_canonical(action, &command.canonical())
    }

    /// The fingerprint of any action's canonical form: a struct of plain
    /// strings, numbers and options, fields in alphabetical order.
    pub(crate) fn of_canonical(action: Action, canonical: &impl Serialize) -> Self {
        // Serializing plain strings, numbers and options cannot fail.
        let json = serde_json::to_vec(canonical).unwrap_or_default();
        let mut hasher = Sha256::new();
        // The action and version are hashed in so that a digest can never be
        // mistaken for one of another action or another encoding.
        hasher.update(format!("{action}\nv{FINGERPRINT_VERSION}\n").as_bytes());
        hasher.update(&json);
        Self {
            version: FINGERPRINT_VERSION,
            hex: hex::encode(hasher.finalize()),
        }
    }

    pub(crate) fn from_stored(version: i16, hex: String) -> Self {
        Self { version, hex }
    }

    /// The encoding version.
    pub fn version(&self) -> i16 {
        self.version
    }

    /// The digest, lowercase hex.
    pub fn hex(&self) -> &str {
        &self.hex
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}:{}", self.version, self.hex)
    }
}
