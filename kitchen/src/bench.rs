//! Ceilings for the benchmarks (feature `bench`): the store's own create
//! transaction and replay read, with nothing around them: no HTTP, no
//! validation, no serialization. The service is measured against these.
//!
//! The SQL is the store's, not a copy: [`CREATE_POSTGRES`] (and, on SQLite,
//! [`CLAIM`] and [`INSERT_TICKET`]) and [`SELECT_OPERATION`] are the very
//! statements a create and a replay run, so a PostgreSQL ceiling script
//! generated from them (for pgbench) measures the same transaction.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use time::OffsetDateTime;

use crate::domain::action::Action;
use crate::domain::fingerprint::Fingerprint;
use crate::domain::operation::{OperationKey, OperationRecord, OperationState, ResultSnapshot};
use crate::domain::ticket::{TicketDraft, truncate_to_micros};
use crate::{Kitchen, KitchenError, TenantId, store};

/// PostgreSQL's whole create: the claim and the ticket insert, one statement.
pub const CREATE_POSTGRES: &str = crate::store::operations::CLAIM_AND_INSERT_TICKET_POSTGRES;
/// SQLite's claim, the first statement of its create transaction.
pub const CLAIM: &str = crate::store::operations::CLAIM;
/// SQLite's ticket insert, in the claim's transaction.
pub const INSERT_TICKET: &str = crate::store::operations::INSERT_TICKET;
/// Reads an operation record by its primary key (the replay path).
pub const SELECT_OPERATION: &str = crate::store::operations::SELECT_OPERATION;

/// How many create transactions (claim + ticket insert, committed)
/// `concurrency` tasks complete in `duration`, each with a fresh key.
pub async fn create_ceiling(
    kitchen: &Kitchen,
    tenant: TenantId,
    concurrency: usize,
    duration: Duration,
) -> Result<u64, KitchenError> {
    let kitchen = kitchen.clone();
    run(concurrency, duration, move || {
        let kitchen = kitchen.clone();
        async move {
            let (record, ticket) = fresh(tenant, &kitchen)?;
            store::operations::claim_and_create(
                &kitchen.db,
                kitchen.config().wait_bound,
                &record,
                &ticket,
            )
            .await?;
            Ok(())
        }
    })
    .await
}

/// How many replay reads (the operation record by its primary key)
/// `concurrency` tasks complete in `duration`.
pub async fn read_ceiling(
    kitchen: &Kitchen,
    tenant: TenantId,
    key: &OperationKey,
    concurrency: usize,
    duration: Duration,
) -> Result<u64, KitchenError> {
    let (kitchen, key) = (kitchen.clone(), key.clone());
    run(concurrency, duration, move || {
        let kitchen = kitchen.clone();
        let key = key.clone();
        async move {
            store::operations::find(&kitchen.db, tenant, Action::CreateTicket, &key).await?;
            Ok(())
        }
    })
    .await
}

/// A record and ticket as a create would make them, with a fresh key.
fn fresh(
    tenant: TenantId,
    kitchen: &Kitchen,
) -> Result<(OperationRecord, crate::Ticket), KitchenError> {
    let draft = TicketDraft {
        project_id: Some("ceiling".into()),
        title: Some("Ceiling".into()),
        ..TicketDraft::default()
    };
    let command = draft
        .validate()
        .map_err(|_| KitchenError::CorruptRecord("ceiling draft is invalid".into()))?;
    let fingerprint = Fingerprint::of(Action::CreateTicket, &command);
    let now = truncate_to_micros(OffsetDateTime::now_utc());
    let ticket = command.into_ticket(now);
    let snapshot =
        ResultSnapshot::of(&ticket).map_err(|e| KitchenError::CorruptRecord(e.to_string()))?;
    let key = OperationKey::parse(uuid::Uuid::now_v7().to_string())
        .map_err(|e| KitchenError::CorruptRecord(e.to_string()))?;
    let record = OperationRecord {
        tenant_id: tenant,
        action: Action::CreateTicket,
        key,
        fingerprint,
        state: OperationState::Succeeded,
        ticket_id: Some(ticket.id),
        result: Some(snapshot),
        created_at: now,
        retained_until: now + kitchen.config().retention,
    };
    Ok((record, ticket))
}

async fn run<F, Fut>(concurrency: usize, duration: Duration, work: F) -> Result<u64, KitchenError>
where
    F: Fn() -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), KitchenError>> + Send + 'static,
{
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + duration;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let (work, done) = (work.clone(), done.clone());
        tasks.spawn(async move {
            while Instant::now() < deadline {
                work().await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<_, KitchenError>(())
        });
    }
    while let Some(task) = tasks.join_next().await {
        task.map_err(|e| KitchenError::Interrupted(e.to_string()))??;
    }
    Ok(done.load(Ordering::Relaxed))
}

/// Adds `count` operation records (and their tickets) for `tenant` in bulk,
/// for the growth benchmark: how does a create or replay do when the
/// tables already hold a million rows?
pub async fn seed(kitchen: &Kitchen, tenant: TenantId, count: u64) -> Result<(), KitchenError> {
    // One statement per table, generated by the database itself: a million
    // round trips would measure the network, not the store.
    const SEED_POSTGRES: [&str; 2] = [
        "INSERT INTO tickets (id, tenant_id, project_id, title, priority, status, created_at) \
         SELECT gen_random_uuid(), $1, 'seed', 'Seed ' || n, 'normal', 'open', now() \
         FROM generate_series(1, $2) AS n",
        "INSERT INTO operations (tenant_id, action, operation_key, fingerprint_version, fingerprint, \
         state, result_snapshot, created_at, retained_until) \
         SELECT $1, 'create_ticket', 'seed-' || n || '-' || md5(random()::text), 1, md5(n::text), \
         'succeeded', '{}', now(), now() + interval '30 days' FROM generate_series(1, $2) AS n",
    ];
    const SEED_SQLITE: [&str; 2] = [
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $2) \
         INSERT INTO tickets (id, tenant_id, project_id, title, priority, status, created_at) \
         SELECT randomblob(16), $1, 'seed', 'Seed ' || i, 'normal', 'open', '2026-01-01T00:00:00Z' FROM n",
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $2) \
         INSERT INTO operations (tenant_id, action, operation_key, fingerprint_version, fingerprint, \
         state, result_snapshot, created_at, retained_until) \
         SELECT $1, 'create_ticket', 'seed-' || i || '-' || hex(randomblob(8)), 1, hex(randomblob(32)), \
         'succeeded', '{}', '2026-01-01T00:00:00Z', '2026-01-31T00:00:00Z' FROM n",
    ];
    let count = i64::try_from(count).unwrap_or(i64::MAX);
    match &kitchen.db {
        store::Db::Postgres(pool) => {
            for sql in SEED_POSTGRES {
                sqlx::query(sql)
                    .bind(tenant.as_uuid())
                    .bind(count)
                    .execute(pool)
                    .await?;
            }
            // Measure the steady state, not the aftermath of a bulk load:
            // vacuum (visibility map, statistics) and flush it to disk.
            sqlx::query("VACUUM ANALYZE").execute(pool).await?;
            sqlx::query("CHECKPOINT").execute(pool).await?;
        }
        store::Db::Sqlite(pool) => {
            for sql in SEED_SQLITE {
                sqlx::query(sql)
                    .bind(tenant.as_uuid())
                    .bind(count)
                    .execute(pool)
                    .await?;
            }
            sqlx::query("ANALYZE").execute(pool).await?;
        }
    }
    Ok(())
}
