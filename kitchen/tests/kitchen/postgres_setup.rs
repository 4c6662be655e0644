//! PostgreSQL's own setup: statements as behind a transaction-mode pooler,
//! and migrations that apply all or nothing under sqlx's lock. (The whole
//! kitchen suite through a real pgbouncer is `tests/ha/pgbouncer.py`.)

use kitchen::actions::{AddComment, AddLabel, CreateTicket, TransitionTicket, UpdateTicket};
use kitchen::testing::TestDatabase;
use kitchen::{Action, Kitchen, KitchenConfig, PageSize, TicketFilter};
use sqlx::migrate::Migrate;
use sqlx::{Connection, PgConnection};

use crate::support::{Desk, created, draft, fresh_key, label, move_to, replayed, say, update};

/// Every kind of statement the kitchen runs (writes, replays, reads,
/// lookups) works when each is unnamed and in a transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_as_if_pooled_every_write_replays_and_reads() {
    let db = TestDatabase::postgres_as_if_pooled().await;
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;

    let key = fresh_key();
    let request = draft("ops", "Printer on fire");
    let first = created(
        desk.kitchen
            .write::<CreateTicket>(desk.actor, &key, &request)
            .await
            .expect("create"),
    );
    let again = replayed(
        desk.kitchen
            .write::<CreateTicket>(desk.actor, &key, &request)
            .await
            .expect("retry"),
    );
    assert_eq!(again.snapshot.as_str(), first.snapshot.as_str());

    let edit = update(id, r#"{"priority": "high"}"#);
    created(
        desk.kitchen
            .write::<UpdateTicket>(desk.actor, &fresh_key(), &edit)
            .await
            .expect("update"),
    );
    created(
        desk.kitchen
            .write::<TransitionTicket>(
                desk.actor,
                &fresh_key(),
                &(id.into(), move_to("in_progress")),
            )
            .await
            .expect("transition"),
    );
    created(
        desk.kitchen
            .write::<AddComment>(desk.actor, &fresh_key(), &(id.into(), say("On it")))
            .await
            .expect("comment"),
    );
    created(
        desk.kitchen
            .write::<AddLabel>(desk.actor, &fresh_key(), &(id.into(), label("hardware")))
            .await
            .expect("label"),
    );

    let ticket = desk.current(id).await;
    assert_eq!(ticket.version.get(), 4, "update, transition and label");
    assert_eq!(
        desk.history(id).await.len(),
        5,
        "created, then one entry per write"
    );
    assert_eq!(desk.comments(id).await.len(), 1);
    let page = desk
        .kitchen
        .list_tickets(
            desk.tenant.id,
            &TicketFilter::default(),
            PageSize::DEFAULT,
            None,
        )
        .await
        .expect("list");
    assert_eq!(page.tickets.len(), 2);
    let record = desk
        .kitchen
        .operation(desk.tenant.id, Action::CreateTicket, &key)
        .await
        .expect("lookup")
        .expect("recorded");
    assert_eq!(record.ticket_id, Some(first.result.id));
}

/// The wait bound is set per transaction behind a pooler: a create that
/// meets a holder of its key still answers InProgress instead of waiting
/// for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_as_if_pooled_a_holder_past_the_wait_bound_yields_in_progress() {
    crate::create::a_holder_past_the_wait_bound_yields_in_progress(
        TestDatabase::postgres_as_if_pooled().await,
    )
    .await;
}

/// Racing attempts with one key still make one ticket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_as_if_pooled_concurrent_identical_creates_make_one_ticket() {
    crate::concurrency::concurrent_identical_creates_make_one_ticket(
        TestDatabase::postgres_as_if_pooled().await,
    )
    .await;
}

/// A migration that fails part-way (here: a table of release 9 is already
/// there) leaves the schema as it was, not releases 1 to 8 applied: the
/// next start, after a failover say, applies it whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_migrations_apply_all_or_nothing() {
    let db = TestDatabase::postgres().await;
    let mut conn = PgConnection::connect(db.url()).await.expect("connect");
    sqlx::raw_sql("CREATE TABLE operation_settlements (in_the_way int)")
        .execute(&mut conn)
        .await
        .expect("put a table in the way");

    let failed = Kitchen::connect(db.url(), KitchenConfig::default()).await;
    assert!(failed.is_err(), "the migration meets the table");

    let (tables,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM information_schema.tables \
         WHERE table_schema = 'public' AND table_name IN ('tickets', '_sqlx_migrations')",
    )
    .fetch_one(&mut conn)
    .await
    .expect("count tables");
    assert_eq!(tables, 0, "nothing of the failed migration remains");

    sqlx::raw_sql("DROP TABLE operation_settlements")
        .execute(&mut conn)
        .await
        .expect("clear the way");
    Kitchen::connect(db.url(), KitchenConfig::default())
        .await
        .expect("the next start migrates");
}

/// An instance of an earlier release migrates under sqlx's session lock;
/// this one takes the same lock number in its transaction, so neither
/// migrates while the other does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_migration_waits_for_the_lock_an_earlier_release_takes() {
    let db = TestDatabase::postgres().await;
    let mut earlier = PgConnection::connect(db.url()).await.expect("connect");
    earlier.lock().await.expect("take sqlx's migration lock");

    let url = db.url().to_owned();
    let starting =
        tokio::spawn(async move { Kitchen::connect(&url, KitchenConfig::default()).await });

    // The start is seen waiting for that very lock, not merely not done.
    let mut watcher = PgConnection::connect(db.url()).await.expect("connect");
    let mut waited = false;
    for _ in 0..500 {
        let (waiting,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database \
             WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = current_database()",
        )
        .fetch_one(&mut watcher)
        .await
        .expect("read pg_locks");
        if waiting > 0 {
            waited = true;
            break;
        }
        assert!(!starting.is_finished(), "migrated while the lock was held");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(waited, "the start never waited for sqlx's lock");

    earlier.unlock().await.expect("release it");
    starting
        .await
        .expect("task ran")
        .expect("the start migrates once the lock is free");
}
