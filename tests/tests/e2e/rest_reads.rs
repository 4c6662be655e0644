//! Reads: the operation status resource, tickets, lists, health, request ids.

use e2e_tests::{TestApp, snapshot_settings};
use kitchen::testing::TestDatabase;

use crate::{DISK_FULL, fresh_key};

async fn the_operation_resource_reconciles_a_lost_answer(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    let path = format!("/v1/operations/create_ticket/{key}");
    assert_eq!(
        app.get(&acme, &path).await.status(),
        404,
        "nothing yet: a retry is safe"
    );

    let created: serde_json::Value = app
        .post_ticket(&acme, Some(&key), DISK_FULL)
        .await
        .json()
        .await
        .expect("json");
    let op = app.get(&acme, &path).await;
    assert_eq!(op.status(), 200);
    let op: serde_json::Value = op.json().await.expect("json");
    assert_eq!(op["state"], "succeeded");
    assert_eq!(op["ticket_id"], created["id"]);
    assert_eq!(
        op["ticket_location"],
        format!("/v1/tickets/{}", created["id"].as_str().expect("id"))
    );
    assert_eq!(op["retry_safe"], true);
    snapshot_settings().bind(|| insta::assert_json_snapshot!("operation_status", op));

    let unknown_action = app
        .get(&acme, &format!("/v1/operations/delete_ticket/{key}"))
        .await;
    assert_eq!(unknown_action.status(), 404);
}

async fn lists_page_newest_first_and_validate_their_parameters(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let mut ids = Vec::new();
    for (i, project) in ["ops", "web", "ops"].iter().enumerate() {
        let body = format!(r#"{{"project_id":"{project}","title":"T{i}"}}"#);
        let t: serde_json::Value = app
            .post_ticket(&acme, Some(&fresh_key()), &body)
            .await
            .json()
            .await
            .expect("json");
        ids.push(t["id"].clone());
    }
    ids.reverse();

    let first: serde_json::Value = app
        .get(&acme, "/v1/tickets?limit=2")
        .await
        .json()
        .await
        .expect("json");
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let second: serde_json::Value = app
        .get(&acme, &format!("/v1/tickets?limit=2&cursor={cursor}"))
        .await
        .json()
        .await
        .expect("json");
    let seen: Vec<_> = first["tickets"]
        .as_array()
        .into_iter()
        .chain(second["tickets"].as_array())
        .flatten()
        .map(|t| t["id"].clone())
        .collect();
    assert_eq!(seen, ids);
    assert_eq!(second["next_cursor"], serde_json::Value::Null);

    let ops: serde_json::Value = app
        .get(&acme, "/v1/tickets?project_id=ops")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(ops["tickets"].as_array().map(Vec::len), Some(2));
    snapshot_settings().bind(|| insta::assert_json_snapshot!("ticket_list", ops));

    let bad = app
        .get(
            &acme,
            "/v1/tickets?limit=0&cursor=nope&project_id=Not%20A%20Slug",
        )
        .await;
    assert_eq!(bad.status(), 400);
    let problem: serde_json::Value = bad.json().await.expect("json");
    let fields: Vec<_> = problem["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["field"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(fields, ["project_id", "limit", "cursor"]);
    snapshot_settings().bind(|| insta::assert_json_snapshot!("problem_list_parameters", problem));
}

async fn health_readiness_and_request_ids(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let health = app
        .client
        .get(app.url("/healthz"))
        .send()
        .await
        .expect("answer");
    assert_eq!(health.status(), 200);
    let generated = health.headers()["x-request-id"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert_eq!(generated.len(), 36, "a UUID is generated when none is sent");
    let health: serde_json::Value = health.json().await.expect("json");
    snapshot_settings().bind(|| insta::assert_json_snapshot!("healthz", health));
    let described = app.public_json("/problems/operation-not-found").await;
    snapshot_settings().bind(|| insta::assert_json_snapshot!("problem_type", described));

    let ready = app
        .client
        .get(app.url("/readyz"))
        .header("x-request-id", "trace-me-123")
        .send()
        .await
        .expect("answer");
    assert_eq!(ready.headers()["x-request-id"], "trace-me-123", "echoed");
    let ready: serde_json::Value = ready.json().await.expect("json");
    assert_eq!(ready["status"], "ready");
    let kind = match db.backend() {
        kitchen::testing::DatabaseKind::Sqlite => "sqlite",
        kitchen::testing::DatabaseKind::Postgres => "postgres",
    };
    assert_eq!(ready["database"], kind);

    app.kitchen.close().await;
    let down = app
        .client
        .get(app.url("/readyz"))
        .send()
        .await
        .expect("answer");
    assert_eq!(down.status(), 503, "not ready once the database is gone");
}

kitchen::on_both_databases!(
    the_operation_resource_reconciles_a_lost_answer,
    lists_page_newest_first_and_validate_their_parameters,
    health_readiness_and_request_ids,
);
