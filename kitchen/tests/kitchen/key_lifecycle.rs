//! The lifecycle of a key, with a clock the test holds: replayable for the
//! replay window, then `expired` (a tombstone) until the tombstone horizon,
//! then free. Answers follow the clock whether or not the sweep has run;
//! the sweep only reclaims space, never touches an unsettled effect, and
//! two sweepers share the work without waiting for each other.

use kitchen::actions::{AddComment, CreateTicket, TransitionTicket, UpdateTicket};
use std::sync::Arc;
use std::time::Duration;

use kitchen::fake_provider::FakeProvider;
use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{
    Action, Clock, Expired, KeyPhase, Kitchen, KitchenConfig, OperationKey, Outcome,
    RemoteSettings, SweepReport, TicketBackend,
};
use time::OffsetDateTime;
use time::macros::datetime;

use crate::support::{
    Desk, conflict, created, draft, fresh_key, move_to, replayed, say, ticket_count, update,
};

const WINDOW: time::Duration = time::Duration::days(30);
const HORIZON: time::Duration = time::Duration::days(400);
/// Not a whole second, so the horizons' rounding up shows.
const START: OffsetDateTime = datetime!(2026-03-01 09:00:00.250 UTC);

fn config(clock: &Clock) -> KitchenConfig {
    KitchenConfig {
        clock: clock.clone(),
        replay_window: WINDOW,
        tombstone_horizon: HORIZON,
        sweep_batch: 7,
        // Many small batches: no rest between them here.
        sweep_pause: std::time::Duration::ZERO,
        ..KitchenConfig::default()
    }
}

async fn desk(db: &TestDatabase, clock: &Clock) -> Desk {
    Desk::on(db.kitchen_with(config(clock)).await, "acme").await
}

/// The expired answer; panics on anything else.
fn expired<T: std::fmt::Debug>(outcome: Outcome<T>) -> Expired<T> {
    match outcome {
        Outcome::Expired(expired) => expired,
        other => panic!("expected expired, got {other:?}"),
    }
}

async fn phase(
    kitchen: &Kitchen,
    desk: &Desk,
    action: Action,
    key: &OperationKey,
) -> Option<KeyPhase> {
    kitchen
        .operation_status(desk.tenant.id, action, key)
        .await
        .expect("status")
        .map(|status| status.phase)
}

async fn sweep(kitchen: &Kitchen) -> SweepReport {
    kitchen
        .sweeper()
        .sweep_due(&mut |_| {})
        .await
        .expect("sweep")
}

/// One key of `create_ticket` through every phase, the sweep run or not.
async fn a_create_key_replays_then_expires_then_is_forgotten(db: TestDatabase) {
    let clock = Clock::manual(START);
    let desk = desk(&db, &clock).await;
    let k = &desk.kitchen;
    let key = fresh_key();
    let request = draft("ops", "Printer on fire");
    let first = created(
        k.write::<CreateTicket>(desk.actor, &key, &request)
            .await
            .expect("create"),
    );
    let op = &first.operation;
    assert_eq!(
        op.replayable_until,
        datetime!(2026-03-31 09:00:01 UTC),
        "rounded up"
    );
    assert_eq!(
        op.retained_until,
        datetime!(2027-04-05 09:00:01 UTC),
        "rounded up"
    );
    assert_eq!(
        phase(k, &desk, Action::CreateTicket, &key).await,
        Some(KeyPhase::Replayable)
    );

    // The last moment of the window still replays, byte for byte.
    clock.set(op.replayable_until - time::Duration::MICROSECOND);
    let again = replayed(
        k.write::<CreateTicket>(desk.actor, &key, &request)
            .await
            .expect("retry"),
    );
    assert_eq!(again.snapshot, first.snapshot);

    // Someone changes the ticket; then the window closes.
    created(
        k.write::<UpdateTicket>(
            desk.actor,
            &fresh_key(),
            &update(first.result.id, r#"{"priority": "urgent"}"#),
        )
        .await
        .expect("update"),
    );
    clock.set(op.replayable_until);
    let late = expired(
        k.write::<CreateTicket>(desk.actor, &key, &request)
            .await
            .expect("late retry"),
    );
    assert_eq!(late.current.id, first.result.id, "the original ticket");
    assert_eq!(
        late.current,
        desk.current(first.result.id).await,
        "as it is now"
    );
    assert_eq!(late.current.version.get(), 2);
    assert_eq!(late.operation.created_at, op.created_at);
    assert_eq!(late.operation.replayable_until, op.replayable_until);
    let other = conflict(
        k.write::<CreateTicket>(desk.actor, &key, &draft("ops", "Another printer"))
            .await
            .expect("other request"),
    );
    assert_eq!(other.resource, Some(first.result.id));
    let status = k
        .operation_status(desk.tenant.id, Action::CreateTicket, &key)
        .await
        .expect("status")
        .expect("a spent key has a status");
    assert_eq!(status.phase, KeyPhase::Expired);
    assert_eq!(
        status.record.result, None,
        "not swept yet, but the first answer is no longer given out"
    );
    assert_eq!(
        ticket_count(k, desk.tenant.id).await,
        2,
        "the desk's own and this one"
    );

    // The sweep makes it a tombstone; the answers do not change.
    let report = sweep(k).await;
    assert!(report.tombstoned >= 1, "{report:?}");
    assert_eq!(report.deleted, 0);
    let record = k
        .operation(desk.tenant.id, Action::CreateTicket, &key)
        .await
        .expect("read")
        .expect("a tombstone");
    assert_eq!(record.result, None, "the frozen answer is dropped");
    assert_eq!(record.resource_id, Some(first.result.id.as_uuid()));
    assert_eq!(record.fingerprint, op.fingerprint);
    assert!(record.tombstoned_at.is_some());
    let swept = expired(
        k.write::<CreateTicket>(desk.actor, &key, &request)
            .await
            .expect("retry"),
    );
    assert_eq!(swept.current, late.current);
    conflict(
        k.write::<CreateTicket>(desk.actor, &key, &draft("ops", "Another printer"))
            .await
            .expect("other request"),
    );
    let status = k
        .operation_status(desk.tenant.id, Action::CreateTicket, &key)
        .await
        .expect("status")
        .expect("a tombstone has a status");
    assert_eq!(status.phase, KeyPhase::Expired);
    assert_eq!(status.record.resource_id, Some(first.result.id.as_uuid()));
    assert_eq!(
        ticket_count(k, desk.tenant.id).await,
        2,
        "nothing new was made"
    );

    // Just before the horizon the key is still spent.
    clock.set(op.retained_until - time::Duration::MICROSECOND);
    expired(
        k.write::<CreateTicket>(desk.actor, &key, &request)
            .await
            .expect("retry"),
    );
    assert_eq!(sweep(k).await.deleted, 0, "not yet");

    // Past the horizon: nothing recorded, and the key is free again.
    clock.set(op.retained_until);
    assert_eq!(phase(k, &desk, Action::CreateTicket, &key).await, None);
    let report = sweep(k).await;
    assert!(report.deleted >= 1, "{report:?}");
    assert!(desk.unused(Action::CreateTicket, &key).await, "deleted");
    let fresh = created(
        k.write::<CreateTicket>(desk.actor, &key, &request)
            .await
            .expect("reuse"),
    );
    assert_ne!(fresh.result.id, first.result.id, "a new effect");
    assert_eq!(fresh.operation.created_at, op.retained_until);
    assert_eq!(ticket_count(k, desk.tenant.id).await, 3);
}

/// Without any sweep, a key past its horizon is free: the write path
/// deletes the forgotten record and claims the key in its place.
async fn a_forgotten_key_is_free_even_before_the_sweep_runs(db: TestDatabase) {
    let clock = Clock::manual(START);
    let desk = desk(&db, &clock).await;
    let k = &desk.kitchen;
    let key = fresh_key();
    let first = created(
        k.write::<CreateTicket>(desk.actor, &key, &draft("ops", "Old"))
            .await
            .expect("create"),
    );
    // A fraction of a second past the horizon (which is a whole second):
    // exactly the case a text comparison of times could get wrong.
    clock.set(first.operation.retained_until + time::Duration::milliseconds(250));
    assert_eq!(phase(k, &desk, Action::CreateTicket, &key).await, None);
    assert!(
        !desk.unused(Action::CreateTicket, &key).await,
        "a read deletes nothing"
    );
    // Even another request: the key means nothing any more.
    let again = created(
        k.write::<CreateTicket>(desk.actor, &key, &draft("ops", "New"))
            .await
            .expect("reuse"),
    );
    assert_ne!(again.result.id, first.result.id);
    assert_eq!(again.operation.created_at, clock.now());
    replayed(
        k.write::<CreateTicket>(desk.actor, &key, &draft("ops", "New"))
            .await
            .expect("retry"),
    );
}

/// The other actions expire the same way, each answering its resource as
/// it is now: the ticket for an update or a move, the comment for a
/// comment.
async fn every_action_expires_to_its_current_resource(db: TestDatabase) {
    let clock = Clock::manual(START);
    let desk = desk(&db, &clock).await;
    let k = &desk.kitchen;
    let id = desk.ticket.id;
    let (edit, step, note) = (fresh_key(), fresh_key(), fresh_key());
    let edit_request = update(id, r#"{"title": "Disk full on db-1"}"#);
    let edited = created(
        k.write::<UpdateTicket>(desk.actor, &edit, &edit_request)
            .await
            .expect("update"),
    );
    let moved = created(
        k.write::<TransitionTicket>(desk.actor, &step, &(id.into(), move_to("in_progress")))
            .await
            .expect("move"),
    );
    let said = created(
        k.write::<AddComment>(desk.actor, &note, &(id.into(), say("On it")))
            .await
            .expect("comment"),
    );
    assert_eq!(said.operation.resource_id, Some(said.result.id.as_uuid()));
    assert_eq!(said.operation.ticket_id, Some(id));
    created(
        k.write::<UpdateTicket>(
            desk.actor,
            &fresh_key(),
            &update(id, r#"{"assignee": "sam"}"#),
        )
        .await
        .expect("a later change"),
    );
    clock.advance(WINDOW + time::Duration::SECOND);
    let now = desk.current(id).await;
    assert_ne!(now, edited.result, "the ticket moved on since the edit");

    let e = expired(
        k.write::<UpdateTicket>(desk.actor, &edit, &edit_request)
            .await
            .expect("update"),
    );
    assert_eq!(e.current, now);
    let t = expired(
        k.write::<TransitionTicket>(desk.actor, &step, &(id.into(), move_to("in_progress")))
            .await
            .expect("move"),
    );
    assert_eq!(t.current, now);
    assert_ne!(t.current, moved.result);
    let c = expired(
        k.write::<AddComment>(desk.actor, &note, &(id.into(), say("On it")))
            .await
            .expect("comment"),
    );
    assert_eq!(c.current, said.result);
    // An expired answer writes nothing: no new version, no history entry,
    // no second comment.
    assert_eq!(desk.current(id).await, now);
    assert_eq!(
        desk.history(id).await.len(),
        5,
        "create, edit, move, comment, assign"
    );
    assert_eq!(desk.comments(id).await.len(), 1);
    // Other requests under the same keys still conflict.
    conflict(
        k.write::<UpdateTicket>(desk.actor, &edit, &update(id, r#"{"title": "Other"}"#))
            .await
            .expect("update"),
    );
    conflict(
        k.write::<AddComment>(desk.actor, &note, &(id.into(), say("Other")))
            .await
            .expect("comment"),
    );
    // After the sweep, still the same.
    sweep(k).await;
    let c = expired(
        k.write::<AddComment>(desk.actor, &note, &(id.into(), say("On it")))
            .await
            .expect("comment"),
    );
    assert_eq!(c.current, said.result);
    assert_eq!(
        phase(k, &desk, Action::AddComment, &note).await,
        Some(KeyPhase::Expired)
    );
}

/// The sweep never touches an effect whose outcome is still open, however
/// old: only reconciliation may settle it.
async fn the_sweep_never_touches_an_unsettled_effect(db: TestDatabase) {
    let clock = Clock::manual(START);
    let config = KitchenConfig {
        backend: TicketBackend::Remote {
            provider: Arc::new(FakeProvider::ignoring_keys()),
            settings: RemoteSettings::default(),
        },
        ..config(&clock)
    };
    let k = &db.kitchen_with(config).await;
    let (tenant, _) = tenant_with_token(k, "acme").await;
    let key = fresh_key();
    k.write_ahead_only_for_test(tenant.id, &key, &draft("ops", "In flight"))
        .await;
    clock.advance(HORIZON + WINDOW);
    assert_eq!(sweep(k).await, SweepReport::default());
    let record = k
        .operation(tenant.id, Action::CreateTicket, &key)
        .await
        .expect("read")
        .expect("still there");
    assert_eq!(record.state, kitchen::OperationState::InProgress);
    assert_eq!(record.phase(clock.now()), KeyPhase::Replayable);
}

/// Two sweepers at once (two instances on one database) share the work:
/// every due record is swept exactly once, and neither waits for a row the
/// other (or a writer) holds.
async fn two_sweepers_share_the_work(db: TestDatabase) {
    let clock = Clock::manual(START);
    let desk = desk(&db, &clock).await;
    let k = &desk.kitchen;
    for i in 0..60 {
        created(
            k.write::<CreateTicket>(desk.actor, &fresh_key(), &draft("ops", &format!("T{i}")))
                .await
                .expect("create"),
        );
    }
    clock.advance(WINDOW + time::Duration::SECOND);
    let other = db.kitchen_with(config(&clock)).await;
    let (a, b) = tokio::join!(sweep(k), sweep(&other));
    // 61: the desk's own ticket too.
    assert_eq!(a.tombstoned + b.tombstoned, 61, "{a:?} {b:?}");
    assert_eq!(sweep(k).await, SweepReport::default(), "nothing left");

    clock.advance(HORIZON);
    let (a, b) = tokio::join!(sweep(k), sweep(&other));
    assert_eq!(a.deleted + b.deleted, 61, "{a:?} {b:?}");
}

/// On PostgreSQL a sweep skips a row another transaction holds instead of
/// waiting for it: the holder here never lets go until the sweep is done.
///
/// PostgreSQL only: SQLite has one writer at a time, so there a batch waits
/// for the lock by design (bounded by the wait bound).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_sweep_does_not_wait_for_a_locked_record() {
    let db = TestDatabase::postgres().await;
    let clock = Clock::manual(START);
    let desk = desk(&db, &clock).await;
    let k = &desk.kitchen;
    let key = fresh_key();
    created(
        k.write::<CreateTicket>(desk.actor, &key, &draft("ops", "Held"))
            .await
            .expect("create"),
    );
    clock.advance(WINDOW + time::Duration::SECOND);
    let pool = sqlx::PgPool::connect(db.url()).await.expect("connect");
    let mut holder = pool.begin().await.expect("begin");
    sqlx::query("SELECT 1 FROM operations WHERE operation_key = $1 FOR UPDATE")
        .bind(key.as_str())
        .execute(&mut *holder)
        .await
        .expect("lock the record");
    let report = tokio::time::timeout(Duration::from_secs(10), sweep(k))
        .await
        .expect("the sweep does not wait for the held row");
    assert_eq!(report.tombstoned, 1, "the desk's ticket, not the held one");
    holder.rollback().await.expect("release");
    assert_eq!(sweep(k).await.tombstoned, 1, "the held one, once free");
}

kitchen::on_both_databases!(
    a_create_key_replays_then_expires_then_is_forgotten,
    a_forgotten_key_is_free_even_before_the_sweep_runs,
    every_action_expires_to_its_current_resource,
    the_sweep_never_touches_an_unsettled_effect,
    two_sweepers_share_the_work,
);
