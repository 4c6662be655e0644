//! What the holder of an effect's lease records of what it learned: an
//! attempt started, the effect made (with the local copy of what the
//! provider made, in one transaction), made nothing, still unknown, or given
//! up on for an operator. `work.rs` decides; this writes it down.

use time::OffsetDateTime;

use super::{LEASE_MARGIN, Remote};
use crate::KitchenError;
use crate::domain::effect::{AttemptKind, AttemptResult, ExternalRef, FinishedAttempt};
use crate::domain::operation::ResultSnapshot;
use crate::domain::tenant::Actor;
use crate::domain::ticket::truncate_to_micros;
use crate::outcome::{NotCreatedReason, Outcome, Receipt};
use crate::provider::{ProviderReceipt, unix_ms};
use crate::store::effects::{self, AttemptStart, NewAttempt, OperationId, Settle};
use crate::store::ledger;
use crate::store::{self, write};
use crate::write::RemoteAction;
use crate::write::{WriteAction, WriteContext, WriteResult};

use super::work::{Job, in_progress};

impl Remote {
    /// Starts an attempt under a renewed lease, unless the lease was lost or
    /// the effect's attempts are exhausted.
    pub(super) async fn start_attempt<A: WriteAction>(
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
    pub(super) async fn exhausted<A: WriteAction>(
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
        let recorded = ledger::find(&self.db, &job.scope)
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
    pub(super) async fn succeed<A: RemoteAction>(
        &self,
        job: &Job<A>,
        receipt: &ProviderReceipt,
        attempt: FinishedAttempt<'_>,
        duplicates: &[String],
        earlier: bool,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let now = OffsetDateTime::now_utc();
        let context = self.write_context(job);
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
            possible_duplicate_of: None,
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

    /// The context the local copy of what `job` made is written in: its
    /// caller (if known) and key, now.
    pub(super) fn write_context<A: WriteAction>(&self, job: &Job<A>) -> WriteContext {
        WriteContext {
            actor: Actor {
                tenant: job.scope.tenant,
                token: job.actor_token,
            },
            action: A::ACTION,
            key: job.scope.key.clone(),
            now: truncate_to_micros(OffsetDateTime::now_utc()),
        }
    }

    pub(super) async fn fail_before_effect<A: WriteAction>(
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
    pub(super) async fn stay_unknown<A: WriteAction>(
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
    pub(super) async fn settled_or_busy<A: WriteAction>(
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
        let attempts = ledger::attempts(&self.db, scope).await?;
        Ok(NotCreatedReason::from_ledger(&attempts, detail))
    }

    pub(super) async fn reference(
        &self,
        scope: &OperationId,
    ) -> Result<crate::OperationRef, KitchenError> {
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
