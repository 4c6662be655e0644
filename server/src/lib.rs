//! The ticket service: both doors over one kitchen, in one process.
//!
//! `main.rs` only parses the command line and calls into here, so tests run
//! exactly what the binary runs: [`Application::build`] binds a listener
//! (port 0 in tests), [`Application::port`] says where, and
//! [`Application::run_until_stopped`] serves until a shutdown future fires.
//!
//! # Layout
//!
//! - [`cli`]: the command line (`serve`, `tenant create`, `token issue|revoke`).
//! - [`app`]: the HTTP application: the doors' routers and the tower-http
//!   stack every request goes through (request id, tracing, timeout, body
//!   limit, compression, problem bodies for bare errors), over one kitchen
//!   and one set of metrics (the `telemetry` crate).
//! - [`admin`]: tenant and token commands.
//! - `shutdown`: SIGINT/SIGTERM as a future.

pub mod admin;
pub mod app;
pub mod cli;
pub mod shutdown;

pub use app::{Application, ServeSettings};
