//! The double-fire driver against real server processes: the full matrix
//! must pass (SQLite: checks 1 to 8; PostgreSQL: 1 to 9 with two
//! instances; on both, checks 18 to 23 for update_ticket,
//! transition_ticket and add_comment through both doors), and with
//! sabotaged retries the fault checks must fail, which shows the faults
//! bite and the checks can catch a duplicate. Check 24 (a retry after the
//! key's replay window) runs against a server with a one-second window:
//! `expired`, one ticket; sabotaged, a second ticket and a failure.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use double_fire::{self, CheckResult, Options, Report, Restart, Target, Verdict};
use e2e_tests::TestApp;
use e2e_tests::process::{ServerProcess, fault_injection_binary, tickets_binary};
use kitchen::testing::{DatabaseKind, TestDatabase, tenant_with_token};
use kitchen::{Action, KitchenConfig};

/// The checks that run for the lifecycle actions (the policies of checks
/// 2, 3, 4, 5, 7 and 8).
const LIFECYCLE_CHECKS: std::ops::RangeInclusive<u8> = 18..=23;
/// The check that retries after the key's replay window.
const AFTER_WINDOW: u8 = 24;
/// What check 24 says when the server's window is too long to wait out.
const WINDOW_TOO_LONG: &str = "start it with --replay-window-secs 3";

/// The lifecycle actions: every action but create_ticket.
fn lifecycle() -> impl Iterator<Item = Action> {
    Action::ALL
        .into_iter()
        .filter(|action| *action != Action::CreateTicket)
}

struct RestartProcess(Arc<ServerProcess>);

impl Restart for RestartProcess {
    fn restart(&self) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send + '_>> {
        Box::pin(async move {
            self.0.restart().await;
            Ok(())
        })
    }
}

/// Fault-injection servers over `db`, started with `env`: one instance on
/// SQLite, two on PostgreSQL, with tenants acme and globex.
pub(crate) struct Deployment {
    /// What the driver aims at (instance A holds its restart).
    pub(crate) target: Target,
    // Instance B lives as long as the deployment.
    _second: Option<ServerProcess>,
}

impl Deployment {
    pub(crate) async fn start(db: &TestDatabase, env: Vec<(String, String)>) -> Self {
        let kitchen = db.kitchen().await;
        let (_, acme) = tenant_with_token(&kitchen, "acme").await;
        let (_, globex) = tenant_with_token(&kitchen, "globex").await;
        kitchen.close().await;

        let binary = fault_injection_binary();
        let a = Arc::new(ServerProcess::start_with_env(
            binary.clone(),
            db.url(),
            env.clone(),
        ));
        let b = (db.backend() == DatabaseKind::Postgres)
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
            restart: Some(Arc::new(RestartProcess(a))),
            provider: None,
        };
        Self { target, _second: b }
    }

    /// Runs the driver, printing each result and the summary.
    pub(crate) async fn drive(&self, options: Options) -> Report {
        let report = double_fire::run(&self.target, options, |result| println!("{result}")).await;
        println!("{}", report.summary());
        report
    }
}

/// Runs the driver against fault-injection servers over `db`.
async fn drive(db: &TestDatabase, options: Options) -> Report {
    Deployment::start(db, Vec::new()).await.drive(options).await
}

pub(crate) fn verdicts(report: &Report, number: u8) -> Vec<Verdict> {
    checks(report, number).map(|c| c.verdict).collect()
}

fn checks(report: &Report, number: u8) -> impl Iterator<Item = &CheckResult> {
    report.checks.iter().filter(move |c| c.number == number)
}

async fn the_full_matrix_passes(db: TestDatabase) {
    let report = drive(&db, Options::default()).await;
    println!("{}", report.summary());
    let last = if db.backend() == DatabaseKind::Postgres {
        9
    } else {
        8
    };
    for number in (1..=last).chain(LIFECYCLE_CHECKS) {
        let v = verdicts(&report, number);
        assert!(
            !v.is_empty() && v.iter().all(|v| *v == Verdict::Pass),
            "check {number}: {v:?}"
        );
    }
    // Each lifecycle check ran for every lifecycle action through both
    // doors (cross-door: both ways).
    for number in LIFECYCLE_CHECKS {
        for action in lifecycle() {
            let ran = checks(&report, number)
                .filter(|c| c.action == action)
                .count();
            assert_eq!(ran, 2, "check {number} for {action}");
        }
    }
    assert!(report.all_passed());
    assert_eq!(report.totals.duplicates, 0);
    assert_eq!(report.totals.lost, 0);
    assert_eq!(report.totals.effects_found, report.totals.intended_effects);
    if db.backend() == DatabaseKind::Sqlite {
        assert_eq!(
            verdicts(&report, 9),
            [Verdict::Skip],
            "one SQLite instance: no check 9"
        );
    }
    // No provider simulator here: checks 10 to 17 are reported as
    // skipped, one line each, saying what they need.
    for number in 10..=17 {
        assert_eq!(verdicts(&report, number), [Verdict::Skip], "check {number}");
    }
    let summary = report.summary();
    assert!(
        summary.lines().any(
            |l| l.starts_with("skipped 10, 11, 12, 13, 14, 15, 16, 17: ")
                && l.contains("--provider-url")
        ),
        "{summary}"
    );
    assert_window_check_skipped_visibly(&report);
}

/// Against the default 30-day window check 24 cannot wait: it is skipped
/// through both doors, and the summary says why and how to run it.
fn assert_window_check_skipped_visibly(report: &Report) {
    assert_eq!(
        verdicts(report, AFTER_WINDOW),
        [Verdict::Skip, Verdict::Skip]
    );
    let summary = report.summary();
    let line = summary
        .lines()
        .find(|l| l.starts_with(&format!("skipped {AFTER_WINDOW}: ")))
        .unwrap_or_else(|| panic!("the summary names the skipped check 24: {summary}"));
    assert!(
        line.contains("server's replay window is") && line.contains(WINDOW_TOO_LONG),
        "{line}"
    );
}

async fn without_stable_keys_the_faults_make_duplicates(db: TestDatabase) {
    let sabotage = Options {
        fresh_key_retries: true,
        ..Options::default()
    };
    let report = drive(&db, sabotage).await;
    println!("{}", report.summary());
    // The lost response and the crash really happened after the commit: a
    // retry without the original key duplicates, and the checks say so.
    for number in [5, 8] {
        let failed: Vec<_> = checks(&report, number).collect();
        assert!(
            failed
                .iter()
                .all(|c| c.verdict == Verdict::Fail && c.effects.len() == 2),
            "check {number} catches the duplicate: {failed:?}"
        );
    }
    // So for the lifecycle actions: a comment repeats (two comments), while
    // an edit with If-Match and a transition are stopped by the ticket's
    // state (412, 409) and the same label again changes nothing: one
    // effect, but not the answer the first attempt got, so the checks fail
    // all the same.
    for number in [21, 23] {
        for action in lifecycle() {
            let effects = match action {
                Action::AddComment => 2,
                // The same label again changes nothing.
                Action::CreateTicket
                | Action::UpdateTicket
                | Action::TransitionTicket
                | Action::AddLabel
                | Action::RemoveLabel => 1,
            };
            let failed: Vec<_> = checks(&report, number)
                .filter(|c| c.action == action)
                .collect();
            assert!(
                failed.len() == 2
                    && failed
                        .iter()
                        .all(|c| c.verdict == Verdict::Fail && c.effects.len() == effects),
                "check {number} for {action} fails with {effects} effect(s): {failed:?}"
            );
        }
    }
    if db.backend() == DatabaseKind::Postgres {
        assert_eq!(
            verdicts(&report, 9),
            [Verdict::Fail],
            "check 9 catches the duplicate"
        );
    }
    // Checks 5, 8, 21 and 23 for add_comment, through both doors.
    assert!(report.totals.duplicates >= 8, "{:?}", report.totals);
    // Checks that do not retry across a fault still pass.
    for number in [2, 18] {
        assert!(
            verdicts(&report, number)
                .iter()
                .all(|v| *v == Verdict::Pass)
        );
    }
    assert_window_check_skipped_visibly(&report);
}

/// Runs check 24 alone against a server whose keys replay for one second.
///
/// The check waits out the window in real time: the one place the suite
/// waits on the clock, because it drives a live server end to end (the
/// kitchen's own lifecycle tests use a manual clock). Horizons are whole
/// seconds, so with a one-second window the wait is 1 to 2 s, for both
/// doors at once.
async fn drive_after_the_window(db: &TestDatabase, fresh_key_retries: bool) -> Report {
    let config = KitchenConfig {
        replay_window: kitchen::RetentionPeriod::SECOND,
        ..KitchenConfig::default()
    };
    let app = TestApp::spawn_with(db, config, Duration::from_secs(30)).await;
    let acme = app.tenant("acme").await;
    let target = Target {
        base_url: app.address.clone(),
        token: acme.token,
        other_token: None,
        second_base_url: None,
        restart: None,
        provider: None,
    };
    let options = Options {
        fresh_key_retries,
        only: Some(AFTER_WINDOW),
        ..Options::default()
    };
    let report = double_fire::run(&target, options, |result| println!("{result}")).await;
    println!("{}", report.summary());
    app.stop().await;
    report
}

async fn a_retry_after_the_replay_window_is_expired_and_makes_nothing(db: TestDatabase) {
    let report = drive_after_the_window(&db, false).await;
    assert_eq!(
        verdicts(&report, AFTER_WINDOW),
        [Verdict::Pass, Verdict::Pass],
        "{:#?}",
        report.checks
    );
    assert_eq!(report.checks.len(), 2, "--only runs check 24 alone");
    for check in &report.checks {
        assert_eq!(check.effects.len(), 1, "{check}");
        assert!(check.detail.contains("retry after it: expired"), "{check}");
    }
    assert_eq!(report.totals.duplicates, 0);
}

async fn a_fresh_key_after_the_replay_window_duplicates_and_check_24_fails(db: TestDatabase) {
    let report = drive_after_the_window(&db, true).await;
    assert_eq!(
        verdicts(&report, AFTER_WINDOW),
        [Verdict::Fail, Verdict::Fail],
        "{:#?}",
        report.checks
    );
    for check in &report.checks {
        assert_eq!(check.effects.len(), 2, "a second ticket: {check}");
        assert!(check.detail.contains("retry after it: created"), "{check}");
    }
    assert_eq!(report.totals.duplicates, 2);
}

/// The crash hooks are compiled into every build but armed only in
/// `tickets-fault-injection`: the deployed `tickets` treats a crash key as
/// any other key (it creates, replays, and keeps running).
async fn the_deployed_server_never_fires_the_crash_hooks(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let (_, acme) = tenant_with_token(&kitchen, "acme").await;
    kitchen.close().await;
    let server = ServerProcess::start(tickets_binary(), db.url());
    assert!(
        double_fire::Caller::default()
            .wait_ready(&server.base_url(), 100)
            .await,
        "the server is ready"
    );
    let key = format!(
        "{}{}",
        double_fire::CRASH_AFTER_COMMIT,
        uuid::Uuid::now_v7()
    );
    let http = reqwest::Client::new();
    let mut replayed = Vec::new();
    for _ in 0..2 {
        let answer = http
            .post(format!("{}/v1/tickets", server.base_url()))
            .bearer_auth(&acme.secret)
            .header("Idempotency-Key", &key)
            .json(&serde_json::json!({"project_id": "ops", "title": "Not a crash"}))
            .send()
            .await
            .expect("the server answers: it did not abort");
        assert_eq!(answer.status(), 201);
        replayed.push(answer.headers().contains_key("idempotent-replayed"));
    }
    assert_eq!(replayed, [false, true]);
    assert!(
        server.wait_exit(Duration::ZERO).await.is_none(),
        "still running"
    );
}

kitchen::on_both_databases!(
    the_deployed_server_never_fires_the_crash_hooks,
    the_full_matrix_passes,
    without_stable_keys_the_faults_make_duplicates,
    a_retry_after_the_replay_window_is_expired_and_makes_nothing,
    a_fresh_key_after_the_replay_window_duplicates_and_check_24_fails
);
