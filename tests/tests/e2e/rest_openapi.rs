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
        ("GET", "/healthz"),
        ("GET", "/metrics"),
        ("GET", "/problems/{slug}"),
        ("GET", "/readyz"),
        ("GET", "/v1/operations/{action}/{key}"),
        ("GET", "/v1/stats"),
        ("GET", "/v1/tickets"),
        ("GET", "/v1/tickets/{id}"),
        ("POST", "/v1/tickets"),
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
            .replace("{id}", "01a22a26-e9e7-75b6-8d7f-025b02dea37c");
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
        "Retry-After",
        "Location",
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
    for status in ["201", "400", "401", "409", "413", "415", "422"] {
        assert!(
            doc["paths"]["/v1/tickets"]["post"]["responses"][status].is_object(),
            "POST documents {status}"
        );
    }
    snapshot_settings().bind(|| insta::assert_json_snapshot!("openapi", doc));
}
