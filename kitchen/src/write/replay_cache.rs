//! Finished answers kept in memory, so that a retry within the replay
//! window costs no database round trip.
//!
//! Why this is safe, also with many instances on one database: an entry is
//! only ever a record that has `succeeded` and still holds its frozen
//! answer, and such a record never changes until its replay window is over
//! (the effect and the record committed together; the sweep only touches a
//! record past `replayable_until`, and a key is only freed past
//! `retained_until`). So a copy taken by any instance at any time is the
//! record itself, for as long as it replays. What is *not* cached: records
//! still in progress or unknown (a remote effect not settled yet), records
//! whose provider made nothing, tombstones. Those are read from the
//! database every time.
//!
//! An entry is served only while its record is replayable by the kitchen's
//! clock (the same [`OperationRecord::phase`] that decides on a database
//! read), and it is dropped from memory when its window ends. The key of an
//! entry is the key of the record: (tenant, action, operation key), so an
//! answer can never reach another tenant, nor another action's key. The
//! fingerprint compare (replay or conflict) is the same as after a database
//! read.
//!
//! The cache is bounded twice, by entries and by bytes (see
//! [`ReplayCacheConfig`]), and evicts the least useful entries first
//! (moka's TinyLFU); an evicted entry costs one database read, nothing
//! else.

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use moka::Expiry;
use time::OffsetDateTime;

use crate::clock::Clock;
use crate::domain::action::Action;
use crate::domain::fingerprint::Fingerprint;
use crate::domain::lifecycle::KeyPhase;
use crate::domain::operation::{OperationKey, OperationRecord, OperationState};
use crate::domain::tenant::TenantId;
use crate::outcome::{Outcome, Receipt};

use super::WriteResult;
use crate::config::ReplayCacheConfig;

/// What an entry is found by: the record's own primary key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ReplayKey {
    tenant: TenantId,
    action: Action,
    key: OperationKey,
}

/// A finished record and its result, parsed once.
struct Entry {
    record: OperationRecord,
    /// The action's `Result` type, parsed from the frozen JSON.
    result: Arc<dyn Any + Send + Sync>,
    /// Its estimated size, for the bytes bound.
    bytes: u32,
}

/// Finished answers in memory; cheap to clone (one shared cache).
#[derive(Clone)]
pub(crate) struct ReplayCache {
    entries: Option<moka::sync::Cache<ReplayKey, Arc<Entry>>>,
    clock: Clock,
}

impl std::fmt::Debug for ReplayCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayCache")
            .field("enabled", &self.entries.is_some())
            .finish_non_exhaustive()
    }
}

/// Drops an entry from memory when its record's replay window ends.
struct UntilWindowEnds;

impl Expiry<ReplayKey, Arc<Entry>> for UntilWindowEnds {
    fn expire_after_create(
        &self,
        _scope: &ReplayKey,
        entry: &Arc<Entry>,
        _created_at: Instant,
    ) -> Option<Duration> {
        // By the wall clock: moka runs on its own monotonic clock, so a test
        // clock cannot move it. Serving never depends on this: `get` asks
        // the kitchen's clock.
        let left = entry.record.replayable_until - OffsetDateTime::now_utc();
        Some(left.try_into().unwrap_or(Duration::ZERO))
    }
}

/// Bookkeeping per entry besides its JSON and key (the record's fixed
/// fields, the parsed result's own allocations, the map's slot), estimated
/// on the high side.
const ENTRY_OVERHEAD_BYTES: usize = 512;

impl ReplayCache {
    /// A cache bounded by `config`, serving by `clock`.
    pub(crate) fn new(config: ReplayCacheConfig, clock: Clock) -> Self {
        if config.max_entries == 0 || config.max_bytes == 0 {
            return Self {
                entries: None,
                clock,
            };
        }
        // One weighted bound enforces both: every entry weighs at least the
        // bytes budget's share of one entry, so no more than `max_entries`
        // fit, and never more than `max_bytes` in all.
        let floor = u32::try_from(config.max_bytes / config.max_entries)
            .unwrap_or(u32::MAX)
            .max(1);
        let entries = moka::sync::Cache::builder()
            .max_capacity(config.max_bytes)
            .weigher(move |_: &ReplayKey, entry: &Arc<Entry>| entry.bytes.max(floor))
            .expire_after(UntilWindowEnds)
            .build();
        Self {
            entries: Some(entries),
            clock,
        }
    }

    /// The answer to an attempt with `fingerprint` under (tenant, action,
    /// key), if a finished record is cached and still replays: a replay of
    /// its frozen answer, or a conflict.
    pub(crate) fn answer<T: WriteResult>(
        &self,
        tenant: TenantId,
        action: Action,
        key: &OperationKey,
        fingerprint: &Fingerprint,
    ) -> Option<Outcome<T>> {
        let entries = self.entries.as_ref()?;
        let scope = ReplayKey {
            tenant,
            action,
            key: key.clone(),
        };
        let entry = entries.get(&scope)?;
        if entry.record.phase(self.clock.now()) != KeyPhase::Replayable {
            // The window is over: what to answer now is the database's to
            // say (expired, or a free key).
            entries.invalidate(&scope);
            return None;
        }
        if entry.record.fingerprint != *fingerprint {
            return Some(Outcome::Conflict {
                original: entry.record.reference(),
            });
        }
        // A result of another type under this action's key cannot happen
        // (an action has one result type); if it did, the database decides.
        let result = entry.result.downcast_ref::<T>()?.clone();
        let snapshot = entry.record.result.clone()?;
        Some(Outcome::Replayed(Receipt {
            possible_duplicate_of: None,
            result,
            snapshot,
            operation: entry.record.clone(),
        }))
    }

    /// Keeps `record`, whose result is `result`, if it is final: succeeded,
    /// its frozen answer still there, and replayable now.
    pub(crate) fn keep<T: WriteResult>(&self, record: &OperationRecord, result: &T) {
        let Some(entries) = &self.entries else {
            return;
        };
        let Some(snapshot) = &record.result else {
            return;
        };
        if record.state != OperationState::Succeeded
            || record.tombstoned_at.is_some()
            || record.phase(self.clock.now()) != KeyPhase::Replayable
        {
            return;
        }
        let bytes = 2 * snapshot.as_str().len()
            + record.key.as_str().len()
            + record.fingerprint.hex().len()
            + ENTRY_OVERHEAD_BYTES;
        let entry = Entry {
            record: record.clone(),
            result: Arc::new(result.clone()),
            bytes: u32::try_from(bytes).unwrap_or(u32::MAX),
        };
        entries.insert(
            ReplayKey {
                tenant: record.tenant_id,
                action: record.action,
                key: record.key.clone(),
            },
            Arc::new(entry),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ticket::TicketId;
    use crate::store::Db;

    /// A result with no content: the bounds weigh the record's JSON.
    #[derive(Clone, serde::Serialize, serde::Deserialize)]
    struct Nothing;

    impl WriteResult for Nothing {
        fn resource_id(&self) -> uuid::Uuid {
            uuid::Uuid::nil()
        }

        async fn current(
            _db: &Db,
            _record: &OperationRecord,
            _resource: uuid::Uuid,
        ) -> Result<Option<Self>, crate::KitchenError> {
            Ok(None)
        }
    }

    fn finished(tenant: TenantId, key: &str, snapshot_bytes: usize) -> OperationRecord {
        let now = OffsetDateTime::now_utc();
        OperationRecord {
            tenant_id: tenant,
            action: Action::CreateTicket,
            key: OperationKey::parse(key).expect("key"),
            fingerprint: Fingerprint::of_canonical(Action::CreateTicket, &key),
            state: OperationState::Succeeded,
            ticket_id: Some(TicketId::new_v7()),
            result: Some(crate::domain::operation::ResultSnapshot::from_stored(
                "x".repeat(snapshot_bytes),
            )),
            resource_id: None,
            created_at: now,
            replayable_until: now + time::Duration::days(1),
            retained_until: now + time::Duration::days(2),
            tombstoned_at: None,
        }
    }

    fn fill(cache: &ReplayCache, n: usize, snapshot_bytes: usize) {
        let tenant = TenantId::new_v7();
        for i in 0..n {
            let record = finished(
                tenant,
                &format!("replay-cache-test-key-{i:06}"),
                snapshot_bytes,
            );
            cache.keep(&record, &Nothing);
        }
    }

    fn held(cache: &ReplayCache) -> (u64, u64) {
        let entries = cache.entries.as_ref().expect("on");
        entries.run_pending_tasks();
        (entries.entry_count(), entries.weighted_size())
    }

    #[test]
    fn no_more_entries_than_the_entry_bound() {
        let config = ReplayCacheConfig {
            max_entries: 10,
            max_bytes: 1 << 30,
        };
        let cache = ReplayCache::new(config, Clock::system());
        fill(&cache, 200, 10);
        let (entries, _) = held(&cache);
        assert!(entries <= 10, "{entries} entries");
    }

    #[test]
    fn no_more_bytes_than_the_byte_bound() {
        let config = ReplayCacheConfig {
            max_entries: 1_000_000,
            max_bytes: 64 * 1024,
        };
        let cache = ReplayCache::new(config, Clock::system());
        fill(&cache, 500, 1000);
        let (entries, bytes) = held(&cache);
        assert!(bytes <= 64 * 1024, "{bytes} bytes");
        // 1000-byte answers weigh about 2.5 KiB each: some 25 fit.
        assert!((10..=40).contains(&entries), "{entries} entries");
    }
}
