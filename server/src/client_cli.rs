//! `tickets client …`: the command line of `tickets-client`, clap types
//! only, so that scripts get the retry policy without writing Rust. What
//! they make happen is in `client_run`.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use tickets_client::{Action, OperationKey, Priority, TicketId, TicketStatus};

/// `client …`: call a running service with the retry policy.
#[derive(Debug, Args)]
pub struct ClientArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ClientCommand,
}

/// The client's subcommands. Each write prints one JSON object on stdout
/// (`outcome`: `done`, `expired`, `refused` or `unresolved`) and exits 0
/// (done or expired), 2 (refused), 3 (unresolved: unknown whether it
/// happened; finish it later with the same key) or 1 (an error of the
/// client itself).
#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Create a ticket.
    Create(CreateArgs),
    /// Change a ticket's title, description, priority or assignee.
    Update(UpdateArgs),
    /// Move a ticket to another status.
    Transition(TransitionArgs),
    /// Comment on a ticket.
    Comment(CommentArgs),
    /// What the service recorded for a key (exit 0 recorded, 2 nothing
    /// recorded, 3 no answer).
    Status(StatusArgs),
    /// Finish every intent the journal holds unsettled (a crashed run's,
    /// or an unresolved one), each with its own key: one line each; exit
    /// 3 if any is still unresolved, else 2 if any was refused, else 0.
    Resume(ResumeArgs),
}

/// Where the service is and how hard to try; every subcommand takes them.
#[derive(Debug, Clone, Args)]
pub struct ConnectionArgs {
    /// The service's base URL, e.g. https://tickets.example.com.
    #[arg(long, env = "TICKETS_URL")]
    pub url: String,
    /// A bearer token (`tickets token issue TENANT`).
    #[arg(long, env = "TICKETS_TOKEN", hide_env_values = true)]
    pub token: String,
    /// The journal file (SQLite, made if missing): every intent is written
    /// there, with its key, before its first attempt, so that a run that
    /// crashes is finished by `resume` (or `--resume`) with the same key.
    /// Without it the journal lives only as long as this run.
    #[arg(long, env = "TICKETS_CLIENT_JOURNAL")]
    pub journal: Option<PathBuf>,
    /// Milliseconds one HTTP request may take before its outcome counts as
    /// unknown (and is looked up): the service's p95 latency plus a buffer.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_ms: u64,
    /// Most re-sends after transient answers (no connection, 502, 503,
    /// 504, 409 in progress).
    #[arg(long, default_value_t = 3)]
    pub max_transient_retries: u32,
    /// Longest single wait in milliseconds, whatever Retry-After says.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_wait_ms: u64,
    /// Milliseconds a reconciliation keeps looking a key up (an outcome the
    /// service is still settling, a server restarting) before the answer
    /// is `unresolved`.
    #[arg(long, default_value_t = 30_000)]
    pub reconcile_within_ms: u64,
}

/// Which key a write is sent under.
#[derive(Debug, Clone, Args)]
pub struct KeyArgs {
    /// Send under this key, one you already have (a retry of an intent
    /// started before), instead of a new one.
    #[arg(long)]
    pub key: Option<OperationKey>,
    /// If the journal holds this same request unsettled (a crashed or
    /// unresolved run), finish that one with its key instead of starting a
    /// new intent. Rerunning a command with --resume never makes its effect
    /// twice.
    #[arg(long, requires = "journal")]
    pub resume: bool,
}

/// `client create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Where the service is.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// The project's slug.
    #[arg(long)]
    pub project: String,
    /// One-line summary.
    #[arg(long)]
    pub title: String,
    /// Longer text.
    #[arg(long)]
    pub description: Option<String>,
    /// low, normal (the default), high or urgent.
    #[arg(long)]
    pub priority: Option<Priority>,
    /// A second ticket is meant even if one with the same content was made
    /// under another key within the server's likely-duplicate window
    /// (sends `confirm_new: true`; without it a server in `confirm` mode
    /// refuses it with `possible-duplicate`).
    #[arg(long)]
    pub confirm_new: bool,
    /// Which key.
    #[command(flatten)]
    pub key: KeyArgs,
}

/// `client update`: a merge patch; what is not named is kept.
#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// Where the service is.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// The ticket's id.
    #[arg(long)]
    pub ticket: TicketId,
    /// A new title.
    #[arg(long)]
    pub title: Option<String>,
    /// A new description.
    #[arg(long, conflicts_with = "remove_description")]
    pub description: Option<String>,
    /// Remove the description.
    #[arg(long)]
    pub remove_description: bool,
    /// A new priority.
    #[arg(long)]
    pub priority: Option<Priority>,
    /// A new assignee.
    #[arg(long, conflicts_with = "unassign")]
    pub assignee: Option<String>,
    /// Unassign it.
    #[arg(long)]
    pub unassign: bool,
    /// Only if the ticket is still at this version (its ETag).
    #[arg(long)]
    pub if_match: Option<u64>,
    /// Which key.
    #[command(flatten)]
    pub key: KeyArgs,
}

/// `client transition`.
#[derive(Debug, Args)]
pub struct TransitionArgs {
    /// Where the service is.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// The ticket's id.
    #[arg(long)]
    pub ticket: TicketId,
    /// open, in_progress, resolved or closed.
    #[arg(long)]
    pub to: TicketStatus,
    /// Why, kept in the ticket's history.
    #[arg(long)]
    pub reason: Option<String>,
    /// Which key.
    #[command(flatten)]
    pub key: KeyArgs,
}

/// `client comment`.
#[derive(Debug, Args)]
pub struct CommentArgs {
    /// Where the service is.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// The ticket's id.
    #[arg(long)]
    pub ticket: TicketId,
    /// The comment's text.
    #[arg(long)]
    pub body: String,
    /// Which key.
    #[command(flatten)]
    pub key: KeyArgs,
}

/// `client status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Where the service is.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// create_ticket, update_ticket, transition_ticket or add_comment.
    #[arg(long, default_value = "create_ticket")]
    pub action: Action,
    /// The key to look up.
    #[arg(long)]
    pub key: OperationKey,
}

/// `client resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// Where the service is (the journal is required).
    #[command(flatten)]
    pub connection: ConnectionArgs,
}
