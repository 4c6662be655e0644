//! Upgrading from the previous release, every write on the remote backend
//! (migrations 0001 to 0005), to this one: `Kitchen::connect` applies 0006,
//! access scopes, which adds `api_tokens.scopes` with a default that keeps
//! every existing token doing everything, and the new `oauth_subjects`
//! table; nothing is rewritten.
//!
//! The previous release's database is the one `upgrade_0005` upgrades to
//! release 5, brought there with sqlx's own migrator, plus what release 5
//! wrote itself: a second token, and a revoked one. After the upgrade every
//! old row reads back as it was, every old token authenticates with both
//! scopes (the revoked one stays revoked), and what the release brings works
//! on the old tenant: a read-only token, a mapped identity-provider subject.

use kitchen::actions::CreateTicket;
use kitchen::testing::TestDatabase;
use kitchen::{
    Caller, Clock, Credential, Issuer, Kitchen, KitchenConfig, OAuthIdentity, OperationKey,
    Outcome, Scope, Scopes, Subject, TenantVia, TicketDraft, TokenId,
};
use sha2::{Digest, Sha256};
use time::Duration;
use uuid::Uuid;

use crate::upgrade_0004::{PreviousRelease, Raw, everything_reads_back, on_raw, records_read_back};
use crate::upgrade_0005::RemoteTicket;

/// The last migration the previous release shipped.
const PREVIOUS_RELEASE: i64 = 5;

/// The tokens release 5 issued itself, as it stored them (no scopes column).
pub(crate) struct Release5Tokens {
    pub(crate) live: (Uuid, String),
    pub(crate) revoked: (Uuid, String),
}

/// Brings `upgrade_0005`'s release-4 database up to release 5 with the
/// migrator, then issues (and revokes) tokens the way release 5 did.
pub(crate) async fn fill(
    db: &TestDatabase,
    old: &PreviousRelease,
    remote: &RemoteTicket,
) -> Release5Tokens {
    crate::upgrade_0005::fill(db, old, remote).await;
    let raw = Raw::open(db).await;
    raw.migrate_to(db, PREVIOUS_RELEASE).await;
    assert_eq!(
        raw.applied().await,
        [1, 2, 3, 4, 5],
        "what release 5 applied"
    );
    let tokens = Release5Tokens {
        live: (Uuid::now_v7(), format!("tkt_{}", "5a".repeat(32))),
        revoked: (Uuid::now_v7(), format!("tkt_{}", "5b".repeat(32))),
    };
    let at = old.now - Duration::days(2);
    on_raw!(&raw, pool => {
        for ((id, secret), revoked_at) in [
            (&tokens.live, None),
            (&tokens.revoked, Some(old.now - Duration::days(1))),
        ] {
            sqlx::query(
                "INSERT INTO api_tokens (id, tenant_id, token_sha256, created_at, revoked_at) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(*id)
            .bind(old.tenant)
            .bind(Sha256::digest(secret.as_bytes()).to_vec())
            .bind(at)
            .bind(revoked_at)
            .execute(pool)
            .await
            .expect("insert a release-5 token");
        }
    });
    raw.close().await;
    tokens
}

async fn a_release_5_database_upgrades_to_access_scopes(db: TestDatabase) {
    let old = PreviousRelease::new();
    let remote = RemoteTicket {
        id: Uuid::now_v7(),
        created_at: old.now - Duration::days(3),
    };
    let tokens = fill(&db, &old, &remote).await;
    let kitchen = Kitchen::connect(
        db.url(),
        KitchenConfig {
            clock: Clock::manual(old.now),
            ..KitchenConfig::default()
        },
    )
    .await
    .expect("connect applies the pending migration");
    let raw = Raw::open(&db).await;
    assert_eq!(raw.applied().await, Raw::every_migration(&db).await);

    // Every old token keeps doing everything; the revoked one stays revoked.
    for (secret, id) in [(&old.secret, None), (&tokens.live.1, Some(tokens.live.0))] {
        let caller = kitchen
            .authenticate(secret)
            .await
            .expect("auth")
            .expect("an old live token still authenticates");
        assert_eq!(caller.tenant.id.as_uuid(), old.tenant);
        assert_eq!(caller.scopes, Scopes::ALL, "an old token keeps both scopes");
        if let Some(id) = id {
            assert_eq!(caller.token(), Some(TokenId::from(id)));
        }
    }
    assert_eq!(
        kitchen.authenticate(&tokens.revoked.1).await.expect("auth"),
        None,
        "a revoked token stays revoked"
    );
    let caller = kitchen
        .authenticate(&old.secret)
        .await
        .expect("auth")
        .expect("the old token");
    let tenant = caller.tenant.id;

    // Everything reads back as release 5 left it.
    everything_reads_back(&kitchen, &old, tenant, 1).await;
    records_read_back(&kitchen, &old, tenant, None).await;
    let ticket = kitchen
        .ticket(tenant, remote.ticket_id())
        .await
        .expect("read")
        .expect("the provider's ticket");
    assert_eq!(serde_json::to_string(&ticket).expect("json"), remote.json());

    // The old token still writes.
    let draft = TicketDraft {
        project_id: Some("ops".into()),
        title: Some("After the upgrade".into()),
        ..TicketDraft::default()
    };
    let made = kitchen
        .write::<CreateTicket>(
            &caller,
            &OperationKey::parse("r6-create-after-upgrade").expect("a key"),
            &draft,
        )
        .await
        .expect("create");
    assert!(matches!(made, Outcome::Created(_)), "{made:?}");

    // What this release brings works on the old tenant.
    let read_only = kitchen
        .issue_token_with(tenant, Scopes::only(Scope::Read))
        .await
        .expect("issue");
    let reader = kitchen
        .authenticate(&read_only.secret)
        .await
        .expect("auth")
        .expect("the new token");
    assert_eq!(
        (reader.tenant.id, reader.scopes),
        (tenant, Scopes::only(Scope::Read))
    );
    let issuer = Issuer::parse("https://idp.example").expect("an issuer");
    let subject = Subject::parse("ci-bot").expect("a subject");
    kitchen
        .map_oauth_subject(&issuer, &subject, tenant)
        .await
        .expect("map");
    let mapped = kitchen
        .oauth_caller(
            &OAuthIdentity {
                issuer,
                subject,
                tenant_claim: None,
            },
            Scopes::ALL,
        )
        .await
        .expect("resolve")
        .expect("the mapped subject");
    assert_eq!(mapped.tenant.id, tenant);
    assert!(matches!(
        mapped.credential,
        Credential::OAuth {
            via: TenantVia::SubjectMapping,
            ..
        }
    ));
    raw.close().await;
    kitchen.close().await;
}

kitchen::on_both_databases!(a_release_5_database_upgrades_to_access_scopes);

/// The previous release's tenant as its live token authenticates it, once
/// every row that release (and the ones before it) stored reads back as it
/// was.
pub(crate) async fn old_rows_read_back(
    kitchen: &Kitchen,
    old: &PreviousRelease,
    tokens: &Release5Tokens,
) -> Caller {
    let caller = kitchen
        .authenticate(&tokens.live.1)
        .await
        .expect("auth")
        .expect("an old live token");
    everything_reads_back(kitchen, old, caller.tenant.id, 1).await;
    records_read_back(kitchen, old, caller.tenant.id, None).await;
    caller
}

/// A database as release `release` (6 or later) left it, with the rows of
/// releases 3 to 5 ([`fill`]): the fixture, the tokens, and a raw
/// connection to it.
pub(crate) async fn at_release(
    db: &TestDatabase,
    release: i64,
) -> (PreviousRelease, Release5Tokens, Raw) {
    let old = PreviousRelease::new();
    let remote = RemoteTicket {
        id: Uuid::now_v7(),
        created_at: old.now - Duration::days(3),
    };
    let tokens = fill(db, &old, &remote).await;
    let raw = Raw::open(db).await;
    raw.migrate_to(db, release).await;
    assert_eq!(
        raw.applied().await,
        (1..=release).collect::<Vec<_>>(),
        "what release {release} applied"
    );
    (old, tokens, raw)
}
