//! Upgrading from the previous release (migrations 0001 to 0011) to this
//! one: `Kitchen::connect` applies 0012, which rebuilds the guard's content
//! index with the operation key as its last column (the read's order, so
//! that on PostgreSQL no smaller index can serve it without a sort), and
//! touches no row.
//!
//! The previous release's database is the one `upgrade_0011` starts from.
//! After the upgrade every old row reads back as it was, every old effect's
//! ledger is untouched, the index has its new columns, and the guard finds
//! a write made after the upgrade.

use kitchen::actions::CreateTicket;
use kitchen::testing::TestDatabase;
use kitchen::{
    Clock, DuplicateGuard, GuardMode, Kitchen, KitchenConfig, OperationKey, Outcome, Refusal,
    TicketDraft,
};

use crate::upgrade_0004::{Raw, effects_are_untouched, everything_reads_back, records_read_back};

/// The last migration the previous release shipped.
const PREVIOUS_RELEASE: i64 = 11;

async fn a_release_11_database_upgrades_to_the_content_index_in_key_order(db: TestDatabase) {
    let (old, tokens, raw) = crate::upgrade_0006::at_release(&db, PREVIOUS_RELEASE).await;
    let kitchen = Kitchen::connect(
        db.url(),
        KitchenConfig {
            clock: Clock::manual(old.now),
            duplicate_guard: DuplicateGuard {
                mode: GuardMode::Confirm,
                ..DuplicateGuard::default()
            },
            ..KitchenConfig::default()
        },
    )
    .await
    .expect("connect applies the pending migration");
    assert_eq!(raw.applied().await, Raw::every_migration(&db).await);
    effects_are_untouched(&raw, &old).await;

    let definition: String = match &raw {
        Raw::Sqlite(pool) => sqlx::query_scalar(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'operations_content_idx'",
        )
        .fetch_one(pool)
        .await
        .expect("the index"),
        Raw::Postgres(pool) => sqlx::query_scalar(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'operations_content_idx'",
        )
        .fetch_one(pool)
        .await
        .expect("the index"),
    };
    assert!(
        definition.contains("created_at DESC, operation_key DESC)"),
        "{definition}"
    );

    let caller = kitchen
        .authenticate(&tokens.live.1)
        .await
        .expect("auth")
        .expect("an old live token");
    let tenant = caller.tenant.id;
    everything_reads_back(&kitchen, &old, tenant, 1).await;
    records_read_back(&kitchen, &old, tenant, None).await;

    let request = TicketDraft {
        project_id: Some("ops".into()),
        title: Some("After the index's rebuild".into()),
        ..TicketDraft::default()
    };
    let key = |k: &str| OperationKey::parse(k).expect("a key");
    let made = kitchen
        .write::<CreateTicket>(&caller, &key("r12-create"), &request)
        .await
        .expect("create");
    assert!(matches!(made, Outcome::Created(_)), "{made:?}");
    let again = kitchen
        .write::<CreateTicket>(&caller, &key("r12-create-again"), &request)
        .await
        .expect("create again");
    assert!(
        matches!(again, Outcome::Refused(Refusal::PossibleDuplicate { .. })),
        "{again:?}"
    );
    raw.close().await;
    kitchen.close().await;
}

kitchen::on_both_databases!(a_release_11_database_upgrades_to_the_content_index_in_key_order);
