//! What the holder of an effect's lease does: dispatch, look up, settle.
//! Every function here is called with the lease held and gives it back by
//! settling (or, when it finds nothing to do, by releasing it).
//!
//! Written once for every action (`RemoteAction`): the reconciler, which
//! knows an effect only by its scope, picks the action's type in
//! [`worker`], the one place the remote backend turns an action's name
//! into its type.

use time::OffsetDateTime;

use super::{LEASE_MARGIN, Remote};
use crate::actions::add_comment::AddComment;
use crate::actions::create_ticket::CreateTicket;
use crate::actions::transition_ticket::TransitionTicket;
use crate::actions::update_ticket::UpdateTicket;
use crate::domain::action::Action;
use crate::domain::effect::{AttemptKind, AttemptResult, ExternalRef, FinishedAttempt, Trigger};
use crate::domain::operation::{OperationRecord, OperationState, ResultSnapshot};
use crate::domain::tenant::{Actor, TokenId};
use crate::domain::ticket::truncate_to_micros;
use crate::outcome::RETRY_AFTER;
use crate::outcome::{NotCreatedReason, Outcome, Receipt};
use crate::provider::{
    DispatchRequest, Dispatched, Lookup, ProviderReceipt, SearchRequest, unix_ms,
};
use crate::store::effects::{self, AttemptStart, Lease, NewAttempt, OperationId, Settle};
use crate::store::group_commit::BoxFuture;
use crate::store::rows::EffectRow;
use crate::store::{self, write};
use crate::write::remote::RemoteAction;
use crate::write::{WriteAction, WriteContext, WriteResult};
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

fn in_progress<T>() -> Outcome<T> {
    Outcome::InProgress {
        retry_after: RETRY_AFTER,
    }
}

/// How the reconciler works on an effect of one action: [`Remote::work`]
/// for that action's type, naming the outcome (for the reconciler's log).
pub(crate) type Worker = for<'r> fn(
    &'r Remote,
    OperationId,
    Lease,
    Trigger,
) -> BoxFuture<'r, Result<&'static str, KitchenError>>;

/// The one place the remote backend turns an action's name into its type:
/// how the reconciler works on an effect of `action` it finds in the
/// ledger. `None` for an action with no `RemoteAction`: the remote backend
/// refuses it before anything is written (`Refusal::NotSupportedByProvider`),
/// so no effect of it is ever written ahead.
pub(crate) fn worker(action: Action) -> Option<Worker> {
    Some(match action {
        Action::CreateTicket => work_named::<CreateTicket>,
        Action::UpdateTicket => work_named::<UpdateTicket>,
        Action::TransitionTicket => work_named::<TransitionTicket>,
        Action::AddComment => work_named::<AddComment>,
        Action::AddLabel | Action::RemoveLabel => return None,
    })
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
        let Some(work) = worker(scope.action) else {
            effects::release_lease(&self.db, &scope, lease).await?;
            return Err(KitchenError::CorruptRecord(format!(
                "the effect ledger holds an effect of {}, which never reaches a provider",
                scope.action
            )));
        };
        work(self, scope, lease, trigger).await
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
        let Some(row) = effects::find(&self.db, &scope).await? else {
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
        let search = SearchRequest {
            kind: A::KIND,
            external_ref: job.external_ref.as_str().into(),
            ticket: self.provider_ticket::<A>(&job).await?,
        };
        let timeout = self.settings.call_timeout;
        let answer = tokio::time::timeout(timeout, self.provider.find_by_reference(&search))
            .await
            .unwrap_or_else(|_| {
                Lookup::Failed(format!("no answer within {} ms", timeout.as_millis()))
            });
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

    /// Starts an attempt under a renewed lease, unless the lease was lost or
    /// the effect's attempts are exhausted.
    async fn start_attempt<A: WriteAction>(
        &self,
        job: &mut Job<A>,
        kind: AttemptKind,
    ) -> Result<AttemptStart, KitchenError> {
        let now = OffsetDateTime::now_utc();
        job.lease.until_ms = unix_ms(now + self.settings.call_timeout + LEASE_MARGIN);
        effects::start_attempt(
            &self.db,
            self.wait_bound,
            &job.scope,
            job.lease,
            NewAttempt {
                kind,
                trigger: job.trigger,
                now,
                key_trusted_until: self.key_trusted_until(now),
                max_attempts: self.settings.max_attempts,
            },
        )
        .await
    }

    /// The effect already has its most attempts: no call is made. The first
    /// worker to find it so gives up on it (a dead worker's last call left
    /// it unsettled, or the cap was lowered since); every worker answers
    /// `unknown`, saying a human must look.
    async fn exhausted<A: WriteAction>(
        &self,
        job: &Job<A>,
        made: i64,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let detail = gave_up_detail(made, &job.external_ref, None);
        if effects::give_up(&self.db, &job.scope, job.lease, &detail).await? {
            warn_gave_up(job, made);
        }
        // Given up before (this is a later worker): the words recorded then,
        // with the provider's last answer.
        let recorded = effects::find(&self.db, &job.scope)
            .await?
            .and_then(|row| row.state_detail);
        Ok(Outcome::Unknown {
            operation: self.reference(&job.scope).await?,
            reason: recorded.unwrap_or(detail),
            gave_up: true,
        })
    }

    /// The effect happened: records it, with the local copy of what the
    /// provider made, in one transaction. `duplicates` are the provider's
    /// ids of other objects carrying the same reference, if a search found
    /// any. A receipt the action cannot copy (another kind of object, a
    /// change to another ticket) proves nothing: the effect stays unknown.
    async fn succeed<A: RemoteAction>(
        &self,
        job: &Job<A>,
        receipt: &ProviderReceipt,
        attempt: FinishedAttempt<'_>,
        duplicates: &[String],
        earlier: bool,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let now = OffsetDateTime::now_utc();
        let context = WriteContext {
            actor: Actor {
                tenant: job.scope.tenant,
                token: job.actor_token,
            },
            action: A::ACTION,
            key: job.scope.key.clone(),
            now: truncate_to_micros(now),
        };
        let mut tx = write::begin(&self.db, self.wait_bound).await?;
        let applied = match A::mirror(&job.command, &receipt.effect, &mut tx, &context).await? {
            Ok(applied) => applied,
            Err(why) => {
                write::rollback(tx).await?;
                let detail = format!(
                    "The provider's answer could not be read as the {} this operation makes \
                     ({why}); whether it was made is still unknown, and reconciliation will \
                     look again.",
                    A::KIND.as_str()
                );
                let number = attempt.number;
                let next = self.next_check(now, number);
                let unreadable = FinishedAttempt::new(number, AttemptResult::Ambiguous, Some(&why));
                return self.stay_unknown(job, unreadable, &detail, next).await;
            }
        };
        let snapshot = ResultSnapshot::of(&applied.result)
            .map_err(|e| KitchenError::CorruptRecord(format!("result snapshot: {e}")))?;
        let settled = effects::succeed(
            &mut tx,
            &job.scope,
            job.lease,
            attempt,
            effects::Made {
                ticket: applied.ticket,
                resource: applied.result.resource_id(),
                snapshot: snapshot.as_str(),
                duplicates,
            },
            now,
        )
        .await?;
        if !settled {
            write::rollback(tx).await?;
            tracing::warn!(operation_key = %job.scope.key, "lost the lease on an effect before settling it");
            return Ok(in_progress());
        }
        write::commit(tx).await?;
        let Some(operation) =
            store::operations::find(&self.db, job.scope.tenant, job.scope.action, &job.scope.key)
                .await?
        else {
            return Ok(in_progress());
        };
        let receipt = Receipt {
            result: applied.result,
            snapshot,
            operation,
        };
        Ok(if earlier {
            Outcome::Replayed(receipt)
        } else {
            Outcome::Created(receipt)
        })
    }

    async fn fail_before_effect<A: WriteAction>(
        &self,
        job: &Job<A>,
        attempt: FinishedAttempt<'_>,
        detail: &str,
        reason: NotCreatedReason,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let settle = Settle::FailedBeforeEffect { detail };
        self.settled_or_busy(job, attempt, settle).await?;
        Ok(Outcome::NotCreated {
            operation: self.reference(&job.scope).await?,
            reason,
        })
    }

    /// Still unknown after an attempt: the reconciler looks again at
    /// `next_check_ms`, unless this was the effect's last allowed attempt,
    /// which gives up on it instead (once: only this attempt's lease holder
    /// settles it).
    async fn stay_unknown<A: WriteAction>(
        &self,
        job: &Job<A>,
        attempt: FinishedAttempt<'_>,
        detail: &str,
        next_check_ms: i64,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        // Counted, not numbered: a caller's searches are not the
        // reconciler's to spend (see `effects::capped_attempts`).
        let made = effects::capped_attempts(&self.db, &job.scope).await?;
        let last = made >= i64::from(self.settings.max_attempts);
        let gave_up = last.then(|| gave_up_detail(made, &job.external_ref, attempt.detail));
        let settle = Settle::Unknown {
            detail: gave_up.as_deref().unwrap_or(detail),
            next_check_ms: (!last).then_some(next_check_ms),
        };
        if self.settled_or_busy(job, attempt, settle).await? && last {
            warn_gave_up(job, made);
        }
        Ok(Outcome::Unknown {
            operation: self.reference(&job.scope).await?,
            gave_up: gave_up.is_some(),
            reason: gave_up.unwrap_or_else(|| detail.into()),
        })
    }

    /// Settles under the lease; `false` (and a warning) when the lease was
    /// lost and nothing was written.
    async fn settled_or_busy<A: WriteAction>(
        &self,
        job: &Job<A>,
        attempt: FinishedAttempt<'_>,
        settle: Settle<'_>,
    ) -> Result<bool, KitchenError> {
        let now = OffsetDateTime::now_utc();
        let wait = self.wait_bound;
        let settled =
            effects::settle(&self.db, wait, &job.scope, job.lease, attempt, settle, now).await?;
        if !settled {
            tracing::warn!(operation_key = %job.scope.key, "lost the lease on an effect before settling it");
        }
        Ok(settled)
    }

    /// Why a stored `failed_before_effect` made nothing, as its last
    /// dispatch recorded it: a refusal (with the provider's words) or a
    /// provider that could not be reached (`detail`).
    pub(super) async fn stored_reason(
        &self,
        scope: &OperationId,
        detail: String,
    ) -> Result<NotCreatedReason, KitchenError> {
        let attempts = effects::attempts(&self.db, scope).await?;
        Ok(NotCreatedReason::from_ledger(&attempts, detail))
    }

    /// The provider's id of the ticket the job's write acts on; `None` for
    /// a create. The write was allowed only for a ticket that has one, and
    /// a ticket's provider id never changes, so a missing one is corruption.
    async fn provider_ticket<A: RemoteAction>(
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

    async fn reference(&self, scope: &OperationId) -> Result<crate::OperationRef, KitchenError> {
        store::operations::find(&self.db, scope.tenant, scope.action, &scope.key)
            .await?
            .map(|r| r.reference())
            .ok_or_else(|| KitchenError::CorruptRecord(format!("operation {} vanished", scope.key)))
    }
}

/// What an effect given up on says, to its caller and on its record: the
/// attempts made, that no more will be, and what an operator must do.
/// `last` is the provider's last answer, when there was one.
fn gave_up_detail(attempts: i64, external_ref: &ExternalRef, last: Option<&str>) -> String {
    let last = last
        .map(|why| format!(" (last answer: {why})"))
        .unwrap_or_default();
    format!(
        "Reconciliation gave up after {attempts} attempts{last}: whether the effect exists at \
         the provider is still unknown, and the service will not call the provider for this \
         operation again. An operator must check the provider for external reference \
         {external_ref} and resolve it; until then a retry answers the same."
    )
}

/// The one log line per effect given up on: it needs a human.
fn warn_gave_up<A: WriteAction>(job: &Job<A>, attempts: i64) {
    tracing::warn!(
        tenant = %job.scope.tenant,
        action = job.scope.action.as_str(),
        operation_key = %job.scope.key,
        external_ref = %job.external_ref,
        attempts,
        "reconciliation gave up on an effect whose outcome is still unknown: \
         an operator must check the provider"
    );
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
fn stored_command<A: WriteAction>(
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
