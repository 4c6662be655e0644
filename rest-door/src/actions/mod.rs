//! One file per write route, as the kitchen has one file per action, and
//! the list of them ([`routes`]). Each file holds the route (its
//! `#[utoipa::path]`, from which the OpenAPI document is made), the body it
//! reads, the kitchen call it makes, and which answer its success is. What every write shares (the key read first, the one match
//! on the outcome, the metrics) is `routes/writes.rs`; each write's words
//! are `vocabulary.rs`; the reads are in `routes/`, one file per resource.

mod add_comment;
mod add_label;
mod create_ticket;
mod remove_label;
mod transition_ticket;
mod update_ticket;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::DoorState;

/// Every write route, for the router and the OpenAPI document alike: a new
/// action is its file's `mod` line above and one line here. (Its scope,
/// `tickets:write`, follows from its `operationId`, the action's name:
/// `access::policy`.)
pub(crate) fn routes() -> OpenApiRouter<DoorState> {
    OpenApiRouter::new()
        .routes(routes!(create_ticket::create))
        .routes(routes!(update_ticket::update))
        .routes(routes!(transition_ticket::transition))
        .routes(routes!(add_comment::add))
        .routes(routes!(add_label::add))
        .routes(routes!(remove_label::remove))
}
