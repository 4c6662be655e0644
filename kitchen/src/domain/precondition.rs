//! The precondition a change to an existing ticket may carry: "only if the
//! ticket is still at the version I read" (REST `If-Match`, MCP
//! `expected_version`). One rule for every such write (`update_ticket`,
//! `transition_ticket`, `add_comment`): the version is part of the command
//! and of its fingerprint, and a ticket at another version refuses it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::ticket::{TicketId, Version};

/// The ticket a change is for, and the version the caller expects it to be
/// at (`None`: whatever version it is at).
///
/// A bare [`TicketId`] converts into an unconditional one, so a caller who
/// does not care about versions just names the ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TicketAt {
    /// The ticket.
    pub ticket_id: TicketId,
    /// Refuse the change unless the ticket is at this version.
    pub expected_version: Option<Version>,
}

impl TicketAt {
    /// A change to `ticket_id` if it is still at `expected_version` (`None`:
    /// at any version).
    pub fn new(ticket_id: TicketId, expected_version: Option<Version>) -> Self {
        Self {
            ticket_id,
            expected_version,
        }
    }
}

impl From<TicketId> for TicketAt {
    fn from(ticket_id: TicketId) -> Self {
        Self::new(ticket_id, None)
    }
}

/// How a request names its ticket in the JSON the remote backend keeps with
/// the write-ahead record: the bare id when no version is expected (byte for
/// byte what the previous release stored, so its records still read), an
/// object when one is.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Stored {
    Bare(TicketId),
    At {
        ticket_id: TicketId,
        expected_version: Option<Version>,
    },
}

impl Serialize for TicketAt {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.expected_version {
            None => Stored::Bare(self.ticket_id),
            Some(_) => Stored::At {
                ticket_id: self.ticket_id,
                expected_version: self.expected_version,
            },
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for TicketAt {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Stored::deserialize(deserializer)? {
            Stored::Bare(ticket_id) => Self::new(ticket_id, None),
            Stored::At {
                ticket_id,
                expected_version,
            } => Self::new(ticket_id, expected_version),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unconditional_target_is_stored_as_the_bare_id() {
        let id = TicketId::new_v7();
        let json = serde_json::to_string(&TicketAt::from(id)).expect("json");
        assert_eq!(json, serde_json::to_string(&id).expect("json"));
        let back: TicketAt = serde_json::from_str(&json).expect("reads back");
        assert_eq!(back, TicketAt::from(id));
    }

    #[test]
    fn a_conditional_target_keeps_its_version() {
        let at = TicketAt::new(TicketId::new_v7(), Some(Version::from_stored(4)));
        let json = serde_json::to_string(&at).expect("json");
        let back: TicketAt = serde_json::from_str(&json).expect("reads back");
        assert_eq!(back, at);
    }
}
