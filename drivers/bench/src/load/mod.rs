//! The load tool: N concurrent keep-alive clients against a running
//! server, through either door, then a check of the server's state that no
//! intended ticket was duplicated or lost.
//!
//! Workloads: `create` (a fresh key per request), `replay` (one primed key,
//! the byte-identical request every time), `mixed` (a given share of
//! requests retries a key this client already used).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

use double_fire::{Answer, Caller, Door, Ticket};

/// What each request does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Workload {
    /// A fresh key per request: every request is a new ticket.
    Create,
    /// One primed key: every request is a replay.
    Replay,
    /// This share (0 to 1) of requests retries an earlier key of the same
    /// client; the rest are new.
    Mixed(f64),
}

/// A load run's settings.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Base URL of the server.
    pub base_url: String,
    /// A bearer token.
    pub token: String,
    /// Which door.
    pub door: Door,
    /// What the requests do.
    pub workload: Workload,
    /// Concurrent clients.
    pub concurrency: usize,
    /// How long to fire.
    pub duration: Duration,
    /// Print progress every second on stderr.
    pub progress: bool,
}

/// Latency percentiles, in milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Slowest.
    pub max: f64,
}

/// The ground truth after the run.
#[derive(Debug, Clone, Serialize)]
pub struct Verification {
    /// Distinct tickets the answered requests intended (one per key).
    pub intended: usize,
    /// Tickets that exist for the run's project.
    pub found: usize,
    /// Tickets beyond one per key.
    pub duplicates: usize,
    /// Answered tickets that do not exist.
    pub lost: usize,
}

/// A load run's result.
#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    /// `rest` or `mcp`.
    pub door: String,
    /// `create`, `replay` or `mixed`.
    pub workload: String,
    /// Concurrent clients.
    pub concurrency: usize,
    /// Seconds fired.
    pub seconds: f64,
    /// Requests answered (successfully or not).
    pub requests: u64,
    /// Successful requests per second.
    pub throughput: f64,
    /// Latency of successful requests.
    pub latency_ms: Latency,
    /// Requests that failed (no answer, or not a ticket).
    pub errors: u64,
    /// What the server holds afterwards.
    pub verification: Verification,
}

impl LoadReport {
    /// One line for humans.
    pub fn line(&self) -> String {
        format!(
            "{} {} c={}: {:.0} req/s, p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms, max {:.2} ms, {} errors; \
             intended {}, found {}, duplicates {}, lost {}",
            self.door,
            self.workload,
            self.concurrency,
            self.throughput,
            self.latency_ms.p50,
            self.latency_ms.p95,
            self.latency_ms.p99,
            self.latency_ms.max,
            self.errors,
            self.verification.intended,
            self.verification.found,
            self.verification.duplicates,
            self.verification.lost
        )
    }
}

struct Worker {
    histogram: Histogram<u64>,
    errors: u64,
    /// key -> ticket id, for every key answered with a ticket.
    tickets: HashMap<String, String>,
}

/// Fires the load and verifies the result.
pub async fn run(config: &LoadConfig) -> anyhow::Result<LoadReport> {
    let caller = Caller::default();
    let run_id = &uuid::Uuid::now_v7().simple().to_string()[20..];
    let ticket = Ticket {
        project_id: format!("load-{run_id}"),
        title: "load".into(),
    };
    let primed = uuid::Uuid::now_v7().to_string();
    if config.workload == Workload::Replay {
        let answer = caller
            .create(
                &config.base_url,
                config.door,
                &config.token,
                Some(&primed),
                &ticket,
            )
            .await;
        anyhow::ensure!(
            answer.id().is_some(),
            "could not prime the replay key: {answer:?}"
        );
    }
    let answered = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + config.duration;
    let ticker = config.progress.then(|| {
        let answered = answered.clone();
        tokio::spawn(async move {
            let mut last = 0;
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let now = answered.load(Ordering::Relaxed);
                eprintln!(
                    "[{:>4.0}s] {now} requests, {} req/s",
                    started.elapsed().as_secs_f64(),
                    now - last
                );
                last = now;
            }
        })
    });
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..config.concurrency.max(1) {
        let (caller, config, ticket, primed, answered) = (
            caller.clone(),
            config.clone(),
            ticket.clone(),
            primed.clone(),
            answered.clone(),
        );
        tasks.spawn(async move {
            let mut state = Worker {
                histogram: Histogram::new(3).expect("histogram"),
                errors: 0,
                tickets: HashMap::new(),
            };
            let mut used: Vec<String> = Vec::new();
            let mut n: u64 = 0;
            while Instant::now() < deadline {
                n += 1;
                let key = match config.workload {
                    Workload::Create => uuid::Uuid::now_v7().to_string(),
                    Workload::Replay => primed.clone(),
                    Workload::Mixed(share) => {
                        // Deterministic spread: a retry when the running
                        // count crosses the next multiple of 1/share.
                        let retry = !used.is_empty()
                            && ((n as f64 * share).floor() > ((n - 1) as f64 * share).floor());
                        if retry {
                            used[(n as usize * 7 + worker) % used.len()].clone()
                        } else {
                            let k = uuid::Uuid::now_v7().to_string();
                            used.push(k.clone());
                            k
                        }
                    }
                };
                let t0 = Instant::now();
                let answer = caller
                    .create(
                        &config.base_url,
                        config.door,
                        &config.token,
                        Some(&key),
                        &ticket,
                    )
                    .await;
                let micros = u64::try_from(t0.elapsed().as_micros()).unwrap_or(u64::MAX);
                answered.fetch_add(1, Ordering::Relaxed);
                match answer {
                    Answer::Created { id, .. } | Answer::Replayed { id, .. } => {
                        let _ = state.histogram.record(micros.max(1));
                        state.tickets.insert(key, id);
                    }
                    _ => state.errors += 1,
                }
            }
            state
        });
    }
    let mut histogram = Histogram::<u64>::new(3)?;
    let mut errors = 0;
    let mut tickets: HashMap<String, String> = HashMap::new();
    while let Some(worker) = tasks.join_next().await {
        let worker = worker?;
        histogram.add(&worker.histogram)?;
        errors += worker.errors;
        tickets.extend(worker.tickets);
    }
    let seconds = started.elapsed().as_secs_f64();
    if let Some(ticker) = ticker {
        ticker.abort();
    }
    let listed: BTreeSet<String> = caller
        .count(&config.base_url, &config.token, &ticket.project_id)
        .await?
        .into_iter()
        .collect();
    let answered_ids: BTreeSet<&String> = tickets.values().collect();
    let verification = Verification {
        intended: tickets.len(),
        found: listed.len(),
        duplicates: listed.len().saturating_sub(answered_ids.len()),
        lost: answered_ids
            .iter()
            .filter(|id| !listed.contains(id.as_str()))
            .count(),
    };
    let ms = |q: f64| histogram.value_at_quantile(q) as f64 / 1000.0;
    Ok(LoadReport {
        door: config.door.to_string(),
        workload: match config.workload {
            Workload::Create => "create".into(),
            Workload::Replay => "replay".into(),
            Workload::Mixed(share) => format!("mixed({share})"),
        },
        concurrency: config.concurrency,
        seconds,
        requests: answered.load(Ordering::Relaxed),
        throughput: histogram.len() as f64 / seconds,
        latency_ms: Latency {
            p50: ms(0.5),
            p95: ms(0.95),
            p99: ms(0.99),
            max: histogram.max() as f64 / 1000.0,
        },
        errors,
        verification,
    })
}
