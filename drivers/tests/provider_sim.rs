//! The provider simulator over real HTTP: the tracker API, key handling in
//! both modes, every fault kind, and the outage.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use drivers::provider_sim::{
    self, Fault, FaultRule, KeyPolicy, RunningSim, SimClient, SimConfig, SimTicket,
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
