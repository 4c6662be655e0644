//! Upgrading from the previous release (migrations 0001 to 0006, with
//! access scopes) to this one: `Kitchen::connect` applies 0007, the
//! readiness probe's table, which adds a table and touches nothing else.
//!
//! The previous release's database is the one `upgrade_0006` upgrades to
//! release 6, brought there with sqlx's own migrator, plus what release 6
//! wrote itself: a read-only token. After the upgrade every old row reads
//! back as it was, every old token authenticates as before, a write works,
//! and readiness, which may now commit the probe's row, answers ready.

use kitchen::actions::CreateTicket;
use kitchen::testing::TestDatabase;
use kitchen::{Clock, Kitchen, KitchenConfig, OperationKey, Outcome, Scope, Scopes, TicketDraft};
use sha2::{Digest, Sha256};
use time::Duration;
use uuid::Uuid;

use crate::upgrade_0004::{PreviousRelease, Raw, everything_reads_back, on_raw, records_read_back};
use crate::upgrade_0005::RemoteTicket;

/// The last migration the previous release shipped.
const PREVIOUS_RELEASE: i64 = 6;

async fn a_release_6_database_upgrades_to_the_write_probe(db: TestDatabase) {
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
        [1, 2, 3, 4, 5, 6],
        "what release 6 applied"
    );
    // What release 6 wrote itself: a read-only token.
    let reader_secret = format!("tkt_{}", "6a".repeat(32));
    on_raw!(&raw, pool => sqlx::query(
        "INSERT INTO api_tokens (id, tenant_id, token_sha256, created_at, scopes) \
         VALUES ($1, $2, $3, $4, 'tickets:read')",
    )
    .bind(Uuid::now_v7())
    .bind(old.tenant)
    .bind(Sha256::digest(reader_secret.as_bytes()).to_vec())
    .bind(old.now - Duration::days(1))
    .execute(pool)
    .await
    .expect("insert a release-6 token")
    .rows_affected());

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

    let reader = kitchen
        .authenticate(&reader_secret)
        .await
        .expect("auth")
        .expect("release 6's read-only token");
    assert_eq!(reader.scopes, Scopes::only(Scope::Read));
    let caller = kitchen
        .authenticate(&tokens.live.1)
        .await
        .expect("auth")
        .expect("an old live token");
    assert_eq!(caller.scopes, Scopes::ALL);
    let tenant = caller.tenant.id;
    everything_reads_back(&kitchen, &old, tenant, 1).await;
    records_read_back(&kitchen, &old, tenant, None).await;

    let made = kitchen
        .write::<CreateTicket>(
            &caller,
            &OperationKey::parse("r7-create-after-upgrade").expect("a key"),
            &TicketDraft {
                project_id: Some("ops".into()),
                title: Some("After the upgrade".into()),
                ..TicketDraft::default()
            },
        )
        .await
        .expect("create");
    assert!(matches!(made, Outcome::Created(_)), "{made:?}");
    kitchen.ready().await.expect("ready after the upgrade");
    raw.close().await;
    kitchen.close().await;
}

kitchen::on_both_databases!(a_release_6_database_upgrades_to_the_write_probe);
