//! The path every write takes: validate, fingerprint, replay or conflict
//! from a committed record, else claim the key, apply, freeze the result and
//! commit, all in one transaction.

use std::time::Duration;

use time::OffsetDateTime;

use crate::KitchenError;
use crate::clock::Clock;
use crate::domain::fingerprint::Fingerprint;
use crate::domain::lifecycle::{Horizons, KeyPhase};
use crate::domain::operation::{OperationKey, OperationRecord, OperationState, ResultSnapshot};
use crate::outcome::{Expired, Outcome, RETRY_AFTER, Receipt};
use crate::store::{self, Db, is_lock_timeout, write};

use crate::domain::tenant::Actor;

use super::{WriteAction, WriteContext, WriteResult};

/// How a write runs: the database, how long to wait for a key another
/// attempt holds, how long its record replays and is remembered, and the
/// clock those are measured by.
#[derive(Debug, Clone)]
pub(crate) struct Engine {
    pub(crate) db: Db,
    pub(crate) wait_bound: Duration,
    pub(crate) horizons: Horizons,
    pub(crate) clock: Clock,
}

/// What a record found under an attempt's key means for it.
#[expect(
    clippy::large_enum_variant,
    reason = "returned once per write and matched at once; boxing would allocate on every write"
)]
pub(crate) enum TakenKey<T> {
    /// The key is spent: this is the answer.
    Answer(Outcome<T>),
    /// The record was forgotten (and is now deleted): claim the key.
    Free,
}

/// What one try of the transaction found.
#[expect(
    clippy::large_enum_variant,
    reason = "returned once per write and matched at once; boxing would allocate on every write"
)]
enum Try<T> {
    /// Decided: created, or refused.
    Done(Outcome<T>),
    /// Another attempt recorded the key first; read its record.
    Taken,
}

impl Engine {
    /// The fingerprint of a command of `A`.
    pub(crate) fn fingerprint<A: WriteAction>(command: &A::Command) -> Fingerprint {
        Fingerprint::of_canonical(A::ACTION, &A::canonical(command))
    }

    /// The record this attempt would make, in `state`; with the local
    /// backend `succeeded`, its result filled in by the same transaction.
    pub(crate) fn record<A: WriteAction>(
        &self,
        actor: Actor,
        key: &OperationKey,
        fingerprint: Fingerprint,
        now: OffsetDateTime,
        state: OperationState,
    ) -> OperationRecord {
        let (replayable_until, retained_until) = self.horizons.for_first_use(now);
        OperationRecord {
            tenant_id: actor.tenant,
            action: A::ACTION,
            key: key.clone(),
            fingerprint,
            state,
            ticket_id: None,
            result: None,
            resource_id: None,
            created_at: now,
            replayable_until,
            retained_until,
            tombstoned_at: None,
        }
    }

    /// What `original`, the record already under the key, means for an
    /// attempt with `fingerprint` at `now`: within the replay window a
    /// replay (or conflict); past it `expired` with the resource as it is
    /// now (or conflict); past the tombstone horizon nothing: the record is
    /// deleted and the key may be claimed.
    pub(crate) async fn answer_taken<A: WriteAction>(
        &self,
        original: OperationRecord,
        fingerprint: &Fingerprint,
        now: OffsetDateTime,
    ) -> Result<TakenKey<A::Result>, KitchenError> {
        match original.phase(now) {
            KeyPhase::Replayable => {
                Outcome::for_taken_key(original, fingerprint).map(TakenKey::Answer)
            }
            KeyPhase::Expired if original.fingerprint != *fingerprint => {
                Ok(TakenKey::Answer(Outcome::Conflict {
                    original: original.reference(),
                }))
            }
            KeyPhase::Expired => {
                let resource = original.resource_id.ok_or_else(|| {
                    KitchenError::CorruptRecord(format!(
                        "operation {} succeeded but records no resource",
                        original.key
                    ))
                })?;
                let current = A::Result::current(&self.db, &original, resource)
                    .await?
                    .ok_or_else(|| {
                        KitchenError::CorruptRecord(format!(
                            "operation {} made {resource}, which no longer exists",
                            original.key
                        ))
                    })?;
                Ok(TakenKey::Answer(Outcome::Expired(Expired {
                    current,
                    operation: original.reference(),
                })))
            }
            KeyPhase::Forgotten => {
                store::operations::forget(&self.db, &original, now).await?;
                Ok(TakenKey::Free)
            }
        }
    }

    /// Performs `request` at most once per (tenant, action, key).
    ///
    /// The first attempt with a key commits the effect and the operation
    /// record in one transaction and answers [`Outcome::Created`]. Any later
    /// attempt with the same key and the same meaning answers
    /// [`Outcome::Replayed`] with the original snapshot; with a different
    /// meaning, [`Outcome::Conflict`]. An attempt racing the first waits for
    /// it up to the wait bound, then replays, or answers
    /// [`Outcome::InProgress`]. Invalid input answers [`Outcome::Invalid`] and
    /// a refused one [`Outcome::Refused`], both leaving the key unused.
    pub(crate) async fn perform<A: WriteAction>(
        &self,
        actor: Actor,
        key: &OperationKey,
        command: A::Command,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let now = self.clock.now();
        let fingerprint = Self::fingerprint::<A>(&command);
        let record = self.record::<A>(actor, key, fingerprint, now, OperationState::Succeeded);
        // Fast path for retries: a committed record is final (the effect and
        // its record committed together and never change), so one indexed
        // read decides replay or conflict without a write transaction. This
        // is not check-then-insert: when no record is found, the claim below
        // still decides, and its unique key settles any race.
        if let Some(original) =
            store::operations::find(&self.db, actor.tenant, A::ACTION, key).await?
        {
            match self
                .answer_taken::<A>(original, &record.fingerprint, now)
                .await?
            {
                TakenKey::Answer(outcome) => return Ok(outcome),
                TakenKey::Free => {}
            }
        }
        // Once started, an attempt runs to its end on its own task: a caller
        // that goes away (a dropped connection, a server-side timeout) drops
        // only its wait for the answer, never the write half-way. The commit
        // then still happens once, and the caller's retry replays it.
        let engine = self.clone();
        tokio::spawn(async move { engine.decide::<A>(actor, record, command).await })
            .await
            .map_err(|e| KitchenError::Interrupted(e.to_string()))?
    }

    /// The transaction half of [`Engine::perform`] alone, without the fast
    /// path's read or a task of its own: what the benchmarks' ceiling runs.
    #[cfg(feature = "bench")]
    pub(crate) async fn transaction<A: WriteAction>(
        &self,
        actor: Actor,
        key: &OperationKey,
        command: A::Command,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let now = self.clock.now();
        let fingerprint = Self::fingerprint::<A>(&command);
        let record = self.record::<A>(actor, key, fingerprint, now, OperationState::Succeeded);
        self.decide::<A>(actor, record, command).await
    }

    /// The transaction half of [`Engine::perform`].
    async fn decide<A: WriteAction>(
        &self,
        actor: Actor,
        record: OperationRecord,
        command: A::Command,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let context = WriteContext {
            actor,
            action: A::ACTION,
            key: record.key.clone(),
            now: record.created_at,
        };
        let in_progress = Outcome::InProgress {
            retry_after: RETRY_AFTER,
        };
        // A claim can only lose to a record that is gone (or forgotten) by
        // the time we read it if it was past its tombstone horizon; then the
        // key is free again and one more try decides it.
        for _ in 0..3 {
            match self.try_once::<A>(&record, &command, &context).await {
                Ok(Try::Done(outcome)) => return Ok(outcome),
                Ok(Try::Taken) => {
                    let original = store::operations::find(
                        &self.db,
                        record.tenant_id,
                        record.action,
                        &record.key,
                    )
                    .await?;
                    if let Some(original) = original {
                        let taken = self
                            .answer_taken::<A>(original, &record.fingerprint, record.created_at)
                            .await?;
                        if let TakenKey::Answer(outcome) = taken {
                            return Ok(outcome);
                        }
                    }
                }
                Err(KitchenError::Database(e)) if is_lock_timeout(&e) => return Ok(in_progress),
                Err(e) => return Err(e),
            }
        }
        Ok(in_progress)
    }

    /// One transaction: claim, apply, freeze, commit.
    async fn try_once<A: WriteAction>(
        &self,
        record: &OperationRecord,
        command: &A::Command,
        context: &WriteContext,
    ) -> Result<Try<A::Result>, KitchenError> {
        let mut tx = write::begin(&self.db, self.wait_bound).await?;
        if !write::claim(&mut tx, record).await? {
            write::rollback(tx).await?;
            return Ok(Try::Taken);
        }
        let applied = match A::apply(command, &mut tx, context).await? {
            Ok(applied) => applied,
            Err(refusal) => {
                // The claim goes with the rest: a refused write leaves the
                // key unused, so a corrected request may take it.
                write::rollback(tx).await?;
                return Ok(Try::Done(Outcome::Refused(refusal)));
            }
        };
        let snapshot = ResultSnapshot::of(&applied.result)
            .map_err(|e| KitchenError::CorruptRecord(format!("result snapshot: {e}")))?;
        let resource = applied.result.resource_id();
        write::finish(&mut tx, record, applied.ticket, resource, &snapshot).await?;
        write::commit(tx).await?;
        #[cfg(feature = "fault-injection")]
        crate::faults::after_commit(&record.key);
        let operation = OperationRecord {
            ticket_id: Some(applied.ticket),
            resource_id: Some(resource),
            result: Some(snapshot.clone()),
            ..record.clone()
        };
        Ok(Try::Done(Outcome::Created(Receipt {
            result: applied.result,
            snapshot,
            operation,
        })))
    }
}
