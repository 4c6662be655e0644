//! Tenant, token and identity-provider subject commands, and the first-run
//! instructions.

use std::net::SocketAddr;

use anyhow::{Context, bail};
use kitchen::{Issuer, Kitchen, Scopes, Subject, TenantName, TokenId, rfc3339};

use crate::cli::{DEFAULT_DATABASE_URL, OAuthCommand};

/// `tenant create NAME`: prints the new tenant's id on stdout.
pub async fn create_tenant(kitchen: &Kitchen, name: &str) -> anyhow::Result<()> {
    let name = TenantName::parse(name).map_err(anyhow::Error::msg)?;
    match kitchen.create_tenant(name).await? {
        Ok(tenant) => {
            eprintln!("Created tenant {} ({}).", tenant.name, tenant.id);
            eprintln!("Next: tickets token issue {}", tenant.name);
            println!("{}", tenant.id);
            Ok(())
        }
        Err(taken) => bail!(
            "{taken}; issue a token for it with: tickets token issue {}",
            taken.0
        ),
    }
}

/// `token issue TENANT [--scope S]…`: prints the secret alone on stdout (so
/// that `TOKEN=$(tickets token issue acme)` works), and what it is on
/// stderr. Without `--scope` the token may do everything.
pub async fn issue_token(kitchen: &Kitchen, tenant: &str, scopes: &[String]) -> anyhow::Result<()> {
    let scopes = if scopes.is_empty() {
        Scopes::ALL
    } else {
        Scopes::parse(&scopes.join(" ")).map_err(|e| anyhow::anyhow!("--scope: {e}"))?
    };
    let tenant = existing_tenant(kitchen, tenant).await?;
    let token = kitchen.issue_token_with(tenant.id, scopes).await?;
    eprintln!(
        "Token {} for tenant {}, scopes {}. It is shown only now: store it. Revoke with: tickets \
         token revoke {}",
        token.id, tenant.name, token.scopes, token.id
    );
    println!("{}", token.secret);
    Ok(())
}

/// `token revoke ID`.
pub async fn revoke_token(kitchen: &Kitchen, id: &str) -> anyhow::Result<()> {
    let id: TokenId = uuid_arg(id).context("a token id is the UUID printed when it was issued")?;
    if kitchen.revoke_token(id).await? {
        eprintln!("Revoked token {id}.");
        Ok(())
    } else {
        bail!("no live token with id {id} (unknown, or already revoked)")
    }
}

/// `tenant list`: one tenant per line on stdout, by name, under a header.
pub async fn list_tenants(kitchen: &Kitchen) -> anyhow::Result<()> {
    let tenants = kitchen.tenants().await?;
    if tenants.is_empty() {
        eprintln!("No tenants yet. Create one with: tickets tenant create <name>");
        return Ok(());
    }
    let mut rows = Vec::with_capacity(tenants.len());
    for t in &tenants {
        let guard = kitchen.duplicate_guard_of(t.id).await?;
        rows.push(vec![
            t.name.to_string(),
            t.id.to_string(),
            rfc3339(t.created_at),
            guard.map_or_else(|| "default".to_owned(), |mode| mode.to_string()),
        ]);
    }
    print!(
        "{}",
        table(&["NAME", "ID", "CREATED", "GUARD"], rows.into_iter())
    );
    Ok(())
}

/// `tenant guard NAME MODE`: the tenant's own likely-duplicate guard mode,
/// or (`None`) the deployment's again.
pub async fn set_guard(
    kitchen: &Kitchen,
    name: &str,
    mode: Option<kitchen::GuardMode>,
) -> anyhow::Result<()> {
    let tenant = existing_tenant(kitchen, name).await?;
    if !kitchen.set_duplicate_guard(&tenant.name, mode).await? {
        bail!("no tenant named {name}; create it with: tickets tenant create {name}");
    }
    match mode {
        Some(mode) => eprintln!(
            "Tenant {} now has the likely-duplicate guard in `{mode}` (running instances follow \
             within AUTH_CACHE_MS).",
            tenant.name
        ),
        None => eprintln!(
            "Tenant {} now follows the deployment's DUPLICATE_GUARD (running instances follow \
             within AUTH_CACHE_MS).",
            tenant.name
        ),
    }
    Ok(())
}

/// `token list TENANT`: one token per line on stdout, oldest first, under
/// a header; a live token's `REVOKED` is `-`.
pub async fn list_tokens(kitchen: &Kitchen, tenant: &str) -> anyhow::Result<()> {
    let tenant = existing_tenant(kitchen, tenant).await?;
    let tokens = kitchen.tokens_of(tenant.id).await?;
    if tokens.is_empty() {
        eprintln!(
            "Tenant {} has no tokens. Issue one with: tickets token issue {}",
            tenant.name, tenant.name
        );
        return Ok(());
    }
    let rows = tokens.iter().map(|t| {
        vec![
            t.id.to_string(),
            t.scopes.to_string().replace(' ', ","),
            rfc3339(t.created_at),
            t.revoked_at.map_or_else(|| "-".to_owned(), rfc3339),
        ]
    });
    print!("{}", table(&["ID", "SCOPES", "CREATED", "REVOKED"], rows));
    Ok(())
}

/// `rows` under `header`, each column as wide as its widest cell.
pub(crate) fn table(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> String {
    let mut lines: Vec<Vec<String>> = vec![header.iter().map(|h| (*h).to_owned()).collect()];
    lines.extend(rows);
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            lines
                .iter()
                .map(|l| l[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for line in lines {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// `oauth map|unmap`.
pub async fn oauth(kitchen: &Kitchen, command: OAuthCommand) -> anyhow::Result<()> {
    match command {
        OAuthCommand::Map {
            issuer,
            subject,
            tenant,
        } => {
            let (issuer, subject) = identity(&issuer, &subject)?;
            let tenant = existing_tenant(kitchen, &tenant).await?;
            let new = kitchen
                .map_oauth_subject(&issuer, &subject, tenant.id)
                .await?;
            eprintln!(
                "{} subject {subject:?} of {issuer} to tenant {}. Running servers notice within \
                 AUTH_CACHE_MS.",
                if new { "Mapped" } else { "Moved" },
                tenant.name
            );
            Ok(())
        }
        OAuthCommand::Unmap { issuer, subject } => {
            let (issuer, subject) = identity(&issuer, &subject)?;
            if kitchen.unmap_oauth_subject(&issuer, &subject).await? {
                eprintln!("Unmapped subject {subject:?} of {issuer}.");
                Ok(())
            } else {
                bail!("subject {subject:?} of {issuer} is not mapped")
            }
        }
    }
}

fn identity(issuer: &str, subject: &str) -> anyhow::Result<(Issuer, Subject)> {
    Ok((
        Issuer::parse(issuer).map_err(|e| anyhow::anyhow!("--issuer: {e}"))?,
        Subject::parse(subject).map_err(|e| anyhow::anyhow!("--subject: {e}"))?,
    ))
}

pub(crate) async fn existing_tenant(
    kitchen: &Kitchen,
    name: &str,
) -> anyhow::Result<kitchen::Tenant> {
    let name = TenantName::parse(name).map_err(anyhow::Error::msg)?;
    match kitchen.tenant_by_name(&name).await? {
        Some(tenant) => Ok(tenant),
        None => bail!("no tenant named {name}; create it with: tickets tenant create {name}"),
    }
}

fn uuid_arg(raw: &str) -> anyhow::Result<TokenId> {
    Ok(TokenId::from(raw.parse::<kitchen::Uuid>()?))
}

/// What `serve` prints on an empty database: how to get a token and make the
/// first call.
pub fn first_steps(database_url: &str, addr: SocketAddr) -> String {
    let db = if database_url == DEFAULT_DATABASE_URL {
        String::new()
    } else {
        format!(" --database-url '{database_url}'")
    };
    format!(
        "\nNo tenants yet. To make your first call, in another terminal:\n\n  \
         tickets{db} tenant create acme\n  \
         TOKEN=$(tickets{db} token issue acme)\n  \
         curl -i http://{addr}/v1/tickets \\\n    \
         -H \"Authorization: Bearer $TOKEN\" \\\n    \
         -H \"Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)\" \\\n    \
         -H 'Content-Type: application/json' \\\n    \
         -d '{{\"project_id\":\"ops\",\"title\":\"Disk full on db-1\"}}'\n\n\
         (From a checkout, `tickets` is `cargo run -q --bin tickets --`.) \
         Send the same request again with the same Idempotency-Key: you get the same ticket back.\n"
    )
}
