//! Tenants, API tokens, and the subjects of identity providers mapped to
//! tenants.

use time::OffsetDateTime;

use crate::KitchenError;
use crate::domain::identity::{Issuer, Subject};
use crate::domain::tenant::{
    Caller, IssuedToken, Tenant, TenantId, TenantName, TokenId, TokenInfo, token_hash,
};

use super::rows::{CallerRow, TenantRow, TokenRow};
use super::{Db, on_db};

/// Inserts `tenant`; `false` when its name is taken.
pub(crate) async fn insert(db: &Db, tenant: &Tenant) -> Result<bool, KitchenError> {
    let done = on_db!(db, pool => {
        sqlx::query(
            "INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(tenant.id.as_uuid())
        .bind(tenant.name.as_str())
        .bind(tenant.created_at)
        .execute(pool)
        .await?
        .rows_affected()
    });
    Ok(done == 1)
}

pub(crate) async fn any(db: &Db) -> Result<bool, KitchenError> {
    let found = on_db!(db, pool => {
        sqlx::query("SELECT 1 FROM tenants LIMIT 1")
            .fetch_optional(pool)
            .await?
            .is_some()
    });
    Ok(found)
}

pub(crate) async fn find_by_name(
    db: &Db,
    name: &TenantName,
) -> Result<Option<Tenant>, KitchenError> {
    let row = on_db!(db, pool => {
        sqlx::query_as::<_, TenantRow>("SELECT id, name, created_at FROM tenants WHERE name = $1")
            .bind(name.as_str())
            .fetch_optional(pool)
            .await?
    });
    row.map(TryInto::try_into).transpose()
}

/// Every tenant, by name.
pub(crate) async fn all(db: &Db) -> Result<Vec<Tenant>, KitchenError> {
    let rows = on_db!(db, pool => {
        sqlx::query_as::<_, TenantRow>("SELECT id, name, created_at FROM tenants ORDER BY name")
            .fetch_all(pool)
            .await?
    });
    rows.into_iter().map(TryInto::try_into).collect()
}

/// Every token of `tenant`, live and revoked, oldest first.
pub(crate) async fn tokens_of(db: &Db, tenant: TenantId) -> Result<Vec<TokenInfo>, KitchenError> {
    let rows = on_db!(db, pool => {
        sqlx::query_as::<_, TokenRow>(
            "SELECT id, scopes, created_at, revoked_at FROM api_tokens \
             WHERE tenant_id = $1 ORDER BY created_at, id",
        )
        .bind(tenant.as_uuid())
        .fetch_all(pool)
        .await?
    });
    rows.into_iter().map(TryInto::try_into).collect()
}

pub(crate) async fn insert_token(
    db: &Db,
    token: &IssuedToken,
    now: OffsetDateTime,
) -> Result<(), KitchenError> {
    on_db!(db, pool => {
        sqlx::query(
            "INSERT INTO api_tokens (id, tenant_id, token_sha256, created_at, scopes) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(token.id.as_uuid())
        .bind(token.tenant_id.as_uuid())
        .bind(token_hash(&token.secret))
        .bind(now)
        .bind(token.scopes.to_string())
        .execute(pool)
        .await?;
    });
    Ok(())
}

/// The caller a live (unrevoked) token authenticates, by the token's hash.
pub(crate) async fn find_by_token(db: &Db, hash: &[u8]) -> Result<Option<Caller>, KitchenError> {
    let row = on_db!(db, pool => {
        sqlx::query_as::<_, CallerRow>(
            "SELECT k.id AS token_id, k.scopes, t.id, t.name, t.created_at FROM api_tokens k \
             JOIN tenants t ON t.id = k.tenant_id \
             WHERE k.token_sha256 = $1 AND k.revoked_at IS NULL",
        )
        .bind(hash)
        .fetch_optional(pool)
        .await?
    });
    row.map(TryInto::try_into).transpose()
}

/// Revokes a token; `false` when there was no live token with that id.
pub(crate) async fn revoke_token(
    db: &Db,
    id: TokenId,
    now: OffsetDateTime,
) -> Result<bool, KitchenError> {
    let done = on_db!(db, pool => {
        sqlx::query("UPDATE api_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL")
            .bind(id.as_uuid())
            .bind(now)
            .execute(pool)
            .await?
            .rows_affected()
    });
    Ok(done == 1)
}

/// Maps (issuer, subject) to `tenant`, replacing an earlier mapping of the
/// same subject; `true` when the subject was not mapped before.
pub(crate) async fn map_subject(
    db: &Db,
    issuer: &Issuer,
    subject: &Subject,
    tenant: TenantId,
    now: OffsetDateTime,
) -> Result<bool, KitchenError> {
    let before = tenant_by_subject(db, issuer, subject).await?;
    on_db!(db, pool => {
        sqlx::query(
            "INSERT INTO oauth_subjects (issuer, subject, tenant_id, created_at) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (issuer, subject) DO UPDATE SET tenant_id = excluded.tenant_id, \
             created_at = excluded.created_at",
        )
        .bind(issuer.as_str())
        .bind(subject.as_str())
        .bind(tenant.as_uuid())
        .bind(now)
        .execute(pool)
        .await?;
    });
    Ok(before.is_none())
}

/// Removes the mapping of (issuer, subject); `false` when there was none.
pub(crate) async fn unmap_subject(
    db: &Db,
    issuer: &Issuer,
    subject: &Subject,
) -> Result<bool, KitchenError> {
    let done = on_db!(db, pool => {
        sqlx::query("DELETE FROM oauth_subjects WHERE issuer = $1 AND subject = $2")
            .bind(issuer.as_str())
            .bind(subject.as_str())
            .execute(pool)
            .await?
            .rows_affected()
    });
    Ok(done == 1)
}

/// The tenant an operator mapped (issuer, subject) to, if any.
pub(crate) async fn tenant_by_subject(
    db: &Db,
    issuer: &Issuer,
    subject: &Subject,
) -> Result<Option<Tenant>, KitchenError> {
    let row = on_db!(db, pool => {
        sqlx::query_as::<_, TenantRow>(
            "SELECT t.id, t.name, t.created_at FROM oauth_subjects s \
             JOIN tenants t ON t.id = s.tenant_id \
             WHERE s.issuer = $1 AND s.subject = $2",
        )
        .bind(issuer.as_str())
        .bind(subject.as_str())
        .fetch_optional(pool)
        .await?
    });
    row.map(TryInto::try_into).transpose()
}
