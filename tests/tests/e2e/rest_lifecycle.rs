//! The ticket lifecycle over REST: `PATCH` with `If-Match` and `ETag`,
//! transitions, comments, history, and the status lookup of every action.
//! Every write replays byte for byte, refusals write nothing and leave the
//! key unused, and another tenant's ticket is simply not found.

use e2e_tests::{TestApp, TestTenant, snapshot_settings};
use kitchen::testing::{TestDatabase, tenant_with_token};
use serde_json::Value;

use crate::{DISK_FULL, fresh_key};

const MERGE_PATCH: &str = "application/merge-patch+json";

/// A write's answer, read whole.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    pub(crate) async fn of(response: reqwest::Response) -> Self {
        Self {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: response.bytes().await.expect("a body").to_vec(),
        }
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().expect("ASCII"))
    }

    pub(crate) fn replayed(&self) -> bool {
        self.header("idempotent-replayed") == Some("true")
    }

    /// Asserts a problem document of `status` and `slug`; answers it.
    pub(crate) fn problem(&self, status: u16, slug: &str) -> Value {
        assert_eq!(
            self.status,
            status,
            "{}",
            String::from_utf8_lossy(&self.body)
        );
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json")
        );
        let problem = self.json();
        assert_eq!(problem["type"], format!("/problems/{slug}"));
        assert_eq!(problem["status"], status);
        problem
    }
}

/// A ticket of `tenant`; its id.
pub(crate) async fn create(app: &TestApp, tenant: &TestTenant) -> String {
    let created = Answer::of(app.post_ticket(tenant, Some(&fresh_key()), DISK_FULL).await).await;
    assert_eq!(created.status, 201);
    created.json()["id"].as_str().expect("an id").to_owned()
}

/// `PATCH /v1/tickets/{id}` as `content_type`, with the key and `If-Match`
/// if given.
async fn patch_as(
    app: &TestApp,
    tenant: &TestTenant,
    id: &str,
    key: Option<&str>,
    if_match: Option<&str>,
    content_type: &str,
    body: &str,
) -> Answer {
    let mut request = app
        .client
        .patch(app.url(&format!("/v1/tickets/{id}")))
        .bearer_auth(&tenant.token)
        .header("content-type", content_type)
        .body(body.to_owned());
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    if let Some(tag) = if_match {
        request = request.header("if-match", tag);
    }
    Answer::of(request.send().await.expect("server answers")).await
}

/// `PATCH /v1/tickets/{id}` as a merge patch.
pub(crate) async fn patch(
    app: &TestApp,
    tenant: &TestTenant,
    id: &str,
    key: &str,
    if_match: Option<&str>,
    body: &str,
) -> Answer {
    patch_as(app, tenant, id, Some(key), if_match, MERGE_PATCH, body).await
}

/// `POST path` with a JSON body and the key.
async fn post(app: &TestApp, tenant: &TestTenant, path: &str, key: &str, body: &str) -> Answer {
    let request = app
        .client
        .post(app.url(path))
        .bearer_auth(&tenant.token)
        .header("content-type", "application/json")
        .header("idempotency-key", key)
        .body(body.to_owned());
    Answer::of(request.send().await.expect("server answers")).await
}

pub(crate) async fn transition(
    app: &TestApp,
    tenant: &TestTenant,
    id: &str,
    key: &str,
    body: &str,
) -> Answer {
    post(
        app,
        tenant,
        &format!("/v1/tickets/{id}/transitions"),
        key,
        body,
    )
    .await
}

pub(crate) async fn comment(
    app: &TestApp,
    tenant: &TestTenant,
    id: &str,
    key: &str,
    body: &str,
) -> Answer {
    post(
        app,
        tenant,
        &format!("/v1/tickets/{id}/comments"),
        key,
        body,
    )
    .await
}

pub(crate) async fn get(app: &TestApp, tenant: &TestTenant, path: &str) -> Answer {
    Answer::of(app.get(tenant, path).await).await
}

/// Asserts nothing was recorded under `key` for `action`: the key is unused.
async fn key_unused(app: &TestApp, tenant: &TestTenant, action: &str, key: &str) {
    let lookup = get(app, tenant, &format!("/v1/operations/{action}/{key}")).await;
    assert_eq!(lookup.status, 404, "the {action} key {key} was not used");
}

/// Every history entry of a ticket, oldest first.
pub(crate) async fn history(app: &TestApp, tenant: &TestTenant, id: &str) -> Vec<Value> {
    let page = get(app, tenant, &format!("/v1/tickets/{id}/history?limit=200")).await;
    assert_eq!(page.status, 200);
    page.json()["entries"].as_array().expect("entries").clone()
}

async fn an_update_replays_its_first_answer_even_after_later_changes(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let id = create(&app, &acme).await;
    let path = format!("/v1/tickets/{id}");
    assert_eq!(get(&app, &acme, &path).await.header("etag"), Some("\"1\""));

    let key = fresh_key();
    let change = r#"{"title":"Disk full on db-1 and db-2","assignee":"Ada"}"#;
    let first = patch(&app, &acme, &id, &key, Some("\"1\""), change).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("etag"), Some("\"2\""));
    assert!(!first.replayed());
    assert_eq!(first.header("content-type"), Some("application/json"));
    let ticket = first.json();
    assert_eq!(ticket["version"], 2);
    assert_eq!(ticket["assignee"], "Ada");
    assert!(ticket["updated_at"].is_string());
    snapshot_settings().bind(|| insta::assert_json_snapshot!("ticket_updated", ticket));

    // Someone changes it again, over plain application/json.
    let later = patch_as(
        &app,
        &acme,
        &id,
        Some(&fresh_key()),
        None,
        "application/json",
        r#"{"priority":"high"}"#,
    )
    .await;
    assert_eq!(later.status, 200);
    assert_eq!(later.header("etag"), Some("\"3\""));

    // The retry of the first change gets the first answer: its bytes and
    // its ETag, not the ticket as it is now, and changes nothing.
    let again = patch(&app, &acme, &id, &key, Some("\"1\""), change).await;
    assert_eq!(again.status, 200);
    assert!(again.replayed());
    assert_eq!(again.header("etag"), Some("\"2\""));
    assert_eq!(again.body, first.body, "byte-identical replay");

    let now = get(&app, &acme, &path).await;
    assert_eq!(now.header("etag"), Some("\"3\""));
    assert_eq!(
        now.body, later.body,
        "GET shows what the last write answered"
    );
    assert_eq!(
        history(&app, &acme, &id).await.len(),
        3,
        "create + two updates"
    );
}

async fn a_patch_that_changes_nothing_still_uses_its_key(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let id = create(&app, &acme).await;
    let key = fresh_key();
    let first = patch(&app, &acme, &id, &key, None, "{}").await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("etag"), Some("\"1\""), "no new version");
    let again = patch(&app, &acme, &id, &key, None, "{}").await;
    assert!(again.replayed());
    assert_eq!(again.body, first.body);
    let lookup = get(&app, &acme, &format!("/v1/operations/update_ticket/{key}")).await;
    assert_eq!(lookup.status, 200);
    assert_eq!(lookup.json()["state"], "succeeded");
    assert_eq!(
        history(&app, &acme, &id).await.len(),
        1,
        "only the creation"
    );
}

async fn a_key_reused_with_another_command_is_a_conflict(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let id = create(&app, &acme).await;
    let other = create(&app, &acme).await;
    let key = fresh_key();
    assert_eq!(
        patch(&app, &acme, &id, &key, None, r#"{"title":"A"}"#)
            .await
            .status,
        200
    );

    let reworded = patch(&app, &acme, &id, &key, None, r#"{"title":"B"}"#).await;
    let problem = reworded.problem(422, "idempotency-key-reused");
    let link = format!("/v1/operations/update_ticket/{key}");
    assert_eq!(
        reworded.header("link"),
        Some(format!("<{link}>; rel=\"original\"").as_str())
    );
    assert_eq!(problem["original_operation"], link);
    assert_eq!(problem["original_resource"], format!("/v1/tickets/{id}"));
    snapshot_settings().bind(|| insta::assert_json_snapshot!("problem_update_key_reused", problem));

    // The same patch on another ticket is another command too.
    let elsewhere = patch(&app, &acme, &other, &key, None, r#"{"title":"A"}"#).await;
    elsewhere.problem(422, "idempotency-key-reused");
    let untouched = get(&app, &acme, &format!("/v1/tickets/{other}")).await;
    assert_eq!(untouched.json()["version"], 1, "nothing written");

    // Keys are scoped by action: the same key names a move independently.
    let moved = transition(&app, &acme, &id, &key, r#"{"to":"in_progress"}"#).await;
    assert_eq!(moved.status, 200);
    assert!(!moved.replayed());
}

async fn another_tenants_ticket_is_not_found_and_nothing_is_revealed(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let globex = app.tenant("globex").await;
    let id = create(&app, &acme).await;
    let ticket = format!("/v1/tickets/{id}");
    let read = get(&app, &globex, &ticket).await;
    let expected = read.problem(404, "not-found");

    let key = fresh_key();
    let writes = [
        (
            "update_ticket",
            patch(
                &app,
                &globex,
                &id,
                &key,
                Some("\"1\""),
                r#"{"title":"Mine now"}"#,
            )
            .await,
        ),
        (
            "transition_ticket",
            transition(&app, &globex, &id, &key, r#"{"to":"in_progress"}"#).await,
        ),
        (
            "add_comment",
            comment(&app, &globex, &id, &key, r#"{"body":"hello"}"#).await,
        ),
    ];
    for (action, answer) in &writes {
        let problem = answer.problem(404, "not-found");
        assert_eq!(problem, expected, "{action} answers as a GET does");
        key_unused(&app, &globex, action, &key).await;
    }
    for read in ["comments", "history"] {
        let problem = get(&app, &globex, &format!("{ticket}/{read}"))
            .await
            .problem(404, "not-found");
        assert_eq!(problem, expected, "{read} answers as a GET does");
    }

    // A path that is no ticket id answers exactly as an unknown id.
    let nonsense = get(&app, &globex, "/v1/tickets/not-a-ticket")
        .await
        .problem(404, "not-found");
    let written = patch(&app, &globex, "not-a-ticket", &key, None, "{}")
        .await
        .problem(404, "not-found");
    assert_eq!(written, nonsense);
    key_unused(&app, &globex, "update_ticket", &key).await;

    let mine = get(&app, &acme, &ticket).await;
    assert_eq!(
        mine.header("etag"),
        Some("\"1\""),
        "acme's ticket is untouched"
    );
    assert_eq!(history(&app, &acme, &id).await.len(), 1);
}

async fn a_stale_if_match_is_412_and_writes_nothing(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let id = create(&app, &acme).await;
    let first = patch(
        &app,
        &acme,
        &id,
        &fresh_key(),
        Some("\"1\""),
        r#"{"title":"Mine"}"#,
    )
    .await;
    assert_eq!(first.header("etag"), Some("\"2\""));

    let key = fresh_key();
    let stale = patch(
        &app,
        &acme,
        &id,
        &key,
        Some("\"1\""),
        r#"{"title":"Theirs"}"#,
    )
    .await;
    let problem = stale.problem(412, "version-mismatch");
    assert_eq!(problem["expected_version"], 1);
    assert_eq!(problem["current_version"], 2);
    assert!(stale.header("retry-after").is_none());
    snapshot_settings().bind(|| insta::assert_json_snapshot!("problem_version_mismatch", problem));
    let now = get(&app, &acme, &format!("/v1/tickets/{id}")).await;
    assert_eq!(now.json()["title"], "Mine", "nothing written");
    assert_eq!(now.header("etag"), Some("\"2\""));
    key_unused(&app, &acme, "update_ticket", &key).await;
    assert_eq!(history(&app, &acme, &id).await.len(), 2);

    // Decided again on what it says now: the same key is still free.
    let decided = patch(
        &app,
        &acme,
        &id,
        &key,
        Some("\"2\""),
        r#"{"title":"Theirs"}"#,
    )
    .await;
    assert_eq!(decided.status, 200);
    assert_eq!(decided.header("etag"), Some("\"3\""));
    // `*` is any version.
    let any = patch(
        &app,
        &acme,
        &id,
        &fresh_key(),
        Some("*"),
        r#"{"priority":"low"}"#,
    )
    .await;
    assert_eq!(any.status, 200);

    let key = fresh_key();
    let weak = patch(
        &app,
        &acme,
        &id,
        &key,
        Some("W/\"4\""),
        r#"{"priority":"high"}"#,
    )
    .await;
    let problem = weak.problem(400, "bad-request");
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("If-Match"))
    );
    snapshot_settings()
        .bind(|| insta::assert_json_snapshot!("problem_if_match_malformed", problem));
    key_unused(&app, &acme, "update_ticket", &key).await;
}

async fn of_two_updates_from_one_version_exactly_one_wins(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let id = create(&app, &acme).await;
    let (a, b) = (fresh_key(), fresh_key());
    let (first, second) = tokio::join!(
        patch(&app, &acme, &id, &a, Some("\"1\""), r#"{"title":"A"}"#),
        patch(&app, &acme, &id, &b, Some("\"1\""), r#"{"title":"B"}"#),
    );
    let mut statuses = [first.status, second.status];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 412]);
    let now = get(&app, &acme, &format!("/v1/tickets/{id}")).await;
    assert_eq!(now.header("etag"), Some("\"2\""));
    assert_eq!(history(&app, &acme, &id).await.len(), 2);
}

async fn an_illegal_move_is_409_and_leaves_the_key_free(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let id = create(&app, &acme).await;
    let key = fresh_key();

    let refused = transition(&app, &acme, &id, &key, r#"{"to":"resolved"}"#).await;
    let problem = refused.problem(409, "transition-not-allowed");
    assert_eq!(problem["from"], "open");
    assert_eq!(problem["to"], "resolved");
    assert_eq!(problem["allowed_moves"], serde_json::json!(["in_progress"]));
    assert!(
        refused.header("retry-after").is_none(),
        "waiting does not help, unlike the in-progress 409"
    );
    snapshot_settings()
        .bind(|| insta::assert_json_snapshot!("problem_transition_not_allowed", problem));
    key_unused(&app, &acme, "transition_ticket", &key).await;
    let unchanged = get(&app, &acme, &format!("/v1/tickets/{id}")).await;
    assert_eq!(unchanged.json()["status"], "open");

    // The same key with a legal move.
    let legal = r#"{"to":"in_progress","reason":"picked up"}"#;
    let moved = transition(&app, &acme, &id, &key, legal).await;
    assert_eq!(moved.status, 200);
    assert_eq!(moved.header("etag"), Some("\"2\""));
    let ticket = moved.json();
    assert_eq!(ticket["status"], "in_progress");
    snapshot_settings().bind(|| insta::assert_json_snapshot!("ticket_transitioned", ticket));

    // Moved on since; the retry still answers the first move.
    let on = transition(&app, &acme, &id, &fresh_key(), r#"{"to":"resolved"}"#).await;
    assert_eq!(on.header("etag"), Some("\"3\""));
    let again = transition(&app, &acme, &id, &key, legal).await;
    assert_eq!(again.status, 200);
    assert!(again.replayed());
    assert_eq!(again.header("etag"), Some("\"2\""));
    assert_eq!(again.body, moved.body);

    // Staying put is not a move.
    let stay = transition(&app, &acme, &id, &fresh_key(), r#"{"to":"resolved"}"#).await;
    let problem = stay.problem(409, "transition-not-allowed");
    assert_eq!(
        problem["allowed_moves"],
        serde_json::json!(["closed", "in_progress"])
    );
}

async fn comments_are_added_once_and_listed_oldest_first(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let id = create(&app, &acme).await;

    let key = fresh_key();
    let first = comment(&app, &acme, &id, &key, r#"{"body":"Seen on db-1 too."}"#).await;
    assert_eq!(first.status, 201);
    assert!(!first.replayed());
    let added = first.json();
    let location = first.header("location").expect("a Location").to_owned();
    assert_eq!(
        location,
        format!(
            "/v1/tickets/{id}/comments/{}",
            added["id"].as_str().expect("an id")
        )
    );
    snapshot_settings().bind(|| insta::assert_json_snapshot!("comment_created", added));
    let fetched = get(&app, &acme, &location).await;
    assert_eq!(fetched.status, 200);
    assert_eq!(fetched.body, first.body, "GET shows the same comment");

    let again = comment(&app, &acme, &id, &key, r#"{"body":"Seen on db-1 too."}"#).await;
    assert_eq!(again.status, 201);
    assert!(again.replayed());
    assert_eq!(again.header("location"), Some(location.as_str()));
    assert_eq!(again.body, first.body);

    for body in ["Second.", "Third."] {
        let answer = comment(
            &app,
            &acme,
            &id,
            &fresh_key(),
            &format!(r#"{{"body":"{body}"}}"#),
        )
        .await;
        assert_eq!(answer.status, 201);
    }
    let all = get(&app, &acme, &format!("/v1/tickets/{id}/comments"))
        .await
        .json();
    let bodies: Vec<&str> = all["comments"]
        .as_array()
        .expect("comments")
        .iter()
        .map(|c| c["body"].as_str().expect("a body"))
        .collect();
    assert_eq!(
        bodies,
        ["Seen on db-1 too.", "Second.", "Third."],
        "oldest first, once each"
    );
    snapshot_settings().bind(|| insta::assert_json_snapshot!("comment_list", all));

    let page = get(&app, &acme, &format!("/v1/tickets/{id}/comments?limit=2"))
        .await
        .json();
    assert_eq!(page["comments"].as_array().map(Vec::len), Some(2));
    let cursor = page["next_cursor"].as_str().expect("a second page");
    let rest = get(
        &app,
        &acme,
        &format!("/v1/tickets/{id}/comments?limit=2&cursor={cursor}"),
    )
    .await
    .json();
    assert_eq!(rest["comments"][0]["body"], "Third.");
    assert_eq!(rest["next_cursor"], Value::Null);

    let ticket = get(&app, &acme, &format!("/v1/tickets/{id}")).await;
    assert_eq!(
        ticket.header("etag"),
        Some("\"1\""),
        "a comment is not a new version"
    );
    let unknown = format!("/v1/tickets/{id}/comments/{}", uuid::Uuid::now_v7());
    get(&app, &acme, &unknown).await.problem(404, "not-found");
    get(&app, &acme, &format!("/v1/tickets/{id}/comments/nope"))
        .await
        .problem(404, "not-found");
    let bad_page = get(&app, &acme, &format!("/v1/tickets/{id}/comments?limit=0")).await;
    bad_page.problem(400, "validation-failed");
}

async fn the_history_has_each_change_once_with_who_made_it(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let (tenant, token) = tenant_with_token(&app.kitchen, "acme").await;
    let acme = TestTenant {
        id: tenant.id,
        token: token.secret.clone(),
    };
    let create_key = fresh_key();
    let created = Answer::of(app.post_ticket(&acme, Some(&create_key), DISK_FULL).await).await;
    let id = created.json()["id"].as_str().expect("an id").to_owned();
    let (update_key, move_key, comment_key) = (fresh_key(), fresh_key(), fresh_key());
    let update = r#"{"description":"Since 03:00","priority":"urgent"}"#;
    let mv = r#"{"to":"in_progress","reason":"on it"}"#;
    let note = r#"{"body":"Rotating logs."}"#;
    // Each write twice: the retries add nothing.
    for _ in 0..2 {
        assert!(
            patch(&app, &acme, &id, &update_key, None, update)
                .await
                .status
                == 200
        );
        assert!(transition(&app, &acme, &id, &move_key, mv).await.status == 200);
        assert!(comment(&app, &acme, &id, &comment_key, note).await.status == 201);
        assert!(
            app.post_ticket(&acme, Some(&create_key), DISK_FULL)
                .await
                .status()
                == 201
        );
    }

    let entries = history(&app, &acme, &id).await;
    let seen: Vec<(&str, &str, i64)> = entries
        .iter()
        .map(|e| {
            (
                e["action"].as_str().expect("an action"),
                e["operation_key"].as_str().expect("a key"),
                e["version"].as_i64().expect("a version"),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("create_ticket", create_key.as_str(), 1),
            ("update_ticket", update_key.as_str(), 2),
            ("transition_ticket", move_key.as_str(), 3),
            ("add_comment", comment_key.as_str(), 3),
        ]
    );
    for entry in &entries {
        assert_eq!(
            entry["actor_token_id"],
            token.id.to_string(),
            "the token is recorded"
        );
        assert_eq!(entry["ticket_id"], id.as_str());
    }
    assert_eq!(entries[2]["changes"]["status"]["from"], "open");
    assert_eq!(entries[2]["changes"]["reason"]["to"], "on it");
    snapshot_settings().bind(|| insta::assert_json_snapshot!("history_list", entries));

    let page = get(&app, &acme, &format!("/v1/tickets/{id}/history?limit=3"))
        .await
        .json();
    assert_eq!(page["entries"].as_array().map(Vec::len), Some(3));
    let cursor = page["next_cursor"].as_str().expect("a second page");
    let rest = get(
        &app,
        &acme,
        &format!("/v1/tickets/{id}/history?limit=3&cursor={cursor}"),
    )
    .await
    .json();
    assert_eq!(rest["entries"][0]["action"], "add_comment");
    assert_eq!(rest["next_cursor"], Value::Null);
}

async fn every_action_has_a_status_lookup(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let id = create(&app, &acme).await;
    let (update_key, move_key, comment_key) = (fresh_key(), fresh_key(), fresh_key());
    assert_eq!(
        patch(&app, &acme, &id, &update_key, None, r#"{"assignee":"Ada"}"#)
            .await
            .status,
        200
    );
    assert_eq!(
        transition(&app, &acme, &id, &move_key, r#"{"to":"in_progress"}"#)
            .await
            .status,
        200
    );
    let added = comment(&app, &acme, &id, &comment_key, r#"{"body":"On it."}"#).await;
    let location = added.header("location").expect("a Location").to_owned();

    for (action, key) in [
        ("update_ticket", &update_key),
        ("transition_ticket", &move_key),
    ] {
        let status = get(&app, &acme, &format!("/v1/operations/{action}/{key}")).await;
        assert_eq!(status.status, 200);
        let status = status.json();
        assert_eq!(status["action"], action);
        assert_eq!(status["state"], "succeeded");
        assert_eq!(status["ticket_id"], id.as_str());
        assert!(status.get("comment_location").is_none());
    }
    let status = get(
        &app,
        &acme,
        &format!("/v1/operations/add_comment/{comment_key}"),
    )
    .await;
    let mut status = status.json();
    assert_eq!(status["comment_location"], location.as_str());
    // The fingerprint covers the ticket's id, which is new each run.
    assert!(
        status["fingerprint"]
            .as_str()
            .is_some_and(|f| f.starts_with("v1:"))
    );
    status["fingerprint"] = "[fingerprint]".into();
    snapshot_settings()
        .bind(|| insta::assert_json_snapshot!("operation_status_add_comment", status));

    let never = get(
        &app,
        &acme,
        &format!("/v1/operations/update_ticket/{}", fresh_key()),
    )
    .await;
    let problem = never.problem(404, "operation-not-found");
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("the update did not happen"))
    );

    let unknown = get(
        &app,
        &acme,
        &format!("/v1/operations/delete_ticket/{update_key}"),
    )
    .await;
    let problem = unknown.problem(404, "not-found");
    assert!(
        problem["detail"].as_str().is_some_and(
            |d| d.contains("create_ticket, update_ticket, transition_ticket, add_comment")
        ),
        "names the actions: {problem}"
    );
    snapshot_settings().bind(|| insta::assert_json_snapshot!("problem_unknown_action", problem));
}

async fn bad_writes_are_refused_by_name_and_leave_the_key_free(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let id = create(&app, &acme).await;
    let key = fresh_key();

    let not_an_object = patch(&app, &acme, &id, &key, None, "[]").await;
    not_an_object.problem(400, "invalid-body");
    let unknown = patch(&app, &acme, &id, &key, None, r#"{"status":"closed"}"#).await;
    let problem = unknown.problem(400, "invalid-body");
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("`status`")),
        "{problem}"
    );
    snapshot_settings()
        .bind(|| insta::assert_json_snapshot!("problem_patch_unknown_field", problem));
    let removed = patch(
        &app,
        &acme,
        &id,
        &key,
        None,
        r#"{"title":null,"priority":null}"#,
    )
    .await;
    let problem = removed.problem(400, "validation-failed");
    let codes: Vec<(&str, &str)> = problem["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            (
                e["field"].as_str().unwrap_or_default(),
                e["code"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        codes,
        [("title", "not_removable"), ("priority", "not_removable")]
    );
    snapshot_settings()
        .bind(|| insta::assert_json_snapshot!("problem_patch_not_removable", problem));
    patch(&app, &acme, &id, &key, None, r#"{"title":5}"#)
        .await
        .problem(400, "invalid-body");
    patch(&app, &acme, &id, &key, None, r#"{"title":"#)
        .await
        .problem(400, "malformed-json");
    let wrong_type = patch_as(&app, &acme, &id, Some(&key), None, "text/plain", "{}").await;
    let problem = wrong_type.problem(415, "unsupported-media-type");
    snapshot_settings().bind(|| insta::assert_json_snapshot!("problem_patch_media_type", problem));
    let vendor = patch_as(
        &app,
        &acme,
        &id,
        Some(&key),
        None,
        "application/vnd.x+json",
        "{}",
    )
    .await;
    vendor.problem(415, "unsupported-media-type");
    let keyless = patch_as(&app, &acme, &id, None, None, MERGE_PATCH, "{}").await;
    let problem = keyless.problem(400, "idempotency-key-missing");
    snapshot_settings().bind(|| insta::assert_json_snapshot!("problem_patch_key_missing", problem));

    let listed = transition(&app, &acme, &id, &key, r#"["in_progress"]"#).await;
    listed.problem(400, "invalid-body");
    let bad_move = transition(&app, &acme, &id, &key, r#"{"to":"done"}"#).await;
    let problem = bad_move.problem(400, "validation-failed");
    assert_eq!(problem["errors"][0]["field"], "to");
    let blank = comment(&app, &acme, &id, &key, r#"{"body":"   "}"#).await;
    let problem = blank.problem(400, "validation-failed");
    assert_eq!(problem["errors"][0]["field"], "body");

    for action in ["update_ticket", "transition_ticket", "add_comment"] {
        key_unused(&app, &acme, action, &key).await;
    }
    assert_eq!(history(&app, &acme, &id).await.len(), 1, "nothing written");
    // The same key, with a valid patch, now changes the ticket.
    let fixed = patch(&app, &acme, &id, &key, None, r#"{"title":"Fixed"}"#).await;
    assert_eq!(fixed.status, 200);
}

kitchen::on_both_databases!(
    an_update_replays_its_first_answer_even_after_later_changes,
    a_patch_that_changes_nothing_still_uses_its_key,
    a_key_reused_with_another_command_is_a_conflict,
    another_tenants_ticket_is_not_found_and_nothing_is_revealed,
    a_stale_if_match_is_412_and_writes_nothing,
    of_two_updates_from_one_version_exactly_one_wins,
    an_illegal_move_is_409_and_leaves_the_key_free,
    comments_are_added_once_and_listed_oldest_first,
    the_history_has_each_change_once_with_who_made_it,
    every_action_has_a_status_lookup,
    bad_writes_are_refused_by_name_and_leave_the_key_free,
);
