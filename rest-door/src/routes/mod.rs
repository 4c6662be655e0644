//! Handlers, one module per resource.

pub(crate) mod health;
pub(crate) mod operations;
pub(crate) mod problems;
pub(crate) mod telemetry;
pub(crate) mod tickets;
