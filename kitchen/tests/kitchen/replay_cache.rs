//! Finished answers served from memory: a retry within the window is
//! answered without the database, a different request under the key is
//! still a conflict, and an answer never reaches another tenant.
//!
//! How the tests tell memory from the database: they delete the operation
//! record behind the kitchen's back. A kitchen that still answers `replayed`
//! (or `conflict`) answered from memory; one without the cache claims the
//! key again and creates.

use kitchen::actions::CreateTicket;
use kitchen::testing::{DatabaseKind, TestDatabase};
use kitchen::{Action, Clock, KitchenConfig, OperationKey, Outcome, ReplayCacheConfig, TenantId};
use time::OffsetDateTime;

use crate::support::{Desk, conflict, created, draft, fresh_key, replayed, ticket_count};

/// Deletes the record of `key` straight in the database.
async fn forget_behind_the_kitchens_back(db: &TestDatabase, tenant: TenantId, key: &OperationKey) {
    const DELETE: &str =
        "DELETE FROM operations WHERE tenant_id = $1 AND action = $2 AND operation_key = $3";
    let deleted = match db.backend() {
        DatabaseKind::Sqlite => {
            let pool = sqlx::SqlitePool::connect(db.url()).await.expect("connect");
            sqlx::query(DELETE)
                .bind(tenant.as_uuid())
                .bind(Action::CreateTicket.as_str())
                .bind(key.as_str())
                .execute(&pool)
                .await
                .expect("delete")
                .rows_affected()
        }
        DatabaseKind::Postgres => {
            let pool = sqlx::PgPool::connect(db.url()).await.expect("connect");
            sqlx::query(DELETE)
                .bind(tenant.as_uuid())
                .bind(Action::CreateTicket.as_str())
                .bind(key.as_str())
                .execute(&pool)
                .await
                .expect("delete")
                .rows_affected()
        }
    };
    assert_eq!(deleted, 1, "the record was there to delete");
}

async fn desk(db: &TestDatabase, cache: ReplayCacheConfig) -> Desk {
    let config = KitchenConfig {
        replay_cache: cache,
        ..KitchenConfig::default()
    };
    Desk::on(db.kitchen_with(config).await, "acme").await
}

async fn a_retry_is_answered_from_memory(db: TestDatabase) {
    let desk = desk(&db, ReplayCacheConfig::default()).await;
    let k = &desk.kitchen;
    let key = fresh_key();
    let request = draft("ops", "Printer on fire");
    let first = created(
        k.write::<CreateTicket>(desk.actor, &key, &request)
            .await
            .expect("create"),
    );
    forget_behind_the_kitchens_back(&db, desk.tenant.id, &key).await;

    let again = replayed(
        k.write::<CreateTicket>(desk.actor, &key, &request)
            .await
            .expect("retry"),
    );
    assert_eq!(again.result, first.result);
    assert_eq!(again.snapshot, first.snapshot, "byte for byte");
    assert_eq!(again.operation, first.operation);

    let other = conflict(
        k.write::<CreateTicket>(desk.actor, &key, &draft("ops", "Printer fine"))
            .await
            .expect("another request under the key"),
    );
    assert_eq!(other.key, key);
    assert_eq!(other.resource, Some(first.result.id));
    assert_eq!(
        ticket_count(k, desk.tenant.id).await,
        2,
        "the desk's ticket and this one: nothing new"
    );
}

/// The same steps without the cache: the record's absence is seen, which
/// is what makes the test above show memory at work.
async fn without_the_cache_every_retry_reads_the_database(db: TestDatabase) {
    let desk = desk(&db, ReplayCacheConfig::OFF).await;
    let k = &desk.kitchen;
    let key = fresh_key();
    let request = draft("ops", "Printer on fire");
    let first = created(
        k.write::<CreateTicket>(desk.actor, &key, &request)
            .await
            .expect("create"),
    );
    forget_behind_the_kitchens_back(&db, desk.tenant.id, &key).await;
    let again = created(
        k.write::<CreateTicket>(desk.actor, &key, &request)
            .await
            .expect("retry"),
    );
    assert_ne!(again.result.id, first.result.id);
}

async fn a_cached_answer_never_reaches_another_tenant(db: TestDatabase) {
    let acme = desk(&db, ReplayCacheConfig::default()).await;
    let k = &acme.kitchen;
    let globex = Desk::on(k.clone(), "globex").await;
    let key = fresh_key();
    let request = draft("ops", "Printer on fire");
    let mine = created(
        k.write::<CreateTicket>(acme.actor, &key, &request)
            .await
            .expect("create"),
    );
    // Same key, same request, another tenant: its own ticket.
    let theirs = created(
        k.write::<CreateTicket>(globex.actor, &key, &request)
            .await
            .expect("create"),
    );
    assert_ne!(theirs.result.id, mine.result.id);
    assert_eq!(theirs.operation.tenant_id, globex.tenant.id);
    // And each retry gets its own tenant's answer.
    for (desk, expected) in [(&acme, &mine), (&globex, &theirs)] {
        let again = replayed(
            k.write::<CreateTicket>(desk.actor, &key, &request)
                .await
                .expect("retry"),
        );
        assert_eq!(again.result.id, expected.result.id);
        assert_eq!(again.operation.tenant_id, desk.tenant.id);
    }
}

/// A cached answer is served only while its record replays, by the
/// kitchen's clock: past the window the retry answers `expired`.
async fn a_cached_answer_ends_with_the_replay_window(db: TestDatabase) {
    // Today, so that the cache's own wall-clock expiry does not drop the
    // entry first: only the kitchen's clock moves.
    let clock = Clock::manual(OffsetDateTime::now_utc());
    let window = time::Duration::days(30);
    let config = KitchenConfig {
        clock: clock.clone(),
        replay_window: window,
        ..KitchenConfig::default()
    };
    let desk = Desk::on(db.kitchen_with(config).await, "acme").await;
    let k = &desk.kitchen;
    let key = fresh_key();
    let request = draft("ops", "Printer on fire");
    let first = created(
        k.write::<CreateTicket>(desk.actor, &key, &request)
            .await
            .expect("create"),
    );
    replayed(
        k.write::<CreateTicket>(desk.actor, &key, &request)
            .await
            .expect("within the window"),
    );
    clock.advance(window + time::Duration::SECOND);
    match k
        .write::<CreateTicket>(desk.actor, &key, &request)
        .await
        .expect("past the window")
    {
        Outcome::Expired(expired) => assert_eq!(expired.current.id, first.result.id),
        other => panic!("expected expired, got {other:?}"),
    }
}

/// A retry answered from memory awaits no I/O, yet it must still give its
/// worker back now and then: a caller looping over cached replays (a client
/// in the same process, a benchmark's closed loop) otherwise starves every
/// other task on its runtime, the timer that would stop the loop included.
/// That hung CI's in-process benchmark. On a current-thread runtime, a task
/// spawned before the loop runs only if the loop yields.
async fn a_loop_of_cached_replays_lets_other_tasks_run(db: TestDatabase) {
    let desk = desk(&db, ReplayCacheConfig::default()).await;
    let key = fresh_key();
    let request = draft("ops", "Printer on fire");
    created(
        desk.kitchen
            .write::<CreateTicket>(desk.actor, &key, &request)
            .await
            .expect("create"),
    );
    let (kitchen, actor) = (desk.kitchen.clone(), desk.actor);
    let looped = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let other_ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let flag = other_ran.clone();
            tokio::spawn(async move { flag.store(true, std::sync::atomic::Ordering::SeqCst) });
            for replays in 1..=10_000_u32 {
                replayed(
                    kitchen
                        .write::<CreateTicket>(actor, &key, &request)
                        .await
                        .expect("retry"),
                );
                if other_ran.load(std::sync::atomic::Ordering::SeqCst) {
                    return Some(replays);
                }
            }
            None
        })
    })
    .join()
    .expect("the looping thread");
    let replays = looped.expect("the other task never ran in 10,000 cached replays");
    assert!(replays <= 1_000, "it ran only after {replays} replays");
}

kitchen::on_both_databases!(
    a_loop_of_cached_replays_lets_other_tasks_run,
    a_cached_answer_ends_with_the_replay_window,
    a_retry_is_answered_from_memory,
    without_the_cache_every_retry_reads_the_database,
    a_cached_answer_never_reaches_another_tenant,
);
