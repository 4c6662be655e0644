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
    Caller, Clock, DuplicateGuard, GuardMode, Kitchen, KitchenConfig, OperationKey, Outcome,
    Refusal, TicketDraft,
};
use time::Duration;
use uuid::Uuid;

use crate::upgrade_0004::{PreviousRelease, Raw, effects_are_untouched};
use crate::upgrade_0005::RemoteTicket;

/// The last migration the previous release shipped.
const PREVIOUS_RELEASE: i64 = 9;

/// The kitchen on the upgraded database, at the old release's time, with
/// the likely-duplicate guard in `mode`: connecting applied every pending
/// migration and left every old effect's ledger untouched.
pub(crate) async fn upgraded_with_guard(
    db: &TestDatabase,
    old: &PreviousRelease,
    raw: &Raw,
    mode: GuardMode,
) -> Kitchen {
    let kitchen = Kitchen::connect(
        db.url(),
        KitchenConfig {
            clock: Clock::manual(old.now),
            duplicate_guard: DuplicateGuard {
                mode,
                ..DuplicateGuard::default()
            },
            ..KitchenConfig::default()
        },
    )
    .await
    .expect("connect applies the pending migration");
    assert_eq!(raw.applied().await, Raw::every_migration(db).await);
    effects_are_untouched(raw, old).await;
    kitchen
}

/// After an upgrade: a create of `title` under `{prefix}-create`, then
/// the same content under `{prefix}-create-again`; the second's outcome,
/// for the guard's mode to judge.
pub(crate) async fn the_same_content_under_two_keys(
    kitchen: &Kitchen,
    caller: &Caller,
    title: &str,
    prefix: &str,
) -> Outcome<kitchen::Ticket> {
    let request = TicketDraft {
        project_id: Some("ops".into()),
        title: Some(title.into()),
        ..TicketDraft::default()
    };
    let key = |k: String| OperationKey::parse(k).expect("a key");
    let made = kitchen
        .write::<CreateTicket>(caller, &key(format!("{prefix}-create")), &request)
        .await
        .expect("create");
    assert!(matches!(made, Outcome::Created(_)), "{made:?}");
    kitchen
        .write::<CreateTicket>(caller, &key(format!("{prefix}-create-again")), &request)
        .await
        .expect("create again")
}

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

    let kitchen = upgraded_with_guard(&db, &old, &raw, GuardMode::Confirm).await;

    let caller = crate::upgrade_0006::old_rows_read_back(&kitchen, &old, &tokens).await;
    let tenant = caller.tenant.id;
    assert_eq!(
        kitchen.duplicate_guard_of(tenant).await.expect("read"),
        None,
        "an old tenant follows the deployment"
    );

    let again =
        the_same_content_under_two_keys(&kitchen, &caller, "After the upgrade", "r10").await;
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
    let request = TicketDraft {
        project_id: Some("ops".into()),
        title: Some("After the upgrade".into()),
        ..TicketDraft::default()
    };
    let key = OperationKey::parse("r10-create-again").expect("a key");
    let allowed = kitchen
        .write::<CreateTicket>(&caller, &key, &request)
        .await
        .expect("create, guard off for this tenant");
    assert!(matches!(allowed, Outcome::Created(_)), "{allowed:?}");
    raw.close().await;
    kitchen.close().await;
}

kitchen::on_both_databases!(a_release_9_database_upgrades_to_the_duplicate_guard);
