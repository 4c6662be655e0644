//! The OpenAPI document describes exactly the routes the server answers.

use e2e_tests::{TestApp, snapshot_settings};
use kitchen::testing::TestDatabase;

/// Every (method, path) the document lists.
fn documented(doc: &serde_json::Value) -> Vec<(String, String)> {
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("path item").keys() {
            ops.push((method.to_uppercase(), path.clone()));
        }
    }
    ops.sort();
    ops
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_matches_the_router() {
    let db = TestDatabase::sqlite();
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let doc: serde_json::Value = app.public_json("/openapi.json").await;
    assert_eq!(doc["openapi"], "3.1.0");

    let ops = documented(&doc);
    let expected: Vec<(String, String)> = [
        ("GET", "/.well-known/oauth-protected-resource"),
        ("GET", "/.well-known/oauth-protected-resource/mcp"),
        ("GET", "/healthz"),
        ("GET", "/metrics"),
        ("GET", "/problems/{slug}"),
        ("GET", "/readyz"),
        ("GET", "/v1/operations"),
        ("GET", "/v1/operations/{action}/{key}"),
        ("GET", "/v1/stats"),
        ("GET", "/v1/tickets"),
        ("GET", "/v1/tickets/{id}"),
        ("GET", "/v1/tickets/{id}/comments"),
        ("GET", "/v1/tickets/{id}/comments/{comment_id}"),
        ("GET", "/v1/tickets/{id}/history"),
        ("PATCH", "/v1/tickets/{id}"),
        ("POST", "/v1/tickets"),
        ("POST", "/v1/tickets/{id}/comments"),
        ("POST", "/v1/tickets/{id}/labels"),
        ("DELETE", "/v1/tickets/{id}/labels/{label}"),
        ("POST", "/v1/tickets/{id}/transitions"),
    ]
    .iter()
    .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
    .collect();
    let mut expected = expected;
    expected.sort();
    assert_eq!(ops, expected);

    // Each documented operation is routed: the server answers it with
    // something other than "no such route" (404 problem type not-found for
    // an unknown path) or "no such method" (405).
    for (method, path) in &ops {
        let concrete = path
            .replace("{slug}", "not-found")
            .replace("{action}", "create_ticket")
            .replace("{key}", "some-operation-key")
            .replace("{id}", "01a22a26-e9e7-75b6-8d7f-025b02dea37c")
            .replace("{comment_id}", "01a22a26-e9e7-75b6-8d7f-025b02dea37d");
        let response = app
            .client
            .request(method.parse().expect("method"), app.url(&concrete))
            .bearer_auth(&acme.token)
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .expect("answer");
        assert_ne!(response.status(), 405, "{method} {path} is routed");
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        assert_ne!(
            body["detail"], "Nothing at this address was not found.",
            "{method} {path} is routed"
        );
    }

    // Every problem type and the headers of the contract are documented.
    let text = doc.to_string();
    for needle in [
        "Idempotency-Key",
        "Idempotent-Replayed",
        "Idempotency-Replayable-Until",
        "ietf-wg-httpapi/idempotency#35",
        "Retry-After",
        "Location",
        "ETag",
        "If-Match",
        "application/merge-patch+json",
        "WWW-Authenticate",
        "application/problem+json",
    ] {
        assert!(text.contains(needle), "the document mentions {needle}");
    }
    let types = doc["components"]["schemas"]["Problem"]["properties"]["type"]["enum"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for kind in rest_door::ProblemKind::ALL {
        assert!(
            types.contains(&kind.type_uri().into()),
            "{} is documented",
            kind.slug
        );
    }

    // Every status each operation can answer is documented (exactly these:
    // a new one is a deliberate change here), and every error answer is a
    // problem document.
    // A write on a ticket, after its success answers: `202` is an
    // unknown outcome at a ticket provider.
    // `403`: a token without the scope the operation needs (see
    // `access::policy`); `503` also covers an identity provider that cannot
    // be reached.
    // Every write on a ticket is conditional (`If-Match`): `412`.
    let write = &[
        "202", "400", "401", "403", "404", "409", "412", "413", "415", "422", "500", "503",
    ];
    let read = &["200", "400", "401", "403", "404", "500", "503"];
    let answers: Vec<(&str, &str, Vec<&str>)> = vec![
        (
            "post",
            "/v1/tickets",
            vec![
                "200", "201", "202", "400", "401", "403", "409", "413", "415", "422", "500", "503",
            ],
        ),
        (
            "get",
            "/v1/tickets",
            vec!["200", "400", "401", "403", "500", "503"],
        ),
        ("get", "/v1/tickets/{id}", read.to_vec()),
        ("patch", "/v1/tickets/{id}", [&["200"][..], write].concat()),
        (
            "post",
            "/v1/tickets/{id}/transitions",
            [&["200"][..], write].concat(),
        ),
        (
            "post",
            "/v1/tickets/{id}/comments",
            [&["200", "201"][..], write].concat(),
        ),
        // No provider keeps labels, so no 202; removing one has no body,
        // so no 413 or 415.
        (
            "post",
            "/v1/tickets/{id}/labels",
            vec![
                "200", "400", "401", "403", "404", "409", "412", "413", "415", "422", "500", "503",
            ],
        ),
        (
            "delete",
            "/v1/tickets/{id}/labels/{label}",
            vec![
                "200", "400", "401", "403", "404", "409", "412", "422", "500", "503",
            ],
        ),
        ("get", "/v1/tickets/{id}/comments", read.to_vec()),
        (
            "get",
            "/v1/tickets/{id}/comments/{comment_id}",
            read.to_vec(),
        ),
        ("get", "/v1/tickets/{id}/history", read.to_vec()),
        (
            "get",
            "/v1/operations",
            vec!["200", "400", "401", "403", "500", "503"],
        ),
        ("get", "/v1/operations/{action}/{key}", read.to_vec()),
        (
            "get",
            "/v1/stats",
            vec!["200", "400", "401", "403", "500", "503"],
        ),
        ("get", "/healthz", vec!["200", "400"]),
        ("get", "/readyz", vec!["200", "400", "503"]),
        ("get", "/metrics", vec!["200", "400"]),
        ("get", "/problems/{slug}", vec!["200", "400", "404"]),
        (
            "get",
            "/.well-known/oauth-protected-resource",
            vec!["200", "400", "404"],
        ),
        (
            "get",
            "/.well-known/oauth-protected-resource/mcp",
            vec!["200", "400", "404"],
        ),
    ];
    assert_eq!(answers.len(), ops.len(), "every operation is checked");
    for (method, path, statuses) in answers {
        let responses = doc["paths"][path][method]["responses"]
            .as_object()
            .unwrap_or_else(|| panic!("{method} {path} has responses"));
        let documented: Vec<&str> = responses.keys().map(String::as_str).collect();
        assert_eq!(
            documented, statuses,
            "{method} {path} documents its answers"
        );
        for (status, response) in responses.iter().filter(|(s, _)| s.as_str() >= "400") {
            assert_eq!(
                response["content"]["application/problem+json"]["schema"]["$ref"],
                "#/components/schemas/Problem",
                "{method} {path} {status} is a problem document"
            );
        }
    }

    // Operation ids are unique (links and generated clients rely on them).
    let mut ids: Vec<&str> = doc["paths"]
        .as_object()
        .expect("paths")
        .values()
        .flat_map(|item| item.as_object().expect("path item").values())
        .filter_map(|op| op["operationId"].as_str())
        .collect();
    ids.sort_unstable();
    let count = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), count, "operation ids are unique: {ids:?}");

    // The schemas say what the server accepts, no more: a request valid by
    // the document is never refused for its shape (schemathesis checks the
    // rest against a running server, in tests/hardening).
    let schemas = &doc["components"]["schemas"];
    let create = &schemas["CreateTicket"]["properties"];
    for field in ["project_id", "title"] {
        assert_eq!(
            create[field]["type"], "string",
            "{field} is a string, never null"
        );
        assert!(
            create[field]["pattern"].is_string(),
            "{field} has a pattern"
        );
    }
    // Every limit is the kitchen's own.
    let limits: [(&serde_json::Value, usize); 7] = [
        (&create["title"]["maxLength"], kitchen::MAX_TITLE_CHARS),
        (
            &create["description"]["maxLength"],
            kitchen::MAX_DESCRIPTION_CHARS,
        ),
        (
            &schemas["TicketPatch"]["properties"]["title"]["maxLength"],
            kitchen::MAX_TITLE_CHARS,
        ),
        (
            &schemas["TicketPatch"]["properties"]["assignee"]["maxLength"],
            kitchen::MAX_ASSIGNEE_CHARS,
        ),
        (
            &schemas["TransitionRequest"]["properties"]["reason"]["maxLength"],
            kitchen::MAX_REASON_CHARS,
        ),
        (
            &schemas["CommentRequest"]["properties"]["body"]["maxLength"],
            kitchen::MAX_COMMENT_CHARS,
        ),
        (
            &schemas["Ticket"]["properties"]["title"]["maxLength"],
            kitchen::MAX_TITLE_CHARS,
        ),
    ];
    for (documented, limit) in limits {
        assert_eq!(documented, &serde_json::Value::from(limit));
    }
    assert_eq!(
        schemas["TicketPatch"]["additionalProperties"], false,
        "unknown patch fields are refused"
    );
    let patch_body = &doc["paths"]["/v1/tickets/{id}"]["patch"]["requestBody"]["content"];
    for media in ["application/merge-patch+json", "application/json"] {
        assert_eq!(
            patch_body[media]["schema"]["$ref"], "#/components/schemas/TicketPatch",
            "PATCH takes {media}"
        );
    }
    for path in [
        "/v1/tickets",
        "/v1/tickets/{id}/comments",
        "/v1/tickets/{id}/history",
    ] {
        let limit = doc["paths"][path]["get"]["parameters"]
            .as_array()
            .and_then(|p| p.iter().find(|p| p["name"] == "limit"))
            .unwrap_or_else(|| panic!("{path} documents limit"));
        assert_eq!(limit["schema"]["maximum"], kitchen::PageSize::MAX, "{path}");
    }
    for (method, path) in [
        ("post", "/v1/tickets"),
        ("patch", "/v1/tickets/{id}"),
        ("post", "/v1/tickets/{id}/transitions"),
        ("post", "/v1/tickets/{id}/comments"),
    ] {
        let key = doc["paths"][path][method]["parameters"]
            .as_array()
            .and_then(|p| p.iter().find(|p| p["name"] == "Idempotency-Key"))
            .unwrap_or_else(|| panic!("{method} {path} documents Idempotency-Key"));
        assert_eq!(key["in"], "header");
        assert_eq!(key["required"], true);
        assert_eq!(
            (&key["schema"]["minLength"], &key["schema"]["maxLength"]),
            (&kitchen::MIN_KEY_LEN.into(), &kitchen::MAX_KEY_LEN.into())
        );
    }
    // Every write answer that has an operation advertises its replay
    // horizon, and the success answers say what `expired` means.
    for (method, path, statuses) in [
        ("post", "/v1/tickets", &["200", "201", "202", "422"][..]),
        ("patch", "/v1/tickets/{id}", &["200", "422"]),
        ("post", "/v1/tickets/{id}/transitions", &["200", "422"]),
        ("post", "/v1/tickets/{id}/comments", &["200", "201", "422"]),
    ] {
        for status in statuses {
            let headers = &doc["paths"][path][method]["responses"][status]["headers"];
            assert!(
                headers["Idempotency-Replayable-Until"].is_object(),
                "{method} {path} {status} documents Idempotency-Replayable-Until"
            );
            if status.starts_with('2') && *status != "202" {
                assert!(
                    headers["Idempotent-Replayed"]["description"]
                        .as_str()
                        .is_some_and(|d| d.contains("expired")),
                    "{method} {path} {status} documents Idempotent-Replayed: expired"
                );
            }
        }
    }
    let key = doc["paths"]["/v1/tickets"]["post"]["parameters"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["name"] == "Idempotency-Key"))
        .expect("Idempotency-Key documented");
    assert!(
        key["schema"]["pattern"].is_string(),
        "the key has a pattern"
    );
    assert!(
        key.get("example").is_none() && key["schema"].get("example").is_none(),
        "no fixed example key: a key names one request"
    );
    // `cursor=` (empty) is documented as the first page, and is.
    let cursor = doc["paths"]["/v1/tickets"]["get"]["parameters"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["name"] == "cursor"))
        .expect("cursor documented");
    assert!(
        cursor["schema"]["pattern"]
            .as_str()
            .is_some_and(|p| p.ends_with(")?$")),
        "the cursor pattern admits the empty string"
    );
    let first_page = app.get(&acme, "/v1/tickets?cursor=").await;
    assert_eq!(
        first_page.status(),
        200,
        "an empty cursor is the first page"
    );

    snapshot_settings().bind(|| insta::assert_json_snapshot!("openapi", doc));
}

/// The client speaks only the HTTP contract and copies no server type, so
/// its table of actions is checked here against the server's OpenAPI
/// document: a write the server adds and the client does not know (or a
/// name that drifts) fails this test.
#[test]
fn the_client_knows_every_action_the_document_names() {
    let doc = serde_json::to_value(rest_door::openapi()).expect("JSON");
    let parameters = doc["paths"]["/v1/operations/{action}/{key}"]["get"]["parameters"]
        .as_array()
        .expect("the status lookup's parameters");
    let action = parameters
        .iter()
        .find(|p| p["name"] == "action")
        .expect("an action parameter");
    let mut documented: Vec<&str> = action["schema"]["enum"]
        .as_array()
        .expect("the actions, enumerated")
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    let mut known: Vec<&str> = tickets_client::Action::ALL
        .iter()
        .map(|a| a.as_str())
        .collect();
    documented.sort_unstable();
    known.sort_unstable();
    assert_eq!(known, documented);
}
