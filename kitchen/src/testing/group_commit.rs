//! Test hooks for the group writer (feature `test-support`): hold it, so
//! that the next group is exactly the writes a test queued meanwhile; count
//! what is queued; and make one write's statement, or one group's commit,
//! fail, so a test can watch what the others answer.
//!
//! The failures are real database failures, made with triggers the test
//! adds to its own fresh database, not switches in the write path: the
//! code under test is the code that runs in production.

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::Kitchen;
use crate::store::Db;
use crate::store::group_commit::{BoxFuture, JobError, Savepoint, Statements, Verdict};
use crate::store::write::WriteTx;

/// The group writer, occupied by a job that waits inside its transaction
/// until [`WriterHold::release`]. Dropping it releases it too.
pub struct WriterHold {
    release: oneshot::Sender<()>,
    done: JoinHandle<Result<(), JobError>>,
}

impl WriterHold {
    /// Lets the held job end (it wrote nothing); its group commits, and the
    /// writes queued meanwhile run as the next group.
    ///
    /// # Panics
    /// When the held job's group did not commit.
    pub async fn release(self) {
        let _ = self.release.send(());
        let held = self.done.await.expect("the held job's task ran");
        assert!(held.is_ok(), "the held job's group committed: {held:?}");
    }
}

/// A job that writes nothing and waits until released.
struct Hold {
    started: Option<oneshot::Sender<()>>,
    release: Option<oneshot::Receiver<()>>,
}

impl Statements for Hold {
    type Answer = ();

    fn run<'t>(
        &'t mut self,
        _tx: &'t mut WriteTx,
        _savepoint: &'t mut Savepoint,
    ) -> BoxFuture<'t, Result<(Verdict, ()), crate::KitchenError>> {
        Box::pin(async move {
            if let Some(started) = self.started.take() {
                let _ = started.send(());
            }
            if let Some(release) = self.release.take() {
                // Released, or the hold was dropped: either way, go on.
                let _ = release.await;
            }
            Ok((Verdict::Keep, ()))
        })
    }
}

/// A job that sets its connection's page cap.
enum PageCap {
    /// At the pages the database has now: the next write that needs a new
    /// page fails with `SQLITE_FULL`.
    AtCurrentSize,
    /// At SQLite's largest, as freeing space would.
    Lifted,
}

impl Statements for PageCap {
    type Answer = ();

    fn run<'t>(
        &'t mut self,
        tx: &'t mut WriteTx,
        _savepoint: &'t mut Savepoint,
    ) -> BoxFuture<'t, Result<(Verdict, ()), crate::KitchenError>> {
        Box::pin(async move {
            let WriteTx::Sqlite(tx) = tx else {
                unreachable!("the group writer is SQLite's");
            };
            let pages: i64 = match self {
                PageCap::AtCurrentSize => {
                    sqlx::query_scalar("PRAGMA page_count")
                        .fetch_one(&mut **tx)
                        .await?
                }
                PageCap::Lifted => 4_294_967_294,
            };
            // An integer the database itself answered, or a constant:
            // nothing to inject.
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "PRAGMA max_page_count = {pages}"
            )))
            .execute(&mut **tx)
            .await?;
            Ok((Verdict::Keep, ()))
        })
    }
}

/// Lists a title under a hook (`fail` or `break`), making the list if need
/// be.
const REMEMBER_TITLE: [&str; 2] = [
    "CREATE TABLE IF NOT EXISTS test_hook_titles (hook TEXT NOT NULL, title TEXT NOT NULL)",
    "INSERT INTO test_hook_titles (hook, title) VALUES ($1, $2)",
];

/// Inserting a ticket whose title is listed under `fail` raises an error.
const FAIL_INSERT_SQLITE: &str = "CREATE TRIGGER IF NOT EXISTS test_fail_insert \
     BEFORE INSERT ON tickets \
     WHEN NEW.title IN (SELECT title FROM test_hook_titles WHERE hook = 'fail') \
     BEGIN SELECT RAISE(ABORT, 'a test made this insert fail'); END";
const FAIL_INSERT_POSTGRES: &str = "
    CREATE OR REPLACE FUNCTION test_fail_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.title IN (SELECT title FROM test_hook_titles WHERE hook = 'fail') THEN
            RAISE EXCEPTION 'a test made this insert fail';
        END IF;
        RETURN NEW;
    END $$;
    DROP TRIGGER IF EXISTS test_fail_insert ON tickets;
    CREATE TRIGGER test_fail_insert BEFORE INSERT ON tickets
        FOR EACH ROW EXECUTE FUNCTION test_fail_insert();";

/// Inserting a ticket whose title is listed under `break` leaves a row
/// whose deferred foreign key points nowhere: the statement succeeds, the
/// commit of its transaction fails.
const BREAK_COMMIT_SQLITE: [&str; 3] = [
    "CREATE TABLE IF NOT EXISTS test_nowhere (id TEXT PRIMARY KEY)",
    "CREATE TABLE IF NOT EXISTS test_dangling \
     (title TEXT REFERENCES test_nowhere (id) DEFERRABLE INITIALLY DEFERRED)",
    "CREATE TRIGGER IF NOT EXISTS test_break_commit AFTER INSERT ON tickets \
     WHEN NEW.title IN (SELECT title FROM test_hook_titles WHERE hook = 'break') \
     BEGIN INSERT INTO test_dangling (title) VALUES (NEW.title); END",
];
const BREAK_COMMIT_POSTGRES: &str = "
    CREATE TABLE IF NOT EXISTS test_nowhere (id TEXT PRIMARY KEY);
    CREATE TABLE IF NOT EXISTS test_dangling
        (title TEXT REFERENCES test_nowhere (id) DEFERRABLE INITIALLY DEFERRED);
    CREATE OR REPLACE FUNCTION test_break_commit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.title IN (SELECT title FROM test_hook_titles WHERE hook = 'break') THEN
            INSERT INTO test_dangling (title) VALUES (NEW.title);
        END IF;
        RETURN NEW;
    END $$;
    DROP TRIGGER IF EXISTS test_break_commit ON tickets;
    CREATE TRIGGER test_break_commit AFTER INSERT ON tickets
        FOR EACH ROW EXECUTE FUNCTION test_break_commit();";

impl Kitchen {
    /// Occupies the group writer until the returned hold is released: the
    /// writes submitted meanwhile queue, and run together as its next
    /// group (test support). Returns once the writer is occupied.
    ///
    /// # Panics
    /// When this kitchen has no group writer (PostgreSQL).
    pub async fn hold_writer_for_test(&self) -> WriterHold {
        let writer = self
            .engine
            .writer
            .clone()
            .expect("a kitchen with a group writer");
        let (started, running) = oneshot::channel();
        let (release, released) = oneshot::channel();
        let hold = Hold {
            started: Some(started),
            release: Some(released),
        };
        let done = tokio::spawn(async move { writer.submit(hold).await });
        running.await.expect("the writer runs the held job");
        WriterHold { release, done }
    }

    /// How many writes wait in the group writer's queue (test support); 0
    /// without a writer.
    pub fn queued_writes_for_test(&self) -> usize {
        self.engine.writer.as_ref().map_or(0, |w| w.queued())
    }

    /// Caps the group writer's database at the pages it has now, on the
    /// writer's own connection (test support): its next write that needs
    /// a new page fails with SQLite's real `SQLITE_FULL`, as on a full
    /// disk. The cap lives as long as that connection does.
    ///
    /// # Panics
    /// When this kitchen has no group writer (PostgreSQL).
    pub async fn fill_writer_disk_for_test(&self) {
        self.set_writer_page_cap(PageCap::AtCurrentSize).await;
    }

    /// Lifts [`Kitchen::fill_writer_disk_for_test`]'s cap, as freeing space
    /// would (test support); nothing to lift once the writer replaced that
    /// connection.
    ///
    /// # Panics
    /// When this kitchen has no group writer (PostgreSQL).
    pub async fn free_writer_disk_for_test(&self) {
        self.set_writer_page_cap(PageCap::Lifted).await;
    }

    async fn set_writer_page_cap(&self, cap: PageCap) {
        let writer = self
            .engine
            .writer
            .clone()
            .expect("a kitchen with a group writer");
        writer
            .submit(cap)
            .await
            .expect("set the cap on the writer's pages");
    }

    /// From now on, inserting a ticket titled `title` fails with a database
    /// error (test support).
    pub async fn fail_ticket_inserts_titled_for_test(&self, title: &str) {
        self.remember_title("fail", title).await;
        match &self.db {
            Db::Sqlite(pool) => sqlx::query(FAIL_INSERT_SQLITE)
                .execute(pool)
                .await
                .map(drop),
            Db::Postgres(pool) => sqlx::raw_sql(FAIL_INSERT_POSTGRES)
                .execute(pool)
                .await
                .map(drop),
        }
        .expect("add the failing trigger");
    }

    /// From now on, a transaction that inserted a ticket titled `title`
    /// cannot commit: it fails at `COMMIT` on a dangling deferred foreign
    /// key (test support).
    pub async fn break_commits_of_tickets_titled_for_test(&self, title: &str) {
        self.remember_title("break", title).await;
        match &self.db {
            Db::Sqlite(pool) => {
                for sql in BREAK_COMMIT_SQLITE {
                    sqlx::query(sql)
                        .execute(pool)
                        .await
                        .expect("add the commit breaker");
                }
            }
            Db::Postgres(pool) => {
                sqlx::raw_sql(BREAK_COMMIT_POSTGRES)
                    .execute(pool)
                    .await
                    .expect("add the commit breaker");
            }
        }
    }

    async fn remember_title(&self, hook: &str, title: &str) {
        let [create, insert] = REMEMBER_TITLE;
        crate::store::on_db!(&self.db, pool => {
            sqlx::query(create).execute(pool).await.expect("create the titles table");
            sqlx::query(insert)
                .bind(hook)
                .bind(title)
                .execute(pool)
                .await
                .expect("remember the title");
        });
    }
}
