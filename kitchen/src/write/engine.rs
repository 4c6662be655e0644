//! The path every write takes: validate, fingerprint, replay or conflict
//! from a committed record, else claim the key, apply, freeze the result and
//! commit, all in one transaction.

use std::time::Duration;

use time::OffsetDateTime;

use crate::KitchenError;
use crate::domain::fault::Written;
use crate::domain::operation::{OperationKey, OperationRecord, OperationState, ResultSnapshot};
use crate::outcome::{Outcome, RETRY_AFTER, Receipt, Refusal};
use crate::store::group_commit::{
    BoxFuture, GroupWriter, JobError, Savepoint, Statements, Verdict,
};
use crate::store::planned::Batched;
use crate::store::postgres::PgPool;
use crate::store::write::WriteTx;
use crate::store::{self, Db, is_lock_timeout, write};

use crate::domain::tenant::Actor;

use super::keys::{KeyRules, TakenKey};
use super::replay_cache::ReplayCache;
use super::{Planned, WriteAction, WriteContext, WriteResult};

/// How a write runs: the database, how long to wait for a key another
/// attempt holds, and the rules of a key's life.
#[derive(Debug, Clone)]
pub(crate) struct Engine {
    pub(crate) db: Db,
    pub(crate) wait_bound: Duration,
    pub(crate) keys: KeyRules,
    /// Finished answers in memory: a retry within the window skips the
    /// database.
    pub(crate) replays: ReplayCache,
    /// Where the transactions run when they are grouped (always on SQLite);
    /// `None`: each write begins and commits its own on the pool.
    pub(crate) writer: Option<GroupWriter>,
}

/// What one try of the transaction found.
#[expect(
    clippy::large_enum_variant,
    reason = "returned once per write and matched at once; boxing would allocate on every write"
)]
enum Try<T> {
    /// Decided: created, or refused.
    Done(Outcome<T>),
    /// Another attempt recorded the key first; read its record.
    Taken,
}

impl Engine {
    /// Performs `request` at most once per (tenant, action, key).
    ///
    /// The first attempt with a key commits the effect and the operation
    /// record in one transaction and answers [`Outcome::Created`]. Any later
    /// attempt with the same key and the same meaning answers
    /// [`Outcome::Replayed`] with the original snapshot; with a different
    /// meaning, [`Outcome::Conflict`]. An attempt racing the first waits for
    /// it up to the wait bound, then replays, or answers
    /// [`Outcome::InProgress`]. Invalid input answers [`Outcome::Invalid`] and
    /// a refused one [`Outcome::Refused`], both leaving the key unused.
    ///
    /// With `refuse_duplicates` (the likely-duplicate guard in `confirm`
    /// mode, its window), a new key whose content matches a write under
    /// another key within that window is refused
    /// ([`Refusal::PossibleDuplicate`]) in the transaction that would have
    /// claimed it, after a lock on the content: of two racing writes of the
    /// same content, one is made and the other refused. With
    /// `warn_duplicates` (the guard in `warn` mode, its window), a write it
    /// creates names such an earlier write in its receipt, read after its
    /// own rows: after the commit, or for a create in SQLite's group writer
    /// as the last statement of its batch (one job at a time, so there
    /// too each of two racing writes reads after its own write, and at
    /// least the second sees the first).
    pub(crate) async fn perform<A: WriteAction>(
        &self,
        actor: Actor,
        key: &OperationKey,
        command: A::Command,
        refuse_duplicates: Option<Duration>,
        warn_duplicates: Option<Duration>,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let now = self.keys.clock.now();
        let duplicates_since = refuse_duplicates.map(|window| now - window);
        let warn_since = warn_duplicates.map(|window| now - window);
        let fingerprint = KeyRules::fingerprint::<A>(&command);
        // Fastest path for retries: the finished answer is in memory.
        if let Some(outcome) =
            self.replays
                .answer::<A::Result>(actor.tenant, A::ACTION, key, &fingerprint)
        {
            // This path awaits nothing, so a caller that loops over it (a
            // client in the same process, a benchmark) would never give its
            // worker back: a timer or another task on that runtime would
            // starve, and the loop never ends. Spending tokio's cooperative
            // budget, as every database read does, makes it yield every
            // so often.
            tokio::task::consume_budget().await;
            return Ok(outcome);
        }
        let record = self
            .keys
            .record::<A>(actor, key, fingerprint, now, OperationState::Succeeded);
        // A write the guard may refuse reads before it writes: never in one
        // statement.
        let planned = match duplicates_since {
            Some(_) => None,
            None => self.planned::<A>(actor, &record, &command),
        };
        // Fast path for retries: a committed record is final (the effect and
        // its record committed together and never change), so one indexed
        // read decides replay or conflict without a write transaction. This
        // is not check-then-insert: when no record is found, the claim below
        // still decides, and its unique key settles any race. A planned
        // write skips it: its claim, which comes with its rows (one
        // statement on PostgreSQL, one call in SQLite's group writer), tells
        // a taken key just as well, and a new key (the common case) then
        // costs no read. (A retry whose answer is in memory never gets
        // here.)
        if planned.is_none()
            && let Some(original) = store::operations::find(&self.db, actor.tenant, A::ACTION, key)
                .await
                .map_err(KitchenError::nothing_written)?
        {
            match self
                .keys
                .answer_taken::<A>(&self.db, original, &record.fingerprint, now)
                .await?
            {
                TakenKey::Answer(outcome) => return Ok(self.remember(outcome)),
                TakenKey::Free => {}
            }
        }
        // Once started, an attempt runs to its end on its own task: a caller
        // that goes away (a dropped connection, a server-side timeout) drops
        // only its wait for the answer, never the write half-way. The commit
        // then still happens once, and the caller's retry replays it.
        let engine = self.clone();
        let outcome = tokio::spawn(async move {
            engine
                .decide::<A>(
                    actor,
                    record,
                    command,
                    planned,
                    duplicates_since,
                    warn_since,
                )
                .await
        })
        .await
        .map_err(|e| KitchenError::Interrupted(e.to_string()))?
        .map_err(Self::as_written_nothing)?;
        Ok(self.remember(outcome))
    }

    /// A database error of the write path as what it means for the
    /// caller. Only a commit can make the write land, and every commit of
    /// this path turns an error that leaves that unknown into
    /// [`Written::Unknown`] on the spot (`commit_failure`); after a commit
    /// that succeeded nothing else can fail. So any other storage fault
    /// here struck before a commit: nothing was written.
    fn as_written_nothing(error: KitchenError) -> KitchenError {
        error.nothing_written()
    }

    /// What `A` writes, when it is known before anything is read: its
    /// claim then comes with its rows.
    fn planned<A: WriteAction>(
        &self,
        actor: Actor,
        record: &OperationRecord,
        command: &A::Command,
    ) -> Option<Planned<A::Result>> {
        A::planned(command, &WriteContext::of(actor, record))
    }

    /// Keeps a finished answer in memory for the retries to come.
    fn remember<T: WriteResult>(&self, outcome: Outcome<T>) -> Outcome<T> {
        if let Outcome::Created(receipt) | Outcome::Replayed(receipt) = &outcome {
            self.replays.keep(&receipt.operation, &receipt.result);
        }
        outcome
    }

    /// The transaction half of [`Engine::perform`] alone, without the fast
    /// path's read or a task of its own: what the benchmarks' ceiling runs.
    #[cfg(feature = "bench")]
    pub(crate) async fn transaction<A: WriteAction>(
        &self,
        actor: Actor,
        key: &OperationKey,
        command: A::Command,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let now = self.keys.clock.now();
        let fingerprint = KeyRules::fingerprint::<A>(&command);
        let record = self
            .keys
            .record::<A>(actor, key, fingerprint, now, OperationState::Succeeded);
        let planned = self.planned::<A>(actor, &record, &command);
        // One transaction per create on the pool, never the group writer:
        // this is the per-transaction yardstick the writer is measured by.
        let alone = Engine {
            writer: None,
            ..self.clone()
        };
        alone
            .decide::<A>(actor, record, command, planned, None, None)
            .await
    }

    /// The transaction half of [`Engine::perform`].
    async fn decide<A: WriteAction>(
        &self,
        actor: Actor,
        record: OperationRecord,
        command: A::Command,
        planned: Option<Planned<A::Result>>,
        duplicates_since: Option<OffsetDateTime>,
        warn_since: Option<OffsetDateTime>,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let context = WriteContext::of(actor, &record);
        let in_progress = Outcome::InProgress {
            retry_after: RETRY_AFTER,
        };
        // A claim can only lose to a record that is gone (or forgotten) by
        // the time we read it if it was past its tombstone horizon; then the
        // key is free again and one more try decides it.
        for _ in 0..3 {
            match self
                .try_once::<A>(
                    &record,
                    &command,
                    &context,
                    planned.as_ref(),
                    duplicates_since,
                    warn_since,
                )
                .await
            {
                Ok(Try::Done(outcome)) => return Ok(outcome),
                Ok(Try::Taken) => {
                    let original = store::operations::find(
                        &self.db,
                        record.tenant_id,
                        record.action,
                        &record.key,
                    )
                    .await?;
                    if let Some(original) = original {
                        let taken = self
                            .keys
                            .answer_taken::<A>(
                                &self.db,
                                original,
                                &record.fingerprint,
                                record.created_at,
                            )
                            .await?;
                        if let TakenKey::Answer(outcome) = taken {
                            return Ok(outcome);
                        }
                    }
                }
                Err(KitchenError::Database(e)) if is_lock_timeout(&e) => return Ok(in_progress),
                Err(e) => return Err(e),
            }
        }
        Ok(in_progress)
    }

    /// One try: claim, apply, freeze, commit. With a group writer the
    /// statements run in its next transaction (their own savepoint in it);
    /// otherwise in a transaction of their own. Either way the answer comes
    /// after the commit, and with `warn_since` after the guard's read too.
    async fn try_once<A: WriteAction>(
        &self,
        record: &OperationRecord,
        command: &A::Command,
        context: &WriteContext,
        planned: Option<&Planned<A::Result>>,
        duplicates_since: Option<OffsetDateTime>,
        warn_since: Option<OffsetDateTime>,
    ) -> Result<Try<A::Result>, KitchenError> {
        let one_statement = store::planned::in_one_statement(&self.db);
        let tried = match (planned, &self.writer, one_statement) {
            (Some(planned), _, Some(pool)) => {
                Self::try_in_one_statement(pool, record, planned, warn_since).await?
            }
            (planned, Some(writer), _) => {
                // A planned write with nothing to read before its rows is
                // one batch (`GroupJob::opens_savepoint`), which reads the
                // guard's warning too; any other reads it after its group
                // committed.
                let reads_in_batch = planned.is_some() && duplicates_since.is_none();
                let attempt = GroupJob::<A> {
                    record: record.clone(),
                    command: command.clone(),
                    context: context.clone(),
                    planned: planned.cloned(),
                    duplicates_since,
                    warn_since: warn_since.filter(|_| reads_in_batch),
                };
                let tried = Self::try_in_group(writer, attempt).await?;
                if reads_in_batch {
                    tried
                } else {
                    self.warned(tried, warn_since).await
                }
            }
            (_, None, _) => {
                let tried = self
                    .try_alone::<A>(record, command, context, duplicates_since)
                    .await?;
                self.warned(tried, warn_since).await
            }
        };
        // Committed, and nobody answered yet: the window a crash makes hard.
        if let Try::Done(Outcome::Created(_)) = &tried {
            crate::faults::after_commit(&record.key);
        }
        Ok(tried)
    }

    /// A created write with the guard's warning (`warn_since`), read on the
    /// pool once the write committed.
    async fn warned<R>(&self, mut tried: Try<R>, warn_since: Option<OffsetDateTime>) -> Try<R> {
        if let (Try::Done(Outcome::Created(receipt)), Some(since)) = (&mut tried, warn_since) {
            receipt.possible_duplicate_of = store::duplicates::warning(
                store::duplicates::earlier_write(&self.db, &receipt.operation, since).await,
            );
        }
        tried
    }

    /// A planned write: the claim and its rows in one statement, the result
    /// recorded with the claim; then, with `warn_since`, the guard's read on
    /// the same connection (borrowing one twice cost a create a round trip
    /// more, sqlx's ping as each comes back: docs/performance.md).
    async fn try_in_one_statement<R: WriteResult>(
        pool: &PgPool,
        record: &OperationRecord,
        planned: &Planned<R>,
        warn_since: Option<OffsetDateTime>,
    ) -> Result<Try<R>, KitchenError> {
        let (snapshot, operation) = planned_record(record, &planned.result, planned.ticket)?;
        let mut session = pool.session().await?;
        // One statement that commits on its own: it is its own commit.
        if !store::planned::claim_and_insert(&mut session, &operation, &planned.rows)
            .await
            .map_err(commit_failure)?
        {
            return Ok(Try::Taken);
        }
        let possible_duplicate_of = match warn_since {
            Some(since) => store::duplicates::warning(
                store::duplicates::earlier_write_on(&mut session, &operation, since).await,
            ),
            None => None,
        };
        Ok(Try::Done(Outcome::Created(Receipt {
            possible_duplicate_of,
            result: planned.result.clone(),
            snapshot,
            operation,
        })))
    }

    /// The statements in the group writer's next transaction; answered once
    /// that transaction committed.
    async fn try_in_group<A: WriteAction>(
        writer: &GroupWriter,
        attempt: GroupJob<A>,
    ) -> Result<Try<A::Result>, KitchenError> {
        match writer.submit(attempt).await {
            Ok(tried) => Ok(tried),
            // Waited past the wait bound, in the queue or for the write
            // lock: nothing was written, as with a lock timeout.
            Err(JobError::Busy) => Ok(Try::Done(Outcome::InProgress {
                retry_after: RETRY_AFTER,
            })),
            Err(JobError::Failed(e)) => Err(e),
        }
    }

    /// The statements in a transaction of their own on the pool.
    async fn try_alone<A: WriteAction>(
        &self,
        record: &OperationRecord,
        command: &A::Command,
        context: &WriteContext,
        duplicates_since: Option<OffsetDateTime>,
    ) -> Result<Try<A::Result>, KitchenError> {
        let mut tx = write::begin(&self.db, self.wait_bound).await?;
        let (verdict, tried) =
            Self::statements::<A>(&mut tx, record, command, context, duplicates_since).await?;
        match verdict {
            Verdict::Keep => write::commit(tx).await.map_err(commit_failure)?,
            Verdict::Discard => write::rollback(tx).await?,
        }
        Ok(tried)
    }

    /// What one try runs inside a transaction it neither begins nor ends:
    /// claim the key, apply, record the result. Says whether to keep it:
    /// a key already taken, or a refusal, is undone.
    async fn statements<A: WriteAction>(
        tx: &mut WriteTx,
        record: &OperationRecord,
        command: &A::Command,
        context: &WriteContext,
        duplicates_since: Option<OffsetDateTime>,
    ) -> Result<(Verdict, Try<A::Result>), KitchenError> {
        if !write::claim(tx, record, None).await? {
            return Ok((Verdict::Discard, Try::Taken));
        }
        if let Some(refused) = Self::refuse_duplicate(tx, record, duplicates_since).await? {
            return Ok((Verdict::Discard, refused));
        }
        let applied = match A::apply(command, tx, context).await? {
            Ok(applied) => applied,
            Err(refusal) => {
                // The claim goes with the rest: a refused write leaves the
                // key unused, so a corrected request may take it.
                return Ok((Verdict::Discard, Try::Done(Outcome::Refused(refusal))));
            }
        };
        let snapshot = ResultSnapshot::of(&applied.result)
            .map_err(|e| KitchenError::CorruptRecord(format!("result snapshot: {e}")))?;
        let resource = applied.result.resource_id();
        write::finish(tx, record, applied.ticket, resource, &snapshot).await?;
        let operation = OperationRecord {
            ticket_id: applied.ticket,
            resource_id: Some(resource),
            result: Some(snapshot.clone()),
            ..record.clone()
        };
        Ok((
            Verdict::Keep,
            Try::Done(Outcome::Created(Receipt {
                possible_duplicate_of: None,
                result: applied.result,
                snapshot,
                operation,
            })),
        ))
    }

    /// With the guard refusing duplicates since `since`: the refusal of a
    /// write whose content matches an earlier one under another key (the
    /// claim just made goes with it: the key stays unused).
    async fn refuse_duplicate<R>(
        tx: &mut WriteTx,
        record: &OperationRecord,
        since: Option<OffsetDateTime>,
    ) -> Result<Option<Try<R>>, KitchenError> {
        let Some(since) = since else {
            return Ok(None);
        };
        let earlier = store::duplicates::earlier_write_locked(tx, record, since).await?;
        Ok(earlier.map(|of| Try::Done(Outcome::Refused(Refusal::PossibleDuplicate { of }))))
    }

    /// [`Engine::statements`] for a planned write: the claim carries the
    /// result, then the planned rows. (The benchmarks' ceiling keeps the
    /// general form: it measures the store's claim, rows and finish.)
    async fn planned_statements<R: WriteResult>(
        tx: &mut WriteTx,
        record: &OperationRecord,
        planned: Planned<R>,
        duplicates_since: Option<OffsetDateTime>,
        warn_since: Option<OffsetDateTime>,
        savepoint: &mut Savepoint,
    ) -> Result<(Verdict, Try<R>), KitchenError> {
        let (snapshot, operation) = planned_record(record, &planned.result, planned.ticket)?;
        let mut possible_duplicate_of = None;
        if duplicates_since.is_none() {
            // Nothing to read between the claim and the rows: one call,
            // which opens the job's savepoint too, and reads the guard's
            // warning after the rows.
            match store::planned::claim_and_insert_in(
                tx,
                &operation,
                &planned.rows,
                savepoint,
                warn_since,
            )
            .await?
            {
                Batched::Taken => return Ok((Verdict::Discard, Try::Taken)),
                Batched::Claimed {
                    possible_duplicate_of: earlier,
                } => possible_duplicate_of = earlier,
            }
        } else {
            let shared = store::planned::shared_description(&planned.rows);
            if !write::claim(tx, &operation, shared).await? {
                return Ok((Verdict::Discard, Try::Taken));
            }
            if let Some(refused) = Self::refuse_duplicate(tx, record, duplicates_since).await? {
                return Ok((Verdict::Discard, refused));
            }
            store::planned::insert(tx, operation.tenant_id, &planned.rows).await?;
        }
        Ok((
            Verdict::Keep,
            Try::Done(Outcome::Created(Receipt {
                possible_duplicate_of,
                result: planned.result,
                snapshot,
                operation,
            })),
        ))
    }
}

/// A failed commit: when the connection went away without the database's
/// answer (or an I/O error struck SQLite's commit), the write may have
/// landed, and the caller is told so; any other failure is left for
/// [`Engine::as_written_nothing`], since the database answered that it did
/// not commit.
fn commit_failure(error: impl Into<KitchenError>) -> KitchenError {
    match error.into() {
        KitchenError::Database(e) => match store::fault::classify(&e) {
            Some(fault) if store::fault::commit_may_have_landed(&e) => KitchenError::Unavailable {
                fault,
                written: Written::Unknown,
                cause: e.to_string(),
            },
            _ => KitchenError::Database(e),
        },
        other => other,
    }
}

/// One try of action `A`, as it waits in the group writer's queue.
struct GroupJob<A: WriteAction> {
    record: OperationRecord,
    command: A::Command,
    context: WriteContext,
    /// Its rows, when they are known before anything is read and nothing
    /// is read between the claim and them.
    planned: Option<Planned<A::Result>>,
    duplicates_since: Option<OffsetDateTime>,
    /// Since when the guard looks (`warn` mode), for a planned write, which
    /// reads its warning in its own batch; `None` for any other (it reads
    /// after the commit).
    warn_since: Option<OffsetDateTime>,
}

impl<A: WriteAction> Statements for GroupJob<A> {
    type Answer = Try<A::Result>;

    /// A planned write with nothing to read between its claim and its rows
    /// is one batch, which opens the savepoint too.
    fn opens_savepoint(&mut self) -> bool {
        // A job runs once; a create the guard may refuse is planned here,
        // its read between its claim and its rows.
        if self.planned.is_none() {
            self.planned = A::planned(&self.command, &self.context);
        }
        self.planned.is_some() && self.duplicates_since.is_none()
    }

    fn run<'t>(
        &'t mut self,
        tx: &'t mut WriteTx,
        savepoint: &'t mut Savepoint,
    ) -> BoxFuture<'t, Result<(Verdict, Try<A::Result>), KitchenError>> {
        Box::pin(async move {
            // A write known in advance (a create) claims with its result in
            // hand, so no `finish` follows: one statement fewer for each
            // write while the group holds the lock.
            let planned = self
                .planned
                .take()
                .or_else(|| A::planned(&self.command, &self.context));
            match planned {
                Some(planned) => {
                    Engine::planned_statements(
                        tx,
                        &self.record,
                        planned,
                        self.duplicates_since,
                        self.warn_since,
                        savepoint,
                    )
                    .await
                }
                None => {
                    Engine::statements::<A>(
                        tx,
                        &self.record,
                        &self.command,
                        &self.context,
                        self.duplicates_since,
                    )
                    .await
                }
            }
        })
    }
}

/// A planned write's record as its claim inserts it: its result, frozen,
/// already on it (it is known before the claim, so no `UPDATE` follows).
fn planned_record<R: WriteResult>(
    record: &OperationRecord,
    result: &R,
    ticket: Option<crate::domain::ticket::TicketId>,
) -> Result<(ResultSnapshot, OperationRecord), KitchenError> {
    let snapshot = ResultSnapshot::of(result)
        .map_err(|e| KitchenError::CorruptRecord(format!("result snapshot: {e}")))?;
    let operation = OperationRecord {
        ticket_id: ticket,
        resource_id: Some(result.resource_id()),
        result: Some(snapshot.clone()),
        ..record.clone()
    };
    Ok((snapshot, operation))
}
