//! Upgrading from the previous release (migrations 0001 to 0010) to this
//! one: `Kitchen::connect` applies 0011, which stores a create's
//! description once (kitchen/src/store/shared_text.rs) and cuts the
//! existing creates' records and history entries the same way, in place.
//!
//! The previous release's database is the one `upgrade_0010` starts from.
//! After the upgrade the create of ticket A (whose description never
//! changed, with a line break JSON escapes) is stored around its ticket's
//! description, and every old row still reads back byte for byte; after
//! the description changes, the old frozen answer is still the ticket as
//! it was made.

use kitchen::actions::UpdateTicket;
use kitchen::testing::TestDatabase;
use kitchen::{Clock, Kitchen, KitchenConfig, OperationKey, TicketId};
use std::str::FromStr;

use crate::support::{created, update};
use crate::upgrade_0004::{KEY_CREATE_A, Raw, effects_are_untouched, on_raw, records_read_back};

/// The last migration the previous release shipped.
const PREVIOUS_RELEASE: i64 = 10;

async fn a_release_10_database_upgrades_to_text_stored_once(db: TestDatabase) {
    let (old, tokens, raw) = crate::upgrade_0006::at_release(&db, PREVIOUS_RELEASE).await;
    let a = old
        .record(KEY_CREATE_A)
        .ticket_id
        .expect("A's create made A");
    let cut = async || -> (Option<String>, Option<String>, String) {
        on_raw!(&raw, pool => {
            let (head, tail): (String, Option<String>) = sqlx::query_as(
                "SELECT result_snapshot, result_snapshot_tail FROM operations \
                 WHERE action = 'create_ticket' AND operation_key = $1",
            )
            .bind(KEY_CREATE_A)
            .fetch_one(pool)
            .await
            .expect("A's record");
            let changes_tail: Option<String> = sqlx::query_scalar(
                "SELECT changes_tail FROM ticket_history \
                 WHERE ticket_id = $1 AND action = 'create_ticket'",
            )
            .bind(a)
            .fetch_one(pool)
            .await
            .expect("A's first history entry");
            (tail, changes_tail, head)
        })
    };

    let kitchen = Kitchen::connect(
        db.url(),
        KitchenConfig {
            clock: Clock::manual(old.now),
            ..KitchenConfig::default()
        },
    )
    .await
    .expect("connect applies the pending migration");
    assert_eq!(raw.applied().await, Raw::every_migration(&db).await);
    effects_are_untouched(&raw, &old).await;
    let (tail, changes_tail, head) = cut().await;
    assert!(
        tail.is_some() && changes_tail.is_some(),
        "A's create is stored around its description"
    );
    assert!(!head.contains("line two"), "{head}");

    let caller = crate::upgrade_0006::old_rows_read_back(&kitchen, &old, &tokens).await;
    let tenant = caller.tenant.id;

    // A's description changes: its old create's answer is still A as made.
    let id = TicketId::from_str(&a.to_string()).expect("a UUID is a ticket id");
    let key = OperationKey::parse("r11-new-description").expect("a key");
    created(
        kitchen
            .write::<UpdateTicket>(&caller, &key, &update(id, r#"{"description": "Fixed"}"#))
            .await
            .expect("update"),
    );
    let (tail, changes_tail, head) = cut().await;
    assert_eq!((tail, changes_tail), (None, None), "whole again");
    assert!(head.contains("line two"), "{head}");
    records_read_back(&kitchen, &old, tenant, None).await;
    raw.close().await;
    kitchen.close().await;
}

kitchen::on_both_databases!(a_release_10_database_upgrades_to_text_stored_once);
