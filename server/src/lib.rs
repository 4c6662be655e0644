//! The ticket service: both doors over one kitchen, in one process.
//!
//! `main.rs` only parses the command line and calls into here, so tests run
//! exactly what the binary runs: [`Application::build`] binds a listener
//! (port 0 in tests), [`Application::port`] says where, and
//! [`Application::run_until_stopped`] serves until a shutdown future fires.
//!
//! # Layout
//!
//! - [`cli`]: the command line's clap types (`serve`, `mcp-stdio`,
//!   `tenant create|list`, `token issue|revoke|list`, `oauth map|unmap`,
//!   `ops list|show|settle`)
//!   and nothing else; [`example_config`]: the commented example of every
//!   `serve` setting, written from those types (`docs/operations/tickets.env`).
//! - [`client_cli`] and `client_run`: `tickets client …`, the command
//!   line of the `tickets-client` crate (its retry policy for scripts):
//!   the clap types, and what they do.
//! - [`run`]: the composition root: `main` and what each command does
//!   (open the kitchen, serve HTTP or MCP over stdio with the reconciler,
//!   or run an admin command).
//! - [`app`]: the HTTP application: the doors' routers and the tower-http
//!   stacks requests go through (shared: request id, tracing, compression,
//!   the edge rules, gzip bodies; REST only: timeout, body limit, problem
//!   bodies for bare errors; `/mcp` limits and times itself, in JSON-RPC),
//!   over one kitchen and one set of metrics (the `telemetry` crate).
//! - `edge`: HTTP rules both doors share (headers sent once, a plain
//!   `Host`, no unsupported `Content-Encoding`), answered in the dialect of
//!   the door addressed.
//! - `connections`: the accept loop: hyper's HTTP/1.1 connections with a
//!   header-read timeout, an idle timeout, a connection limit and a
//!   shutdown deadline.
//! - `http_metrics`: `http.server.request.duration` (the semantic
//!   conventions' name) for every request through either door.
//! - `mcp_auth`: the bearer middleware as `/mcp` answers it (all in
//!   JSON-RPC; a `401` keeps the REST door's challenge).
//! - `rest_deadline`: the REST routes' request timeout (`408` for a body
//!   that never arrived, `503 timeout` for a request that ran too long).
//! - [`admin`]: tenant, token and identity-provider subject commands.
//! - `ops`: the operators' commands: lists of operations across tenants,
//!   one operation as recorded, settling an effect by hand.
//! - `shutdown`: SIGINT/SIGTERM as a future.

pub mod admin;
pub mod app;
pub mod cli;
pub mod client_cli;
mod client_run;
mod connections;
mod edge;
pub mod example_config;
mod http_metrics;
mod mcp_auth;
mod ops;
mod rest_deadline;
pub mod run;
pub mod shutdown;

pub use app::{Application, ServeSettings};
