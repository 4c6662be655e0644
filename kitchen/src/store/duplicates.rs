//! The likely-duplicate guard's SQL: the earlier write with the same
//! content under another key, the lock that lets two racing writes of the
//! same content decide one after the other, and a tenant's own guard mode.

use time::OffsetDateTime;
use uuid::Uuid;

use crate::KitchenError;
use crate::domain::duplicate::{EarlierWrite, GuardMode};
use crate::domain::operation::{OperationKey, OperationRecord, OperationState};
use crate::domain::tenant::{TenantId, TenantName};
use crate::domain::ticket::TicketId;

use super::postgres::PgSession;
use super::write::WriteTx;
use super::{Db, on_db};

/// The newest write of `record`'s tenant, action and content under another
/// key since `$6` that happened or may still happen (served by
/// `operations_content_idx`). The key breaks a tie of `created_at`; being
/// in the order, it also leaves that index the only one that yields the
/// order without a sort. This is the read on SQLite; PostgreSQL runs the
/// same query in [`EARLIER_WRITE_POSTGRES`]'s function: keep the two in
/// step.
const EARLIER_WRITE: &str = "SELECT operation_key, state, ticket_id, resource_id, created_at \
     FROM operations \
     WHERE tenant_id = $1 AND action = $2 AND fingerprint = $3 AND fingerprint_version = $4 \
     AND operation_key <> $5 AND created_at >= $6 \
     AND state IN ('succeeded', 'in_progress', 'unknown') \
     ORDER BY created_at DESC, operation_key DESC LIMIT 1";

/// [`EARLIER_WRITE`] on PostgreSQL: a function (migration 0013) whose
/// query is planned with sorts off, in one round trip and no transaction.
///
/// Why sorts off: until a table has statistics (a new database's first
/// minute, before autovacuum's first `ANALYZE`), the planner estimates one
/// matching row for every index that starts with the tenant, and takes the
/// smallest: the primary key, then a sort (before sorts were off: 1.0k-1.5k
/// REST creates/s at 16 clients on a fresh database against 2.8k with the
/// guard off, the primary key's scans reading 7.9M rows for 10k creates),
/// or the tenant's newest first, which yields `created_at DESC` with no
/// sort (before the key was in the order: 553-596 creates/s against
/// 810-857 after, the tenant's newest first reading 5.4M-6.7M rows in
/// 8 s). A connection keeps the plan it made in that first minute (a
/// generic plan, in PL/pgSQL as for a prepared statement) until the first
/// `ANALYZE`, so a wrong choice there is paid on every create. An
/// incremental sort (on the tenant's newest first) is a sort too.
///
/// Why a function: its `SET` clauses hold while it runs, its query's
/// planning included, where turning sorts off for one read otherwise took
/// a transaction of its own (`BEGIN` with the settings, the read,
/// `ROLLBACK`: three round trips per create).
const EARLIER_WRITE_POSTGRES: &str = "SELECT earlier_key, earlier_state, earlier_ticket_id, \
     earlier_resource_id, earlier_created_at FROM guard_earlier_write($1, $2, $3, $4, $5, $6)";

/// Waits for, then holds until the transaction ends, a lock named after
/// the content (tenant, action, fingerprint): two writes of the same
/// content then look for each other one after the other. (SQLite needs
/// none: it has one writer.)
const LOCK_CONTENT: &str =
    "SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2 || ':' || $3, 0))";

type EarlierRow = (String, String, Option<Uuid>, Option<Uuid>, OffsetDateTime);

fn earlier(record: &OperationRecord, row: EarlierRow) -> Result<EarlierWrite, KitchenError> {
    let (key, state, ticket_id, resource_id, created_at) = row;
    Ok(EarlierWrite {
        action: record.action,
        key: OperationKey::parse(key)
            .map_err(|e| KitchenError::CorruptRecord(format!("operation key: {e}")))?,
        state: OperationState::parse(&state)
            .ok_or_else(|| KitchenError::CorruptRecord(format!("operation state: {state}")))?,
        ticket_id: ticket_id.map(TicketId::from_uuid),
        resource_id,
        created_at,
    })
}

/// Binds [`EARLIER_WRITE`]'s parameters (or those of the same read
/// numbered from elsewhere: [`earlier_write_numbered_from`]), on either
/// driver.
macro_rules! bind_earlier {
    ($query:expr, $record:expr, $since:expr) => {
        $query
            .bind($record.tenant_id.as_uuid())
            .bind($record.action.as_str())
            .bind($record.fingerprint.hex())
            .bind($record.fingerprint.version())
            .bind($record.key.as_str())
            .bind($since)
    };
}

pub(crate) use bind_earlier;

/// [`EARLIER_WRITE`] (SQLite) with its parameters numbered from `first`
/// on (`$first` is the tenant, and so on in [`bind_earlier`]'s order): the
/// read as the last statement of a batch whose statements before it take
/// `first - 1` parameters.
pub(crate) fn earlier_write_numbered_from(first: usize) -> String {
    let mut sql = String::with_capacity(EARLIER_WRITE.len() + 16);
    let mut rest = EARLIER_WRITE;
    while let Some(at) = rest.find('$') {
        sql.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        // Every `$` of the read is a parameter: checked by a test below.
        let n: usize = rest[..digits].parse().unwrap_or(0);
        sql.push_str(&(n + first - 1).to_string());
        rest = &rest[digits..];
    }
    sql.push_str(rest);
    sql
}

/// The earlier write a row of [`EARLIER_WRITE`] names, for `record`.
pub(crate) fn earlier_of_row(
    record: &OperationRecord,
    row: &sqlx::sqlite::SqliteRow,
) -> Result<EarlierWrite, KitchenError> {
    let row: EarlierRow = sqlx::FromRow::from_row(row)?;
    earlier(record, row)
}

/// The earlier write `record` looks like a duplicate of, read on the pool
/// (after the write, for a warning).
pub(crate) async fn earlier_write(
    db: &Db,
    record: &OperationRecord,
    since: OffsetDateTime,
) -> Result<Option<EarlierWrite>, KitchenError> {
    let row: Option<EarlierRow> = match db {
        Db::Sqlite(pool) => {
            bind_earlier!(sqlx::query_as(EARLIER_WRITE), record, since)
                .fetch_optional(pool)
                .await?
        }
        Db::Postgres(pool) => {
            bind_earlier!(sqlx::query_as(EARLIER_WRITE_POSTGRES), record, since)
                .fetch_optional(pool)
                .await?
        }
    };
    row.map(|row| earlier(record, row)).transpose()
}

/// The same on PostgreSQL, on the session whose statement made the write
/// (after its commit: the statement commits on its own).
pub(crate) async fn earlier_write_on(
    session: &mut PgSession<'_>,
    record: &OperationRecord,
    since: OffsetDateTime,
) -> Result<Option<EarlierWrite>, KitchenError> {
    let row: Option<EarlierRow> =
        bind_earlier!(sqlx::query_as(EARLIER_WRITE_POSTGRES), record, since)
            .fetch_optional(session)
            .await?;
    row.map(|row| earlier(record, row)).transpose()
}

/// The guard's warning from one of the reads above. The write has
/// committed by then, so a read that failed costs the warning, never the
/// write: it is logged and the answer goes without.
pub(crate) fn warning(read: Result<Option<EarlierWrite>, KitchenError>) -> Option<EarlierWrite> {
    read.unwrap_or_else(|e| {
        tracing::warn!(
            error = %crate::error_chain(&e),
            "could not look for an earlier write with the same content; answering without"
        );
        None
    })
}

/// The same, inside the write's transaction and after the content's lock,
/// so that of two racing writes of the same content the second sees the
/// first (for a refusal).
pub(crate) async fn earlier_write_locked(
    tx: &mut WriteTx,
    record: &OperationRecord,
    since: OffsetDateTime,
) -> Result<Option<EarlierWrite>, KitchenError> {
    let row: Option<EarlierRow> = match tx {
        WriteTx::Sqlite(conn) => {
            bind_earlier!(sqlx::query_as(EARLIER_WRITE), record, since)
                .fetch_optional(&mut **conn)
                .await?
        }
        WriteTx::Postgres(t) => {
            sqlx::query(LOCK_CONTENT)
                .bind(record.tenant_id.as_uuid().to_string())
                .bind(record.action.as_str())
                .bind(record.fingerprint.hex())
                .execute(&mut **t)
                .await?;
            bind_earlier!(sqlx::query_as(EARLIER_WRITE_POSTGRES), record, since)
                .fetch_optional(&mut **t)
                .await?
        }
    };
    row.map(|row| earlier(record, row)).transpose()
}

/// The tenant's own guard mode; `None`: the deployment's.
pub(crate) async fn mode_of(db: &Db, tenant: TenantId) -> Result<Option<GuardMode>, KitchenError> {
    let row: Option<(Option<String>,)> = on_db!(db, pool => {
        sqlx::query_as("SELECT duplicate_guard FROM tenants WHERE id = $1")
            .bind(tenant.as_uuid())
            .fetch_optional(pool)
            .await?
    });
    row.and_then(|(mode,)| mode)
        .map(|mode| {
            mode.parse()
                .map_err(|e: String| KitchenError::CorruptRecord(format!("tenant guard mode: {e}")))
        })
        .transpose()
}

/// Sets the tenant named `name`'s own guard mode (`None`: the
/// deployment's again); `false` when there is no such tenant.
pub(crate) async fn set_mode(
    db: &Db,
    name: &TenantName,
    mode: Option<GuardMode>,
) -> Result<bool, KitchenError> {
    let done = on_db!(db, pool => {
        sqlx::query("UPDATE tenants SET duplicate_guard = $1 WHERE name = $2")
            .bind(mode.map(GuardMode::as_str))
            .bind(name.as_str())
            .execute(pool)
            .await?
            .rows_affected()
    });
    Ok(done == 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::{Connection as _, PgConnection};

    #[test]
    fn the_read_numbered_from_elsewhere_is_the_read_with_its_parameters_moved() {
        assert_eq!(earlier_write_numbered_from(1), EARLIER_WRITE);
        let moved = earlier_write_numbered_from(37);
        assert!(
            moved.contains(
                "tenant_id = $37 AND action = $38 AND fingerprint = $39 \
                 AND fingerprint_version = $40 AND operation_key <> $41 AND created_at >= $42 "
            ),
            "{moved}"
        );
        // Nothing else moved.
        let without_numbers = |sql: &str| sql.replace(|c: char| c.is_ascii_digit(), "");
        assert_eq!(without_numbers(&moved), without_numbers(EARLIER_WRITE));
        // Every `$` of the read is one of its six parameters, each once.
        assert_eq!(EARLIER_WRITE.matches('$').count(), 6);
        for n in 1..=6 {
            assert_eq!(EARLIER_WRITE.matches(&format!("${n}")).count(), 1, "${n}");
        }
    }

    /// The read a connection keeps for the guard uses the content index,
    /// even when the connection made its plan on a new, tiny table (as
    /// every connection of a new database does in its first minute) and
    /// the tenant's operations have grown since: a plan on the tenant's
    /// newest first would read all of them on every create.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_keeps_the_guards_read_on_the_content_index_from_a_new_table_on() {
        let db = crate::testing::TestDatabase::postgres().await;
        // Migrates it.
        crate::Kitchen::connect(db.url(), crate::KitchenConfig::default())
            .await
            .expect("kitchen")
            .close()
            .await;
        let mut conn = PgConnection::connect(db.url()).await.expect("connect");
        let tenant = Uuid::now_v7();
        sqlx::query("INSERT INTO tenants (id, name, created_at) VALUES ($1, 'acme', now())")
            .bind(tenant)
            .execute(&mut conn)
            .await
            .expect("tenant");
        // `n` operations of the tenant, each with content of its own.
        let add = async |conn: &mut PgConnection, from: i32, to: i32| {
            sqlx::query(
                "INSERT INTO operations (tenant_id, action, operation_key, fingerprint_version, \
                 fingerprint, state, created_at, retained_until) \
                 SELECT $1, 'create_ticket', 'key-' || n, 1, md5(n::text), 'succeeded', now(), \
                 now() + interval '1 day' FROM generate_series($2::int, $3::int) AS n",
            )
            .bind(tenant)
            .bind(from)
            .bind(to)
            .execute(conn)
            .await
            .expect("operations");
        };
        // The read as the guard runs it: one statement on a connection.
        let read = async |conn: &mut PgConnection| {
            let _: Option<EarlierRow> = sqlx::query_as(EARLIER_WRITE_POSTGRES)
                .bind(tenant)
                .bind("create_ticket")
                .bind("0123456789abcdef")
                .bind(1_i16)
                .bind("key-new")
                .bind(OffsetDateTime::now_utc() - time::Duration::hours(1))
                .fetch_optional(&mut *conn)
                .await
                .expect("read");
        };
        // Enough that the content index, the widest, spans more than one
        // page and the tenant's newest first does not: the planner then
        // finds the latter cheaper to descend.
        add(&mut conn, 1, 200).await;
        // Past PostgreSQL's five custom plans: the sixth call on may keep a
        // generic one, made now.
        for _ in 0..8 {
            read(&mut conn).await;
        }
        add(&mut conn, 201, 3_000).await;

        // What each index of `operations` (and the table itself, for a
        // sequential scan) served to five reads with the plan kept, counted
        // by the transaction's own statistics.
        let mut tx = conn.begin().await.expect("begin");
        for _ in 0..5 {
            read(&mut *tx).await;
        }
        let served: Vec<(String, i64, i64)> = sqlx::query_as(
            "SELECT c.relname::text, pg_stat_get_xact_numscans(c.oid), \
             pg_stat_get_xact_tuples_returned(c.oid) \
             FROM pg_class c \
             WHERE c.oid = 'operations'::regclass \
             OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'operations'::regclass) \
             ORDER BY 1",
        )
        .fetch_all(&mut *tx)
        .await
        .expect("statistics");
        let on_content = served
            .iter()
            .any(|(name, scans, _)| name == "operations_content_idx" && *scans >= 5);
        let elsewhere = served
            .iter()
            .any(|(name, scans, _)| name != "operations_content_idx" && *scans > 0);
        assert!(
            on_content && !elsewhere,
            "the guard's read is served by (relation, scans, rows): {served:?}"
        );
    }
}
