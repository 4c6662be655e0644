//! The effect ledger's writes (remote backend): the write-ahead record, the
//! lease that lets one worker at a time call the provider for an effect,
//! and its attempts. What is read of it (an effect for its status, the
//! reconciler's queue, the counts for an operator) is `ledger.rs`.
//!
//! Why a lease and not a transaction held across the call: the provider call
//! takes network time and may hang; a database transaction (or row lock)
//! held for that long would block every reader of the key and die with the
//! process. A lease is a row value with an expiry: a worker that crashes
//! simply stops renewing it, and the reconciler takes the effect over once
//! it has run out.
//!
//! Attempts are capped (`RemoteSettings::max_attempts`): an unsettled
//! effect with that many attempts gets no more. It is given up on: it stays
//! `unknown` with `next_check_ms` NULL, which takes it out of the
//! reconciler's queue ([`due`](super::ledger::due)) and marks it for an operator
//! ([`unresolved`](super::ledger::unresolved)); every settled state also has `next_check_ms` NULL, so
//! "unknown and NULL" means given up and nothing else.

use std::time::Duration;

use time::OffsetDateTime;
use uuid::Uuid;

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::duplicate::EarlierWrite;
use crate::domain::effect::{AttemptKind, ExternalRef, FinishedAttempt, Trigger};
use crate::domain::operation::{OperationKey, OperationRecord};
use crate::domain::tenant::TenantId;
use crate::domain::ticket::TicketId;

use super::operations::CLAIM;
use super::write::{WriteTx, on_tx};
use super::{Db, WriteTransaction, is_lock_timeout, on_db};

/// (tenant, action, key): the primary key of an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OperationId {
    pub(crate) tenant: TenantId,
    pub(crate) action: Action,
    pub(crate) key: OperationKey,
}

impl OperationId {
    pub(crate) fn of(record: &OperationRecord) -> Self {
        Self {
            tenant: record.tenant_id,
            action: record.action,
            key: record.key.clone(),
        }
    }
}

/// A worker's hold on an effect.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lease {
    pub(crate) owner: Uuid,
    pub(crate) until_ms: i64,
}

/// The write-ahead record as committed before the first dispatch.
pub(crate) struct WriteAhead<'a> {
    pub(crate) record: &'a OperationRecord,
    pub(crate) request_snapshot: &'a str,
    pub(crate) external_ref: &'a ExternalRef,
    pub(crate) key_trusted_until: Option<OffsetDateTime>,
    pub(crate) lease: Lease,
    /// The likely-duplicate guard in `confirm` mode: refuse a write whose
    /// content matches one under another key since then.
    pub(crate) duplicates_since: Option<OffsetDateTime>,
}

/// An attempt about to start.
pub(crate) struct NewAttempt {
    pub(crate) kind: AttemptKind,
    pub(crate) trigger: Trigger,
    pub(crate) now: OffsetDateTime,
    /// For a first dispatch: the end of the provider's dedup window.
    pub(crate) key_trusted_until: Option<OffsetDateTime>,
    /// The most attempts an unsettled effect may have: none starts once it
    /// has this many.
    pub(crate) max_attempts: u32,
}

/// Whether an attempt could start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttemptStart {
    /// Started under the renewed lease, with this number.
    Started(i32),
    /// The lease was lost: another worker has the effect.
    LeaseLost,
    /// The effect already has this many attempts, the cap or more: nothing
    /// was started and the lease is still held (see [`give_up`]).
    Exhausted(i64),
}

/// What the write-ahead claim found.
pub(crate) enum WriteAheadClaim {
    /// Recorded, with attempt 1 (a dispatch) started: go and dispatch.
    Placed,
    /// The key was already recorded.
    Taken,
    /// Another writer held the database past the wait bound.
    Busy,
    /// The guard refused it: a write with the same content was made under
    /// another key (nothing recorded, the key unused).
    PossibleDuplicate(EarlierWrite),
}

/// How an attempt's answer moves an effect that did not happen (see
/// [`succeed`] for one that did).
pub(crate) enum Settle<'a> {
    /// The provider provably made nothing.
    FailedBeforeEffect { detail: &'a str },
    /// Not known; the reconciler looks again at `next_check_ms`, or never
    /// (`None`: attempts exhausted, given up for an operator to resolve).
    Unknown {
        detail: &'a str,
        next_check_ms: Option<i64>,
    },
}

const SET_EFFECT_COLUMNS: &str = "UPDATE operations SET request_snapshot = $4, external_ref = $5, \
     key_trusted_until = $6, first_dispatched_at = $7, last_dispatched_at = $7, \
     lease_owner = $8, lease_until_ms = $9, next_check_ms = $9 \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3";

/// Numbers the attempt after the last one of the scope. Only the lease
/// holder adds attempts, so the numbers cannot collide; if they ever did,
/// the primary key would refuse the second.
const INSERT_ATTEMPT: &str = "INSERT INTO operation_attempts \
     (tenant_id, action, operation_key, attempt_no, kind, trigger, started_at) \
     SELECT $1, $2, $3, COALESCE(MAX(attempt_no), 0) + 1, $4, $5, $6 FROM operation_attempts \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 \
     RETURNING attempt_no";

const FINISH_ATTEMPT: &str = "UPDATE operation_attempts SET finished_at = $5, result = $6, detail = $7 \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 AND attempt_no = $4";

/// The attempts that count against the cap, while an effect's outcome is
/// unknown or in progress (none once it provably failed: then nothing was
/// made, and a caller's retry may always send again): every dispatch, and
/// the reconciler's own searches. A search a caller's retry or status read
/// made does not count: the cap is the reconciler's budget, and callers
/// who ask often (a client polling, an agent retrying) would otherwise
/// spend it within seconds, long before a search can prove absence (only
/// after the in-flight bound), leaving for good `unknown` an effect the
/// provider never made.
const COUNT_CAPPED_ATTEMPTS: &str = "SELECT COUNT(*) FROM operation_attempts a \
     JOIN operations o ON o.tenant_id = a.tenant_id AND o.action = a.action \
     AND o.operation_key = a.operation_key \
     WHERE a.tenant_id = $1 AND a.action = $2 AND a.operation_key = $3 \
     AND o.state IN ('in_progress', 'unknown') \
     AND NOT (a.kind = 'lookup' AND a.trigger IN ('retry', 'status'))";

/// Gives up on an effect whose attempts are exhausted, under its lease:
/// `unknown` (an `in_progress` one was left by a worker that died during
/// its last call, whose answer is therefore unknown too), out of the
/// reconciler's queue, lease released. Matches once per effect: an effect
/// already given up has `next_check_ms` NULL.
const GIVE_UP: &str = "UPDATE operations SET state = 'unknown', state_detail = $5, \
     lease_owner = NULL, lease_until_ms = NULL, next_check_ms = NULL \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 AND lease_owner = $4 \
     AND state IN ('in_progress', 'unknown') AND next_check_ms IS NOT NULL";

const TAKE_LEASE: &str = "UPDATE operations SET lease_owner = $4, lease_until_ms = $5 \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 \
     AND state <> 'succeeded' AND (lease_until_ms IS NULL OR lease_until_ms < $6)";

/// Each attempt renews the lease for the length of one call ($7), so that
/// a lookup followed by a dispatch under one lease never outlives it.
const MARK_DISPATCHING: &str = "UPDATE operations SET state = 'in_progress', \
     last_dispatched_at = $5, first_dispatched_at = COALESCE(first_dispatched_at, $5), \
     key_trusted_until = COALESCE(key_trusted_until, $6), lease_until_ms = $7 \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 AND lease_owner = $4";

const RENEW_LEASE: &str = "UPDATE operations SET lease_until_ms = $5 \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 AND lease_owner = $4";

const REPLACE_REQUEST: &str = "UPDATE operations SET fingerprint_version = $5, fingerprint = $6, \
     request_snapshot = $7, created_at = $8, retained_until = $9, replayable_until = $10 \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 AND lease_owner = $4 \
     AND state = 'failed_before_effect'";

/// Copies seen at the provider are kept once seen ($8 NULL keeps them).
const SETTLE_SUCCEEDED: &str = "UPDATE operations SET state = 'succeeded', ticket_id = $5, \
     resource_id = $6, result_snapshot = $7, result_snapshot_tail = NULL, \
     provider_duplicates = COALESCE($8, provider_duplicates), state_detail = NULL, \
     lease_owner = NULL, lease_until_ms = NULL, next_check_ms = NULL \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 AND lease_owner = $4";

const SETTLE_UNSETTLED: &str = "UPDATE operations SET state = $5, state_detail = $6, \
     lease_owner = NULL, lease_until_ms = NULL, next_check_ms = $7 \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 AND lease_owner = $4";

const RELEASE_LEASE: &str = "UPDATE operations SET lease_owner = NULL, lease_until_ms = NULL \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 AND lease_owner = $4";

/// Binds a scope as `$1`, `$2`, `$3`.
macro_rules! bind_scope {
    ($query:expr, $scope:expr) => {
        $query
            .bind($scope.tenant.as_uuid())
            .bind($scope.action.as_str())
            .bind($scope.key.as_str())
    };
}
pub(super) use bind_scope;

/// Records the operation as `in_progress`, its effect columns and its first
/// attempt (a dispatch), in one transaction that commits before anything is
/// sent: whatever happens to the dispatch, the intent is on disk first.
///
/// The claim is the same `INSERT … ON CONFLICT DO NOTHING` on the primary
/// key as for a local create: the unique key, not a prior read, decides who
/// dispatches.
pub(crate) async fn write_ahead(
    db: &Db,
    wait: Duration,
    ahead: &WriteAhead<'_>,
    started_at: OffsetDateTime,
) -> Result<WriteAheadClaim, KitchenError> {
    match try_write_ahead(db, wait, ahead, started_at).await {
        Err(KitchenError::Database(e)) if is_lock_timeout(&e) => Ok(WriteAheadClaim::Busy),
        other => other,
    }
}

/// [`write_ahead`]'s transaction.
async fn try_write_ahead(
    db: &Db,
    wait: Duration,
    ahead: &WriteAhead<'_>,
    started_at: OffsetDateTime,
) -> Result<WriteAheadClaim, KitchenError> {
    let record = ahead.record;
    let scope = OperationId::of(record);
    let mut tx = super::write::begin(db, wait).await?;
    // A remote write's record is stored whole: the ticket is made later.
    let result = super::write::stored_result(record, None);
    let claimed = on_tx!(&mut tx, conn => super::operations::bind_claim!(sqlx::query(CLAIM), record, result)
        .execute(conn)
        .await?
        .rows_affected());
    if claimed != 1 {
        super::write::rollback(tx).await?;
        return Ok(WriteAheadClaim::Taken);
    }
    if let Some(since) = ahead.duplicates_since
        && let Some(earlier) =
            super::duplicates::earlier_write_locked(&mut tx, record, since).await?
    {
        super::write::rollback(tx).await?;
        return Ok(WriteAheadClaim::PossibleDuplicate(earlier));
    }
    on_tx!(&mut tx, conn => bind_scope!(sqlx::query(SET_EFFECT_COLUMNS), scope)
        .bind(ahead.request_snapshot)
        .bind(ahead.external_ref.as_str())
        .bind(ahead.key_trusted_until)
        .bind(started_at)
        .bind(ahead.lease.owner)
        .bind(ahead.lease.until_ms)
        .execute(conn)
        .await
        .map(drop)?);
    on_tx!(&mut tx, conn => bind_scope!(sqlx::query_scalar::<_, i32>(INSERT_ATTEMPT), scope)
        .bind(AttemptKind::Dispatch.as_str())
        .bind(Trigger::Request.as_str())
        .bind(started_at)
        .fetch_one(conn)
        .await
        .map(drop)?);
    super::write::commit(tx).await?;
    Ok(WriteAheadClaim::Placed)
}

/// Takes the lease on an unsettled effect whose previous lease (if any) ran
/// out. `false`: someone else holds it, or the effect is settled.
pub(crate) async fn take_lease(
    db: &Db,
    scope: &OperationId,
    lease: Lease,
    now_ms: i64,
) -> Result<bool, KitchenError> {
    let done = on_db!(db, pool => bind_scope!(sqlx::query(TAKE_LEASE), scope)
        .bind(lease.owner)
        .bind(lease.until_ms)
        .bind(now_ms)
        .execute(pool)
        .await?
        .rows_affected());
    Ok(done == 1)
}

/// How many of the effect's attempts count against the cap (see
/// `COUNT_CAPPED_ATTEMPTS`).
pub(crate) async fn capped_attempts(db: &Db, scope: &OperationId) -> Result<i64, KitchenError> {
    Ok(
        on_db!(db, pool => bind_scope!(sqlx::query_scalar::<_, i64>(COUNT_CAPPED_ATTEMPTS), scope)
        .fetch_one(pool)
        .await?),
    )
}

/// Gives a lease back without settling (a lookup that changed nothing is
/// recorded through [`settle`] instead).
pub(crate) async fn release_lease(
    db: &Db,
    scope: &OperationId,
    lease: Lease,
) -> Result<(), KitchenError> {
    on_db!(db, pool => bind_scope!(sqlx::query(RELEASE_LEASE), scope)
        .bind(lease.owner)
        .execute(pool)
        .await
        .map(drop)?);
    Ok(())
}

/// Under the lease, replaces the request of an effect that failed before
/// happening: its key was not spent, so a corrected request may take it.
pub(crate) async fn replace_request(
    db: &Db,
    lease: Lease,
    record: &OperationRecord,
    request_snapshot: &str,
) -> Result<bool, KitchenError> {
    let scope = OperationId::of(record);
    let done = on_db!(db, pool => bind_scope!(sqlx::query(REPLACE_REQUEST), scope)
        .bind(lease.owner)
        .bind(record.fingerprint.version())
        .bind(record.fingerprint.hex())
        .bind(request_snapshot)
        .bind(record.created_at)
        .bind(record.retained_until)
        .bind(record.replayable_until)
        .execute(pool)
        .await?
        .rows_affected());
    Ok(done == 1)
}

/// Under the lease (renewed to `lease.until_ms`), starts an attempt and
/// returns its number. A dispatch also marks the effect `in_progress` and
/// stamps the dispatch times (and, at the first dispatch, the end of the
/// provider's dedup window).
///
/// The cap is checked in the same transaction as the insert, so however
/// many workers take turns at the effect, none adds an attempt past it.
pub(crate) async fn start_attempt(
    db: &Db,
    wait: Duration,
    scope: &OperationId,
    lease: Lease,
    attempt: NewAttempt,
) -> Result<AttemptStart, KitchenError> {
    let NewAttempt {
        kind,
        trigger,
        now,
        key_trusted_until,
        max_attempts,
    } = attempt;
    let started: sqlx::Result<AttemptStart> = on_db!(db, pool => async {
        let mut tx = WriteTransaction::begin_write(pool, wait).await?;
        let made = bind_scope!(sqlx::query_scalar::<_, i64>(COUNT_CAPPED_ATTEMPTS), scope)
            .fetch_one(&mut *tx)
            .await?;
        if made >= i64::from(max_attempts) {
            tx.rollback().await?;
            return Ok(AttemptStart::Exhausted(made));
        }
        let held = match kind {
            AttemptKind::Dispatch => bind_scope!(sqlx::query(MARK_DISPATCHING), scope)
                .bind(lease.owner)
                .bind(now)
                .bind(key_trusted_until)
                .bind(lease.until_ms),
            AttemptKind::Lookup => bind_scope!(sqlx::query(RENEW_LEASE), scope)
                .bind(lease.owner)
                .bind(lease.until_ms),
        }
        .execute(&mut *tx)
        .await?;
        if held.rows_affected() != 1 {
            tx.rollback().await?;
            return Ok(AttemptStart::LeaseLost);
        }
        let number = bind_scope!(sqlx::query_scalar::<_, i32>(INSERT_ATTEMPT), scope)
            .bind(kind.as_str())
            .bind(trigger.as_str())
            .bind(now)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(AttemptStart::Started(number))
    }.await);
    Ok(started?)
}

/// Under the lease, gives up on an effect whose attempts are exhausted: it
/// stays (or, if a dead worker left it `in_progress`, becomes) `unknown`
/// with `detail`, leaves the reconciler's queue, and the lease is given
/// back. `true` only for the worker that gave up on it first: later ones
/// just give the lease back.
pub(crate) async fn give_up(
    db: &Db,
    scope: &OperationId,
    lease: Lease,
    detail: &str,
) -> Result<bool, KitchenError> {
    let done = on_db!(db, pool => bind_scope!(sqlx::query(GIVE_UP), scope)
        .bind(lease.owner)
        .bind(detail)
        .execute(pool)
        .await?
        .rows_affected());
    if done == 1 {
        return Ok(true);
    }
    release_lease(db, scope, lease).await?;
    Ok(false)
}

/// What a succeeded effect made, as its record keeps it.
pub(crate) struct Made<'a> {
    /// The local ticket it made or acted on (`None`: not a ticket).
    pub(crate) ticket: Option<TicketId>,
    /// The resource it made or acted on (the ticket, or the comment).
    pub(crate) resource: Uuid,
    /// The frozen answer every replay returns.
    pub(crate) snapshot: &'a str,
    /// The provider's ids of copies besides the original, if a search found
    /// any.
    pub(crate) duplicates: &'a [String],
}

/// Under the lease, in the caller's transaction (which has just written
/// the local copy of what the provider made): records the attempt's answer
/// and moves the effect to `succeeded` with its frozen answer, giving the
/// lease back. The record thus never says `succeeded` without its local
/// copy. `false`: the lease was lost; the caller rolls back.
pub(crate) async fn succeed(
    tx: &mut WriteTx,
    scope: &OperationId,
    lease: Lease,
    attempt: FinishedAttempt<'_>,
    made: Made<'_>,
    now: OffsetDateTime,
) -> Result<bool, KitchenError> {
    let FinishedAttempt {
        number,
        result,
        detail,
    } = attempt;
    let duplicates = (!made.duplicates.is_empty()).then(|| made.duplicates.join(","));
    let moved = on_tx!(tx, conn => {
        bind_scope!(sqlx::query(FINISH_ATTEMPT), scope)
            .bind(number)
            .bind(now)
            .bind(result.as_str())
            .bind(detail)
            .execute(&mut *conn)
            .await?;
        bind_scope!(sqlx::query(SETTLE_SUCCEEDED), scope)
            .bind(lease.owner)
            .bind(made.ticket.map(|t| t.as_uuid()))
            .bind(made.resource)
            .bind(made.snapshot)
            .bind(duplicates.as_deref())
            .execute(&mut *conn)
            .await?
            .rows_affected()
    });
    Ok(moved == 1)
}

/// Under the lease, records an attempt's answer and what it means for an
/// effect that did not happen (yet), in one transaction, and gives the
/// lease back. `false`: the lease was lost and nothing was written.
pub(crate) async fn settle(
    db: &Db,
    wait: Duration,
    scope: &OperationId,
    lease: Lease,
    attempt: FinishedAttempt<'_>,
    settle: Settle<'_>,
    now: OffsetDateTime,
) -> Result<bool, KitchenError> {
    let FinishedAttempt {
        number,
        result,
        detail,
    } = attempt;
    let result = result.as_str();
    let settled: sqlx::Result<bool> = on_db!(db, pool => async {
        let mut tx = WriteTransaction::begin_write(pool, wait).await?;
        bind_scope!(sqlx::query(FINISH_ATTEMPT), scope)
            .bind(number)
            .bind(now)
            .bind(result)
            .bind(detail)
            .execute(&mut *tx)
            .await?;
        let moved = match &settle {
            Settle::FailedBeforeEffect { detail } => {
                bind_scope!(sqlx::query(SETTLE_UNSETTLED), scope)
                    .bind(lease.owner)
                    .bind("failed_before_effect")
                    .bind(*detail)
                    .bind(None::<i64>)
                    .execute(&mut *tx)
                    .await?
            }
            Settle::Unknown { detail, next_check_ms } => {
                bind_scope!(sqlx::query(SETTLE_UNSETTLED), scope)
                    .bind(lease.owner)
                    .bind("unknown")
                    .bind(*detail)
                    .bind(*next_check_ms)
                    .execute(&mut *tx)
                    .await?
            }
        };
        if moved.rows_affected() != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        tx.commit().await?;
        Ok(true)
    }.await);
    Ok(settled?)
}

/// Records an attempt's answer without moving the effect (a lookup that
/// found nothing, before the re-dispatch it allows).
pub(crate) async fn finish_attempt(
    db: &Db,
    scope: &OperationId,
    attempt: FinishedAttempt<'_>,
    now: OffsetDateTime,
) -> Result<(), KitchenError> {
    let FinishedAttempt {
        number,
        result,
        detail,
    } = attempt;
    let result = result.as_str();
    on_db!(db, pool => bind_scope!(sqlx::query(FINISH_ATTEMPT), scope)
        .bind(number)
        .bind(now)
        .bind(result)
        .bind(detail)
        .execute(pool)
        .await
        .map(drop)?);
    Ok(())
}
