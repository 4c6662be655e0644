//! What every write tool shares, the counterpart of the REST door's
//! `routes/writes.rs`: the call's life (its caller and attempt, the wait for
//! its outcome or a task, its measurements), the operation_id read first
//! and alone, and the answer to the kitchen's outcome. A write tool is a
//! [`WriteTool`] in `actions/`: it says only how its arguments become a
//! kitchen command and its outcome a result.

use std::sync::OnceLock;

use kitchen::{Action, FieldViolation, OperationKey, Outcome, Refusal};
use rmcp::model::{CallToolResponse, CallToolResult};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use telemetry::{Attempt, ContractFailure, Door};
use tracing::Instrument;

use crate::args::merge;
use crate::fields::{no_ticket, required};
use crate::outcomes::{Answered, invalid_write};
use crate::result_text;
use crate::tasks::{self, Waited};
use crate::tools::{TicketTools, Who, tool_needs};

/// One write tool: its action, its arguments, and how they become a
/// kitchen command whose outcome becomes the tool's result. Everything
/// else a write does is [`TicketTools::write`]'s.
pub(crate) trait WriteTool {
    /// The action, whose name the tool carries.
    const ACTION: Action;
    /// The tool's arguments.
    type Args: Send;
    /// The write itself. Arguments are checked in the REST door's order:
    /// the operation_id first and alone ([`keyed`]), then every other
    /// argument at once; nothing reaches the kitchen, so nothing touches
    /// the key, until all of them are fine.
    fn perform(
        tools: &TicketTools,
        call: &WriteCall,
        args: Self::Args,
    ) -> impl Future<Output = Result<Answered, McpError>> + Send;
}

/// A write call in flight: who makes it, its attempt (the span and the
/// measurements of one write), and its operation key once parsed.
pub(crate) struct WriteCall {
    pub(crate) action: Action,
    pub(crate) who: Who,
    pub(crate) attempt: Attempt,
    /// Set by the write's body once the key parsed: what a task for the
    /// call is named after.
    key: OnceLock<OperationKey>,
}

impl WriteCall {
    /// Records the call's key, on its attempt and for a task.
    pub(crate) fn keyed(&self, key: &OperationKey) {
        self.attempt.record_key(key.as_str());
        let _ = self.key.set(key.clone());
    }
}

/// A write's key, checked first and alone: without a usable key there is
/// nothing to keep, so no other argument is looked at. Either the key and
/// the other arguments' problems, or the `invalid` answer (boxed: it is the
/// rarer and much larger side).
pub(crate) fn keyed(
    action: Action,
    raw: Option<String>,
    problems: Vec<FieldViolation>,
) -> Result<(OperationKey, Vec<FieldViolation>), Box<Answered>> {
    let (key_problems, problems): (Vec<_>, Vec<_>) = problems
        .into_iter()
        .partition(|p| p.field == "operation_id");
    if !key_problems.is_empty() {
        return Err(Box::new(Answered::new(
            invalid_write(action, None, key_problems),
            "invalid",
            Some(ContractFailure::IdempotencyKeyMalformed),
        )));
    }
    let Some(raw) = raw else {
        let violation = required("operation_id", &result_text::operation_id_required(action));
        return Err(Box::new(Answered::new(
            invalid_write(action, None, vec![violation]),
            "invalid",
            Some(ContractFailure::IdempotencyKeyMissing),
        )));
    };
    match OperationKey::parse(raw.as_str()) {
        Ok(key) => Ok((key, problems)),
        Err(e) => {
            let violation = FieldViolation {
                field: "operation_id".into(),
                code: "malformed",
                message: e.to_string(),
            };
            Err(Box::new(Answered::new(
                invalid_write(action, Some(raw), vec![violation]),
                "invalid",
                Some(ContractFailure::IdempotencyKeyMalformed),
            )))
        }
    }
}

/// The `invalid` answer of a write whose arguments the door refused
/// (`problems`, then the kitchen's own findings in `checked` for the
/// arguments without one), before anything touched the key.
pub(crate) fn refused_arguments(
    action: Action,
    key: &OperationKey,
    problems: Vec<FieldViolation>,
    checked: Vec<FieldViolation>,
) -> Answered {
    Answered::new(
        invalid_write(action, Some(key.as_str().into()), merge(problems, checked)),
        "invalid",
        Some(ContractFailure::ValidationFailed),
    )
}

/// The answer to the kitchen's `outcome` of a write `action`, with its
/// name and failure kind for the attempt, and whether it is final.
pub(crate) fn answered<T>(
    action: Action,
    outcome: Outcome<T>,
    result: impl FnOnce(Outcome<T>) -> Result<CallToolResult, McpError>,
) -> Result<Answered, McpError> {
    let name = outcome.name();
    let failure = ContractFailure::of(&outcome);
    let pending = tasks::pending(action, &outcome);
    Ok(Answered {
        pending,
        ..Answered::new(result(outcome)?, name, failure)
    })
}

impl TicketTools {
    /// A call of the write tool `W`: begun, performed in its attempt's
    /// span, waited for (or made a task), measured and answered.
    pub(crate) async fn write<W: WriteTool>(
        &self,
        args: W::Args,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let call = self.begin(W::ACTION, ctx)?;
        let work = W::perform(self, &call, args).instrument(call.attempt.span().clone());
        let waited = self.wait(&call, ctx, work).await;
        self.end(call, waited)
    }

    /// Starts a write call: its caller, and its attempt with three
    /// identities (the operation key, recorded once parsed; the attempt id
    /// Attempt makes; the JSON-RPC id of this request).
    fn begin(
        &self,
        action: Action,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<WriteCall, McpError> {
        let who = self.caller(tool_needs(action.as_str()), ctx)?;
        // Each write tool is named after its action.
        let contract = self.contract(action.as_str());
        let attempt = Attempt::start(
            &self.metrics,
            Door::Mcp,
            action.as_str(),
            &who.tenant,
            &ctx.id.to_string(),
            Some(contract),
        );
        // An agent that traces its calls sends its span in `_meta`: our
        // attempt joins its trace.
        attempt.join_trace(ctx.meta.get_traceparent(), ctx.meta.get_tracestate());
        Ok(WriteCall {
            action,
            who,
            attempt,
            key: OnceLock::new(),
        })
    }

    /// Waits for a write call's `work`: to its end, or for a client that
    /// opted into tasks until it is a task (see [`crate::tasks`]).
    async fn wait(
        &self,
        call: &WriteCall,
        ctx: &RequestContext<RoleServer>,
        work: impl Future<Output = Result<Answered, McpError>>,
    ) -> Waited {
        match self.tasks.filter(|_| tasks::opted_in(ctx)) {
            None => Waited::Answer(work.await),
            Some(settings) => {
                let tenant = call.who.tenant.id;
                tasks::wait(
                    &self.kitchen,
                    settings,
                    tenant,
                    call.action,
                    &call.key,
                    work,
                )
                .await
            }
        }
    }

    /// Ends a write call: measures its outcome and passes the answer on. A
    /// task is measured as the outcome that made it one (`unknown`,
    /// `in_progress`), or as `task` when the bound passed first.
    fn end(&self, call: WriteCall, waited: Waited) -> Result<CallToolResponse, McpError> {
        let (outcome, failure) = match &waited {
            Waited::Answer(Ok(answered)) => (answered.outcome, answered.failure),
            Waited::Answer(Err(_)) => ("error", None),
            Waited::Task { outcome, .. } => (*outcome, None),
        };
        call.attempt.finish(outcome, failure);
        self.metrics.tool_call(
            call.action.as_str(),
            self.contract(call.action.as_str()),
            outcome,
        );
        match waited {
            Waited::Answer(answer) => answer.map(|a| CallToolResponse::Complete(a.result)),
            Waited::Task { task, .. } => Ok(CallToolResponse::Task(task)),
        }
    }
}

/// The outcome for a ticket_id that is no ticket id: the kitchen's own
/// refusal for a ticket that does not exist, so that the two answers are
/// one by construction and reveal nothing.
pub(crate) fn unknown_ticket<T>() -> Outcome<T> {
    Outcome::Refused(Refusal::TicketNotFound {
        ticket_id: no_ticket(),
    })
}
