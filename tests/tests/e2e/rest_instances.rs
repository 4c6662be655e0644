//! Several stateless instances on one PostgreSQL database: how the service
//! scales past one machine. A retry that lands on another instance replays.

use e2e_tests::TestApp;
use kitchen::testing::TestDatabase;

use crate::{DISK_FULL, fresh_key};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_retry_on_another_instance_replays() {
    let db = TestDatabase::postgres().await;
    let a = TestApp::spawn(&db).await;
    let b = TestApp::spawn(&db).await;
    let acme = a.tenant("acme").await;
    let key = fresh_key();

    let first = a.post_ticket(&acme, Some(&key), DISK_FULL).await;
    assert_eq!(first.status(), 201);
    let first_body = first.bytes().await.expect("body");

    let retry = b.post_ticket(&acme, Some(&key), DISK_FULL).await;
    assert_eq!(retry.status(), 201);
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    assert_eq!(retry.bytes().await.expect("body"), first_body);
    assert_eq!(a.ticket_count(&acme).await, 1);
    assert_eq!(b.ticket_count(&acme).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_an_update_retried_on_another_instance_replays() {
    let db = TestDatabase::postgres().await;
    let a = TestApp::spawn(&db).await;
    let b = TestApp::spawn(&db).await;
    let acme = a.tenant("acme").await;
    let created: serde_json::Value = a
        .post_ticket(&acme, Some(&fresh_key()), DISK_FULL)
        .await
        .json()
        .await
        .expect("JSON");
    let path = format!("/v1/tickets/{}", created["id"].as_str().expect("an id"));
    let key = fresh_key();
    let patch = |app: &TestApp| {
        app.client
            .patch(app.url(&path))
            .bearer_auth(&acme.token)
            .header("content-type", "application/merge-patch+json")
            .header("idempotency-key", &key)
            .header("if-match", "\"1\"")
            .body(r#"{"assignee":"Ada"}"#)
            .send()
    };
    let first = patch(&a).await.expect("answer");
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["etag"], "\"2\"");
    let first_body = first.bytes().await.expect("body");

    let retry = patch(&b).await.expect("answer");
    assert_eq!(retry.status(), 200, "not a 412: the retry replays");
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    assert_eq!(retry.headers()["etag"], "\"2\"");
    assert_eq!(retry.bytes().await.expect("body"), first_body);
}
