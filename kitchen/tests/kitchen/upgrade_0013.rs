//! Upgrading from the previous release (migrations 0001 to 0012) to this
//! one: `Kitchen::connect` applies 0013, which on PostgreSQL adds the
//! likely-duplicate guard's read as a function (one round trip per create
//! instead of a transaction's three) and on SQLite changes nothing.
//!
//! The previous release's database is the one `upgrade_0011` starts from,
//! brought to release 12. After the upgrade every old row reads back as it
//! was, every old effect's ledger is untouched, and the guard's warning
//! (the read after the write, where the function serves) names a write
//! made after the upgrade. (`upgrade_0012` covers the read inside a
//! refusing write, after every migration.)

use kitchen::testing::TestDatabase;
use kitchen::{GuardMode, OperationKey, Outcome};

use crate::upgrade_0004::Raw;

/// The last migration the previous release shipped.
const PREVIOUS_RELEASE: i64 = 12;

async fn a_release_12_database_upgrades_to_the_guards_read_in_one_round_trip(db: TestDatabase) {
    let (old, tokens, raw) = crate::upgrade_0006::at_release(&db, PREVIOUS_RELEASE).await;
    let kitchen = crate::upgrade_0010::upgraded_with_guard(&db, &old, &raw, GuardMode::Warn).await;
    if let Raw::Postgres(pool) = &raw {
        let functions: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_proc WHERE proname = 'guard_earlier_write'",
        )
        .fetch_one(pool)
        .await
        .expect("the catalog");
        assert_eq!(functions, 1);
    }

    let caller = crate::upgrade_0006::old_rows_read_back(&kitchen, &old, &tokens).await;

    let again = crate::upgrade_0010::the_same_content_under_two_keys(
        &kitchen,
        &caller,
        "After the guard's read became one statement",
        "r13",
    )
    .await;
    let Outcome::Created(receipt) = again else {
        panic!("a warning is not a refusal: {again:?}");
    };
    let earlier = receipt
        .possible_duplicate_of
        .expect("the guard names the earlier write");
    assert_eq!(
        earlier.key,
        OperationKey::parse("r13-create").expect("a key")
    );
    raw.close().await;
    kitchen.close().await;
}

kitchen::on_both_databases!(a_release_12_database_upgrades_to_the_guards_read_in_one_round_trip);
