//! The provider simulator over real HTTP: the tracker API (tickets, their
//! updates, transitions and comments, and the searches for each), key
//! handling in both modes, every fault kind, copies, and the outage.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use provider_sim::{
    self, ChangeKind, Fault, FaultOn, FaultRule, FieldChange, KeyPolicy, RunningSim, SimChange,
    SimClient, SimComment, SimConfig, SimObject, SimTicket,
};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const DAY: Duration = Duration::from_secs(24 * 60 * 60);

async fn start(keys: KeyPolicy, dedup_window: Duration) -> RunningSim {
    let listen: SocketAddr = "127.0.0.1:0".parse().expect("a socket address");
    provider_sim::spawn(listen, SimConfig { keys, dedup_window })
        .await
        .expect("the simulator starts")
}

fn body(external_ref: &str, title: &str) -> Value {
    json!({
        "external_ref": external_ref,
        "project_id": "ops",
        "title": title,
        "description": null,
        "priority": "high",
    })
}

async fn create(
    http: &reqwest::Client,
    sim: &RunningSim,
    body: &Value,
    key: Option<&str>,
) -> reqwest::Result<reqwest::Response> {
    let mut request = http
        .post(format!("{}/api/tickets", sim.base_url()))
        .json(body);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    request.send().await
}

async fn created(
    http: &reqwest::Client,
    sim: &RunningSim,
    body: &Value,
    key: Option<&str>,
) -> (StatusCode, SimTicket) {
    let response = create(http, sim, body, key).await.expect("an answer");
    let status = response.status();
    (status, response.json().await.expect("a ticket"))
}

async fn tickets_for(sim: &RunningSim, external_ref: &str) -> u64 {
    sim.client()
        .counts()
        .await
        .expect("counts")
        .tickets_for(external_ref)
}

async fn error_of(response: reqwest::Response) -> String {
    let body: Value = response.json().await.expect("a JSON error");
    body["error"].as_str().expect("an error message").to_owned()
}

#[tokio::test]
async fn creates_and_finds_tickets_by_external_ref() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let http = reqwest::Client::new();
    let (status, first) = created(&http, &sim, &body("ref-1", "Disk full"), None).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(first.id, "SIM-1");
    assert_eq!(first.external_ref, "ref-1");
    assert_eq!(first.title, "Disk full");
    assert_eq!(first.priority, "high");
    assert_eq!(first.description, None);
    assert_eq!(first.status, "open");
    assert_eq!(first.version, 1);
    assert_eq!(first.assignee, None);
    assert_eq!(first.updated_at, None);
    let (_, other) = created(&http, &sim, &body("ref-2", "Other"), None).await;
    assert_eq!(other.id, "SIM-2");

    let client = sim.client();
    assert_eq!(
        client.tickets("ref-1").await.expect("search"),
        vec![first.clone()]
    );
    assert!(client.tickets("nobody").await.expect("search").is_empty());

    let by_id = http
        .get(format!("{}/api/tickets/SIM-1", sim.base_url()))
        .send()
        .await
        .expect("an answer");
    assert_eq!(by_id.status(), StatusCode::OK);
    assert_eq!(by_id.json::<SimTicket>().await.expect("a ticket"), first);
    let missing = http
        .get(format!("{}/api/tickets/SIM-99", sim.base_url()))
        .send()
        .await
        .expect("an answer");
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);

    let counts = client.counts().await.expect("counts");
    assert_eq!(counts.total_tickets, 2);
    assert_eq!(counts.creates_received, 2);
    assert_eq!(counts.searches_received, 2);
    assert_eq!(counts.by_external_ref[0].external_ref, "ref-1");
    assert_eq!(counts.by_external_ref[0].titles, ["Disk full"]);
    assert!(client.healthy().await);
}

#[tokio::test]
async fn refuses_missing_or_empty_fields_naming_them() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let http = reqwest::Client::new();
    for field in ["external_ref", "project_id", "title", "priority"] {
        let mut missing = body("ref", "t");
        missing.as_object_mut().expect("an object").remove(field);
        let mut empty = body("ref", "t");
        empty[field] = json!("");
        for bad in [missing, empty] {
            let response = create(&http, &sim, &bad, None).await.expect("an answer");
            assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
            let message = error_of(response).await;
            assert!(message.contains(field), "{message:?} names {field}");
        }
    }
    let response = http
        .post(format!("{}/api/tickets", sim.base_url()))
        .body("not json")
        .send()
        .await
        .expect("an answer");
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let counts = sim.client().counts().await.expect("counts");
    assert_eq!(counts.total_tickets, 0);
    assert_eq!(counts.creates_received, 9);
}

#[tokio::test]
async fn honour_mode_replays_a_key_and_refuses_it_for_another_request() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let http = reqwest::Client::new();
    let (status, first) = created(&http, &sim, &body("ref", "t"), Some("k1")).await;
    assert_eq!(status, StatusCode::CREATED);

    let replay = create(&http, &sim, &body("ref", "t"), Some("k1"))
        .await
        .expect("an answer");
    assert_eq!(replay.status(), StatusCode::OK);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.json::<SimTicket>().await.expect("a ticket"), first);

    let reused = create(&http, &sim, &body("ref", "changed"), Some("k1"))
        .await
        .expect("an answer");
    assert_eq!(reused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(tickets_for(&sim, "ref").await, 1);
}

#[tokio::test]
async fn honour_mode_serialises_concurrent_creates_with_one_key() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let http = reqwest::Client::new();
    let request = body("ref", "t");
    let calls = (0..16).map(|_| create(&http, &sim, &request, Some("same")));
    let answers = futures::future::join_all(calls).await;
    let mut statuses: Vec<u16> = answers
        .into_iter()
        .map(|a| a.expect("an answer").status().as_u16())
        .collect();
    statuses.sort_unstable();
    assert_eq!(statuses[0], 200);
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1);
    assert_eq!(tickets_for(&sim, "ref").await, 1);
}

#[tokio::test]
async fn honour_mode_forgets_a_key_after_the_window() {
    let sim = start(KeyPolicy::Honour, Duration::from_millis(200)).await;
    let http = reqwest::Client::new();
    let (_, first) = created(&http, &sim, &body("ref", "t"), Some("k")).await;
    tokio::time::sleep(Duration::from_millis(250)).await;
    let (status, second) = created(&http, &sim, &body("ref", "t"), Some("k")).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_ne!(second.id, first.id);
    assert_eq!(tickets_for(&sim, "ref").await, 2);
}

#[tokio::test]
async fn ignore_mode_makes_a_ticket_per_create() {
    let sim = start(KeyPolicy::Ignore, DAY).await;
    let http = reqwest::Client::new();
    for _ in 0..2 {
        let (status, _) = created(&http, &sim, &body("ref", "t"), Some("k")).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    assert_eq!(tickets_for(&sim, "ref").await, 2);
}

#[tokio::test]
async fn commit_then_drop_commits_and_answers_nothing() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    sim.client()
        .add_fault(&FaultRule::create(Fault::CommitThenDrop))
        .await
        .expect("fault added");
    let http = reqwest::Client::new();
    let lost = create(&http, &sim, &body("ref", "t"), Some("k")).await;
    let err = lost.expect_err("the connection closes without an answer");
    assert!(!err.is_timeout() && !err.is_status(), "{err:?}");
    assert_eq!(tickets_for(&sim, "ref").await, 1);
    // The retry with the same key replays what the lost answer would have said.
    let (status, _) = created(&http, &sim, &body("ref", "t"), Some("k")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(tickets_for(&sim, "ref").await, 1);
}

#[tokio::test]
async fn commit_then_drop_sends_not_one_byte() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    sim.client()
        .add_fault(&FaultRule::create(Fault::CommitThenDrop))
        .await
        .expect("fault added");
    let payload = body("raw", "t").to_string();
    let request = format!(
        "POST /api/tickets HTTP/1.1\r\nhost: sim\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{payload}",
        payload.len()
    );
    let mut stream = TcpStream::connect(sim.addr()).await.expect("connected");
    stream
        .write_all(request.as_bytes())
        .await
        .expect("request sent");
    let mut answer = Vec::new();
    // A reset is as good as a clean close here: either way, nothing came.
    let _ = stream.read_to_end(&mut answer).await;
    assert_eq!(String::from_utf8_lossy(&answer), "");
    assert_eq!(tickets_for(&sim, "raw").await, 1);
}

#[tokio::test]
async fn commit_then_500_commits_and_fails() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    sim.client()
        .add_fault(&FaultRule::create(Fault::CommitThen500))
        .await
        .expect("fault added");
    let http = reqwest::Client::new();
    let response = create(&http, &sim, &body("ref", "t"), None)
        .await
        .expect("an answer");
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(tickets_for(&sim, "ref").await, 1);
}

#[tokio::test]
async fn fail_before_commit_and_reject_make_nothing() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    client
        .add_fault(&FaultRule::create(Fault::FailBeforeCommit))
        .await
        .expect("fault added");
    client
        .add_fault(&FaultRule::create(Fault::Reject))
        .await
        .expect("fault added");
    let http = reqwest::Client::new();
    let failed = create(&http, &sim, &body("ref", "t"), Some("k"))
        .await
        .expect("an answer");
    assert_eq!(failed.status(), StatusCode::SERVICE_UNAVAILABLE);
    let rejected = create(&http, &sim, &body("ref", "t"), Some("k"))
        .await
        .expect("an answer");
    assert_eq!(rejected.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(tickets_for(&sim, "ref").await, 0);
    // Nothing was made, so the key is still free.
    let (status, _) = created(&http, &sim, &body("ref", "t"), Some("k")).await;
    assert_eq!(status, StatusCode::CREATED);
}

#[tokio::test]
async fn hang_commits_after_the_client_gave_up() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    sim.client()
        .add_fault(&FaultRule::create(Fault::Hang { ms: 300 }))
        .await
        .expect("fault added");
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(100))
        .build()
        .expect("a client");
    let began = Instant::now();
    let err = create(&impatient, &sim, &body("ref", "t"), None)
        .await
        .expect_err("the client times out");
    assert!(err.is_timeout(), "{err:?}");
    assert_eq!(tickets_for(&sim, "ref").await, 0, "not yet committed");
    tokio::time::sleep(Duration::from_millis(400).saturating_sub(began.elapsed())).await;
    assert_eq!(tickets_for(&sim, "ref").await, 1);
}

#[tokio::test]
async fn latency_delays_then_behaves() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    sim.client()
        .add_fault(&FaultRule::create(Fault::Latency { ms: 150 }))
        .await
        .expect("fault added");
    let http = reqwest::Client::new();
    let began = Instant::now();
    let (status, _) = created(&http, &sim, &body("ref", "t"), None).await;
    assert_eq!(status, StatusCode::CREATED);
    assert!(began.elapsed() >= Duration::from_millis(150));
}

#[tokio::test]
async fn search_faults_hit_searches_only() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    client
        .add_fault(&FaultRule::search(Fault::FailBeforeCommit).external_ref("ref"))
        .await
        .expect("fault added");
    client
        .add_fault(&FaultRule::search(Fault::CommitThenDrop))
        .await
        .expect("fault added");
    let http = reqwest::Client::new();
    let (status, _) = created(&http, &sim, &body("ref", "t"), None).await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "a search rule leaves creates alone"
    );

    let search = || {
        http.get(format!("{}/api/tickets?external_ref=ref", sim.base_url()))
            .send()
    };
    let failed = search().await.expect("an answer");
    assert_eq!(failed.status(), StatusCode::SERVICE_UNAVAILABLE);
    search()
        .await
        .expect_err("the connection closes without an answer");
    assert_eq!(client.tickets("ref").await.expect("search").len(), 1);
    assert_eq!(client.counts().await.expect("counts").searches_received, 3);
}

#[tokio::test]
async fn rules_match_by_title_and_external_ref_for_their_times() {
    let sim = start(KeyPolicy::Ignore, DAY).await;
    let client = sim.client();
    client
        .add_fault(
            &FaultRule::create(Fault::FailBeforeCommit)
                .title_contains("check-3")
                .times(2),
        )
        .await
        .expect("fault added");
    client
        .add_fault(&FaultRule::create(Fault::Reject).external_ref("other"))
        .await
        .expect("fault added");
    let http = reqwest::Client::new();
    let status = |title: &'static str, external_ref: &'static str| {
        let http = http.clone();
        let sim = &sim;
        async move {
            create(&http, sim, &body(external_ref, title), None)
                .await
                .expect("an answer")
                .status()
        }
    };
    assert_eq!(status("check-1", "ref").await, StatusCode::CREATED);
    assert_eq!(
        status("run check-3 a", "ref").await,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(
        status("run check-3 b", "ref").await,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(
        status("run check-3 c", "ref").await,
        StatusCode::CREATED,
        "spent"
    );
    assert_eq!(
        status("check-3 d", "other").await,
        StatusCode::UNPROCESSABLE_ENTITY
    );

    client
        .add_fault(&FaultRule::create(Fault::Reject))
        .await
        .expect("fault added");
    client.clear_faults().await.expect("faults cleared");
    assert_eq!(status("anything", "other").await, StatusCode::CREATED);
    let counts = client.counts().await.expect("counts");
    assert_eq!(counts.tickets_for("ref"), 2);
    assert_eq!(counts.tickets_for("other"), 1);
    assert_eq!(counts.creates_received, 6);
}

#[tokio::test]
async fn refuses_rules_that_cannot_match() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    assert!(
        client
            .add_fault(&FaultRule::create(Fault::Reject).times(0))
            .await
            .is_err()
    );
    assert!(
        client
            .add_fault(&FaultRule::search(Fault::Reject).title_contains("x"))
            .await
            .is_err()
    );
    let typo = reqwest::Client::new()
        .post(format!("{}/_sim/faults", sim.base_url()))
        .json(&json!({"fault": {"kind": "commit_then_500"}, "title_contain": "x"}))
        .send()
        .await
        .expect("an answer");
    assert_eq!(typo.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn an_outage_refuses_connections_then_serves_again() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    assert!(client.healthy().await, "a pooled connection is open");
    let began = Instant::now();
    client
        .outage(Duration::from_millis(300))
        .await
        .expect("outage started");

    let fresh = reqwest::Client::new();
    let err = fresh
        .get(format!("{}/_sim/healthz", sim.base_url()))
        .send()
        .await
        .expect_err("connection refused");
    assert!(err.is_connect(), "{err:?}");
    assert!(
        !client.healthy().await,
        "the pooled connection was closed too"
    );

    tokio::time::sleep(Duration::from_millis(300).saturating_sub(began.elapsed())).await;
    let deadline = Instant::now() + Duration::from_secs(2);
    while !client.healthy().await {
        assert!(
            Instant::now() < deadline,
            "listening again after the outage"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, _) = created(&fresh, &sim, &body("ref", "t"), None).await;
    assert_eq!(status, StatusCode::CREATED);
}

#[tokio::test]
async fn shutdown_closes_the_port() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = SimClient::new(sim.base_url());
    assert!(client.healthy().await);
    sim.shutdown().await;
    assert!(!client.healthy().await);
}

#[tokio::test]
async fn the_binary_prints_its_address_and_serves() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_provider-sim"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--keys",
            "ignore",
            "--dedup-window-ms",
            "500",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("provider-sim starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).map(|_| line)
    })
    .await
    .expect("reader task")
    .expect("a line");
    let rest = line
        .strip_prefix("provider-sim listening on ")
        .expect("the announced prefix");
    let (url, tail) = rest.split_once(' ').expect("url then settings");
    assert_eq!(tail, "(keys: ignore, dedup window: 500 ms)\n");
    let healthy = SimClient::new(url).healthy().await;
    child.kill().expect("killed");
    child.wait().expect("reaped");
    assert!(healthy, "{url} answers");
}

// Updates, transitions and comments.

/// The three kinds of request that act on an existing ticket.
const EFFECTS: [FaultOn; 3] = [FaultOn::Update, FaultOn::Transition, FaultOn::Comment];

/// Makes a ticket titled `title` (its reference is `ticket <title>`).
async fn ticket_titled(client: &SimClient, title: &str) -> SimTicket {
    let response = client
        .create(&body(&format!("ticket {title}"), title), None)
        .await
        .expect("an answer");
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json().await.expect("a ticket")
}

/// A valid request of kind `on` on `ticket_id`: assign it to ana, move it
/// to in_progress, or comment on it.
async fn effect(
    client: &SimClient,
    on: FaultOn,
    ticket_id: &str,
    external_ref: &str,
    key: Option<&str>,
) -> reqwest::Result<reqwest::Response> {
    match on {
        FaultOn::Update => {
            let patch = json!({"external_ref": external_ref, "assignee": "ana"});
            client.update(ticket_id, &patch, key).await
        }
        FaultOn::Transition => {
            let to = json!({"external_ref": external_ref, "to": "in_progress"});
            client.transition(ticket_id, &to, key).await
        }
        FaultOn::Comment => {
            let comment = json!({"external_ref": external_ref, "body": "seen"});
            client.comment(ticket_id, &comment, key).await
        }
        FaultOn::Create | FaultOn::Search => unreachable!("not an effect on a ticket"),
    }
}

/// How many writes of kind `on` carry `external_ref`, by the ground truth.
async fn written(client: &SimClient, on: FaultOn, external_ref: &str) -> u64 {
    let counts = client.counts().await.expect("counts");
    let kind = match on {
        FaultOn::Update => ChangeKind::Update,
        FaultOn::Transition => ChangeKind::Transition,
        _ => return counts.comments_for(external_ref),
    };
    counts
        .changes_by_external_ref
        .iter()
        .filter(|r| r.external_ref == external_ref && r.kind == kind)
        .map(|r| r.count)
        .sum()
}

async fn change_of(response: reqwest::Response, want: StatusCode) -> SimChange {
    assert_eq!(response.status(), want);
    response.json().await.expect("a change record")
}

fn field(from: Value, to: Value) -> FieldChange {
    FieldChange { from, to }
}

#[tokio::test]
async fn updates_record_what_changed_and_bump_the_version_only_then() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    let before = ticket_titled(&client, "Disk full").await;

    let patch = json!({
        "external_ref": "upd-1", "expected_version": 1,
        "title": "Disk full on db-2", "assignee": "ana", "priority": "high",
    });
    let sent = client.update(&before.id, &patch, None).await;
    let first = change_of(sent.expect("an answer"), StatusCode::CREATED).await;
    assert_eq!(first.id, "CHG-1");
    assert_eq!(first.ticket_id, before.id);
    assert_eq!(first.external_ref, "upd-1");
    assert_eq!(first.kind, ChangeKind::Update);
    // priority was already "high": not a change.
    assert_eq!(
        first.changes.into_iter().collect::<Vec<_>>(),
        [
            ("assignee".to_owned(), field(json!(null), json!("ana"))),
            (
                "title".to_owned(),
                field(json!("Disk full"), json!("Disk full on db-2"))
            ),
        ]
    );
    assert_eq!(first.ticket.version, 2);
    assert_eq!(first.ticket.title, "Disk full on db-2");
    assert_eq!(first.ticket.assignee.as_deref(), Some("ana"));
    assert!(first.ticket.updated_at.is_some());
    let live = client.ticket(&before.id).await.expect("a ticket");
    assert_eq!(live.as_ref(), Some(&first.ticket));

    // Nothing to change: still recorded, the ticket does not move.
    let same = json!({"external_ref": "upd-2", "priority": "high", "description": null});
    let sent = client.update(&before.id, &same, None).await;
    let noop = change_of(sent.expect("an answer"), StatusCode::CREATED).await;
    assert_eq!(noop.id, "CHG-2");
    assert!(noop.changes.is_empty(), "{:?}", noop.changes);
    assert_eq!(noop.ticket, first.ticket);

    let clear = json!({"external_ref": "upd-3", "assignee": null, "description": "full"});
    let sent = client.update(&before.id, &clear, None).await;
    let cleared = change_of(sent.expect("an answer"), StatusCode::CREATED).await;
    assert_eq!(
        cleared.changes["assignee"],
        field(json!("ana"), json!(null))
    );
    assert_eq!(
        cleared.changes["description"],
        field(json!(null), json!("full"))
    );
    assert_eq!(cleared.ticket.version, 3);
    assert_eq!(cleared.ticket.assignee, None);

    // A change record keeps the ticket as that change left it.
    let found = client.changes("upd-1").await.expect("search");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].ticket.version, 2);
    let counts = client.counts().await.expect("counts");
    assert_eq!(counts.updates_received, 3);
    assert_eq!(counts.total_changes, 3);
    assert_eq!(counts.total_tickets, 1);
}

#[tokio::test]
async fn transitions_move_the_status_and_record_the_reason() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    let ticket = ticket_titled(&client, "Disk full").await;

    let to = json!({"external_ref": "tr-1", "to": "in_progress", "reason": "picked up"});
    let sent = client.transition(&ticket.id, &to, None).await;
    let moved = change_of(sent.expect("an answer"), StatusCode::CREATED).await;
    assert_eq!(moved.kind, ChangeKind::Transition);
    assert_eq!(
        moved.changes.into_iter().collect::<Vec<_>>(),
        [
            ("reason".to_owned(), field(json!(null), json!("picked up"))),
            (
                "status".to_owned(),
                field(json!("open"), json!("in_progress"))
            ),
        ]
    );
    assert_eq!(moved.ticket.status, "in_progress");
    assert_eq!(moved.ticket.version, 2);
    assert!(moved.ticket.updated_at.is_some());

    let to = json!({"external_ref": "tr-2", "to": "resolved"});
    let sent = client.transition(&ticket.id, &to, None).await;
    let resolved = change_of(sent.expect("an answer"), StatusCode::CREATED).await;
    assert_eq!(resolved.changes.keys().collect::<Vec<_>>(), ["status"]);
    assert_eq!(resolved.ticket.version, 3);

    let again = json!({"external_ref": "tr-3", "to": "resolved"});
    let refused = client.transition(&ticket.id, &again, None).await;
    let refused = refused.expect("an answer");
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        error_of(refused).await,
        format!("ticket {} is already resolved", ticket.id)
    );
    let unknown = json!({"external_ref": "tr-4", "to": "done"});
    let refused = client.transition(&ticket.id, &unknown, None).await;
    let refused = refused.expect("an answer");
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(error_of(refused).await.contains("to must be one of"));

    let live = client.ticket(&ticket.id).await.expect("a ticket");
    assert_eq!(
        live.map(|t| (t.status, t.version)),
        Some(("resolved".to_owned(), 3))
    );
    let counts = client.counts().await.expect("counts");
    assert_eq!(counts.transitions_received, 4);
    assert_eq!(counts.total_changes, 2);
}

#[tokio::test]
async fn comments_are_made_without_moving_the_ticket() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    let ticket = ticket_titled(&client, "Disk full").await;
    let sent = client
        .comment(
            &ticket.id,
            &json!({"external_ref": "c-1", "body": "on it"}),
            None,
        )
        .await
        .expect("an answer");
    assert_eq!(sent.status(), StatusCode::CREATED);
    let comment: SimComment = sent.json().await.expect("a comment");
    assert_eq!(comment.id, "CMT-1");
    assert_eq!(comment.ticket_id, ticket.id);
    assert_eq!(comment.external_ref, "c-1");
    assert_eq!(comment.body, "on it");
    let sent = client
        .comment(
            &ticket.id,
            &json!({"external_ref": "c-2", "body": "done"}),
            None,
        )
        .await
        .expect("an answer");
    let second: SimComment = sent.json().await.expect("a comment");
    assert_eq!(second.id, "CMT-2");

    assert_eq!(
        client.ticket(&ticket.id).await.expect("a ticket"),
        Some(ticket),
        "version and updated_at untouched"
    );
    assert_eq!(client.comments("c-1").await.expect("search"), [comment]);
    let counts = client.counts().await.expect("counts");
    assert_eq!(counts.comments_received, 2);
    assert_eq!(counts.total_comments, 2);
    assert_eq!(counts.total_changes, 0);
}

#[tokio::test]
async fn refusals_on_their_merits_make_nothing_and_spend_no_fault() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    let ticket = ticket_titled(&client, "Disk full").await;
    let id = ticket.id.as_str();
    for on in EFFECTS {
        client
            .add_fault(&FaultRule::on(on, Fault::FailBeforeCommit))
            .await
            .expect("fault added");
    }
    let cases: [(FaultOn, &str, Value, StatusCode, &str); 12] = [
        (
            FaultOn::Update,
            "SIM-9",
            json!({"external_ref": "r", "title": "x"}),
            StatusCode::NOT_FOUND,
            "no ticket SIM-9",
        ),
        (
            FaultOn::Update,
            id,
            json!({"external_ref": "r", "expected_version": 3, "title": "x"}),
            StatusCode::PRECONDITION_FAILED,
            "ticket SIM-1 is at version 1, not 3",
        ),
        (
            FaultOn::Update,
            id,
            json!({"title": "x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "external_ref",
        ),
        (
            FaultOn::Update,
            id,
            json!({"external_ref": "r", "title": ""}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "title",
        ),
        (
            FaultOn::Update,
            id,
            json!({"external_ref": "r", "priority": null}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "priority",
        ),
        (
            FaultOn::Update,
            id,
            json!({"external_ref": "r", "status": "closed"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "transitions",
        ),
        (
            FaultOn::Transition,
            "SIM-9",
            json!({"external_ref": "r", "to": "closed"}),
            StatusCode::NOT_FOUND,
            "no ticket SIM-9",
        ),
        (
            FaultOn::Transition,
            id,
            json!({"external_ref": "r", "to": "open"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "ticket SIM-1 is already open",
        ),
        (
            FaultOn::Transition,
            id,
            json!({"external_ref": "r"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "to is required",
        ),
        (
            FaultOn::Comment,
            "SIM-9",
            json!({"external_ref": "r", "body": "b"}),
            StatusCode::NOT_FOUND,
            "no ticket SIM-9",
        ),
        (
            FaultOn::Comment,
            id,
            json!({"external_ref": "r", "body": ""}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body",
        ),
        (
            FaultOn::Comment,
            id,
            json!({"body": "b"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "external_ref",
        ),
    ];
    for (on, ticket_id, request, want, says) in cases {
        let sent = match on {
            FaultOn::Update => client.update(ticket_id, &request, Some("k")).await,
            FaultOn::Transition => client.transition(ticket_id, &request, Some("k")).await,
            _ => client.comment(ticket_id, &request, Some("k")).await,
        };
        let answer = sent.expect("an answer");
        assert_eq!(answer.status(), want, "{on:?} {request}");
        let message = error_of(answer).await;
        assert!(message.contains(says), "{message:?} says {says:?}");
    }
    let counts = client.counts().await.expect("counts");
    assert_eq!((counts.total_changes, counts.total_comments), (0, 0));
    assert_eq!(
        (
            counts.updates_received,
            counts.transitions_received,
            counts.comments_received
        ),
        (6, 3, 3)
    );
    assert_eq!(
        client.ticket(id).await.expect("a ticket"),
        Some(ticket.clone())
    );
    // Every fault is still there for the first valid request of its kind,
    // and a refused request left its key free.
    for on in EFFECTS {
        let failed = effect(&client, on, id, "valid", Some("k")).await;
        assert_eq!(
            failed.expect("an answer").status(),
            StatusCode::SERVICE_UNAVAILABLE,
            "{on:?}"
        );
    }
    let sent = effect(&client, FaultOn::Comment, id, "valid", Some("k")).await;
    assert_eq!(sent.expect("an answer").status(), StatusCode::CREATED);
}

#[tokio::test]
async fn honour_mode_replays_each_kind_and_refuses_a_key_for_another_request() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    for on in EFFECTS {
        let ticket = ticket_titled(&client, &format!("{on:?}")).await;
        let key = format!("key-{on:?}");
        let first = effect(&client, on, &ticket.id, "ref", Some(&key))
            .await
            .expect("an answer");
        assert_eq!(first.status(), StatusCode::CREATED, "{on:?}");
        let first: Value = first.json().await.expect("JSON");
        let before = client.counts().await.expect("counts");

        // The transition's ticket is already in_progress and the update's
        // assignee is already ana: a replay answers, it does not re-check.
        let replay = effect(&client, on, &ticket.id, "ref", Some(&key))
            .await
            .expect("an answer");
        assert_eq!(replay.status(), StatusCode::OK, "{on:?}");
        assert_eq!(replay.headers()["idempotent-replayed"], "true");
        assert_eq!(replay.json::<Value>().await.expect("JSON"), first);

        let reused = effect(&client, on, &ticket.id, "another ref", Some(&key))
            .await
            .expect("an answer");
        assert_eq!(reused.status(), StatusCode::UNPROCESSABLE_ENTITY, "{on:?}");
        assert_eq!(
            error_of(reused).await,
            "Idempotency-Key was already used with a different request"
        );
        let after = client.counts().await.expect("counts");
        assert_eq!(after.total_changes, before.total_changes, "{on:?}");
        assert_eq!(after.total_comments, before.total_comments, "{on:?}");
        assert_eq!(written(&client, on, "ref").await, 1, "{on:?}");
    }
    // Keys of every endpoint share one space.
    let ticket = ticket_titled(&client, "shared").await;
    let reused = effect(
        &client,
        FaultOn::Comment,
        &ticket.id,
        "ref",
        Some("key-Update"),
    )
    .await
    .expect("an answer");
    assert_eq!(reused.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn honour_mode_replays_an_update_whose_version_has_moved_on() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    let ticket = ticket_titled(&client, "Disk full").await;
    let patch = json!({"external_ref": "r", "expected_version": 1, "title": "Disk full!"});
    let sent = client.update(&ticket.id, &patch, Some("k")).await;
    let first = change_of(sent.expect("an answer"), StatusCode::CREATED).await;
    // The ticket is at version 2 now; the lost answer's retry still gets it.
    let sent = client.update(&ticket.id, &patch, Some("k")).await;
    assert_eq!(
        change_of(sent.expect("an answer"), StatusCode::OK).await,
        first
    );
    let sent = client.update(&ticket.id, &patch, Some("other")).await;
    let stale = sent.expect("an answer");
    assert_eq!(stale.status(), StatusCode::PRECONDITION_FAILED);
    assert_eq!(client.counts().await.expect("counts").total_changes, 1);
}

#[tokio::test]
async fn honour_mode_serialises_concurrent_comments_with_one_key() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    let ticket = ticket_titled(&client, "Disk full").await;
    let calls = (0..8).map(|_| effect(&client, FaultOn::Comment, &ticket.id, "ref", Some("same")));
    let mut statuses: Vec<u16> = futures::future::join_all(calls)
        .await
        .into_iter()
        .map(|a| a.expect("an answer").status().as_u16())
        .collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 200, 200, 201]);
    assert_eq!(written(&client, FaultOn::Comment, "ref").await, 1);
}

#[tokio::test]
async fn ignore_mode_acts_on_every_update_and_comment() {
    let sim = start(KeyPolicy::Ignore, DAY).await;
    let client = sim.client();
    let ticket = ticket_titled(&client, "Disk full").await;
    for on in [FaultOn::Update, FaultOn::Comment] {
        for _ in 0..2 {
            let sent = effect(&client, on, &ticket.id, "ref", Some("k")).await;
            assert_eq!(sent.expect("an answer").status(), StatusCode::CREATED);
        }
        assert_eq!(written(&client, on, "ref").await, 2, "{on:?}");
    }
    // The second transition acts too, and so is refused on its merits.
    let first = effect(&client, FaultOn::Transition, &ticket.id, "tr", Some("k")).await;
    assert_eq!(first.expect("an answer").status(), StatusCode::CREATED);
    let second = effect(&client, FaultOn::Transition, &ticket.id, "tr", Some("k")).await;
    let second = second.expect("an answer");
    assert_eq!(second.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(error_of(second).await.contains("already in_progress"));
}

#[tokio::test]
async fn commit_then_drop_on_each_kind_writes_and_answers_nothing() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    for on in EFFECTS {
        let ticket = ticket_titled(&client, &format!("{on:?}")).await;
        client
            .add_fault(&FaultRule::on(on, Fault::CommitThenDrop))
            .await
            .expect("fault added");
        let lost = effect(&client, on, &ticket.id, "ref", Some(&ticket.id)).await;
        let err = lost.expect_err("the connection closes without an answer");
        assert!(!err.is_timeout() && !err.is_status(), "{err:?}");
        assert_eq!(written(&client, on, "ref").await, 1, "{on:?}");
        // The retry with the same key replays what the lost answer would have said.
        let retry = effect(&client, on, &ticket.id, "ref", Some(&ticket.id)).await;
        assert_eq!(retry.expect("an answer").status(), StatusCode::OK);
        assert_eq!(written(&client, on, "ref").await, 1, "{on:?}");
    }
}

#[tokio::test]
async fn commit_then_500_on_each_kind_writes_and_fails() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    for on in EFFECTS {
        let ticket = ticket_titled(&client, &format!("{on:?}")).await;
        client
            .add_fault(&FaultRule::on(on, Fault::CommitThen500))
            .await
            .expect("fault added");
        let sent = effect(&client, on, &ticket.id, "ref", None).await;
        let answer = sent.expect("an answer");
        assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR, "{on:?}");
        assert_eq!(written(&client, on, "ref").await, 1, "{on:?}");
    }
}

#[tokio::test]
async fn fail_before_commit_and_reject_on_each_kind_write_nothing() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    for on in EFFECTS {
        let ticket = ticket_titled(&client, &format!("{on:?}")).await;
        for fault in [Fault::FailBeforeCommit, Fault::Reject] {
            client
                .add_fault(&FaultRule::on(on, fault))
                .await
                .expect("fault added");
        }
        let failed = effect(&client, on, &ticket.id, "ref", Some(&ticket.id)).await;
        let failed = failed.expect("an answer");
        assert_eq!(failed.status(), StatusCode::SERVICE_UNAVAILABLE, "{on:?}");
        let rejected = effect(&client, on, &ticket.id, "ref", Some(&ticket.id)).await;
        let rejected = rejected.expect("an answer");
        assert_eq!(
            rejected.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{on:?}"
        );
        assert_eq!(written(&client, on, "ref").await, 0, "{on:?}");
        assert_eq!(
            client.ticket(&ticket.id).await.expect("a ticket"),
            Some(ticket.clone())
        );
        // Nothing was written, so the key is still free.
        let sent = effect(&client, on, &ticket.id, "ref", Some(&ticket.id)).await;
        assert_eq!(sent.expect("an answer").status(), StatusCode::CREATED);
    }
}

#[tokio::test]
async fn hang_on_each_kind_writes_after_the_client_gave_up() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    let impatient = SimClient::new(sim.base_url());
    for on in EFFECTS {
        let ticket = ticket_titled(&client, &format!("{on:?}")).await;
        client
            .add_fault(&FaultRule::on(on, Fault::Hang { ms: 300 }))
            .await
            .expect("fault added");
        let began = Instant::now();
        let sent = tokio::time::timeout(
            Duration::from_millis(100),
            effect(&impatient, on, &ticket.id, "ref", None),
        )
        .await;
        assert!(sent.is_err(), "{on:?}: the client gives up first");
        assert_eq!(written(&client, on, "ref").await, 0, "{on:?}: not yet");
        tokio::time::sleep(Duration::from_millis(400).saturating_sub(began.elapsed())).await;
        assert_eq!(written(&client, on, "ref").await, 1, "{on:?}");
    }
}

#[tokio::test]
async fn a_hung_update_checks_its_version_when_it_commits() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    let ticket = ticket_titled(&client, "Disk full").await;
    client
        .add_fault(&FaultRule::update(Fault::Hang { ms: 300 }).external_ref("slow"))
        .await
        .expect("fault added");
    let slow = json!({"external_ref": "slow", "expected_version": 1, "title": "slow"});
    let hung = tokio::spawn({
        let (client, id) = (client.clone(), ticket.id.clone());
        async move { client.update(&id, &slow, None).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let fast = json!({"external_ref": "fast", "expected_version": 1, "title": "fast"});
    let sent = client.update(&ticket.id, &fast, None).await;
    assert_eq!(sent.expect("an answer").status(), StatusCode::CREATED);
    let late = hung.await.expect("the task").expect("an answer");
    assert_eq!(late.status(), StatusCode::PRECONDITION_FAILED);
    assert_eq!(
        error_of(late).await,
        format!("ticket {} is at version 2, not 1", ticket.id)
    );
    assert_eq!(written(&client, FaultOn::Update, "slow").await, 0);
}

#[tokio::test]
async fn latency_on_a_transition_delays_then_behaves() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    let ticket = ticket_titled(&client, "Disk full").await;
    client
        .add_fault(&FaultRule::transition(Fault::Latency { ms: 150 }))
        .await
        .expect("fault added");
    let began = Instant::now();
    let sent = effect(&client, FaultOn::Transition, &ticket.id, "ref", None).await;
    assert_eq!(sent.expect("an answer").status(), StatusCode::CREATED);
    assert!(began.elapsed() >= Duration::from_millis(150));
}

#[tokio::test]
async fn title_contains_matches_the_acted_on_ticket_as_the_request_arrives() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    let target = ticket_titled(&client, "run check-7").await;
    let bystander = ticket_titled(&client, "other").await;
    for on in EFFECTS {
        client
            .add_fault(&FaultRule::on(on, Fault::FailBeforeCommit).title_contains("check-7"))
            .await
            .expect("fault added");
        let spared = effect(&client, on, &bystander.id, "ref", None).await;
        assert_eq!(
            spared.expect("an answer").status(),
            StatusCode::CREATED,
            "{on:?}"
        );
        let hit = effect(&client, on, &target.id, "ref", None).await;
        let hit = hit.expect("an answer");
        assert_eq!(hit.status(), StatusCode::SERVICE_UNAVAILABLE, "{on:?}");
    }
    // The title an update sets is not the one matched: the ticket's title
    // as the request arrives is.
    client
        .add_fault(&FaultRule::update(Fault::Reject).title_contains("renamed"))
        .await
        .expect("fault added");
    let rename = json!({"external_ref": "rename", "title": "renamed"});
    let sent = client.update(&target.id, &rename, None).await;
    assert_eq!(sent.expect("an answer").status(), StatusCode::CREATED);
    let again = json!({"external_ref": "again", "priority": "low"});
    let sent = client.update(&target.id, &again, None).await;
    assert_eq!(
        sent.expect("an answer").status(),
        StatusCode::UNPROCESSABLE_ENTITY
    );
}

#[tokio::test]
async fn changes_and_comments_are_searched_by_reference() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    let one = ticket_titled(&client, "one").await;
    let two = ticket_titled(&client, "two").await;
    for ticket in [&one, &two] {
        for on in [FaultOn::Update, FaultOn::Comment] {
            let sent = effect(&client, on, &ticket.id, "shared", None).await;
            assert_eq!(sent.expect("an answer").status(), StatusCode::CREATED);
        }
    }
    let changes = client.changes("shared").await.expect("search");
    assert_eq!(
        changes
            .iter()
            .map(|c| c.ticket_id.as_str())
            .collect::<Vec<_>>(),
        [one.id.as_str(), two.id.as_str()],
        "oldest first"
    );
    assert_eq!(client.comments("shared").await.expect("search").len(), 2);
    assert!(client.changes("nobody").await.expect("search").is_empty());

    let http = reqwest::Client::new();
    let base = sim.base_url();
    let get = |path: &str| http.get(format!("{base}{path}")).send();
    let path = format!("/api/changes?external_ref=shared&ticket_id={}", two.id);
    let narrowed: Value = get(&path)
        .await
        .expect("an answer")
        .json()
        .await
        .expect("JSON");
    assert_eq!(narrowed["changes"].as_array().map(Vec::len), Some(1));
    assert_eq!(narrowed["changes"][0]["ticket_id"], json!(two.id));
    let path = format!("/api/comments?external_ref=shared&ticket_id={}", one.id);
    let narrowed: Value = get(&path)
        .await
        .expect("an answer")
        .json()
        .await
        .expect("JSON");
    assert_eq!(narrowed["comments"].as_array().map(Vec::len), Some(1));
    assert_eq!(narrowed["comments"][0]["ticket_id"], json!(one.id));
    for path in [
        "/api/changes",
        "/api/comments",
        "/api/changes?ticket_id=SIM-1",
    ] {
        let refused = get(path).await.expect("an answer");
        assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY, "{path}");
    }

    // Search faults hit searches of every kind.
    client
        .add_fault(&FaultRule::search(Fault::FailBeforeCommit).external_ref("shared"))
        .await
        .expect("fault added");
    client
        .add_fault(&FaultRule::search(Fault::CommitThenDrop))
        .await
        .expect("fault added");
    let failed = client.changes("shared").await.expect_err("a 503");
    assert!(failed.to_string().contains("503"), "{failed:#}");
    get("/api/comments?external_ref=shared")
        .await
        .expect_err("the connection closes without an answer");
    assert_eq!(client.comments("shared").await.expect("search").len(), 2);

    let counts = client.counts().await.expect("counts");
    assert_eq!(counts.change_searches_received, 6);
    assert_eq!(counts.comment_searches_received, 5);
    assert_eq!(counts.ticket_searches_received, 0);
    assert_eq!(counts.searches_received, 11);
}

#[tokio::test]
async fn counts_list_changes_and_comments_by_reference() {
    let sim = start(KeyPolicy::Ignore, DAY).await;
    let client = sim.client();
    let ticket = ticket_titled(&client, "Disk full").await;
    for _ in 0..2 {
        let sent = effect(&client, FaultOn::Update, &ticket.id, "upd", None).await;
        assert_eq!(sent.expect("an answer").status(), StatusCode::CREATED);
    }
    let sent = effect(&client, FaultOn::Transition, &ticket.id, "tr", None).await;
    assert_eq!(sent.expect("an answer").status(), StatusCode::CREATED);
    let sent = effect(&client, FaultOn::Comment, &ticket.id, "cmt", None).await;
    assert_eq!(sent.expect("an answer").status(), StatusCode::CREATED);
    let rename = json!({"external_ref": "rename", "title": "Disk fine"});
    let sent = client.update(&ticket.id, &rename, None).await;
    assert_eq!(sent.expect("an answer").status(), StatusCode::CREATED);
    assert_eq!(client.changes("upd").await.expect("search").len(), 2);

    let counts = client.counts().await.expect("counts");
    let listed: Vec<(&str, ChangeKind, u64, &str, &str)> = counts
        .changes_by_external_ref
        .iter()
        .map(|r| {
            let (id, title) = (r.ticket_id.as_str(), r.ticket_title.as_str());
            (r.external_ref.as_str(), r.kind, r.count, id, title)
        })
        .collect();
    // Titles are the ticket's title now, not when the change was made.
    assert_eq!(
        listed,
        [
            ("upd", ChangeKind::Update, 2, "SIM-1", "Disk fine"),
            ("tr", ChangeKind::Transition, 1, "SIM-1", "Disk fine"),
            ("rename", ChangeKind::Update, 1, "SIM-1", "Disk fine"),
        ]
    );
    assert_eq!(counts.comments_by_external_ref.len(), 1);
    let comments = &counts.comments_by_external_ref[0];
    assert_eq!(
        (
            comments.external_ref.as_str(),
            comments.count,
            comments.ticket_id.as_str()
        ),
        ("cmt", 1, "SIM-1")
    );
    assert_eq!(comments.ticket_title, "Disk fine");
    assert_eq!(counts.total_changes, 4);
    assert_eq!(counts.total_comments, 1);
    assert_eq!(counts.effects_received(), 1 + 3 + 1 + 1);
    assert_eq!(counts.changes_for("upd"), 2);
    assert_eq!(counts.changes_for("nobody"), 0);
    assert_eq!(counts.comments_for("cmt"), 1);
    assert_eq!(
        counts.changes_on_ticket_titled(ChangeKind::Update, "Disk fine"),
        3
    );
    assert_eq!(
        counts.changes_on_ticket_titled(ChangeKind::Transition, "Disk fine"),
        1
    );
    assert_eq!(
        counts.changes_on_ticket_titled(ChangeKind::Update, "Disk full"),
        0
    );
    assert_eq!(counts.comments_on_ticket_titled("Disk fine"), 1);
    assert_eq!(counts.searches_received, 1);
}

#[tokio::test]
async fn copies_plant_a_duplicate_of_the_newest_object_with_a_reference() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let client = sim.client();
    let ticket = ticket_titled(&client, "Disk full").await;
    let SimObject::Ticket(copy) = client.copy(&ticket.external_ref).await.expect("copied") else {
        panic!("a ticket was copied");
    };
    assert_eq!(copy.id, "SIM-2");
    assert_eq!(
        (copy.external_ref.as_str(), copy.title.as_str()),
        (ticket.external_ref.as_str(), ticket.title.as_str())
    );
    assert_eq!(
        client
            .tickets(&ticket.external_ref)
            .await
            .expect("search")
            .len(),
        2
    );

    let sent = effect(&client, FaultOn::Update, &ticket.id, "upd", None).await;
    let change = change_of(sent.expect("an answer"), StatusCode::CREATED).await;
    let SimObject::Change(copied) = client.copy("upd").await.expect("copied") else {
        panic!("a change was copied");
    };
    assert_eq!(copied.id, "CHG-2");
    assert_eq!(
        (&copied.changes, &copied.ticket),
        (&change.changes, &change.ticket)
    );
    assert_eq!(
        client
            .ticket(&ticket.id)
            .await
            .expect("a ticket")
            .map(|t| t.version),
        Some(2),
        "a copied change does not change the ticket again"
    );
    assert_eq!(client.changes("upd").await.expect("search").len(), 2);

    let sent = effect(&client, FaultOn::Comment, &ticket.id, "cmt", None).await;
    assert_eq!(sent.expect("an answer").status(), StatusCode::CREATED);
    let SimObject::Comment(copied) = client.copy("cmt").await.expect("copied") else {
        panic!("a comment was copied");
    };
    assert_eq!(
        (copied.id.as_str(), copied.body.as_str()),
        ("CMT-2", "seen")
    );

    let missing = reqwest::Client::new()
        .post(format!("{}/_sim/copies", sim.base_url()))
        .json(&json!({"external_ref": "nobody"}))
        .send()
        .await
        .expect("an answer");
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let counts = client.counts().await.expect("counts");
    assert_eq!(
        counts.effects_received(),
        3,
        "copies are not requests received"
    );
    assert_eq!(counts.tickets_for(&ticket.external_ref), 2);
    assert_eq!(counts.changes_for("upd"), 2);
    assert_eq!(counts.comments_for("cmt"), 2);
}

#[tokio::test]
async fn fault_rules_name_the_new_kinds() {
    let sim = start(KeyPolicy::Honour, DAY).await;
    let http = reqwest::Client::new();
    for on in ["update", "transition", "comment"] {
        let rule = json!({"on": on, "title_contains": "x", "fault": {"kind": "reject"}});
        let added = http
            .post(format!("{}/_sim/faults", sim.base_url()))
            .json(&rule)
            .send()
            .await
            .expect("an answer");
        assert_eq!(added.status(), StatusCode::CREATED, "{on}");
        let echoed: FaultRule = added.json().await.expect("the rule");
        assert_eq!(echoed.title_contains.as_deref(), Some("x"));
        assert_eq!(format!("{:?}", echoed.on).to_lowercase(), on);
    }
}
