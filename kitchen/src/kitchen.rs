//! [`Kitchen`]: the one entry point the doors call.

use std::sync::Arc;

use time::OffsetDateTime;

use crate::auth_cache::AuthCache;
use crate::domain::tenant::token_hash;

use crate::domain::action::Action;
use crate::domain::fingerprint::Fingerprint;
use crate::domain::operation::{OperationKey, OperationRecord, OperationState, ResultSnapshot};
use crate::domain::page::{Cursor, PageSize, TicketPage};
use crate::domain::tenant::{IssuedToken, Tenant, TenantId, TenantName, TokenId};
use crate::domain::ticket::{ProjectId, Ticket, TicketDraft, TicketId, truncate_to_micros};
use crate::outcome::{Outcome, Receipt};
use crate::provider::TicketBackend;
use crate::remote::Remote;
use crate::store::{self, Db, operations::Claim};
use crate::{KitchenConfig, KitchenError};

/// How long a caller should wait before retrying an [`Outcome::InProgress`].
pub const RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// The domain core. Cheap to clone: clones share one connection pool.
#[derive(Debug, Clone)]
pub struct Kitchen {
    pub(crate) db: Db,
    config: KitchenConfig,
    auth_cache: Arc<AuthCache>,
    /// The provider, when tickets are made remotely.
    pub(crate) remote: Option<Remote>,
}

/// A tenant name that is already taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a tenant named {0} already exists")]
pub struct TenantNameTaken(pub TenantName);

impl Kitchen {
    /// Connects to `database_url` (`sqlite:PATH` or `postgres://…`) and
    /// applies pending migrations. Safe to call from several instances at
    /// once on PostgreSQL.
    pub async fn connect(database_url: &str, config: KitchenConfig) -> Result<Self, KitchenError> {
        let db = Db::connect(database_url, &config).await?;
        tracing::debug!(database = db.kind(), "kitchen connected");
        let auth_cache = Arc::new(AuthCache::new(config.auth_cache_ttl));
        let remote = match &config.backend {
            TicketBackend::Local => None,
            TicketBackend::Remote { provider, settings } => Some(Remote {
                provider: provider.clone(),
                settings: settings.clone(),
            }),
        };
        Ok(Self {
            db,
            config,
            auth_cache,
            remote,
        })
    }

    /// Which database the kitchen runs on: `sqlite` or `postgres`.
    pub fn database_kind(&self) -> &'static str {
        self.db.kind()
    }

    /// Where tickets are made: `local` or `remote`.
    pub fn backend_name(&self) -> &'static str {
        self.config.backend.name()
    }

    /// The settings the kitchen runs with.
    pub fn config(&self) -> &KitchenConfig {
        &self.config
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), KitchenError> {
        self.db.ping().await
    }

    /// Closes the connection pool.
    pub async fn close(&self) {
        self.db.close().await;
    }

    /// Creates a ticket at most once per (tenant, `create_ticket`, key).
    ///
    /// The first attempt with a key commits the ticket and the operation
    /// record in one transaction and answers [`Outcome::Created`]. Any later
    /// attempt with the same key and the same meaning answers
    /// [`Outcome::Replayed`] with the original snapshot; with a different
    /// meaning, [`Outcome::Conflict`]. An attempt racing the first waits for
    /// it up to the wait bound, then replays, or answers
    /// [`Outcome::InProgress`]. Invalid input answers [`Outcome::Invalid`]
    /// without touching the database or the key.
    pub async fn create_ticket(
        &self,
        tenant: TenantId,
        key: &OperationKey,
        draft: &TicketDraft,
    ) -> Result<Outcome, KitchenError> {
        let action = Action::CreateTicket;
        let command = match draft.validate() {
            Ok(command) => command,
            Err(violations) => return Ok(Outcome::Invalid { violations }),
        };
        let fingerprint = Fingerprint::of(action, &command);
        let now = truncate_to_micros(OffsetDateTime::now_utc());
        if let Some(remote) = self.remote.clone() {
            let record = self.pending_record(tenant, key, fingerprint, now);
            // On its own task for the same reason as below: the write-ahead
            // record, the dispatch and its settlement run to their end even
            // if the caller goes away.
            let kitchen = self.clone();
            return tokio::spawn(
                async move { kitchen.place_remote(&remote, record, command).await },
            )
            .await
            .map_err(|e| KitchenError::Interrupted(e.to_string()))?;
        }
        let ticket = command.into_ticket(now);
        let snapshot = ResultSnapshot::of(&ticket)
            .map_err(|e| KitchenError::CorruptRecord(format!("ticket snapshot: {e}")))?;
        let record = OperationRecord {
            tenant_id: tenant,
            action,
            key: key.clone(),
            fingerprint,
            state: OperationState::Succeeded,
            ticket_id: Some(ticket.id),
            result: Some(snapshot.clone()),
            created_at: now,
            retained_until: now + self.config.retention,
        };

        // Once started, an attempt runs to its end on its own task: a caller
        // that goes away (a dropped connection, a server-side timeout) drops
        // only its wait for the answer, never the write half-way. The commit
        // then still happens once, and the caller's retry replays it.
        let kitchen = self.clone();
        tokio::spawn(async move { kitchen.place(record, ticket, snapshot).await })
            .await
            .map_err(|e| KitchenError::Interrupted(e.to_string()))?
    }

    /// The record a remote create writes ahead: `in_progress`, no ticket.
    pub(crate) fn pending_record(
        &self,
        tenant: TenantId,
        key: &OperationKey,
        fingerprint: Fingerprint,
        now: OffsetDateTime,
    ) -> OperationRecord {
        OperationRecord {
            tenant_id: tenant,
            action: Action::CreateTicket,
            key: key.clone(),
            fingerprint,
            state: OperationState::InProgress,
            ticket_id: None,
            result: None,
            created_at: now,
            retained_until: now + self.config.retention,
        }
    }

    /// The transaction half of [`Kitchen::create_ticket`].
    async fn place(
        &self,
        record: OperationRecord,
        ticket: Ticket,
        snapshot: ResultSnapshot,
    ) -> Result<Outcome, KitchenError> {
        let in_progress = Outcome::InProgress {
            retry_after: RETRY_AFTER,
        };
        // Fast path for retries: a committed record is final (the ticket and
        // its record committed together and never change), so when one is
        // already there, one indexed read decides replay or conflict without
        // a write transaction. This is not check-then-insert: when no record
        // is found, placement is still decided by the claim below, whose
        // unique key settles any race.
        if let Some(original) =
            store::operations::find(&self.db, record.tenant_id, record.action, &record.key).await?
        {
            return replay_or_conflict(original, &record);
        }
        // A claim can only vanish under us if a retention sweep deleted the
        // record between our two statements; then the key is free again and
        // one more try decides it.
        for _ in 0..2 {
            let claim = store::operations::claim_and_create(
                &self.db,
                self.config.wait_bound,
                &record,
                &ticket,
            )
            .await?;
            match claim {
                Claim::Placed => {
                    return Ok(Outcome::Created(Receipt {
                        ticket,
                        snapshot,
                        operation: record,
                    }));
                }
                Claim::Taken(original) => return replay_or_conflict(original, &record),
                Claim::Busy => return Ok(in_progress),
                Claim::Vanished => continue,
            }
        }
        Ok(in_progress)
    }

    /// The record of an operation, or `None` when nothing was recorded for
    /// that key: then a retry with the same key is safe.
    pub async fn operation(
        &self,
        tenant: TenantId,
        action: Action,
        key: &OperationKey,
    ) -> Result<Option<OperationRecord>, KitchenError> {
        store::operations::find(&self.db, tenant, action, key).await
    }

    /// One of the tenant's tickets; another tenant's is not found.
    pub async fn ticket(
        &self,
        tenant: TenantId,
        id: TicketId,
    ) -> Result<Option<Ticket>, KitchenError> {
        store::tickets::find(&self.db, tenant, id).await
    }

    /// A page of the tenant's tickets, newest first, optionally of one project.
    pub async fn list_tickets(
        &self,
        tenant: TenantId,
        project: Option<&ProjectId>,
        size: PageSize,
        cursor: Option<Cursor>,
    ) -> Result<TicketPage, KitchenError> {
        let tickets = store::tickets::list(
            &self.db,
            tenant,
            project,
            cursor.map(Cursor::after),
            size.get() + 1,
        )
        .await?;
        Ok(TicketPage::from_overfetch(tickets, size))
    }

    /// Creates a tenant, or says its name is taken.
    pub async fn create_tenant(
        &self,
        name: TenantName,
    ) -> Result<Result<Tenant, TenantNameTaken>, KitchenError> {
        let tenant = Tenant {
            id: TenantId::new_v7(),
            name,
            created_at: truncate_to_micros(OffsetDateTime::now_utc()),
        };
        if store::tenants::insert(&self.db, &tenant).await? {
            Ok(Ok(tenant))
        } else {
            Ok(Err(TenantNameTaken(tenant.name)))
        }
    }

    /// Whether any tenant exists yet (a new installation has none).
    pub async fn has_tenants(&self) -> Result<bool, KitchenError> {
        store::tenants::any(&self.db).await
    }

    /// The tenant with this name, if any.
    pub async fn tenant_by_name(&self, name: &TenantName) -> Result<Option<Tenant>, KitchenError> {
        store::tenants::find_by_name(&self.db, name).await
    }

    /// Issues a new API token for `tenant`. The secret is in the returned
    /// value only: it cannot be shown again.
    pub async fn issue_token(&self, tenant: TenantId) -> Result<IssuedToken, KitchenError> {
        let token = IssuedToken::generate(tenant);
        store::tenants::insert_token(&self.db, &token, OffsetDateTime::now_utc()).await?;
        Ok(token)
    }

    /// Revokes a token; `false` when no live token has that id.
    pub async fn revoke_token(&self, id: TokenId) -> Result<bool, KitchenError> {
        let revoked = store::tenants::revoke_token(&self.db, id, OffsetDateTime::now_utc()).await?;
        self.auth_cache.clear();
        Ok(revoked)
    }

    /// The tenant a bearer token acts for, or `None` for an unknown or
    /// revoked token. Lookups are cached for [`KitchenConfig::auth_cache_ttl`].
    pub async fn authenticate(&self, token: &str) -> Result<Option<Tenant>, KitchenError> {
        let hash = token_hash(token);
        if let Some(tenant) = self.auth_cache.get(&hash) {
            return Ok(Some(tenant));
        }
        let tenant = store::tenants::find_by_token(&self.db, &hash).await?;
        if let Some(tenant) = &tenant {
            self.auth_cache.put(hash, tenant.clone());
        }
        Ok(tenant)
    }
}

/// Decides between replay and conflict for a key that was already taken.
pub(crate) fn replay_or_conflict(
    original: OperationRecord,
    attempt: &OperationRecord,
) -> Result<Outcome, KitchenError> {
    if original.fingerprint != attempt.fingerprint {
        return Ok(Outcome::Conflict {
            original: original.reference(),
        });
    }
    let snapshot = original.result.clone().ok_or_else(|| {
        KitchenError::CorruptRecord(format!(
            "operation {} is {} but has no result",
            original.key,
            original.state.as_str()
        ))
    })?;
    let ticket = snapshot.ticket().map_err(|e| {
        KitchenError::CorruptRecord(format!("result snapshot of {}: {e}", original.key))
    })?;
    Ok(Outcome::Replayed(Receipt {
        ticket,
        snapshot,
        operation: original,
    }))
}
