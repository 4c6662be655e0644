//! The remote ticket backend end to end: real server processes (the
//! fault-injection build) keeping their tickets in the provider simulator,
//! driven by the double-fire driver through both doors, on SQLite and
//! PostgreSQL (two instances there), with the simulator honouring
//! idempotency keys (every write action: checks 1 to 23) and ignoring them
//! (create_ticket: checks 1 to 17; the other actions take the same ledger
//! code, so once per database is their share of the CI budget).
//!
//! Every check's ground truth is the simulator's own count of what it
//! made: no extra effect at the provider, none missing once reconciled, no
//! false dedup of a new request, and "unknown" for as long as the outcome
//! was.

use std::time::Duration;

use double_fire::{Options, ProviderTarget, Report, Verdict};
use kitchen::Action;
use kitchen::testing::{DatabaseKind, TestDatabase};
use provider_sim::{self, KeyPolicy, SimConfig};

use crate::double_fire::{Deployment, verdicts};

/// The provider's dedup window when it honours keys (server and simulator).
const DEDUP_WINDOW: Duration = Duration::from_millis(1000);
/// How long the server waits for one provider call.
const PROVIDER_TIMEOUT_MS: &str = "500";
/// How long the simulator's hang fault holds a request: past the timeout.
const HANG: Duration = Duration::from_millis(1000);
/// The provider's longest request, as the server is told: past the hang.
const MAX_INFLIGHT_MS: &str = "1500";

async fn drive(db: &TestDatabase, keys: KeyPolicy) -> Report {
    let sim = provider_sim::spawn(
        "127.0.0.1:0".parse().expect("loopback"),
        SimConfig {
            keys,
            dedup_window: DEDUP_WINDOW,
        },
    )
    .await
    .expect("start the provider simulator");
    let window_ms = match keys {
        KeyPolicy::Honour => DEDUP_WINDOW.as_millis().to_string(),
        KeyPolicy::Ignore => "0".into(),
    };
    let env: Vec<(String, String)> = [
        ("TICKET_BACKEND", "remote".to_owned()),
        ("PROVIDER_URL", sim.base_url()),
        ("PROVIDER_TIMEOUT_MS", PROVIDER_TIMEOUT_MS.into()),
        ("PROVIDER_DEDUP_WINDOW_MS", window_ms),
        ("PROVIDER_MAX_INFLIGHT_MS", MAX_INFLIGHT_MS.into()),
        ("RECONCILE_EVERY_MS", "200".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let mut deployment = Deployment::start(db, env).await;
    deployment.target.provider = Some(ProviderTarget {
        url: sim.base_url(),
        redmine: None,
        dedup_window: (keys == KeyPolicy::Honour).then_some(DEDUP_WINDOW),
        hang: HANG,
        settle_within: Duration::from_secs(10),
    });
    let action = match keys {
        KeyPolicy::Honour => None,
        KeyPolicy::Ignore => Some(Action::CreateTicket),
    };
    deployment
        .drive(Options {
            action,
            ..Options::default()
        })
        .await
}

fn assert_all_pass(report: &Report, db: &TestDatabase, keys: KeyPolicy) {
    let two_instances = db.backend() == DatabaseKind::Postgres;
    let last = match keys {
        KeyPolicy::Honour => 23,
        KeyPolicy::Ignore => 17,
    };
    for number in 1..=last {
        let v = verdicts(report, number);
        let expected_skip =
            (number == 9 && !two_instances) || (number == 16 && keys == KeyPolicy::Ignore);
        if (18..=23).contains(&number) {
            // Every action but the create is reported: the ones the
            // provider has nothing like say why they did not run, every
            // other action's check passes.
            let reported: std::collections::HashSet<Action> = report
                .checks
                .iter()
                .filter(|c| c.number == number)
                .map(|c| c.action)
                .collect();
            let lifecycle: std::collections::HashSet<Action> = Action::ALL
                .into_iter()
                .filter(|a| *a != Action::CreateTicket)
                .collect();
            assert_eq!(reported, lifecycle, "check {number}: the actions reported");
            for check in report.checks.iter().filter(|c| c.number == number) {
                let expected = if kitchen::reaches_provider(check.action) {
                    Verdict::Pass
                } else {
                    Verdict::Skip
                };
                assert_eq!(check.verdict, expected, "check {number}: {}", check.name);
            }
            continue;
        }
        if expected_skip {
            assert!(
                v.iter().all(|v| *v == Verdict::Skip),
                "check {number}: {v:?}"
            );
        } else {
            assert!(
                !v.is_empty() && v.iter().all(|v| *v == Verdict::Pass),
                "check {number}: {v:?}"
            );
        }
    }
    if keys == KeyPolicy::Honour {
        // Checks 10 to 17 ran for every action the provider has, each
        // with its own name; for the others only check 10, which proves
        // them refused.
        for action in Action::ALL {
            let ran = report
                .checks
                .iter()
                .filter(|c| c.action == action && (10..=17).contains(&c.number))
                .count();
            if kitchen::reaches_provider(action) {
                assert_eq!(
                    ran, 18,
                    "{action}: checks 10 to 17 (12 twice), through both doors"
                );
            } else {
                assert_eq!(ran, 2, "{action}: check 10, through both doors");
            }
        }
    }
    assert!(report.all_passed());
    assert_eq!(report.totals.duplicates, 0);
    assert_eq!(report.totals.lost, 0);
}

async fn with_a_provider_that_honours_keys(db: TestDatabase) {
    let report = drive(&db, KeyPolicy::Honour).await;
    assert_all_pass(&report, &db, KeyPolicy::Honour);
}

async fn with_a_provider_that_ignores_keys(db: TestDatabase) {
    let report = drive(&db, KeyPolicy::Ignore).await;
    assert_all_pass(&report, &db, KeyPolicy::Ignore);
}

kitchen::on_both_databases!(
    with_a_provider_that_honours_keys,
    with_a_provider_that_ignores_keys
);
