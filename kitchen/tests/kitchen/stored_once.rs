//! A create's description is stored once (kitchen/src/store/shared_text.rs):
//! the ticket holds it, and the create's record and first history entry are
//! stored around it. What a caller sees never changes: the frozen answer
//! reads back byte for byte and the history says what the ticket was made
//! with, whatever happens to the description afterwards.

use kitchen::actions::{CreateTicket, TransitionTicket, UpdateTicket};
use kitchen::testing::TestDatabase;
use kitchen::{
    Action, Clock, Kitchen, KitchenConfig, OperationKey, Receipt, Ticket, TicketDraft, TicketId,
    TransitionDraft,
};
use time::OffsetDateTime;

use crate::support::{Desk, created, fresh_key, replayed, update};
use crate::upgrade_0004::{Raw, on_raw};

/// Every character JSON escapes, and some it does not.
const DESCRIPTION: &str = "Since 02:00 the disk is \"full\".\nPath: C:\\logs\t(tab)\r\n\
     \u{1} \u{1f} \u{7f} é \u{2028} 🎫 </script>";

/// A piece of [`DESCRIPTION`] as it appears inside any JSON text.
const FRAGMENT: &str = "Since 02:00 the disk is";

fn made_with(description: &str) -> TicketDraft {
    TicketDraft {
        project_id: Some("ops".into()),
        title: Some("Disk full".into()),
        description: Some(description.into()),
        priority: None,
    }
}

/// A text as stored: its head, and its tail when cut.
type Stored = (String, Option<String>);

/// The create's record, as stored.
async fn record_stored(raw: &Raw, key: &OperationKey) -> Stored {
    on_raw!(raw, pool => sqlx::query_as(
        "SELECT result_snapshot, result_snapshot_tail FROM operations \
         WHERE action = 'create_ticket' AND operation_key = $1",
    )
    .bind(key.as_str())
    .fetch_one(pool)
    .await
    .expect("the record"))
}

/// The ticket's first history entry, as stored.
async fn history_stored(raw: &Raw, ticket: TicketId) -> Stored {
    on_raw!(raw, pool => sqlx::query_as(
        "SELECT changes, changes_tail FROM ticket_history \
         WHERE ticket_id = $1 AND action = 'create_ticket'",
    )
    .bind(ticket.as_uuid())
    .fetch_one(pool)
    .await
    .expect("the history entry"))
}

/// A create of a ticket with [`DESCRIPTION`] under a fresh key.
async fn create(desk: &Desk) -> (OperationKey, Receipt<Ticket>) {
    let key = fresh_key();
    let made = created(
        desk.kitchen
            .write::<CreateTicket>(desk.actor, &key, &made_with(DESCRIPTION))
            .await
            .expect("create"),
    );
    (key, made)
}

/// The create's record and its ticket's first history entry, as stored.
async fn stored(raw: &Raw, key: &OperationKey, ticket: TicketId) -> (Stored, Stored) {
    (
        record_stored(raw, key).await,
        history_stored(raw, ticket).await,
    )
}

/// As [`stored`], for a record that may be a tombstone (no answer at all).
async fn stored_tombstone(
    raw: &Raw,
    key: &OperationKey,
    ticket: TicketId,
) -> ((Option<String>, Option<String>), Stored) {
    let record = on_raw!(raw, pool => sqlx::query_as(
        "SELECT result_snapshot, result_snapshot_tail FROM operations \
         WHERE action = 'create_ticket' AND operation_key = $1",
    )
    .bind(key.as_str())
    .fetch_one(pool)
    .await
    .expect("the record"));
    (record, history_stored(raw, ticket).await)
}

/// The create's frozen answer as `kitchen` reads it from the database.
async fn frozen_answer(kitchen: &Kitchen, desk: &Desk, key: &OperationKey) -> Option<String> {
    kitchen
        .operation(desk.tenant.id, Action::CreateTicket, key)
        .await
        .expect("lookup")
        .expect("recorded")
        .result
        .map(|s| s.as_str().to_owned())
}

async fn a_create_stores_its_description_once_and_answers_as_before(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let raw = Raw::open(&db).await;
    let (key, first) = create(&desk).await;
    let id = first.result.id;
    assert!(first.snapshot.as_str().contains(FRAGMENT));

    let ((head, tail), (changes, changes_tail)) = stored(&raw, &key, id).await;
    for (what, text) in [("record", &head), ("history", &changes)] {
        assert!(
            !text.contains(FRAGMENT),
            "the {what} holds the text: {text}"
        );
    }
    let (tail, changes_tail) = (tail.expect("cut"), changes_tail.expect("cut"));
    assert!(!tail.contains(FRAGMENT) && !changes_tail.contains(FRAGMENT));

    // Read back from the database (another kitchen: nothing in memory).
    let fresh = db.kitchen().await;
    assert_eq!(
        frozen_answer(&fresh, &desk, &key).await.as_deref(),
        Some(first.snapshot.as_str()),
        "the frozen answer, byte for byte"
    );
    let again = replayed(
        fresh
            .write::<CreateTicket>(desk.actor, &key, &made_with(DESCRIPTION))
            .await
            .expect("retry"),
    );
    assert_eq!(again.snapshot.as_str(), first.snapshot.as_str());
    let made = &desk.history(id).await[0];
    assert_eq!(
        made.changes.fields()["description"].to,
        serde_json::json!(DESCRIPTION),
        "the history says what the ticket was made with"
    );

    // A change that leaves the description alone leaves it shared.
    created(
        desk.kitchen
            .write::<TransitionTicket>(
                desk.actor,
                &fresh_key(),
                &(
                    id.into(),
                    TransitionDraft {
                        to: Some("in_progress".into()),
                        reason: None,
                    },
                ),
            )
            .await
            .expect("move"),
    );
    let ((_, tail), (_, changes_tail)) = stored(&raw, &key, id).await;
    assert!(tail.is_some() && changes_tail.is_some(), "still shared");
    fresh.close().await;
    raw.close().await;
    desk.kitchen.close().await;
}

async fn a_changed_description_gives_the_create_its_own_copy_first(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let raw = Raw::open(&db).await;
    let (key, first) = create(&desk).await;
    let id = first.result.id;
    created(
        desk.kitchen
            .write::<UpdateTicket>(
                desk.actor,
                &fresh_key(),
                &update(id, r#"{"description": "Replaced"}"#),
            )
            .await
            .expect("update"),
    );
    let ((head, tail), (changes, changes_tail)) = stored(&raw, &key, id).await;
    assert_eq!((tail, changes_tail), (None, None), "whole again");
    assert!(head.contains(FRAGMENT) && changes.contains(FRAGMENT));

    let fresh = db.kitchen().await;
    assert_eq!(
        frozen_answer(&fresh, &desk, &key).await.as_deref(),
        Some(first.snapshot.as_str()),
        "the frozen answer is the ticket as it was made"
    );
    let entries = desk.history(id).await;
    assert_eq!(
        entries[0].changes.fields()["description"].to,
        serde_json::json!(DESCRIPTION)
    );
    assert_eq!(
        entries[1].changes.fields()["description"].from,
        serde_json::json!(DESCRIPTION)
    );
    assert_eq!(
        desk.current(id)
            .await
            .description
            .as_ref()
            .map(|d| d.as_str()),
        Some("Replaced")
    );
    fresh.close().await;
    raw.close().await;
    desk.kitchen.close().await;
}

async fn a_tombstone_keeps_no_part_of_the_answer(db: TestDatabase) {
    let now = OffsetDateTime::now_utc();
    let clock = Clock::manual(now);
    let kitchen = db
        .kitchen_with(KitchenConfig {
            clock: clock.clone(),
            replay_window: time::Duration::days(1),
            ..KitchenConfig::default()
        })
        .await;
    let desk = Desk::on(kitchen, "acme").await;
    let raw = Raw::open(&db).await;
    let (key, first) = create(&desk).await;
    let id = first.result.id;
    clock.advance(time::Duration::days(2));
    desk.kitchen
        .sweeper()
        .sweep_due(&mut |_| {})
        .await
        .expect("sweep");
    let ((head, tail), (_, changes_tail)) = stored_tombstone(&raw, &key, id).await;
    assert_eq!((head, tail), (None, None), "the tombstone keeps no answer");
    // The history keeps sharing the ticket's text: it is never swept.
    assert!(changes_tail.is_some());
    raw.close().await;
    desk.kitchen.close().await;
}

kitchen::on_both_databases!(
    a_create_stores_its_description_once_and_answers_as_before,
    a_changed_description_gives_the_create_its_own_copy_first,
    a_tombstone_keeps_no_part_of_the_answer,
);
