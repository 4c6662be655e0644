//! What every write tool shares, the counterpart of the REST door's
//! `routes/writes.rs`: the call's life (its caller and attempt, the wait for
//! its outcome or a task, its measurements), the operation_id read first
//! and alone, and the answer to the kitchen's outcome. A write tool is a
//! [`WriteTool`] in `actions/`: it says only how its arguments become a
//! kitchen command and its outcome a result.

use std::sync::OnceLock;

use kitchen::{Action, FieldViolation, KitchenWrite, OperationKey, Outcome, Refusal, WriteOptions};
use rmcp::model::{CallToolResponse, CallToolResult};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use telemetry::{Attempt, ContractFailure, Door};
use tracing::Instrument;

use crate::args::{Arguments, Read, ToolArgs, merge};
use crate::fields::{no_ticket, required};
use crate::outcomes::{Answered, invalid_write, unexpected};
use crate::result_text;
use crate::tasks::{self, Waited};
use crate::tools::{TicketTools, Who, tool_needs};

/// One write tool: a kitchen write ([`KitchenWrite`], whose action names
/// the tool), its arguments, how they become the kitchen's request, and how
/// its outcome becomes the tool's result. Everything else a write does
/// (the operation_id read first and alone, every argument's problem
/// reported at once, the call's life) is [`TicketTools::write`]'s.
pub(crate) trait WriteTool: KitchenWrite {
    /// The tool's arguments.
    type Args: ToolArgs + Send;

    /// Takes the operation_id out of the arguments: it is read first, and
    /// alone.
    fn operation_id(args: &mut Self::Args) -> Option<String>;

    /// What the caller says about the write besides its request: that it
    /// means a new one (`confirm_new`, on the tools the likely-duplicate
    /// guard watches). Nothing, for the others.
    fn options(_args: &Self::Args) -> WriteOptions {
        WriteOptions::default()
    }

    /// The kitchen's request, from the other arguments, each of their
    /// problems added to `problems`. Nothing reaches the kitchen, so nothing
    /// touches the key, until there are none.
    fn request(args: Self::Args, problems: &mut Vec<FieldViolation>) -> ToolRequest<Self::Request>;

    /// The tool's result for the kitchen's `outcome`.
    fn result(
        key: &OperationKey,
        outcome: Outcome<Self::Result>,
    ) -> Result<CallToolResult, McpError>;
}

/// A write's request as its tool read it.
pub(crate) struct ToolRequest<R> {
    /// The kitchen's request (for a ticket_id that is no ticket id, made
    /// for [`no_ticket`] so that every other argument is still checked).
    pub(crate) request: R,
    /// Whether the ticket_id named a ticket (always, for a write on none).
    /// One that is no ticket id is answered as a ticket that does not
    /// exist, without asking the kitchen.
    pub(crate) names_a_ticket: bool,
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
    fn keyed(&self, key: &OperationKey) {
        self.attempt.record_key(key.as_str());
        let _ = self.key.set(key.clone());
    }
}

/// A write's key, checked first and alone: without a usable key there is
/// nothing to keep, so no other argument is looked at. Either the key and
/// the other arguments' problems, or the `invalid` answer (boxed: it is the
/// rarer and much larger side).
fn keyed(
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
fn refused_arguments(
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
fn answered<T>(
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
        args: Arguments<W::Args>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let call = self.begin(W::ACTION, ctx)?;
        let work = self
            .perform::<W>(&call, args)
            .instrument(call.attempt.span().clone());
        let waited = self.wait(&call, ctx, work).await;
        self.end(call, waited)
    }

    /// The write itself: the operation_id first and alone ([`keyed`]),
    /// then every other argument at once, the door's findings and the
    /// kitchen's together; then the kitchen's write and its answer.
    async fn perform<W: WriteTool>(
        &self,
        call: &WriteCall,
        args: Arguments<W::Args>,
    ) -> Result<Answered, McpError> {
        let Read { mut args, problems } = args.read()?;
        let (key, mut problems) = match keyed(call.action, W::operation_id(&mut args), problems) {
            Ok(keyed) => keyed,
            Err(answer) => return Ok(*answer),
        };
        call.keyed(&key);
        let options = W::options(&args);
        let ToolRequest {
            request,
            names_a_ticket,
        } = W::request(args, &mut problems);
        if !problems.is_empty() {
            let checked = W::violations(&request);
            return Ok(refused_arguments(call.action, &key, problems, checked));
        }
        let outcome = if names_a_ticket {
            self.kitchen
                .write_with::<W>(call.who.actor, &key, &request, options)
                .await
                .map_err(unexpected)?
        } else {
            unknown_ticket()
        };
        answered(call.action, outcome, |o| W::result(&key, o))
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
fn unknown_ticket<T>() -> Outcome<T> {
    Outcome::Refused(Refusal::TicketNotFound {
        ticket_id: no_ticket(),
    })
}
