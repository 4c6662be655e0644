//! Every bad input is answered with the right status and a problem body,
//! and writes nothing: afterwards the tenant has no ticket and the key has
//! no record.

use e2e_tests::{TestApp, TestTenant, snapshot_settings};
use kitchen::testing::TestDatabase;

use crate::{DISK_FULL, fresh_key};

/// Asserts that `key` left no trace.
async fn nothing_written(app: &TestApp, tenant: &TestTenant, key: &str) {
    assert_eq!(app.ticket_count(tenant).await, 0, "no ticket was created");
    let op = app
        .get(tenant, &format!("/v1/operations/create_ticket/{key}"))
        .await;
    assert_eq!(op.status(), 404, "the key was not consumed");
}

async fn expect_problem(
    response: reqwest::Response,
    status: u16,
    type_slug: &str,
) -> serde_json::Value {
    assert_eq!(response.status(), status);
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    let problem: serde_json::Value = response.json().await.expect("problem JSON");
    assert_eq!(problem["type"], format!("/problems/{type_slug}"));
    assert_eq!(problem["status"], status);
    problem
}

async fn bad_requests_are_refused_and_write_nothing(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    let post = |body: &'static str, content_type: &'static str, key: Option<String>| {
        let mut request = app
            .client
            .post(app.url("/v1/tickets"))
            .bearer_auth(&acme.token)
            .header("content-type", content_type)
            .body(body);
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        request.send()
    };
    let json = "application/json";
    let cases: Vec<(&str, reqwest::Response, u16, &str)> = vec![
        (
            "problem_key_missing",
            post(DISK_FULL, json, None).await.expect("answer"),
            400,
            "idempotency-key-missing",
        ),
        (
            "problem_key_malformed",
            post(DISK_FULL, json, Some("short".into()))
                .await
                .expect("answer"),
            400,
            "idempotency-key-malformed",
        ),
        (
            "problem_key_badly_quoted",
            post(DISK_FULL, json, Some("\"unterminated-key".into()))
                .await
                .expect("answer"),
            400,
            "idempotency-key-malformed",
        ),
        (
            "problem_validation",
            post(
                r#"{"project_id":"Ops Team","title":"  ","priority":"asap"}"#,
                json,
                Some(key.clone()),
            )
            .await
            .expect("answer"),
            400,
            "validation-failed",
        ),
        (
            "problem_missing_fields",
            post("{}", json, Some(key.clone())).await.expect("answer"),
            400,
            "validation-failed",
        ),
        (
            "problem_malformed_json",
            post(r#"{"project_id":"ops","#, json, Some(key.clone()))
                .await
                .expect("answer"),
            400,
            "malformed-json",
        ),
        (
            "problem_unknown_field",
            post(
                r#"{"project_id":"ops","title":"t","tenant_id":"globex"}"#,
                json,
                Some(key.clone()),
            )
            .await
            .expect("answer"),
            400,
            "invalid-body",
        ),
        (
            "problem_wrong_type",
            post(r#"{"project_id":"ops","title":7}"#, json, Some(key.clone()))
                .await
                .expect("answer"),
            400,
            "invalid-body",
        ),
        (
            "problem_media_type",
            post(DISK_FULL, "text/plain", Some(key.clone()))
                .await
                .expect("answer"),
            415,
            "unsupported-media-type",
        ),
    ];
    for (name, response, status, slug) in cases {
        let problem = expect_problem(response, status, slug).await;
        snapshot_settings().bind(|| insta::assert_json_snapshot!(name, problem));
    }
    nothing_written(&app, &acme, &key).await;
}

async fn an_oversized_body_is_413_and_writes_nothing(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    let big = format!(
        r#"{{"project_id":"ops","title":"t","description":"{}"}}"#,
        "x".repeat(70_000)
    );
    let response = app.post_ticket(&acme, Some(&key), &big).await;
    let problem = expect_problem(response, 413, "payload-too-large").await;
    snapshot_settings().bind(|| insta::assert_json_snapshot!("problem_too_large", problem));
    nothing_written(&app, &acme, &key).await;
}

async fn a_description_over_the_limit_is_a_field_error(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    let long = format!(
        r#"{{"project_id":"ops","title":"t","description":"{}"}}"#,
        "x".repeat(10_001)
    );
    let problem = expect_problem(
        app.post_ticket(&acme, Some(&key), &long).await,
        400,
        "validation-failed",
    )
    .await;
    assert_eq!(problem["errors"][0]["field"], "description");
    nothing_written(&app, &acme, &key).await;
    // The same key with corrected input now creates.
    assert_eq!(
        app.post_ticket(&acme, Some(&key), DISK_FULL).await.status(),
        201
    );
}

async fn missing_or_wrong_credentials_are_401(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    let anonymous = app
        .client
        .post(app.url("/v1/tickets"))
        .header("idempotency-key", &key)
        .header("content-type", "application/json")
        .body(DISK_FULL)
        .send()
        .await
        .expect("answer");
    assert_eq!(
        anonymous.headers()["www-authenticate"],
        r#"Bearer realm="tickets", error_description="send Authorization: Bearer <token> (a static token from tickets token issue)""#
    );
    let problem = expect_problem(anonymous, 401, "unauthorized").await;
    snapshot_settings().bind(|| insta::assert_json_snapshot!("problem_unauthorized", problem));

    let impostor = TestTenant {
        id: acme.id,
        token: "tkt_0000".into(),
    };
    let wrong = app.post_ticket(&impostor, Some(&key), DISK_FULL).await;
    assert_eq!(
        wrong.headers()["www-authenticate"],
        r#"Bearer realm="tickets", error="invalid_token", error_description="the bearer token is unknown or revoked""#
    );
    expect_problem(wrong, 401, "unauthorized").await;
    nothing_written(&app, &acme, &key).await;
}

async fn unknown_addresses_and_methods_are_problems(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let missing_ticket = app
        .get(&acme, &format!("/v1/tickets/{}", uuid::Uuid::now_v7()))
        .await;
    let problem = expect_problem(missing_ticket, 404, "not-found").await;
    snapshot_settings().bind(|| insta::assert_json_snapshot!("problem_not_found", problem));
    expect_problem(
        app.get(&acme, "/v1/tickets/not-a-uuid").await,
        404,
        "not-found",
    )
    .await;
    expect_problem(app.get(&acme, "/nowhere").await, 404, "not-found").await;

    let no_op = app
        .get(&acme, "/v1/operations/create_ticket/never-used-key")
        .await;
    let problem = expect_problem(no_op, 404, "operation-not-found").await;
    snapshot_settings()
        .bind(|| insta::assert_json_snapshot!("problem_operation_not_found", problem));
    // A key that cannot exist is not "nothing recorded, retry": a create
    // with it would be refused.
    let impossible = app.get(&acme, "/v1/operations/create_ticket/x").await;
    let problem = expect_problem(impossible, 400, "idempotency-key-malformed").await;
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("Nothing can have been recorded")),
        "{problem}"
    );

    let delete = app
        .client
        .delete(app.url("/healthz"))
        .send()
        .await
        .expect("answer");
    let problem = expect_problem(delete, 405, "method-not-allowed").await;
    snapshot_settings()
        .bind(|| insta::assert_json_snapshot!("problem_method_not_allowed", problem));

    // Every problem type URI dereferences to its description.
    let described: serde_json::Value = app.public_json("/problems/idempotency-key-reused").await;
    assert_eq!(described["status"], 422);
}

/// A 404 names what was looked for, but never echoes a huge "id" whole.
async fn a_not_found_echoes_a_bounded_id(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let huge = "x".repeat(60 * 1024);
    let response = app.get(&acme, &format!("/v1/tickets/{huge}")).await;
    assert_eq!(response.status(), 404);
    let body = response.text().await.expect("a body");
    assert!(body.len() < 1024, "{} bytes", body.len());
    assert!(body.contains(&"x".repeat(80)), "{body}");
    assert!(body.contains("more characters"), "{body}");
}

kitchen::on_both_databases!(
    a_not_found_echoes_a_bounded_id,
    bad_requests_are_refused_and_write_nothing,
    an_oversized_body_is_413_and_writes_nothing,
    a_description_over_the_limit_is_a_field_error,
    missing_or_wrong_credentials_are_401,
    unknown_addresses_and_methods_are_problems,
);

/// A body trickled past the request timeout never reached a handler: a
/// `408 body-timeout` saying nothing was done, not the `503 timeout` of a
/// request that ran too long (which may have written).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_never_arrives_is_a_408_that_did_nothing() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let db = TestDatabase::sqlite();
    let app = TestApp::spawn_with(
        &db,
        kitchen::KitchenConfig::default(),
        std::time::Duration::from_millis(500),
    )
    .await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    let address = app.address.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&address)
        .await
        .expect("connect");
    let head = format!(
        "POST /v1/tickets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\
         Idempotency-Key: {key}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n\
         {{\"project_id\":",
        acme.token
    );
    stream.write_all(head.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_to_end(&mut answer),
    )
    .await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("/problems/body-timeout"), "{answer}");
    assert!(answer.contains("nothing was done"), "{answer}");
    nothing_written(&app, &acme, &key).await;
}
