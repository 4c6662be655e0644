//! The group writer: one task that runs queued writes a small group at a
//! time, each group in one transaction with one commit.
//!
//! Why: on SQLite a write takes the database's one write lock, and with
//! `synchronous = FULL` every commit is an fsync. Writers on N pool
//! connections that each `BEGIN IMMEDIATE` queue in SQLite's busy handler,
//! which polls with back-off (sleeping up to 100 ms between looks), so under
//! load a create waits far longer than the writes ahead of it take. Here
//! writes queue in memory instead, and the writer takes whatever is queued
//! (up to a group limit) and runs it in one transaction on a connection of
//! its own: one lock, one fsync for the whole group.
//!
//! Each job keeps its own atomicity through a savepoint: its claim and its
//! effect are released together, or rolled back together when the job says
//! so (a refusal, a key already taken) or when one of its statements failed
//! (that error goes to that job alone; the others go on). A job's
//! savepoint is opened, and the one before it released, by the job's first
//! call when it can take them as its first statements
//! ([`Statements::opens_savepoint`], a create's one batch), or else by the
//! writer just before it: each call is a hand-over to SQLite's thread and
//! back, paid while the group holds the lock, so a create costs one. The
//! group commits once, and only then is any job answered: an answer never
//! reaches a caller before its effect is durable, and a crash loses only
//! writes nobody was told about. If the commit (or the `BEGIN`) fails, no
//! job of the group was acknowledged, so each gets the error and a retry
//! is safe.
//!
//! The wait bound holds as it did in the busy handler: a job that waited in
//! the queue longer than the bound is not run ([`JobError::Busy`]), and a
//! `BEGIN IMMEDIATE` that another program keeps waiting past the bound (a
//! backup, an operator's `sqlite3`, a test's key holder) fails the group as
//! a storage fault ([`StorageFault::Locked`]): nobody holds the key, the
//! file is locked. (A job picked up just inside the bound may then wait up
//! to the bound again for the lock.)
//!
//! Any failure of a group (a full disk at the commit, say) costs that group
//! alone: each of its jobs gets the fault, and the writer's connection, if
//! the failure left it inside a transaction, is replaced (see
//! `sqlite_pool_options`), so the next group begins afresh.
//!
//! Jobs come typed ([`Statements`]) and are erased to [`Job`] in the queue,
//! so one writer serves every action. The loop only needs a [`WriteTx`], so
//! it would run on PostgreSQL too; it does not, because it measured no
//! better there: with REST creates at 32 clients, one to four such writers
//! (each create one statement inside the group's transaction) made
//! 3,090–3,270 creates/s against 3,220/s for one statement per create, all
//! within the noise. PostgreSQL already shares one WAL flush among
//! concurrent commits, which is what grouping buys on SQLite.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::write::{self, WriteTx, on_tx};
use super::{Db, fault, is_lock_timeout};
use crate::domain::fault::{StorageFault, Written};
use crate::{KitchenConfig, KitchenError};

/// How many jobs may wait in the queue; a caller past it waits to enqueue
/// (its wait counts toward the wait bound). Several full groups' worth, so
/// the queue, not the HTTP server, is what absorbs a burst.
const QUEUE_CAPACITY: usize = 1024;

/// A boxed future that may borrow for `'t`.
pub(crate) type BoxFuture<'t, T> = Pin<Box<dyn Future<Output = T> + Send + 't>>;

/// What becomes of a job's statements: kept (released into the group's
/// transaction) or discarded (rolled back to the job's savepoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Keep them; they commit with the group.
    Keep,
    /// Undo them; the rest of the group is untouched.
    Discard,
}

/// The statements that open a job's savepoint: while none is open (the
/// group's first job, or one after jobs that sent nothing), and while one
/// is (releasing it, whether its job was kept or rolled back to it).
const OPEN_FIRST: &str = "SAVEPOINT job";
const OPEN_NEXT: &str = "RELEASE SAVEPOINT job; SAVEPOINT job";

/// A job's savepoint: the statements that open it, and how far they got.
#[derive(Debug)]
pub(crate) struct Savepoint {
    opening: &'static str,
    state: Opening,
}

/// How far a savepoint's opening statements got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opening {
    /// Not sent: the transaction is as the job found it.
    NotSent,
    /// Sent and not known to have completed: the savepoint before may be
    /// released with no new one in its place.
    Sent,
    /// Completed: the job's statements run under its own savepoint.
    Opened,
}

impl Savepoint {
    /// The statements that open it; they must be the first of the job's
    /// first call.
    pub(crate) fn opening(&self) -> &'static str {
        self.opening
    }

    /// How many statements [`Savepoint::opening`] is.
    pub(crate) fn opening_statements(&self) -> usize {
        self.opening.split(';').count()
    }

    /// Notes that the opening statements are being sent: from here, a
    /// failure may have run part of them.
    pub(crate) fn sending(&mut self) {
        self.state = Opening::Sent;
    }

    /// Notes that the opening statements completed.
    pub(crate) fn opened(&mut self) {
        self.state = Opening::Opened;
    }
}

/// One write's statements, run inside a transaction someone else began and
/// will end.
pub(crate) trait Statements: Send + 'static {
    /// What the caller is answered once the transaction committed.
    type Answer: Send + 'static;

    /// Whether [`Statements::run`] opens the job's savepoint itself: its
    /// first call begins with [`Savepoint::opening`], it calls
    /// [`Savepoint::sending`] just before that call and
    /// [`Savepoint::opened`] once those statements completed. Otherwise
    /// (the default) the writer opens it before `run`.
    fn opens_savepoint(&mut self) -> bool {
        false
    }

    /// Runs the statements on `tx`: the answer, and whether to keep what
    /// they did. An error undoes them and is the job's answer.
    fn run<'t>(
        &'t mut self,
        tx: &'t mut WriteTx,
        savepoint: &'t mut Savepoint,
    ) -> BoxFuture<'t, Result<(Verdict, Self::Answer), KitchenError>>;
}

/// Why a job has no answer of its own.
#[derive(Debug)]
pub(crate) enum JobError {
    /// It waited past the wait bound (in the queue, or for the write lock)
    /// and did not run: nothing of it was written.
    Busy,
    /// Its statements, or its group's transaction, failed: nothing of it
    /// was acknowledged.
    Failed(KitchenError),
}

/// How the writer runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GroupSettings {
    /// Most jobs in one transaction.
    pub(crate) group_max: usize,
    /// How long a job may wait (in the queue, then for the write lock).
    pub(crate) wait_bound: Duration,
}

/// The handle to a running writer. Cheap to clone; clones share the queue.
#[derive(Clone)]
pub(crate) struct GroupWriter {
    shared: Arc<Shared>,
}

struct Shared {
    /// `None` once closed: submissions fail, the writer drains what is
    /// queued and stops.
    queue: Mutex<Option<mpsc::Sender<Box<dyn Job>>>>,
    /// The writer task, awaited on close.
    task: Mutex<Option<JoinHandle<()>>>,
    /// The writer's own connection, closed after its task stops.
    db: Db,
}

impl fmt::Debug for GroupWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupWriter")
            .field("queued", &self.queued())
            .finish_non_exhaustive()
    }
}

impl GroupWriter {
    /// The writer for `db`, if it gets one: on SQLite, with a connection of
    /// its own, opened with the pool's options (WAL, synchronous FULL,
    /// foreign keys, the wait bound as busy timeout). `None` on PostgreSQL,
    /// where each write is its own transaction.
    pub(crate) async fn for_db(
        db: &Db,
        config: &KitchenConfig,
    ) -> Result<Option<Self>, KitchenError> {
        let settings = GroupSettings {
            group_max: config.write_group_max.max(1),
            wait_bound: config.wait_bound,
        };
        match db {
            Db::Sqlite(pool) => {
                let own = super::sqlite_pool_options(config)
                    .max_connections(1)
                    // One long-lived connection: a warm page cache, and no
                    // reconnect in the middle of a burst.
                    .idle_timeout(None)
                    .max_lifetime(None)
                    .connect_with((*pool.connect_options()).clone())
                    .await?;
                Ok(Some(Self::start(Db::Sqlite(own), settings)))
            }
            Db::Postgres(_) => Ok(None),
        }
    }

    /// Starts the writer task draining a new queue into `db`.
    fn start(db: Db, settings: GroupSettings) -> Self {
        let (sender, receiver) = mpsc::channel::<Box<dyn Job>>(QUEUE_CAPACITY);
        let task = tokio::spawn(drain(receiver, db.clone(), settings));
        Self {
            shared: Arc::new(Shared {
                queue: Mutex::new(Some(sender)),
                task: Mutex::new(Some(task)),
                db,
            }),
        }
    }

    /// Runs `statements` in the next group and answers once that group
    /// committed (or failed).
    pub(crate) async fn submit<S: Statements>(&self, statements: S) -> Result<S::Answer, JobError> {
        // Stamped before the enqueue: a wait for room in a full queue counts
        // toward the wait bound too.
        let queued_since = Instant::now();
        let queue = self
            .shared
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(closed)?;
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Pending {
            statements,
            queued_since,
            kept: None,
            reply,
        });
        queue.send(job).await.map_err(|_| closed())?;
        drop(queue);
        // A dropped reply means the writer went away with the job (a panic,
        // or the runtime shutting down): whether it committed is unknown,
        // and the operation record tells.
        answer.await.unwrap_or_else(|_| {
            Err(JobError::Failed(KitchenError::Interrupted(
                "the writer stopped before answering".into(),
            )))
        })
    }

    /// How many jobs wait in the queue now (not counting a group being
    /// run).
    pub(crate) fn queued(&self) -> usize {
        self.shared
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map_or(0, |queue| queue.max_capacity() - queue.capacity())
    }

    /// Stops taking jobs, lets the writer finish what is queued, and closes
    /// its connection. Later submissions fail.
    pub(crate) async fn close(&self) {
        drop(
            self.shared
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        let task = self
            .shared
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            // The writer task only ends by itself, once the queue is closed
            // and empty; a panic inside a group is caught in `drain`.
            let _ = task.await;
        }
        self.shared.db.close().await;
    }
}

/// The answer a submission gets once the writer is closed.
fn closed() -> JobError {
    JobError::Failed(KitchenError::Interrupted(
        "the kitchen is closing: the write was not run".into(),
    ))
}

/// A job with its answer type erased, as it waits in the queue.
trait Job: Send {
    /// When it was submitted.
    fn queued_since(&self) -> Instant;

    /// Opens its savepoint with `opening` and runs its statements on `tx`,
    /// keeping their answer (or error) until [`Job::answer`]. What the
    /// writer does next.
    fn run<'t>(&'t mut self, tx: &'t mut WriteTx, opening: &'static str)
    -> BoxFuture<'t, AfterJob>;

    /// The storage fault its statements hit, if they failed with one.
    fn storage_fault(&self) -> Option<StorageFault>;

    /// Its statements' error, with its causes, if they failed.
    fn error(&self) -> Option<String>;

    /// Sends the kept answer: the group committed.
    fn answer(self: Box<Self>);

    /// Sends `error` instead: the job did not run, or its group did not
    /// commit.
    fn fail(self: Box<Self>, error: JobError);
}

/// A submitted [`Statements`] and where its answer goes.
struct Pending<S: Statements> {
    statements: S,
    queued_since: Instant,
    kept: Option<Result<S::Answer, KitchenError>>,
    reply: oneshot::Sender<Result<S::Answer, JobError>>,
}

impl<S: Statements> Job for Pending<S> {
    fn queued_since(&self) -> Instant {
        self.queued_since
    }

    fn run<'t>(
        &'t mut self,
        tx: &'t mut WriteTx,
        opening: &'static str,
    ) -> BoxFuture<'t, AfterJob> {
        Box::pin(async move {
            let mut savepoint = Savepoint {
                opening,
                state: Opening::NotSent,
            };
            if !self.statements.opens_savepoint() {
                savepoint.sending();
                if let Err(error) = execute(tx, opening).await {
                    self.kept = Some(Err(error.into()));
                    return AfterJob::FailGroup;
                }
                savepoint.opened();
            }
            let (verdict, kept) = match self.statements.run(tx, &mut savepoint).await {
                Ok((verdict, answer)) => (verdict, Ok(answer)),
                Err(error) => (Verdict::Discard, Err(error)),
            };
            self.kept = Some(kept);
            match (verdict, savepoint.state) {
                (Verdict::Keep, Opening::Opened) => AfterJob::Go,
                (Verdict::Discard, Opening::Opened) => AfterJob::RollBack,
                // It failed before sending anything (its batch could not
                // be encoded, say): nothing to undo, and its error is its
                // answer alone.
                (Verdict::Discard, Opening::NotSent) => AfterJob::NothingRan,
                // Its opening may have half run (the savepoint before
                // released, no new one), or it kept statements that ran
                // without one: only the whole group can be undone, as when
                // the writer's own opening fails.
                (_, Opening::Sent) | (Verdict::Keep, Opening::NotSent) => AfterJob::FailGroup,
            }
        })
    }

    fn storage_fault(&self) -> Option<StorageFault> {
        match &self.kept {
            Some(Err(error)) => error.storage_fault().map(|(fault, _)| fault),
            _ => None,
        }
    }

    fn error(&self) -> Option<String> {
        match &self.kept {
            Some(Err(error)) => Some(crate::error_chain(error)),
            _ => None,
        }
    }

    fn answer(self: Box<Self>) {
        let answer = match self.kept {
            Some(kept) => kept.map_err(JobError::Failed),
            None => Err(JobError::Failed(KitchenError::Interrupted(
                "the write was not run".into(),
            ))),
        };
        // The caller may be gone; its retry replays what committed.
        let _ = self.reply.send(answer);
    }

    fn fail(self: Box<Self>, error: JobError) {
        let _ = self.reply.send(Err(error));
    }
}

/// The writer task: take a job, add whatever else is queued up to the group
/// limit, run the group; until the queue is closed and empty.
async fn drain(mut receiver: mpsc::Receiver<Box<dyn Job>>, db: Db, settings: GroupSettings) {
    while let Some(first) = receiver.recv().await {
        let mut group = Vec::with_capacity(settings.group_max);
        group.push(first);
        while group.len() < settings.group_max {
            match receiver.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let size = group.len();
        // On a task of its own, so that a panic in one job's statements
        // costs that group (its callers answer interrupted; its transaction
        // is rolled back when dropped), not the writer.
        if let Err(e) = tokio::spawn(run_group(db.clone(), group, settings)).await {
            tracing::error!(error = %e, size, "a write group panicked; its writes were not acknowledged");
        }
    }
}

/// Runs one group: answers the overdue at once, runs the rest in one
/// transaction, then answers each.
async fn run_group(db: Db, group: Group, settings: GroupSettings) {
    let (mut jobs, overdue) = split_overdue(group, Instant::now(), settings.wait_bound);
    for job in overdue {
        job.fail(JobError::Busy);
    }
    if jobs.is_empty() {
        return;
    }
    match transact(&db, &mut jobs, settings.wait_bound).await {
        Ok(()) => {
            for job in jobs {
                job.answer();
            }
        }
        Err(failure) => {
            tracing::warn!(error = %failure.error, at_commit = failure.at_commit, size = jobs.len(), "a write group failed; none of its writes was acknowledged");
            for job in jobs {
                job.fail(JobError::Failed(failure.for_each_job()));
            }
        }
    }
}

/// Why a group's transaction did not commit, and where.
struct GroupFailure {
    error: sqlx::Error,
    /// It was the `COMMIT` that failed (before it, nothing can have
    /// landed).
    at_commit: bool,
    /// The storage fault a job's own statement hit, when that is what
    /// ended the transaction: SQLite rolls the whole transaction back on a
    /// full disk, so the savepoint that follows fails, and its error only
    /// says the savepoint is gone.
    job_fault: Option<StorageFault>,
}

impl GroupFailure {
    /// What each job of the group answers. A `BEGIN IMMEDIATE` that waited
    /// past the wait bound means another program holds the file's write
    /// lock (this writer is the write path's only one): a storage fault,
    /// like a full disk or a file that cannot be opened. Each says whether
    /// anything may have landed: nothing, unless an I/O error struck the
    /// `COMMIT` itself.
    fn for_each_job(&self) -> KitchenError {
        let fault = if is_lock_timeout(&self.error) {
            Some(StorageFault::Locked)
        } else {
            self.job_fault.or_else(|| fault::classify(&self.error))
        };
        let written = if self.at_commit && fault::commit_may_have_landed(&self.error) {
            Written::Unknown
        } else {
            Written::Nothing
        };
        match fault {
            Some(fault) => KitchenError::Unavailable {
                fault,
                written,
                cause: self.error.to_string(),
            },
            None => KitchenError::Interrupted(format!(
                "the transaction of its write group failed: {}",
                self.error
            )),
        }
    }
}

/// Jobs taken from the queue together.
type Group = Vec<Box<dyn Job>>;

/// Splits `group` into the jobs to run and those that waited longer than
/// `bound` by `now`.
fn split_overdue(group: Group, now: Instant, bound: Duration) -> (Group, Group) {
    group
        .into_iter()
        .partition(|job| now.saturating_duration_since(job.queued_since()) <= bound)
}

/// Begins, runs each job under its own savepoint, commits. An error here is
/// the group's: nothing of it committed (unless the commit says otherwise).
async fn transact(db: &Db, jobs: &mut [Box<dyn Job>], wait: Duration) -> Result<(), GroupFailure> {
    let mut tx = write::begin(db, wait).await.map_err(|error| GroupFailure {
        error,
        at_commit: false,
        job_fault: None,
    })?;
    match run_jobs(&mut tx, jobs).await {
        Ok(()) => write::commit(tx).await.map_err(|error| GroupFailure {
            error,
            at_commit: true,
            job_fault: None,
        }),
        Err(failure) => {
            // The savepoints themselves failed: the transaction is not to be
            // trusted. (If SQLite already rolled it back, this fails too,
            // and the connection is replaced when it goes back to its pool.)
            let _ = write::rollback(tx).await;
            Err(failure)
        }
    }
}

/// What the writer does once a job ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterJob {
    /// Goes on to the next job; the job's savepoint is released as the
    /// next one opens (the last job's by the commit).
    Go,
    /// Rolls back to the job's savepoint first.
    RollBack,
    /// Goes on to the next job: this one sent nothing, so the savepoint
    /// open before it (if any) is still the open one.
    NothingRan,
    /// Gives the whole group up: its savepoints are not to be trusted.
    FailGroup,
}

/// Runs each job under a savepoint, released or rolled back as it asks.
///
/// No call of the writer's own between two jobs that are kept and open
/// their savepoints themselves; one before each job that does not, and one
/// for each rollback. The last job's savepoint is left to the commit.
async fn run_jobs(tx: &mut WriteTx, jobs: &mut [Box<dyn Job>]) -> Result<(), GroupFailure> {
    // Whether a savepoint is open: the next job's opening releases it.
    let mut open = false;
    for job in jobs.iter_mut() {
        let opening = if open { OPEN_NEXT } else { OPEN_FIRST };
        let error = match job.run(tx, opening).await {
            AfterJob::Go => {
                open = true;
                continue;
            }
            AfterJob::NothingRan => continue,
            AfterJob::RollBack => match execute(tx, "ROLLBACK TO SAVEPOINT job").await {
                // Rolled back to, it stays open.
                Ok(()) => {
                    open = true;
                    continue;
                }
                Err(e) => e,
            },
            AfterJob::FailGroup => sqlx::Error::Protocol(format!(
                "a write's savepoint did not open: {}",
                job.error()
                    .unwrap_or_else(|| "its statements ran without one".into())
            )),
        };
        return Err(GroupFailure {
            error,
            at_commit: false,
            job_fault: job.storage_fault(),
        });
    }
    Ok(())
}

/// Runs statements without parameters in `tx`, in one round trip.
async fn execute(tx: &mut WriteTx, sql: &'static str) -> sqlx::Result<()> {
    on_tx!(tx, conn => sqlx::raw_sql(sql).execute(conn).await.map(drop))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::testing::TestDatabase;

    /// Statements that write nothing and note that they ran.
    struct Noted(Arc<AtomicBool>);

    impl Statements for Noted {
        type Answer = ();
        fn run<'t>(
            &'t mut self,
            _tx: &'t mut WriteTx,
            _savepoint: &'t mut Savepoint,
        ) -> BoxFuture<'t, Result<(Verdict, ()), KitchenError>> {
            self.0.store(true, Ordering::SeqCst);
            Box::pin(async { Ok((Verdict::Keep, ())) })
        }
    }

    /// Statements that open their savepoint themselves and fail before
    /// sending anything, as a create whose batch cannot be encoded does.
    struct FailsBeforeSending;

    impl Statements for FailsBeforeSending {
        type Answer = ();
        fn opens_savepoint(&mut self) -> bool {
            true
        }
        fn run<'t>(
            &'t mut self,
            _tx: &'t mut WriteTx,
            _savepoint: &'t mut Savepoint,
        ) -> BoxFuture<'t, Result<(Verdict, ()), KitchenError>> {
            Box::pin(async { Err(KitchenError::CorruptRecord("cannot be encoded".into())) })
        }
    }

    /// A job as the writer finds it in the queue, and what a test watches.
    struct Queued {
        job: Box<dyn Job>,
        ran: Arc<AtomicBool>,
        answer: oneshot::Receiver<Result<(), JobError>>,
    }

    /// A job submitted `ago` before now.
    fn queued(ago: Duration) -> Queued {
        let ran = Arc::new(AtomicBool::new(false));
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Pending {
            statements: Noted(ran.clone()),
            queued_since: Instant::now()
                .checked_sub(ago)
                .expect("the monotonic clock reaches back that far"),
            kept: None,
            reply,
        });
        Queued { job, ran, answer }
    }

    /// A fresh SQLite database (kept while the test runs) and its pool.
    async fn fresh_db() -> (TestDatabase, Db) {
        let test_db = TestDatabase::sqlite();
        let db = Db::connect(test_db.url(), &KitchenConfig::default())
            .await
            .expect("connect");
        (test_db, db)
    }

    const SETTINGS: GroupSettings = GroupSettings {
        group_max: 8,
        wait_bound: Duration::from_secs(5),
    };

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_job_queued_past_the_wait_bound_answers_busy_and_does_not_run() {
        let (_test_db, db) = fresh_db().await;
        let old = queued(Duration::from_secs(6));
        let fresh = queued(Duration::from_secs(1));

        run_group(db, vec![old.job, fresh.job], SETTINGS).await;

        let old_answer = old.answer.await.expect("answered");
        assert!(
            matches!(old_answer, Err(JobError::Busy)),
            "got {old_answer:?}"
        );
        assert!(!old.ran.load(Ordering::SeqCst), "the overdue job never ran");
        assert!(
            matches!(fresh.answer.await.expect("answered"), Ok(())),
            "the job within the bound ran and committed"
        );
        assert!(fresh.ran.load(Ordering::SeqCst));
    }

    /// A job that failed before sending anything answers its own error;
    /// the jobs around it still commit, the next one opening the first
    /// savepoint when none was open before it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_job_failing_before_it_sends_anything_costs_only_itself() {
        let (_test_db, db) = fresh_db().await;
        let failing = || {
            let (reply, answer) = oneshot::channel();
            let job: Box<dyn Job> = Box::new(Pending {
                statements: FailsBeforeSending,
                queued_since: Instant::now(),
                kept: None,
                reply,
            });
            (job, answer)
        };
        // First in its group (no savepoint open yet), then between two
        // jobs (one open).
        let (first, first_answer) = failing();
        let after_first = queued(Duration::ZERO);
        let (middle, middle_answer) = failing();
        let after_middle = queued(Duration::ZERO);

        run_group(
            db,
            vec![first, after_first.job, middle, after_middle.job],
            SETTINGS,
        )
        .await;

        for answer in [first_answer, middle_answer] {
            let answer = answer.await.expect("answered");
            assert!(
                matches!(
                    answer,
                    Err(JobError::Failed(KitchenError::CorruptRecord(_)))
                ),
                "the failing job answers its own error: {answer:?}"
            );
        }
        for other in [after_first.answer, after_middle.answer] {
            let answer = other.await.expect("answered");
            assert!(matches!(answer, Ok(())), "the group committed: {answer:?}");
        }
    }

    #[test]
    fn a_job_never_run_answers_interrupted_not_success() {
        let mut never = queued(Duration::ZERO);
        never.job.answer();
        let answer = never.answer.try_recv().expect("answered at once");
        assert!(
            matches!(answer, Err(JobError::Failed(KitchenError::Interrupted(_)))),
            "got {answer:?}"
        );
    }
}
