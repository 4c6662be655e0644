//! Tenants and who may act for one: tenants, API tokens, identity-provider
//! subjects, and authenticating a caller (cached).

use time::OffsetDateTime;

use crate::KitchenError;
use crate::domain::identity::{Issuer, OAuthIdentity, Subject, TenantVia};
use crate::domain::scope::Scopes;
use crate::domain::tenant::{
    Caller, Credential, IssuedToken, Tenant, TenantId, TenantName, TokenId, TokenInfo, token_hash,
};
use crate::domain::ticket::truncate_to_micros;
use crate::store::{self};

use super::{Kitchen, TenantNameTaken};

impl Kitchen {
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

    /// Every tenant, by name (for operators: `tickets tenant list`).
    pub async fn tenants(&self) -> Result<Vec<Tenant>, KitchenError> {
        store::tenants::all(&self.db).await
    }

    /// Every API token of `tenant`, live and revoked, oldest first; never
    /// a secret (`tickets token list`).
    pub async fn tokens_of(&self, tenant: TenantId) -> Result<Vec<TokenInfo>, KitchenError> {
        store::tenants::tokens_of(&self.db, tenant).await
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
    /// revoke, other instances notice within [`KitchenConfig::auth_cache_ttl`](crate::KitchenConfig::auth_cache_ttl).
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
    /// are cached for [`KitchenConfig::auth_cache_ttl`](crate::KitchenConfig::auth_cache_ttl).
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
    /// cached for [`KitchenConfig::auth_cache_ttl`](crate::KitchenConfig::auth_cache_ttl).
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
