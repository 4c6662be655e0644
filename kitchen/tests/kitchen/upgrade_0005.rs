//! Upgrading from the previous release, the key lifecycle (migrations 0001
//! to 0004), to this one: `Kitchen::connect` applies 0005, every write on
//! the remote backend, which adds `ticket_comments.provider_comment_id` and
//! `operations.provider_duplicates`, both nullable; nothing is rewritten.
//!
//! The previous release's database is made the way it came to be: release
//! 3's rows (the fill of `upgrade_0004`) upgraded in place by migration
//! 0004 with sqlx's own migrator, plus a ticket that release made in a
//! provider, with its create record, written with SQL as that release
//! wrote it. The new kitchen runs on the remote backend, so what the
//! upgrade brings is tried on the old rows: a comment on the old provider
//! ticket goes to the provider, the old create whose outcome was unknown
//! resumes from its stored request and is made once, and a ticket only
//! ever kept here is refused, its key left unused.

use kitchen::actions::{AddComment, CreateTicket};
use std::sync::Arc;

use kitchen::fake_provider::FakeProvider;
use kitchen::testing::TestDatabase;
use kitchen::{
    Action, Caller, Clock, Kitchen, KitchenConfig, OperationKey, Outcome, Refusal, RemoteSettings,
    TicketBackend, TicketDraft, TicketId,
};
use time::Duration;
use uuid::Uuid;

use crate::support::{comments, created, replayed, say};
use crate::upgrade_0004::{
    KEY_UNKNOWN, PreviousRelease, Raw, effects_are_untouched, everything_reads_back, fingerprint,
    on_raw, records_read_back,
};

/// The last migration the previous release shipped.
const PREVIOUS_RELEASE: i64 = 4;

/// The create record of the ticket release 4 made in a provider.
const KEY_REMOTE_CREATE: &str = "r4-remote-create";

/// The ticket release 4 made in a provider, as it stored it.
pub(crate) struct RemoteTicket {
    pub(crate) id: Uuid,
    pub(crate) created_at: time::OffsetDateTime,
}

impl RemoteTicket {
    /// Its JSON, as release 4 froze it and as a GET shows it.
    pub(crate) fn json(&self) -> String {
        format!(
            r#"{{"id":"{}","project_id":"ops","title":"Printer on fire","description":null,"priority":"high","status":"open","created_at":"{}","provider_ticket_id":"FAKE-1","version":1}}"#,
            self.id,
            kitchen::rfc3339(self.created_at)
        )
    }

    pub(crate) fn ticket_id(&self) -> TicketId {
        self.id.to_string().parse().expect("a UUID is a ticket id")
    }
}

/// Brings the release-3 database `upgrade_0004` fills up to release 4 with
/// the migrator, then adds what release 4 wrote for a ticket it made in a
/// provider: the ticket, its first history entry, and its create record
/// with the effect ledger's columns.
pub(crate) async fn fill(db: &TestDatabase, old: &PreviousRelease, remote: &RemoteTicket) {
    old.fill(db).await;
    let raw = Raw::open(db).await;
    raw.migrate_to(db, PREVIOUS_RELEASE).await;
    assert_eq!(raw.applied().await, [1, 2, 3, 4], "what release 4 applied");
    let canonical =
        r#"{"description":null,"priority":"high","project_id":"ops","title":"Printer on fire"}"#;
    let at = remote.created_at;
    on_raw!(&raw, pool => {
        sqlx::query(
            "INSERT INTO tickets (id, tenant_id, project_id, title, description, priority, \
             status, created_at, provider_ticket_id, assignee, version, updated_at) \
             VALUES ($1, $2, 'ops', 'Printer on fire', NULL, 'high', 'open', $3, 'FAKE-1', \
             NULL, 1, NULL)",
        )
        .bind(remote.id)
        .bind(old.tenant)
        .bind(at)
        .execute(pool)
        .await
        .expect("insert the provider's ticket");
        sqlx::query(
            "INSERT INTO operations (tenant_id, action, operation_key, fingerprint_version, \
             fingerprint, state, ticket_id, result_snapshot, created_at, retained_until, \
             request_snapshot, external_ref, first_dispatched_at, last_dispatched_at, \
             replayable_until, resource_id) \
             VALUES ($1, 'create_ticket', $2, 1, $3, 'succeeded', $4, $5, $6, $7, $8, $9, $6, \
             $6, $10, $4)",
        )
        .bind(old.tenant)
        .bind(KEY_REMOTE_CREATE)
        .bind(fingerprint("create_ticket", canonical))
        .bind(remote.id)
        .bind(remote.json())
        .bind(at)
        .bind(at + Duration::days(400))
        .bind(canonical)
        .bind(format!("rst1-{}", "cd34".repeat(10)))
        .bind(at + Duration::days(30))
        .execute(pool)
        .await
        .expect("insert its create record");
    });
    raw.close().await;
}

async fn a_release_4_database_upgrades_to_remote_writes(db: TestDatabase) {
    let old = PreviousRelease::new();
    let remote = RemoteTicket {
        id: Uuid::now_v7(),
        created_at: old.now - Duration::days(3),
    };
    fill(&db, &old, &remote).await;

    // The provider holds the ticket release 4 made there.
    let provider = FakeProvider::ignoring_keys();
    provider.make_ticket(&format!("rst1-{}", "cd34".repeat(10)));
    let kitchen = Kitchen::connect(
        db.url(),
        KitchenConfig {
            clock: Clock::manual(old.now),
            backend: TicketBackend::Remote {
                provider: Arc::new(provider.clone()),
                settings: RemoteSettings {
                    max_inflight: std::time::Duration::ZERO,
                    ..RemoteSettings::default()
                },
            },
            ..KitchenConfig::default()
        },
    )
    .await
    .expect("connect applies the pending migration");
    let raw = Raw::open(&db).await;
    assert_eq!(raw.applied().await, Raw::every_migration(&db).await);

    let caller: Caller = kitchen
        .authenticate(&old.secret)
        .await
        .expect("auth")
        .expect("the old token still authenticates");
    let tenant = caller.tenant.id;
    let actor = kitchen::Actor::from(&caller);

    // Everything reads back as release 4 left it. (The record reads come
    // last: on this backend a status read searches the provider for the
    // create whose outcome was unknown, and settles what the search proves.)
    effects_are_untouched(&raw, &old).await;
    everything_reads_back(&kitchen, &old, tenant, 1).await;
    records_read_back(&kitchen, &old, tenant, None).await;
    let unknown = old.record(KEY_UNKNOWN);
    let settled = kitchen
        .operation(tenant, Action::CreateTicket, &unknown.key())
        .await
        .expect("read")
        .expect("kept");
    assert_eq!(
        settled.state,
        kitchen::OperationState::FailedBeforeEffect,
        "the search proved it never made"
    );
    assert_eq!(
        provider.calls().0,
        0,
        "the reads sent nothing to the provider"
    );
    let ticket = kitchen
        .ticket(tenant, remote.ticket_id())
        .await
        .expect("read")
        .expect("the provider's ticket");
    assert_eq!(serde_json::to_string(&ticket).expect("json"), remote.json());
    assert_eq!(kitchen.provider_duplicates().await.expect("count"), 0);

    // Its create still replays byte for byte.
    let key = OperationKey::parse(KEY_REMOTE_CREATE).expect("a key");
    let draft = TicketDraft {
        project_id: Some("ops".into()),
        title: Some("Printer on fire".into()),
        priority: Some("high".into()),
        ..TicketDraft::default()
    };
    let again = replayed(
        kitchen
            .write::<CreateTicket>(actor, &key, &draft)
            .await
            .expect("retry"),
    );
    assert_eq!(again.snapshot.as_str(), remote.json());

    // A comment on it goes to the provider and keeps the provider's id.
    let comment = created(
        kitchen
            .write::<AddComment>(
                actor,
                &OperationKey::parse("r5-comment").expect("a key"),
                &(ticket.id.into(), say("Smoke")),
            )
            .await
            .expect("comment"),
    )
    .result;
    assert!(
        comment
            .provider_comment_id
            .as_deref()
            .is_some_and(|id| id.starts_with("CMT-"))
    );
    assert_eq!(comments(&kitchen, tenant, ticket.id).await, [comment]);

    // The create whose outcome release 4 left unknown was proved never
    // made; it spent no key, and it is past its replay window, so the
    // caller's retry claims the key anew (under the reference this release
    // derives) and makes the ticket once.
    let elsewhere = TicketDraft {
        project_id: Some("ops".into()),
        title: Some("Made elsewhere".into()),
        ..TicketDraft::default()
    };
    match kitchen
        .write::<CreateTicket>(actor, &unknown.key(), &elsewhere)
        .await
        .expect("retry")
    {
        Outcome::Created(receipt) => assert_eq!(receipt.result.title.as_str(), "Made elsewhere"),
        other => panic!("expected the old unknown create to be made now, got {other:?}"),
    }
    let stored = unknown
        .ledger
        .as_ref()
        .and_then(|(l, _)| l.external_ref.clone())
        .expect("a stored reference");
    let derived = kitchen::ExternalRef::derive(tenant, Action::CreateTicket, &unknown.key());
    assert_eq!(
        (provider.count(&stored), provider.count(derived.as_str())),
        (0, 1)
    );
    assert_eq!(
        provider.total(),
        3,
        "the old provider ticket, the comment, the create sent now"
    );

    // A ticket release 4 kept only here has no copy at the provider.
    let local: TicketId = old
        .record(crate::upgrade_0004::KEY_CREATE_A)
        .ticket_id
        .expect("a ticket")
        .to_string()
        .parse()
        .expect("a ticket id");
    let kept = OperationKey::parse("r5-comment-local").expect("a key");
    assert_eq!(
        crate::support::refused(
            kitchen
                .write::<AddComment>(actor, &kept, &(local.into(), say("Hello")))
                .await
                .expect("comment")
        ),
        Refusal::NotAtProvider { ticket_id: local }
    );
    assert!(
        kitchen
            .operation(tenant, Action::AddComment, &kept)
            .await
            .expect("lookup")
            .is_none()
    );

    raw.close().await;
    kitchen.close().await;
}

kitchen::on_both_databases!(a_release_4_database_upgrades_to_remote_writes);
