//! The operators' console: server-rendered HTML (maud; no JavaScript, no
//! build step) on an admin listener of its own, over the kitchen and this
//! instance's metrics. What an operator on the embedded default has to
//! look at besides `/metrics` text.
//!
//! Pages: what callers are doing (outcomes per door and action, retry and
//! conflict rates), the effects that need a person with a settle form (the
//! same rules as `tickets ops settle`: the kitchen decides), a lookup by
//! tenant, action and key, and `/metrics`.
//!
//! Who may use it: the listener is loopback-only unless an operator token
//! is configured ([`ConsoleSettings::check`]); with a token every request
//! needs it (HTTP Basic, any user name, or a bearer token). A settle form
//! carries a per-process token, so another site cannot post one through an
//! operator's browser.
//!
//! # Layout
//! - this file: the settings and the router;
//! - `guard.rs`: the operator token and the form token;
//! - `layout.rs`: the page frame and its style;
//! - `overview.rs`: what callers are doing, and the upkeep behind it;
//! - `history.rs`: the last hour in 10-second steps, for sparklines;
//! - `effects.rs`: operations that need a person, each with a settle form;
//! - `settle.rs`: the form's POST;
//! - `lookup.rs`: one operation by tenant, action and key;
//! - `failed.rs`: the page a failure answers with;
//! - `words.rs`: how the pages name tenants and ages.

mod effects;
mod failed;
mod guard;
mod history;
mod layout;
mod lookup;
mod overview;
mod settle;
mod words;

use std::net::SocketAddr;

use axum::Router;
use axum::routing::{get, post};
use kitchen::Kitchen;
use telemetry::Metrics;

/// Where the console listens and who may use it.
#[derive(Clone)]
pub struct ConsoleSettings {
    /// The admin listener's address.
    pub listen: SocketAddr,
    /// The operator token every request must carry; `None` allows only a
    /// loopback address.
    pub token: Option<String>,
}

impl std::fmt::Debug for ConsoleSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleSettings")
            .field("listen", &self.listen)
            .field("token", &self.token.as_ref().map(|_| "(set)"))
            .finish()
    }
}

impl ConsoleSettings {
    /// Refuses an address anyone on the network could reach without an
    /// operator token: the console settles effects, so it must not be
    /// open to whoever finds the port.
    pub fn check(&self) -> Result<(), String> {
        if self.token.as_deref().is_some_and(|t| t.len() < 16) {
            return Err(
                "ADMIN_TOKEN must be at least 16 characters: it guards settling effects by hand"
                    .to_owned(),
            );
        }
        if !self.listen.ip().is_loopback() && self.token.is_none() {
            return Err(format!(
                "ADMIN_LISTEN={} is reachable from other machines, and no ADMIN_TOKEN is set: \
                 anyone who found the port could settle effects. Listen on loopback (e.g. \
                 127.0.0.1:8081, and reach it over SSH), or set ADMIN_TOKEN (at least 16 \
                 characters) and send it as the password of HTTP Basic",
                self.listen
            ));
        }
        Ok(())
    }
}

/// What every page reads.
#[derive(Clone)]
pub(crate) struct Console {
    pub(crate) kitchen: Kitchen,
    pub(crate) metrics: Metrics,
    pub(crate) guard: guard::Guard,
    pub(crate) history: std::sync::Arc<history::History>,
}

/// The console's routes, guarded as `settings` say. Call it on a Tokio
/// runtime: it starts sampling the metrics for the overview's sparklines.
pub fn router(kitchen: Kitchen, metrics: Metrics, settings: &ConsoleSettings) -> Router {
    let console = Console {
        history: history::History::start(metrics.clone()),
        kitchen,
        metrics,
        guard: guard::Guard::new(settings.token.clone()),
    };
    Router::new()
        .route("/", get(overview::page))
        .route("/effects", get(effects::page))
        .route("/settle", post(settle::submit))
        .route("/lookup", get(lookup::page_of))
        .route("/metrics", get(overview::metrics))
        .layer(axum::middleware::from_fn_with_state(
            console.clone(),
            guard::require_operator,
        ))
        .with_state(console)
}
