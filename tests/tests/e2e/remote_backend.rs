//! The remote ticket backend end to end: real server processes (the
//! fault-injection build) making tickets in the provider simulator, driven
//! by the double-fire driver through both doors, on SQLite and PostgreSQL,
//! with the simulator honouring idempotency keys and ignoring them.
//!
//! Every check's ground truth is the simulator's own count of tickets: no
//! extra ticket at the provider, none missing once reconciled, no false
//! dedup of a new request, and "unknown" for as long as the outcome was.

use std::sync::Arc;
use std::time::Duration;

use drivers::double_fire::{self, Options, ProviderTarget, Report, Target, Verdict};
use drivers::provider_sim::{self, KeyPolicy, SimConfig};
use e2e_tests::process::{ServerProcess, fault_injection_binary};
use kitchen::testing::{Backend, TestDatabase, tenant_with_token};

use crate::double_fire::{RestartProcess, verdicts};

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
    let kitchen = db.kitchen().await;
    let (_, acme) = tenant_with_token(&kitchen, "acme").await;
    let (_, globex) = tenant_with_token(&kitchen, "globex").await;
    kitchen.close().await;

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
    let binary = fault_injection_binary();
    let a = Arc::new(ServerProcess::start_with_env(
        binary.clone(),
        db.url(),
        env.clone(),
    ));
    let b = (db.backend() == Backend::Postgres)
        .then(|| ServerProcess::start_with_env(binary, db.url(), env));
    let caller = double_fire::Caller::default();
    assert!(
        caller.wait_ready(&a.base_url(), 100).await,
        "instance A is ready"
    );
    if let Some(b) = &b {
        assert!(
            caller.wait_ready(&b.base_url(), 100).await,
            "instance B is ready"
        );
    }
    let target = Target {
        base_url: a.base_url(),
        token: acme.secret,
        other_token: Some(globex.secret),
        second_base_url: b.as_ref().map(ServerProcess::base_url),
        restart: Some(Arc::new(RestartProcess(a.clone()))),
        provider: Some(ProviderTarget {
            url: sim.base_url(),
            dedup_window: (keys == KeyPolicy::Honour).then_some(DEDUP_WINDOW),
            hang: HANG,
            settle_within: Duration::from_secs(10),
        }),
    };
    let report = double_fire::run(&target, Options::default(), |result| println!("{result}")).await;
    println!("{}", report.summary());
    report
}

fn assert_all_pass(report: &Report, db: &TestDatabase, keys: KeyPolicy) {
    let two_instances = db.backend() == Backend::Postgres;
    for number in 1..=17 {
        let v = verdicts(report, number);
        let expected_skip =
            (number == 9 && !two_instances) || (number == 16 && keys == KeyPolicy::Ignore);
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
