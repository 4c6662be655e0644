//! Rows as the databases return them, and their conversion into domain
//! values. A row that does not convert is a corrupt record, never a panic.

use time::OffsetDateTime;
use uuid::Uuid;

use super::shared_text;
use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::change::Changes;
use crate::domain::comment::{Comment, CommentBody, CommentId};
use crate::domain::effect::{AttemptKind, AttemptResult, EffectAttempt, Trigger};
use crate::domain::fingerprint::Fingerprint;
use crate::domain::history::HistoryEntry;
use crate::domain::label::Labels;
use crate::domain::operation::{OperationKey, OperationRecord, OperationState, ResultSnapshot};
use crate::domain::status::TicketStatus;
use crate::domain::tenant::TokenId;
use crate::domain::tenant::{Tenant, TenantId, TenantName};
use crate::domain::ticket::{
    Assignee, Description, Priority, ProjectId, Ticket, TicketId, Title, Version,
};

#[derive(sqlx::FromRow)]
pub(crate) struct OperationRow {
    tenant_id: Uuid,
    action: String,
    operation_key: String,
    fingerprint_version: i16,
    fingerprint: String,
    state: String,
    ticket_id: Option<Uuid>,
    result_snapshot: Option<String>,
    /// Set when the snapshot is stored around its ticket's description
    /// (`shared_text.rs`).
    result_snapshot_tail: Option<String>,
    /// That description, read with it.
    shared_description: Option<String>,
    resource_id: Option<Uuid>,
    created_at: OffsetDateTime,
    /// NULL only if a row was written after migration 0004 by a release
    /// that did not know the column; such a row replays until
    /// `retained_until`, which is what that release promised.
    replayable_until: Option<OffsetDateTime>,
    retained_until: OffsetDateTime,
    tombstoned_at: Option<OffsetDateTime>,
}

/// The columns [`OperationRow`] reads, as a literal for `concat!` (sqlx only
/// takes `'static` SQL text, which keeps user input out of it).
macro_rules! operation_columns {
    () => {
        concat!(
            "tenant_id, action, operation_key, fingerprint_version, fingerprint, state, \
             ticket_id, result_snapshot, result_snapshot_tail, resource_id, created_at, \
             replayable_until, retained_until, tombstoned_at, ",
            $crate::store::shared_text::shared_description!("operations", "result_snapshot_tail")
        )
    };
}
pub(crate) use operation_columns;

fn corrupt(what: &str, detail: impl std::fmt::Display) -> KitchenError {
    KitchenError::CorruptRecord(format!("{what}: {detail}"))
}

impl TryFrom<OperationRow> for OperationRecord {
    type Error = KitchenError;

    fn try_from(row: OperationRow) -> Result<Self, Self::Error> {
        Ok(OperationRecord {
            tenant_id: TenantId::from_uuid(row.tenant_id),
            action: Action::parse(&row.action)
                .ok_or_else(|| corrupt("operation action", &row.action))?,
            key: OperationKey::parse(row.operation_key).map_err(|e| corrupt("operation key", e))?,
            fingerprint: Fingerprint::from_stored(row.fingerprint_version, row.fingerprint),
            state: OperationState::parse(&row.state)
                .ok_or_else(|| corrupt("operation state", &row.state))?,
            ticket_id: row.ticket_id.map(TicketId::from_uuid),
            result: row
                .result_snapshot
                .map(|head| {
                    shared_text::join(head, row.result_snapshot_tail, row.shared_description)
                })
                .transpose()?
                .map(ResultSnapshot::from_stored),
            resource_id: row.resource_id,
            created_at: row.created_at,
            replayable_until: row.replayable_until.unwrap_or(row.retained_until),
            retained_until: row.retained_until,
            tombstoned_at: row.tombstoned_at,
        })
    }
}

/// An operation row with its effect-ledger columns (remote backend).
#[derive(sqlx::FromRow)]
pub(crate) struct EffectRow {
    #[sqlx(flatten)]
    pub(crate) operation: OperationRow,
    pub(crate) request_snapshot: Option<String>,
    pub(crate) external_ref: Option<String>,
    pub(crate) key_trusted_until: Option<OffsetDateTime>,
    pub(crate) first_dispatched_at: Option<OffsetDateTime>,
    pub(crate) last_dispatched_at: Option<OffsetDateTime>,
    pub(crate) state_detail: Option<String>,
    /// The provider's ids of copies of the effect besides the original,
    /// comma-separated; `None` when the provider holds it once.
    pub(crate) provider_duplicates: Option<String>,
    /// When the reconciler looks next (Unix ms); `None` once settled, or
    /// for an `unknown` effect, once given up on.
    pub(crate) next_check_ms: Option<i64>,
}

/// The effect columns [`EffectRow`] reads besides the operation's.
macro_rules! effect_columns {
    () => {
        "request_snapshot, external_ref, key_trusted_until, first_dispatched_at, \
         last_dispatched_at, state_detail, provider_duplicates, next_check_ms"
    };
}
pub(crate) use effect_columns;

#[derive(sqlx::FromRow)]
pub(crate) struct AttemptRow {
    attempt_no: i32,
    kind: String,
    trigger: String,
    started_at: OffsetDateTime,
    finished_at: Option<OffsetDateTime>,
    result: Option<String>,
    detail: Option<String>,
}

impl TryFrom<AttemptRow> for EffectAttempt {
    type Error = KitchenError;

    fn try_from(row: AttemptRow) -> Result<Self, Self::Error> {
        Ok(EffectAttempt {
            number: row.attempt_no,
            kind: AttemptKind::parse(&row.kind)
                .ok_or_else(|| corrupt("attempt kind", &row.kind))?,
            trigger: Trigger::parse(&row.trigger)
                .ok_or_else(|| corrupt("attempt trigger", &row.trigger))?,
            started_at: row.started_at,
            finished_at: row.finished_at,
            result: row
                .result
                .map(|r| AttemptResult::parse(&r).ok_or_else(|| corrupt("attempt result", &r)))
                .transpose()?,
            detail: row.detail,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct TicketRow {
    id: Uuid,
    project_id: String,
    title: String,
    description: Option<String>,
    priority: String,
    status: String,
    created_at: OffsetDateTime,
    provider_ticket_id: Option<String>,
    assignee: Option<String>,
    version: i64,
    updated_at: Option<OffsetDateTime>,
    labels: String,
}

/// The columns [`TicketRow`] reads, as a literal for `concat!`.
macro_rules! ticket_columns {
    () => {
        "id, project_id, title, description, priority, status, created_at, provider_ticket_id, \
         assignee, version, updated_at, labels"
    };
}
pub(crate) use ticket_columns;

impl TryFrom<TicketRow> for Ticket {
    type Error = KitchenError;

    fn try_from(row: TicketRow) -> Result<Self, Self::Error> {
        Ok(Ticket {
            id: TicketId::from_uuid(row.id),
            project_id: ProjectId::parse(row.project_id)
                .map_err(|v| corrupt("ticket", v.message))?,
            title: Title::parse(row.title).map_err(|v| corrupt("ticket", v.message))?,
            description: match row.description {
                Some(d) => Description::from_stored(d).map_err(|v| corrupt("ticket", v.message))?,
                None => None,
            },
            priority: Priority::parse(&row.priority).map_err(|v| corrupt("ticket", v.message))?,
            status: TicketStatus::parse(&row.status)
                .ok_or_else(|| corrupt("ticket status", &row.status))?,
            created_at: row.created_at,
            provider_ticket_id: row.provider_ticket_id,
            assignee: row
                .assignee
                .map(Assignee::parse)
                .transpose()
                .map_err(|v| corrupt("ticket", v.message))?,
            version: Version::from_stored(row.version),
            updated_at: row.updated_at,
            labels: Labels::from_stored(&row.labels)
                .map_err(|why| corrupt("ticket labels", why))?,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct TenantRow {
    id: Uuid,
    name: String,
    created_at: OffsetDateTime,
}

impl TryFrom<TenantRow> for Tenant {
    type Error = KitchenError;

    fn try_from(row: TenantRow) -> Result<Self, Self::Error> {
        Ok(Tenant {
            id: TenantId::from_uuid(row.id),
            name: TenantName::parse(row.name).map_err(|e| corrupt("tenant name", e))?,
            created_at: row.created_at,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct CommentRow {
    id: Uuid,
    ticket_id: Uuid,
    body: String,
    created_at: OffsetDateTime,
    provider_comment_id: Option<String>,
}

impl From<CommentRow> for Comment {
    fn from(row: CommentRow) -> Self {
        Comment {
            id: CommentId::from_uuid(row.id),
            ticket_id: TicketId::from_uuid(row.ticket_id),
            body: CommentBody::from_stored(row.body),
            created_at: row.created_at,
            provider_comment_id: row.provider_comment_id,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct HistoryRow {
    id: Uuid,
    ticket_id: Uuid,
    action: String,
    operation_key: String,
    actor_token_id: Option<Uuid>,
    changes: String,
    /// Set when the changes are stored around the ticket's description
    /// (`shared_text.rs`).
    changes_tail: Option<String>,
    /// That description, read with it.
    shared_description: Option<String>,
    version: i64,
    recorded_at: OffsetDateTime,
}

impl TryFrom<HistoryRow> for HistoryEntry {
    type Error = KitchenError;

    fn try_from(row: HistoryRow) -> Result<Self, Self::Error> {
        Ok(HistoryEntry {
            id: row.id,
            ticket_id: TicketId::from_uuid(row.ticket_id),
            action: Action::parse(&row.action)
                .ok_or_else(|| corrupt("history action", &row.action))?,
            operation_key: OperationKey::parse(row.operation_key)
                .map_err(|e| corrupt("history operation key", e))?,
            actor_token_id: row.actor_token_id.map(TokenId::from_uuid),
            changes: serde_json::from_str::<Changes>(&shared_text::join(
                row.changes,
                row.changes_tail,
                row.shared_description,
            )?)
            .map_err(|e| corrupt("history changes", e))?,
            version: Version::from_stored(row.version),
            recorded_at: row.recorded_at,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct TokenRow {
    id: Uuid,
    scopes: String,
    created_at: OffsetDateTime,
    revoked_at: Option<OffsetDateTime>,
}

impl TryFrom<TokenRow> for crate::domain::tenant::TokenInfo {
    type Error = KitchenError;

    fn try_from(row: TokenRow) -> Result<Self, Self::Error> {
        Ok(Self {
            id: TokenId::from_uuid(row.id),
            scopes: crate::domain::scope::Scopes::parse(&row.scopes)
                .map_err(|e| corrupt("API token scopes", e))?,
            created_at: row.created_at,
            revoked_at: row.revoked_at,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct CallerRow {
    token_id: Uuid,
    scopes: String,
    #[sqlx(flatten)]
    tenant: TenantRow,
}

impl TryFrom<CallerRow> for crate::domain::tenant::Caller {
    type Error = KitchenError;

    fn try_from(row: CallerRow) -> Result<Self, Self::Error> {
        Ok(Self {
            tenant: row.tenant.try_into()?,
            credential: crate::domain::tenant::Credential::ApiToken(TokenId::from_uuid(
                row.token_id,
            )),
            scopes: crate::domain::scope::Scopes::parse(&row.scopes)
                .map_err(|e| corrupt("API token scopes", e))?,
        })
    }
}
