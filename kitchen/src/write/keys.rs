//! What a key means, the same on both backends: the fingerprint of a
//! command, the record an attempt makes under its key (with its replay
//! and tombstone horizons, by the clock of the key lifecycle), and what a
//! record already under the key answers (replay, conflict, expired,
//! forgotten). The generic write path and the remote backend each hold
//! these rules once.

use time::OffsetDateTime;

use crate::KitchenError;
use crate::clock::Clock;
use crate::domain::fingerprint::Fingerprint;
use crate::domain::lifecycle::{Horizons, KeyPhase};
use crate::domain::operation::{OperationKey, OperationRecord, OperationState};
use crate::domain::tenant::Actor;
use crate::outcome::{Expired, Outcome};
use crate::store::{self, Db};

use super::{WriteAction, WriteResult};

/// The rules of a key's life: how long its record replays and is
/// remembered, and the clock those are measured by.
#[derive(Debug, Clone)]
pub(crate) struct KeyRules {
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

impl KeyRules {
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
        db: &Db,
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
                let current = A::Result::current(db, &original, resource)
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
                store::operations::forget(db, &original, now).await?;
                Ok(TakenKey::Free)
            }
        }
    }
}
