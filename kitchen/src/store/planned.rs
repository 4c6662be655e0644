//! Writes whose rows are known before anything is read (a create): the
//! rows, and on PostgreSQL the claim and the rows in one statement.
//!
//! Why one statement: a create on PostgreSQL was BEGIN, the claim, the
//! ticket, the history entry, the result and COMMIT, six round trips of
//! which the database's work is a fraction. Written as one statement with
//! data-modifying CTEs it is one round trip and one commit, and still one
//! transaction: every part of it commits or none does. The rows are
//! inserted `FROM claim`, so when the key is already taken (the claim
//! inserts nothing) nothing else is inserted either; the unique key still
//! does the waiting, bounded by the connection's `lock_timeout`. The
//! claimed row carries its result from the start (it is known), so no
//! `UPDATE` follows. Constraints (history → ticket) are checked at the end
//! of the statement, when every row is in.
//!
//! On SQLite the same write is one call into the group writer's
//! transaction: the claim and each row as statements of one batch, each
//! row inserted only if the statement before it inserted one (`WHERE
//! changes() = 1`), so a taken key again inserts nothing. SQLite runs a
//! connection's statements on a thread of its own, and the group writer
//! is the one path every write takes there: one call instead of one per
//! statement is fewer hand-overs between that thread and the server's.
//!
//! The SQL is built from the store's own statements ([`CLAIM`],
//! [`INSERT_TICKET`], [`INSERT_HISTORY`]), never a copy of them.
//!
//! The new ticket's description is stored once: the record's frozen answer
//! and the ticket's history entry are stored around it (`shared_text.rs`).

use futures::TryStreamExt as _;
use sqlx::Either;
use time::OffsetDateTime;

use crate::KitchenError;
use crate::domain::duplicate::EarlierWrite;
use crate::domain::history::HistoryEntry;
use crate::domain::operation::OperationRecord;
use crate::domain::tenant::TenantId;
use crate::domain::ticket::Ticket;

use super::group_commit::Savepoint;
use super::history::{self, INSERT_HISTORY, bind_history};
use super::operations::{CLAIM, bind_claim};
use super::postgres::{PgPool, PgSession};
use super::shared_text::{self, Stored};
use super::tickets::{self, INSERT_TICKET, bind_insert_ticket};
use super::write::{self, WriteTx};
use super::{Db, duplicates};

/// One row a planned write inserts.
#[derive(Debug, Clone)]
pub(crate) enum NewRow {
    /// A new ticket.
    Ticket(Ticket),
    /// A history entry.
    History(HistoryEntry),
}

impl NewRow {
    /// The row's `INSERT … VALUES (…)` statement.
    fn insert_statement(&self) -> &'static str {
        match self {
            NewRow::Ticket(_) => INSERT_TICKET,
            NewRow::History(_) => INSERT_HISTORY,
        }
    }
}

/// The ticket a planned write makes, if it makes one: the rows that may
/// share its description.
fn new_ticket(rows: &[NewRow]) -> Option<&Ticket> {
    rows.iter().find_map(|row| match row {
        NewRow::Ticket(ticket) => Some(ticket),
        NewRow::History(_) => None,
    })
}

/// The description a planned write's record may be stored around: its new
/// ticket's.
pub(crate) fn shared_description(rows: &[NewRow]) -> Option<&str> {
    new_ticket(rows)
        .and_then(|t| t.description.as_ref())
        .map(|d| d.as_str())
}

/// Each row's history changes as JSON (`None` for a ticket row): made
/// before binding, since bound values must outlive the query.
fn changes_of(rows: &[NewRow]) -> Result<Vec<Option<String>>, KitchenError> {
    rows.iter()
        .map(|row| match row {
            NewRow::History(entry) => history::changes_json(entry).map(Some),
            NewRow::Ticket(_) => Ok(None),
        })
        .collect()
}

/// A history entry's changes as stored: around the new ticket's
/// description when the entry is that ticket's.
fn stored_changes<'a>(entry: &HistoryEntry, changes: &'a str, rows: &[NewRow]) -> Stored<'a> {
    match new_ticket(rows) {
        Some(ticket) if ticket.id == entry.ticket_id => shared_text::split(
            changes,
            shared_text::IN_HISTORY,
            ticket.description.as_ref().map(|d| d.as_str()),
        ),
        _ => Stored::whole(changes),
    }
}

/// The pool that claims a key and inserts a planned write's rows in one
/// statement, if this database does: PostgreSQL. (SQLite is in-process:
/// a statement costs no round trip, so it gains nothing.)
pub(crate) fn in_one_statement(db: &Db) -> Option<&PgPool> {
    match db {
        Db::Postgres(pool) => Some(pool),
        Db::Sqlite(_) => None,
    }
}

/// Inserts `rows` in an open write transaction, one statement each: the
/// planned write's rows where the claim is a statement of its own (SQLite,
/// or any transaction that does more).
pub(crate) async fn insert(
    tx: &mut WriteTx,
    tenant: TenantId,
    rows: &[NewRow],
) -> Result<(), KitchenError> {
    for row in rows {
        match row {
            NewRow::Ticket(ticket) => tickets::insert(tx, tenant, ticket).await?,
            NewRow::History(entry) => {
                let changes = history::changes_json(entry)?;
                let stored = stored_changes(entry, &changes, rows);
                history::insert(tx, tenant, entry, stored).await?;
            }
        }
    }
    Ok(())
}

/// Binds, to `$query` (the SQL of [`statement`] or [`batch`]), the claim
/// of `$record` carrying `$result`, then each of `$rows` with its
/// `$changes` (from [`changes_of`]). Returns early from the caller if a
/// history row has no changes.
macro_rules! bind_planned {
    ($query:expr, $record:expr, $result:expr, $rows:expr, $changes:expr) => {{
        let mut query = bind_claim!($query, $record, $result);
        for (row, changes) in $rows.iter().zip($changes) {
            query = match (row, changes) {
                (NewRow::Ticket(ticket), _) => {
                    bind_insert_ticket!(query, $record.tenant_id, ticket)
                }
                (NewRow::History(entry), Some(changes)) => {
                    let stored = stored_changes(entry, changes, $rows);
                    bind_history!(query, $record.tenant_id, entry, stored)
                }
                (NewRow::History(_), None) => {
                    return Err(KitchenError::CorruptRecord(
                        "a history row without its changes".into(),
                    ));
                }
            };
        }
        query
    }};
}

/// Claims `record` (which already carries its result) and inserts `rows`
/// in one statement on `session`, its own transaction (PostgreSQL). `true`
/// when this call claimed the key and everything is committed; `false`
/// when another attempt recorded the key first (nothing was written).
pub(crate) async fn claim_and_insert(
    session: &mut PgSession<'_>,
    record: &OperationRecord,
    rows: &[NewRow],
) -> Result<bool, KitchenError> {
    let sql = statement(rows.iter().map(NewRow::insert_statement));
    let changes = changes_of(rows)?;
    let result = write::stored_result(record, shared_description(rows));
    // Built only from the store's own constant statements and numbered
    // parameters: no caller text is ever part of it.
    let query = bind_planned!(
        sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql)),
        record,
        result,
        rows,
        &changes
    );
    let claimed = query.fetch_one(session).await?;
    Ok(claimed == 1)
}

/// What a planned write's batch did (SQLite).
#[derive(Debug)]
pub(crate) enum Batched {
    /// Another attempt recorded the key first: nothing was inserted.
    Taken,
    /// The key is claimed and every row inserted; with the guard's read,
    /// the earlier write of the same content it found.
    Claimed {
        possible_duplicate_of: Option<EarlierWrite>,
    },
}

/// The same inside an open SQLite transaction (the group writer's), in
/// one call. The call opens the job's savepoint first, and says so to
/// `savepoint` once those statements completed. The caller commits, or
/// rolls back to the savepoint what an error left.
///
/// With `warn_since` (the likely-duplicate guard in `warn` mode) the
/// guard's read is the batch's last statement: it costs no hand-over of
/// its own to a connection's thread (each is a wake-up on both sides, and
/// a read on the pool also meets a page cache the commit just made stale),
/// and it still comes after this write's rows. The group writer runs one
/// job at a time, and a group begins only once the one before committed,
/// so of two writes of the same content the second to run sees the first,
/// as a read after each commit would. A read that fails costs the warning,
/// never the write.
pub(crate) async fn claim_and_insert_in(
    tx: &mut WriteTx,
    record: &OperationRecord,
    rows: &[NewRow],
    savepoint: &mut Savepoint,
    warn_since: Option<OffsetDateTime>,
) -> Result<Batched, KitchenError> {
    let WriteTx::Sqlite(conn) = tx else {
        return Err(KitchenError::CorruptRecord(
            "a batch of SQLite statements reached a PostgreSQL transaction".into(),
        ));
    };
    let sql = format!(
        "{}; {}",
        savepoint.opening(),
        batch(
            rows.iter().map(NewRow::insert_statement),
            warn_since.is_some()
        )
    );
    let changes = changes_of(rows)?;
    let result = write::stored_result(record, shared_description(rows));
    // As above: the store's own statements and numbered parameters only.
    let mut query = bind_planned!(
        sqlx::query(sqlx::AssertSqlSafe(sql)),
        record,
        result,
        rows,
        &changes
    );
    if let Some(since) = warn_since {
        query = duplicates::bind_earlier!(query, record, since);
    }
    // One result per statement, in order, each as it completes: the
    // savepoint's first, then the claim's and each row's, then the
    // guard's row, if any, and its end.
    savepoint.sending();
    let mut results = sqlx::Executor::fetch_many(&mut **conn, query);
    for _ in 0..savepoint.opening_statements() {
        let Some(Either::Left(_)) = results.try_next().await? else {
            return Err(KitchenError::CorruptRecord(
                "a planned write's batch did not open its savepoint first".into(),
            ));
        };
    }
    savepoint.opened();
    // The rows the claim and each row changed, added up: the claim and
    // every row, or nothing at all. (Counted per statement: SQLite counts
    // a statement that changes no row, the guard's read among them, as
    // the last one that did.)
    let mut changed = 0;
    for _ in 0..=rows.len() {
        let Some(Either::Left(done)) = results.try_next().await? else {
            return Err(KitchenError::CorruptRecord(
                "a planned write's batch did not insert as its statements say".into(),
            ));
        };
        changed += done.rows_affected();
    }
    let claimed = match changed {
        0 => false,
        n if n == 1 + rows.len() as u64 => true,
        n => {
            return Err(KitchenError::CorruptRecord(format!(
                "a planned write changed {n} rows, neither none nor its claim and {} rows",
                rows.len()
            )));
        }
    };
    // The write is done (or the key taken); what is left is the read.
    let mut earlier = Ok(None);
    while let Some(result) = results.try_next().await.transpose() {
        match result {
            Ok(Either::Right(row)) if claimed => {
                earlier = duplicates::earlier_of_row(record, &row).map(Some);
            }
            Ok(_) => {}
            Err(e) => {
                earlier = Err(e.into());
                break;
            }
        }
    }
    Ok(if claimed {
        Batched::Claimed {
            possible_duplicate_of: duplicates::warning(earlier),
        }
    } else {
        Batched::Taken
    })
}

/// Each of `inserts` (an `INSERT … VALUES (…)` of the store) as its head
/// (`INSERT INTO t (…)`) and its values renumbered as the parameters that
/// follow the claim's and those of the inserts before it.
fn after_the_claim<'s>(inserts: impl IntoIterator<Item = &'s str>) -> Vec<(&'s str, String)> {
    let mut next_param = CLAIM.matches('$').count() + 1;
    inserts
        .into_iter()
        .map(|insert| {
            let (head, values) = insert.split_once(" VALUES ").unwrap_or((insert, "")); // every store INSERT has VALUES; tested below
            let count = values.matches('$').count();
            let params = (next_param..next_param + count)
                .map(|n| format!("${n}"))
                .collect::<Vec<_>>()
                .join(", ");
            next_param += count;
            (head, params)
        })
        .collect()
}

/// The one statement (PostgreSQL) that claims a key and inserts rows made
/// by `inserts`, answering how many keys it claimed (0 or 1).
pub(crate) fn statement<'s>(inserts: impl IntoIterator<Item = &'s str>) -> String {
    let mut sql = format!("WITH claim AS ({CLAIM} RETURNING 1)");
    for (i, (head, params)) in after_the_claim(inserts).into_iter().enumerate() {
        sql.push_str(&format!(", row{i} AS ({head} SELECT {params} FROM claim)"));
    }
    sql.push_str(" SELECT count(*) FROM claim");
    sql
}

/// The batch (SQLite) that claims a key and inserts rows made by
/// `inserts`, each only if the statement before it inserted its row; then,
/// with `read_guard`, the likely-duplicate guard's read, its parameters
/// after all of those.
fn batch<'s>(inserts: impl IntoIterator<Item = &'s str>, read_guard: bool) -> String {
    let mut sql = CLAIM.to_string();
    for (head, params) in after_the_claim(inserts) {
        sql.push_str(&format!("; {head} SELECT {params} WHERE changes() = 1"));
    }
    if read_guard {
        // Each parameter appears once in the batch, so the next is one
        // past as many as there are.
        let next = sql.matches('$').count() + 1;
        sql.push_str("; ");
        sql.push_str(&duplicates::earlier_write_numbered_from(next));
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statement_claims_then_inserts_each_row_from_the_claim() {
        let sql = statement([INSERT_TICKET, INSERT_HISTORY]);
        assert!(sql.starts_with("WITH claim AS (INSERT INTO operations"));
        assert!(sql.contains("DO NOTHING RETURNING 1)"));
        assert!(sql.contains(", row0 AS (INSERT INTO tickets"));
        assert!(sql.contains(
            "SELECT $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26 FROM claim)"
        ));
        assert!(sql.contains(", row1 AS (INSERT INTO ticket_history"));
        assert!(
            sql.contains("SELECT $27, $28, $29, $30, $31, $32, $33, $34, $35, $36 FROM claim)")
        );
        assert!(sql.ends_with(" SELECT count(*) FROM claim"));
        assert!(!sql.contains("VALUES ($14"), "{sql}");
    }

    #[test]
    fn the_batch_inserts_each_row_only_after_the_statement_before_inserted_one() {
        let sql = batch([INSERT_TICKET, INSERT_HISTORY], false);
        assert!(sql.starts_with(CLAIM), "{sql}");
        assert!(sql.contains("; INSERT INTO tickets"), "{sql}");
        assert!(sql.contains(
            "SELECT $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26 WHERE changes() = 1; INSERT INTO ticket_history"
        ), "{sql}");
        assert!(
            sql.ends_with(
                "SELECT $27, $28, $29, $30, $31, $32, $33, $34, $35, $36 WHERE changes() = 1"
            ),
            "{sql}"
        );
    }

    #[test]
    fn the_guards_read_ends_the_batch_with_the_parameters_after_the_rows() {
        let without = batch([INSERT_TICKET, INSERT_HISTORY], false);
        let with = batch([INSERT_TICKET, INSERT_HISTORY], true);
        assert_eq!(
            with,
            format!("{without}; {}", duplicates::earlier_write_numbered_from(37))
        );
        assert!(with.contains("tenant_id = $37 AND action = $38"), "{with}");
    }

    #[test]
    fn every_planned_row_statement_is_an_insert_with_values() {
        for insert in [INSERT_TICKET, INSERT_HISTORY] {
            assert!(insert.starts_with("INSERT INTO "), "{insert}");
            assert!(insert.contains(" VALUES ("), "{insert}");
        }
    }
}
