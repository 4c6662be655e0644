//! Upgrading from the previous release (migrations 0001 to 0008) to this
//! one: `Kitchen::connect` applies 0009, which adds the index operation
//! lists are served by and the table of settlements by hand, and touches
//! no existing row.
//!
//! The previous release's database is the one `upgrade_0007` starts from,
//! brought to release 8 with sqlx's own migrator. After the upgrade every
//! old row reads back as it was, every old effect's ledger is untouched,
//! the old records are listed (the unknown remote create among the
//! `unknown` ones, with an empty audit trail), and a write works.

use kitchen::actions::CreateTicket;
use kitchen::testing::TestDatabase;
use kitchen::{
    Action, Clock, Kitchen, KitchenConfig, ListedState, OperationFilter, OperationKey, Outcome,
    PageSize, TicketDraft,
};
use time::Duration;
use uuid::Uuid;

use crate::upgrade_0004::{KEY_UNKNOWN, PreviousRelease, Raw, effects_are_untouched};
use crate::upgrade_0005::RemoteTicket;

/// The last migration the previous release shipped.
const PREVIOUS_RELEASE: i64 = 8;

async fn a_release_8_database_upgrades_to_operator_settlements(db: TestDatabase) {
    let old = PreviousRelease::new();
    let remote = RemoteTicket {
        id: Uuid::now_v7(),
        created_at: old.now - Duration::days(3),
    };
    let tokens = crate::upgrade_0006::fill(&db, &old, &remote).await;
    let raw = Raw::open(&db).await;
    raw.migrate_to(&db, PREVIOUS_RELEASE).await;
    assert_eq!(
        raw.applied().await,
        [1, 2, 3, 4, 5, 6, 7, 8],
        "what release 8 applied"
    );

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

    let caller = crate::upgrade_0006::old_rows_read_back(&kitchen, &old, &tokens).await;
    let tenant = caller.tenant.id;

    let unknown = kitchen
        .operations(
            tenant,
            &OperationFilter {
                state: Some(ListedState::Unknown),
                ..OperationFilter::default()
            },
            PageSize::DEFAULT,
            None,
        )
        .await
        .expect("list");
    let keys: Vec<_> = unknown
        .operations
        .iter()
        .map(|o| o.record.key.as_str())
        .collect();
    assert_eq!(keys, [KEY_UNKNOWN], "the old unknown effect is listed");
    let recorded = kitchen
        .operation_as_recorded(tenant, Action::CreateTicket, &old.record(KEY_UNKNOWN).key())
        .await
        .expect("read")
        .expect("kept");
    let ledger = recorded.effect.expect("its ledger");
    assert!(ledger.settled_by_hand.is_empty());
    assert!(!ledger.attempts.is_empty(), "its attempts are kept");

    let made = kitchen
        .write::<CreateTicket>(
            &caller,
            &OperationKey::parse("r9-create-after-upgrade").expect("a key"),
            &TicketDraft {
                project_id: Some("ops".into()),
                title: Some("After the upgrade".into()),
                ..TicketDraft::default()
            },
        )
        .await
        .expect("create");
    assert!(matches!(made, Outcome::Created(_)), "{made:?}");
    raw.close().await;
    kitchen.close().await;
}

kitchen::on_both_databases!(a_release_8_database_upgrades_to_operator_settlements);
