//! `POST /v1/tickets`: created (with its `ETag`), replayed, conflict, in
//! progress, concurrency, tenants.

use std::collections::HashSet;
use std::time::Duration;

use e2e_tests::{TestApp, snapshot_settings};
use kitchen::KitchenConfig;
use kitchen::testing::{DatabaseKind, TestDatabase};

use crate::{DISK_FULL, fresh_key};

async fn create_then_retry_replays_byte_identical(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();

    let first = app.post_ticket(&acme, Some(&key), DISK_FULL).await;
    assert_eq!(first.status(), 201);
    let location = first.headers()["location"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(first.headers().get("idempotent-replayed").is_none());
    assert_eq!(first.headers()["content-type"], "application/json");
    assert_eq!(
        first.headers()["etag"],
        "\"1\"",
        "a new ticket is at version 1"
    );
    let first_body = first.bytes().await.expect("body");

    // Same meaning, other JSON field order and the default spelled out.
    let reordered = r#"{"priority":"normal","title":"Disk full on db-1","project_id":"ops"}"#;
    for body in [DISK_FULL, reordered] {
        let again = app.post_ticket(&acme, Some(&key), body).await;
        assert_eq!(again.status(), 201);
        assert_eq!(again.headers()["location"], location.as_str());
        assert_eq!(again.headers()["idempotent-replayed"], "true");
        assert_eq!(again.headers()["etag"], "\"1\"");
        assert_eq!(
            again.bytes().await.expect("body"),
            first_body,
            "byte-identical replay"
        );
    }
    assert_eq!(app.ticket_count(&acme).await, 1);

    let ticket: serde_json::Value = serde_json::from_slice(&first_body).expect("JSON");
    assert_eq!(
        location,
        format!("/v1/tickets/{}", ticket["id"].as_str().expect("id"))
    );
    let fetched = app.get(&acme, &location).await;
    assert_eq!(fetched.status(), 200);
    assert_eq!(fetched.headers()["etag"], "\"1\"");
    assert_eq!(
        fetched.bytes().await.expect("body"),
        first_body,
        "GET shows the same ticket"
    );
    snapshot_settings().bind(|| insta::assert_json_snapshot!("ticket_created", ticket));
}

async fn a_quoted_key_is_the_same_key(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    assert_eq!(
        app.post_ticket(&acme, Some(&key), DISK_FULL).await.status(),
        201
    );
    let quoted = app
        .post_ticket(&acme, Some(&format!("\"{key}\"")), DISK_FULL)
        .await;
    assert_eq!(quoted.headers()["idempotent-replayed"], "true");
    assert_eq!(app.ticket_count(&acme).await, 1);
}

async fn same_key_other_body_is_a_conflict_that_links_the_original(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    // A key with characters that must be escaped in a URL path.
    let key = "order/42?retry#1";
    assert_eq!(
        app.post_ticket(&acme, Some(key), DISK_FULL).await.status(),
        201
    );

    let changed = r#"{"project_id":"ops","title":"Disk full on db-2"}"#;
    let conflict = app.post_ticket(&acme, Some(key), changed).await;
    assert_eq!(conflict.status(), 422);
    assert_eq!(
        conflict.headers()["content-type"],
        "application/problem+json"
    );
    let link = "/v1/operations/create_ticket/order%2F42%3Fretry%231";
    assert_eq!(
        conflict.headers()["link"],
        format!("<{link}>; rel=\"original\"").as_str()
    );
    let problem: serde_json::Value = conflict.json().await.expect("problem JSON");
    assert_eq!(problem["original_operation"], link);
    // What the caller may not have: when, and which ticket (its first
    // answer may be the one it lost).
    let first: serde_json::Value = app.get(&acme, link).await.json().await.expect("JSON");
    assert_eq!(problem["original_resource"], first["ticket_location"]);
    assert_eq!(problem["original_created_at"], first["created_at"]);
    let detail = problem["detail"].as_str().unwrap_or_default();
    let safe_move = detail
        .find("If you meant the same ticket")
        .expect("the safe move");
    let new_key = detail.find("new key").expect("when a new key is right");
    assert!(safe_move < new_key, "the safe move first: {detail}");
    assert!(
        !problem.to_string().contains("db-1"),
        "never the original payload"
    );
    assert_eq!(app.ticket_count(&acme).await, 1);

    let original = app.get(&acme, link).await;
    assert_eq!(original.status(), 200, "the link resolves");
    snapshot_settings().bind(|| insta::assert_json_snapshot!("problem_key_reused", problem));
}

async fn a_key_held_past_the_wait_bound_answers_409_with_retry_after(db: TestDatabase) {
    let config = KitchenConfig {
        wait_bound: Duration::from_millis(200),
        ..KitchenConfig::default()
    };
    let app = TestApp::spawn_with(&db, config, Duration::from_secs(30)).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    let holder = app.hold_key(&acme, &key).await;

    // On PostgreSQL the holder holds the key's row: another attempt is
    // running. On SQLite it holds the file's write lock, as another program
    // would: the database is locked, and nothing was written.
    let busy = app.post_ticket(&acme, Some(&key), DISK_FULL).await;
    let (status, snapshot) = match db.backend() {
        DatabaseKind::Postgres => (409, "problem_in_progress"),
        DatabaseKind::Sqlite => (503, "problem_database_locked"),
    };
    assert_eq!(busy.status(), status);
    assert_eq!(busy.headers()["retry-after"], "1");
    let problem: serde_json::Value = busy.json().await.expect("problem JSON");
    holder.roll_back().await;

    assert_eq!(
        app.post_ticket(&acme, Some(&key), DISK_FULL).await.status(),
        201
    );
    assert_eq!(app.ticket_count(&acme).await, 1);
    snapshot_settings().bind(|| insta::assert_json_snapshot!(snapshot, problem));
}

async fn sixteen_concurrent_identical_posts_make_one_ticket(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    let posts = (0..16).map(|_| app.post_ticket(&acme, Some(&key), DISK_FULL));
    let mut bodies = HashSet::new();
    for response in futures::future::join_all(posts).await {
        assert_eq!(response.status(), 201);
        bodies.insert(response.bytes().await.expect("body"));
    }
    assert_eq!(bodies.len(), 1, "16 identical 201 bodies");
    assert_eq!(app.ticket_count(&acme).await, 1);
}

async fn the_same_key_under_another_tenant_is_another_ticket(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let globex = app.tenant("globex").await;
    let key = fresh_key();
    let a: serde_json::Value = app
        .post_ticket(&acme, Some(&key), DISK_FULL)
        .await
        .json()
        .await
        .expect("json");
    let g = app.post_ticket(&globex, Some(&key), DISK_FULL).await;
    assert_eq!(g.status(), 201);
    assert!(
        g.headers().get("idempotent-replayed").is_none(),
        "not a replay of acme's"
    );
    let g: serde_json::Value = g.json().await.expect("json");
    assert_ne!(a["id"], g["id"]);

    let acme_ticket = format!("/v1/tickets/{}", a["id"].as_str().expect("id"));
    assert_eq!(app.get(&globex, &acme_ticket).await.status(), 404);
    let op: serde_json::Value = app
        .get(&globex, &format!("/v1/operations/create_ticket/{key}"))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        op["ticket_id"], g["id"],
        "globex sees only its own operation"
    );
    assert_eq!(app.ticket_count(&acme).await, 1);
    assert_eq!(app.ticket_count(&globex).await, 1);
}

/// A create the server stops waiting for (its request timeout) is not
/// abandoned: it runs to its end on its own, and the caller's retry with the
/// same key replays it.
async fn a_timed_out_create_still_commits_once(db: TestDatabase) {
    let app = TestApp::spawn_with(&db, KitchenConfig::default(), Duration::from_millis(300)).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    let holder = app.hold_key(&acme, &key).await;
    let timed_out = app.post_ticket(&acme, Some(&key), DISK_FULL).await;
    assert_eq!(timed_out.status(), 503);
    let problem: serde_json::Value = timed_out.json().await.expect("problem JSON");
    assert_eq!(problem["type"], "/problems/timeout");
    snapshot_settings().bind(|| insta::assert_json_snapshot!("problem_timeout", problem));
    holder.roll_back().await;

    // The abandoned create now gets the key and commits on its own.
    assert!(
        app.operation_committed(&acme, &key).await,
        "the timed-out create committed by itself"
    );
    let retry = app.post_ticket(&acme, Some(&key), DISK_FULL).await;
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    assert_eq!(app.ticket_count(&acme).await, 1);
}

kitchen::on_both_databases!(
    create_then_retry_replays_byte_identical,
    a_timed_out_create_still_commits_once,
    a_quoted_key_is_the_same_key,
    same_key_other_body_is_a_conflict_that_links_the_original,
    a_key_held_past_the_wait_bound_answers_409_with_retry_after,
    sixteen_concurrent_identical_posts_make_one_ticket,
    the_same_key_under_another_tenant_is_another_ticket,
);
