//! `POST /v1/tickets/{id}/labels`, `DELETE /v1/tickets/{id}/labels/{label}`
//! and `GET /v1/tickets?label=`, as an HTTP client sees them.

use e2e_tests::{TestApp, TestTenant};
use kitchen::MAX_LABELS_PER_TICKET;
use kitchen::testing::TestDatabase;
use serde_json::json;

use crate::fresh_key;
use crate::rest_lifecycle::{Answer, create};

async fn add(app: &TestApp, tenant: &TestTenant, id: &str, key: &str, label: &str) -> Answer {
    let request = app
        .client
        .post(app.url(&format!("/v1/tickets/{id}/labels")))
        .bearer_auth(&tenant.token)
        .header("content-type", "application/json")
        .header("idempotency-key", key)
        .body(json!({ "label": label }).to_string());
    Answer::of(request.send().await.expect("server answers")).await
}

async fn remove(app: &TestApp, tenant: &TestTenant, id: &str, key: &str, label: &str) -> Answer {
    let request = app
        .client
        .delete(app.url(&format!("/v1/tickets/{id}/labels/{label}")))
        .bearer_auth(&tenant.token)
        .header("idempotency-key", key);
    Answer::of(request.send().await.expect("server answers")).await
}

async fn labels_are_added_replayed_removed_and_filtered(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let id = create(&app, &acme).await;
    let other = create(&app, &acme).await;

    let key = fresh_key();
    let first = add(&app, &acme, &id, &key, "needs-triage").await;
    assert_eq!(first.status, 200);
    assert_eq!(first.json()["labels"], json!(["needs-triage"]));
    assert_eq!(first.header("etag"), Some("\"2\""));
    let again = add(&app, &acme, &id, &key, "needs-triage").await;
    assert!(again.replayed(), "{}", again.status);
    assert_eq!(again.body, first.body, "byte for byte");
    let changed = add(&app, &acme, &id, &key, "billing").await;
    changed.problem(422, "idempotency-key-reused");

    let listed = Answer::of(app.get(&acme, "/v1/tickets?label=needs-triage").await).await;
    assert_eq!(listed.status, 200);
    let ids: Vec<_> = listed.json()["tickets"]
        .as_array()
        .expect("tickets")
        .iter()
        .map(|t| t["id"].as_str().expect("an id").to_owned())
        .collect();
    assert_eq!(ids, std::slice::from_ref(&id), "not {other}");
    Answer::of(app.get(&acme, "/v1/tickets?label=Needs").await)
        .await
        .problem(400, "validation-failed");

    let off = remove(&app, &acme, &id, &fresh_key(), "needs-triage").await;
    assert_eq!(off.status, 200);
    assert!(off.json().get("labels").is_none(), "none: left out");
    assert_eq!(off.header("etag"), Some("\"3\""));
    // One it lacks changes nothing, and still uses the key.
    let lacking_key = fresh_key();
    let lacking = remove(&app, &acme, &id, &lacking_key, "ghost").await;
    assert_eq!(
        (lacking.status, lacking.header("etag")),
        (200, Some("\"3\""))
    );
    assert!(
        remove(&app, &acme, &id, &lacking_key, "ghost")
            .await
            .replayed()
    );
    let bad = remove(&app, &acme, &id, &fresh_key(), "Not%20a%20label").await;
    bad.problem(400, "validation-failed");
}

async fn the_21st_label_is_refused_with_409_and_the_key_unused(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let id = create(&app, &acme).await;
    for n in 0..MAX_LABELS_PER_TICKET {
        let added = add(&app, &acme, &id, &fresh_key(), &format!("l{n:02}")).await;
        assert_eq!(added.status, 200);
    }
    let key = fresh_key();
    let refused = add(&app, &acme, &id, &key, "one-too-many").await;
    let problem = refused.problem(409, "label-limit-reached");
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("not used up")),
        "{problem}"
    );
    remove(&app, &acme, &id, &fresh_key(), "l00").await;
    let room = add(&app, &acme, &id, &key, "one-too-many").await;
    assert_eq!(room.status, 200, "the same key, once there is room");
    assert!(!room.replayed());
}

kitchen::on_both_databases!(
    labels_are_added_replayed_removed_and_filtered,
    the_21st_label_is_refused_with_409_and_the_key_unused,
);
