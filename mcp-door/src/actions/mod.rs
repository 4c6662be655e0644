//! One file per write tool, as the kitchen has one file per action: the
//! tool's definition (its name, description, output schema and hints), its
//! arguments (read through `args::Arguments`), and its
//! [`WriteTool`](crate::writes::WriteTool), how its arguments become the
//! kitchen's command and its outcome the tool's result. What every write
//! shares is in `writes`; the tool's words are in `contract`, where they
//! are hashed and linted together.
//!
//! Each file adds its tool to the server with a router of its own
//! (`#[tool_router(router = …)]`), which `TicketTools` joins with the read
//! tools' router.

pub(crate) mod add_comment;
pub(crate) mod add_label;
pub(crate) mod create_ticket;
pub(crate) mod remove_label;
pub(crate) mod transition_ticket;
pub(crate) mod update_ticket;
