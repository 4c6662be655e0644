//! Tenants and API tokens.

use time::OffsetDateTime;

use crate::KitchenError;
use crate::domain::tenant::{Caller, IssuedToken, Tenant, TenantName, TokenId, token_hash};

use super::rows::{CallerRow, TenantRow};
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

pub(crate) async fn insert_token(
    db: &Db,
    token: &IssuedToken,
    now: OffsetDateTime,
) -> Result<(), KitchenError> {
    on_db!(db, pool => {
        sqlx::query(
            "INSERT INTO api_tokens (id, tenant_id, token_sha256, created_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(token.id.as_uuid())
        .bind(token.tenant_id.as_uuid())
        .bind(token_hash(&token.secret))
        .bind(now)
        .execute(pool)
        .await?;
    });
    Ok(())
}

/// The caller a live (unrevoked) token authenticates, by the token's hash.
pub(crate) async fn find_by_token(db: &Db, hash: &[u8]) -> Result<Option<Caller>, KitchenError> {
    let row = on_db!(db, pool => {
        sqlx::query_as::<_, CallerRow>(
            "SELECT k.id AS token_id, t.id, t.name, t.created_at FROM api_tokens k \
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
