//! Operations: the caller-chosen key that names an intended effect, and the
//! record the kitchen keeps of it.

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;
use time::OffsetDateTime;
use uuid::Uuid;

use super::action::Action;
use super::fingerprint::Fingerprint;
use super::tenant::TenantId;
use super::ticket::TicketId;

/// Shortest operation key accepted.
pub const MIN_KEY_LEN: usize = 8;
/// Longest operation key accepted.
pub const MAX_KEY_LEN: usize = 255;

/// A caller-chosen name for one intended effect, e.g. a UUID the caller made
/// before its first attempt and reuses on every retry.
///
/// It names the effect, not the transport request: a JSON-RPC id or an HTTP
/// request id changes between attempts, this must not. Printable ASCII
/// without spaces (0x21 to 0x7E), 8 to 255 characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct OperationKey(String);

/// Why a string is not an operation key. Its `Display` is written for the
/// caller and says what a good key looks like.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Fewer than 8 or more than 255 characters.
    #[error(
        "An operation key must be {MIN_KEY_LEN} to {MAX_KEY_LEN} characters long; this one has {0}. {GOOD_KEY}"
    )]
    Length(usize),
    /// A space, control character or non-ASCII character.
    #[error(
        "An operation key may only contain printable ASCII without spaces (0x21 to 0x7E); \
         found {0:?} at position {1}. {GOOD_KEY}"
    )]
    Character(char, usize),
}

const GOOD_KEY: &str = "Use a fresh UUID for each new intended effect, \
     such as 0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79, and send the same key again on every retry.";

impl OperationKey {
    /// Parses a key; the error says what a good key looks like.
    pub fn parse(raw: impl Into<String>) -> Result<Self, KeyError> {
        let raw = raw.into();
        if let Some((pos, ch)) = raw
            .chars()
            .enumerate()
            .find(|(_, c)| !matches!(c, '\x21'..='\x7e'))
        {
            return Err(KeyError::Character(ch, pos));
        }
        // Every character is ASCII here, so bytes == characters.
        if !(MIN_KEY_LEN..=MAX_KEY_LEN).contains(&raw.len()) {
            return Err(KeyError::Length(raw.len()));
        }
        Ok(Self(raw))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OperationKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where an operation is.
///
/// With the local backend the ticket and the record commit together, so a
/// record is only ever seen `succeeded`. With the remote backend the record
/// is written ahead of the call to the provider and can be seen in every
/// state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationState {
    /// The effect happened; the record holds its result.
    Succeeded,
    /// Recorded and being sent to the provider (or its sender stopped and
    /// the reconciler has not yet taken over).
    InProgress,
    /// The provider provably made nothing (it refused the request, or could
    /// not be reached). The key is not spent.
    FailedBeforeEffect,
    /// The request may or may not have made the ticket (a timeout, a lost
    /// connection, a 5xx). Reconciliation against the provider decides;
    /// until then nothing is sent again blindly.
    Unknown,
}

impl OperationState {
    /// The state as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::InProgress => "in_progress",
            Self::FailedBeforeEffect => "failed_before_effect",
            Self::Unknown => "unknown",
        }
    }

    pub(crate) fn parse(raw: &str) -> Option<Self> {
        Some(match raw {
            "succeeded" => Self::Succeeded,
            "in_progress" => Self::InProgress,
            "failed_before_effect" => Self::FailedBeforeEffect,
            "unknown" => Self::Unknown,
            _ => return None,
        })
    }
}

/// The frozen result of the first successful attempt: the JSON of what it
/// made (a ticket, a comment), exactly the bytes the first answer carried.
/// Replays return these bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultSnapshot(String);

impl ResultSnapshot {
    pub(crate) fn of(result: &impl Serialize) -> Result<Self, serde_json::Error> {
        serde_json::to_string(result).map(Self)
    }

    pub(crate) fn from_stored(raw: String) -> Self {
        Self(raw)
    }

    /// The snapshot's JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// What the snapshot holds, read back as `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.0)
    }
}

/// The kitchen's record of one operation, scoped to (tenant, action, key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationRecord {
    /// The tenant that owns the key.
    pub tenant_id: TenantId,
    /// What the operation does.
    pub action: Action,
    /// The caller's key.
    pub key: OperationKey,
    /// Fingerprint of the request that first used the key.
    pub fingerprint: Fingerprint,
    /// Where the operation is.
    pub state: OperationState,
    /// The ticket it made or acted on, once there is one.
    pub ticket_id: Option<TicketId>,
    /// The frozen result, once there is one.
    pub result: Option<ResultSnapshot>,
    /// The resource the operation made or acted on, once there is one: the
    /// ticket, or for `add_comment` the comment. Kept in the tombstone.
    pub resource_id: Option<Uuid>,
    /// When the key was first used.
    pub created_at: OffsetDateTime,
    /// Until when a retry replays the frozen result byte for byte.
    pub replayable_until: OffsetDateTime,
    /// Until when the key is remembered at all (at least as a tombstone);
    /// after it the key is free again.
    pub retained_until: OffsetDateTime,
    /// When the sweep dropped the frozen result, keeping only a tombstone.
    pub tombstoned_at: Option<OffsetDateTime>,
}

impl OperationRecord {
    /// A reference to this operation that carries none of its payload.
    pub fn reference(&self) -> OperationRef {
        OperationRef {
            action: self.action,
            key: self.key.clone(),
            created_at: self.created_at,
            resource: self.ticket_id,
            replayable_until: self.replayable_until,
            retained_until: self.retained_until,
        }
    }
}

/// Enough to look an operation up, to say when it happened and which
/// resource it made, and nothing of what it carried: given to callers whose
/// request conflicts with it (a caller that lost the first answer must be
/// able to find the ticket it already has).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationRef {
    /// The action.
    pub action: Action,
    /// The key.
    pub key: OperationKey,
    /// When the key was first used.
    pub created_at: OffsetDateTime,
    /// The ticket the operation made or acted on, once there is one.
    pub resource: Option<TicketId>,
    /// Until when a retry with this key replays the first answer.
    pub replayable_until: OffsetDateTime,
    /// Until when the key is remembered; after it the key is free again.
    pub retained_until: OffsetDateTime,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_uuids_and_printable_ascii() {
        for ok in [
            "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79",
            "abcdefgh",
            "!~#$%&'()*+,-./:;<=>?@[]^_`{|}",
            &"k".repeat(MAX_KEY_LEN),
        ] {
            assert!(OperationKey::parse(ok).is_ok(), "{ok:?}");
        }
    }

    #[test]
    fn rejects_with_a_message_that_shows_a_good_key() {
        for (bad, expected) in [
            ("short", KeyError::Length(5)),
            ("has space in it", KeyError::Character(' ', 3)),
            ("tab\there-ok", KeyError::Character('\t', 3)),
            ("clé-unique-01", KeyError::Character('é', 2)),
        ] {
            assert_eq!(OperationKey::parse(bad), Err(expected.clone()));
            assert!(expected.to_string().contains("UUID"));
        }
        assert_eq!(
            OperationKey::parse("k".repeat(MAX_KEY_LEN + 1)),
            Err(KeyError::Length(MAX_KEY_LEN + 1))
        );
    }
}
