//! What `tickets client …` does: build a `tickets-client` [`Client`] from
//! the command line, run one call (or the journal's pending ones) under
//! its retry policy, print each outcome as one JSON object on stdout, and
//! exit with the outcome's code.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};
use tickets_client::{
    Client, ClientConfig, Intent, Journal, JournalEntry, MemoryJournal, NewTicket, PatchField,
    Read, Settled, SqliteJournal, TicketPatch, WriteRequest,
};

use crate::client_cli::{ClientArgs, ClientCommand, ConnectionArgs, KeyArgs};

/// Exit code: done (or expired: it happened, long ago).
const EXIT_DONE: i32 = 0;
/// Exit code: refused (or, for `status`, nothing recorded).
const EXIT_REFUSED: i32 = 2;
/// Exit code: unknown whether it happened; finish it with the same key.
const EXIT_UNRESOLVED: i32 = 3;

/// Runs `tickets client …`. Errors of the client itself are returned (the
/// binary exits 1); any other outcome than done exits here with its code,
/// after stdout is flushed.
pub async fn run(args: ClientArgs) -> anyhow::Result<()> {
    let code = match args.command {
        ClientCommand::Create(create) => {
            let request = WriteRequest::CreateTicket {
                ticket: NewTicket {
                    project_id: create.project,
                    title: create.title,
                    description: create.description,
                    priority: create.priority,
                    confirm_new: create.confirm_new,
                },
            };
            write(&create.connection, request, create.key).await?
        }
        ClientCommand::Update(update) => {
            let patch = TicketPatch {
                title: update.title,
                description: match (update.description, update.remove_description) {
                    (Some(text), _) => PatchField::Set(text),
                    (None, true) => PatchField::Remove,
                    (None, false) => PatchField::Keep,
                },
                priority: update.priority,
                assignee: match (update.assignee, update.unassign) {
                    (Some(name), _) => PatchField::Set(name),
                    (None, true) => PatchField::Remove,
                    (None, false) => PatchField::Keep,
                },
            };
            let request = WriteRequest::UpdateTicket {
                ticket_id: update.ticket,
                patch,
                if_match: update.if_match,
            };
            write(&update.connection, request, update.key).await?
        }
        ClientCommand::Transition(transition) => {
            let request = WriteRequest::TransitionTicket {
                ticket_id: transition.ticket,
                to: transition.to,
                reason: transition.reason,
            };
            write(&transition.connection, request, transition.key).await?
        }
        ClientCommand::Comment(comment) => {
            let request = WriteRequest::AddComment {
                ticket_id: comment.ticket,
                body: comment.body,
            };
            write(&comment.connection, request, comment.key).await?
        }
        ClientCommand::Status(status) => {
            let client = client(&status.connection).await?;
            let (line, code) = match client.operation_status(status.action, &status.key).await? {
                Read::Found(record) => {
                    (json!({"outcome": "recorded", "status": record}), EXIT_DONE)
                }
                Read::NotFound(problem) => (
                    json!({"outcome": "not_recorded", "action": status.action, "key": status.key, "problem": problem}),
                    EXIT_REFUSED,
                ),
                Read::Refused(problem) => (
                    json!({"outcome": "refused", "problem": problem}),
                    EXIT_REFUSED,
                ),
                Read::Unreachable(last_seen) => (
                    json!({"outcome": "unreachable", "last_seen": last_seen}),
                    EXIT_UNRESOLVED,
                ),
            };
            print_line(&line)?;
            code
        }
        ClientCommand::Resume(resume) => {
            if resume.connection.journal.is_none() {
                anyhow::bail!(
                    "resume needs the journal the interrupted run wrote: --journal PATH (or \
                     TICKETS_CLIENT_JOURNAL)"
                );
            }
            let client = client(&resume.connection).await?;
            let mut code = EXIT_DONE;
            for (entry, settled) in client.resume().await? {
                print_line(&outcome_line(Some(&entry), &entry_action(&entry), &settled))?;
                code = worse(code, exit_code(&settled));
            }
            code
        }
    };
    std::io::stdout().flush()?;
    if code != EXIT_DONE {
        // The code is the answer a script reads; `main` can only say 0 or
        // 1. Nothing is left to clean up: the journal's writes are
        // committed and stdout is flushed.
        std::process::exit(code);
    }
    Ok(())
}

/// One write: a new intent (or the caller's key), or with `--resume` the
/// journal's unsettled entry for this same request.
async fn write(
    connection: &ConnectionArgs,
    request: WriteRequest,
    key: KeyArgs,
) -> anyhow::Result<i32> {
    let client = client(connection).await?;
    let action = request.action().as_str().to_owned();
    let same = |entry: &JournalEntry| {
        entry.request() == &request && key.key.as_ref().is_none_or(|k| k == entry.key())
    };
    // With --resume, this same request in the journal is this same intent:
    // one left pending is finished; one already settled (a rerun after it
    // succeeded) is sent again under its key, which replays its answer
    // and makes nothing new. Only without it is a new intent (a new key)
    // made.
    let (left_pending, settled_before) = if key.resume {
        let pending = client.pending().await?.into_iter().find(|e| same(e));
        let before = match pending {
            Some(_) => None,
            None => client.entries().await?.into_iter().rev().find(|e| same(e)),
        };
        (pending, before)
    } else {
        (None, None)
    };
    let (entry, settled) = match (left_pending, settled_before) {
        (Some(entry), _) => {
            let settled = client.finish(&entry).await?;
            (Some(entry), settled)
        }
        (None, Some(entry)) => {
            let intent = Intent::with_key(entry.key().clone(), request);
            (Some(entry), client.submit(intent).await?)
        }
        (None, None) => {
            let intent = match key.key {
                Some(key) => Intent::with_key(key, request),
                None => Intent::new(request),
            };
            (None, client.submit(intent).await?)
        }
    };
    print_line(&outcome_line(entry.as_ref(), &action, &settled))?;
    Ok(exit_code(&settled))
}

/// The client the connection arguments describe.
async fn client(connection: &ConnectionArgs) -> anyhow::Result<Client> {
    let journal: Arc<dyn Journal> = match &connection.journal {
        Some(path) => Arc::new(
            SqliteJournal::open(path)
                .await
                .with_context(|| format!("cannot open the journal {}", path.display()))?,
        ),
        None => Arc::new(MemoryJournal::new()),
    };
    let config = ClientConfig {
        call_timeout: Duration::from_millis(connection.timeout_ms),
        journal,
        max_transient_retries: connection.max_transient_retries,
        max_wait: Duration::from_millis(connection.max_wait_ms),
        reconcile_within: Duration::from_millis(connection.reconcile_within_ms),
        ..ClientConfig::default()
    };
    Ok(Client::new(&connection.url, &connection.token, config)?)
}

fn entry_action(entry: &JournalEntry) -> String {
    entry.action().as_str().to_owned()
}

/// The line printed for one outcome: `outcome`, `action`, `key`, and the
/// resource under its name (`ticket` or `comment`), the problem, or what
/// was seen last; `journal_entry` for an entry finished from the journal.
fn outcome_line(entry: Option<&JournalEntry>, action: &str, settled: &Settled<Value>) -> Value {
    let resource = match action {
        "add_comment" => "comment",
        _ => "ticket",
    };
    let mut line = json!({
        "outcome": settled.outcome(),
        "action": action,
        "key": settled.key(),
    });
    match settled {
        Settled::Done {
            value, replayed, ..
        } => {
            line["replayed"] = json!(replayed);
            line[resource] = value.clone();
        }
        Settled::Expired { value, .. } => line[resource] = value.clone(),
        Settled::Refused { problem, .. } => line["problem"] = json!(problem),
        Settled::Unresolved { last_seen, .. } => line["last_seen"] = json!(last_seen),
    }
    if let Some(entry) = entry {
        line["journal_entry"] = json!(entry.id());
    }
    line
}

fn exit_code(settled: &Settled<Value>) -> i32 {
    match settled {
        Settled::Done { .. } | Settled::Expired { .. } => EXIT_DONE,
        Settled::Refused { .. } => EXIT_REFUSED,
        Settled::Unresolved { .. } => EXIT_UNRESOLVED,
    }
}

/// Of two codes, the one that needs more attention: unresolved, then
/// refused, then done.
fn worse(a: i32, b: i32) -> i32 {
    let rank = |code| match code {
        EXIT_UNRESOLVED => 2,
        EXIT_REFUSED => 1,
        _ => 0,
    };
    if rank(b) > rank(a) { b } else { a }
}

fn print_line(line: &Value) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, line)?;
    out.write_all(b"\n")?;
    Ok(())
}
