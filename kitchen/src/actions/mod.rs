//! The write actions, one file each. Each is a [`WriteAction`]: a type that
//! says how its request is validated, what its fingerprint covers and what
//! it does inside the one transaction. The generic path in `crate::write`
//! does the rest.
//!
//! [`WriteAction`]: crate::write::WriteAction

pub(crate) mod add_comment;
pub(crate) mod create_ticket;
pub(crate) mod transition_ticket;
pub(crate) mod update_ticket;
