//! The ground truth: how many tickets each intent's title has where the
//! effects are made, read from there and never from any answer: the
//! provider simulator's own counts (`/_sim/counts`) on the simulated
//! providers, Redmine's issues by exact subject on `redmine` (read from
//! Redmine itself, never through a proxy: `double_fire::RedmineTruth`),
//! the database the server wrote on the local one (read-only SQL, as the
//! soak's count). Also when to count: once nothing that could still make
//! an effect is under way.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use sqlx::{Connection, PgConnection, SqliteConnection};

use super::servers::TENANT;
use double_fire::RedmineTruth;
use provider_sim::SimClient;

const TICKETS_BY_TITLE: &str = "SELECT t.title, COUNT(*) FROM tickets t \
     JOIN tenants n ON n.id = t.tenant_id WHERE n.name = $1 AND t.project_id = $2 \
     GROUP BY t.title";

/// Effects still being worked on: dispatching, or unknown and still
/// scheduled for reconciliation (an effect whose reconciliation gave up is
/// not waited for: nothing will change it).
const UNSETTLED: &str = "SELECT COUNT(*) FROM operations o \
     JOIN tenants n ON n.id = o.tenant_id WHERE n.name = $1 \
     AND (o.state = 'in_progress' OR (o.state = 'unknown' AND o.next_check_ms IS NOT NULL))";

/// Where a cell's effects are counted.
#[derive(Debug, Clone)]
pub(crate) enum Ledger {
    /// The provider simulator.
    Provider(SimClient),
    /// Redmine (every cell's issues are in its one project; titles are
    /// unique to their intent within a run).
    Redmine {
        /// Reads Redmine directly.
        truth: RedmineTruth,
        /// Its HTTP client.
        http: reqwest::Client,
    },
    /// The database at this URL (SQLite or PostgreSQL).
    Database(String),
}

/// Tickets per title: `titles` each with its count (0 when none).
pub(crate) async fn count(
    ledger: &Ledger,
    project_id: &str,
    titles: &[String],
) -> anyhow::Result<BTreeMap<String, u64>> {
    let found: BTreeMap<String, u64> = match ledger {
        Ledger::Provider(sim) => {
            let counts = sim.counts().await?;
            titles
                .iter()
                .map(|t| {
                    (
                        t.clone(),
                        u64::try_from(counts.tickets_titled(t)).unwrap_or(0),
                    )
                })
                .collect()
        }
        Ledger::Redmine { truth, http } => {
            let mut found = BTreeMap::new();
            // One search per title: Redmine serves one request at a time
            // anyway.
            for title in titles {
                let n = truth.issues_titled(http, title).await?;
                found.insert(title.clone(), u64::try_from(n).unwrap_or(u64::MAX));
            }
            found
        }
        Ledger::Database(url) => {
            macro_rules! read_with {
                ($connection:ty) => {{
                    let mut db = <$connection>::connect(url)
                        .await
                        .with_context(|| format!("connect to {url} for the count"))?;
                    let rows: Vec<(String, i64)> = sqlx::query_as(TICKETS_BY_TITLE)
                        .bind(TENANT)
                        .bind(project_id)
                        .fetch_all(&mut db)
                        .await?;
                    let _ = db.close().await;
                    rows
                }};
            }
            let rows = if url.starts_with("sqlite:") {
                read_with!(SqliteConnection)
            } else {
                read_with!(PgConnection)
            };
            rows.into_iter()
                .map(|(title, n)| (title, u64::try_from(n).unwrap_or(0)))
                .collect()
        }
    };
    Ok(titles
        .iter()
        .map(|t| (t.clone(), found.get(t).copied().unwrap_or(0)))
        .collect())
}

/// Effects our server still works on, in the database at `url`.
pub(crate) async fn unsettled(url: &str) -> anyhow::Result<u64> {
    macro_rules! read_with {
        ($connection:ty) => {{
            let mut db = <$connection>::connect(url)
                .await
                .with_context(|| format!("connect to {url}"))?;
            let (n,): (i64,) = sqlx::query_as(UNSETTLED)
                .bind(TENANT)
                .fetch_one(&mut db)
                .await?;
            let _ = db.close().await;
            n
        }};
    }
    let n = if url.starts_with("sqlite:") {
        read_with!(SqliteConnection)
    } else {
        read_with!(PgConnection)
    };
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Waits until our server has no effect under way in the database at
/// `url`, up to `bound`; returns how many were still under way then.
pub(crate) async fn wait_settled(url: &str, bound: Duration) -> anyhow::Result<u64> {
    let deadline = Instant::now() + bound;
    loop {
        let left = unsettled(url).await?;
        if left == 0 || Instant::now() >= deadline {
            return Ok(left);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
