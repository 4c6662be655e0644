//! Reads what the soak's tenant holds, straight from the database the
//! server wrote (never through the server): its tickets of the soak's
//! project and its `create_ticket` operation records. Read-only; the
//! schema is `migrations/`.

use anyhow::Context;
use sqlx::{Connection, PgConnection, SqliteConnection};
use uuid::Uuid;

use super::database::DatabaseKind;
use super::keys;
use super::verdict::{Stored, StoredOperation, StoredTicket};

const TICKETS: &str = "SELECT t.id, t.title FROM tickets t \
     JOIN tenants n ON n.id = t.tenant_id WHERE n.name = $1 AND t.project_id = $2";

const OPERATIONS: &str = "SELECT o.operation_key, o.state, o.ticket_id FROM operations o \
     JOIN tenants n ON n.id = o.tenant_id WHERE n.name = $1 AND o.action = 'create_ticket'";

/// Everything of `tenant`'s the verdict looks at, in the database at `url`.
pub(crate) async fn read(kind: DatabaseKind, url: &str, tenant: &str) -> anyhow::Result<Stored> {
    // The same statements on both databases; ids are uuid on PostgreSQL
    // and 16-byte blobs on SQLite, both decoded as a Uuid.
    macro_rules! read_with {
        ($connection:ty) => {{
            let mut db = <$connection>::connect(url)
                .await
                .with_context(|| format!("connect to {url} for the count"))?;
            let tickets: Vec<(Uuid, String)> = sqlx::query_as(TICKETS)
                .bind(tenant)
                .bind(keys::PROJECT)
                .fetch_all(&mut db)
                .await?;
            let operations: Vec<(String, String, Option<Uuid>)> = sqlx::query_as(OPERATIONS)
                .bind(tenant)
                .fetch_all(&mut db)
                .await?;
            let _ = db.close().await;
            (tickets, operations)
        }};
    }
    let (tickets, operations) = match kind {
        DatabaseKind::Sqlite => read_with!(SqliteConnection),
        DatabaseKind::Postgres => read_with!(PgConnection),
    };
    Ok(Stored {
        tickets: tickets
            .into_iter()
            .map(|(id, title)| StoredTicket { id, title })
            .collect(),
        operations: operations
            .into_iter()
            .map(|(key, state, ticket_id)| StoredOperation {
                key,
                state,
                ticket_id,
            })
            .collect(),
    })
}
