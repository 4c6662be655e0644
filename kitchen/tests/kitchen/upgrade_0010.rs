//! Upgrading from the previous release (migrations 0001 to 0009) to this
//! one: `Kitchen::connect` applies 0010, which adds a tenant's own
//! likely-duplicate guard mode (empty: the deployment's) and the index the
//! guard reads by content, and touches no existing row.
//!
//! The previous release's database is the one `upgrade_0009` starts from,
//! brought to release 9 with sqlx's own migrator. After the upgrade every
//! old row reads back as it was, every old effect's ledger is untouched,
//! an old tenant follows the deployment's guard until it is given its own,
//! and the guard sees writes made after the upgrade.

use kitchen::actions::CreateTicket;
use kitchen::testing::TestDatabase;
use kitchen::{
    Clock, DuplicateGuard, GuardMode, Kitchen, KitchenConfig, OperationKey, Outcome, Refusal,
    TicketDraft,
};
use time::Duration;
use uuid::Uuid;

use crate::upgrade_0004::{
    PreviousRelease, Raw, effects_are_untouched, everything_reads_back, records_read_back,
};
use crate::upgrade_0005::RemoteTicket;

/// The last migration the previous release shipped.
const PREVIOUS_RELEASE: i64 = 9;

async fn a_release_9_database_upgrades_to_the_duplicate_guard(db: TestDatabase) {
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
        [1, 2, 3, 4, 5, 6, 7, 8, 9],
        "what release 9 applied"
    );

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

    let caller = kitchen
        .authenticate(&tokens.live.1)
        .await
        .expect("auth")
        .expect("an old live token");
    let tenant = caller.tenant.id;
    everything_reads_back(&kitchen, &old, tenant, 1).await;
    records_read_back(&kitchen, &old, tenant, None).await;
    assert_eq!(
        kitchen.duplicate_guard_of(tenant).await.expect("read"),
        None,
        "an old tenant follows the deployment"
    );

    let request = TicketDraft {
        project_id: Some("ops".into()),
        title: Some("After the upgrade".into()),
        ..TicketDraft::default()
    };
    let key = |k: &str| OperationKey::parse(k).expect("a key");
    let made = kitchen
        .write::<CreateTicket>(&caller, &key("r10-create"), &request)
        .await
        .expect("create");
    assert!(matches!(made, Outcome::Created(_)), "{made:?}");
    let again = kitchen
        .write::<CreateTicket>(&caller, &key("r10-create-again"), &request)
        .await
        .expect("create again");
    assert!(
        matches!(again, Outcome::Refused(Refusal::PossibleDuplicate { .. })),
        "{again:?}"
    );
    assert!(
        kitchen
            .set_duplicate_guard(&caller.tenant.name, Some(GuardMode::Off))
            .await
            .expect("an old tenant takes its own mode")
    );
    let allowed = kitchen
        .write::<CreateTicket>(&caller, &key("r10-create-again"), &request)
        .await
        .expect("create, guard off for this tenant");
    assert!(matches!(allowed, Outcome::Created(_)), "{allowed:?}");
    raw.close().await;
    kitchen.close().await;
}

kitchen::on_both_databases!(a_release_9_database_upgrades_to_the_duplicate_guard);
