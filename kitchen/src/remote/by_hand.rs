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
use crate::domain::comment::Comment;
use crate::domain::effect::{ExternalRef, Trigger};
use crate::domain::operation::{OperationRecord, OperationState, ResultSnapshot};
use crate::domain::settlement::{
    Decision, ProviderReference, SettleAnswer, SettleOrder, SettleRefusal, Settlement,
};
use crate::domain::ticket::truncate_to_micros;
use crate::provider::{EffectKind, Lookup, ProviderEffect, ProviderReceipt, unix_ms};
use crate::store::effects::{self, Lease, Made, OperationId};
use crate::store::{self, ledger, settlements, write};
use crate::write::RemoteAction;
use crate::write::WriteResult;

impl Remote {
    /// Carries out `order` on the effect of `scope`, of action `A`.
    pub(super) async fn settle_by_hand<A: RemoteAction>(
        &self,
        scope: OperationId,
        order: &SettleOrder,
    ) -> Result<SettleAnswer, KitchenError> {
        if let Decision::Kept(reference) = &order.decision {
            return self.keep::<A>(scope, reference, order).await;
        }
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
        let job = job::<A>(
            scope,
            lease,
            &record,
            row.request_snapshot,
            row.external_ref,
        )?;
        let found = self.search_for_operator(&job).await?;
        let answer = match (&order.decision, &found) {
            (
                Decision::Made(reference),
                Lookup::Found {
                    receipt,
                    duplicates,
                },
            ) if receipt.effect.id() == reference.as_str() => {
                let check = describe(&found, A::KIND);
                let receipt = receipt.clone();
                self.settle_made(&job, receipt, duplicates, order, check, false)
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
                        self.settle_made(&job, receipt, &[], order, check, true)
                            .await?
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
            // Answered by `keep` before any lease; an unknown effect has no
            // copies the service knows of.
            (Decision::Kept(_), _) => SettleAnswer::Refused(SettleRefusal::NoCopies {
                state: OperationState::Unknown,
            }),
            (Decision::NotMade, _) => {
                let check = describe(&found, A::KIND);
                // Forced only where the search found it: otherwise nothing
                // was overridden.
                let forced = matches!(found, Lookup::Found { .. });
                self.settle_not_made(&job, order, check, forced).await?
            }
        };
        if matches!(answer, SettleAnswer::Refused(_)) {
            effects::release_lease(&self.db, &job.scope, lease).await?;
        }
        Ok(answer)
    }

    /// `--keep`: a person removed the copies of a succeeded effect at the
    /// provider, keeping `reference`; the record stops listing them. The
    /// provider is searched first: it must hold the effect once, as
    /// `reference` (unless forced), and `reference` must be the object the
    /// service's local copy is of, where it keeps one.
    async fn keep<A: RemoteAction>(
        &self,
        scope: OperationId,
        reference: &ProviderReference,
        order: &SettleOrder,
    ) -> Result<SettleAnswer, KitchenError> {
        let Some(row) = ledger::find(&self.db, &scope).await? else {
            return Ok(SettleAnswer::Refused(SettleRefusal::NotFound));
        };
        let record: OperationRecord = row.operation.try_into()?;
        let listed = ledger::split_duplicates(row.provider_duplicates.as_deref());
        if record.state != OperationState::Succeeded || listed.is_empty() {
            return Ok(SettleAnswer::Refused(SettleRefusal::NoCopies {
                state: record.state,
            }));
        }
        if let Some(original) = self.original_id(A::KIND, &record).await?
            && original != reference.as_str()
        {
            return Ok(SettleAnswer::Refused(SettleRefusal::Impossible(format!(
                "the service's copy of this effect is of {original} at the provider, the                  original: keep {original} and remove the others ({})",
                listed.join(", ")
            ))));
        }
        // No lease: nobody else changes a succeeded record (the write below
        // checks the copies it lists are still the ones read here).
        let lease = self.lease(OffsetDateTime::now_utc());
        let job = job::<A>(
            scope,
            lease,
            &record,
            row.request_snapshot,
            row.external_ref,
        )?;
        let found = self.search_for_operator(&job).await?;
        let check = describe(&found, A::KIND);
        let confirmed = matches!(
            &found,
            Lookup::Found { receipt, duplicates }
                if duplicates.is_empty() && receipt.effect.id() == reference.as_str()
        );
        if !confirmed && !order.force {
            return Ok(SettleAnswer::Refused(SettleRefusal::Contradicted(format!(
                "a search of the provider for external reference {} does not show {reference}                  as its only object: {check}. Remove the copies there first, or settle with                  --force if the search cannot see what you did.",
                job.external_ref
            ))));
        }
        let now = truncate_to_micros(OffsetDateTime::now_utc());
        let entry = entry(order, now, check, !confirmed);
        let wait = self.wait_bound;
        if !settlements::clear_duplicates(&self.db, wait, &job.scope, &listed, &entry).await? {
            return self.refused_after_race(&job.scope).await;
        }
        warn_settled(&job, &entry);
        Ok(SettleAnswer::Settled {
            state: OperationState::Succeeded,
            settlement: entry,
        })
    }

    /// The provider's id of the object the local copy of `record`'s effect
    /// is of, where the service keeps one (a ticket's, a comment's; a
    /// change keeps none).
    async fn original_id(
        &self,
        kind: EffectKind,
        record: &OperationRecord,
    ) -> Result<Option<String>, KitchenError> {
        Ok(match kind {
            EffectKind::Ticket => match record.ticket_id {
                Some(id) => store::tickets::find(&self.db, record.tenant_id, id)
                    .await?
                    .and_then(|t| t.provider_ticket_id),
                None => None,
            },
            EffectKind::Comment => record
                .result
                .as_ref()
                .and_then(|snapshot| snapshot.parse::<Comment>().ok())
                .and_then(|c| c.provider_comment_id),
            EffectKind::Change => None,
        })
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

    /// One search of the provider by the effect's reference, logged.
    async fn search_for_operator<A: RemoteAction>(
        &self,
        job: &Job<A>,
    ) -> Result<Lookup, KitchenError> {
        let found = self.search::<A>(job).await?;
        tracing::info!(
            operation_key = %job.scope.key,
            external_ref = %job.external_ref,
            answer = ?found,
            "searched the provider for an operator's settlement"
        );
        Ok(found)
    }

    /// Made: the local copy of `receipt`, the operation succeeded with it,
    /// and the audit entry, in one transaction. `duplicates` are the
    /// provider's ids of copies the search found besides it.
    async fn settle_made<A: RemoteAction>(
        &self,
        job: &Job<A>,
        receipt: ProviderReceipt,
        duplicates: &[String],
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
            duplicates,
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
        forced: bool,
    ) -> Result<SettleAnswer, KitchenError> {
        let now = truncate_to_micros(OffsetDateTime::now_utc());
        let entry = entry(order, now, provider_check, forced);
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

/// The effect of `record` as a worker holding `lease` works on it; it never
/// sends, only searches.
fn job<A: RemoteAction>(
    scope: OperationId,
    lease: Lease,
    record: &OperationRecord,
    request_snapshot: Option<String>,
    external_ref: Option<String>,
) -> Result<Job<A>, KitchenError> {
    Ok(Job {
        command: stored_command::<A>(record, request_snapshot.as_deref())?,
        external_ref: external_ref.map_or_else(
            || ExternalRef::derive(record.tenant_id, record.action, &record.key),
            ExternalRef::from_stored,
        ),
        scope,
        lease,
        trigger: Trigger::Status,
        actor_token: None,
    })
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
