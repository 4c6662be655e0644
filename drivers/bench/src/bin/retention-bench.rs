//! `retention-bench`: what keeping keys costs, and what the retention sweep
//! costs, on one database (issue 14, docs/performance.md "Retention").
//!
//! Drives the kitchen in-process, each phase on a fresh database:
//!
//! 1. **size**: bytes per full record and per tombstone (the `operations`
//!    table and its indexes, before and after the sweep), and the sweep's
//!    throughput, tombstoning and deleting, over the same records.
//! 2. **latency**: create and replay p50/p99 under one closed-loop load,
//!    first with the sweep idle, then while it drains a backlog of due
//!    records (its worst case: sweeping without pause).
//! 3. **steady**: many creates with a short replay window and tombstone
//!    horizon and the server's sweep loop running, sampling the table's size:
//!    it must go flat.
//! 4. **text**: bytes per create with a long description, in every table a
//!    create writes (the ticket, its record with the frozen answer, its
//!    history entry), against the ticket row's own size: the text is
//!    stored once.
//!
//! Time in phases 1 and 3 is a manual clock the benchmark moves on, so
//! "past the window" costs no waiting and the steady state holds a known
//! number of records whatever the machine's speed. Prints markdown tables on
//! stdout (paste them into the doc), progress on stderr.

use kitchen::actions::CreateTicket;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use hdrhistogram::Histogram;
use kitchen::bench::{OperationsSize, operations_size, vacuum_operations};
use kitchen::testing::{DatabaseKind, TestDatabase};
use kitchen::{
    Clock, Kitchen, KitchenConfig, OperationKey, Outcome, SweepReport, TenantId, TenantName,
    TicketDraft,
};
use time::OffsetDateTime;

/// Retention benchmark: bytes per record and per tombstone, sweep
/// throughput, latency with the sweep running, and the table's size in the
/// steady state. PostgreSQL databases are made on the server named by
/// `TEST_POSTGRES_URL` (default postgres://postgres@127.0.0.1:5432/postgres)
/// and dropped afterwards; SQLite files live in a temp directory.
#[derive(Debug, Clone, Parser)]
#[command(name = "retention-bench", version)]
struct Args {
    /// Which database.
    #[arg(long, value_enum)]
    database: DatabaseArg,
    /// Which phases (default: all, in this order).
    #[arg(long, value_enum, value_delimiter = ',')]
    phases: Vec<Phase>,
    /// Tiny sizes (seconds, not minutes): proves it runs, measures nothing.
    #[arg(long)]
    smoke: bool,
    /// size: how many records to create, then tombstone, then delete.
    #[arg(long, default_value_t = 100_000)]
    records: u64,
    /// latency: due records the sweep drains while the load runs.
    #[arg(long, default_value_t = 100_000)]
    backlog: u64,
    /// latency: seconds of load with the sweep idle (and at most as many
    /// with it running).
    #[arg(long, default_value_t = 10.0)]
    latency_seconds: f64,
    /// latency: concurrent creating tasks, and as many replaying ones.
    #[arg(long, default_value_t = 2)]
    latency_concurrency: usize,
    /// steady: creates in all.
    #[arg(long, default_value_t = 1_000_000)]
    creates: u64,
    /// steady: a size sample after every this many creates.
    #[arg(long, default_value_t = 50_000)]
    sample_every: u64,
    /// steady: stop after this many seconds even if fewer creates were made.
    #[arg(long, default_value_t = 900.0)]
    max_seconds: f64,
    /// steady: how far the clock moves per create, in milliseconds.
    #[arg(long, default_value_t = 1)]
    tick_ms: u64,
    /// steady: the replay window, in seconds of that clock.
    #[arg(long, default_value_t = 20)]
    window_seconds: i64,
    /// steady: the tombstone horizon, in seconds of that clock.
    #[arg(long, default_value_t = 100)]
    horizon_seconds: i64,
    /// steady: how often the sweep loop runs, in (real) seconds.
    #[arg(long, default_value_t = 1.0)]
    sweep_every: f64,
    /// steady, PostgreSQL with autovacuum off: run `VACUUM operations` this
    /// often in its place, in (real) seconds; 0 never. The default is
    /// autovacuum's own naptime.
    #[arg(long, default_value_t = 60.0)]
    vacuum_every: f64,
    /// Concurrent creating tasks when filling tables (size, latency backlog,
    /// steady).
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Records one sweep batch changes (the server's default).
    #[arg(long, default_value_t = kitchen::DEFAULT_SWEEP_BATCH)]
    sweep_batch: u32,
    /// Length of each ticket's description: the frozen answer holds the
    /// ticket, so a full record grows with it; a tombstone does not.
    #[arg(long, default_value_t = 200)]
    description_bytes: usize,
    /// text: how many creates.
    #[arg(long, default_value_t = 2_000)]
    text_creates: u64,
    /// text: the length of each one's description (random letters and
    /// digits, which no database compresses).
    #[arg(long, default_value_t = 9_500)]
    text_bytes: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DatabaseArg {
    Sqlite,
    Postgres,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Phase {
    Size,
    Latency,
    Steady,
    Text,
}

impl Args {
    /// Smoke sizes: every phase runs, in seconds, on a debug build.
    fn smoked(mut self) -> Self {
        if self.smoke {
            self.records = 300;
            self.backlog = 1_000;
            self.latency_seconds = 0.5;
            self.creates = 1_500;
            self.sample_every = 500;
            self.tick_ms = 10;
            self.window_seconds = 2;
            self.horizon_seconds = 5;
            self.sweep_every = 0.2;
            self.vacuum_every = self.vacuum_every.min(0.5);
            self.sweep_batch = self.sweep_batch.min(100);
            self.text_creates = 50;
        }
        self
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse().smoked();
    let backend = match args.database {
        DatabaseArg::Sqlite => DatabaseKind::Sqlite,
        DatabaseArg::Postgres => DatabaseKind::Postgres,
    };
    let phases = if args.phases.is_empty() {
        vec![Phase::Size, Phase::Latency, Phase::Steady, Phase::Text]
    } else {
        args.phases.clone()
    };
    println!(
        "### {} ({} ticket description bytes, sweep batch {}{})\n",
        match backend {
            DatabaseKind::Sqlite => "SQLite",
            DatabaseKind::Postgres => "PostgreSQL",
        },
        args.description_bytes,
        args.sweep_batch,
        if args.smoke {
            ", SMOKE: tiny sizes"
        } else {
            ""
        },
    );
    let bench = Bench {
        draft: TicketDraft {
            project_id: Some("retention".into()),
            title: Some("Retention benchmark ticket".into()),
            description: Some("d".repeat(args.description_bytes)),
            ..TicketDraft::default()
        },
        args,
        backend,
    };
    for phase in phases {
        match phase {
            Phase::Size => bench.size().await?,
            Phase::Latency => bench.latency().await?,
            Phase::Steady => bench.steady().await?,
            Phase::Text => bench.text().await?,
        }
    }
    Ok(())
}

struct Bench {
    args: Args,
    backend: DatabaseKind,
    draft: TicketDraft,
}

impl Bench {
    /// A fresh database and a kitchen on it with these horizons and clock.
    async fn kitchen(
        &self,
        replay_window: time::Duration,
        tombstone_horizon: time::Duration,
        clock: Clock,
    ) -> anyhow::Result<(TestDatabase, Kitchen, TenantId)> {
        let db = TestDatabase::new(self.backend).await;
        let kitchen = Kitchen::connect(
            db.url(),
            KitchenConfig {
                replay_window,
                tombstone_horizon,
                sweep_batch: self.args.sweep_batch,
                clock,
                max_connections: u32::try_from(self.args.concurrency.max(4) + 2)
                    .unwrap_or(u32::MAX),
                // One content under many keys, on purpose: the
                // likely-duplicate guard would flag every create (and
                // measure its own read besides the sweep's cost).
                duplicate_guard: kitchen::DuplicateGuard {
                    mode: kitchen::GuardMode::Off,
                    ..kitchen::DuplicateGuard::default()
                },
                ..KitchenConfig::default()
            },
        )
        .await?;
        let name = TenantName::parse("retention-bench").map_err(anyhow::Error::msg)?;
        let tenant = kitchen
            .create_tenant(name)
            .await?
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok((db, kitchen, tenant.id))
    }

    /// Creates `count` tickets with fresh keys on `concurrency` tasks; with
    /// `tick`, moves `clock` on by it after each create.
    async fn create(
        &self,
        kitchen: &Kitchen,
        tenant: TenantId,
        count: u64,
        clock: &Clock,
        tick: Option<time::Duration>,
    ) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let next = Arc::new(AtomicU64::new(0));
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..self.args.concurrency.max(1) {
            let (kitchen, next, clock) = (kitchen.clone(), next.clone(), clock.clone());
            let draft = self.draft.clone();
            tasks.spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < count {
                    let key = OperationKey::parse(uuid::Uuid::now_v7().to_string())?;
                    let outcome = kitchen.write::<CreateTicket>(tenant, &key, &draft).await?;
                    anyhow::ensure!(
                        matches!(outcome, Outcome::Created(_)),
                        "a create with a fresh key answered {}",
                        outcome.name()
                    );
                    if let Some(tick) = tick {
                        clock.advance(tick);
                    }
                }
                Ok(())
            });
        }
        while let Some(task) = tasks.join_next().await {
            task??;
        }
        Ok(started.elapsed())
    }

    /// Phase 1: bytes per full record and per tombstone; sweep throughput.
    async fn size(&self) -> anyhow::Result<()> {
        let n = self.args.records;
        let window = time::Duration::days(30);
        let horizon = time::Duration::days(400);
        let clock = Clock::manual(OffsetDateTime::now_utc());
        let (_db, kitchen, tenant) = self.kitchen(window, horizon, clock.clone()).await?;
        let empty = measure(&kitchen, Vacuum::Full).await?;

        eprintln!("size: creating {n} records");
        let took = self.create(&kitchen, tenant, n, &clock, None).await?;
        eprintln!("size: {:.0} creates/s", per_second(n, took));
        let full_in_place = measure(&kitchen, Vacuum::Plain).await?;
        let full = measure(&kitchen, Vacuum::Full).await?;

        clock.advance(window + time::Duration::seconds(1));
        let sweeper = kitchen.sweeper();
        let started = Instant::now();
        let tombstoning = sweeper.sweep_due(&mut |_| {}).await?;
        let tombstone_took = started.elapsed();
        anyhow::ensure!(
            tombstoning.tombstoned == n && tombstoning.deleted == 0,
            "the sweep past the window did {tombstoning:?}, not {n} tombstones"
        );
        let tombstones_in_place = measure(&kitchen, Vacuum::Plain).await?;
        let tombstones = measure(&kitchen, Vacuum::Full).await?;

        clock.advance(horizon);
        let started = Instant::now();
        let deleting = sweeper.sweep_due(&mut |_| {}).await?;
        let delete_took = started.elapsed();
        anyhow::ensure!(
            deleting.deleted == n,
            "the sweep past the horizon did {deleting:?}, not {n} deletions"
        );
        let gone_in_place = measure(&kitchen, Vacuum::Plain).await?;

        let (in_place, compacted) = match self.backend {
            DatabaseKind::Postgres => ("in place (after VACUUM)", "compacted (VACUUM FULL)"),
            DatabaseKind::Sqlite => ("in place", "compacted (VACUUM)"),
        };
        println!("#### Bytes per record ({n} records, operations table + indexes)\n");
        println!("| state | rows | table | indexes | total | bytes/record (table + indexes) |");
        println!("|---|---:|---:|---:|---:|---:|");
        let row = |label: &str, s: &OperationsSize| {
            let per = |bytes: u64, base: u64| bytes.saturating_sub(base) as f64 / n.max(1) as f64;
            println!(
                "| {label} | {} | {} | {} | {} | {:.0} + {:.0} = **{:.0}** |",
                s.rows,
                mib(s.table_bytes),
                mib(s.index_bytes),
                mib(s.total_bytes()),
                per(s.table_bytes, empty.table_bytes),
                per(s.index_bytes, empty.index_bytes),
                per(s.total_bytes(), empty.total_bytes()),
            );
        };
        println!(
            "| empty | 0 | {} | {} | {} | – |",
            mib(empty.table_bytes),
            mib(empty.index_bytes),
            mib(empty.total_bytes())
        );
        row(&format!("full records, {in_place}"), &full_in_place);
        row(&format!("full records, {compacted}"), &full);
        row(&format!("tombstones, {in_place}"), &tombstones_in_place);
        row(&format!("tombstones, {compacted}"), &tombstones);
        println!(
            "| all deleted, {in_place} | {} | {} | {} | {} | – |",
            gone_in_place.rows,
            mib(gone_in_place.table_bytes),
            mib(gone_in_place.index_bytes),
            mib(gone_in_place.total_bytes())
        );
        println!(
            "\n#### Sweep throughput (idle database, batch {})\n",
            self.args.sweep_batch
        );
        println!("| sweep | records | seconds | records/s |");
        println!("|---|---:|---:|---:|");
        for (label, count, took) in [
            (
                "tombstone (past the replay window)",
                tombstoning.tombstoned,
                tombstone_took,
            ),
            (
                "delete (past the tombstone horizon)",
                deleting.deleted,
                delete_took,
            ),
        ] {
            println!(
                "| {label} | {count} | {:.2} | {:.0} |",
                took.as_secs_f64(),
                per_second(count, took)
            );
        }
        println!();
        kitchen.close().await;
        Ok(())
    }

    /// Phase 4: bytes per create with a long description, every table a
    /// create writes, compacted, against the ticket row's own size.
    async fn text(&self) -> anyhow::Result<()> {
        use kitchen::bench::{Table, table_size, vacuum_full};
        let n = self.args.text_creates;
        let clock = Clock::manual(OffsetDateTime::now_utc());
        let (_db, kitchen, tenant) = self
            .kitchen(
                time::Duration::days(30),
                time::Duration::days(400),
                clock.clone(),
            )
            .await?;
        let sizes = async || -> anyhow::Result<Vec<(Table, kitchen::bench::TableSize)>> {
            vacuum_full(&kitchen).await?;
            let mut sizes = Vec::new();
            for table in Table::ALL {
                sizes.push((table, table_size(&kitchen, table).await?));
            }
            Ok(sizes)
        };
        let empty = sizes().await?;
        // Letters and digits from a fixed seed: text no database compresses
        // (PostgreSQL's TOAST would shrink a repeated letter to nothing).
        let description: String = {
            use rand::{Rng, SeedableRng};
            let mut rng = rand::rngs::StdRng::seed_from_u64(30);
            (0..self.args.text_bytes)
                .map(|_| rng.sample(rand::distr::Alphanumeric) as char)
                .collect()
        };
        let bench = Bench {
            draft: TicketDraft {
                description: Some(description),
                ..self.draft.clone()
            },
            args: self.args.clone(),
            backend: self.backend,
        };
        eprintln!("text: creating {n} tickets");
        bench.create(&kitchen, tenant, n, &clock, None).await?;
        let full = sizes().await?;
        let per = |table: Table| {
            let find = |sizes: &[(Table, kitchen::bench::TableSize)]| {
                sizes
                    .iter()
                    .find(|(t, _)| *t == table)
                    .map(|(_, s)| *s)
                    .unwrap_or_default()
            };
            let (before, after) = (find(&empty), find(&full));
            (
                after.table_bytes.saturating_sub(before.table_bytes) as f64 / n.max(1) as f64,
                after.index_bytes.saturating_sub(before.index_bytes) as f64 / n.max(1) as f64,
            )
        };
        println!(
            "#### Bytes per create, {} creates with a {}-byte description (compacted)\n",
            n, self.args.text_bytes
        );
        println!("| table | table | indexes | total |");
        println!("|---|---:|---:|---:|");
        let mut total = 0.0;
        for table in Table::ALL {
            let (t, i) = per(table);
            total += t + i;
            println!("| {} | {t:.0} | {i:.0} | {:.0} |", table.name(), t + i);
        }
        let (ticket_row, _) = per(Table::Tickets);
        println!(
            "| **all** | | | **{total:.0}** ({:.2}× the ticket row's {ticket_row:.0}) |\n",
            total / ticket_row.max(1.0)
        );
        kitchen.close().await;
        Ok(())
    }

    /// Phase 2: create and replay latency with the sweep idle, then while
    /// it drains a backlog.
    async fn latency(&self) -> anyhow::Result<()> {
        let window = time::Duration::days(30);
        let horizon = time::Duration::days(400);
        let clock = Clock::manual(OffsetDateTime::now_utc());
        let (_db, kitchen, tenant) = self.kitchen(window, horizon, clock.clone()).await?;
        let backlog = self.args.backlog;
        eprintln!("latency: creating a backlog of {backlog} records");
        self.create(&kitchen, tenant, backlog, &clock, None).await?;
        vacuum_operations(&kitchen, false).await?;
        // Past both horizons: the sweep tombstones each record and then
        // deletes it, both statements' work.
        clock.advance(horizon + time::Duration::seconds(1));

        // Keys to replay, made after the move, so they replay.
        let mut replay_keys = Vec::new();
        for _ in 0..100 {
            let key = OperationKey::parse(uuid::Uuid::now_v7().to_string())?;
            let outcome = kitchen
                .write::<CreateTicket>(tenant, &key, &self.draft)
                .await?;
            anyhow::ensure!(
                matches!(outcome, Outcome::Created(_)),
                "priming a replay key answered {}",
                outcome.name()
            );
            replay_keys.push(key);
        }
        let replay_keys = Arc::new(replay_keys);
        let seconds = Duration::from_secs_f64(self.args.latency_seconds);

        eprintln!("latency: load with the sweep idle");
        let idle = {
            let stop = Arc::new(AtomicBool::new(false));
            let timer = {
                let stop = stop.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(seconds).await;
                    stop.store(true, Ordering::Relaxed);
                })
            };
            let run = self.load(&kitchen, tenant, &replay_keys, stop).await?;
            timer.await?;
            run
        };

        // The sweep loop of a service whose keys fall due at most one batch
        // a second: each pass is one batch of each kind, then it sleeps.
        eprintln!("latency: the same load with the sweep at its cadence");
        let every = Duration::from_secs_f64(self.args.sweep_every);
        let (cadence, cadence_swept) = {
            let stop = Arc::new(AtomicBool::new(false));
            let sweeping = {
                let (sweeper, stop) = (kitchen.sweeper(), stop.clone());
                tokio::spawn(async move {
                    let deadline = Instant::now() + seconds;
                    let mut swept = SweepReport::default();
                    while Instant::now() < deadline {
                        let batch = sweeper.sweep_batch().await?;
                        swept.tombstoned += batch.tombstoned;
                        swept.deleted += batch.deleted;
                        tokio::time::sleep(every.min(deadline - Instant::now().min(deadline)))
                            .await;
                    }
                    stop.store(true, Ordering::Relaxed);
                    Ok::<_, kitchen::KitchenError>(swept)
                })
            };
            let run = self.load(&kitchen, tenant, &replay_keys, stop).await?;
            (run, sweeping.await??)
        };

        eprintln!("latency: the same load while the sweep drains the backlog");
        let stop = Arc::new(AtomicBool::new(false));
        let sweeping = {
            let sweeper = kitchen.sweeper();
            let stop = stop.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                let mut on_batch = |_: &SweepReport| {};
                let swept = tokio::select! {
                    swept = sweeper.sweep_due(&mut on_batch) => swept.map(Some),
                    () = tokio::time::sleep(seconds) => Ok(None),
                };
                stop.store(true, Ordering::Relaxed);
                (swept, started.elapsed())
            })
        };
        let busy = self.load(&kitchen, tenant, &replay_keys, stop).await?;
        let (swept, sweep_took) = sweeping.await?;
        let swept = swept?;
        let after = measure(&kitchen, Vacuum::None).await?;

        println!(
            "#### Latency, sweep idle vs. sweep running ({} creating + {} replaying tasks, \
             closed loop, in-process)\n",
            self.args.latency_concurrency, self.args.latency_concurrency
        );
        println!(
            "- idle: no sweep.\n\
             - at cadence: one batch of each kind every {} s ({} tombstoned and {} deleted \
             in the window), as the sweep loop does when keys fall due at up to {} a second.",
            self.args.sweep_every,
            cadence_swept.tombstoned,
            cadence_swept.deleted,
            (f64::from(self.args.sweep_batch) / self.args.sweep_every).round()
        );
        match swept {
            Some(report) => println!(
                "- draining: batches back to back over a backlog of due records; it drained \
                 {} tombstones and {} deletions in {:.1} s, the whole window.\n",
                report.tombstoned,
                report.deleted,
                sweep_took.as_secs_f64()
            ),
            None => println!(
                "- draining: batches back to back over a backlog of due records, busy for the \
                 whole window ({:.1} s; {} of {} backlog records not yet deleted at its end).\n",
                sweep_took.as_secs_f64(),
                after
                    .rows
                    .saturating_sub(idle.creates + cadence.creates + busy.creates + 100),
                backlog
            ),
        }
        println!(
            "| sweep | seconds | creates/s | create p50 | create p99 | create max \
             | replays/s | replay p50 | replay p99 | replay max |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (label, run) in [
            ("idle", &idle),
            ("at cadence", &cadence),
            ("draining", &busy),
        ] {
            println!(
                "| {label} | {:.1} | {:.0} | {} | {} | {} | {:.0} | {} | {} | {} |",
                run.elapsed.as_secs_f64(),
                per_second(run.creates, run.elapsed),
                ms(&run.create, 0.50),
                ms(&run.create, 0.99),
                ms(&run.create, 1.0),
                per_second(run.replays, run.elapsed),
                ms(&run.replay, 0.50),
                ms(&run.replay, 0.99),
                ms(&run.replay, 1.0),
            );
        }
        println!();
        kitchen.close().await;
        Ok(())
    }

    /// Closed-loop creates (fresh keys) and replays (of `keys`) until
    /// `stop`.
    async fn load(
        &self,
        kitchen: &Kitchen,
        tenant: TenantId,
        keys: &Arc<Vec<OperationKey>>,
        stop: Arc<AtomicBool>,
    ) -> anyhow::Result<LoadRun> {
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..self.args.latency_concurrency.max(1) * 2 {
            let replaying = i % 2 == 1;
            let (kitchen, keys, stop) = (kitchen.clone(), keys.clone(), stop.clone());
            let draft = self.draft.clone();
            tasks.spawn(async move {
                let mut histogram = Histogram::<u64>::new(3)?;
                let mut n = i;
                while !stop.load(Ordering::Relaxed) {
                    let key = if replaying {
                        n = (n + 7) % keys.len();
                        keys[n].clone()
                    } else {
                        OperationKey::parse(uuid::Uuid::now_v7().to_string())?
                    };
                    let sent = Instant::now();
                    let outcome = kitchen.write::<CreateTicket>(tenant, &key, &draft).await?;
                    // `record`, not `saturating_record`: only the former
                    // grows the histogram; the latter clamps a slow answer
                    // to the largest value seen so far.
                    histogram.record(
                        u64::try_from(sent.elapsed().as_micros())
                            .unwrap_or(u64::MAX)
                            .max(1),
                    )?;
                    let expected = if replaying { "replayed" } else { "created" };
                    anyhow::ensure!(
                        outcome.name() == expected,
                        "expected {expected}, got {}",
                        outcome.name()
                    );
                }
                Ok::<_, anyhow::Error>((replaying, histogram))
            });
        }
        let mut run = LoadRun {
            elapsed: Duration::ZERO,
            creates: 0,
            replays: 0,
            create: Histogram::new(3)?,
            replay: Histogram::new(3)?,
        };
        while let Some(task) = tasks.join_next().await {
            let (replaying, histogram) = task??;
            if replaying {
                run.replay.add(&histogram)?;
            } else {
                run.create.add(&histogram)?;
            }
        }
        run.elapsed = started.elapsed();
        run.creates = run.create.len();
        run.replays = run.replay.len();
        Ok(run)
    }

    /// Phase 3: the table's size under many creates with a short window
    /// and horizon and the sweep loop running.
    async fn steady(&self) -> anyhow::Result<()> {
        let tick = time::Duration::milliseconds(i64::try_from(self.args.tick_ms)?);
        let window = time::Duration::seconds(self.args.window_seconds);
        let horizon = time::Duration::seconds(self.args.horizon_seconds);
        let clock = Clock::manual(OffsetDateTime::now_utc());
        let (_db, kitchen, tenant) = self.kitchen(window, horizon, clock.clone()).await?;

        let tombstoned = Arc::new(AtomicU64::new(0));
        let deleted = Arc::new(AtomicU64::new(0));
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        let sweep = {
            let (tombstoned, deleted) = (tombstoned.clone(), deleted.clone());
            tokio::spawn(kitchen.sweeper().run(
                Duration::from_secs_f64(self.args.sweep_every),
                async {
                    let _ = stopped.await;
                },
                move |report: &SweepReport| {
                    tombstoned.fetch_add(report.tombstoned, Ordering::Relaxed);
                    deleted.fetch_add(report.deleted, Ordering::Relaxed);
                },
                || {},
            ))
        };

        // Without autovacuum nothing makes the space of swept rows reusable
        // and PostgreSQL's files grow for ever; stand in for it, at its
        // default cadence, as a production server would have it.
        let autovacuum = kitchen::bench::autovacuum(&kitchen).await?;
        let stand_in = autovacuum == Some(false) && self.args.vacuum_every > 0.0;
        let (vacuum_stop, vacuum_stopped) = tokio::sync::oneshot::channel::<()>();
        let vacuums = Arc::new(AtomicU64::new(0));
        let vacuuming = {
            let (kitchen, vacuums) = (kitchen.clone(), vacuums.clone());
            let every = Duration::from_secs_f64(self.args.vacuum_every.max(0.001));
            tokio::spawn(async move {
                tokio::pin!(vacuum_stopped);
                if !stand_in {
                    return Ok(());
                }
                loop {
                    tokio::select! {
                        _ = &mut vacuum_stopped => return Ok::<_, kitchen::KitchenError>(()),
                        () = tokio::time::sleep(every) => {}
                    }
                    vacuum_operations(&kitchen, false).await?;
                    vacuums.fetch_add(1, Ordering::Relaxed);
                }
            })
        };

        let per_create_ms = self.args.tick_ms as f64;
        println!(
            "#### Steady state: replay window {} s, tombstone horizon {} s of a clock moved {} ms per create \
             (= {:.0} and {:.0} creates), sweep every {} s\n",
            self.args.window_seconds,
            self.args.horizon_seconds,
            self.args.tick_ms,
            self.args.window_seconds as f64 * 1000.0 / per_create_ms,
            self.args.horizon_seconds as f64 * 1000.0 / per_create_ms,
            self.args.sweep_every,
        );
        println!(
            "| creates | rows | of which tombstones | table | indexes | total | creates/s (this step) |"
        );
        println!("|---:|---:|---:|---:|---:|---:|---:|");
        let started = Instant::now();
        let deadline = Duration::from_secs_f64(self.args.max_seconds);
        let mut made = 0;
        let mut totals = Vec::new();
        while made < self.args.creates && started.elapsed() < deadline {
            let step = self.args.sample_every.min(self.args.creates - made);
            let took = self
                .create(&kitchen, tenant, step, &clock, Some(tick))
                .await?;
            made += step;
            let size = measure(&kitchen, Vacuum::None).await?;
            totals.push((made, size.total_bytes()));
            println!(
                "| {made} | {} | {} | {} | {} | {} | {:.0} |",
                size.rows,
                size.tombstones,
                mib(size.table_bytes),
                mib(size.index_bytes),
                mib(size.total_bytes()),
                per_second(step, took),
            );
            eprintln!(
                "steady: {made} creates, {} in operations",
                mib(size.total_bytes())
            );
        }
        let elapsed = started.elapsed();
        let _ = shutdown.send(());
        sweep.await?;
        let _ = vacuum_stop.send(());
        vacuuming.await??;
        println!();
        match (autovacuum, stand_in) {
            (Some(true), _) => println!("PostgreSQL's autovacuum was on (server settings).\n"),
            (Some(false), true) => println!(
                "Autovacuum is off on this server, so the benchmark ran `VACUUM operations` \
                 every {} s in its place ({} runs; autovacuum's default naptime is 60 s).\n",
                self.args.vacuum_every,
                vacuums.load(Ordering::Relaxed)
            ),
            (Some(false), false) => println!(
                "Autovacuum is off on this server and nothing vacuumed: PostgreSQL cannot \
                 reuse the space of swept rows.\n"
            ),
            (None, _) => {}
        }
        if made < self.args.creates {
            println!(
                "**Stopped at {made} of {} creates**: the {:.0} s budget ran out.\n",
                self.args.creates, self.args.max_seconds
            );
        }
        // Flat: once a full horizon of records exists (and once more, for
        // the first generation's deletions to be reused), the size stays in
        // a band.
        let settled = 2 * self.args.horizon_seconds as u64 * 1000 / self.args.tick_ms.max(1);
        let band: Vec<u64> = totals
            .iter()
            .filter(|(n, _)| *n >= settled)
            .map(|(_, t)| *t)
            .collect();
        if let (Some(lo), Some(hi)) = (band.iter().min(), band.iter().max()) {
            println!(
                "{made} creates in {:.0} s ({:.0}/s), sweep: {} tombstoned, {} deleted. \
                 From {settled} creates on, table + indexes stayed between {} and {}.\n",
                elapsed.as_secs_f64(),
                per_second(made, elapsed),
                tombstoned.load(Ordering::Relaxed),
                deleted.load(Ordering::Relaxed),
                mib(*lo),
                mib(*hi),
            );
        }
        kitchen.close().await;
        Ok(())
    }
}

/// One load window's results.
struct LoadRun {
    elapsed: Duration,
    creates: u64,
    replays: u64,
    create: Histogram<u64>,
    replay: Histogram<u64>,
}

/// What to do before measuring.
#[derive(Debug, Clone, Copy)]
enum Vacuum {
    None,
    /// What production does (PostgreSQL `VACUUM`; nothing on SQLite).
    Plain,
    /// Compact (`VACUUM FULL` / SQLite `VACUUM`).
    Full,
}

async fn measure(kitchen: &Kitchen, vacuum: Vacuum) -> anyhow::Result<OperationsSize> {
    match vacuum {
        Vacuum::None => {}
        Vacuum::Plain => vacuum_operations(kitchen, false).await?,
        Vacuum::Full => vacuum_operations(kitchen, true).await?,
    }
    Ok(operations_size(kitchen).await?)
}

fn per_second(count: u64, took: Duration) -> f64 {
    count as f64 / took.as_secs_f64().max(f64::EPSILON)
}

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn ms(histogram: &Histogram<u64>, quantile: f64) -> String {
    if histogram.is_empty() {
        return "–".into();
    }
    format!(
        "{:.2} ms",
        histogram.value_at_quantile(quantile) as f64 / 1000.0
    )
}
