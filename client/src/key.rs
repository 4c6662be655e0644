//! The operation key: the name of one intended effect, the same on every
//! attempt at it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Fewest characters a key may have (the contract's limit).
pub const MIN_KEY_LEN: usize = 8;
/// Most characters a key may have (the contract's limit).
pub const MAX_KEY_LEN: usize = 255;

/// The name of one intended effect (a ticket to create, an edit, a move, a
/// comment): sent as `Idempotency-Key` on every attempt at it, and the
/// address of its status lookup.
///
/// 8 to 255 printable ASCII characters without spaces, as the contract
/// says. A key that starts with `"` is refused: the server would read it
/// as an RFC 8941 string (the key without its quotes) while its status
/// lookup would name it with them, so pass keys bare.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct OperationKey(String);

/// Why a string cannot be an operation key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidKey {
    /// Too short or too long.
    #[error("an operation key is {MIN_KEY_LEN} to {MAX_KEY_LEN} characters; this one has {0}")]
    Length(usize),
    /// A space, a control character or a non-ASCII character.
    #[error(
        "an operation key is printable ASCII without spaces (0x21 to 0x7E); it has {found:?} at \
         byte {at}"
    )]
    Character {
        /// The first character that is not allowed.
        found: char,
        /// Where it is.
        at: usize,
    },
    /// Sent in RFC 8941 quotes.
    #[error("an operation key must not start with '\"': pass the key bare, without quotes")]
    Quoted,
}

impl OperationKey {
    /// `raw` as a key, if the contract allows it.
    pub fn parse(raw: impl Into<String>) -> Result<Self, InvalidKey> {
        let raw = raw.into();
        if let Some((at, found)) = raw.char_indices().find(|(_, c)| !('!'..='~').contains(c)) {
            return Err(InvalidKey::Character { found, at });
        }
        if !(MIN_KEY_LEN..=MAX_KEY_LEN).contains(&raw.len()) {
            return Err(InvalidKey::Length(raw.len()));
        }
        if raw.starts_with('"') {
            return Err(InvalidKey::Quoted);
        }
        Ok(Self(raw))
    }

    /// A new key (a UUID v7). Only [`crate::Intent::new`] calls this, once
    /// per intent, before the intent is journaled: nothing that runs an
    /// attempt can make a key, so a retry can only ever send the one in
    /// the journal entry.
    pub(crate) fn fresh() -> Self {
        Self(uuid::Uuid::now_v7().to_string())
    }

    /// The key as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OperationKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for OperationKey {
    type Err = InvalidKey;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl TryFrom<String> for OperationKey {
    type Error = InvalidKey;

    fn try_from(raw: String) -> Result<Self, Self::Error> {
        Self::parse(raw)
    }
}

impl From<OperationKey> for String {
    fn from(key: OperationKey) -> Self {
        key.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_contract() {
        let fine = [
            "01936b2e-6a4f-7c3e-9f00-4c2d1e5b6a79",
            "abcdefgh",
            "k/with?odd#chars%",
        ];
        for raw in fine {
            assert_eq!(OperationKey::parse(raw).map(String::from), Ok(raw.into()));
        }
        assert_eq!(OperationKey::parse("short"), Err(InvalidKey::Length(5)));
        assert_eq!(
            OperationKey::parse("x".repeat(256)),
            Err(InvalidKey::Length(256))
        );
        assert!(OperationKey::parse("x".repeat(255)).is_ok());
        assert_eq!(
            OperationKey::parse("has a space"),
            Err(InvalidKey::Character { found: ' ', at: 3 })
        );
        assert_eq!(
            OperationKey::parse("naïve-key-1"),
            Err(InvalidKey::Character { found: 'ï', at: 2 })
        );
        assert_eq!(
            OperationKey::parse("\"quoted-key\""),
            Err(InvalidKey::Quoted)
        );
    }

    #[test]
    fn fresh_keys_are_valid_and_distinct() {
        let (a, b) = (OperationKey::fresh(), OperationKey::fresh());
        assert_ne!(a, b);
        assert_eq!(OperationKey::parse(a.as_str()), Ok(a));
    }
}
