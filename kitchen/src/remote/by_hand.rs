//! Settling an effect by hand: an operator's decision about an effect whose
//! outcome reconciliation could not learn (`tickets ops settle`).
//!
//! The decision is carried out like any worker's: under the effect's lease,
//! so it cannot interleave with a caller's retry, a status read or the
//! reconciler; and only while the effect is still `unknown`, so a settled
//! record never flips, and whoever loses a race is told what won. Before
//! deciding, the provider is searched by the effect's reference once more:
//! a decision the provider contradicts is refused unless the operator
//! forces it, and what the search found is kept in the audit entry. That
//! search is not an attempt: it spends none of the reconciler's.

use time::OffsetDateTime;

use super::Remote;
use super::work::{Job, stored_command};
use crate::KitchenError;
use crate::domain::effect::{ExternalRef, Trigger};
use crate::domain::operation::{OperationRecord, OperationState, ResultSnapshot};
use crate::domain::settlement::{Decision, SettleAnswer, SettleOrder, SettleRefusal, Settlement};
use crate::domain::ticket::truncate_to_micros;
use crate::provider::{
    EffectKind, Lookup, ProviderEffect, ProviderReceipt, SearchRequest, unix_ms,
};
use crate::store::effects::{self, Made, OperationId};
use crate::store::{ledger, settlements, write};
use crate::write::WriteResult;
use crate::write::remote::RemoteAction;

impl Remote {
    /// Carries out `order` on the effect of `scope`, of action `A`.
    pub(super) async fn settle_by_hand<A: RemoteAction>(
        &self,
        scope: OperationId,
        order: &SettleOrder,
    ) -> Result<SettleAnswer, KitchenError> {
        let now = OffsetDateTime::now_utc();
        let lease = self.lease(now);
        if !effects::take_lease(&self.db, &scope, lease, unix_ms(now)).await? {
            return self.refused_after_race(&scope).await;
        }
        let Some(row) = ledger::find(&self.db, &scope).await? else {
            return Ok(SettleAnswer::Refused(SettleRefusal::NotFound));
        };
        let record: OperationRecord = row.operation.try_into()?;
        if record.state != OperationState::Unknown {
            effects::release_lease(&self.db, &scope, lease).await?;
            return self.refused_after_race(&scope).await;
        }
        let job = Job::<A> {
            command: stored_command::<A>(&record, row.request_snapshot.as_deref())?,
            external_ref: row.external_ref.map_or_else(
                || ExternalRef::derive(record.tenant_id, record.action, &record.key),
                ExternalRef::from_stored,
            ),
            scope,
            lease,
            // Never sends: only searches.
            trigger: Trigger::Status,
            actor_token: None,
        };
        let found = self.search_for_operator(&job).await?;
        let answer = match (&order.decision, &found) {
            (Decision::Made(reference), Lookup::Found { receipt, .. })
                if receipt.effect.id() == reference.as_str() =>
            {
                let check = describe(&found, A::KIND);
                self.settle_made(&job, receipt.clone(), order, check, false)
                    .await?
            }
            (Decision::Made(reference), _) if order.force => {
                let check = describe(&found, A::KIND);
                match forced_effect(A::KIND, reference.as_str(), &found) {
                    Ok(effect) => {
                        let receipt = ProviderReceipt {
                            external_ref: job.external_ref.as_str().into(),
                            effect,
                        };
                        self.settle_made(&job, receipt, order, check, true).await?
                    }
                    Err(why) => SettleAnswer::Refused(SettleRefusal::Impossible(why)),
                }
            }
            (Decision::Made(reference), _) => {
                SettleAnswer::Refused(SettleRefusal::Contradicted(format!(
                    "a search of the provider for external reference {} does not show {} as \
                     this effect: {}. Check the reference, or settle with --force if you are \
                     sure (the search is kept in the audit entry).",
                    job.external_ref,
                    reference,
                    describe(&found, A::KIND)
                )))
            }
            (Decision::NotMade, Lookup::Found { receipt, .. }) if !order.force => {
                SettleAnswer::Refused(SettleRefusal::Contradicted(format!(
                    "the provider holds this effect as {} (external reference {}): it was made. \
                     Settle it --made {} instead, or with --force if that object is not this \
                     effect.",
                    receipt.effect.id(),
                    job.external_ref,
                    receipt.effect.id()
                )))
            }
            (Decision::NotMade, _) => {
                let check = describe(&found, A::KIND);
                self.settle_not_made(&job, order, check).await?
            }
        };
        if matches!(answer, SettleAnswer::Refused(_)) {
            effects::release_lease(&self.db, &job.scope, lease).await?;
        }
        Ok(answer)
    }

    /// The lease could not be had, or the effect was not unknown under it:
    /// says what won (settled already, or still being worked on).
    async fn refused_after_race(&self, scope: &OperationId) -> Result<SettleAnswer, KitchenError> {
        let Some(row) = ledger::find(&self.db, scope).await? else {
            return Ok(SettleAnswer::Refused(SettleRefusal::NotFound));
        };
        let record: OperationRecord = row.operation.try_into()?;
        let refusal = match record.state {
            OperationState::Unknown => SettleRefusal::Busy,
            state => SettleRefusal::NotUnknown {
                state,
                settled_by: settlements::list(&self.db, scope)
                    .await?
                    .pop()
                    .map(Box::new),
            },
        };
        Ok(SettleAnswer::Refused(refusal))
    }

    /// One search of the provider by the effect's reference, bounded like
    /// every call.
    async fn search_for_operator<A: RemoteAction>(
        &self,
        job: &Job<A>,
    ) -> Result<Lookup, KitchenError> {
        let search = SearchRequest {
            kind: A::KIND,
            external_ref: job.external_ref.as_str().into(),
            ticket: self.provider_ticket::<A>(job).await?,
        };
        let timeout = self.settings.call_timeout;
        let found = tokio::time::timeout(timeout, self.provider.find_by_reference(&search))
            .await
            .unwrap_or_else(|_| {
                Lookup::Failed(format!("no answer within {} ms", timeout.as_millis()))
            });
        tracing::info!(
            operation_key = %job.scope.key,
            external_ref = %job.external_ref,
            answer = ?found,
            "searched the provider for an operator's settlement"
        );
        Ok(found)
    }

    /// Made: the local copy of `receipt`, the operation succeeded with it,
    /// and the audit entry, in one transaction.
    async fn settle_made<A: RemoteAction>(
        &self,
        job: &Job<A>,
        receipt: ProviderReceipt,
        order: &SettleOrder,
        provider_check: String,
        forced: bool,
    ) -> Result<SettleAnswer, KitchenError> {
        let context = self.write_context(job);
        let entry = entry(order, context.now, provider_check, forced);
        let mut tx = write::begin(&self.db, self.wait_bound).await?;
        let applied = match A::mirror(&job.command, &receipt.effect, &mut tx, &context).await? {
            Ok(applied) => applied,
            Err(why) => {
                write::rollback(tx).await?;
                return Ok(SettleAnswer::Refused(SettleRefusal::Impossible(format!(
                    "what the provider holds as {} cannot be copied as this operation's {}: \
                     {why}",
                    receipt.effect.id(),
                    A::KIND.as_str()
                ))));
            }
        };
        let snapshot = ResultSnapshot::of(&applied.result)
            .map_err(|e| KitchenError::CorruptRecord(format!("result snapshot: {e}")))?;
        let made = Made {
            ticket: applied.ticket,
            resource: applied.result.resource_id(),
            snapshot: snapshot.as_str(),
            duplicates: &[],
        };
        if !settlements::settle_made(&mut tx, &job.scope, job.lease, made, &entry).await? {
            write::rollback(tx).await?;
            return self.refused_after_race(&job.scope).await;
        }
        write::commit(tx).await?;
        warn_settled(job, &entry);
        Ok(SettleAnswer::Settled {
            state: OperationState::Succeeded,
            settlement: entry,
        })
    }

    /// Not made: the operation failed before its effect, so the caller's
    /// next retry with the same key sends it; with the audit entry.
    async fn settle_not_made<A: RemoteAction>(
        &self,
        job: &Job<A>,
        order: &SettleOrder,
        provider_check: String,
    ) -> Result<SettleAnswer, KitchenError> {
        let now = truncate_to_micros(OffsetDateTime::now_utc());
        let entry = entry(order, now, provider_check, order.force);
        let detail = format!(
            "Settled by hand by {}: the provider never made this {} ({}). Retry the write with \
             the same key to send it.",
            entry.by,
            A::KIND.as_str(),
            entry.reason.as_str()
        );
        let wait = self.wait_bound;
        if !settlements::settle_not_made(&self.db, wait, &job.scope, job.lease, &detail, &entry)
            .await?
        {
            return self.refused_after_race(&job.scope).await;
        }
        warn_settled(job, &entry);
        Ok(SettleAnswer::Settled {
            state: OperationState::FailedBeforeEffect,
            settlement: entry,
        })
    }
}

fn entry(order: &SettleOrder, now: OffsetDateTime, check: String, forced: bool) -> Settlement {
    Settlement {
        settled_at: now,
        decision: order.decision.clone(),
        by: order.by.clone(),
        reason: order.reason.clone(),
        provider_check: check,
        forced,
    }
}

/// What a search found, in the words the audit entry keeps.
fn describe(found: &Lookup, kind: EffectKind) -> String {
    match found {
        Lookup::Found {
            receipt,
            duplicates,
        } if duplicates.is_empty() => format!("found as {}", receipt.effect.id()),
        Lookup::Found {
            receipt,
            duplicates,
        } => format!(
            "found as {}, and {} more {} with the same reference: {}",
            receipt.effect.id(),
            duplicates.len(),
            kind.as_str(),
            duplicates.join(", ")
        ),
        Lookup::Absent => format!("no {} with this reference", kind.as_str()),
        Lookup::Failed(why) => format!("the provider could not be searched: {why}"),
    }
}

/// The effect an operator forces as made: `reference` taken at their word.
/// A change cannot be: its local copy is the ticket as the provider's
/// change left it, which only a search can tell.
fn forced_effect(
    kind: EffectKind,
    reference: &str,
    found: &Lookup,
) -> Result<ProviderEffect, String> {
    match kind {
        EffectKind::Ticket => Ok(ProviderEffect::Ticket {
            id: reference.into(),
        }),
        EffectKind::Comment => Ok(ProviderEffect::Comment {
            id: reference.into(),
        }),
        EffectKind::Change => Err(format!(
            "a change can be settled as made only once a search of the provider finds it, \
             because its local copy is the ticket as that change left it; the search said: {}. \
             Settle it --not-made if the change never happened, or wait until the provider can \
             be searched",
            describe(found, kind)
        )),
    }
}

/// The one log line per settlement by hand.
fn warn_settled<A: RemoteAction>(job: &Job<A>, entry: &Settlement) {
    tracing::warn!(
        tenant = %job.scope.tenant,
        action = job.scope.action.as_str(),
        operation_key = %job.scope.key,
        external_ref = %job.external_ref,
        decision = entry.decision.as_str(),
        by = %entry.by,
        forced = entry.forced,
        "an operator settled an effect by hand"
    );
}
