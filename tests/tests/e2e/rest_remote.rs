//! The REST door over the remote ticket backend: what a caller sees when the
//! provider's answer is lost (202 and the status resource), refuses, or
//! cannot be reached; the in-process server makes its tickets in the
//! provider simulator over real HTTP.

use std::sync::Arc;
use std::time::Duration;

use e2e_tests::{TestApp, snapshot_settings};
use kitchen::testing::TestDatabase;
use kitchen::{KitchenConfig, RemoteSettings, TicketBackend};
use provider_client::HttpProvider;
use provider_sim::{self, Fault, FaultOn, FaultRule, KeyPolicy, RunningSim, SimConfig};
use serde_json::json;

use crate::{DISK_FULL, fresh_key};

/// A server whose tickets go to a fresh simulator that ignores keys, told
/// that no provider request is still in flight once answered.
async fn spawn_remote(db: &TestDatabase) -> (TestApp, RunningSim) {
    spawn_remote_with(db, Duration::ZERO).await
}

/// A server whose tickets go to a fresh simulator that ignores keys, told
/// that a provider request may still land `max_inflight` after it was sent.
pub(crate) async fn spawn_remote_with(
    db: &TestDatabase,
    max_inflight: Duration,
) -> (TestApp, RunningSim) {
    let sim = provider_sim::spawn(
        "127.0.0.1:0".parse().expect("loopback"),
        SimConfig {
            keys: KeyPolicy::Ignore,
            dedup_window: Duration::ZERO,
        },
    )
    .await
    .expect("start the simulator");
    let call_timeout = Duration::from_millis(500);
    let provider = HttpProvider::new(&sim.base_url(), call_timeout).expect("an HTTP client");
    let config = KitchenConfig {
        backend: TicketBackend::Remote {
            provider: Arc::new(provider),
            settings: RemoteSettings {
                dedup_window: Duration::ZERO,
                max_inflight,
                call_timeout,
                // Out of the way: these tests reconcile on demand.
                reconcile_every: Duration::from_secs(3600),
                ..RemoteSettings::default()
            },
        },
        ..KitchenConfig::default()
    };
    let app = TestApp::spawn_with(db, config, Duration::from_secs(30)).await;
    (app, sim)
}

/// The `Idempotency-Replayable-Until` of an answer that has an operation.
fn replay_horizon(answer: &reqwest::Response) -> String {
    answer
        .headers()
        .get("idempotency-replayable-until")
        .expect("the answer advertises its replay horizon")
        .to_str()
        .expect("ascii")
        .to_owned()
}

async fn a_lost_answer_is_202_then_reconciled(db: TestDatabase) {
    let (app, sim) = spawn_remote(&db).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    let rule = FaultRule::create(Fault::CommitThenDrop).title_contains("Disk full");
    sim.client().add_fault(&rule).await.expect("set the fault");

    let lost = app.post_ticket(&acme, Some(&key), DISK_FULL).await;
    assert_eq!(lost.status(), 202);
    let location = lost.headers()["location"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert_eq!(location, format!("/v1/operations/create_ticket/{key}"));
    assert_eq!(lost.headers()["retry-after"], "2");
    let horizon = replay_horizon(&lost);
    let body: serde_json::Value = lost.json().await.expect("JSON");
    assert_eq!(body["state"], "unknown");
    assert!(
        body["next_step"]
            .as_str()
            .expect("text")
            .contains("Never use a new key")
    );
    snapshot_settings().bind(|| insta::assert_json_snapshot!("remote_202_unknown", body));

    // Reading the status reconciles: the provider has the ticket.
    let status: serde_json::Value = app.get(&acme, &location).await.json().await.expect("JSON");
    assert_eq!(status["state"], "succeeded");
    assert_eq!(
        status["replayable_until"], horizon,
        "the 202 advertises the operation's replay horizon"
    );
    assert_eq!(status["effect"]["attempts"][0]["result"], "ambiguous");
    assert_eq!(status["effect"]["last_reconciliation"]["result"], "found");
    assert_eq!(status["effect"]["last_reconciliation"]["trigger"], "status");
    let external_ref = status["effect"]["external_reference"]
        .as_str()
        .expect("a reference")
        .to_owned();
    snapshot_settings().bind(|| {
        let mut redacted = status.clone();
        redacted["effect"]["external_reference"] = "[external reference]".into();
        insta::assert_json_snapshot!("remote_operation_status_reconciled", redacted)
    });

    let retry = app.post_ticket(&acme, Some(&key), DISK_FULL).await;
    assert_eq!(retry.status(), 201);
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    let ticket: serde_json::Value = retry.json().await.expect("JSON");
    assert!(
        ticket["provider_ticket_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("SIM-"))
    );
    let counts = sim.client().counts().await.expect("counts");
    assert_eq!(
        counts.tickets_for(&external_ref),
        1,
        "one ticket at the provider"
    );
    assert_eq!(app.ticket_count(&acme).await, 1);
}

async fn refused_and_unreachable_are_problems_that_keep_the_key(db: TestDatabase) {
    let (app, sim) = spawn_remote(&db).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    sim.client()
        .add_fault(&FaultRule::create(Fault::Reject))
        .await
        .expect("set the fault");
    let refused = app.post_ticket(&acme, Some(&key), DISK_FULL).await;
    assert_eq!(refused.status(), 422);
    let horizon = replay_horizon(&refused);
    let problem: serde_json::Value = refused.json().await.expect("JSON");
    assert_eq!(problem["type"], "/problems/provider-rejected");
    snapshot_settings().bind(|| insta::assert_json_snapshot!("remote_problem_rejected", problem));
    let status: serde_json::Value = app
        .get(&acme, &format!("/v1/operations/create_ticket/{key}"))
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(status["state"], "failed_before_effect");
    assert_eq!(status["replayable_until"], horizon);

    let down = fresh_key();
    sim.client()
        .outage(Duration::from_millis(500))
        .await
        .expect("an outage");
    let unreachable = app.post_ticket(&acme, Some(&down), DISK_FULL).await;
    assert_eq!(unreachable.status(), 503);
    assert_eq!(unreachable.headers()["retry-after"], "5");
    replay_horizon(&unreachable);
    let problem: serde_json::Value = unreachable.json().await.expect("JSON");
    assert_eq!(problem["type"], "/problems/provider-unavailable");
    snapshot_settings().bind(|| {
        let mut redacted = problem.clone();
        redacted["detail"] = "[the connection error]".into();
        insta::assert_json_snapshot!("remote_problem_unavailable", redacted)
    });
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        sim.client().counts().await.expect("counts").total_tickets,
        0
    );

    // Both keys were kept: the retries make one ticket each.
    assert_eq!(
        app.post_ticket(&acme, Some(&key), DISK_FULL).await.status(),
        201
    );
    assert_eq!(
        app.post_ticket(&acme, Some(&down), DISK_FULL)
            .await
            .status(),
        201
    );
    assert_eq!(
        sim.client().counts().await.expect("counts").total_tickets,
        2
    );
}

/// Every write reaches the provider: an update, a move and a comment whose
/// answers the provider loses are each a `202` naming their status
/// resource; reading it reconciles (the provider has the effect), the retry
/// replays, and the provider holds each effect once.
async fn lifecycle_writes_reach_the_provider_and_are_reconciled(db: TestDatabase) {
    let (app, sim) = spawn_remote(&db).await;
    let acme = app.tenant("acme").await;
    let created = app.post_ticket(&acme, Some(&fresh_key()), DISK_FULL).await;
    assert_eq!(created.status(), 201);
    let ticket: serde_json::Value = created.json().await.expect("JSON");
    let id = ticket["id"].as_str().expect("an id");
    let writes = [
        (
            "update_ticket",
            FaultOn::Update,
            reqwest::Method::PATCH,
            format!("/v1/tickets/{id}"),
            r#"{"priority":"urgent"}"#,
            200,
        ),
        (
            "transition_ticket",
            FaultOn::Transition,
            reqwest::Method::POST,
            format!("/v1/tickets/{id}/transitions"),
            r#"{"to":"in_progress"}"#,
            200,
        ),
        (
            "add_comment",
            FaultOn::Comment,
            reqwest::Method::POST,
            format!("/v1/tickets/{id}/comments"),
            r#"{"body":"Looking into it"}"#,
            201,
        ),
    ];
    for (action, on, method, path, body, done) in writes {
        let rule = FaultRule::on(on, Fault::CommitThenDrop).title_contains("Disk full");
        sim.client().add_fault(&rule).await.expect("set the fault");
        let key = fresh_key();
        let send = || {
            app.client
                .request(method.clone(), app.url(&path))
                .bearer_auth(&acme.token)
                .header("content-type", "application/json")
                .header("idempotency-key", &key)
                .body(body)
                .send()
        };
        let lost = send().await.expect("server answers");
        assert_eq!(lost.status(), 202, "{action}");
        let location = lost.headers()["location"]
            .to_str()
            .expect("ascii")
            .to_owned();
        assert_eq!(location, format!("/v1/operations/{action}/{key}"));
        let unknown: serde_json::Value = lost.json().await.expect("JSON");
        assert_eq!(unknown["state"], "unknown", "{action}");
        assert_eq!(unknown["action"], action);
        if action == "add_comment" {
            snapshot_settings()
                .bind(|| insta::assert_json_snapshot!("remote_202_unknown_comment", unknown));
        }
        let status: serde_json::Value = app.get(&acme, &location).await.json().await.expect("JSON");
        assert_eq!(status["state"], "succeeded", "{action}: {status}");
        assert_eq!(status["effect"]["last_reconciliation"]["result"], "found");
        let reference = status["effect"]["external_reference"]
            .as_str()
            .expect("a reference")
            .to_owned();
        let retry = send().await.expect("server answers");
        assert_eq!(retry.status(), done, "{action}");
        assert_eq!(retry.headers()["idempotent-replayed"], "true", "{action}");
        let counts = sim.client().counts().await.expect("counts");
        let at_provider = match on {
            FaultOn::Comment => counts.comments_for(&reference),
            _ => counts.changes_for(&reference),
        };
        assert_eq!(at_provider, 1, "{action}: one effect at the provider");
    }
    // The local copy is the provider's ticket after both changes.
    let now: serde_json::Value = app
        .get(&acme, &format!("/v1/tickets/{id}"))
        .await
        .json()
        .await
        .expect("JSON");
    let provider_id = now["provider_ticket_id"].as_str().expect("at the provider");
    let there = sim
        .client()
        .ticket(provider_id)
        .await
        .expect("read the provider")
        .expect("the ticket is there");
    assert_eq!(
        (
            now["version"].as_u64(),
            now["status"].as_str(),
            now["priority"].as_str()
        ),
        (
            Some(there.version),
            Some(there.status.as_str()),
            Some(there.priority.as_str())
        )
    );
    assert_eq!(now["version"], 3);
    let comments: serde_json::Value = app
        .get(&acme, &format!("/v1/tickets/{id}/comments"))
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(comments["comments"].as_array().map(Vec::len), Some(1));
    assert!(
        comments["comments"][0]["provider_comment_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("CMT-"))
    );
}

/// A ticket the provider holds twice (something there made a copy) is
/// reported, never hidden: the status lists the copy, the original is kept.
async fn a_duplicate_at_the_provider_shows_in_the_status(db: TestDatabase) {
    let (app, sim) = spawn_remote(&db).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    let rule = FaultRule::create(Fault::CommitThenDrop).title_contains("Disk full");
    sim.client().add_fault(&rule).await.expect("set the fault");
    assert_eq!(
        app.post_ticket(&acme, Some(&key), DISK_FULL).await.status(),
        202
    );
    // The provider's own records name the reference; a copy is planted
    // under it before the service looks.
    let counts = sim.client().counts().await.expect("counts");
    let reference = counts.by_external_ref[0].external_ref.clone();
    sim.client().copy(&reference).await.expect("a copy");
    let status: serde_json::Value = app
        .get(&acme, &format!("/v1/operations/create_ticket/{key}"))
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(status["state"], "succeeded", "{status}");
    assert_eq!(status["effect"]["duplicates_at_provider"], json!(["SIM-2"]));
    let found = &status["effect"]["last_reconciliation"];
    assert_eq!(found["result"], "found");
    assert!(
        found["detail"]
            .as_str()
            .is_some_and(|d| d.contains("SIM-2") && d.contains("duplicate")),
        "{found}"
    );
    let ticket: serde_json::Value = app
        .post_ticket(&acme, Some(&key), DISK_FULL)
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        ticket["provider_ticket_id"], "SIM-1",
        "the original is kept"
    );
    assert_eq!(app.ticket_count(&acme).await, 1);
}

kitchen::on_both_databases!(
    a_lost_answer_is_202_then_reconciled,
    refused_and_unreachable_are_problems_that_keep_the_key,
    lifecycle_writes_reach_the_provider_and_are_reconciled,
    a_duplicate_at_the_provider_shows_in_the_status,
);
