//! Upgrading from the release before the previous one (a deployment may
//! skip a release): a database that release migrated (migrations 0001 and
//! 0002, applied by sqlx's own migrator from the files in `migrations/`, so
//! `_sqlx_migrations` holds their real checksums) and filled the way it
//! wrote rows, opened by this release's `Kitchen::connect`, which applies
//! 0003 and 0004 in one go. The upgrade from the previous release itself is
//! in `upgrade_0004.rs`.
//!
//! The old rows are written with SQL here, not through the kitchen: the
//! point is what the previous release left behind, including result
//! snapshots in its JSON form (no `version`), fingerprints computed by its
//! algorithm, and (SQLite only, which stored it before NUL was refused) a
//! description holding U+0000.

use kitchen::actions::{AddComment, CreateTicket, TransitionTicket, UpdateTicket};
use std::path::Path;
use std::str::FromStr;

use kitchen::testing::{DatabaseKind, TestDatabase};
use kitchen::{
    Action, Caller, Kitchen, KitchenConfig, OperationKey, OperationState, PageSize, Ticket,
    TicketDraft, TicketFilter, TicketId, TicketStatus, TokenId,
};
use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::migrate::Migrator;
use sqlx::postgres::PgPoolOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::support::{Desk, created, fresh_key, move_to, replayed, say, update_at};
use crate::upgrade_0004::{OLD_RETENTION, UPGRADE_HORIZON, ceil_to_second};

/// The last migration that release shipped.
const PREVIOUS_RELEASE: i64 = 2;

/// A ticket as the previous release wrote it.
struct OldTicket {
    id: Uuid,
    key: &'static str,
    project_id: &'static str,
    title: &'static str,
    description: Option<&'static str>,
    priority: &'static str,
    /// What the caller sent as priority (left out means normal).
    sent_priority: Option<&'static str>,
    created_at: OffsetDateTime,
}

/// The previous release's ticket JSON: these fields in this order, and
/// nothing else (no `version`, `assignee` or `updated_at`).
#[derive(Serialize)]
struct PreviousTicketJson<'a> {
    id: Uuid,
    project_id: &'a str,
    title: &'a str,
    description: Option<&'a str>,
    priority: &'a str,
    status: &'a str,
    #[serde(with = "time::serde::rfc3339")]
    created_at: OffsetDateTime,
}

/// The previous release's fingerprint algorithm, written out: SHA-256 over
/// the action and encoding version, then the canonical JSON with fields in
/// alphabetical order. Kept here rather than borrowed from the kitchen, so
/// that a change to the kitchen's fingerprint shows up as old keys that no
/// longer replay.
#[derive(Serialize)]
struct PreviousCanonical<'a> {
    description: Option<&'a str>,
    priority: &'a str,
    project_id: &'a str,
    title: &'a str,
}

impl OldTicket {
    fn snapshot(&self) -> String {
        serde_json::to_string(&PreviousTicketJson {
            id: self.id,
            project_id: self.project_id,
            title: self.title,
            description: self.description,
            priority: self.priority,
            status: "open",
            created_at: self.created_at,
        })
        .expect("json")
    }

    fn fingerprint(&self) -> String {
        let canonical = serde_json::to_vec(&PreviousCanonical {
            description: self.description,
            priority: self.priority,
            project_id: self.project_id,
            title: self.title,
        })
        .expect("json");
        let mut hasher = Sha256::new();
        hasher.update(b"create_ticket\nv1\n");
        hasher.update(&canonical);
        hex::encode(hasher.finalize())
    }

    /// The request its caller sent (and would send again on a retry).
    fn draft(&self) -> TicketDraft {
        TicketDraft {
            project_id: Some(self.project_id.into()),
            title: Some(self.title.into()),
            description: self.description.map(Into::into),
            priority: self.sent_priority.map(Into::into),
        }
    }

    fn ticket_id(&self) -> TicketId {
        TicketId::from_str(&self.id.to_string()).expect("a UUID is a ticket id")
    }

    fn key(&self) -> OperationKey {
        OperationKey::parse(self.key).expect("a valid key")
    }
}

/// What the previous release held: one tenant, one token, some tickets.
struct PreviousRelease {
    tenant: Uuid,
    token: Uuid,
    secret: String,
    tickets: Vec<OldTicket>,
}

fn now_in_micros() -> OffsetDateTime {
    let now = OffsetDateTime::now_utc();
    now.replace_nanosecond(now.nanosecond() / 1_000 * 1_000)
        .expect("valid nanoseconds")
}

impl PreviousRelease {
    fn new(backend: DatabaseKind) -> Self {
        let mut tickets = vec![
            OldTicket {
                id: Uuid::now_v7(),
                key: "old-key-with-description",
                project_id: "ops",
                title: "Disk full on db-1",
                description: Some("Since 02:00,\nline two"),
                priority: "high",
                sent_priority: Some("high"),
                created_at: now_in_micros(),
            },
            OldTicket {
                id: Uuid::now_v7(),
                key: "old-key-without-description",
                project_id: "web",
                title: "Login page slow",
                description: None,
                priority: "normal",
                sent_priority: None,
                created_at: now_in_micros(),
            },
        ];
        if backend == DatabaseKind::Sqlite {
            tickets.push(OldTicket {
                id: Uuid::now_v7(),
                key: "old-key-with-a-nul",
                project_id: "ops",
                title: "Imported",
                description: Some("legacy\0text"),
                priority: "low",
                sent_priority: Some("low"),
                created_at: now_in_micros(),
            });
        }
        Self {
            tenant: Uuid::now_v7(),
            token: Uuid::now_v7(),
            secret: format!("tkt_{}", "5a".repeat(32)),
            tickets,
        }
    }
}

/// Migrates `pool` to the previous release with sqlx's migrator, then writes
/// `old`'s rows with the previous release's columns.
macro_rules! previous_release {
    ($pool:expr, $dir:expr, $old:expr) => {{
        let pool = $pool;
        let old: &PreviousRelease = $old;
        let migrator = Migrator::new(
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../migrations"))
                .join($dir)
                .as_path(),
        )
        .await
        .expect("read the migrations");
        migrator
            .run_to(PREVIOUS_RELEASE, pool)
            .await
            .expect("apply the previous release's migrations");
        let applied: Vec<i64> =
            sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
                .fetch_all(pool)
                .await
                .expect("read the migrations table");
        assert_eq!(applied, [1, 2], "what the previous release applied");

        let created_at = now_in_micros();
        sqlx::query("INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3)")
            .bind(old.tenant)
            .bind("acme")
            .bind(created_at)
            .execute(pool)
            .await
            .expect("insert the tenant");
        sqlx::query(
            "INSERT INTO api_tokens (id, tenant_id, token_sha256, created_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(old.token)
        .bind(old.tenant)
        .bind(Sha256::digest(old.secret.as_bytes()).to_vec())
        .bind(created_at)
        .execute(pool)
        .await
        .expect("insert the token");
        for t in &old.tickets {
            sqlx::query(
                "INSERT INTO tickets (id, tenant_id, project_id, title, description, priority, \
                 status, created_at) VALUES ($1, $2, $3, $4, $5, $6, 'open', $7)",
            )
            .bind(t.id)
            .bind(old.tenant)
            .bind(t.project_id)
            .bind(t.title)
            .bind(t.description)
            .bind(t.priority)
            .bind(t.created_at)
            .execute(pool)
            .await
            .expect("insert a ticket");
            sqlx::query(
                "INSERT INTO operations (tenant_id, action, operation_key, fingerprint_version, \
                 fingerprint, state, ticket_id, result_snapshot, created_at, retained_until) \
                 VALUES ($1, 'create_ticket', $2, 1, $3, 'succeeded', $4, $5, $6, $7)",
            )
            .bind(old.tenant)
            .bind(t.key)
            .bind(t.fingerprint())
            .bind(t.id)
            .bind(t.snapshot())
            .bind(t.created_at)
            .bind(t.created_at + OLD_RETENTION)
            .execute(pool)
            .await
            .expect("insert an operation record");
        }
    }};
}

/// A database as the previous release left it.
async fn fill(db: &TestDatabase, old: &PreviousRelease) {
    match db.backend() {
        DatabaseKind::Sqlite => {
            let options = SqliteConnectOptions::from_str(db.url())
                .expect("a SQLite URL")
                .create_if_missing(true)
                .foreign_keys(true);
            let pool = SqlitePoolOptions::new()
                .max_connections(1)
                .connect_with(options)
                .await
                .expect("open the SQLite file");
            previous_release!(&pool, "sqlite", old);
            pool.close().await;
        }
        DatabaseKind::Postgres => {
            let pool = PgPoolOptions::new()
                .max_connections(1)
                .connect(db.url())
                .await
                .expect("connect to PostgreSQL");
            previous_release!(&pool, "postgres", old);
            pool.close().await;
        }
    }
}

async fn a_previous_release_database_upgrades_in_place(db: TestDatabase) {
    let old = PreviousRelease::new(db.backend());
    fill(&db, &old).await;

    let kitchen = Kitchen::connect(db.url(), KitchenConfig::default())
        .await
        .expect("connect applies the pending migrations");

    // Authentication: the old token, for the old tenant.
    let caller: Caller = kitchen
        .authenticate(&old.secret)
        .await
        .expect("auth")
        .expect("the old token still authenticates");
    assert_eq!(caller.tenant.id.as_uuid(), old.tenant);
    assert_eq!(caller.tenant.name.as_str(), "acme");
    assert_eq!(caller.token(), Some(TokenId::from(old.token)));
    let tenant = caller.tenant.id;

    // Every ticket reads back as it was, at version 1, open, unassigned.
    let page = kitchen
        .list_tickets(tenant, &TicketFilter::default(), PageSize::DEFAULT, None)
        .await
        .expect("list");
    assert_eq!(page.tickets.len(), old.tickets.len());
    for t in &old.tickets {
        let id = t.ticket_id();
        let ticket = kitchen
            .ticket(tenant, id)
            .await
            .expect("read")
            .expect("the old ticket is there");
        assert_eq!(ticket.version.get(), 1, "{}", t.key);
        assert_eq!(ticket.status, TicketStatus::Open);
        assert_eq!(ticket.assignee, None);
        assert_eq!(ticket.updated_at, None);
        assert_eq!(ticket.title.as_str(), t.title);
        assert_eq!(
            ticket.description.as_ref().map(|d| d.as_str()),
            t.description
        );
        assert_eq!(ticket.priority.as_str(), t.priority);
        assert_eq!(ticket.created_at, t.created_at);
        assert!(page.tickets.contains(&ticket));
        // The old snapshot reads as the same ticket.
        let from_snapshot: Ticket = serde_json::from_str(&t.snapshot()).expect("old JSON reads");
        assert_eq!(from_snapshot, ticket, "{}", t.key);

        // Its operation is still known, with the old bytes.
        let status = kitchen
            .operation_status(tenant, Action::CreateTicket, &t.key())
            .await
            .expect("status")
            .expect("the old record");
        assert_eq!(status.record.state, OperationState::Succeeded);
        assert_eq!(status.record.ticket_id, Some(id));
        assert_eq!(
            status.record.result.as_ref().map(|r| r.as_str()),
            Some(t.snapshot().as_str())
        );
        // 0004 gave it the key lifecycle: the 30 days that release promised
        // became its replay window, and it is remembered for 400 days.
        assert_eq!(status.record.resource_id, Some(t.id), "{}", t.key);
        assert_eq!(
            status.record.replayable_until,
            ceil_to_second(t.created_at + OLD_RETENTION),
            "{}",
            t.key
        );
        assert_eq!(
            status.record.retained_until,
            ceil_to_second(t.created_at + UPGRADE_HORIZON),
            "{}",
            t.key
        );
        assert_eq!(status.record.tombstoned_at, None);
        assert_eq!(status.phase, kitchen::KeyPhase::Replayable);
        assert_eq!(
            kitchen
                .ticket_history(tenant, id, PageSize::DEFAULT, None)
                .await
                .expect("history")
                .expect("the ticket exists")
                .entries,
            [],
            "nothing was recorded before history existed"
        );
    }

    // A retry of an old create replays the old answer byte for byte. (The
    // create whose description holds a NUL cannot be sent again: the same
    // request is refused as invalid today; its status above still answers.)
    for t in old
        .tickets
        .iter()
        .filter(|t| !t.description.is_some_and(|d| d.contains('\0')))
    {
        let again = replayed(
            kitchen
                .write::<CreateTicket>(tenant, &t.key(), &t.draft())
                .await
                .expect("retry"),
        );
        assert_eq!(again.snapshot.as_str(), t.snapshot(), "{}", t.key);
        assert!(!again.snapshot.as_str().contains("version"));
        assert_eq!(again.result.version.get(), 1);
    }

    // The new writes work on old tickets.
    let desk = Desk {
        kitchen: kitchen.clone(),
        tenant: caller.tenant.clone(),
        actor: kitchen::Actor::from(&caller),
        ticket: kitchen
            .ticket(tenant, old.tickets[0].ticket_id())
            .await
            .expect("read")
            .expect("there"),
    };
    for t in &old.tickets {
        let id = t.ticket_id();
        let edited = created(
            kitchen
                .write::<UpdateTicket>(
                    desk.actor,
                    &fresh_key(),
                    &update_at(
                        id,
                        1,
                        r#"{"title": "Edited after the upgrade", "assignee": "Ada"}"#,
                    ),
                )
                .await
                .expect("update"),
        );
        assert_eq!(edited.result.version.get(), 2, "{}", t.key);
        assert_eq!(
            edited.result.description.as_ref().map(|d| d.as_str()),
            t.description,
            "the description is kept as it was"
        );
        assert_eq!(desk.current(id).await, edited.result);
        let history = desk.history(id).await;
        assert_eq!(history.len(), 1);
        assert_eq!(history[0].actor_token_id, caller.token());
    }
    let first = old.tickets[0].ticket_id();
    created(
        kitchen
            .write::<TransitionTicket>(
                desk.actor,
                &fresh_key(),
                &(first.into(), move_to("in_progress")),
            )
            .await
            .expect("move"),
    );
    created(
        kitchen
            .write::<AddComment>(
                desk.actor,
                &fresh_key(),
                &(first.into(), say("After the upgrade")),
            )
            .await
            .expect("comment"),
    );
    // The old key's answer is frozen: still the old bytes, after all that.
    let frozen = replayed(
        kitchen
            .write::<CreateTicket>(tenant, &old.tickets[0].key(), &old.tickets[0].draft())
            .await
            .expect("retry"),
    );
    assert_eq!(frozen.snapshot.as_str(), old.tickets[0].snapshot());
    // And a new ticket is made as this release makes them.
    let fresh = created(
        kitchen
            .write::<CreateTicket>(
                desk.actor,
                &fresh_key(),
                &crate::support::draft("ops", "New"),
            )
            .await
            .expect("create"),
    );
    assert!(fresh.snapshot.as_str().contains(r#""version":1"#));
    kitchen.close().await;
}

kitchen::on_both_databases!(a_previous_release_database_upgrades_in_place);
