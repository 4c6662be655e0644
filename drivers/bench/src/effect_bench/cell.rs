//! One cell: a row's fault set for each intent of one strategy on one
//! backend, the intents told at once, then, once nothing that could still
//! make an effect is under way, the effects counted where they are made.

use std::time::{Duration, Instant};

use futures::future::join_all;

use std::sync::Arc;

use super::callers::{Caller, GuardHeard, Policy};
use super::client_caller::ClientAgent;
use super::env::{Env, Which};
use super::matrix::{Backend, Column, Guard, Row, Strategy};
use super::metrics::{self, IntentLog, Metrics, Observed};
use super::proxy::{Fate, Rule};
use super::scenario::{self, Agent, Asks};
use super::timing::{self, Budget};
use super::truth::{self, Ledger};
use super::wire::{Ask, Door};
use provider_sim::{Fault, FaultRule};

/// How long the count waits, at most, for our server's effects to settle.
const SETTLE_BOUND: Duration = Duration::from_secs(10);

/// One cell to run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cell {
    /// The fault point.
    pub(crate) row: Row,
    /// The strategy and backend.
    pub(crate) column: Column,
    /// The column's place in the matrix (for the seeded schedule).
    pub(crate) column_index: usize,
    /// Intents to tell.
    pub(crate) intents: usize,
    /// The run's seed.
    pub(crate) seed: u64,
}

impl Cell {
    fn project(self) -> String {
        let guard = self.column.guard.map_or(String::new(), |g| format!("-{g}"));
        format!(
            "eb-r{:02}-{}-{}{guard}",
            self.row.index(),
            self.column.backend,
            self.column.strategy.letter()
        )
    }

    /// Intent `intent`'s title: unique to it within the run (the control's
    /// second intent repeats it on purpose), since faults pick its
    /// requests out by it and the count finds its effects by it.
    pub(crate) fn title(self, intent: usize) -> String {
        format!(
            "eb r{:02} {} i{intent:03}",
            self.row.index(),
            self.column.label()
        )
    }

    /// What intent `i` asks for, its repaired form, and the control's
    /// second intent.
    fn asks(self, intent: usize) -> Asks {
        let ask = Ask {
            project_id: self.project(),
            title: self.title(intent),
            description: match (self.row, self.column.backend) {
                // Invalid here (over 10,000 characters): refused, nothing made.
                (Row::RepairAfterRefusal, Backend::Local) => "x".repeat(10_001),
                _ => "first version".into(),
            },
            confirm_new: false,
        };
        Asks {
            repaired: Ask {
                description: "corrected".into(),
                ..ask.clone()
            },
            second: Ask {
                confirm_new: self.column.guard == Some(Guard::ConfirmNew),
                ..ask.clone()
            },
            first: ask,
        }
    }

    /// The instance of this service the cell's callers reach, if any.
    fn instance(self) -> Option<Which> {
        if !self.column.through_service() {
            return None;
        }
        Some(match self.row {
            Row::OtherInstance => Which::Pair,
            Row::AfterReplayWindow => Which::ShortWindow,
            _ => Which::Main,
        })
    }
}

/// Runs `cell` in `env` and measures it.
pub(crate) async fn run(
    env: &mut Env,
    cell: Cell,
    journals: &std::path::Path,
) -> anyhow::Result<Metrics> {
    let Column {
        backend, strategy, ..
    } = cell.column;
    let sim = env.sim();
    let provider_ledger = env.provider_ledger();
    // Where the callers' requests go behind the proxy, and where effects
    // are counted.
    let (upstream, first_upstream, door_token, ledger) = match cell.instance() {
        Some(which) => {
            let instance = env.instance(which, cell.column.server_guard()).await?;
            let ledger = match provider_ledger {
                Some(ledger) => ledger,
                None => Ledger::Database(instance.database.url().to_owned()),
            };
            // Row "another instance": the first attempt goes to A, the
            // rest to B.
            let (default, first) = if which == Which::Pair {
                (instance.url(1), Some(instance.url(0)))
            } else {
                (instance.url(0), None)
            };
            let settle = (sim.is_some()).then(|| instance.database.url().to_owned());
            (
                default,
                first,
                Some((instance.token.clone(), settle)),
                ledger,
            )
        }
        None => {
            let (Some(sim), Some(ledger)) = (sim.clone(), provider_ledger) else {
                anyhow::bail!("{strategy} calls a provider; {backend} has none");
            };
            (sim.base_url().to_owned(), None, None, ledger)
        }
    };
    env.proxy.reset(&upstream);
    if let Some(sim) = &sim {
        sim.clear_faults().await?;
    }
    let asks: Vec<Asks> = (0..cell.intents).map(|i| cell.asks(i)).collect();
    let titles: Vec<String> = asks.iter().map(|a| a.first.title.clone()).collect();
    // What the guard said to each intent's callers.
    let heard: Vec<Arc<GuardHeard>> = (0..cell.intents).map(|_| Arc::default()).collect();
    set_faults(env, cell, &titles, first_upstream.as_deref()).await?;

    let base = env.proxy.base_url();
    let door = match (&door_token, &env.redmine) {
        (Some((token, _)), _) => Door::Service {
            base: base.clone(),
            token: token.clone(),
        },
        // The adapter was connected through the proxy at `base`.
        (None, Some(redmine)) => Door::Redmine(Box::new(redmine.adapter.clone())),
        (None, None) => Door::Provider { base: base.clone() },
    };
    let policy = match (strategy, backend) {
        (Strategy::Blind, _) => Some(Policy::Blind),
        (Strategy::Native, Backend::Honour) => Some(Policy::NativeKey),
        (Strategy::Native, _) => Some(Policy::NoRetry),
        (Strategy::Naive, _) => Some(Policy::Naive),
        (Strategy::Client, _) => None,
    };
    let token = door_token
        .as_ref()
        .map(|(t, _)| t.clone())
        .unwrap_or_default();
    let make = |n: usize| {
        let (door, base, token) = (door.clone(), base.clone(), token.clone());
        let heard = heard[n / 2].clone();
        let journal = journals.join(format!(
            "{}-{n}.db",
            cell.title(n / 2).replace([' ', '/'], "_")
        ));
        async move {
            Ok::<_, anyhow::Error>(match policy {
                Some(policy) => Agent::simple(Caller {
                    policy,
                    door,
                    budget: Budget::default(),
                    http: reqwest::Client::new(),
                    heard,
                }),
                None => Agent::Client(Box::new(
                    ClientAgent::new(&base, &token, &journal, timing::CALL_TIMEOUT).await?,
                )),
            })
        }
    };

    let before = env.creates_received().await?;
    let moments = timing::schedule(cell.seed, cell.row.index(), cell.column_index, cell.intents);
    let started = Instant::now();
    if cell.row == Row::BeforeDispatch {
        match (&sim, door_token.is_some()) {
            // Our server cannot reach the provider.
            (Some(sim), true) => sim.outage(timing::OUTAGE).await?,
            // The caller cannot reach whatever it calls.
            _ => env.proxy.outage(timing::OUTAGE).await?,
        }
    }
    let stories = join_all(asks.iter().enumerate().map(|(i, asks)| {
        let make = &make;
        let moment = moments[i];
        async move {
            tokio::time::sleep(moment.start).await;
            let agent = make(2 * i).await?;
            scenario::tell(cell.row, agent, || make(2 * i + 1), asks, moment).await
        }
    }))
    .await;

    // Nothing that could still make an effect may be under way: the
    // simulator's hangs, delayed requests, our server's dispatches and
    // reconciliations.
    if matches!(
        cell.row,
        Row::CancelledMidCall | Row::CallerCrash | Row::CallerTimeout
    ) {
        let hangs_end = started + timing::SLOWER + Duration::from_millis(300);
        tokio::time::sleep_until(hangs_end.into()).await;
    }
    let deadline = Instant::now() + SETTLE_BOUND;
    while env.proxy.in_flight() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let unsettled = match door_token
        .as_ref()
        .and_then(|(_, settle)| settle.as_deref())
    {
        Some(url) => truth::wait_settled(url, SETTLE_BOUND).await?,
        None => 0,
    };
    let truth = truth::count(&ledger, &cell.project(), &titles).await?;
    let seen = env.proxy.seen();
    let provider_writes = match (env.creates_received().await?, before) {
        (Some(now), Some(before)) => Some(now - before),
        _ => None,
    };
    let mut logs = Vec::new();
    for ((title, story), heard) in titles.iter().zip(stories).zip(&heard) {
        let story = story?;
        logs.push(IntentLog {
            title: title.clone(),
            end: story
                .ends
                .last()
                .copied()
                .unwrap_or(super::callers::CallEnd::Unresolved),
            dedup_answer: story.ends.iter().any(|e| e.dedup()),
            met_ambiguity: cell.row.ambiguous(),
            latency: story.latency,
            writes: seen.writes.get(title).copied().unwrap_or(0),
            flagged_heard: heard.flagged(),
            refused_heard: heard.refused(),
        });
    }
    let observed = Observed {
        truth,
        status_reads: seen.status_reads,
        provider_writes,
        unsettled,
        guard_said: seen.guard,
    };
    if let Some(sim) = &sim {
        sim.clear_faults().await?;
    }
    Ok(metrics::measure(&logs, &observed, cell.row.multiplicity()))
}

/// Schedules the row's fault for each title: at the simulator (what the
/// provider does) or at the proxy (what the caller's side of the wire
/// does). Outages are started by [`run`], just before the intents.
async fn set_faults(
    env: &Env,
    cell: Cell,
    titles: &[String],
    first_upstream: Option<&str>,
) -> anyhow::Result<()> {
    let remote = cell.column.backend.remote();
    let service = cell.instance().is_some();
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    // (at the simulator, at the proxy)
    let (fault, fate) = match cell.row {
        Row::NewActionControl | Row::BeforeDispatch => (None, None),
        Row::ReceivedNotMutated => (Some(Fault::FailBeforeCommit), None),
        Row::MutatedAnswerLost => (Some(Fault::CommitThenDrop), None),
        Row::AnswerLostToCaller | Row::OtherInstance => (None, Some(Fate::LoseAnswer)),
        Row::CancelledMidCall | Row::CallerCrash if remote => (
            Some(Fault::Hang {
                ms: ms(timing::SLOW),
            }),
            None,
        ),
        Row::CancelledMidCall | Row::CallerCrash => (None, Some(Fate::Delay(timing::SLOW))),
        Row::CallerTimeout if remote => (
            Some(Fault::Hang {
                ms: ms(timing::SLOWER),
            }),
            None,
        ),
        Row::CallerTimeout => (None, Some(Fate::Delay(timing::SLOWER))),
        Row::AfterProviderWindow if service => (Some(Fault::CommitThenDrop), Some(Fate::Withhold)),
        Row::AfterProviderWindow | Row::AfterReplayWindow | Row::RepairAfterLostAnswer => {
            (None, Some(Fate::Withhold))
        }
        Row::RepairAfterRefusal if remote => (Some(Fault::Reject), None),
        Row::RepairAfterRefusal => (None, None),
    };
    for title in titles {
        if let Some(fault) = &fault {
            let sim = env
                .sim()
                .ok_or_else(|| anyhow::anyhow!("a provider fault on the local backend"))?;
            sim.add_fault(&FaultRule::create(fault.clone()).title_contains(title))
                .await?;
        }
        if fate.is_some() || first_upstream.is_some() {
            env.proxy.add(Rule {
                title: title.clone(),
                fate,
                upstream: first_upstream.map(str::to_owned),
            });
        }
    }
    Ok(())
}
