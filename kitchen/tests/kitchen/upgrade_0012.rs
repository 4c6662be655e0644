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

use kitchen::testing::TestDatabase;
use kitchen::{GuardMode, Outcome, Refusal};

use crate::upgrade_0004::Raw;

/// The last migration the previous release shipped.
const PREVIOUS_RELEASE: i64 = 11;

async fn a_release_11_database_upgrades_to_the_content_index_in_key_order(db: TestDatabase) {
    let (old, tokens, raw) = crate::upgrade_0006::at_release(&db, PREVIOUS_RELEASE).await;
    let kitchen =
        crate::upgrade_0010::upgraded_with_guard(&db, &old, &raw, GuardMode::Confirm).await;

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

    let caller = crate::upgrade_0006::old_rows_read_back(&kitchen, &old, &tokens).await;

    let again = crate::upgrade_0010::the_same_content_under_two_keys(
        &kitchen,
        &caller,
        "After the index's rebuild",
        "r12",
    )
    .await;
    assert!(
        matches!(again, Outcome::Refused(Refusal::PossibleDuplicate { .. })),
        "{again:?}"
    );
    raw.close().await;
    kitchen.close().await;
}

kitchen::on_both_databases!(a_release_11_database_upgrades_to_the_content_index_in_key_order);
