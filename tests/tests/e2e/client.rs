//! `tickets-client` against the real server: its retry policy through lost
//! answers (the double-fire driver's fault proxy, behind a relay that
//! stands where a load balancer would), a client killed mid-call and
//! resumed from its journal, a server that dies after its commit and
//! restarts, a switch of instance, refusals and keys held by another
//! attempt, the remote backend's unknown outcome, and the `tickets client`
//! command line. Judged by the server's state (tickets counted through the
//! list API, the tenant's outcome counts), never by the answers alone.

mod relay;

use std::net::SocketAddr;
use std::process::Output;
use std::sync::Arc;
use std::time::{Duration, Instant};

use e2e_tests::process::tickets_binary;
use e2e_tests::{TestApp, TestTenant, snapshot_settings};
use kitchen::KitchenConfig;
use kitchen::testing::TestDatabase;
use provider_sim::{Fault, FaultRule};
use telemetry::DoorStats;
use tickets_client::{
    Action, Client, ClientConfig, Intent, Journal, LastSeen, MemoryJournal, NewTicket,
    OperationKey, OperationState, PageRequest, PatchField, Read, Settled, SqliteJournal,
    TicketPatch, TicketStatus, WriteRequest,
};

use self::relay::Relay;
use crate::fresh_key;

/// Where a test app listens.
fn addr(app: &TestApp) -> SocketAddr {
    app.address
        .trim_start_matches("http://")
        .parse()
        .expect("the app's address")
}

/// Settings for tests: short waits, a bound that a test does not reach
/// unless it means to.
fn config(journal: Arc<dyn Journal>) -> ClientConfig {
    ClientConfig {
        call_timeout: Duration::from_secs(5),
        journal,
        max_transient_retries: 3,
        max_wait: Duration::from_millis(500),
        retry_delay: Duration::from_millis(20),
        reconcile_within: Duration::from_secs(10),
    }
}

fn memory() -> Arc<dyn Journal> {
    Arc::new(MemoryJournal::new())
}

fn client(base_url: &str, tenant: &TestTenant, config: ClientConfig) -> Client {
    Client::new(base_url, &tenant.token, config).expect("a client")
}

fn disk_full() -> NewTicket {
    NewTicket::new("ops", "Disk full on db-1")
}

/// The tenant's REST outcome counts for `action` on `app`.
fn rest_stats(app: &TestApp, tenant: &TestTenant, action: &str) -> DoorStats {
    app.metrics
        .stats()
        .of(tenant.id)
        .into_iter()
        .find(|s| s.door == "rest" && s.action == action)
        .unwrap_or_default()
}

/// Asserts that `settled` is `Done` and returns its value, key and
/// whether it was replayed.
fn done<T: std::fmt::Debug>(settled: Settled<T>) -> (T, OperationKey, bool) {
    match settled {
        Settled::Done {
            value,
            key,
            replayed,
        } => (value, key, replayed),
        other => panic!("expected done, got {other:?}"),
    }
}

/// The answer of a write is lost after the server committed it: the client
/// looks the key up, finds it, and fetches the first answer with the same
/// key (a replay). One ticket, and it is the one returned.
async fn a_lost_answer_is_reconciled_into_the_original(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let relay = Relay::to(addr(&app)).await;
    relay.lose_next(1, addr(&app)).await;
    let client = client(&relay.base_url(), &acme, config(memory()));

    let (ticket, key, replayed) = done(
        client
            .create_ticket(&disk_full())
            .await
            .expect("no client error"),
    );
    assert!(
        replayed,
        "the first attempt made it; this is its answer again"
    );
    assert_eq!(app.ticket_count(&acme).await, 1);
    let page = client
        .list_tickets(Some("ops"), &PageRequest::default())
        .await
        .expect("no client error")
        .found()
        .expect("a page");
    assert_eq!(
        page.tickets,
        std::slice::from_ref(&ticket),
        "the ticket returned is the one that exists"
    );
    let stats = rest_stats(&app, &acme, "create_ticket");
    assert_eq!((stats.created, stats.replayed), (1, 1), "{stats:?}");
    let status = client
        .operation_status(Action::CreateTicket, &key)
        .await
        .expect("no client error")
        .found()
        .expect("recorded");
    assert_eq!(status.ticket_id, Some(ticket.id));
}

/// A client killed while its create's answer is lost (after the server
/// committed it); a new client on the same journal file resumes it with
/// the same key: one ticket. Then an intent journaled but never sent (a
/// crash between `begin` and the first send): resumed, made once.
async fn a_client_killed_mid_call_is_finished_by_the_next_with_the_same_key(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("journal.db");
    let relay = Relay::to(addr(&app)).await;
    relay.lose_next(usize::MAX, addr(&app)).await; // it never hears back
    let journal = Arc::new(SqliteJournal::open(&path).await.expect("a journal"));
    let first = client(&relay.base_url(), &acme, config(journal));
    let call = tokio::spawn(async move { first.create_ticket(&disk_full()).await });

    // The key was journaled before the first send; wait for its commit.
    let reader = SqliteJournal::open(&path).await.expect("the journal");
    let key = wait_for_pending_key(&reader).await;
    assert!(app.operation_committed(&acme, key.as_str()).await);
    call.abort();
    assert!(
        call.await.is_err_and(|e| e.is_cancelled()),
        "killed mid-call"
    );

    let journal = Arc::new(SqliteJournal::open(&path).await.expect("a journal"));
    let second = client(&app.address, &acme, config(journal.clone()));
    let resumed = second.resume().await.expect("no client error");
    assert_eq!(resumed.len(), 1);
    let (entry, settled) = resumed.into_iter().next().expect("one entry");
    assert_eq!(entry.key(), &key);
    let (ticket, done_key, replayed) = done(settled);
    assert_eq!((done_key, replayed), (key, true));
    assert_eq!(ticket["title"], "Disk full on db-1");
    assert_eq!(app.ticket_count(&acme).await, 1);
    assert!(second.pending().await.expect("pending").is_empty());

    let never_sent = Intent::new(WriteRequest::CreateTicket {
        ticket: NewTicket::new("ops", "Written down, then the client died"),
    });
    journal.begin(&never_sent).await.expect("journaled");
    let resumed = second.resume().await.expect("no client error");
    let [(entry, settled)] = resumed.as_slice() else {
        panic!("one entry pending: {resumed:?}");
    };
    assert_eq!(entry.key(), never_sent.key());
    assert!(
        matches!(settled, Settled::Done { replayed: false, key, .. } if key == never_sent.key()),
        "{settled:?}"
    );
    assert_eq!(app.ticket_count(&acme).await, 2);
}

/// Polls `journal` (up to 5 s) until it holds an entry; its key.
async fn wait_for_pending_key(journal: &SqliteJournal) -> OperationKey {
    for _ in 0..500 {
        if let Some(entry) = journal.pending().await.expect("pending").first() {
            return entry.key().clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("nothing was journaled");
}

/// The server commits, dies before answering, and comes back (a new
/// instance on the same database, at the same address): the client's
/// lookups are refused while it is down, then find the ticket.
async fn a_server_that_dies_after_its_commit_and_restarts_is_reconciled(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let relay = Relay::to(addr(&app)).await;
    relay.crash_after_next(addr(&app)).await;
    let client = client(&relay.base_url(), &acme, config(memory()));
    let call = tokio::spawn(async move { client.create_ticket(&disk_full()).await });

    relay.wait_down().await;
    app.stop().await;
    let restarted = TestApp::spawn(&db).await;
    relay.come_up(addr(&restarted)).await;

    let settled = call.await.expect("the call ran").expect("no client error");
    let (_, _, replayed) = done(settled);
    assert!(replayed);
    assert_eq!(restarted.ticket_count(&acme).await, 1);
    let stats = rest_stats(&restarted, &acme, "create_ticket");
    assert_eq!(
        (stats.created, stats.replayed),
        (0, 1),
        "the restarted server only replayed: {stats:?}"
    );
}

/// Two instances on one PostgreSQL database: the first attempt lands on A
/// and its answer is lost; everything after goes to B, which finds and
/// replays it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_call_lost_on_one_instance_is_finished_on_another() {
    let db = TestDatabase::postgres().await;
    let a = TestApp::spawn(&db).await;
    let b = TestApp::spawn(&db).await;
    let acme = a.tenant("acme").await;
    let relay = Relay::to(addr(&b)).await;
    relay.lose_next(1, addr(&a)).await;
    let client = client(&relay.base_url(), &acme, config(memory()));

    let (ticket, _, replayed) = done(client.create_ticket(&disk_full()).await.expect("no error"));
    assert!(replayed);
    assert_eq!(a.ticket_count(&acme).await, 1);
    assert_eq!(b.ticket_count(&acme).await, 1);
    let (on_a, on_b) = (
        rest_stats(&a, &acme, "create_ticket"),
        rest_stats(&b, &acme, "create_ticket"),
    );
    assert_eq!((on_a.created, on_b.created, on_b.replayed), (1, 0, 1));
    let found = client
        .get_ticket(ticket.id)
        .await
        .expect("no error")
        .found()
        .expect("the ticket");
    assert_eq!(found, ticket);
}

/// Refusals are returned after one request and never retried: invalid
/// input (400), the key used for another request (422), a stale If-Match
/// (412). The same key for another request in the client's own journal is
/// the caller's mistake, and nothing is sent.
async fn refusals_are_returned_after_one_request(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = client(&app.address, &acme, config(memory()));

    let Settled::Refused { problem, .. } = client
        .create_ticket(&NewTicket::new("ops", "  "))
        .await
        .expect("no client error")
    else {
        panic!("a blank title is refused");
    };
    assert_eq!(
        (problem.status, problem.kind()),
        (400, Some("validation-failed"))
    );
    assert!(problem.extensions.contains_key("errors"), "{problem:?}");

    let key = OperationKey::parse(fresh_key()).expect("a key");
    let (ticket, _, _) = done(
        client
            .create_ticket_with_key(key.clone(), &disk_full())
            .await
            .expect("no client error"),
    );
    let another = NewTicket::new("ops", "Another ticket");
    let mistake = client
        .create_ticket_with_key(key.clone(), &another)
        .await
        .expect_err("the journal holds the key for another request");
    assert!(mistake.is_caller_fault(), "{mistake}");
    // A client that did not journal it sends it, and the server refuses.
    let elsewhere = Client::new(&app.address, &acme.token, config(memory())).expect("a client");
    let Settled::Refused { problem, .. } = elsewhere
        .create_ticket_with_key(key, &another)
        .await
        .expect("no client error")
    else {
        panic!("the key is taken");
    };
    assert_eq!(
        (problem.status, problem.kind()),
        (422, Some("idempotency-key-reused"))
    );

    let Settled::Refused { problem, .. } = client
        .update_ticket(ticket.id, &TicketPatch::default(), Some(7))
        .await
        .expect("no client error")
    else {
        panic!("a stale If-Match is refused");
    };
    assert_eq!(
        (problem.status, problem.kind()),
        (412, Some("version-mismatch"))
    );

    let created = rest_stats(&app, &acme, "create_ticket");
    assert_eq!(
        (created.invalid, created.created, created.conflict),
        (1, 1, 1),
        "one request each reached the server: {created:?}"
    );
    assert_eq!(rest_stats(&app, &acme, "update_ticket").refused, 1);
    assert_eq!(app.ticket_count(&acme).await, 1);
}

/// A server whose likely-duplicate guard is in `confirm` mode refuses a
/// second ticket with the same content under a new key: the client
/// returns that refusal after one request, and a ticket that says
/// `confirm_new` is made.
async fn a_likely_duplicate_is_refused_once_and_confirm_new_makes_it(db: TestDatabase) {
    let guard = KitchenConfig {
        duplicate_guard: kitchen::DuplicateGuard {
            mode: kitchen::GuardMode::Confirm,
            ..kitchen::DuplicateGuard::default()
        },
        ..KitchenConfig::default()
    };
    let app = TestApp::spawn_with(&db, guard, Duration::from_secs(30)).await;
    let acme = app.tenant("acme").await;
    let client = client(&app.address, &acme, config(memory()));
    let (first, _, _) = done(client.create_ticket(&disk_full()).await.expect("first"));
    let Settled::Refused { problem, .. } = client
        .create_ticket(&disk_full())
        .await
        .expect("no client error")
    else {
        panic!("a second one with the same content is refused");
    };
    assert_eq!(
        (problem.status, problem.kind()),
        (409, Some("possible-duplicate"))
    );
    let (second, _, _) = done(
        client
            .create_ticket(&NewTicket {
                confirm_new: true,
                ..disk_full()
            })
            .await
            .expect("meant"),
    );
    assert_ne!(second.id, first.id);
    let created = rest_stats(&app, &acme, "create_ticket");
    assert_eq!(
        (created.created, created.possible_duplicate),
        (2, 1),
        "one request each: {created:?}"
    );
    assert_eq!(app.ticket_count(&acme).await, 2);
}

/// Another attempt holds the key: the server answers 409 in progress with
/// Retry-After: 1 (on SQLite, where the holder holds the file's write lock
/// as another program would, 503 database-unavailable with Retry-After:
/// 1), and the client sends the same request again after that second, once
/// the key is free.
async fn an_operation_in_progress_is_retried_after_retry_after(db: TestDatabase) {
    let config_with_bound = KitchenConfig {
        wait_bound: Duration::from_millis(200),
        ..KitchenConfig::default()
    };
    let app = TestApp::spawn_with(&db, config_with_bound, Duration::from_secs(30)).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    let holder = app.hold_key(&acme, &key).await;
    let client = client(
        &app.address,
        &acme,
        ClientConfig {
            max_wait: Duration::from_secs(2),
            ..config(memory())
        },
    );
    let started = Instant::now();
    let call = {
        let key = OperationKey::parse(key.clone()).expect("a key");
        tokio::spawn(async move { client.create_ticket_with_key(key, &disk_full()).await })
    };
    for _ in 0..250 {
        let told = rest_stats(&app, &acme, "create_ticket");
        if told.in_progress + told.error > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    holder.roll_back().await;

    let (_, done_key, replayed) = done(call.await.expect("ran").expect("no client error"));
    assert_eq!((done_key.as_str(), replayed), (key.as_str(), false));
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was honoured ({:?})",
        started.elapsed()
    );
    let stats = rest_stats(&app, &acme, "create_ticket");
    assert!(stats.in_progress + stats.error >= 1, "{stats:?}");
    assert_eq!(stats.created, 1);
    assert_eq!(app.ticket_count(&acme).await, 1);
}

/// The remote backend loses the provider's answer: `202` unknown. While
/// the provider cannot be searched the status stays unknown, and the call
/// ends `Unresolved` within its bound, the intent still pending; once the
/// provider answers, `resume` finds the ticket: one at the provider.
async fn a_remote_unknown_is_unresolved_until_it_settles(db: TestDatabase) {
    let (app, sim) = crate::rest_remote::spawn_remote_with(&db, Duration::ZERO).await;
    let acme = app.tenant("acme").await;
    let faults = sim.client();
    faults
        .add_fault(&FaultRule::create(Fault::CommitThenDrop))
        .await
        .expect("a fault");
    faults
        .add_fault(&FaultRule::search(Fault::FailBeforeCommit).times(1000))
        .await
        .expect("a fault");
    let client = client(
        &app.address,
        &acme,
        ClientConfig {
            max_wait: Duration::from_millis(100),
            reconcile_within: Duration::from_millis(600),
            ..config(memory())
        },
    );

    let settled = client.create_ticket(&disk_full()).await.expect("no error");
    let Settled::Unresolved { key, last_seen } = settled else {
        panic!("unknown while the provider cannot be searched: {settled:?}");
    };
    assert!(
        matches!(
            last_seen,
            LastSeen::Unsettled {
                state: OperationState::Unknown,
                ..
            }
        ),
        "{last_seen:?}"
    );
    let pending = client.pending().await.expect("pending");
    assert_eq!(pending.len(), 1, "an unresolved intent stays pending");
    assert_eq!(pending[0].key(), &key);

    faults.clear_faults().await.expect("no faults");
    let resumed = client.resume().await.expect("no error");
    let [(_, settled)] = resumed.as_slice() else {
        panic!("one entry: {resumed:?}");
    };
    assert!(
        matches!(settled, Settled::Done { key: k, .. } if *k == key),
        "{settled:?}"
    );
    assert_eq!(
        sim.client().counts().await.expect("counts").total_tickets,
        1
    );
    assert_eq!(app.ticket_count(&acme).await, 1);
}

/// Every write and read through the client, with the answers of an
/// update (conditional: its replay must not turn into a 412) and of a
/// comment lost on the way back.
async fn every_route_goes_through_the_client(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let relay = Relay::to(addr(&app)).await;
    // The relay loses answers per connection: a call whose answer is to be
    // lost gets a client of its own, whose first connection it is.
    let fresh = || client(&relay.base_url(), &acme, config(memory()));
    let client = fresh();
    let (ticket, _, _) = done(client.create_ticket(&disk_full()).await.expect("no error"));

    relay.lose_next(1, addr(&app)).await;
    let patch = TicketPatch {
        assignee: PatchField::Set("Ada".into()),
        ..TicketPatch::default()
    };
    let (updated, _, replayed) = done(
        fresh()
            .update_ticket(ticket.id, &patch, Some(1))
            .await
            .expect("no error"),
    );
    assert!(replayed);
    assert_eq!(
        (updated.version, updated.assignee.as_deref()),
        (2, Some("Ada"))
    );

    let (moved, _, _) = done(
        client
            .transition_ticket(ticket.id, TicketStatus::InProgress, Some("on it"))
            .await
            .expect("no error"),
    );
    assert_eq!(moved.status, TicketStatus::InProgress);

    relay.lose_next(1, addr(&app)).await;
    let (comment, _, replayed) = done(
        fresh()
            .add_comment(ticket.id, "seen")
            .await
            .expect("no error"),
    );
    assert!(replayed);

    let Settled::Refused { problem, .. } = client
        .transition_ticket(ticket.id, TicketStatus::InProgress, None)
        .await
        .expect("no error")
    else {
        panic!("staying put is not a move");
    };
    assert_eq!(problem.kind(), Some("transition-not-allowed"));

    let now = client
        .get_ticket(ticket.id)
        .await
        .expect("no error")
        .found()
        .expect("found");
    assert_eq!((now.version, now.status), (3, TicketStatus::InProgress));
    let comments = client
        .list_comments(ticket.id, &PageRequest::default())
        .await
        .expect("no error")
        .found()
        .expect("a page");
    assert_eq!(comments.comments, [comment]);
    let history = client
        .ticket_history(ticket.id, &PageRequest::default())
        .await
        .expect("no error")
        .found()
        .expect("a page");
    let actions: Vec<&str> = history.entries.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "create_ticket",
            "update_ticket",
            "transition_ticket",
            "add_comment"
        ],
        "one entry per write, none per replay"
    );
    let missing = client
        .get_ticket(
            "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79"
                .parse()
                .expect("an id"),
        )
        .await
        .expect("no error");
    assert!(matches!(missing, Read::NotFound(_)), "{missing:?}");
}

/// Runs `tickets` with `args`.
async fn tickets(args: &[&str]) -> Output {
    tokio::process::Command::new(tickets_binary())
        .args(args)
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .output()
        .await
        .expect("run tickets")
}

/// The one JSON line `output` printed.
fn line(output: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {stdout}");
    serde_json::from_str(lines[0]).expect("a JSON line")
}

/// `tickets client create` prints one JSON object and exits with the
/// outcome: 0 done, 2 refused, 3 unresolved; `status` finds the key.
async fn the_cli_prints_the_outcome_and_exits_with_its_code(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let base = [
        "client",
        "create",
        "--url",
        app.address.as_str(),
        "--token",
        acme.token.as_str(),
    ];

    let created = tickets(
        &[
            &base[..],
            &["--project", "ops", "--title", "Disk full on db-1"],
        ]
        .concat(),
    )
    .await;
    assert_eq!(created.status.code(), Some(0), "{created:?}");
    let printed = line(&created);
    assert_eq!(printed["outcome"], "done");
    assert_eq!(printed["replayed"], false);
    assert_eq!(printed["ticket"]["title"], "Disk full on db-1");
    snapshot_settings().bind(|| insta::assert_json_snapshot!("client_cli_done", printed));

    let refused = tickets(&[&base[..], &["--project", "ops", "--title", " "]].concat()).await;
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let refused = line(&refused);
    assert_eq!(refused["outcome"], "refused");
    assert_eq!(refused["problem"]["type"], "/problems/validation-failed");
    snapshot_settings().bind(|| insta::assert_json_snapshot!("client_cli_refused", refused));

    // Nothing listens on the port: refused before anything was sent, and
    // with no retries left the intent is unresolved (exit 3).
    let nowhere = format!("http://127.0.0.1:{}", e2e_tests::process::free_port());
    let unresolved = tickets(&[
        "client",
        "create",
        "--url",
        nowhere.as_str(),
        "--token",
        acme.token.as_str(),
        "--max-transient-retries",
        "0",
        "--project",
        "ops",
        "--title",
        "Disk full on db-1",
    ])
    .await;
    assert_eq!(unresolved.status.code(), Some(3), "{unresolved:?}");
    let mut unresolved = line(&unresolved);
    assert_eq!(unresolved["last_seen"]["kind"], "no_answer");
    assert_eq!(unresolved["last_seen"]["may_have_been_sent"], false);
    unresolved["last_seen"]["error"] = "[the transport's words]".into();
    snapshot_settings().bind(|| insta::assert_json_snapshot!("client_cli_unresolved", unresolved));

    let key = printed["key"].as_str().expect("a key");
    let status = tickets(&[
        "client",
        "status",
        "--url",
        app.address.as_str(),
        "--token",
        acme.token.as_str(),
        "--key",
        key,
    ])
    .await;
    assert_eq!(status.status.code(), Some(0), "{status:?}");
    let status = line(&status);
    assert_eq!(status["outcome"], "recorded");
    assert_eq!(status["status"]["state"], "succeeded");
    assert_eq!(status["status"]["ticket_id"], printed["ticket"]["id"]);
    assert_eq!(app.ticket_count(&acme).await, 1);
}

/// `tickets client create --journal` killed (SIGKILL) while its answer is
/// lost; the same command rerun with `--resume` finishes that intent with
/// its key instead of making a second ticket.
async fn the_cli_rerun_with_resume_finishes_what_a_killed_run_left(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("journal.db");
    let journal = path.to_str().expect("utf-8");
    let relay = Relay::to(addr(&app)).await;
    relay.lose_next(usize::MAX, addr(&app)).await;
    let command = |url: &str| {
        [
            "client",
            "create",
            "--url",
            url,
            "--token",
            acme.token.as_str(),
            "--journal",
            journal,
            "--project",
            "ops",
            "--title",
            "Disk full on db-1",
        ]
        .map(str::to_owned)
    };

    let mut killed = tokio::process::Command::new(tickets_binary())
        .args(command(&relay.base_url()))
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .spawn()
        .expect("start tickets");
    let reader = SqliteJournal::open(&path).await.expect("the journal");
    let key = wait_for_pending_key(&reader).await;
    assert!(app.operation_committed(&acme, key.as_str()).await);
    killed.kill().await.expect("SIGKILL");

    let rerun = tickets(
        &[&command(&app.address)[..], &["--resume".to_owned()]]
            .concat()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )
    .await;
    assert_eq!(rerun.status.code(), Some(0), "{rerun:?}");
    let printed = line(&rerun);
    assert_eq!(printed["outcome"], "done");
    assert_eq!(printed["key"], key.as_str(), "the killed run's key");
    assert_eq!(printed["replayed"], true);
    assert!(printed["journal_entry"].is_string(), "{printed}");
    assert_eq!(app.ticket_count(&acme).await, 1);

    let nothing_left = tickets(&[
        "client",
        "resume",
        "--url",
        app.address.as_str(),
        "--token",
        acme.token.as_str(),
        "--journal",
        journal,
    ])
    .await;
    assert_eq!(nothing_left.status.code(), Some(0), "{nothing_left:?}");
    assert!(nothing_left.stdout.is_empty(), "nothing pending");
}

/// A command run twice with --resume and the same journal, after the first
/// run succeeded, is the same intent: the rerun finds the settled entry,
/// sends it again under its key and gets the first answer back, making
/// nothing new. (It used to find nothing pending and mint a new key: a
/// second ticket.) Without --resume the rerun is a new intent.
async fn the_same_command_rerun_with_resume_after_success_makes_nothing_new(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let journal = dir.path().join("journal.db");
    let journal = journal.to_str().expect("utf-8");
    let command = [
        "client",
        "create",
        "--url",
        app.address.as_str(),
        "--token",
        acme.token.as_str(),
        "--journal",
        journal,
        "--project",
        "ops",
        "--title",
        "Disk full on db-1",
        "--resume",
    ];
    let first = tickets(&command).await;
    assert_eq!(first.status.code(), Some(0), "{first:?}");
    let first = line(&first);
    assert_eq!(first["outcome"], "done");
    assert_eq!(first["replayed"], false);
    let again = tickets(&command).await;
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    let again = line(&again);
    assert_eq!(again["key"], first["key"], "the same intent, the same key");
    assert_eq!(again["replayed"], true);
    assert_eq!(again["ticket"]["id"], first["ticket"]["id"]);
    assert_eq!(app.ticket_count(&acme).await, 1, "nothing new");

    let new_intent = tickets(&command[..command.len() - 1]).await;
    assert_eq!(new_intent.status.code(), Some(0), "{new_intent:?}");
    assert_ne!(line(&new_intent)["key"], first["key"]);
    assert_eq!(
        app.ticket_count(&acme).await,
        2,
        "without --resume, a new intent"
    );
}

kitchen::on_both_databases!(
    a_lost_answer_is_reconciled_into_the_original,
    a_client_killed_mid_call_is_finished_by_the_next_with_the_same_key,
    a_server_that_dies_after_its_commit_and_restarts_is_reconciled,
    refusals_are_returned_after_one_request,
    a_likely_duplicate_is_refused_once_and_confirm_new_makes_it,
    an_operation_in_progress_is_retried_after_retry_after,
    a_remote_unknown_is_unresolved_until_it_settles,
    every_route_goes_through_the_client,
    the_cli_prints_the_outcome_and_exits_with_its_code,
    the_cli_rerun_with_resume_finishes_what_a_killed_run_left,
    the_same_command_rerun_with_resume_after_success_makes_nothing_new,
);
