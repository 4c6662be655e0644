//! MCP tasks (the `io.modelcontextprotocol/tasks` extension of the
//! 2026-07-28 protocol): a write whose outcome is not final within a short
//! bound answers with a task instead of blocking, and `tasks/*` read the
//! operation record, never this process's memory.
//!
//! - The task id is `{action}/{operation_id}` ([`TaskId`]). It names the
//!   operation record, so any instance answers for it, before and after a
//!   restart, for as long as the record keeps its answer (its replay
//!   window: the task's `ttlMs`). It is resolved only within the caller's
//!   tenant (from authentication, as the tools get it), which can already
//!   read the same record with `get_operation_status`: the id reveals
//!   nothing more, and its entropy is the operation_id's.
//! - Who gets a task ([`opted_in`]): a request that declares the extension
//!   and speaks 2026-07-28 or later, to tools built with [`TaskSettings`]
//!   (the HTTP endpoint's). Every other client waits for the outcome, as
//!   before.
//! - When ([`wait`]): the outcome came and is `unknown` (not given up) or
//!   `in_progress`, or the bound passed first; and only once the operation
//!   is recorded, so that `tasks/get` resolves the id from the moment the
//!   task is returned. Without a record the call keeps waiting.
//! - `tasks/get` ([`get`]): `working` while the effect is in flight or
//!   unknown; `completed`, with the tool's own result, once it happened
//!   (`created`, `updated`), provably did not (`not_created`), or
//!   reconciliation gave up on it (`unknown`: an operator must look). The
//!   spec's `failed` is never used (it carries a JSON-RPC error, and every
//!   end of a write is a tool result), nor `cancelled`, nor
//!   `input_required`.
//! - `tasks/cancel` ([`cancel`]) is acknowledged, as the extension
//!   requires, and changes nothing: the write is recorded and sent, and
//!   cancelling cannot undo it; it finishes, and `tasks/get` shows how.
//!   `tasks/update` ([`update`]) only acknowledges a known id: no task asks
//!   for input.

use std::fmt;
use std::sync::OnceLock;
use std::time::Duration;

use kitchen::{
    Action, Comment, KeyPhase, Kitchen, OperationKey, OperationRecord, OperationStatus, Outcome,
    TenantId, Ticket, UNKNOWN_RETRY_AFTER, rfc3339,
};
use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, GetTaskResult, ProtocolVersion, Task,
    TaskPayload, TaskStatus,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::Value;

use crate::outcomes::{
    Answered, comment_write_result, create_result, ticket_write_result, unexpected,
};
use crate::result_text;
use crate::vocabulary::{ResultShape, words};

/// When a write answers with a task, and how often its client is told to
/// poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSettings {
    /// How long a write by a client that declared the tasks extension is
    /// waited for before it answers with a task, if its outcome is not final
    /// by then. The HTTP endpoint keeps it under half its request timeout,
    /// so that the task comes before the timeout's error.
    pub bound: Duration,
    /// The `pollIntervalMs` every task carries.
    pub poll_interval: Duration,
}

impl Default for TaskSettings {
    /// Two seconds each: the poll interval is the kitchen's wait before
    /// asking again about an unknown effect.
    fn default() -> Self {
        Self {
            bound: Duration::from_secs(2),
            poll_interval: UNKNOWN_RETRY_AFTER,
        }
    }
}

impl TaskSettings {
    /// These settings for calls cut off after `request_timeout`: the bound
    /// at most half of it.
    pub(crate) fn within(self, request_timeout: Duration) -> Self {
        Self {
            bound: self.bound.min(request_timeout / 2),
            ..self
        }
    }
}

/// A task's id: `{action}/{operation_id}`, e.g.
/// `update_ticket/0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskId {
    action: Action,
    key: OperationKey,
}

impl TaskId {
    /// The id of the write `action` with `key`.
    pub(crate) fn new(action: Action, key: OperationKey) -> Self {
        Self { action, key }
    }

    /// `None` for anything but a write action's name, `/`, and a valid
    /// operation_id. An operation_id may itself hold a `/`; an action's
    /// name never does, so the first one separates them.
    pub(crate) fn parse(raw: &str) -> Option<Self> {
        let (action, key) = raw.split_once('/')?;
        Some(Self {
            action: Action::parse(action)?,
            key: OperationKey::parse(key).ok()?,
        })
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.action, self.key)
    }
}

/// Whether this request may be answered with a task: it declares the
/// tasks extension and speaks 2026-07-28 or later. (rmcp checks neither
/// for a tool over a session, and a client that declared the extension at
/// an older version's initialize cannot read a task.)
pub(crate) fn opted_in(ctx: &RequestContext<RoleServer>) -> bool {
    let declared = ctx
        .client_capabilities()
        .is_some_and(|c| c.supports_tasks());
    // ISO dates: lexical order is chronological.
    let modern = ctx
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    declared && modern
}

/// What a task for `outcome` would say while it runs: `Some` for an
/// outcome that is not final (an unknown effect still being reconciled, a
/// write still running under another call), `None` for a final one.
pub(crate) fn pending<T>(action: Action, outcome: &Outcome<T>) -> Option<String> {
    match outcome {
        Outcome::Unknown {
            reason,
            gave_up: false,
            ..
        } => Some(reason.clone()),
        Outcome::InProgress { .. } => Some(result_text::task_working(action)),
        _ => None,
    }
}

/// How a write call ended for its client.
pub(crate) enum Waited {
    /// The tool's answer, as without tasks.
    Answer(Result<Answered, McpError>),
    /// A task for the write, which goes on without the caller; `outcome`
    /// is what the attempt is measured as: the kitchen's outcome name when
    /// it came, [`TASK_OUTCOME`] when the bound passed first.
    Task {
        /// The task.
        task: CreateTaskResult,
        /// The attempt's outcome label.
        outcome: &'static str,
    },
}

/// The outcome label of a write that answered with a task before the
/// kitchen gave an outcome.
pub(crate) const TASK_OUTCOME: &str = "task";

/// Waits for `work`, the write `action` of `tenant` whose key the work
/// sets in `key` once it has parsed it, for a client that opted in: see
/// the module docs. Dropping `work` for a task stops nothing: the kitchen
/// runs every write on its own task, to its end.
pub(crate) async fn wait(
    kitchen: &Kitchen,
    settings: TaskSettings,
    tenant: TenantId,
    action: Action,
    key: &OnceLock<OperationKey>,
    work: impl Future<Output = Result<Answered, McpError>>,
) -> Waited {
    let mut work = std::pin::pin!(work);
    let bound = settings.bound.max(Duration::from_millis(1));
    let mut check = tokio::time::interval_at(tokio::time::Instant::now() + bound, bound);
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            answer = &mut work => {
                let pending = answer.as_ref().ok().and_then(|a| a.pending.clone());
                if let (Some(message), Some(key), Ok(answered)) = (pending, key.get(), &answer)
                    && let Some(record) = recorded(kitchen, tenant, action, key).await
                {
                    return Waited::Task {
                        task: seed(kitchen, settings, &record, message),
                        outcome: answered.outcome,
                    };
                }
                return Waited::Answer(answer);
            }
            _ = check.tick() => {
                // Past the bound: a task, once there is a record to name.
                if let Some(key) = key.get()
                    && let Some(record) = recorded(kitchen, tenant, action, key).await
                {
                    let message = result_text::task_working(action);
                    return Waited::Task {
                        task: seed(kitchen, settings, &record, message),
                        outcome: TASK_OUTCOME,
                    };
                }
            }
        }
    }
}

/// The operation's record, if there is one yet. A failure to read it is
/// logged and taken as none: the caller then waits, as without tasks.
async fn recorded(
    kitchen: &Kitchen,
    tenant: TenantId,
    action: Action,
    key: &OperationKey,
) -> Option<OperationRecord> {
    match kitchen.operation(tenant, action, key).await {
        Ok(record) => record,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the record a task would name; waiting");
            None
        }
    }
}

/// The task a write answers with: `working`, with `message`.
fn seed(
    kitchen: &Kitchen,
    settings: TaskSettings,
    record: &OperationRecord,
    message: String,
) -> CreateTaskResult {
    let now = rfc3339(kitchen.config().clock.now());
    let id = TaskId::new(record.action, record.key.clone());
    CreateTaskResult::new(task(settings, &id, record, now).with_status_message(message))
}

/// A task's fields for the operation `record`: created with it, kept (and
/// resolved) until its replay window ends, polled every
/// [`TaskSettings::poll_interval`].
fn task(settings: TaskSettings, id: &TaskId, record: &OperationRecord, updated: String) -> Task {
    let ttl = (record.replayable_until - record.created_at).whole_milliseconds();
    Task::new(
        id.to_string(),
        TaskStatus::Working,
        rfc3339(record.created_at),
        updated,
    )
    .with_ttl_ms(u64::try_from(ttl).unwrap_or(0))
    .with_poll_interval_ms(u64::try_from(settings.poll_interval.as_millis()).unwrap_or(u64::MAX))
}

/// `tasks/get`: the task `raw` of `tenant`, as its operation record says
/// now (a read: on the remote backend it may search the provider to
/// settle an unknown effect, never send).
pub(crate) async fn get(
    kitchen: &Kitchen,
    settings: TaskSettings,
    tenant: TenantId,
    raw: &str,
) -> Result<GetTaskResult, McpError> {
    let (id, status) = find(kitchen, tenant, raw, "retrieve").await?;
    let base = task(settings, &id, &status.record, last_updated(&status));
    let task = match tool_result(&status)? {
        None => DetailedTask::new(
            base.with_status_message(working(&status)),
            TaskPayload::Working,
        ),
        Some(result) => DetailedTask::new(
            base,
            TaskPayload::Completed {
                result: as_object(&result)?,
            },
        ),
    };
    Ok(GetTaskResult::new(task))
}

/// `tasks/cancel`: acknowledged for a known task, as the tasks extension
/// requires ("a server is not obligated to actually stop the work; it is
/// only obligated to acknowledge"), and nothing more: an unfinished write
/// was recorded before it was sent, so it may already have happened, and
/// it finishes; `tasks/get` then shows its result. A finished one has
/// nothing left to stop. An id this tenant never recorded is `-32602`.
pub(crate) async fn cancel(kitchen: &Kitchen, tenant: TenantId, raw: &str) -> Result<(), McpError> {
    let (_, status) = find(kitchen, tenant, raw, "cancel").await?;
    if let Ok(None) = status.ended::<IgnoredAny>() {
        tracing::info!(
            task = raw,
            "tasks/cancel acknowledged; the write cannot be undone and will finish"
        );
    }
    Ok(())
}

/// `tasks/update`: acknowledges a known task. No task ever asks for input,
/// so there is nothing to deliver.
pub(crate) async fn update(kitchen: &Kitchen, tenant: TenantId, raw: &str) -> Result<(), McpError> {
    find(kitchen, tenant, raw, "update").await.map(|_| ())
}

/// The task `raw` of `tenant` and its operation's status; `-32602` for an
/// id that names nothing this tenant has recorded, or whose answer is past
/// its replay window. `verb` is what the request does to the task.
async fn find(
    kitchen: &Kitchen,
    tenant: TenantId,
    raw: &str,
    verb: &str,
) -> Result<(TaskId, OperationStatus), McpError> {
    let not_found = || McpError::invalid_params(result_text::task_not_found(verb), None);
    let id = TaskId::parse(raw).ok_or_else(not_found)?;
    let status = kitchen
        .operation_status(tenant, id.action, &id.key)
        .await
        .map_err(unexpected)?
        .ok_or_else(not_found)?;
    match status.phase {
        KeyPhase::Replayable => Ok((id, status)),
        KeyPhase::Expired | KeyPhase::Forgotten => Err(McpError::invalid_params(
            result_text::task_expired(
                verb,
                id.action,
                id.key.as_str(),
                &rfc3339(status.record.replayable_until),
            ),
            None,
        )),
    }
}

/// The write's tool result once it has ended, by the kitchen's rule for
/// what its record means: for a write that happened, its first answer
/// (`created`, `updated`) from the frozen snapshot. `None` while it is in
/// flight or unknown.
fn tool_result(status: &OperationStatus) -> Result<Option<CallToolResult>, McpError> {
    let key = &status.record.key;
    let action = status.record.action;
    match words(action).result {
        ResultShape::NewTicket => ended::<Ticket>(status)?.map(|o| create_result(key, o)),
        ResultShape::ChangedTicket => {
            ended::<Ticket>(status)?.map(|o| ticket_write_result(action, key, o))
        }
        ResultShape::Comment => ended::<Comment>(status)?.map(|o| comment_write_result(key, o)),
    }
    .transpose()
}

fn ended<T: DeserializeOwned>(status: &OperationStatus) -> Result<Option<Outcome<T>>, McpError> {
    status.ended::<T>().map_err(unexpected)
}

/// What a working task says: what the ledger knows, or what to do
/// meanwhile.
fn working(status: &OperationStatus) -> String {
    status.detail().map_or_else(
        || result_text::task_working(status.record.action),
        str::to_owned,
    )
}

/// When the task last changed: the latest moment its ledger records (a
/// dispatch or lookup starting or ending), or its creation.
fn last_updated(status: &OperationStatus) -> String {
    let mut latest = status.record.created_at;
    if let Some(effect) = &status.effect {
        let moments = effect
            .attempts
            .iter()
            .flat_map(|a| [Some(a.started_at), a.finished_at])
            .chain([effect.last_dispatched_at]);
        for moment in moments.flatten() {
            latest = latest.max(moment);
        }
    }
    rfc3339(latest)
}

/// A tool result as the JSON object a completed task carries.
fn as_object(result: &CallToolResult) -> Result<serde_json::Map<String, Value>, McpError> {
    match serde_json::to_value(result) {
        Ok(Value::Object(object)) => Ok(object),
        other => {
            tracing::error!(?other, "a tool result is not a JSON object");
            Err(McpError::internal_error(result_text::INTERNAL, None))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79";

    fn key(raw: &str) -> OperationKey {
        OperationKey::parse(raw).expect("a key")
    }

    #[test]
    fn a_task_id_is_the_action_and_the_operation_id_and_reads_back() {
        for action in Action::ALL {
            let id = TaskId::new(action, key(KEY));
            let text = id.to_string();
            assert_eq!(text, format!("{}/{KEY}", action.as_str()));
            assert_eq!(TaskId::parse(&text), Some(id));
        }
    }

    #[test]
    fn an_operation_id_with_slashes_reads_back_whole() {
        // Printable ASCII is a valid key, `/` included: only the first `/`
        // separates.
        let odd = "a/b/c/d/e/f";
        let id = TaskId::new(Action::AddComment, key(odd));
        assert_eq!(id.to_string(), "add_comment/a/b/c/d/e/f");
        let back = TaskId::parse("add_comment/a/b/c/d/e/f").expect("an id");
        assert_eq!((back.action, back.key.as_str()), (Action::AddComment, odd));
    }

    #[test]
    fn anything_else_is_no_task_id() {
        for raw in [
            "",
            "nope",
            "/",
            KEY,
            "create_ticket",
            "create_ticket/",
            &format!("/{KEY}"),
            // Not a write action (another tool's, or none).
            &format!("get_operation_status/{KEY}"),
            &format!("delete_ticket/{KEY}"),
            &format!("Create_Ticket/{KEY}"),
            &format!("create_ticket /{KEY}"),
            // Keys OperationKey::parse refuses: too short, too long, a
            // space, a non-ASCII character.
            "create_ticket/short",
            &format!("create_ticket/{}", "k".repeat(kitchen::MAX_KEY_LEN + 1)),
            "update_ticket/has space in it",
            "add_comment/clé-unique-01",
        ] {
            assert_eq!(TaskId::parse(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn the_bound_stays_under_half_the_request_timeout() {
        let settings = TaskSettings::default();
        assert_eq!(settings.bound, Duration::from_secs(2));
        assert_eq!(settings.poll_interval, UNKNOWN_RETRY_AFTER);
        assert_eq!(settings.within(Duration::from_secs(30)), settings);
        assert_eq!(
            settings.within(Duration::from_secs(1)).bound,
            Duration::from_millis(500)
        );
    }

    #[test]
    fn only_an_unknown_not_given_up_or_a_running_write_is_pending() {
        let operation = kitchen::OperationRef {
            action: Action::CreateTicket,
            key: key(KEY),
            created_at: time::OffsetDateTime::UNIX_EPOCH,
            resource: None,
            replayable_until: time::OffsetDateTime::UNIX_EPOCH,
            retained_until: time::OffsetDateTime::UNIX_EPOCH,
        };
        let lost = Outcome::<Ticket>::Unknown {
            operation: operation.clone(),
            gave_up: false,
            reason: "The provider's answer was lost.".into(),
        };
        assert_eq!(
            pending(Action::CreateTicket, &lost).as_deref(),
            Some("The provider's answer was lost.")
        );
        let running = Outcome::<Ticket>::InProgress {
            retry_after: kitchen::RETRY_AFTER,
        };
        let message = pending(Action::UpdateTicket, &running).expect("pending");
        assert!(message.contains("tasks/get"), "{message}");
        assert!(message.contains("make the change twice"), "{message}");
        let given_up = Outcome::<Ticket>::Unknown {
            operation: operation.clone(),
            gave_up: true,
            reason: "Reconciliation gave up after 20 attempts: ...".into(),
        };
        assert_eq!(pending(Action::CreateTicket, &given_up), None);
        let not_created = Outcome::<Ticket>::NotCreated {
            operation,
            reason: kitchen::NotCreatedReason::Unavailable("down".into()),
        };
        assert_eq!(pending(Action::CreateTicket, &not_created), None);
        let invalid = Outcome::<Ticket>::Invalid { violations: vec![] };
        assert_eq!(pending(Action::CreateTicket, &invalid), None);
    }
}
