//! Shared helpers for the kitchen tests.

use kitchen::actions::CreateTicket;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use kitchen::fake_provider::FakeProvider;

use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{
    Actor, Caller, Comment, CommentDraft, FieldViolation, HistoryEntry, Kitchen, LabelDraft,
    OperationKey, OperationRef, Outcome, PageSize, Receipt, Refusal, RemoteSettings, Tenant,
    TenantId, Ticket, TicketBackend, TicketDraft, TicketFilter, TicketId, TicketPatch,
    TicketUpdate, TransitionDraft, Version,
};

/// A fresh operation key, as a caller would mint one.
pub fn fresh_key() -> OperationKey {
    OperationKey::parse(uuid::Uuid::now_v7().to_string()).expect("a UUID is a good key")
}

/// A valid draft for `project` with `title`.
pub fn draft(project: &str, title: &str) -> TicketDraft {
    TicketDraft {
        project_id: Some(project.into()),
        title: Some(title.into()),
        ..TicketDraft::default()
    }
}

/// How many tickets the tenant has, read from the database (ground truth),
/// not from any create's answer.
pub async fn ticket_count(kitchen: &Kitchen, tenant: TenantId) -> usize {
    let mut count = 0;
    let mut cursor = None;
    loop {
        let page = kitchen
            .list_tickets(
                tenant,
                &TicketFilter::default(),
                PageSize::parse(PageSize::MAX).expect("max"),
                cursor,
            )
            .await
            .expect("list tickets");
        count += page.tickets.len();
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return count,
        }
    }
}

/// The receipt of a `Created` outcome; panics on anything else.
pub fn created<T: Debug>(outcome: Outcome<T>) -> Receipt<T> {
    match outcome {
        Outcome::Created(receipt) => receipt,
        other => panic!("expected created, got {other:?}"),
    }
}

/// The receipt of a `Replayed` outcome; panics on anything else.
pub fn replayed<T: Debug>(outcome: Outcome<T>) -> Receipt<T> {
    match outcome {
        Outcome::Replayed(receipt) => receipt,
        other => panic!("expected replayed, got {other:?}"),
    }
}

/// The original of a `Conflict` outcome; panics on anything else.
pub fn conflict<T: Debug>(outcome: Outcome<T>) -> OperationRef {
    match outcome {
        Outcome::Conflict { original } => original,
        other => panic!("expected conflict, got {other:?}"),
    }
}

/// The violations of an `Invalid` outcome; panics on anything else.
pub fn invalid<T: Debug>(outcome: Outcome<T>) -> Vec<FieldViolation> {
    match outcome {
        Outcome::Invalid { violations } => violations,
        other => panic!("expected invalid, got {other:?}"),
    }
}

/// The refusal of a `Refused` outcome; panics on anything else.
pub fn refused<T: Debug>(outcome: Outcome<T>) -> Refusal {
    match outcome {
        Outcome::Refused(refusal) => refusal,
        other => panic!("expected refused, got {other:?}"),
    }
}

/// An id no ticket has.
pub fn unknown_ticket() -> TicketId {
    uuid::Uuid::now_v7()
        .to_string()
        .parse()
        .expect("a UUID is a ticket id")
}

/// A merge patch, parsed the way a door parses a request body.
pub fn patch(json: &str) -> TicketPatch {
    serde_json::from_str(json).expect("a well-formed patch")
}

/// An update of `ticket` by the merge patch `json`, at any version.
pub fn update(ticket: TicketId, json: &str) -> TicketUpdate {
    TicketUpdate {
        ticket_id: ticket,
        expected_version: None,
        patch: patch(json),
    }
}

/// An update of `ticket` by the merge patch `json`, only at `version`.
pub fn update_at(ticket: TicketId, version: i64, json: &str) -> TicketUpdate {
    TicketUpdate {
        expected_version: Some(Version::parse(version, "expected_version").expect("a version")),
        ..update(ticket, json)
    }
}

/// A transition to `to`, without a reason.
pub fn move_to(to: &str) -> TransitionDraft {
    TransitionDraft {
        to: Some(to.into()),
        reason: None,
    }
}

/// A label change naming `label`.
pub fn label(label: &str) -> LabelDraft {
    LabelDraft {
        label: Some(label.into()),
    }
}

/// A comment saying `body`.
pub fn say(body: &str) -> CommentDraft {
    CommentDraft {
        body: Some(body.into()),
    }
}

/// One tenant, authenticated the way a door does it, with one ticket.
pub struct Desk {
    pub kitchen: Kitchen,
    pub tenant: Tenant,
    /// Who writes: the tenant and its token, so history records the token.
    pub actor: Actor,
    /// A fresh ticket (`ops`, "Disk full", no description), version 1.
    pub ticket: Ticket,
}

impl Desk {
    /// A kitchen on `db`, a tenant named `acme` and one fresh ticket.
    pub async fn new(db: &TestDatabase) -> Self {
        Self::on(db.kitchen().await, "acme").await
    }

    /// A tenant named `name` on `kitchen`, with one fresh ticket.
    pub async fn on(kitchen: Kitchen, name: &str) -> Self {
        let (tenant, token) = tenant_with_token(&kitchen, name).await;
        let caller: Caller = kitchen
            .authenticate(&token.secret)
            .await
            .expect("database reachable")
            .expect("a fresh token authenticates");
        let actor = Actor::from(&caller);
        let ticket = created(
            kitchen
                .write::<CreateTicket>(actor, &fresh_key(), &draft("ops", "Disk full"))
                .await
                .expect("create"),
        )
        .result;
        Self {
            kitchen,
            tenant,
            actor,
            ticket,
        }
    }

    /// The ticket as stored now.
    pub async fn current(&self, id: TicketId) -> Ticket {
        self.kitchen
            .ticket(self.tenant.id, id)
            .await
            .expect("read")
            .expect("the ticket exists")
    }

    /// Every history entry of `ticket`, oldest first.
    pub async fn history(&self, ticket: TicketId) -> Vec<HistoryEntry> {
        history(&self.kitchen, self.tenant.id, ticket).await
    }

    /// Every comment of `ticket`, oldest first.
    pub async fn comments(&self, ticket: TicketId) -> Vec<Comment> {
        comments(&self.kitchen, self.tenant.id, ticket).await
    }

    /// Whether `key` of `action` is still unused: nothing is recorded for it.
    pub async fn unused(&self, action: kitchen::Action, key: &OperationKey) -> bool {
        self.kitchen
            .operation(self.tenant.id, action, key)
            .await
            .expect("lookup")
            .is_none()
    }
}

/// Every history entry of `ticket`, oldest first, read page by page.
pub async fn history(kitchen: &Kitchen, tenant: TenantId, ticket: TicketId) -> Vec<HistoryEntry> {
    let mut entries = Vec::new();
    let mut cursor = None;
    loop {
        let page = kitchen
            .ticket_history(tenant, ticket, PageSize::DEFAULT, cursor)
            .await
            .expect("read history")
            .expect("the ticket exists");
        entries.extend(page.entries);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return entries,
        }
    }
}

/// Every comment of `ticket`, oldest first, read page by page.
pub async fn comments(kitchen: &Kitchen, tenant: TenantId, ticket: TicketId) -> Vec<Comment> {
    let mut all = Vec::new();
    let mut cursor = None;
    loop {
        let page = kitchen
            .list_comments(tenant, ticket, PageSize::DEFAULT, cursor)
            .await
            .expect("read comments")
            .expect("the ticket exists");
        all.extend(page.comments);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return all,
        }
    }
}

/// What a write answers while a test's key holder holds its key past the
/// wait bound. On PostgreSQL the holder holds the key's row, and the write
/// answers `InProgress`. On SQLite it holds the database file's write lock,
/// as another program would (a backup, an operator's `sqlite3`): a storage
/// fault, `Locked`, with nothing written.
pub fn assert_held<T: std::fmt::Debug>(
    backend: kitchen::testing::DatabaseKind,
    answer: Result<Outcome<T>, kitchen::KitchenError>,
) {
    match backend {
        kitchen::testing::DatabaseKind::Postgres => assert!(
            matches!(answer, Ok(Outcome::InProgress { .. })),
            "expected in progress, got {answer:?}"
        ),
        kitchen::testing::DatabaseKind::Sqlite => {
            let fault = answer.as_ref().err().and_then(|e| e.storage_fault());
            assert_eq!(
                fault,
                Some((kitchen::StorageFault::Locked, kitchen::Written::Nothing)),
                "expected the file locked with nothing written, got {answer:?}"
            );
        }
    }
}

/// Remote-backend settings for tests: no key-honouring window at the
/// provider, a call that ends within half a second, a reconciler that looks
/// every 50 ms, and a call left in flight for `max_inflight` before the
/// reconciler asks about it.
pub fn remote_settings(max_inflight: Duration) -> RemoteSettings {
    RemoteSettings {
        dedup_window: Duration::ZERO,
        max_inflight,
        call_timeout: Duration::from_millis(500),
        reconcile_every: Duration::from_millis(50),
        ..RemoteSettings::default()
    }
}

/// The remote backend over `provider`, with [`remote_settings`].
pub fn remote_backend(provider: &FakeProvider, max_inflight: Duration) -> TicketBackend {
    TicketBackend::Remote {
        provider: Arc::new(provider.clone()),
        settings: remote_settings(max_inflight),
    }
}
