//! Upgrading from the previous release, the ticket lifecycle (migrations
//! 0001 to 0003, applied by sqlx's own migrator from the files in
//! `migrations/`, so `_sqlx_migrations` holds their real checksums), to
//! this one: `Kitchen::connect` applies 0004, the key lifecycle, which adds
//! `replayable_until`, `resource_id` and `tombstoned_at` to `operations`
//! and fills them for every record already there.
//!
//! The old rows are written with SQL here, not through the kitchen: the
//! point is what the previous release left behind. Its ticket and comment
//! JSON, its history changes and its fingerprints (each action's canonical
//! form, as that release hashed it) are written out by hand, so that a
//! change to any of them in the kitchen shows up as old keys that no longer
//! replay. The previous release kept every record for 30 days from its
//! first use (`retained_until`, to the microsecond); the upgrade must turn
//! that into the replay window, rounded up to a whole second, and remember
//! every key as a tombstone until 400 days after its first use.

use kitchen::actions::{AddComment, CreateTicket, TransitionTicket, UpdateTicket};
use std::path::Path;
use std::str::FromStr;

use kitchen::testing::{DatabaseKind, TestDatabase};
use kitchen::{
    Action, Caller, Clock, CommentDraft, Expired, KeyPhase, Kitchen, KitchenConfig, OperationKey,
    OperationRecord, OperationState, Outcome, PageSize, Receipt, SweepReport, TicketDraft,
    TicketFilter, TicketId, TokenId, TransitionDraft,
};
use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::support::{comments, conflict, history, replayed, say, update, update_at};

/// The last migration the previous release shipped.
const PREVIOUS_RELEASE: i64 = 3;

/// How long the previous release kept a record (its `DEFAULT_RETENTION`):
/// each record's `retained_until` is its `created_at` plus this, exactly.
pub(crate) const OLD_RETENTION: Duration = Duration::days(30);

/// How long migration 0004 remembers every existing key, from its first
/// use. Written out, not borrowed from the kitchen's default: it is what the
/// migration promises, whatever the default becomes.
pub(crate) const UPGRADE_HORIZON: Duration = Duration::days(400);

/// `t` rounded up to a whole second (unchanged if it is one).
pub(crate) fn ceil_to_second(t: OffsetDateTime) -> OffsetDateTime {
    if t.nanosecond() == 0 {
        t
    } else {
        t.replace_nanosecond(0).expect("zero is a valid nanosecond") + Duration::SECOND
    }
}

/// A raw connection to the test database, for writing the old rows and
/// reading back what the kitchen has no API for (the effect ledger's
/// columns and attempts, as stored).
pub(crate) enum Raw {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs `$body` with `$pool` bound to the driver's pool: the same SQL text
/// on either database, as the kitchen's own statements are.
macro_rules! on_raw {
    ($raw:expr, $pool:ident => $body:expr) => {
        match $raw {
            $crate::upgrade_0004::Raw::Sqlite($pool) => $body,
            $crate::upgrade_0004::Raw::Postgres($pool) => $body,
        }
    };
}
pub(crate) use on_raw;

impl Raw {
    pub(crate) async fn open(db: &TestDatabase) -> Self {
        match db.backend() {
            DatabaseKind::Sqlite => {
                let options = SqliteConnectOptions::from_str(db.url())
                    .expect("a SQLite URL")
                    .create_if_missing(true)
                    .foreign_keys(true);
                Self::Sqlite(
                    SqlitePoolOptions::new()
                        .max_connections(1)
                        .connect_with(options)
                        .await
                        .expect("open the SQLite file"),
                )
            }
            DatabaseKind::Postgres => Self::Postgres(
                PgPoolOptions::new()
                    .max_connections(1)
                    .connect(db.url())
                    .await
                    .expect("connect to PostgreSQL"),
            ),
        }
    }

    pub(crate) async fn close(self) {
        on_raw!(self, pool => pool.close().await);
    }

    /// This repository's migrations for `db`'s kind of database.
    async fn migrator(db: &TestDatabase) -> Migrator {
        let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../migrations")).join(
            match db.backend() {
                DatabaseKind::Sqlite => "sqlite",
                DatabaseKind::Postgres => "postgres",
            },
        );
        Migrator::new(dir.as_path())
            .await
            .expect("read the migrations")
    }

    /// Every migration this release has: what a database it opened has
    /// applied (so that a new migration breaks no upgrade test).
    pub(crate) async fn every_migration(db: &TestDatabase) -> Vec<i64> {
        Self::migrator(db).await.iter().map(|m| m.version).collect()
    }

    /// Applies this repository's migrations up to `release`, with sqlx's
    /// own migrator: how a previous release's database is made.
    pub(crate) async fn migrate_to(&self, db: &TestDatabase, release: i64) {
        let migrator = Self::migrator(db).await;
        on_raw!(self, pool => migrator
            .run_to(release, pool)
            .await
            .expect("apply the previous release's migrations"));
    }

    /// The migrations recorded as applied, in order.
    pub(crate) async fn applied(&self) -> Vec<i64> {
        on_raw!(self, pool => {
            sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
                .fetch_all(pool)
                .await
                .expect("read the migrations table")
        })
    }
}

/// The previous release's fingerprint: SHA-256 over the action and encoding
/// version, then the action's canonical JSON (fields in alphabetical
/// order), here as the literal text that release hashed.
pub(crate) fn fingerprint(action: &str, canonical: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(format!("{action}\nv1\n").as_bytes());
    hasher.update(canonical.as_bytes());
    hex::encode(hasher.finalize())
}

/// A ticket as the previous release stored and showed it.
#[derive(Debug, Clone)]
struct OldTicket {
    id: Uuid,
    project_id: &'static str,
    title: &'static str,
    description: Option<&'static str>,
    priority: &'static str,
    status: &'static str,
    created_at: OffsetDateTime,
    assignee: Option<&'static str>,
    version: i64,
    updated_at: Option<OffsetDateTime>,
}

/// The previous release's ticket JSON: these fields in this order
/// (`provider_ticket_id` only for the remote backend, absent here).
#[derive(Serialize)]
struct TicketJson<'a> {
    id: Uuid,
    project_id: &'a str,
    title: &'a str,
    description: Option<&'a str>,
    priority: &'a str,
    status: &'a str,
    #[serde(with = "time::serde::rfc3339")]
    created_at: OffsetDateTime,
    #[serde(skip_serializing_if = "Option::is_none")]
    assignee: Option<&'a str>,
    version: i64,
    #[serde(
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    updated_at: Option<OffsetDateTime>,
}

impl OldTicket {
    fn json(&self) -> String {
        serde_json::to_string(&TicketJson {
            id: self.id,
            project_id: self.project_id,
            title: self.title,
            description: self.description,
            priority: self.priority,
            status: self.status,
            created_at: self.created_at,
            assignee: self.assignee,
            version: self.version,
            updated_at: self.updated_at,
        })
        .expect("json")
    }

    fn ticket_id(&self) -> TicketId {
        TicketId::from_str(&self.id.to_string()).expect("a UUID is a ticket id")
    }
}

/// A comment as the previous release stored and showed it.
#[derive(Debug, Clone, Serialize)]
struct OldComment {
    id: Uuid,
    ticket_id: Uuid,
    body: &'static str,
    #[serde(with = "time::serde::rfc3339")]
    created_at: OffsetDateTime,
}

impl OldComment {
    fn json(&self) -> String {
        serde_json::to_string(self).expect("json")
    }
}

/// A history row.
#[derive(Debug, Clone)]
struct OldHistory {
    id: Uuid,
    ticket_id: Uuid,
    action: &'static str,
    key: &'static str,
    changes: String,
    version: i64,
    recorded_at: OffsetDateTime,
}

/// The remote backend's columns of a record.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub(crate) struct Ledger {
    state: String,
    state_detail: Option<String>,
    request_snapshot: Option<String>,
    pub(crate) external_ref: Option<String>,
    key_trusted_until: Option<OffsetDateTime>,
    first_dispatched_at: Option<OffsetDateTime>,
    last_dispatched_at: Option<OffsetDateTime>,
    lease_owner: Option<Uuid>,
    lease_until_ms: Option<i64>,
    next_check_ms: Option<i64>,
}

/// One call to the provider, as the ledger recorded it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub(crate) struct Attempt {
    attempt_no: i32,
    kind: String,
    trigger: String,
    started_at: OffsetDateTime,
    finished_at: Option<OffsetDateTime>,
    result: Option<String>,
    detail: Option<String>,
}

/// An operation record as the previous release wrote it, and the request
/// its caller would send again on a retry.
#[derive(Debug, Clone)]
pub(crate) struct OldRecord {
    action: Action,
    key: &'static str,
    fingerprint: String,
    state: OperationState,
    pub(crate) ticket_id: Option<Uuid>,
    result: Option<String>,
    created_at: OffsetDateTime,
    /// What 0004 must fill `resource_id` with: the ticket, or for
    /// `add_comment` the comment.
    resource_id: Option<Uuid>,
    /// Remote backend only: the effect ledger and its attempts.
    pub(crate) ledger: Option<(Ledger, Vec<Attempt>)>,
}

impl OldRecord {
    pub(crate) fn key(&self) -> OperationKey {
        OperationKey::parse(self.key).expect("a valid key")
    }

    /// What the previous release promised: protection until then.
    fn old_retained_until(&self) -> OffsetDateTime {
        self.created_at + OLD_RETENTION
    }

    /// After the upgrade: the old promise, as the replay window.
    fn replayable_until(&self) -> OffsetDateTime {
        ceil_to_second(self.old_retained_until())
    }

    /// After the upgrade: remembered until 400 days after first use.
    fn retained_until(&self) -> OffsetDateTime {
        ceil_to_second(self.created_at + UPGRADE_HORIZON)
    }
}

/// The requests a caller would send again, per key (the current release's
/// request types; they must fingerprint as the old canonical forms did).
enum Retry {
    Create(TicketDraft),
    Update(kitchen::TicketUpdate),
    Move(TicketId, TransitionDraft),
    Comment(TicketId, CommentDraft),
}

/// What the previous release left behind.
pub(crate) struct PreviousRelease {
    /// The clock's "now" for the whole test: the old rows are placed
    /// relative to it.
    pub(crate) now: OffsetDateTime,
    pub(crate) tenant: Uuid,
    token: Uuid,
    pub(crate) secret: String,
    /// Tickets as they are now (after every change below).
    tickets: Vec<OldTicket>,
    comments: Vec<OldComment>,
    history: Vec<OldHistory>,
    records: Vec<(OldRecord, Option<Retry>)>,
}

pub(crate) const KEY_CREATE_A: &str = "r3-create-disk-full";
const KEY_UPDATE_A: &str = "r3-update-disk-full";
const KEY_MOVE_A: &str = "r3-move-disk-full";
const KEY_COMMENT_A: &str = "r3-comment-disk-full";
/// Used 40 days ago: past the 30 days the previous release promised.
const KEY_CREATE_OLD: &str = "r3-create-login-slow";
const KEY_UPDATE_OLD: &str = "r3-update-login-slow";
/// A remote create whose outcome is still open, and older than the window.
pub(crate) const KEY_UNKNOWN: &str = "r3-remote-unknown";
/// A remote create the provider refused.
const KEY_FAILED: &str = "r3-remote-failed";

/// Writes `$old`'s rows on `$pool`, whichever driver it is.
macro_rules! insert_rows {
    ($old:expr, $pool:expr) => {{
        let (old, pool) = ($old, $pool);
        let created_at = old.now - Duration::days(100);
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
                 status, created_at, provider_ticket_id, assignee, version, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, $9, $10, $11)",
            )
            .bind(t.id)
            .bind(old.tenant)
            .bind(t.project_id)
            .bind(t.title)
            .bind(t.description)
            .bind(t.priority)
            .bind(t.status)
            .bind(t.created_at)
            .bind(t.assignee)
            .bind(t.version)
            .bind(t.updated_at)
            .execute(pool)
            .await
            .expect("insert a ticket");
        }
        for c in &old.comments {
            sqlx::query(
                "INSERT INTO ticket_comments (id, tenant_id, ticket_id, body, created_at) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(c.id)
            .bind(old.tenant)
            .bind(c.ticket_id)
            .bind(c.body)
            .bind(c.created_at)
            .execute(pool)
            .await
            .expect("insert a comment");
        }
        for h in &old.history {
            sqlx::query(
                "INSERT INTO ticket_history (id, tenant_id, ticket_id, action, operation_key, \
                 actor_token_id, changes, version, recorded_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(h.id)
            .bind(old.tenant)
            .bind(h.ticket_id)
            .bind(h.action)
            .bind(h.key)
            .bind(old.token)
            .bind(&h.changes)
            .bind(h.version)
            .bind(h.recorded_at)
            .execute(pool)
            .await
            .expect("insert a history entry");
        }
        for (r, _) in &old.records {
            let ledger = r.ledger.as_ref().map(|(l, _)| l);
            sqlx::query(
                "INSERT INTO operations (tenant_id, action, operation_key, fingerprint_version, \
                 fingerprint, state, ticket_id, result_snapshot, created_at, retained_until, \
                 request_snapshot, external_ref, key_trusted_until, first_dispatched_at, \
                 last_dispatched_at, state_detail, lease_owner, lease_until_ms, next_check_ms) \
                 VALUES ($1, $2, $3, 1, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, \
                 $16, $17, $18)",
            )
            .bind(old.tenant)
            .bind(r.action.as_str())
            .bind(r.key)
            .bind(&r.fingerprint)
            .bind(r.state.as_str())
            .bind(r.ticket_id)
            .bind(r.result.as_deref())
            .bind(r.created_at)
            .bind(r.old_retained_until())
            .bind(ledger.and_then(|l| l.request_snapshot.as_deref()))
            .bind(ledger.and_then(|l| l.external_ref.as_deref()))
            .bind(ledger.and_then(|l| l.key_trusted_until))
            .bind(ledger.and_then(|l| l.first_dispatched_at))
            .bind(ledger.and_then(|l| l.last_dispatched_at))
            .bind(ledger.and_then(|l| l.state_detail.as_deref()))
            .bind(ledger.and_then(|l| l.lease_owner))
            .bind(ledger.and_then(|l| l.lease_until_ms))
            .bind(ledger.and_then(|l| l.next_check_ms))
            .execute(pool)
            .await
            .expect("insert an operation record");
            for a in r.ledger.iter().flat_map(|(_, attempts)| attempts) {
                sqlx::query(
                    "INSERT INTO operation_attempts (tenant_id, action, operation_key, \
                     attempt_no, kind, trigger, started_at, finished_at, result, detail) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                )
                .bind(old.tenant)
                .bind(r.action.as_str())
                .bind(r.key)
                .bind(a.attempt_no)
                .bind(&a.kind)
                .bind(&a.trigger)
                .bind(a.started_at)
                .bind(a.finished_at)
                .bind(a.result.as_deref())
                .bind(a.detail.as_deref())
                .execute(pool)
                .await
                .expect("insert an attempt");
            }
        }
    }};
}

impl PreviousRelease {
    pub(crate) fn new() -> Self {
        // A fraction of a second that is not whole, so that the horizons'
        // rounding up shows; microseconds, as both databases store.
        let now = OffsetDateTime::now_utc()
            .replace_microsecond(250_123)
            .expect("valid microseconds");
        let (tenant, token) = (Uuid::now_v7(), Uuid::now_v7());

        // Ticket A: made two days ago, edited, moved, commented on.
        let a_at = now - Duration::days(2);
        let (u_at, m_at, c_at) = (
            a_at + Duration::hours(1),
            a_at + Duration::hours(2),
            a_at + Duration::hours(3),
        );
        let a0 = OldTicket {
            id: Uuid::now_v7(),
            project_id: "ops",
            title: "Disk full",
            description: Some("Since 02:00,\nline two"),
            priority: "high",
            status: "open",
            created_at: a_at,
            assignee: None,
            version: 1,
            updated_at: None,
        };
        let a1 = OldTicket {
            title: "Disk full on db-1",
            assignee: Some("Ada"),
            version: 2,
            updated_at: Some(u_at),
            ..a0.clone()
        };
        let a2 = OldTicket {
            status: "in_progress",
            version: 3,
            updated_at: Some(m_at),
            ..a1.clone()
        };
        let comment = OldComment {
            id: Uuid::now_v7(),
            ticket_id: a0.id,
            body: "On it",
            created_at: c_at,
        };
        let a = a0.id;

        // Ticket B: made 40 days ago, on a whole second (the other branch
        // of the rounding), edited 5 days ago.
        let b_at = (now - Duration::days(40))
            .replace_nanosecond(0)
            .expect("zero is valid");
        let e_at = now - Duration::days(5);
        let b0 = OldTicket {
            id: Uuid::now_v7(),
            project_id: "web",
            title: "Login page slow",
            description: None,
            priority: "normal",
            status: "open",
            created_at: b_at,
            assignee: None,
            version: 1,
            updated_at: None,
        };
        let b1 = OldTicket {
            priority: "urgent",
            version: 2,
            updated_at: Some(e_at),
            ..b0.clone()
        };
        let b = b0.id;

        let history = vec![
            OldHistory {
                id: Uuid::now_v7(),
                ticket_id: a,
                action: "create_ticket",
                key: KEY_CREATE_A,
                changes: r#"{"description":{"from":null,"to":"Since 02:00,\nline two"},"priority":{"from":null,"to":"high"},"project_id":{"from":null,"to":"ops"},"status":{"from":null,"to":"open"},"title":{"from":null,"to":"Disk full"}}"#.into(),
                version: 1,
                recorded_at: a_at,
            },
            OldHistory {
                id: Uuid::now_v7(),
                ticket_id: a,
                action: "update_ticket",
                key: KEY_UPDATE_A,
                changes: r#"{"assignee":{"from":null,"to":"Ada"},"title":{"from":"Disk full","to":"Disk full on db-1"}}"#.into(),
                version: 2,
                recorded_at: u_at,
            },
            OldHistory {
                id: Uuid::now_v7(),
                ticket_id: a,
                action: "transition_ticket",
                key: KEY_MOVE_A,
                changes: r#"{"reason":{"from":null,"to":"Paged at 02:10"},"status":{"from":"open","to":"in_progress"}}"#.into(),
                version: 3,
                recorded_at: m_at,
            },
            OldHistory {
                id: Uuid::now_v7(),
                ticket_id: a,
                action: "add_comment",
                key: KEY_COMMENT_A,
                changes: format!(r#"{{"comment_id":{{"from":null,"to":"{}"}}}}"#, comment.id),
                version: 3,
                recorded_at: c_at,
            },
            OldHistory {
                id: Uuid::now_v7(),
                ticket_id: b,
                action: "create_ticket",
                key: KEY_CREATE_OLD,
                // No description: a change from nothing to nothing is not one.
                changes: r#"{"priority":{"from":null,"to":"normal"},"project_id":{"from":null,"to":"web"},"status":{"from":null,"to":"open"},"title":{"from":null,"to":"Login page slow"}}"#.into(),
                version: 1,
                recorded_at: b_at,
            },
            OldHistory {
                id: Uuid::now_v7(),
                ticket_id: b,
                action: "update_ticket",
                key: KEY_UPDATE_OLD,
                changes: r#"{"priority":{"from":"normal","to":"urgent"}}"#.into(),
                version: 2,
                recorded_at: e_at,
            },
        ];

        let local =
            |action: Action, key, canonical: String, result: String, at, ticket, resource| {
                OldRecord {
                    action,
                    key,
                    fingerprint: fingerprint(action.as_str(), &canonical),
                    state: OperationState::Succeeded,
                    ticket_id: Some(ticket),
                    result: Some(result),
                    created_at: at,
                    resource_id: Some(resource),
                    ledger: None,
                }
            };
        let (ta, tb) = (a0.ticket_id(), b0.ticket_id());
        let mut records = vec![
            (
                local(
                    Action::CreateTicket,
                    KEY_CREATE_A,
                    r#"{"description":"Since 02:00,\nline two","priority":"high","project_id":"ops","title":"Disk full"}"#.into(),
                    a0.json(),
                    a_at,
                    a,
                    a,
                ),
                Some(Retry::Create(TicketDraft {
                    project_id: Some("ops".into()),
                    title: Some("Disk full".into()),
                    description: Some("Since 02:00,\nline two".into()),
                    priority: Some("high".into()),
                })),
            ),
            (
                local(
                    Action::UpdateTicket,
                    KEY_UPDATE_A,
                    format!(
                        r#"{{"assignee":{{"Set":"Ada"}},"description":"Keep","expected_version":1,"priority":"Keep","ticket_id":"{a}","title":{{"Set":"Disk full on db-1"}}}}"#
                    ),
                    a1.json(),
                    u_at,
                    a,
                    a,
                ),
                Some(Retry::Update(update_at(
                    ta,
                    1,
                    r#"{"title": "Disk full on db-1", "assignee": "Ada"}"#,
                ))),
            ),
            (
                local(
                    Action::TransitionTicket,
                    KEY_MOVE_A,
                    format!(r#"{{"reason":"Paged at 02:10","ticket_id":"{a}","to":"in_progress"}}"#),
                    a2.json(),
                    m_at,
                    a,
                    a,
                ),
                Some(Retry::Move(
                    ta,
                    TransitionDraft {
                        to: Some("in_progress".into()),
                        reason: Some("Paged at 02:10".into()),
                    },
                )),
            ),
            (
                local(
                    Action::AddComment,
                    KEY_COMMENT_A,
                    format!(r#"{{"body":"On it","ticket_id":"{a}"}}"#),
                    comment.json(),
                    c_at,
                    a,
                    comment.id,
                ),
                Some(Retry::Comment(ta, say("On it"))),
            ),
            (
                local(
                    Action::CreateTicket,
                    KEY_CREATE_OLD,
                    r#"{"description":null,"priority":"normal","project_id":"web","title":"Login page slow"}"#.into(),
                    b0.json(),
                    b_at,
                    b,
                    b,
                ),
                Some(Retry::Create(TicketDraft {
                    project_id: Some("web".into()),
                    title: Some("Login page slow".into()),
                    ..TicketDraft::default()
                })),
            ),
            (
                local(
                    Action::UpdateTicket,
                    KEY_UPDATE_OLD,
                    format!(
                        r#"{{"assignee":"Keep","description":"Keep","expected_version":null,"priority":{{"Set":"urgent"}},"ticket_id":"{b}","title":"Keep"}}"#
                    ),
                    b1.json(),
                    e_at,
                    b,
                    b,
                ),
                Some(Retry::Update(update(tb, r#"{"priority": "urgent"}"#))),
            ),
        ];

        // The remote backend's rows: an effect whose outcome is still open
        // (older than the window: it must never expire or be swept), with
        // two attempts, and one the provider refused.
        let x_at = now - Duration::days(40) - Duration::hours(1);
        let remote_canonical = r#"{"description":null,"priority":"normal","project_id":"ops","title":"Made elsewhere"}"#;
        records.push((
            OldRecord {
                action: Action::CreateTicket,
                key: KEY_UNKNOWN,
                fingerprint: fingerprint("create_ticket", remote_canonical),
                state: OperationState::Unknown,
                ticket_id: None,
                result: None,
                created_at: x_at,
                resource_id: None,
                ledger: Some((
                    Ledger {
                        state: "unknown".into(),
                        state_detail: Some("the provider did not answer within 10s".into()),
                        request_snapshot: Some(remote_canonical.into()),
                        external_ref: Some(format!("rst1-{}", "ab12".repeat(10))),
                        key_trusted_until: Some(x_at + Duration::hours(24)),
                        first_dispatched_at: Some(x_at),
                        last_dispatched_at: Some(x_at + Duration::minutes(10)),
                        lease_owner: None,
                        lease_until_ms: None,
                        next_check_ms: Some(
                            i64::try_from(
                                (now + Duration::hours(1)).unix_timestamp_nanos() / 1_000_000,
                            )
                            .expect("fits"),
                        ),
                    },
                    vec![
                        Attempt {
                            attempt_no: 1,
                            kind: "dispatch".into(),
                            trigger: "request".into(),
                            started_at: x_at,
                            finished_at: Some(x_at + Duration::seconds(10)),
                            result: Some("ambiguous".into()),
                            detail: Some("timed out after 10s".into()),
                        },
                        Attempt {
                            attempt_no: 2,
                            kind: "lookup".into(),
                            trigger: "background".into(),
                            started_at: x_at + Duration::minutes(10),
                            finished_at: Some(x_at + Duration::minutes(10) + Duration::seconds(1)),
                            result: Some("lookup_failed".into()),
                            detail: Some("503 Service Unavailable".into()),
                        },
                    ],
                )),
            },
            None,
        ));
        let f_at = now - Duration::days(1);
        let refused_canonical = r#"{"description":null,"priority":"low","project_id":"ops","title":"Refused upstream"}"#;
        records.push((
            OldRecord {
                action: Action::CreateTicket,
                key: KEY_FAILED,
                fingerprint: fingerprint("create_ticket", refused_canonical),
                state: OperationState::FailedBeforeEffect,
                ticket_id: None,
                result: None,
                created_at: f_at,
                resource_id: None,
                ledger: Some((
                    Ledger {
                        state: "failed_before_effect".into(),
                        state_detail: Some("the provider refused the request: 422".into()),
                        request_snapshot: Some(refused_canonical.into()),
                        external_ref: Some(format!("rst1-{}", "cd34".repeat(10))),
                        key_trusted_until: Some(f_at + Duration::hours(24)),
                        first_dispatched_at: Some(f_at),
                        last_dispatched_at: Some(f_at),
                        lease_owner: None,
                        lease_until_ms: None,
                        next_check_ms: None,
                    },
                    vec![Attempt {
                        attempt_no: 1,
                        kind: "dispatch".into(),
                        trigger: "request".into(),
                        started_at: f_at,
                        finished_at: Some(f_at + Duration::milliseconds(80)),
                        result: Some("rejected".into()),
                        detail: Some("422 Unprocessable Entity".into()),
                    }],
                )),
            },
            None,
        ));

        Self {
            now,
            tenant,
            token,
            secret: format!("tkt_{}", "6b".repeat(32)),
            tickets: vec![a2, b1],
            comments: vec![comment],
            history,
            records,
        }
    }

    pub(crate) fn record(&self, key: &str) -> &OldRecord {
        &self
            .records
            .iter()
            .find(|(r, _)| r.key == key)
            .expect("a record of the fill")
            .0
    }

    /// Migrates the database to the previous release with sqlx's migrator,
    /// then writes every row with that release's columns.
    pub(crate) async fn fill(&self, db: &TestDatabase) {
        let raw = Raw::open(db).await;
        raw.migrate_to(db, PREVIOUS_RELEASE).await;
        assert_eq!(
            raw.applied().await,
            [1, 2, 3],
            "what the previous release applied"
        );
        on_raw!(&raw, pool => insert_rows!(self, pool));
        raw.close().await;
    }
}

const SELECT_LEDGER: &str = "SELECT state, state_detail, request_snapshot, external_ref, \
     key_trusted_until, first_dispatched_at, last_dispatched_at, lease_owner, lease_until_ms, \
     next_check_ms FROM operations WHERE tenant_id = $1 AND action = $2 AND operation_key = $3";

const SELECT_ATTEMPTS: &str = "SELECT attempt_no, kind, trigger, started_at, finished_at, result, \
     detail FROM operation_attempts WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 \
     ORDER BY attempt_no";

/// The effect ledger of `record`, as stored.
async fn ledger(raw: &Raw, tenant: Uuid, record: &OldRecord) -> (Ledger, Vec<Attempt>) {
    on_raw!(raw, pool => {
        let ledger = sqlx::query_as::<_, Ledger>(SELECT_LEDGER)
            .bind(tenant)
            .bind(record.action.as_str())
            .bind(record.key)
            .fetch_one(pool)
            .await
            .expect("read the ledger");
        let attempts = sqlx::query_as::<_, Attempt>(SELECT_ATTEMPTS)
            .bind(tenant)
            .bind(record.action.as_str())
            .bind(record.key)
            .fetch_all(pool)
            .await
            .expect("read the attempts");
        (ledger, attempts)
    })
}

/// Every remote effect's ledger and attempts are as the previous release
/// left them.
pub(crate) async fn effects_are_untouched(raw: &Raw, old: &PreviousRelease) {
    for (r, _) in &old.records {
        if let Some(expected) = &r.ledger {
            assert_eq!(&ledger(raw, old.tenant, r).await, expected, "{}", r.key);
        }
    }
}

/// Every ticket, comment and history entry reads back as it was written.
pub(crate) async fn everything_reads_back(
    kitchen: &Kitchen,
    old: &PreviousRelease,
    tenant: kitchen::TenantId,
    others: usize,
) {
    let page = kitchen
        .list_tickets(tenant, &TicketFilter::default(), PageSize::DEFAULT, None)
        .await
        .expect("list");
    assert_eq!(page.tickets.len(), old.tickets.len() + others);
    for t in &old.tickets {
        let ticket = kitchen
            .ticket(tenant, t.ticket_id())
            .await
            .expect("read")
            .expect("the old ticket is there");
        // The JSON is the whole ticket, every field in its place.
        assert_eq!(serde_json::to_string(&ticket).expect("json"), t.json());
        assert!(page.tickets.contains(&ticket));

        let said: Vec<String> = comments(kitchen, tenant, t.ticket_id())
            .await
            .iter()
            .map(|c| serde_json::to_string(c).expect("json"))
            .collect();
        let written: Vec<String> = old
            .comments
            .iter()
            .filter(|c| c.ticket_id == t.id)
            .map(OldComment::json)
            .collect();
        assert_eq!(said, written, "the comments of {}", t.title);

        let entries = history(kitchen, tenant, t.ticket_id()).await;
        let written: Vec<&OldHistory> =
            old.history.iter().filter(|h| h.ticket_id == t.id).collect();
        assert_eq!(entries.len(), written.len(), "the history of {}", t.title);
        for (e, h) in entries.iter().zip(written) {
            assert_eq!(e.id, h.id);
            assert_eq!(e.ticket_id, t.ticket_id());
            assert_eq!(e.action.as_str(), h.action);
            assert_eq!(e.operation_key.as_str(), h.key);
            assert_eq!(e.actor_token_id, Some(TokenId::from(old.token)));
            assert_eq!(serde_json::to_string(&e.changes).expect("json"), h.changes);
            assert_eq!(e.version.get(), h.version);
            assert_eq!(e.recorded_at, h.recorded_at);
        }
    }
}

/// Every record keeps what it had and gained its lifecycle columns; the
/// one named `swept`, if any, is a tombstone.
pub(crate) async fn records_read_back(
    kitchen: &Kitchen,
    old: &PreviousRelease,
    tenant: kitchen::TenantId,
    swept: Option<&str>,
) {
    for (r, _) in &old.records {
        let record: OperationRecord = kitchen
            .operation(tenant, r.action, &r.key())
            .await
            .expect("lookup")
            .expect("the old record is kept");
        let key = r.key;
        assert_eq!(record.state, r.state, "{key}");
        assert_eq!(record.fingerprint.version(), 1, "{key}");
        assert_eq!(record.fingerprint.hex(), r.fingerprint, "{key}");
        assert_eq!(record.ticket_id.map(|t| t.as_uuid()), r.ticket_id, "{key}");
        assert_eq!(record.created_at, r.created_at, "{key}");
        assert_eq!(record.resource_id, r.resource_id, "{key}: resource_id");
        assert_eq!(
            record.replayable_until,
            r.replayable_until(),
            "{key}: replayable_until"
        );
        assert_eq!(
            record.retained_until,
            r.retained_until(),
            "{key}: retained_until"
        );
        if swept == Some(key) {
            assert_eq!(record.result, None, "{key}: a tombstone keeps no answer");
            assert!(
                record.tombstoned_at.is_some_and(|t| t <= old.now),
                "{key}: tombstoned_at {:?}",
                record.tombstoned_at
            );
        } else {
            assert_eq!(
                record.result.as_ref().map(|s| s.as_str()),
                r.result.as_deref(),
                "{key}: the frozen answer, byte for byte"
            );
            assert_eq!(record.tombstoned_at, None, "{key}: tombstoned_at");
        }
        let status = kitchen
            .operation_status(tenant, r.action, &r.key())
            .await
            .expect("status")
            .expect("a known key");
        let expected = if r.state == OperationState::Succeeded && r.replayable_until() <= old.now {
            KeyPhase::Expired
        } else {
            // An effect still unknown never expires, however old.
            KeyPhase::Replayable
        };
        assert_eq!(status.phase, expected, "{key}");
    }
}

/// A retry with an old key and its same request: within the window the
/// old answer, byte for byte; past it `expired`, with the resource as it
/// is now.
fn answers_as_before<T: std::fmt::Debug + Serialize>(
    old: &PreviousRelease,
    r: &OldRecord,
    outcome: Outcome<T>,
) {
    let key = r.key;
    let operation = if r.replayable_until() > old.now {
        let Receipt {
            snapshot,
            operation,
            ..
        } = replayed(outcome);
        assert_eq!(
            Some(snapshot.as_str()),
            r.result.as_deref(),
            "{key}: replayed bytes"
        );
        operation.reference()
    } else {
        let Expired { current, operation } = match outcome {
            Outcome::Expired(expired) => expired,
            other => panic!("{key}: expected expired, got {other:?}"),
        };
        let current = serde_json::to_string(&current).expect("json");
        let resource = r.resource_id.expect("a succeeded record has a resource");
        let now = old
            .tickets
            .iter()
            .find(|t| t.id == resource)
            .map(OldTicket::json)
            .or_else(|| {
                old.comments
                    .iter()
                    .find(|c| c.id == resource)
                    .map(OldComment::json)
            })
            .expect("the resource of the fill");
        assert_eq!(current, now, "{key}: the resource as it is now");
        assert_ne!(
            Some(current.as_str()),
            r.result.as_deref(),
            "{key}: not the old answer"
        );
        operation
    };
    assert_eq!(operation.key.as_str(), key);
    assert_eq!(operation.created_at, r.created_at, "{key}");
    assert_eq!(
        operation.resource.map(|t| t.as_uuid()),
        r.ticket_id,
        "{key}"
    );
    assert_eq!(operation.replayable_until, r.replayable_until(), "{key}");
    assert_eq!(operation.retained_until, r.retained_until(), "{key}");
}

/// Retries every old key that has a request to send again.
async fn every_old_key_answers(kitchen: &Kitchen, old: &PreviousRelease, actor: kitchen::Actor) {
    for (r, retry) in &old.records {
        let key = r.key();
        match retry {
            None => {}
            Some(Retry::Create(draft)) => answers_as_before(
                old,
                r,
                kitchen
                    .write::<CreateTicket>(actor, &key, draft)
                    .await
                    .expect("retry"),
            ),
            Some(Retry::Update(edit)) => answers_as_before(
                old,
                r,
                kitchen
                    .write::<UpdateTicket>(actor, &key, edit)
                    .await
                    .expect("retry"),
            ),
            Some(Retry::Move(ticket, to)) => answers_as_before(
                old,
                r,
                kitchen
                    .write::<TransitionTicket>(actor, &key, &((*ticket).into(), to.clone()))
                    .await
                    .expect("retry"),
            ),
            Some(Retry::Comment(ticket, body)) => answers_as_before(
                old,
                r,
                kitchen
                    .write::<AddComment>(actor, &key, &((*ticket).into(), body.clone()))
                    .await
                    .expect("retry"),
            ),
        }
    }
}

async fn a_previous_release_database_upgrades_to_the_key_lifecycle(db: TestDatabase) {
    let old = PreviousRelease::new();
    old.fill(&db).await;

    // The clock stands at the fill's "now": the old rows were placed
    // relative to it.
    let clock = Clock::manual(old.now);
    let kitchen = Kitchen::connect(
        db.url(),
        KitchenConfig {
            clock: clock.clone(),
            ..KitchenConfig::default()
        },
    )
    .await
    .expect("connect applies the pending migrations");
    let raw = Raw::open(&db).await;
    assert_eq!(raw.applied().await, Raw::every_migration(&db).await);

    let caller: Caller = kitchen
        .authenticate(&old.secret)
        .await
        .expect("auth")
        .expect("the old token still authenticates");
    assert_eq!(caller.tenant.id.as_uuid(), old.tenant);
    let tenant = caller.tenant.id;
    let actor = kitchen::Actor::from(&caller);

    everything_reads_back(&kitchen, &old, tenant, 0).await;
    records_read_back(&kitchen, &old, tenant, None).await;
    effects_are_untouched(&raw, &old).await;

    every_old_key_answers(&kitchen, &old, actor).await;
    // Another request under the expired key still conflicts, and names the
    // original's horizons.
    let expired = old.record(KEY_CREATE_OLD);
    let original = conflict(
        kitchen
            .write::<CreateTicket>(
                actor,
                &expired.key(),
                &crate::support::draft("web", "Other"),
            )
            .await
            .expect("create"),
    );
    assert_eq!(original.replayable_until, expired.replayable_until());
    assert_eq!(original.retained_until, expired.retained_until());
    // Retries wrote nothing.
    everything_reads_back(&kitchen, &old, tenant, 0).await;
    records_read_back(&kitchen, &old, tenant, None).await;
    effects_are_untouched(&raw, &old).await;

    // The sweep: the 40-day-old record becomes a tombstone; the unknown
    // effect, as old, is not touched; the rest is within its window.
    let report = kitchen.sweeper().sweep_batch().await.expect("sweep");
    assert_eq!(
        report,
        SweepReport {
            tombstoned: 1,
            deleted: 0
        }
    );
    records_read_back(&kitchen, &old, tenant, Some(KEY_CREATE_OLD)).await;
    effects_are_untouched(&raw, &old).await;
    every_old_key_answers(&kitchen, &old, actor).await;
    everything_reads_back(&kitchen, &old, tenant, 0).await;
    assert_eq!(
        kitchen.sweeper().sweep_batch().await.expect("sweep"),
        SweepReport::default(),
        "nothing else is due"
    );

    // The old key is remembered until 400 days after its first use, and
    // only then forgotten.
    clock.set(expired.retained_until() - Duration::SECOND);
    assert_eq!(
        kitchen
            .operation_status(tenant, Action::CreateTicket, &expired.key())
            .await
            .expect("status")
            .map(|s| s.phase),
        Some(KeyPhase::Expired)
    );
    clock.set(expired.retained_until());
    assert_eq!(
        kitchen
            .operation_status(tenant, Action::CreateTicket, &expired.key())
            .await
            .expect("status")
            .map(|s| s.phase),
        None
    );

    raw.close().await;
    kitchen.close().await;
}

kitchen::on_both_databases!(a_previous_release_database_upgrades_to_the_key_lifecycle);
