//! The rules of a single create, one attempt after another.

use kitchen::actions::CreateTicket;
use std::time::Duration;

use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{Action, KitchenConfig, OperationState, Outcome, TicketDraft};

use crate::support::{assert_held, created, draft, fresh_key, replayed, ticket_count};

async fn same_key_and_payload_twice_replays_the_original(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let key = fresh_key();
    let request = draft("ops", "Disk full on db-1");

    let first = created(
        kitchen
            .write::<CreateTicket>(tenant.id, &key, &request)
            .await
            .expect("create"),
    );
    let second = replayed(
        kitchen
            .write::<CreateTicket>(tenant.id, &key, &request)
            .await
            .expect("retry"),
    );

    assert_eq!(first.result.id, second.result.id);
    assert_eq!(
        first.snapshot.as_str(),
        second.snapshot.as_str(),
        "byte-identical snapshot"
    );
    assert_eq!(first.operation, second.operation);
    assert_eq!(ticket_count(&kitchen, tenant.id).await, 1);
}

async fn same_meaning_in_another_shape_replays(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let key = fresh_key();
    let first = created(
        kitchen
            .write::<CreateTicket>(tenant.id, &key, &draft("ops", "Disk full"))
            .await
            .expect("create"),
    );
    // Defaults spelled out: the same command once normalized.
    let explicit = TicketDraft {
        priority: Some("normal".into()),
        description: Some(String::new()),
        ..draft("ops", "Disk full")
    };
    let again = replayed(
        kitchen
            .write::<CreateTicket>(tenant.id, &key, &explicit)
            .await
            .expect("retry"),
    );
    assert_eq!(first.result.id, again.result.id);
    assert_eq!(ticket_count(&kitchen, tenant.id).await, 1);
}

async fn same_key_with_a_changed_request_conflicts(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let key = fresh_key();
    let first = created(
        kitchen
            .write::<CreateTicket>(tenant.id, &key, &draft("ops", "Disk full"))
            .await
            .expect("create"),
    );
    let changed = TicketDraft {
        priority: Some("urgent".into()),
        ..draft("ops", "Disk full")
    };
    match kitchen
        .write::<CreateTicket>(tenant.id, &key, &changed)
        .await
        .expect("retry")
    {
        Outcome::Conflict { original } => {
            assert_eq!(original.key, key);
            assert_eq!(original.action, Action::CreateTicket);
            assert_eq!(original.created_at, first.operation.created_at);
        }
        other => panic!("expected conflict, got {other:?}"),
    }
    assert_eq!(ticket_count(&kitchen, tenant.id).await, 1);
    let record = kitchen
        .operation(tenant.id, Action::CreateTicket, &key)
        .await
        .expect("lookup")
        .expect("recorded");
    assert_eq!(record, first.operation, "the conflict changed nothing");
}

async fn same_key_under_another_tenant_is_a_separate_ticket(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let (acme, _) = tenant_with_token(&kitchen, "acme").await;
    let (globex, _) = tenant_with_token(&kitchen, "globex").await;
    let key = fresh_key();
    let request = draft("ops", "Disk full");

    let a = created(
        kitchen
            .write::<CreateTicket>(acme.id, &key, &request)
            .await
            .expect("acme"),
    );
    let g = created(
        kitchen
            .write::<CreateTicket>(globex.id, &key, &request)
            .await
            .expect("globex"),
    );

    assert_ne!(a.result.id, g.result.id);
    assert_eq!(ticket_count(&kitchen, acme.id).await, 1);
    assert_eq!(ticket_count(&kitchen, globex.id).await, 1);
    assert_eq!(
        kitchen.ticket(globex.id, a.result.id).await.expect("read"),
        None
    );
    let seen_by_globex = kitchen
        .operation(globex.id, Action::CreateTicket, &key)
        .await
        .expect("lookup")
        .expect("globex's own record");
    assert_eq!(seen_by_globex.ticket_id, Some(g.result.id));
}

async fn invalid_input_writes_nothing_and_keeps_the_key_free(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let key = fresh_key();
    let bad = TicketDraft {
        title: Some(" ".into()),
        ..draft("Ops Team", "x")
    };
    match kitchen
        .write::<CreateTicket>(tenant.id, &key, &bad)
        .await
        .expect("create")
    {
        Outcome::Invalid { violations } => {
            let fields: Vec<_> = violations.iter().map(|v| v.field.as_str()).collect();
            assert_eq!(fields, ["project_id", "title"]);
        }
        other => panic!("expected invalid, got {other:?}"),
    }
    assert_eq!(ticket_count(&kitchen, tenant.id).await, 0);
    let record = kitchen
        .operation(tenant.id, Action::CreateTicket, &key)
        .await
        .expect("lookup");
    assert_eq!(record, None);

    created(
        kitchen
            .write::<CreateTicket>(tenant.id, &key, &draft("ops-team", "Corrected"))
            .await
            .expect("create"),
    );
    assert_eq!(ticket_count(&kitchen, tenant.id).await, 1);
}

async fn the_operation_record_tells_what_happened(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let key = fresh_key();
    assert_eq!(
        kitchen
            .operation(tenant.id, Action::CreateTicket, &key)
            .await
            .expect("lookup"),
        None,
        "nothing recorded before the first attempt"
    );
    let receipt = created(
        kitchen
            .write::<CreateTicket>(tenant.id, &key, &draft("ops", "Disk full"))
            .await
            .expect("create"),
    );
    let record = kitchen
        .operation(tenant.id, Action::CreateTicket, &key)
        .await
        .expect("lookup")
        .expect("recorded");
    assert_eq!(record, receipt.operation, "stored exactly as answered");
    assert_eq!(record.state, OperationState::Succeeded);
    assert_eq!(record.ticket_id, Some(receipt.result.id));
    // Each horizon is first use plus its setting, rounded up to a whole
    // second.
    let window = record.replayable_until - record.created_at;
    assert!(
        window >= kitchen::DEFAULT_REPLAY_WINDOW
            && window < kitchen::DEFAULT_REPLAY_WINDOW + time::Duration::SECOND,
        "{window}"
    );
    let horizon = record.retained_until - record.created_at;
    assert!(
        horizon >= kitchen::DEFAULT_TOMBSTONE_HORIZON
            && horizon < kitchen::DEFAULT_TOMBSTONE_HORIZON + time::Duration::SECOND,
        "{horizon}"
    );
    assert_eq!(record.resource_id, Some(receipt.result.id.as_uuid()));
    assert_eq!(record.tombstoned_at, None);
    let stored = kitchen
        .ticket(tenant.id, receipt.result.id)
        .await
        .expect("read")
        .expect("the ticket exists");
    assert_eq!(
        stored, receipt.result,
        "the snapshot and the ticket row agree"
    );
}

pub(crate) async fn a_holder_past_the_wait_bound_yields_in_progress(db: TestDatabase) {
    let kitchen = db
        .kitchen_with(KitchenConfig {
            wait_bound: Duration::from_millis(200),
            ..KitchenConfig::default()
        })
        .await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let key = fresh_key();
    let request = draft("ops", "Disk full");

    let holder = kitchen.hold_key_for_test(tenant.id, &key).await;
    assert_held(
        db.backend(),
        kitchen
            .write::<CreateTicket>(tenant.id, &key, &request)
            .await,
    );
    holder.roll_back().await;

    // The holder rolled back: it left no record, and the key is free again.
    assert_eq!(
        kitchen
            .operation(tenant.id, Action::CreateTicket, &key)
            .await
            .expect("lookup"),
        None
    );
    assert_eq!(ticket_count(&kitchen, tenant.id).await, 0);
    created(
        kitchen
            .write::<CreateTicket>(tenant.id, &key, &request)
            .await
            .expect("create"),
    );
    assert_eq!(ticket_count(&kitchen, tenant.id).await, 1);
}

kitchen::on_both_databases!(
    same_key_and_payload_twice_replays_the_original,
    same_meaning_in_another_shape_replays,
    same_key_with_a_changed_request_conflicts,
    same_key_under_another_tenant_is_a_separate_ticket,
    invalid_input_writes_nothing_and_keeps_the_key_free,
    the_operation_record_tells_what_happened,
    a_holder_past_the_wait_bound_yields_in_progress,
);
