//! Writes that share one transaction of SQLite's group writer: each keeps
//! its own atomicity and its own answer, and none is answered before the
//! group committed. The wait bound is checked on both databases.
//!
//! Each test holds the writer while it queues its writes, so the group is
//! exactly those writes, then lets it go.

use kitchen::actions::{CreateTicket, TransitionTicket, UpdateTicket};
use std::collections::HashSet;
use std::time::Duration;

use kitchen::testing::{DatabaseKind, TestDatabase, tenant_with_token};
use kitchen::{
    Action, Kitchen, KitchenConfig, KitchenError, OperationKey, Outcome, StorageFault, Ticket,
    TicketDraft, TicketId, TransitionDraft, Written,
};
use tokio::task::JoinHandle;

use crate::support::{
    assert_held, created, draft, fresh_key, move_to, refused, replayed, ticket_count,
    unknown_ticket, update,
};

/// Waits until `n` writes wait in the writer's queue. The writer is held,
/// so the count only grows; each look lets the submitting tasks run.
async fn until_queued(kitchen: &Kitchen, n: usize) {
    while kitchen.queued_writes_for_test() < n {
        tokio::task::yield_now().await;
    }
    assert_eq!(kitchen.queued_writes_for_test(), n);
}

type Answer = JoinHandle<Result<Outcome<Ticket>, KitchenError>>;

fn create(
    kitchen: &Kitchen,
    tenant: kitchen::TenantId,
    key: &OperationKey,
    d: TicketDraft,
) -> Answer {
    let (kitchen, key) = (kitchen.clone(), key.clone());
    tokio::spawn(async move { kitchen.write::<CreateTicket>(tenant, &key, &d).await })
}

async fn answer(task: Answer) -> Result<Outcome<Ticket>, KitchenError> {
    task.await.expect("the create's task ran")
}

async fn many_creates_in_one_group_commit_one_ticket_each(db: TestDatabase) {
    const WRITES: usize = 40;
    let kitchen = db.kitchen_with(KitchenConfig::default()).await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;

    let hold = kitchen.hold_writer_for_test().await;
    let keys: Vec<OperationKey> = (0..WRITES).map(|_| fresh_key()).collect();
    let tasks: Vec<Answer> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| {
            create(
                &kitchen,
                tenant.id,
                key,
                draft("ops", &format!("Ticket {i}")),
            )
        })
        .collect();
    until_queued(&kitchen, WRITES).await;
    hold.release().await;

    let mut ids = HashSet::new();
    for (task, key) in tasks.into_iter().zip(&keys) {
        let receipt = created(answer(task).await.expect("no error"));
        assert_eq!(receipt.operation.key, *key);
        ids.insert(receipt.result.id);
        let record = kitchen
            .operation(tenant.id, Action::CreateTicket, key)
            .await
            .expect("lookup")
            .expect("the record committed with its ticket");
        assert_eq!(record.ticket_id, Some(receipt.result.id));
    }
    assert_eq!(ids.len(), WRITES, "one ticket per key");
    assert_eq!(ticket_count(&kitchen, tenant.id).await, WRITES);
}

async fn the_same_key_many_times_in_one_group_makes_one_ticket(db: TestDatabase) {
    const ATTEMPTS: usize = 8;
    let kitchen = db.kitchen_with(KitchenConfig::default()).await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let key = fresh_key();

    let hold = kitchen.hold_writer_for_test().await;
    let tasks: Vec<Answer> = (0..ATTEMPTS)
        .map(|_| create(&kitchen, tenant.id, &key, draft("ops", "Disk full")))
        .collect();
    until_queued(&kitchen, ATTEMPTS).await;
    hold.release().await;

    let mut made = 0;
    let mut ids = HashSet::new();
    let mut snapshots = HashSet::new();
    for task in tasks {
        let receipt = match answer(task).await.expect("no error") {
            Outcome::Created(receipt) => {
                made += 1;
                receipt
            }
            other => replayed(other),
        };
        ids.insert(receipt.result.id);
        snapshots.insert(receipt.snapshot.as_str().to_owned());
    }
    assert_eq!(
        made, 1,
        "one attempt made the ticket, the others replayed it"
    );
    assert_eq!(ids.len(), 1);
    assert_eq!(snapshots.len(), 1, "every attempt got the same snapshot");
    assert_eq!(ticket_count(&kitchen, tenant.id).await, 1);
}

async fn a_refusal_in_a_group_leaves_the_others_alone(db: TestDatabase) {
    let kitchen = db.kitchen_with(KitchenConfig::default()).await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let existing = created(
        kitchen
            .write::<CreateTicket>(tenant.id, &fresh_key(), &draft("ops", "Existing"))
            .await
            .expect("create"),
    )
    .result;
    let (first, missing, forbidden, last, closing) = (
        fresh_key(),
        fresh_key(),
        fresh_key(),
        fresh_key(),
        fresh_key(),
    );

    let hold = kitchen.hold_writer_for_test().await;
    let first_task = create(&kitchen, tenant.id, &first, draft("ops", "First"));
    until_queued(&kitchen, 1).await;
    let missing_task = {
        let (kitchen, key) = (kitchen.clone(), missing.clone());
        tokio::spawn(async move {
            let edit = update(unknown_ticket(), r#"{"title": "Nobody"}"#);
            kitchen.write::<UpdateTicket>(tenant.id, &key, &edit).await
        })
    };
    until_queued(&kitchen, 2).await;
    let forbidden_task = transition(
        &kitchen,
        tenant.id,
        &forbidden,
        existing.id,
        move_to("closed"),
    );
    until_queued(&kitchen, 3).await;
    let last_task = create(&kitchen, tenant.id, &last, draft("ops", "Last"));
    until_queued(&kitchen, 4).await;
    // A refusal closing the group too: its savepoint is the one the commit
    // would otherwise take along.
    let closing_task = transition(&kitchen, tenant.id, &closing, existing.id, move_to("open"));
    until_queued(&kitchen, 5).await;
    hold.release().await;

    created(answer(first_task).await.expect("no error"));
    created(answer(last_task).await.expect("no error"));
    refused(missing_task.await.expect("ran").expect("no error"));
    refused(forbidden_task.await.expect("ran").expect("no error"));
    refused(closing_task.await.expect("ran").expect("no error"));
    for (action, key) in [
        (Action::UpdateTicket, &missing),
        (Action::TransitionTicket, &forbidden),
        (Action::TransitionTicket, &closing),
    ] {
        assert_unused(&kitchen, tenant.id, action, key, "a refused write").await;
    }
    assert_eq!(ticket_count(&kitchen, tenant.id).await, 3);
}

fn transition(
    kitchen: &Kitchen,
    tenant: kitchen::TenantId,
    key: &OperationKey,
    ticket: TicketId,
    to: TransitionDraft,
) -> Answer {
    let (kitchen, key) = (kitchen.clone(), key.clone());
    tokio::spawn(async move {
        kitchen
            .write::<TransitionTicket>(tenant, &key, &(ticket.into(), to.clone()))
            .await
    })
}

async fn a_failing_statement_fails_its_own_write_alone(db: TestDatabase) {
    let kitchen = db.kitchen_with(KitchenConfig::default()).await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    kitchen.fail_ticket_inserts_titled_for_test("Doomed").await;
    let (before, doomed, after) = (fresh_key(), fresh_key(), fresh_key());

    let hold = kitchen.hold_writer_for_test().await;
    let before_task = create(&kitchen, tenant.id, &before, draft("ops", "Before"));
    until_queued(&kitchen, 1).await;
    let doomed_task = create(&kitchen, tenant.id, &doomed, draft("ops", "Doomed"));
    until_queued(&kitchen, 2).await;
    let after_task = create(&kitchen, tenant.id, &after, draft("ops", "After"));
    until_queued(&kitchen, 3).await;
    hold.release().await;

    created(answer(before_task).await.expect("no error"));
    created(answer(after_task).await.expect("no error"));
    let failed = answer(doomed_task).await;
    assert!(
        matches!(failed, Err(KitchenError::Database(_))),
        "the failing write gets its own error, got {failed:?}"
    );
    assert_eq!(
        kitchen
            .operation(tenant.id, Action::CreateTicket, &doomed)
            .await
            .expect("lookup"),
        None,
        "its claim went with its failed insert: the key is unused"
    );
    assert_eq!(ticket_count(&kitchen, tenant.id).await, 2);
}

async fn no_write_is_answered_before_its_group_commits(db: TestDatabase) {
    let kitchen = db.kitchen_with(KitchenConfig::default()).await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    kitchen
        .break_commits_of_tickets_titled_for_test("Poison")
        .await;
    let (innocent, poison) = (fresh_key(), fresh_key());
    let request = draft("ops", "Innocent");

    let hold = kitchen.hold_writer_for_test().await;
    let innocent_task = create(&kitchen, tenant.id, &innocent, request.clone());
    let poison_task = create(&kitchen, tenant.id, &poison, draft("ops", "Poison"));
    until_queued(&kitchen, 2).await;
    hold.release().await;

    // Both statements succeeded; the commit did not. Whoever would have
    // been told "created" before the commit was told something untrue.
    for task in [innocent_task, poison_task] {
        let outcome = answer(task).await;
        assert!(
            matches!(outcome, Err(KitchenError::Interrupted(_))),
            "a write whose group did not commit is not acknowledged, got {outcome:?}"
        );
    }
    assert_eq!(ticket_count(&kitchen, tenant.id).await, 0);
    assert_eq!(
        kitchen
            .operation(tenant.id, Action::CreateTicket, &innocent)
            .await
            .expect("lookup"),
        None
    );
    // Nothing was acknowledged, so the retry is safe, and makes the ticket.
    created(
        kitchen
            .write::<CreateTicket>(tenant.id, &innocent, &request)
            .await
            .expect("the retry commits"),
    );
    assert_eq!(ticket_count(&kitchen, tenant.id).await, 1);
}

async fn a_held_key_past_the_wait_bound_answers_in_progress(db: TestDatabase) {
    let kitchen = db
        .kitchen_with(KitchenConfig {
            wait_bound: Duration::from_millis(200),
            ..KitchenConfig::default()
        })
        .await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let (held, free) = (fresh_key(), fresh_key());

    // On SQLite the holder holds the database's write lock, so the writer's
    // `BEGIN IMMEDIATE` waits out the bound; on PostgreSQL the held key's
    // claim does, and the other create commits.
    let holder = kitchen.hold_key_for_test(tenant.id, &held).await;
    let held_task = create(&kitchen, tenant.id, &held, draft("ops", "Held"));
    let free_task = create(&kitchen, tenant.id, &free, draft("ops", "Free"));
    let (held_answer, free_answer) = (answer(held_task).await, answer(free_task).await);
    match db.backend() {
        // The write lock is held: both writes wait it out, whichever the
        // writer takes first meeting the lock (the file is locked) and the
        // other, queued behind it past the bound, in progress, or in the
        // same group, locked too. Nothing is written either way.
        DatabaseKind::Sqlite => {
            for answer in [held_answer, free_answer] {
                let locked = answer.as_ref().err().and_then(KitchenError::storage_fault)
                    == Some((StorageFault::Locked, Written::Nothing));
                assert!(
                    locked || matches!(answer, Ok(Outcome::InProgress { .. })),
                    "the write lock is held: got {answer:?}"
                );
            }
        }
        DatabaseKind::Postgres => {
            assert_held(db.backend(), held_answer);
            created(free_answer.expect("no error"));
        }
    }
    holder.roll_back().await;

    created(
        kitchen
            .write::<CreateTicket>(tenant.id, &held, &draft("ops", "Held"))
            .await
            .expect("create once the holder is gone"),
    );
}

async fn close_lets_the_queued_writes_finish(db: TestDatabase) {
    let kitchen = db.kitchen_with(KitchenConfig::default()).await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;

    let hold = kitchen.hold_writer_for_test().await;
    let tasks: Vec<Answer> = (0..3)
        .map(|i| {
            create(
                &kitchen,
                tenant.id,
                &fresh_key(),
                draft("ops", &format!("T{i}")),
            )
        })
        .collect();
    until_queued(&kitchen, 3).await;
    let closing = {
        let kitchen = kitchen.clone();
        tokio::spawn(async move { kitchen.close().await })
    };
    hold.release().await;
    closing.await.expect("close ran");

    for task in tasks {
        created(
            answer(task)
                .await
                .expect("a queued write runs before close ends"),
        );
    }
    let late = kitchen
        .write::<CreateTicket>(tenant.id, &fresh_key(), &draft("ops", "Late"))
        .await;
    assert!(
        late.is_err(),
        "a write after close is refused, got {late:?}"
    );
    let reopened = db.kitchen_with(KitchenConfig::default()).await;
    assert_eq!(ticket_count(&reopened, tenant.id).await, 3);
}

kitchen::on_both_databases!(a_held_key_past_the_wait_bound_answers_in_progress);

/// A full disk (SQLite's real `SQLITE_FULL`, from a page cap on the
/// writer's connection) fails the write that needs the space, as a storage
/// fault with nothing written, and costs nothing else: the writes that
/// still fit commit, and once there is room again the same key makes the
/// write. SQLite answers a full disk in two ways, and each write path
/// meets one: a create (one batch of statements) loses only its statement,
/// and its savepoint undoes its claim; an edit (statement by statement)
/// loses the whole transaction, and the writer replaces its connection. It
/// used to keep the connection inside a transaction SQLite had already
/// rolled back, so every later write failed until a restart.
async fn a_full_disk_fails_the_write_and_the_next_one_commits(db: TestDatabase) {
    let kitchen = db.kitchen_with(KitchenConfig::default()).await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let before = created(
        kitchen
            .write::<CreateTicket>(tenant.id, &fresh_key(), &draft("ops", "Before"))
            .await
            .expect("create before the disk fills"),
    )
    .result;
    kitchen.fill_writer_disk_for_test().await;
    let big = TicketDraft {
        description: Some("x".repeat(10_000)),
        ..draft("ops", "Too big")
    };
    let big_edit = update(
        before.id,
        &format!(r#"{{"description": "{}"}}"#, "y".repeat(10_000)),
    );
    let (create_key, edit_key) = (fresh_key(), fresh_key());
    let full_create = kitchen
        .write::<CreateTicket>(tenant.id, &create_key, &big)
        .await;
    let full_edit = kitchen
        .write::<UpdateTicket>(tenant.id, &edit_key, &big_edit)
        .await;
    for (full, action, key) in [
        (full_create.map(drop), Action::CreateTicket, &create_key),
        (full_edit.map(drop), Action::UpdateTicket, &edit_key),
    ] {
        assert_eq!(
            full.as_ref().err().and_then(|e| e.storage_fault()),
            Some((StorageFault::CannotWrite, Written::Nothing)),
            "a full disk is a storage fault that wrote nothing ({action:?}): {full:?}"
        );
        assert_unused(&kitchen, tenant.id, action, key, "a full disk").await;
    }
    for title in ["After 1", "After 2"] {
        created(
            kitchen
                .write::<CreateTicket>(tenant.id, &fresh_key(), &draft("ops", title))
                .await
                .expect("the writer serves again"),
        );
    }
    kitchen.free_writer_disk_for_test().await;
    created(
        kitchen
            .write::<CreateTicket>(tenant.id, &create_key, &big)
            .await
            .expect("the refused create, retried with its key"),
    );
    created(
        kitchen
            .write::<UpdateTicket>(tenant.id, &edit_key, &big_edit)
            .await
            .expect("the refused edit, retried with its key"),
    );
    assert_eq!(ticket_count(&kitchen, tenant.id).await, 4);
}

/// Nothing is recorded under `key` for `action`: `why` left it unused.
async fn assert_unused(
    kitchen: &Kitchen,
    tenant: kitchen::TenantId,
    action: Action,
    key: &OperationKey,
    why: &str,
) {
    assert_eq!(
        kitchen
            .operation(tenant, action, key)
            .await
            .expect("lookup"),
        None,
        "{why} left its key unused ({action:?})"
    );
}

/// The group writer is SQLite's: on PostgreSQL a write is one transaction
/// (a create one statement), and there is no group to hold.
mod sqlite_writer {
    macro_rules! on_sqlite {
        ($($test:ident),+ $(,)?) => {$(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                super::$test(kitchen::testing::TestDatabase::sqlite()).await
            }
        )+};
    }

    on_sqlite!(
        many_creates_in_one_group_commit_one_ticket_each,
        the_same_key_many_times_in_one_group_makes_one_ticket,
        a_refusal_in_a_group_leaves_the_others_alone,
        a_failing_statement_fails_its_own_write_alone,
        no_write_is_answered_before_its_group_commits,
        close_lets_the_queued_writes_finish,
        a_full_disk_fails_the_write_and_the_next_one_commits,
    );
}
