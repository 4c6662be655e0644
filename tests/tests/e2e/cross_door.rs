//! One key namespace: a key first used on one door and retried on the other
//! replays (same meaning) or conflicts (other meaning).

use e2e_tests::TestApp;
use kitchen::testing::TestDatabase;

use crate::mcp_support::{Protocol, connect, content, create};
use crate::{DISK_FULL, fresh_key};

async fn rest_then_mcp_replays_and_conflicts(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let key = fresh_key();
    let rest: serde_json::Value = app
        .post_ticket(&acme, Some(&key), DISK_FULL)
        .await
        .json()
        .await
        .expect("json");
    let mcp = content(&create(&client, &key, "Disk full on db-1").await);
    assert_eq!(mcp["status"], "replayed");
    assert_eq!(mcp["ticket"]["id"], rest["id"]);
    let other = create(&client, &key, "Something else").await;
    assert_eq!(other.is_error, Some(true));
    assert_eq!(content(&other)["status"], "conflict");
    assert_eq!(app.ticket_count(&acme).await, 1);
}

async fn mcp_then_rest_replays_and_conflicts(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Legacy).await;
    let key = fresh_key();
    let mcp = content(&create(&client, &key, "Disk full on db-1").await);
    let rest = app.post_ticket(&acme, Some(&key), DISK_FULL).await;
    assert_eq!(rest.status(), 201);
    assert_eq!(rest.headers()["idempotent-replayed"], "true");
    let rest: serde_json::Value = rest.json().await.expect("json");
    assert_eq!(rest["id"], mcp["ticket"]["id"]);
    let other = app
        .post_ticket(
            &acme,
            Some(&key),
            r#"{"project_id":"ops","title":"Something else"}"#,
        )
        .await;
    assert_eq!(other.status(), 422);
    assert_eq!(app.ticket_count(&acme).await, 1);
}

kitchen::on_both_databases!(
    rest_then_mcp_replays_and_conflicts,
    mcp_then_rest_replays_and_conflicts
);
