//! [`Kitchen`]: the one entry point the doors call.

use std::future::Future;
use std::sync::Arc;

use time::OffsetDateTime;

use crate::actions::add_comment::AddComment;
use crate::actions::add_label::AddLabel;
use crate::actions::create_ticket::CreateTicket;
use crate::actions::remove_label::RemoveLabel;
use crate::actions::transition_ticket::TransitionTicket;
use crate::actions::update_ticket::UpdateTicket;
use crate::auth_cache::AuthCache;
use crate::backend::Backend;
use crate::domain::action::Action;
use crate::domain::comment::{Comment, CommentDraft, CommentId, CommentPage};
use crate::domain::effect::{OperationStatus, Trigger};
use crate::domain::fault::{StorageFault, Written};
use crate::domain::history::HistoryPage;
use crate::domain::identity::{Issuer, OAuthIdentity, Subject, TenantVia};
use crate::domain::label_change::LabelDraft;
use crate::domain::lifecycle::{Horizons, KeyPhase};
use crate::domain::operation::{OperationKey, OperationRecord};
use crate::domain::page::{Cursor, PageSize, TicketFilter, TicketPage};
use crate::domain::patch::TicketUpdate;
use crate::domain::precondition::TicketAt;
use crate::domain::scope::Scopes;
use crate::domain::tenant::{
    Actor, Caller, Credential, IssuedToken, Tenant, TenantId, TenantName, TokenId, token_hash,
};
use crate::domain::ticket::{Ticket, TicketDraft, TicketId, truncate_to_micros};
use crate::domain::transition::TransitionDraft;
use crate::outcome::{Outcome, Refusal};
use crate::remote::Remote;
use crate::store::circuit::{self, Health};
use crate::store::group_commit::{BoxFuture, GroupWriter};
use crate::store::{self, Db, effects::OperationId};
use crate::sweep::Sweeper;
use crate::write::WriteAction;
use crate::write::engine::Engine;
use crate::write::keys::KeyRules;
use crate::write::remote::RemoteAction;
use crate::write::replay_cache::ReplayCache;
use crate::{KitchenConfig, KitchenError};

/// The domain core. Cheap to clone: clones share one connection pool.
#[derive(Debug, Clone)]
pub struct Kitchen {
    pub(crate) db: Db,
    config: KitchenConfig,
    auth_cache: Arc<AuthCache<Caller>>,
    /// Identity-provider subjects' tenants, by a hash of the identity.
    identity_cache: Arc<AuthCache<(Tenant, TenantVia)>>,
    /// The generic write path, on this kitchen's database.
    pub(crate) engine: Engine,
    /// Where writes happen.
    pub(crate) backend: Backend,
    /// What requests found about the database: the circuit that answers
    /// at once while it is unreachable, and whether writes are failing.
    health: Health,
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
        let identity_cache = Arc::new(AuthCache::new(config.auth_cache_ttl));
        let writer = GroupWriter::for_db(&db, &config).await?;
        let engine = Engine {
            db: db.clone(),
            wait_bound: config.wait_bound,
            keys: KeyRules {
                horizons: Horizons::new(config.replay_window, config.tombstone_horizon),
                clock: config.clock.clone(),
            },
            replays: ReplayCache::new(config.replay_cache, config.clock.clone()),
            writer,
        };
        let backend = Backend::new(&config.backend, &db, &engine);
        Ok(Self {
            db,
            config,
            auth_cache,
            identity_cache,
            engine,
            backend,
            health: Health::default(),
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

    /// Whether doing `action` reaches a system the service does not own (a
    /// provider, on the remote backend): what MCP calls an open world.
    pub fn action_reaches_a_provider(&self, action: Action) -> bool {
        self.backend.sends(action)
    }

    /// Whether reading an operation's status may search a provider (the
    /// remote backend). It never sends anything there.
    pub fn status_reads_reach_a_provider(&self) -> bool {
        self.backend.status_reads_search()
    }

    /// The settings the kitchen runs with.
    pub fn config(&self) -> &KitchenConfig {
        &self.config
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), KitchenError> {
        self.db.ping().await
    }

    /// Whether the service can do its work now, within about the acquire
    /// timeout: the database answers (at once `Err` while the circuit is
    /// open) and, when writes have been failing for want of a writable
    /// database, it can commit a row again. Each `Err` is a storage fault.
    pub async fn ready(&self) -> Result<(), KitchenError> {
        let bound = self.config.acquire_timeout;
        let timed_out = || KitchenError::Unavailable {
            fault: StorageFault::Unreachable,
            written: Written::Nothing,
            cause: format!("no answer within {} ms", bound.as_millis()),
        };
        self.guarded(async {
            tokio::time::timeout(bound, self.db.ping())
                .await
                .map_err(|_| timed_out())??;
            if self.health.writes_failing() {
                tokio::time::timeout(bound, circuit::probe_write(&self.db))
                    .await
                    .map_err(|_| timed_out())??;
                self.health.committed();
            }
            Ok(())
        })
        .await
    }

    /// Runs `work` behind the circuit (at once `Err` while the database is
    /// known to be unreachable), and learns from its storage faults.
    async fn guarded<T>(
        &self,
        work: impl Future<Output = Result<T, KitchenError>>,
    ) -> Result<T, KitchenError> {
        self.health.check()?;
        let result = work.await;
        if let Err(error) = &result {
            self.health
                .saw(error, &self.db, self.config.acquire_timeout);
        }
        result
    }

    /// Lets the group writer finish the writes queued for it, then closes
    /// its connection and the pool. Writes submitted after this fail.
    pub async fn close(&self) {
        if let Some(writer) = &self.engine.writer {
            writer.close().await;
        }
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
    /// without touching the database or the key. Every other write below
    /// follows the same rules.
    pub async fn create_ticket(
        &self,
        actor: impl Into<Actor>,
        key: &OperationKey,
        draft: &TicketDraft,
    ) -> Result<Outcome, KitchenError> {
        self.write::<CreateTicket>(actor.into(), key, draft).await
    }

    /// Edits a ticket's title, description, priority or assignee, at most
    /// once per (tenant, `update_ticket`, key). With an expected version,
    /// refuses ([`Refusal::VersionMismatch`]) unless the ticket is still
    /// at it. A replay answers the ticket as the first attempt left it,
    /// even if it changed since.
    pub async fn update_ticket(
        &self,
        actor: impl Into<Actor>,
        key: &OperationKey,
        update: &TicketUpdate,
    ) -> Result<Outcome, KitchenError> {
        self.write::<UpdateTicket>(actor.into(), key, update).await
    }

    /// Moves a ticket to another status, at most once per (tenant,
    /// `transition_ticket`, key). A move the status machine does not allow
    /// from where the ticket is answers [`Refusal::TransitionNotAllowed`].
    /// `ticket` is a [`TicketId`] or, for a conditional move, a
    /// [`TicketAt`] with the version expected: as for
    /// [`Kitchen::update_ticket`], another version answers
    /// [`Refusal::VersionMismatch`].
    pub async fn transition_ticket(
        &self,
        actor: impl Into<Actor>,
        key: &OperationKey,
        ticket: impl Into<TicketAt>,
        draft: &TransitionDraft,
    ) -> Result<Outcome, KitchenError> {
        self.write::<TransitionTicket>(actor.into(), key, &(ticket.into(), draft.clone()))
            .await
    }

    /// Adds a comment to a ticket, at most once per (tenant, `add_comment`,
    /// key). `ticket` is a [`TicketId`] or, for a conditional comment, a
    /// [`TicketAt`]: another version answers [`Refusal::VersionMismatch`]
    /// (a comment does not change the ticket's version itself).
    pub async fn add_comment(
        &self,
        actor: impl Into<Actor>,
        key: &OperationKey,
        ticket: impl Into<TicketAt>,
        draft: &CommentDraft,
    ) -> Result<Outcome<Comment>, KitchenError> {
        self.write::<AddComment>(actor.into(), key, &(ticket.into(), draft.clone()))
            .await
    }

    /// Puts a label on a ticket, at most once per (tenant, `add_label`,
    /// key). A label the ticket carries already changes nothing and still
    /// uses the key; a ticket carrying as many labels as it may answers
    /// [`Refusal::LabelLimitReached`]. `ticket` is a [`TicketId`] or a
    /// [`TicketAt`], as for [`Kitchen::transition_ticket`]. Local only: the
    /// remote backend answers [`Refusal::NotSupportedByProvider`].
    pub async fn add_label(
        &self,
        actor: impl Into<Actor>,
        key: &OperationKey,
        ticket: impl Into<TicketAt>,
        draft: &LabelDraft,
    ) -> Result<Outcome, KitchenError> {
        self.local_write::<AddLabel>(actor.into(), key, &(ticket.into(), draft.clone()))
            .await
    }

    /// Takes a label off a ticket, at most once per (tenant,
    /// `remove_label`, key). A label the ticket does not carry changes
    /// nothing and still uses the key. Otherwise as [`Kitchen::add_label`].
    pub async fn remove_label(
        &self,
        actor: impl Into<Actor>,
        key: &OperationKey,
        ticket: impl Into<TicketAt>,
        draft: &LabelDraft,
    ) -> Result<Outcome, KitchenError> {
        self.local_write::<RemoveLabel>(actor.into(), key, &(ticket.into(), draft.clone()))
            .await
    }

    /// Validates, then runs action `A` through the generic write path, or
    /// on the remote backend through the effect ledger: for an action that
    /// reaches a provider.
    async fn write<A: RemoteAction>(
        &self,
        actor: Actor,
        key: &OperationKey,
        request: &A::Request,
    ) -> Result<Outcome<A::Result>, KitchenError>
    where
        A::Request: Clone,
    {
        self.perform::<A>(actor, key, request, Some(send_remotely::<A>))
            .await
    }

    /// Validates, then runs action `A` through the generic write path: for
    /// an action with no counterpart at a provider (no [`RemoteAction`]),
    /// which the remote backend refuses before anything is read or written.
    async fn local_write<A: WriteAction>(
        &self,
        actor: Actor,
        key: &OperationKey,
        request: &A::Request,
    ) -> Result<Outcome<A::Result>, KitchenError>
    where
        A::Request: Clone,
    {
        self.perform::<A>(actor, key, request, None).await
    }

    /// [`Kitchen::write`] and [`Kitchen::local_write`]: `remote` is how the
    /// remote backend sends `A`, `None` when it cannot.
    async fn perform<A: WriteAction>(
        &self,
        actor: Actor,
        key: &OperationKey,
        request: &A::Request,
        remote: Option<SendRemotely<A>>,
    ) -> Result<Outcome<A::Result>, KitchenError>
    where
        A::Request: Clone,
    {
        if let (Backend::Remote(_), None) = (&self.backend, remote) {
            return Ok(Outcome::Refused(Refusal::NotSupportedByProvider {
                action: A::ACTION,
            }));
        }
        let command = match A::validate(request) {
            Ok(command) => command,
            Err(violations) => return Ok(Outcome::Invalid { violations }),
        };
        let outcome = self
            .guarded(async {
                match (&self.backend, remote) {
                    (Backend::Remote(backend), Some(send)) => {
                        // On its own task for the same reason as the local
                        // path: the write-ahead record, the dispatch and its
                        // settlement run to their end even if the caller
                        // goes away.
                        let sent = send(
                            (**backend).clone(),
                            actor,
                            key.clone(),
                            request.clone(),
                            command,
                        );
                        tokio::spawn(sent)
                            .await
                            .map_err(|e| KitchenError::Interrupted(e.to_string()))?
                    }
                    _ => self.engine.perform::<A>(actor, key, command).await,
                }
            })
            .await?;
        if let Outcome::Created(_) = &outcome {
            self.health.committed();
        }
        Ok(outcome)
    }

    /// The record of an operation, or `None` when nothing was recorded for
    /// that key: then a retry with the same key is safe.
    pub async fn operation(
        &self,
        tenant: TenantId,
        action: Action,
        key: &OperationKey,
    ) -> Result<Option<OperationRecord>, KitchenError> {
        self.guarded(store::operations::find(&self.db, tenant, action, key))
            .await
    }

    /// What is known about an operation, for the status resource; `None`
    /// when nothing is recorded for the key (never used, or forgotten past
    /// its tombstone horizon): then a retry is safe.
    ///
    /// Past the replay window the answer is the tombstone, phase
    /// [`KeyPhase::Expired`](crate::KeyPhase). With the remote backend, an
    /// `unknown` effect, or one left `in_progress` by a worker whose lease
    /// ran out, is reconciled first, unless another worker is at it right
    /// now (then the answer is what is recorded, to be asked again): a
    /// caller who asks what happened gets the freshest answer there is
    /// without waiting on the provider behind someone else. A read of a forgotten or expired key writes nothing.
    pub async fn operation_status(
        &self,
        tenant: TenantId,
        action: Action,
        key: &OperationKey,
    ) -> Result<Option<OperationStatus>, KitchenError> {
        let scope = OperationId {
            tenant,
            action,
            key: key.clone(),
        };
        let Some(record) = self
            .guarded(store::operations::find(&self.db, tenant, action, key))
            .await?
        else {
            return Ok(None);
        };
        let phase = record.phase(self.engine.keys.clock.now());
        match phase {
            KeyPhase::Forgotten => return Ok(None),
            KeyPhase::Expired => {
                // The tombstone's view, whether or not the sweep has made it
                // one yet: the first answer is no longer given out.
                return Ok(Some(OperationStatus {
                    record: OperationRecord {
                        result: None,
                        ..record
                    },
                    phase,
                    effect: None,
                }));
            }
            KeyPhase::Replayable => {}
        }
        // On the remote backend an unsettled effect is settled first, and
        // the record is read again with its ledger.
        let Some((record, effect)) = self.backend.status(&scope, record).await? else {
            return Ok(None);
        };
        Ok(Some(OperationStatus {
            record,
            phase,
            effect,
        }))
    }

    /// The retention sweep for this kitchen's database, with its batch
    /// size and clock.
    pub fn sweeper(&self) -> Sweeper {
        Sweeper {
            db: self.db.clone(),
            clock: self.engine.keys.clock.clone(),
            batch: self.config.sweep_batch.max(1),
            pause: self.config.sweep_pause,
            wait: self.config.wait_bound,
        }
    }

    /// One reconciler pass (remote backend): settles, as far as can be done
    /// now, every unsettled effect that is due and that no live worker
    /// holds. Answers how many it worked on; 0 on the local backend.
    pub async fn reconcile_due(&self, trigger: Trigger) -> Result<usize, KitchenError> {
        self.backend.reconcile_due(trigger).await
    }

    /// How many effects reconciliation gave up on (remote backend): their
    /// outcome is `unknown` and their attempts reached
    /// [`RemoteSettings::max_attempts`](crate::RemoteSettings), so no worker
    /// calls the provider for them again until an operator resolves them.
    /// 0 on the local backend, where every outcome is known.
    pub async fn unresolved_effects(&self) -> Result<u64, KitchenError> {
        self.backend.unresolved_effects().await
    }

    /// How many effects the provider was found to hold more than once
    /// (remote backend): a search by an effect's reference found several
    /// objects carrying it, so something at or before the provider made it
    /// twice. The service keeps the oldest as the original and reports the
    /// others in the operation's status (`duplicates_at_provider`) for an
    /// operator to resolve. 0 on the local backend.
    pub async fn provider_duplicates(&self) -> Result<u64, KitchenError> {
        self.backend.provider_duplicates().await
    }

    /// Runs the reconciler until `shutdown` resolves (remote backend): a
    /// first pass at once (effects a crash left behind), then one every
    /// [`RemoteSettings::reconcile_every`](crate::RemoteSettings). Returns
    /// at once on the local backend.
    pub async fn run_reconciler(self, shutdown: impl Future<Output = ()>) {
        self.backend.run_reconciler(shutdown).await;
    }

    /// One of the tenant's tickets; another tenant's is not found.
    pub async fn ticket(
        &self,
        tenant: TenantId,
        id: TicketId,
    ) -> Result<Option<Ticket>, KitchenError> {
        self.guarded(store::tickets::find(&self.db, tenant, id))
            .await
    }

    /// A page of the tenant's tickets, newest first: those `filter` lets
    /// through (of one project, carrying one label).
    pub async fn list_tickets(
        &self,
        tenant: TenantId,
        filter: &TicketFilter,
        size: PageSize,
        cursor: Option<Cursor>,
    ) -> Result<TicketPage, KitchenError> {
        let tickets = self
            .guarded(store::tickets::list(
                &self.db,
                tenant,
                filter,
                cursor.map(Cursor::after),
                size.get() + 1,
            ))
            .await?;
        Ok(TicketPage::from_overfetch(tickets, size))
    }

    /// A page of a ticket's comments, oldest first; `None` when the tenant
    /// has no such ticket.
    pub async fn list_comments(
        &self,
        tenant: TenantId,
        ticket: TicketId,
        size: PageSize,
        cursor: Option<Cursor>,
    ) -> Result<Option<CommentPage>, KitchenError> {
        if self
            .guarded(store::tickets::find(&self.db, tenant, ticket))
            .await?
            .is_none()
        {
            return Ok(None);
        }
        let comments = self
            .guarded(store::comments::list(
                &self.db,
                tenant,
                ticket,
                cursor.map(Cursor::after),
                size.get() + 1,
            ))
            .await?;
        Ok(Some(CommentPage::from_overfetch(comments, size)))
    }

    /// One comment of one of the tenant's tickets.
    pub async fn comment(
        &self,
        tenant: TenantId,
        ticket: TicketId,
        id: CommentId,
    ) -> Result<Option<Comment>, KitchenError> {
        self.guarded(store::comments::find(&self.db, tenant, ticket, id))
            .await
    }

    /// A page of a ticket's history, oldest first; `None` when the tenant
    /// has no such ticket.
    pub async fn ticket_history(
        &self,
        tenant: TenantId,
        ticket: TicketId,
        size: PageSize,
        cursor: Option<Cursor>,
    ) -> Result<Option<HistoryPage>, KitchenError> {
        if self
            .guarded(store::tickets::find(&self.db, tenant, ticket))
            .await?
            .is_none()
        {
            return Ok(None);
        }
        let entries = self
            .guarded(store::history::list(
                &self.db,
                tenant,
                ticket,
                cursor.map(Cursor::after),
                size.get() + 1,
            ))
            .await?;
        Ok(Some(HistoryPage::from_overfetch(entries, size)))
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

    /// Issues a new API token for `tenant` that may do everything
    /// ([`Scopes::ALL`]). The secret is in the returned value only: it
    /// cannot be shown again.
    pub async fn issue_token(&self, tenant: TenantId) -> Result<IssuedToken, KitchenError> {
        self.issue_token_with(tenant, Scopes::ALL).await
    }

    /// Issues a new API token for `tenant` that may do what `scopes` allow.
    pub async fn issue_token_with(
        &self,
        tenant: TenantId,
        scopes: Scopes,
    ) -> Result<IssuedToken, KitchenError> {
        let token = IssuedToken::generate(tenant, scopes);
        store::tenants::insert_token(&self.db, &token, OffsetDateTime::now_utc()).await?;
        Ok(token)
    }

    /// Maps an identity provider's subject to `tenant` (replacing an
    /// earlier mapping of it); `true` when it was not mapped before.
    pub async fn map_oauth_subject(
        &self,
        issuer: &Issuer,
        subject: &Subject,
        tenant: TenantId,
    ) -> Result<bool, KitchenError> {
        let new = store::tenants::map_subject(
            &self.db,
            issuer,
            subject,
            tenant,
            OffsetDateTime::now_utc(),
        )
        .await?;
        self.identity_cache.clear();
        Ok(new)
    }

    /// Removes a subject's mapping; `false` when there was none. Like a
    /// revoke, other instances notice within [`KitchenConfig::auth_cache_ttl`].
    pub async fn unmap_oauth_subject(
        &self,
        issuer: &Issuer,
        subject: &Subject,
    ) -> Result<bool, KitchenError> {
        let removed = store::tenants::unmap_subject(&self.db, issuer, subject).await?;
        self.identity_cache.clear();
        Ok(removed)
    }

    /// The caller a verified access token stands for, granted `scopes`:
    /// the tenant an operator mapped its (issuer, subject) to, or else the
    /// tenant whose name is its tenant claim's value; `None` when neither
    /// names a tenant (nothing is ever created for an identity). Lookups
    /// are cached for [`KitchenConfig::auth_cache_ttl`].
    pub async fn oauth_caller(
        &self,
        identity: &OAuthIdentity,
        scopes: Scopes,
    ) -> Result<Option<Caller>, KitchenError> {
        let Some((tenant, via)) = self.oauth_tenant(identity).await? else {
            return Ok(None);
        };
        Ok(Some(Caller {
            tenant,
            credential: Credential::OAuth {
                issuer: identity.issuer.clone(),
                subject: identity.subject.clone(),
                via,
            },
            scopes,
        }))
    }

    async fn oauth_tenant(
        &self,
        identity: &OAuthIdentity,
    ) -> Result<Option<(Tenant, TenantVia)>, KitchenError> {
        let key = identity_key(identity);
        if let Some(found) = self.identity_cache.get(&key) {
            return Ok(Some(found));
        }
        let mapped =
            store::tenants::tenant_by_subject(&self.db, &identity.issuer, &identity.subject)
                .await?;
        let found = match mapped {
            Some(tenant) => Some((tenant, TenantVia::SubjectMapping)),
            None => match identity
                .tenant_claim
                .as_deref()
                .and_then(|claim| TenantName::parse(claim).ok())
            {
                Some(name) => store::tenants::find_by_name(&self.db, &name)
                    .await?
                    .map(|tenant| (tenant, TenantVia::Claim)),
                None => None,
            },
        };
        if let Some(found) = &found {
            self.identity_cache.put(key, found.clone());
        }
        Ok(found)
    }

    /// Revokes a token; `false` when no live token has that id.
    pub async fn revoke_token(&self, id: TokenId) -> Result<bool, KitchenError> {
        let revoked = store::tenants::revoke_token(&self.db, id, OffsetDateTime::now_utc()).await?;
        self.auth_cache.clear();
        Ok(revoked)
    }

    /// The caller an API token authenticates: the tenant it acts for, the
    /// token's id and its scopes; `None` for an unknown or revoked token. Lookups are
    /// cached for [`KitchenConfig::auth_cache_ttl`].
    pub async fn authenticate(&self, token: &str) -> Result<Option<Caller>, KitchenError> {
        let hash = token_hash(token);
        if let Some(caller) = self.auth_cache.get(&hash) {
            return Ok(Some(caller));
        }
        let caller = self
            .guarded(store::tenants::find_by_token(&self.db, &hash))
            .await?;
        if let Some(caller) = &caller {
            self.auth_cache.put(hash, caller.clone());
        }
        Ok(caller)
    }
}

/// How the remote backend sends a write of action `A`: its write-ahead
/// record, dispatch and settlement, as one task's work.
type SendRemotely<A> =
    fn(
        Remote,
        Actor,
        OperationKey,
        <A as WriteAction>::Request,
        <A as WriteAction>::Command,
    ) -> BoxFuture<'static, Result<Outcome<<A as WriteAction>::Result>, KitchenError>>;

/// [`SendRemotely`] for an action that reaches a provider.
fn send_remotely<A: RemoteAction>(
    remote: Remote,
    actor: Actor,
    key: OperationKey,
    request: A::Request,
    command: A::Command,
) -> BoxFuture<'static, Result<Outcome<A::Result>, KitchenError>> {
    Box::pin(async move { remote.write::<A>(actor, &key, &request, command).await })
}

/// The cache key of an identity: a digest of its parts, length-prefixed so
/// that no two identities share one.
fn identity_key(identity: &OAuthIdentity) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for part in [
        Some(identity.issuer.as_str()),
        Some(identity.subject.as_str()),
        identity.tenant_claim.as_deref(),
    ] {
        match part {
            Some(text) => {
                hash.update((text.len() as u64).to_be_bytes());
                hash.update(text.as_bytes());
            }
            None => hash.update(u64::MAX.to_be_bytes()),
        }
    }
    hash.finalize().to_vec()
}
