//! The one rule for a conditional change (see `domain::precondition`): a
//! ticket at another version than the caller expected refuses it, before
//! anything else is looked at, on either backend.

use crate::domain::ticket::{Ticket, Version};
use crate::outcome::Refusal;

/// Refuses a change whose caller expected another version than `ticket`'s;
/// no expected version allows any.
pub(crate) fn at_expected_version(
    expected: Option<Version>,
    ticket: &Ticket,
) -> Result<(), Refusal> {
    match expected {
        Some(expected) if expected != ticket.version => Err(Refusal::VersionMismatch {
            expected,
            current: ticket.version,
        }),
        _ => Ok(()),
    }
}
