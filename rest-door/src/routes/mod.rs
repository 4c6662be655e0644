//! The reads, one module per resource, the service's own routes (health,
//! discovery, problems, telemetry), and what the write routes share
//! (`writes`); each write route is its own file in `actions/`.

pub(crate) mod comments;
pub(crate) mod discovery;
pub(crate) mod health;
pub(crate) mod history;
pub(crate) mod operation_list;
pub(crate) mod operations;
pub(crate) mod pages;
pub(crate) mod problems;
pub(crate) mod telemetry;
pub(crate) mod tickets;
pub(crate) mod writes;
