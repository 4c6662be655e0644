//! Conditional writes, one rule on both doors: every change to an existing
//! ticket (PATCH, a transition, a comment) may name the version it expects,
//! REST `If-Match` or MCP `expected_version`. Another version is `412
//! version-mismatch` (MCP `version_mismatch`) and writes nothing; a
//! malformed `If-Match` is `400`; none means any version. The other
//! precondition headers are refused on every write with a `400` that names
//! them, never ignored.

use e2e_tests::{TestApp, TestTenant};
use kitchen::testing::TestDatabase;
use serde_json::{Value, json};

use crate::mcp_support::{Protocol, call, connect, content};
use crate::rest_lifecycle::{Answer, create, patch};
use crate::{DISK_FULL, fresh_key};

/// The two writes that were unconditional before: where they are posted,
/// a body, and the status a success answers.
const WRITES: [(&str, &str, u16); 2] = [
    ("transitions", r#"{"to":"in_progress"}"#, 200),
    ("comments", r#"{"body":"Freed 20 GB."}"#, 201),
];

/// `POST /v1/tickets/{id}/{what}` with the key and `headers`.
async fn post_with(
    app: &TestApp,
    tenant: &TestTenant,
    path: &str,
    key: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut request = app
        .client
        .post(app.url(path))
        .bearer_auth(&tenant.token)
        .header("content-type", "application/json")
        .header("idempotency-key", key)
        .body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    Answer::of(request.send().await.expect("server answers")).await
}

/// The ticket as a GET shows it now.
async fn ticket(app: &TestApp, tenant: &TestTenant, id: &str) -> Value {
    let got = app
        .client
        .get(app.url(&format!("/v1/tickets/{id}")))
        .bearer_auth(&tenant.token)
        .send()
        .await
        .expect("server answers");
    assert_eq!(got.status(), 200);
    got.json().await.expect("json")
}

/// How many comments the ticket has, read from the server.
async fn comment_count(app: &TestApp, tenant: &TestTenant, id: &str) -> usize {
    let listed: Value = app
        .client
        .get(app.url(&format!("/v1/tickets/{id}/comments")))
        .bearer_auth(&tenant.token)
        .send()
        .await
        .expect("server answers")
        .json()
        .await
        .expect("json");
    listed["comments"].as_array().map_or(0, Vec::len)
}

/// Whether `key` of `action` is unused: its status resource is not found.
async fn unused(app: &TestApp, tenant: &TestTenant, action: &str, key: &str) -> bool {
    let got = app
        .client
        .get(app.url(&format!("/v1/operations/{action}/{key}")))
        .bearer_auth(&tenant.token)
        .send()
        .await
        .expect("server answers");
    got.status() == 404
}

/// A ticket moved on to version 2 by someone else's edit: its id.
async fn changed_once(app: &TestApp, tenant: &TestTenant) -> String {
    let id = create(app, tenant).await;
    let edited = patch(app, tenant, &id, &fresh_key(), None, r#"{"title":"B"}"#).await;
    assert_eq!(edited.status, 200);
    assert_eq!(edited.header("etag"), Some("\"2\""));
    id
}

fn action_of(what: &str) -> &'static str {
    if what == "transitions" {
        "transition_ticket"
    } else {
        "add_comment"
    }
}

async fn if_match_is_evaluated_on_transitions_and_comments(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    for (what, body, success) in WRITES {
        let id = changed_once(&app, &acme).await;
        let path = format!("/v1/tickets/{id}/{what}");
        let key = fresh_key();

        // A stale version: 412 with both versions, nothing written, the
        // key unused.
        for stale in ["\"1\"", "\"999\""] {
            let answer = post_with(&app, &acme, &path, &key, &[("if-match", stale)], body).await;
            let problem = answer.problem(412, "version-mismatch");
            assert_eq!(problem["current_version"], 2, "{what}");
            assert_eq!(
                problem["expected_version"],
                stale.trim_matches('"').parse::<i64>().expect("a number")
            );
        }
        // Garbage: 400, as on PATCH.
        for garbage in ["garbage", "W/\"2\"", "\"2\", \"3\""] {
            let answer = post_with(&app, &acme, &path, &key, &[("if-match", garbage)], body).await;
            let problem = answer.problem(400, "bad-request");
            let detail = problem["detail"].as_str().expect("a detail");
            assert!(detail.contains("If-Match"), "{detail}");
        }
        assert!(unused(&app, &acme, action_of(what), &key).await, "{what}");
        let now = ticket(&app, &acme, &id).await;
        assert_eq!(
            (now["version"].as_i64(), now["status"].as_str()),
            (Some(2), Some("open"))
        );
        assert_eq!(comment_count(&app, &acme, &id).await, 0, "{what}");

        // The right version, with the same key: done.
        let done = post_with(&app, &acme, &path, &key, &[("if-match", "\"2\"")], body).await;
        assert_eq!(done.status, success, "{what}");
        assert!(!done.replayed());
        // The same retry after success replays, although a transition's
        // own effect moved the ticket past the version it names.
        let again = post_with(&app, &acme, &path, &key, &[("if-match", "\"2\"")], body).await;
        assert_eq!(again.status, success, "{what}");
        assert!(again.replayed(), "{what}");
        assert_eq!(again.body, done.body, "{what}");
        // The same key without the condition is another request.
        let other = post_with(&app, &acme, &path, &key, &[], body).await;
        other.problem(422, "idempotency-key-reused");
        // `*` and no header mean any version.
        let any = post_with(&app, &acme, &path, &fresh_key(), &[("if-match", "*")], body).await;
        if what == "comments" {
            assert_eq!(any.status, 201);
        } else {
            // Moved once already: in_progress → in_progress is no move,
            // refused by the status machine, not by a version.
            any.problem(409, "transition-not-allowed");
        }
    }
}

async fn other_preconditions_are_refused_on_every_write(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let id = create(&app, &acme).await;
    let writes = [
        ("POST", "/v1/tickets".to_owned(), DISK_FULL, "create_ticket"),
        (
            "PATCH",
            format!("/v1/tickets/{id}"),
            r#"{"title":"B"}"#,
            "update_ticket",
        ),
        (
            "POST",
            format!("/v1/tickets/{id}/transitions"),
            WRITES[0].1,
            "transition_ticket",
        ),
        (
            "POST",
            format!("/v1/tickets/{id}/comments"),
            WRITES[1].1,
            "add_comment",
        ),
    ];
    let refused = [
        ("if-none-match", "*"),
        ("if-none-match", "\"1\""),
        ("if-unmodified-since", "Wed, 02 Dec 2026 10:00:00 GMT"),
    ];
    for (method, path, body, action) in &writes {
        for (name, value) in refused {
            let key = fresh_key();
            let request = app
                .client
                .request(method.parse().expect("a method"), app.url(path))
                .bearer_auth(&acme.token)
                .header("content-type", "application/json")
                .header("idempotency-key", &key)
                .header(name, value)
                .body(body.to_owned());
            let answer = Answer::of(request.send().await.expect("server answers")).await;
            let problem = answer.problem(400, "bad-request");
            let detail = problem["detail"].as_str().expect("a detail");
            let spelled = if name == "if-none-match" {
                "If-None-Match"
            } else {
                "If-Unmodified-Since"
            };
            assert!(detail.starts_with(spelled), "{method} {path}: {detail}");
            assert!(detail.contains("not used up"), "{detail}");
            assert!(unused(&app, &acme, action, &key).await, "{method} {path}");
        }
    }
    // A create has no version to match.
    let key = fresh_key();
    let answer = post_with(
        &app,
        &acme,
        "/v1/tickets",
        &key,
        &[("if-match", "\"1\"")],
        DISK_FULL,
    )
    .await;
    let detail = answer.problem(400, "bad-request")["detail"]
        .as_str()
        .expect("a detail")
        .to_owned();
    assert!(detail.starts_with("If-Match"), "{detail}");
    assert!(unused(&app, &acme, "create_ticket", &key).await);
    // Nothing was written by any of them.
    let now = ticket(&app, &acme, &id).await;
    assert_eq!(
        (now["version"].as_i64(), now["status"].as_str()),
        (Some(1), Some("open"))
    );
    assert_eq!(comment_count(&app, &acme, &id).await, 0);
    assert_eq!(app.ticket_count(&acme).await, 1);
}

async fn expected_version_works_on_both_mcp_tools(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let tools = [
        ("transition_ticket", json!({"to": "in_progress"}), "updated"),
        ("add_comment", json!({"body": "Freed 20 GB."}), "created"),
    ];
    for (tool, arguments, done) in tools {
        let id = changed_once(&app, &acme).await;
        let key = fresh_key();
        let with = |version: Value| {
            let mut args = arguments.clone();
            args["ticket_id"] = id.clone().into();
            args["operation_id"] = key.clone().into();
            args["expected_version"] = version;
            args
        };
        let stale = call(&client, tool, with(1.into())).await;
        assert_eq!(stale.is_error, Some(true), "{tool}");
        let stale = content(&stale);
        assert_eq!(stale["status"], "version_mismatch", "{tool}: {stale}");
        assert_eq!(stale["current_version"], 2, "{tool}");
        assert!(unused(&app, &acme, tool, &key).await, "{tool}");

        let wrong = content(&call(&client, tool, with(0.into())).await);
        assert_eq!(wrong["status"], "invalid", "{tool}: {wrong}");
        assert_eq!(wrong["errors"][0]["field"], "expected_version", "{tool}");

        let first = call(&client, tool, with(2.into())).await;
        assert_eq!(first.is_error, Some(false), "{tool}");
        assert_eq!(content(&first)["status"], done, "{tool}");
        let again = content(&call(&client, tool, with(2.into())).await);
        assert_eq!(again["status"], "replayed", "{tool}: {again}");
        let mut unconditional = with(Value::Null);
        unconditional
            .as_object_mut()
            .expect("an object")
            .remove("expected_version");
        let other = content(&call(&client, tool, unconditional).await);
        assert_eq!(other["status"], "conflict", "{tool}: {other}");

        // One meaning on both doors: the REST retry of the MCP call, with
        // If-Match naming the same version, replays it.
        let (path, body) = if tool == "transition_ticket" {
            (format!("/v1/tickets/{id}/transitions"), WRITES[0].1)
        } else {
            (format!("/v1/tickets/{id}/comments"), WRITES[1].1)
        };
        let rest = post_with(&app, &acme, &path, &key, &[("if-match", "\"2\"")], body).await;
        assert!(rest.replayed(), "{tool}: {}", rest.status);
    }
}

kitchen::on_both_databases!(
    if_match_is_evaluated_on_transitions_and_comments,
    other_preconditions_are_refused_on_every_write,
    expected_version_works_on_both_mcp_tools,
);
