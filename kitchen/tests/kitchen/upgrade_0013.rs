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

use kitchen::actions::CreateTicket;
use kitchen::testing::TestDatabase;
use kitchen::{
    Clock, DuplicateGuard, GuardMode, Kitchen, KitchenConfig, OperationKey, Outcome, TicketDraft,
};

use crate::upgrade_0004::{Raw, effects_are_untouched, everything_reads_back, records_read_back};

/// The last migration the previous release shipped.
const PREVIOUS_RELEASE: i64 = 12;

async fn a_release_12_database_upgrades_to_the_guards_read_in_one_round_trip(db: TestDatabase) {
    let (old, tokens, raw) = crate::upgrade_0006::at_release(&db, PREVIOUS_RELEASE).await;
    let kitchen = Kitchen::connect(
        db.url(),
        KitchenConfig {
            clock: Clock::manual(old.now),
            duplicate_guard: DuplicateGuard {
                mode: GuardMode::Warn,
                ..DuplicateGuard::default()
            },
            ..KitchenConfig::default()
        },
    )
    .await
    .expect("connect applies the pending migration");
    assert_eq!(raw.applied().await, Raw::every_migration(&db).await);
    effects_are_untouched(&raw, &old).await;
    if let Raw::Postgres(pool) = &raw {
        let functions: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_proc WHERE proname = 'guard_earlier_write'",
        )
        .fetch_one(pool)
        .await
        .expect("the catalog");
        assert_eq!(functions, 1);
    }

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
        title: Some("After the guard's read became one statement".into()),
        ..TicketDraft::default()
    };
    let key = |k: &str| OperationKey::parse(k).expect("a key");
    let made = kitchen
        .write::<CreateTicket>(&caller, &key("r13-create"), &request)
        .await
        .expect("create");
    assert!(matches!(made, Outcome::Created(_)), "{made:?}");
    let again = kitchen
        .write::<CreateTicket>(&caller, &key("r13-create-again"), &request)
        .await
        .expect("create again");
    let Outcome::Created(receipt) = again else {
        panic!("a warning is not a refusal: {again:?}");
    };
    let earlier = receipt
        .possible_duplicate_of
        .expect("the guard names the earlier write");
    assert_eq!(earlier.key, key("r13-create"));
    raw.close().await;
    kitchen.close().await;
}

kitchen::on_both_databases!(a_release_12_database_upgrades_to_the_guards_read_in_one_round_trip);
