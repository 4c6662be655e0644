//! Handlers, one module per resource, and what the write routes share.

pub(crate) mod comments;
pub(crate) mod discovery;
pub(crate) mod health;
pub(crate) mod history;
pub(crate) mod labels;
pub(crate) mod operations;
pub(crate) mod pages;
pub(crate) mod problems;
pub(crate) mod telemetry;
pub(crate) mod tickets;
pub(crate) mod transitions;
pub(crate) mod writes;
