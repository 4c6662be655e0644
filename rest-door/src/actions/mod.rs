//! One file per write route, as the kitchen has one file per action: the
//! route (its `#[utoipa::path]`, from which the OpenAPI document is made),
//! the body it reads, the kitchen call it makes, and which answer its
//! success is. What every write shares (the key read first, the one match
//! on the outcome, the metrics) is `routes/writes.rs`; each write's words
//! are `vocabulary.rs`; the reads are in `routes/`, one file per resource.

pub(crate) mod add_comment;
pub(crate) mod add_label;
pub(crate) mod create_ticket;
pub(crate) mod remove_label;
pub(crate) mod transition_ticket;
pub(crate) mod update_ticket;
