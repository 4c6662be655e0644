//! What the holder of an effect's lease does: dispatch, look up, and decide
//! how to settle (`settle.rs` writes it down).
//! Every function here is called with the lease held and gives it back by
//! settling (or, when it finds nothing to do, by releasing it).
//!
//! Written once for every action (`RemoteAction`): the reconciler, which
//! knows an effect only by its scope, finds the action's type through
//! [`worker`] (`crate::actions::with_type` turns a name into a type).

use time::OffsetDateTime;

use super::Remote;
use crate::domain::action::Action;
use crate::domain::effect::{AttemptKind, AttemptResult, ExternalRef, FinishedAttempt, Trigger};
use crate::domain::operation::{OperationRecord, OperationState};
use crate::domain::settlement::{SettleAnswer, SettleOrder};
use crate::domain::tenant::TokenId;
use crate::outcome::RETRY_AFTER;
use crate::outcome::{NotCreatedReason, Outcome};
use crate::provider::{
    DispatchRequest, Dispatched, Lookup, ProviderReceipt, SearchRequest, unix_ms,
};
use crate::store;
use crate::store::effects::{self, AttemptStart, Lease, OperationId};
use crate::store::group_commit::BoxFuture;
use crate::store::ledger;
use crate::store::rows::EffectRow;
use crate::write::{ForAction, Reach, RemoteAction, WriteAction};
use crate::{KitchenError, rfc3339};

/// One effect of action `A`, as a lease holder works on it.
pub(crate) struct Job<A: WriteAction> {
    pub(crate) scope: OperationId,
    pub(crate) lease: Lease,
    pub(crate) command: A::Command,
    pub(crate) external_ref: ExternalRef,
    pub(crate) trigger: Trigger,
    /// The caller's API token, for the history entry of the local copy:
    /// known to the request that wrote the record ahead, not stored, so an
    /// effect settled later by reconciliation records none.
    pub(crate) actor_token: Option<TokenId>,
}

pub(super) fn in_progress<T>() -> Outcome<T> {
    Outcome::InProgress {
        retry_after: RETRY_AFTER,
    }
}

/// How the reconciler works on an effect of one action: [`Remote::work`]
/// for that action's type, naming the outcome (for the reconciler's log).
pub(crate) type WorkFn = for<'r> fn(
    &'r Remote,
    OperationId,
    Lease,
    Trigger,
) -> BoxFuture<'r, Result<&'static str, KitchenError>>;

/// How an operator settles an effect of one action by hand:
/// [`Remote::settle_by_hand`] for that action's type.
pub(crate) type SettleFn = for<'r> fn(
    &'r Remote,
    OperationId,
    &'r SettleOrder,
) -> BoxFuture<'r, Result<SettleAnswer, KitchenError>>;

/// What the remote backend does with an effect it knows only by its scope,
/// for one action's type.
#[derive(Clone, Copy)]
pub(crate) struct Worker {
    /// Settles it as far as can be done now (the reconciler).
    pub(crate) work: WorkFn,
    /// Carries out an operator's decision about it.
    pub(crate) settle_by_hand: SettleFn,
}

impl Worker {
    fn of<A: RemoteAction>() -> Self {
        Self {
            work: work_named::<A>,
            settle_by_hand: |remote, scope, order| {
                Box::pin(remote.settle_by_hand::<A>(scope, order))
            },
        }
    }
}

/// How the remote backend works on an effect of `action` it finds in the
/// ledger. `None` for an action no provider can do: the remote backend
/// refuses it before anything is written (`Refusal::NotSupportedByProvider`),
/// so no effect of it is ever written ahead.
pub(crate) fn worker(action: Action) -> Option<Worker> {
    crate::actions::with_type(action, WorkerOf)
}

/// [`worker`], for one action's type.
struct WorkerOf;

impl ForAction for WorkerOf {
    type Out = Option<Worker>;

    fn with<A: WriteAction>(self) -> Option<Worker> {
        A::reach(WorkerOf)
    }
}

impl<A: WriteAction> Reach<A> for WorkerOf {
    type Out = Option<Worker>;

    fn here_only(self) -> Option<Worker> {
        None
    }

    fn provider(self) -> Option<Worker>
    where
        A: RemoteAction,
    {
        Some(Worker::of::<A>())
    }
}

fn work_named<A: RemoteAction>(
    remote: &Remote,
    scope: OperationId,
    lease: Lease,
    trigger: Trigger,
) -> BoxFuture<'_, Result<&'static str, KitchenError>> {
    Box::pin(async move { Ok(remote.work::<A>(scope, lease, trigger).await?.name()) })
}

impl Remote {
    /// Under a fresh lease: settles the effect of `scope`, whatever its
    /// action, as far as can be done now, and names the outcome (for the
    /// reconciler's log).
    pub(super) async fn work_on(
        &self,
        scope: OperationId,
        lease: Lease,
        trigger: Trigger,
    ) -> Result<&'static str, KitchenError> {
        let Some(worker) = worker(scope.action) else {
            effects::release_lease(&self.db, &scope, lease).await?;
            return Err(KitchenError::CorruptRecord(format!(
                "the effect ledger holds an effect of {}, which never reaches a provider",
                scope.action
            )));
        };
        (worker.work)(self, scope, lease, trigger).await
    }
}

impl Remote {
    /// Under a fresh lease: reads the effect and settles it as far as can
    /// be done now.
    pub(super) async fn work<A: RemoteAction>(
        &self,
        scope: OperationId,
        lease: Lease,
        trigger: Trigger,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let Some(row) = ledger::find(&self.db, &scope).await? else {
            return Ok(in_progress());
        };
        let EffectRow {
            operation,
            request_snapshot,
            external_ref,
            key_trusted_until,
            last_dispatched_at,
            state_detail,
            ..
        } = row;
        let record: OperationRecord = operation.try_into()?;
        let command = stored_command::<A>(&record, request_snapshot.as_deref())?;
        let external_ref = external_ref.map_or_else(
            || ExternalRef::derive(record.tenant_id, record.action, &record.key),
            ExternalRef::from_stored,
        );
        let job = Job::<A> {
            scope,
            lease,
            command,
            external_ref,
            trigger,
            actor_token: None,
        };
        let now = OffsetDateTime::now_utc();
        match record.state {
            OperationState::Succeeded => {
                effects::release_lease(&self.db, &job.scope, lease).await?;
                Outcome::for_taken_key(record.clone(), &record.fingerprint)
            }
            // The provider made nothing, so sending again cannot duplicate;
            // but only a caller's retry decides to try again.
            OperationState::FailedBeforeEffect => match trigger {
                Trigger::Request | Trigger::Retry => self.dispatch(job, None).await,
                _ => {
                    effects::release_lease(&self.db, &job.scope, lease).await?;
                    Ok(Outcome::NotCreated {
                        operation: record.reference(),
                        reason: self
                            .stored_reason(&job.scope, state_detail.unwrap_or_default())
                            .await?,
                    })
                }
            },
            // Within the provider's dedup window the key itself protects a
            // re-dispatch; past it (or for a provider that ignores keys),
            // only a search may decide. A status read always searches: it
            // must not send.
            OperationState::InProgress | OperationState::Unknown => {
                if trigger.may_send() && key_trusted_until.is_some_and(|until| now < until) {
                    self.dispatch(job, None).await
                } else {
                    let last = last_dispatched_at.unwrap_or(record.created_at);
                    self.look_up(job, last).await
                }
            }
        }
    }

    /// Sends the ticket to the provider and settles the effect by the
    /// answer. `number` is the dispatch attempt already started by the
    /// write-ahead record, if any.
    pub(super) async fn dispatch<A: RemoteAction>(
        &self,
        mut job: Job<A>,
        number: Option<i32>,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let number = match number {
            Some(n) => n,
            None => match self.start_attempt(&mut job, AttemptKind::Dispatch).await? {
                AttemptStart::Started(n) => n,
                AttemptStart::LeaseLost => return Ok(in_progress()),
                AttemptStart::Exhausted(made) => return self.exhausted(&job, made).await,
            },
        };
        let provider_ticket = self.provider_ticket::<A>(&job).await?;
        let request = DispatchRequest {
            external_ref: job.external_ref.as_str().into(),
            write: A::provider_write(&job.command, provider_ticket.as_deref()),
        };
        let timeout = self.settings.call_timeout;
        let answer = tokio::time::timeout(timeout, self.provider.dispatch(&request))
            .await
            .unwrap_or_else(|_| {
                Dispatched::Ambiguous(format!("no answer within {} ms", timeout.as_millis()))
            });
        // Only the first dispatch crashes: the retry after the restart must
        // be able to finish what the crash interrupted.
        if job.trigger == Trigger::Request {
            crate::faults::after_dispatch(&job.scope.key);
        }
        tracing::info!(
            operation_key = %job.scope.key,
            external_ref = %job.external_ref,
            attempt = number,
            answer = ?answer,
            "dispatched to the provider"
        );
        let now = OffsetDateTime::now_utc();
        match answer {
            Dispatched::Done { receipt, replayed } => {
                let result = if replayed {
                    AttemptResult::ReplayedByProvider
                } else {
                    AttemptResult::Created
                };
                let finished = FinishedAttempt::new(number, result, None);
                self.succeed(&job, &receipt, finished, &[], replayed).await
            }
            Dispatched::Rejected(why) => {
                let detail = format!("The provider refused the write and did nothing: {why}");
                let reason = NotCreatedReason::Rejected(why.clone());
                self.fail_before_effect(
                    &job,
                    FinishedAttempt::new(number, AttemptResult::Rejected, Some(&why)),
                    &detail,
                    reason,
                )
                .await
            }
            Dispatched::NotSent(why) => {
                let detail = format!(
                    "The provider could not be reached, so nothing was sent: {why}. \
                     Retry with the same key."
                );
                let reason = NotCreatedReason::Unavailable(detail.clone());
                self.fail_before_effect(
                    &job,
                    FinishedAttempt::new(number, AttemptResult::NotSent, Some(&why)),
                    &detail,
                    reason,
                )
                .await
            }
            Dispatched::Ambiguous(why) => {
                let detail = format!(
                    "The provider's answer was lost ({why}): the {} may or may not exist \
                     there. The service is reconciling with the provider's records.",
                    A::KIND.as_str()
                );
                let next = self.next_check(now, number);
                self.stay_unknown(
                    &job,
                    FinishedAttempt::new(number, AttemptResult::Ambiguous, Some(&why)),
                    &detail,
                    next,
                )
                .await
            }
        }
    }

    /// Searches the provider for the effect's external reference.
    async fn look_up<A: RemoteAction>(
        &self,
        mut job: Job<A>,
        last_dispatched_at: OffsetDateTime,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let number = match self.start_attempt(&mut job, AttemptKind::Lookup).await? {
            AttemptStart::Started(n) => n,
            AttemptStart::LeaseLost => return Ok(in_progress()),
            AttemptStart::Exhausted(made) => return self.exhausted(&job, made).await,
        };
        let answer = self.search::<A>(&job).await?;
        tracing::info!(
            operation_key = %job.scope.key,
            external_ref = %job.external_ref,
            attempt = number,
            answer = ?answer,
            "reconciled with the provider"
        );
        let now = OffsetDateTime::now_utc();
        match answer {
            Lookup::Found {
                receipt,
                duplicates,
            } => {
                let mut detail = format!("the provider has it as {}", receipt.effect.id());
                if !duplicates.is_empty() {
                    detail = format!(
                        "{detail}, and {} more {} with the same reference: {} (a duplicate at \
                         the provider, for an operator to resolve)",
                        duplicates.len(),
                        A::KIND.as_str(),
                        duplicates.join(", ")
                    );
                    warn_duplicated(&job, &receipt, &duplicates);
                }
                let finished = FinishedAttempt::new(number, AttemptResult::Found, Some(&detail));
                self.succeed(&job, &receipt, finished, &duplicates, true)
                    .await
            }
            Lookup::Failed(why) => {
                let detail = format!(
                    "The provider could not be searched ({why}); whether the {} exists is \
                     still unknown, and reconciliation will try again.",
                    A::KIND.as_str()
                );
                let next = self.next_check(now, number);
                self.stay_unknown(
                    &job,
                    FinishedAttempt::new(number, AttemptResult::LookupFailed, Some(&why)),
                    &detail,
                    next,
                )
                .await
            }
            Lookup::Absent => {
                // A request still being worked on by the provider can land
                // after our search: absence is proof only once the last
                // dispatch is older than the provider's longest request.
                let provable_at = last_dispatched_at + self.settings.max_inflight;
                if now < provable_at {
                    let detail = format!(
                        "No such {} at the provider yet, but the request sent at {} may \
                         still be processed until {}; reconciliation looks again then.",
                        A::KIND.as_str(),
                        rfc3339(last_dispatched_at),
                        rfc3339(provable_at)
                    );
                    let next = unix_ms(provable_at).max(unix_ms(now) + 1);
                    let why = "not found, too soon to be sure";
                    return self
                        .stay_unknown(
                            &job,
                            FinishedAttempt::new(number, AttemptResult::AbsentTooSoon, Some(why)),
                            &detail,
                            next,
                        )
                        .await;
                }
                if !job.trigger.may_send() {
                    return self
                        .absent_for_a_reader(job, number, last_dispatched_at)
                        .await;
                }
                let why = "not found: provably never made, so it is sent again with the same key";
                effects::finish_attempt(
                    &self.db,
                    &job.scope,
                    FinishedAttempt::new(number, AttemptResult::Absent, Some(why)),
                    now,
                )
                .await?;
                self.dispatch(job, None).await
            }
        }
    }

    /// A search for a status read proved the effect absent: nothing was
    /// made, and the read does not send it (a read never writes). It settles
    /// as `failed_before_effect`, so the caller learns that a retry of the
    /// write, with the same key, is what sends it; the reconciler leaves it
    /// to that retry.
    async fn absent_for_a_reader<A: RemoteAction>(
        &self,
        job: Job<A>,
        number: i32,
        last_dispatched_at: OffsetDateTime,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let why = "not found: provably never made; a status read does not send it";
        let detail = format!(
            "The provider has no such {}, and the request sent at {} can no longer land \
             there: nothing was made. Retry the write with the same key to send it.",
            A::KIND.as_str(),
            rfc3339(last_dispatched_at)
        );
        let reason = NotCreatedReason::Unavailable(detail.clone());
        self.fail_before_effect(
            &job,
            FinishedAttempt::new(number, AttemptResult::Absent, Some(why)),
            &detail,
            reason,
        )
        .await
    }

    /// One search of the provider for the job's external reference,
    /// bounded like every call (past the call timeout it failed).
    pub(super) async fn search<A: RemoteAction>(
        &self,
        job: &Job<A>,
    ) -> Result<Lookup, KitchenError> {
        let search = SearchRequest {
            kind: A::KIND,
            external_ref: job.external_ref.as_str().into(),
            ticket: self.provider_ticket::<A>(job).await?,
        };
        let timeout = self.settings.call_timeout;
        Ok(
            tokio::time::timeout(timeout, self.provider.find_by_reference(&search))
                .await
                .unwrap_or_else(|_| {
                    Lookup::Failed(format!("no answer within {} ms", timeout.as_millis()))
                }),
        )
    }

    /// The provider's id of the ticket the job's write acts on; `None` for
    /// a create. The write was allowed only for a ticket that has one, and
    /// a ticket's provider id never changes, so a missing one is corruption.
    pub(super) async fn provider_ticket<A: RemoteAction>(
        &self,
        job: &Job<A>,
    ) -> Result<Option<String>, KitchenError> {
        let Some(ticket_id) = A::target(&job.command) else {
            return Ok(None);
        };
        let ticket = store::tickets::find(&self.db, job.scope.tenant, ticket_id).await?;
        match ticket.and_then(|t| t.provider_ticket_id) {
            Some(id) => Ok(Some(id)),
            None => Err(KitchenError::CorruptRecord(format!(
                "operation {} acts on ticket {ticket_id}, which has no copy at the provider",
                job.scope.key
            ))),
        }
    }
}

/// Logged once per search that finds an effect more than once at the
/// provider: it needs a human (the status resource and the
/// `tickets_provider_duplicates` gauge say so too).
fn warn_duplicated<A: WriteAction>(job: &Job<A>, receipt: &ProviderReceipt, duplicates: &[String]) {
    tracing::warn!(
        tenant = %job.scope.tenant,
        action = job.scope.action.as_str(),
        operation_key = %job.scope.key,
        external_ref = %job.external_ref,
        original = receipt.effect.id(),
        duplicates = %duplicates.join(", "),
        "the provider holds this effect more than once: an operator must resolve the copies"
    );
}

/// The request stored with the write-ahead record, validated again.
pub(super) fn stored_command<A: WriteAction>(
    record: &OperationRecord,
    snapshot: Option<&str>,
) -> Result<A::Command, KitchenError> {
    let corrupt = |why: String| {
        KitchenError::CorruptRecord(format!("stored request of operation {}: {why}", record.key))
    };
    let request: A::Request =
        serde_json::from_str(snapshot.ok_or_else(|| corrupt("missing".into()))?)
            .map_err(|e| corrupt(e.to_string()))?;
    A::validate(&request).map_err(|v| corrupt(format!("{} invalid fields", v.len())))
}
