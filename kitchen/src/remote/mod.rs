//! The remote backend: tickets kept in a provider the kitchen does not own.
//!
//! The database cannot commit our record and the provider's ticket
//! together, so the kitchen keeps an effect ledger instead (write-ahead):
//!
//! 1. commit the operation `in_progress` with its first attempt, before
//!    anything is sent ([`store::effects::write_ahead`]);
//! 2. dispatch, sending the effect's external reference as the provider's
//!    idempotency key;
//! 3. record `succeeded` with the provider's receipt, `failed_before_effect`
//!    only when the provider provably made nothing, or `unknown`.
//!
//! An `unknown` effect (or one left `in_progress` by a crash) is settled by
//! reconciliation (`reconcile.rs`): search the provider by external
//! reference; found is success, provably absent allows a re-dispatch with
//! the same key and reference, anything else stays unknown. Nothing is ever
//! re-sent blindly, except within the provider's own dedup window, where
//! the provider itself deduplicates the key.
//!
//! One worker at a time works on an effect: it holds a lease (a row value
//! with an expiry, see `store::effects`), renewed for each call it makes.
//!
//! Every write action goes this way (`RemoteAction` says what is particular
//! to each): a create makes a ticket there, an update or a move an entry in
//! its changelog, a comment a comment, each carrying the effect's reference.
//!
//! # Layout
//! - this file: a write's path (write ahead, or resume an existing effect);
//! - `work.rs`: what a lease holder does: dispatch, look up, decide;
//! - `settle.rs`: how it records what it learned (an attempt, the effect
//!   made with its local copy, nothing made, unknown, given up);
//! - `reconcile.rs`: the background reconciler and the settling a status
//!   read asks for;
//! - `by_hand.rs`: an operator's decision about an effect reconciliation
//!   could not settle, with its audit entry.

mod by_hand;
mod reconcile;
mod settle;
mod status;
pub(crate) mod work;

use std::sync::Arc;
use std::time::{Duration, Instant};

use time::OffsetDateTime;
use uuid::Uuid;

use crate::KitchenError;
use crate::domain::effect::{ExternalRef, Trigger};
use crate::domain::lifecycle::KeyPhase;
use crate::domain::operation::{OperationKey, OperationRecord, OperationState};
use crate::domain::tenant::{Actor, TenantId};
use crate::outcome::{Outcome, RETRY_AFTER, Refusal};
use crate::provider::{RemoteSettings, TicketProvider, unix_ms};
use crate::store::effects::{self, Lease, OperationId, WriteAhead, WriteAheadClaim};
use crate::store::ledger;
use crate::store::{self, Db};
use crate::write::RemoteAction;
use crate::write::keys::{KeyRules, TakenKey};

/// Added to one call's timeout to make a lease: room for the database
/// writes around the call (a few milliseconds each).
const LEASE_MARGIN: Duration = Duration::from_millis(250);

/// The remote backend: the provider, how to use it, and the database its
/// effect ledger lives in.
#[derive(Debug, Clone)]
pub(crate) struct Remote {
    pub(crate) db: Db,
    pub(crate) provider: Arc<dyn TicketProvider>,
    pub(crate) settings: RemoteSettings,
    /// How long a write waits for another attempt holding its key.
    pub(crate) wait_bound: Duration,
    /// The rules of a key's life, the same as the local backend's: what a
    /// record already under a key answers, and the clock they run by.
    pub(crate) keys: KeyRules,
}

impl Remote {
    /// A fresh lease for one worker, long enough for one call.
    fn lease(&self, now: OffsetDateTime) -> Lease {
        Lease {
            owner: Uuid::now_v7(),
            until_ms: unix_ms(now + self.settings.call_timeout + LEASE_MARGIN),
        }
    }

    /// When the background reconciler should look at this effect again
    /// (see [`next_check`]).
    fn next_check(&self, now: OffsetDateTime, attempts: i32) -> i64 {
        next_check(&self.settings, now, attempts)
    }

    /// Until when a dispatch started at `now` may be repeated with the same
    /// key: the provider's dedup window. `None` when it ignores keys.
    fn key_trusted_until(&self, now: OffsetDateTime) -> Option<OffsetDateTime> {
        (!self.settings.dedup_window.is_zero()).then(|| now + self.settings.dedup_window)
    }

    /// Whether the local copy of the ticket `command` acts on allows it now,
    /// and so whether it may be sent: a refusal sends nothing and leaves the
    /// key unused, as on the local backend. A create acts on no ticket.
    async fn allowed<A: RemoteAction>(
        &self,
        tenant: TenantId,
        command: &A::Command,
    ) -> Result<Result<(), Refusal>, KitchenError> {
        let Some(ticket_id) = A::target(command) else {
            return Ok(Ok(()));
        };
        let Some(ticket) = store::tickets::find(&self.db, tenant, ticket_id).await? else {
            return Ok(Err(Refusal::TicketNotFound { ticket_id }));
        };
        if ticket.provider_ticket_id.is_none() {
            return Ok(Err(Refusal::NotAtProvider { ticket_id }));
        }
        Ok(A::allowed(command, &ticket))
    }
}

impl Remote {
    /// A write on the remote backend: write ahead, dispatch, settle; or, for
    /// a key already recorded, its answer (resuming an unsettled effect).
    pub(crate) async fn write<A: RemoteAction>(
        &self,
        actor: Actor,
        key: &OperationKey,
        request: &A::Request,
        command: A::Command,
        refuse_duplicates: Option<Duration>,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        self.write_ahead_then::<A>(actor, key, request, command, refuse_duplicates, true)
            .await
    }

    /// The write-ahead record, then (if `dispatch`) the dispatch. Without
    /// the dispatch, this is what a crash between the two leaves behind.
    /// With `refuse_duplicates` (the guard's window), a new key whose
    /// content matches a write under another key within it is refused in
    /// the write-ahead's transaction, as on the local backend.
    pub(crate) async fn write_ahead_then<A: RemoteAction>(
        &self,
        actor: Actor,
        key: &OperationKey,
        request: &A::Request,
        command: A::Command,
        refuse_duplicates: Option<Duration>,
        dispatch: bool,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let now = self.keys.clock.now();
        let duplicates_since = refuse_duplicates.map(|window| now - window);
        let fingerprint = KeyRules::fingerprint::<A>(&command);
        let record =
            self.keys
                .record::<A>(actor, key, fingerprint, now, OperationState::InProgress);
        let scope = OperationId::of(&record);
        let request_snapshot = serde_json::to_string(request)
            .map_err(|e| KitchenError::CorruptRecord(format!("request snapshot: {e}")))?;
        let external_ref = ExternalRef::derive(record.tenant_id, record.action, &record.key);
        // Three rounds at most: a record can only vanish between our write
        // and our read if a retention sweep removed it, and a refusal sends
        // us round once more when the key was claimed meanwhile.
        for _ in 0..3 {
            if let Some(row) = ledger::find(&self.db, &scope).await? {
                let original: OperationRecord = row.operation.try_into()?;
                // A settled effect, or one whose key is forgotten, answers as
                // on the local backend; an unsettled one is resumed.
                if original.state == OperationState::Succeeded
                    || original.phase(record.created_at) == KeyPhase::Forgotten
                {
                    match self
                        .keys
                        .answer_taken::<A>(
                            &self.db,
                            original,
                            &record.fingerprint,
                            record.created_at,
                        )
                        .await?
                    {
                        TakenKey::Answer(outcome) => return Ok(outcome),
                        TakenKey::Free => continue,
                    }
                }
                return self
                    .resume::<A>(original, &record, &request_snapshot, &command)
                    .await;
            }
            // A new key: only a write the local copy allows is sent.
            #[cfg(feature = "test-support")]
            crate::testing::precheck::reached(&record.key).await;
            if let Err(refusal) = self.allowed::<A>(record.tenant_id, &command).await? {
                // The key decides before the pre-check, as on the local
                // backend: a concurrent attempt with this key may have
                // claimed it and made its effect since our read, making the
                // local copy refuse (a stale If-Match) what is in fact a
                // retry of that attempt. Any effect of this key is recorded
                // before it is sent, so a record found now is what refused
                // us, and its answer is ours; no record: the refusal stands.
                if ledger::find(&self.db, &scope).await?.is_some() {
                    continue;
                }
                return Ok(Outcome::Refused(refusal));
            }
            let now = OffsetDateTime::now_utc();
            let lease = self.lease(now);
            let ahead = WriteAhead {
                record: &record,
                request_snapshot: &request_snapshot,
                external_ref: &external_ref,
                key_trusted_until: self.key_trusted_until(now),
                lease,
                duplicates_since,
            };
            match effects::write_ahead(&self.db, self.wait_bound, &ahead, now).await? {
                WriteAheadClaim::Placed if !dispatch => break,
                WriteAheadClaim::Placed => {
                    crate::faults::before_dispatch(&record.key);
                    let job = work::Job::<A> {
                        scope,
                        lease,
                        command,
                        external_ref,
                        trigger: Trigger::Request,
                        actor_token: actor.token,
                    };
                    return self.dispatch(job, Some(1)).await;
                }
                WriteAheadClaim::Taken => continue,
                WriteAheadClaim::PossibleDuplicate(of) => {
                    return Ok(Outcome::Refused(Refusal::PossibleDuplicate { of }));
                }
                WriteAheadClaim::Busy => break,
            }
        }
        Ok(Outcome::InProgress {
            retry_after: RETRY_AFTER,
        })
    }

    /// A write whose key is already recorded and whose effect is not
    /// settled as made.
    async fn resume<A: RemoteAction>(
        &self,
        original: OperationRecord,
        attempt: &OperationRecord,
        request_snapshot: &str,
        command: &A::Command,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let trigger = Trigger::Retry;
        if original.fingerprint != attempt.fingerprint {
            if original.state != OperationState::FailedBeforeEffect {
                return Ok(Outcome::Conflict {
                    original: original.reference(),
                });
            }
            // The provider made nothing under this key, so the key is not
            // spent: a corrected request takes it over (as with a local
            // write, whose invalid or refused input never consumes a key),
            // if the local copy allows it.
            if let Err(refusal) = self.allowed::<A>(attempt.tenant_id, command).await? {
                return Ok(Outcome::Refused(refusal));
            }
            let now = OffsetDateTime::now_utc();
            let lease = self.lease(now);
            if !effects::take_lease(&self.db, &OperationId::of(attempt), lease, unix_ms(now))
                .await?
                || !effects::replace_request(&self.db, lease, attempt, request_snapshot).await?
            {
                effects::release_lease(&self.db, &OperationId::of(attempt), lease).await?;
                return Ok(Outcome::InProgress {
                    retry_after: RETRY_AFTER,
                });
            }
            return self
                .work::<A>(OperationId::of(attempt), lease, trigger)
                .await;
        }
        self.settle_now::<A>(&OperationId::of(attempt), attempt, trigger)
            .await
    }

    /// Takes the effect's lease and settles it as far as it can be now; if
    /// another worker holds the lease, waits for it up to the wait bound.
    async fn settle_now<A: RemoteAction>(
        &self,
        scope: &OperationId,
        attempt: &OperationRecord,
        trigger: Trigger,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let deadline = Instant::now() + self.wait_bound;
        let mut pause = Duration::from_millis(10);
        loop {
            let now = OffsetDateTime::now_utc();
            let lease = self.lease(now);
            if effects::take_lease(&self.db, scope, lease, unix_ms(now)).await? {
                return self.work::<A>(scope.clone(), lease, trigger).await;
            }
            // Settled meanwhile, or another worker holds the lease.
            let Some(row) = ledger::find(&self.db, scope).await? else {
                break;
            };
            let current: OperationRecord = row.operation.try_into()?;
            if current.state == OperationState::Succeeded {
                return Outcome::for_taken_key(current, &attempt.fingerprint);
            }
            if Instant::now() >= deadline {
                return Ok(match current.state {
                    OperationState::Unknown => Outcome::Unknown {
                        operation: current.reference(),
                        reason: row.state_detail.unwrap_or_else(|| {
                            "The provider's answer was lost; reconciliation is running.".into()
                        }),
                        // Out of the reconciler's queue while unknown: given up.
                        gave_up: row.next_check_ms.is_none(),
                    },
                    OperationState::FailedBeforeEffect => Outcome::NotCreated {
                        operation: current.reference(),
                        reason: self
                            .stored_reason(scope, row.state_detail.unwrap_or_default())
                            .await?,
                    },
                    _ => break,
                });
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        }
        Ok(Outcome::InProgress {
            retry_after: RETRY_AFTER,
        })
    }
}

/// When the background reconciler should look at an unsettled effect
/// again, after its attempt number `attempts`: the interval, doubled per
/// attempt up to 64 times it (at most an hour). A provider that stays down
/// is not asked again every few seconds for ever, and the attempt log grows
/// slowly; a caller's retry or status read still reconciles at once.
fn next_check(settings: &RemoteSettings, now: OffsetDateTime, attempts: i32) -> i64 {
    let doublings = u32::try_from(attempts.saturating_sub(1).clamp(0, 6)).unwrap_or(0);
    let delay = (settings.reconcile_every * 2u32.pow(doublings)).min(Duration::from_secs(3600));
    unix_ms(now + delay)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_checks_back_off_to_a_cap() {
        let settings = RemoteSettings {
            reconcile_every: Duration::from_secs(5),
            ..RemoteSettings::default()
        };
        let now = OffsetDateTime::UNIX_EPOCH;
        let after = |attempts| (next_check(&settings, now, attempts) - unix_ms(now)) / 1000;
        assert_eq!(after(1), 5);
        assert_eq!(after(2), 10);
        assert_eq!(after(4), 40);
        assert_eq!(after(7), 320);
        assert_eq!(after(500), 320, "at most 64 times the interval");
    }
}
