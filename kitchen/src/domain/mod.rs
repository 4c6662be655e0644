//! Value types of the domain. Every type here is parsed once, at the edge, and
//! is valid for as long as it exists ("parse, don't validate").

pub(crate) mod action;
pub(crate) mod change;
pub(crate) mod comment;
pub(crate) mod duplicate;
pub(crate) mod effect;
pub(crate) mod fault;
pub(crate) mod fingerprint;
pub(crate) mod history;
pub(crate) mod identity;
pub(crate) mod label;
pub(crate) mod label_change;
pub(crate) mod lifecycle;
pub(crate) mod operation;
pub(crate) mod operation_list;
pub(crate) mod page;
pub(crate) mod patch;
pub(crate) mod precondition;
pub(crate) mod scope;
pub(crate) mod settlement;
pub(crate) mod slug;
pub(crate) mod status;
pub(crate) mod tenant;
pub(crate) mod text;
pub(crate) mod ticket;
pub(crate) mod transition;
pub(crate) mod uuid_id;
pub(crate) mod violation;
pub(crate) mod wait;
