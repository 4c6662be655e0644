//! The likely-duplicate guard through both doors: a create sent again
//! under a new key (an agent that minted a fresh key for its retry) is
//! made and flagged (`warn`, the default), or refused with `409
//! possible-duplicate` / status `possible_duplicate` and the key left
//! unused (`confirm`), unless the caller says it means a new one. Both
//! doors share one namespace per action; two instances on one database
//! make one effect of a race; the counters name it.

use std::time::Duration;

use e2e_tests::{TestApp, TestTenant};
use kitchen::testing::TestDatabase;
use kitchen::{DuplicateGuard, GuardMode, KitchenConfig};
use serde_json::{Value, json};

use crate::mcp_support::{Protocol, call, connect, content, create};
use crate::{DISK_FULL, fresh_key};

fn guard(mode: GuardMode) -> KitchenConfig {
    KitchenConfig {
        duplicate_guard: DuplicateGuard {
            mode,
            ..DuplicateGuard::default()
        },
        ..KitchenConfig::default()
    }
}

async fn spawn(db: &TestDatabase, mode: GuardMode) -> TestApp {
    TestApp::spawn_with(db, guard(mode), Duration::from_secs(30)).await
}

/// `POST /v1/tickets` with `body`, a fresh key or `key`, and extra headers.
async fn post(
    app: &TestApp,
    tenant: &TestTenant,
    key: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = app
        .client
        .post(app.url("/v1/tickets"))
        .bearer_auth(&tenant.token)
        .header("content-type", "application/json")
        .header("idempotency-key", key)
        .body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("server answers")
}

/// Whether nothing is recorded under `key` for a create (no waiting: the
/// write has answered).
async fn unused(app: &TestApp, tenant: &TestTenant, key: &str) -> bool {
    let path = format!("/v1/operations/create_ticket/{key}");
    app.get(tenant, &path).await.status() == 404
}

async fn json(response: reqwest::Response) -> Value {
    response.json().await.expect("JSON")
}

async fn rest_warns_by_default_and_says_which_write_came_first(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let first_key = fresh_key();
    let first = app.post_ticket(&acme, Some(&first_key), DISK_FULL).await;
    assert_eq!(first.status(), 201);
    assert!(first.headers().get("possible-duplicate-of").is_none());
    let first = json(first).await;

    let again = app.post_ticket(&acme, Some(&fresh_key()), DISK_FULL).await;
    assert_eq!(again.status(), 201, "warn makes it");
    let header = again.headers()["possible-duplicate-of"]
        .to_str()
        .expect("ASCII")
        .to_owned();
    let id = first["id"].as_str().expect("an id");
    assert_eq!(
        header,
        format!(
            "operation=\"/v1/operations/create_ticket/{first_key}\", \
             resource=\"/v1/tickets/{id}\", created_at=\"{}\"",
            first["created_at"].as_str().expect("a time")
        )
    );
    assert_ne!(json(again).await["id"], first["id"]);
    assert_eq!(app.ticket_count(&acme).await, 2);

    let stats = json(app.get(&acme, "/v1/stats").await).await;
    let rest = &stats["doors"][0];
    assert_eq!(
        (rest["created"].clone(), rest["possible_duplicate"].clone()),
        (json!(1), json!(1)),
        "the flagged write is counted as a likely duplicate (warn made it): {stats}"
    );
}

async fn rest_confirm_refuses_until_a_new_one_is_meant(db: TestDatabase) {
    let app = spawn(&db, GuardMode::Confirm).await;
    let acme = app.tenant("acme").await;
    let first_key = fresh_key();
    let first = json(app.post_ticket(&acme, Some(&first_key), DISK_FULL).await).await;

    let key = fresh_key();
    let refused = app.post_ticket(&acme, Some(&key), DISK_FULL).await;
    assert_eq!(refused.status(), 409);
    assert_eq!(
        refused.headers()["content-type"],
        "application/problem+json"
    );
    let problem = json(refused).await;
    assert_eq!(problem["type"], "/problems/possible-duplicate");
    assert_eq!(
        problem["original_operation"],
        format!("/v1/operations/create_ticket/{first_key}")
    );
    assert_eq!(
        problem["original_resource"],
        format!("/v1/tickets/{}", first["id"].as_str().expect("id"))
    );
    assert_eq!(problem["original_created_at"], first["created_at"]);
    assert!(unused(&app, &acme, &key).await, "key unused");

    // A body value that is no boolean is refused by name, nothing written.
    let body = r#"{"project_id":"ops","title":"Disk full on db-1","confirm_new":"yes"}"#;
    let invalid = post(&app, &acme, &key, body, &[]).await;
    assert_eq!(invalid.status(), 400);
    let invalid = json(invalid).await;
    assert_eq!(invalid["errors"][0]["field"], "confirm_new", "{invalid}");
    let header = post(&app, &acme, &key, DISK_FULL, &[("confirm-new", "maybe")]).await;
    assert_eq!(header.status(), 400);
    assert!(unused(&app, &acme, &key).await, "still unused");

    // `null` is "not sent", as for every optional field: still refused.
    let body = r#"{"project_id":"ops","title":"Disk full on db-1","confirm_new":null}"#;
    let null = post(&app, &acme, &key, body, &[]).await;
    assert_eq!(null.status(), 409);

    // The same key, meaning it: made. In the body, or as a header.
    let body = r#"{"project_id":"ops","title":"Disk full on db-1","confirm_new":true}"#;
    let made = post(&app, &acme, &key, body, &[]).await;
    assert_eq!(made.status(), 201);
    assert!(made.headers().get("possible-duplicate-of").is_none());
    let header_key = fresh_key();
    let by_header = post(
        &app,
        &acme,
        &header_key,
        DISK_FULL,
        &[("confirm-new", "true")],
    )
    .await;
    assert_eq!(by_header.status(), 201);

    // confirm_new changes nothing about a replay or a conflict.
    let replay = post(&app, &acme, &key, DISK_FULL, &[]).await;
    assert_eq!(replay.status(), 201);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    let other = r#"{"project_id":"ops","title":"Other","confirm_new":true}"#;
    let conflict = post(&app, &acme, &key, other, &[]).await;
    assert_eq!(conflict.status(), 422);
    assert_eq!(
        json(conflict).await["type"],
        "/problems/idempotency-key-reused"
    );
    assert_eq!(app.ticket_count(&acme).await, 3);
}

async fn mcp_warns_then_confirm_refuses_pointing_at_the_rest_write(db: TestDatabase) {
    let app = spawn(&db, GuardMode::Warn).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    // One namespace per action: the REST create is what the tool's retry
    // under a new operation_id duplicates.
    let rest_key = fresh_key();
    let rest = json(app.post_ticket(&acme, Some(&rest_key), DISK_FULL).await).await;
    let warned = create(&client, &fresh_key(), "Disk full on db-1").await;
    assert_ne!(warned.is_error, Some(true));
    let said = content(&warned);
    assert_eq!(said["status"], "created");
    let warned_ticket = said["ticket"]["id"].clone();
    assert_eq!(
        said["possible_duplicate_of"]["operation_id"],
        rest_key.as_str()
    );
    assert_eq!(said["possible_duplicate_of"]["ticket_id"], rest["id"]);
    assert_eq!(
        said["possible_duplicate_of"]["created_at"],
        rest["created_at"]
    );
    let next_step = said["next_step"].as_str().expect("text");
    assert!(
        next_step.contains("a second ticket now exists") && next_step.contains(&rest_key),
        "{next_step}"
    );

    let acme_name = kitchen::TenantName::parse("acme").expect("a name");
    app.kitchen
        .set_duplicate_guard(&acme_name, Some(GuardMode::Confirm))
        .await
        .expect("this tenant confirms");
    // (This instance forgets its cached modes at once; others within
    // AUTH_CACHE_MS.)
    let key = fresh_key();
    let refused = create(&client, &key, "Disk full on db-1").await;
    assert_eq!(refused.is_error, Some(true));
    let said = content(&refused);
    assert_eq!(said["status"], "possible_duplicate");
    assert_eq!(
        said["possible_duplicate_of"]["ticket_id"], warned_ticket,
        "the newest earlier write"
    );
    assert!(said.get("ticket").is_none_or(Value::is_null), "{said}");

    let invalid = call(
        &client,
        "create_ticket",
        json!({"operation_id": key, "project_id": "ops", "title": "Disk full on db-1", "confirm_new": "yes"}),
    )
    .await;
    let said = content(&invalid);
    assert_eq!(said["status"], "invalid");
    assert_eq!(said["errors"][0]["field"], "confirm_new", "{said}");

    let meant = call(
        &client,
        "create_ticket",
        json!({"operation_id": key, "project_id": "ops", "title": "Disk full on db-1", "confirm_new": true}),
    )
    .await;
    let said = content(&meant);
    assert_eq!(said["status"], "created", "{said}");
    assert!(said.get("possible_duplicate_of").is_none_or(Value::is_null));
    assert_eq!(app.ticket_count(&acme).await, 3);
}

async fn mcp_add_comment_meets_the_guard_too(db: TestDatabase) {
    let app = spawn(&db, GuardMode::Confirm).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let ticket = content(&create(&client, &fresh_key(), "Disk full on db-1").await);
    let id = ticket["ticket"]["id"].as_str().expect("id").to_owned();
    let comment = |key: String, confirm: Option<bool>| {
        let mut arguments = json!({"operation_id": key, "ticket_id": id, "body": "Rebooted"});
        if let Some(confirm) = confirm {
            arguments["confirm_new"] = confirm.into();
        }
        call(&client, "add_comment", arguments)
    };
    let first = content(&comment(fresh_key(), None).await);
    assert_eq!(first["status"], "created", "{first}");
    let again = comment(fresh_key(), None).await;
    assert_eq!(again.is_error, Some(true));
    let said = content(&again);
    assert_eq!(said["status"], "possible_duplicate");
    assert_eq!(
        said["possible_duplicate_of"]["comment_id"],
        first["comment"]["id"]
    );
    let meant = content(&comment(fresh_key(), Some(true)).await);
    assert_eq!(meant["status"], "created");
}

/// Six fresh-key creates of one ticket at once, spread over two instances
/// on one PostgreSQL database: one ticket, five refusals pointing at it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_in_confirm_a_race_over_two_instances_makes_one_ticket() {
    let db = TestDatabase::postgres().await;
    let a = spawn(&db, GuardMode::Confirm).await;
    let b = spawn(&db, GuardMode::Confirm).await;
    let acme = a.tenant("acme").await;
    let sends = (0..6).map(|i| {
        let app = if i % 2 == 0 { &a } else { &b };
        let key = fresh_key();
        let acme = &acme;
        async move { app.post_ticket(acme, Some(&key), DISK_FULL).await }
    });
    let answers = futures::future::join_all(sends).await;
    let mut statuses: Vec<u16> = answers.iter().map(|r| r.status().as_u16()).collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [201, 409, 409, 409, 409, 409]);
    let mut made = None;
    let mut pointed = Vec::new();
    for answer in answers {
        let status = answer.status();
        let body = json(answer).await;
        if status == 201 {
            made = Some(format!("/v1/tickets/{}", body["id"].as_str().expect("id")));
        } else {
            pointed.push(body["original_resource"].clone());
        }
    }
    let made = made.expect("one made");
    assert!(pointed.iter().all(|p| *p == made.as_str()), "{pointed:?}");
    assert_eq!(a.ticket_count(&acme).await, 1);
}

kitchen::on_both_databases!(
    rest_warns_by_default_and_says_which_write_came_first,
    rest_confirm_refuses_until_a_new_one_is_meant,
    mcp_warns_then_confirm_refuses_pointing_at_the_rest_write,
    mcp_add_comment_meets_the_guard_too,
);
