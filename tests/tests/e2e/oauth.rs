//! OAuth: the server as a protected resource, on both doors.
//!
//! Access tokens from an identity provider (`oauth_idp`: real HTTP, real
//! keys) next to static API tokens: what is accepted, every way a token is
//! refused (`401` naming the resource metadata), scopes (`403` with the
//! step-up challenge, on REST and on `/mcp`), the metadata document, key
//! rotation and the bound on key fetches, and an identity provider that is
//! down or slow (`503` in bounded time, never a pass). With OAuth off,
//! nothing points a client at a sign-in that cannot succeed.

use std::time::{Duration, Instant};

use access::OAuthSettings;
use e2e_tests::{TestApp, TestTenant, snapshot_settings};
use kitchen::testing::TestDatabase;
use kitchen::{Issuer, KitchenConfig, Scope, Scopes, Subject};
use serde_json::{Value, json};
use server::ServeSettings;

use crate::mcp_support::{Protocol, call, connect, content};
use crate::oauth_idp::TestIdp;
use crate::{DISK_FULL, fresh_key};

/// A server with OAuth on, trusting `idp`, and its audience.
struct OAuthApp {
    app: TestApp,
    audience: String,
    acme: TestTenant,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Trusts `issuers` for the audience `http://127.0.0.1:PORT/mcp`, tenant
/// claim `org_id`, with `tweak` applied to the settings.
async fn spawn(
    db: &TestDatabase,
    issuers: &[String],
    tweak: impl FnOnce(OAuthSettings) -> OAuthSettings,
) -> OAuthApp {
    let port = free_port();
    let audience = format!("http://127.0.0.1:{port}/mcp");
    let settings = OAuthSettings::new(issuers, &audience)
        .expect("valid settings")
        .tenant_claim(Some("org_id".into()))
        .jwks_cooldown(Duration::ZERO);
    let settings = ServeSettings {
        listen: ([127, 0, 0, 1], port).into(),
        oauth: Some(tweak(settings)),
        ..ServeSettings::default()
    };
    let app = TestApp::spawn_on(db, KitchenConfig::default(), settings).await;
    let acme = app.tenant("acme").await;
    OAuthApp {
        app,
        audience,
        acme,
    }
}

/// `tenant` with `token` instead of its API token.
fn bearer(tenant: &TestTenant, token: String) -> TestTenant {
    TestTenant {
        id: tenant.id,
        token,
    }
}

/// Posts one JSON-RPC message to `/mcp` with `token`.
async fn mcp_post(app: &TestApp, token: &str, message: Value) -> reqwest::Response {
    app.client
        .post(app.url("/mcp"))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(message.to_string())
        .send()
        .await
        .expect("an answer")
}

fn create_call(key: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "create_ticket",
        "arguments": {"operation_id": key, "project_id": "ops", "title": "Disk full"}}})
}

fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

async fn problem(response: reqwest::Response, status: u16, slug: &str) -> Value {
    assert_eq!(response.status(), status);
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    let body: Value = response.json().await.expect("a problem document");
    assert_eq!(body["type"], format!("/problems/{slug}"), "{body}");
    body
}

/// A JSON-RPC error answer of `/mcp` with `status`: its message.
async fn json_rpc_error(response: reqwest::Response, status: u16) -> String {
    assert_eq!(response.status(), status);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = response.json().await.expect("a JSON-RPC error");
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["error"]["code"], -32000, "{body}");
    body["error"]["message"]
        .as_str()
        .expect("a message")
        .to_owned()
}

async fn an_access_token_works_on_both_doors_and_static_tokens_still_do(db: TestDatabase) {
    let idp = TestIdp::start().await;
    let OAuthApp {
        app,
        audience,
        acme,
    } = spawn(&db, std::slice::from_ref(&idp.issuer), |s| s).await;
    let jwt = bearer(&acme, idp.token(&audience, json!({"org_id": "acme"})));

    let key = fresh_key();
    let created = app.post_ticket(&jwt, Some(&key), DISK_FULL).await;
    assert_eq!(created.status(), 201);
    let ticket: Value = created.json().await.expect("a ticket");
    let status = app
        .get(&jwt, &format!("/v1/operations/create_ticket/{key}"))
        .await;
    assert_eq!(status.status(), 200);
    // The tenant is the claim's: the static token of acme sees the ticket.
    let id = ticket["id"].as_str().expect("an id");
    assert_eq!(
        app.get(&acme, &format!("/v1/tickets/{id}")).await.status(),
        200
    );
    // An OAuth caller has no API token to show in the history.
    let history: Value = app
        .get(&acme, &format!("/v1/tickets/{id}/history"))
        .await
        .json()
        .await
        .expect("history");
    assert_eq!(
        history["entries"][0]["actor_token_id"],
        Value::Null,
        "{history}"
    );

    let client = connect(&app, &jwt.token, Protocol::Stateless).await;
    let mcp_key = fresh_key();
    let made = call(
        &client,
        "create_ticket",
        json!({"operation_id": mcp_key, "project_id": "ops", "title": "From MCP"}),
    )
    .await;
    assert_eq!(content(&made)["status"], "created");
    let looked = call(
        &client,
        "get_operation_status",
        json!({"operation_id": mcp_key}),
    )
    .await;
    assert_eq!(content(&looked)["state"], "succeeded");

    // Static tokens keep working on both doors.
    assert_eq!(
        app.post_ticket(&acme, Some(&fresh_key()), DISK_FULL)
            .await
            .status(),
        201
    );
    let static_client = connect(&app, &acme.token, Protocol::Stateless).await;
    let listed = call(&static_client, "list_tickets", json!({})).await;
    assert_eq!(
        content(&listed)["tickets"].as_array().map(Vec::len),
        Some(3)
    );
}

async fn refused_tokens_are_401_naming_the_resource_metadata(db: TestDatabase) {
    let idp = TestIdp::start().await;
    let stranger = TestIdp::start().await;
    let OAuthApp {
        app,
        audience,
        acme,
    } = spawn(&db, std::slice::from_ref(&idp.issuer), |s| s).await;
    let metadata = format!("{}/.well-known/oauth-protected-resource/mcp", app.address);
    let now = jsonwebtoken::get_current_timestamp();
    let acme_claim = json!({"org_id": "acme"});
    let with = |extra: Value| {
        let mut claims = acme_claim.clone();
        if let (Some(c), Some(e)) = (claims.as_object_mut(), extra.as_object()) {
            c.extend(e.clone());
        }
        claims
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "expired",
            idp.token(
                &audience,
                with(json!({"exp": now - 120, "iat": now - 3720})),
            ),
            "has expired",
        ),
        (
            "not yet valid",
            idp.token(&audience, with(json!({"nbf": now + 600}))),
            "not valid yet",
        ),
        (
            "another audience",
            idp.token(&audience, with(json!({"aud": "https://other.example/mcp"}))),
            "another audience",
        ),
        (
            "an untrusted issuer",
            stranger.token(&audience, acme_claim.clone()),
            "is not trusted",
        ),
        (
            "a key the issuer never published",
            idp.forged(&audience),
            "does not publish",
        ),
        ("garbage", "not.a.jwt".to_owned(), "not a JWT"),
        ("alg none", idp.unsigned(&audience), "not a JWT"),
        (
            "HS256 with the EC key's kid",
            idp.hmac_confused(&audience),
            "HMAC",
        ),
        (
            "oversized",
            format!("{}.{}.x", "a".repeat(6000), "b".repeat(6000)),
            "larger than 8 KiB",
        ),
        (
            "no tenant claim",
            idp.token(&audience, json!({})),
            "has no org_id claim",
        ),
        (
            "an unknown tenant",
            idp.token(&audience, json!({"org_id": "initech"})),
            "names no tenant here",
        ),
        (
            "no subject",
            idp.token(&audience, with(json!({"sub": null}))),
            "no sub",
        ),
        (
            "a made-up static token",
            "tkt_0000".into(),
            "unknown or revoked",
        ),
    ];
    let tickets_before = app.ticket_count(&acme).await;
    for (case, token, says) in &cases {
        let key = fresh_key();
        let refused = app
            .post_ticket(&bearer(&acme, token.clone()), Some(&key), DISK_FULL)
            .await;
        let header = challenge(&refused);
        assert!(
            header.contains(r#"error="invalid_token""#),
            "{case}: {header}"
        );
        assert!(
            header.contains(&format!(r#"resource_metadata="{metadata}""#)),
            "{case}: {header}"
        );
        let body = problem(refused, 401, "unauthorized").await;
        let detail = body["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(says), "{case}: {detail}");
        // The same refusal on /mcp: the same status and challenge, with a
        // JSON-RPC body saying the same (an MCP SDK shows it).
        let over_mcp = mcp_post(&app, token, create_call(&key)).await;
        assert!(challenge(&over_mcp).contains("invalid_token"), "{case}");
        let said = json_rpc_error(over_mcp, 401).await;
        assert!(said.contains(says), "{case} over /mcp: {said}");
    }
    assert_eq!(
        app.ticket_count(&acme).await,
        tickets_before,
        "nothing was made"
    );
    let initech = kitchen::TenantName::parse("initech").expect("a slug");
    assert_eq!(
        app.kitchen.tenant_by_name(&initech).await.expect("db"),
        None,
        "no tenant was made from a token"
    );

    // One of them, whole: the header and the body clients read.
    let expired = app
        .post_ticket(
            &bearer(&acme, cases[0].1.clone()),
            Some(&fresh_key()),
            DISK_FULL,
        )
        .await;
    let header = challenge(&expired);
    let body = problem(expired, 401, "unauthorized").await;
    let anonymous = app
        .client
        .get(app.url("/v1/tickets"))
        .send()
        .await
        .expect("answer");
    let missing = challenge(&anonymous);
    let missing_body = problem(anonymous, 401, "unauthorized").await;
    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!(
            "oauth_unauthorized",
            json!({"expired": {"www-authenticate": header, "body": body},
                   "missing": {"www-authenticate": missing, "body": missing_body}})
        );
    });
}

async fn a_missing_scope_is_403_with_the_step_up_challenge_on_both_doors(db: TestDatabase) {
    let idp = TestIdp::start().await;
    let OAuthApp {
        app,
        audience,
        acme,
    } = spawn(&db, std::slice::from_ref(&idp.issuer), |s| s).await;
    let reader = bearer(
        &acme,
        idp.token(
            &audience,
            json!({"org_id": "acme", "scope": "openid tickets:read"}),
        ),
    );
    let writer = bearer(
        &acme,
        idp.token(
            &audience,
            json!({"org_id": "acme", "scope": null, "scp": ["tickets:write"]}),
        ),
    );

    // REST: reads pass, a write is 403 naming tickets:write, and no key is used.
    assert_eq!(app.get(&reader, "/v1/tickets").await.status(), 200);
    let key = fresh_key();
    let refused = app.post_ticket(&reader, Some(&key), DISK_FULL).await;
    let header = challenge(&refused);
    let body = problem(refused, 403, "insufficient-scope").await;
    assert!(
        header.contains(r#"error="insufficient_scope", scope="tickets:write""#),
        "{header}"
    );
    assert!(header.contains("resource_metadata="), "{header}");
    let status = app
        .get(&reader, &format!("/v1/operations/create_ticket/{key}"))
        .await;
    assert_eq!(status.status(), 404, "the key was not used");
    // A write-only token may write but not read.
    assert_eq!(
        app.post_ticket(&writer, Some(&fresh_key()), DISK_FULL)
            .await
            .status(),
        201
    );
    let no_read = app.get(&writer, "/v1/tickets").await;
    assert!(challenge(&no_read).contains(r#"scope="tickets:read""#));
    problem(no_read, 403, "insufficient-scope").await;

    // MCP: the same policy, decided by the tool the message calls.
    let mcp_refused = mcp_post(&app, &reader.token, create_call(&key)).await;
    assert_eq!(mcp_refused.status(), 403);
    let mcp_header = challenge(&mcp_refused);
    assert_eq!(mcp_header, header, "one challenge for both doors");
    let mcp_body: Value = mcp_refused.json().await.expect("JSON-RPC");
    assert_eq!(mcp_body["id"], 7);
    let reader_client = connect(&app, &reader.token, Protocol::Stateless).await;
    let looked = call(
        &reader_client,
        "get_operation_status",
        json!({"operation_id": key}),
    )
    .await;
    assert_eq!(
        content(&looked)["state"],
        "not_found",
        "nothing was made over MCP"
    );
    let listed = mcp_post(
        &app,
        &reader.token,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .await;
    assert_eq!(listed.status(), 200, "tools/list needs only tickets:read");

    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!(
            "oauth_insufficient_scope",
            json!({"www-authenticate": header, "rest": body, "mcp": mcp_body})
        );
    });
}

async fn static_tokens_carry_the_scopes_they_were_issued_with(db: TestDatabase) {
    // OAuth off: the challenge names no metadata, the policy is the same.
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let reader = app.token_with(&acme, Scopes::only(Scope::Read)).await;
    assert_eq!(app.get(&reader, "/v1/tickets").await.status(), 200);
    let refused = app
        .post_ticket(&reader, Some(&fresh_key()), DISK_FULL)
        .await;
    let header = challenge(&refused);
    let body = problem(refused, 403, "insufficient-scope").await;
    let over_mcp = mcp_post(&app, &reader.token, create_call(&fresh_key())).await;
    assert_eq!(over_mcp.status(), 403);
    assert_eq!(challenge(&over_mcp), header);
    assert_eq!(app.ticket_count(&acme).await, 0);
    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!(
            "problem_insufficient_scope",
            json!({"www-authenticate": header, "body": body})
        );
    });
}

/// Over stdio there is no HTTP status to send: the tools apply the same
/// policy and refuse with a JSON-RPC error.
async fn a_read_only_token_over_stdio_reads_and_cannot_write(db: TestDatabase) {
    use rmcp::model::{CallToolRequestParams, ClientConfig};
    use rmcp::service::ServiceExt;

    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let reader = app.token_with(&acme, Scopes::only(Scope::Read)).await;
    let caller = app
        .kitchen
        .authenticate(&reader.token)
        .await
        .expect("db")
        .expect("a caller");
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(mcp_door::serve_stream(
        app.kitchen.clone(),
        caller,
        app.metrics.clone(),
        tokio::io::split(server_end),
    ));
    let client = ClientConfig::default()
        .serve(tokio::io::split(client_end))
        .await
        .expect("stdio client");
    let listed = call(&client, "list_tickets", json!({})).await;
    assert_ne!(listed.is_error, Some(true), "{listed:?}");
    let arguments = json!({"operation_id": fresh_key(), "project_id": "ops", "title": "No"});
    let refused = client
        .call_tool(
            CallToolRequestParams::new("create_ticket")
                .with_arguments(arguments.as_object().cloned().expect("an object")),
        )
        .await
        .expect_err("a write needs tickets:write");
    assert!(refused.to_string().contains("tickets:write"), "{refused}");
    assert_eq!(app.ticket_count(&acme).await, 0);
    client.cancel().await.expect("close");
    server
        .await
        .expect("server task")
        .expect("server ended cleanly");
}

async fn the_metadata_document_names_the_issuer_the_scopes_and_the_resource(db: TestDatabase) {
    let idp = TestIdp::start().await;
    let OAuthApp { app, audience, .. } = spawn(&db, std::slice::from_ref(&idp.issuer), |s| s).await;
    // Where the 401 points, the document is.
    let anonymous = mcp_post(
        &app,
        "",
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .await;
    assert_eq!(anonymous.status(), 401);
    let header = challenge(&anonymous);
    let url = header
        .split("resource_metadata=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a resource_metadata URL");
    let named: Value = app
        .client
        .get(url)
        .send()
        .await
        .expect("answer")
        .json()
        .await
        .expect("JSON");
    let root = app
        .public_json("/.well-known/oauth-protected-resource")
        .await;
    assert_eq!(named, root, "one document at both addresses");
    assert_eq!(named["resource"], audience);
    assert_eq!(named["authorization_servers"], json!([idp.issuer]));
    let mut shown = named.clone();
    shown["authorization_servers"] = json!(["[issuer]"]);
    snapshot_settings().bind(|| insta::assert_json_snapshot!("oauth_protected_resource", shown));
}

async fn without_oauth_nothing_points_to_a_sign_in_that_cannot_succeed(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let anonymous = mcp_post(
        &app,
        "",
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .await;
    assert_eq!(anonymous.status(), 401);
    let header = challenge(&anonymous);
    assert!(!header.contains("resource_metadata"), "{header}");
    let said = json_rpc_error(anonymous, 401).await;
    assert!(said.contains("tickets token issue"), "{said}");
    // Every address a client guesses says the same: send a static token.
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
        "/register",
    ] {
        let guessed = app.client.get(app.url(path)).send().await.expect("answer");
        let said = problem(guessed, 404, "not-found").await;
        assert!(
            said["detail"]
                .as_str()
                .is_some_and(|d| d.contains("static API token")),
            "{path}: {said}"
        );
        if path == "/register" {
            snapshot_settings()
                .bind(|| insta::assert_json_snapshot!("problem_oauth_not_offered", said));
        }
    }
    // A JWT-shaped token is just an unknown token here.
    let jwt = app
        .client
        .get(app.url("/v1/tickets"))
        .bearer_auth("eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln")
        .send()
        .await
        .expect("answer");
    assert_eq!(jwt.status(), 401);
}

async fn a_rotated_key_is_fetched_when_its_kid_is_first_seen(db: TestDatabase) {
    let idp = TestIdp::start().await;
    let OAuthApp {
        app,
        audience,
        acme,
    } = spawn(&db, std::slice::from_ref(&idp.issuer), |s| s).await;
    let claims = json!({"org_id": "acme"});
    let first = bearer(&acme, idp.token(&audience, claims.clone()));
    assert_eq!(app.get(&first, "/v1/tickets").await.status(), 200);
    assert_eq!(app.get(&first, "/v1/tickets").await.status(), 200);
    assert_eq!(idp.jwks_fetches(), 1, "the keys are cached");
    idp.rotate("k2");
    let rotated = bearer(&acme, idp.token(&audience, claims));
    assert_eq!(app.get(&rotated, "/v1/tickets").await.status(), 200);
    assert_eq!(idp.jwks_fetches(), 2, "one fetch for the new kid");
    assert_eq!(
        app.get(&first, "/v1/tickets").await.status(),
        200,
        "k1 is still published"
    );
}

async fn unknown_kids_fetch_the_keys_at_most_once_per_cooldown(db: TestDatabase) {
    let idp = TestIdp::start().await;
    let OAuthApp {
        app,
        audience,
        acme,
    } = spawn(&db, std::slice::from_ref(&idp.issuer), |s| {
        s.jwks_cooldown(Duration::from_secs(60))
    })
    .await;
    let good = bearer(&acme, idp.token(&audience, json!({"org_id": "acme"})));
    assert_eq!(app.get(&good, "/v1/tickets").await.status(), 200);
    for i in 0..20 {
        let made_up = bearer(
            &acme,
            idp.token_naming(
                &format!("made-up-{i}"),
                &audience,
                json!({"org_id": "acme"}),
            ),
        );
        assert_eq!(app.get(&made_up, "/v1/tickets").await.status(), 401);
    }
    assert_eq!(idp.jwks_fetches(), 1, "no fetch within the cooldown");
    // A rotation within the cooldown is seen once it has passed: refused
    // until then, never let through.
    idp.rotate("k2");
    let rotated = bearer(&acme, idp.token(&audience, json!({"org_id": "acme"})));
    assert_eq!(app.get(&rotated, "/v1/tickets").await.status(), 401);
}

async fn an_identity_provider_that_is_slow_or_down_is_503_in_bounded_time(db: TestDatabase) {
    let slow = TestIdp::start().await;
    slow.stall(Duration::from_secs(30));
    let down = {
        let port = free_port();
        format!("http://127.0.0.1:{port}")
    };
    let OAuthApp {
        app,
        audience,
        acme,
    } = spawn(&db, &[slow.issuer.clone(), down.clone()], |s| {
        s.jwks_timeout(Duration::from_millis(300))
    })
    .await;
    let from_slow = bearer(&acme, slow.token(&audience, json!({"org_id": "acme"})));
    // A token claiming the unreachable issuer: the server cannot check it.
    let from_down = bearer(
        &acme,
        slow.token(&audience, json!({"org_id": "acme", "iss": down})),
    );
    for (who, token) in [("slow", &from_slow), ("down", &from_down)] {
        let started = Instant::now();
        let refused = app.post_ticket(token, Some(&fresh_key()), DISK_FULL).await;
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{who}: answered in {:?}",
            started.elapsed()
        );
        assert!(refused.headers().contains_key("retry-after"), "{who}");
        let body = problem(refused, 503, "auth-unavailable").await;
        if who == "slow" {
            snapshot_settings()
                .bind(|| insta::assert_json_snapshot!("problem_auth_unavailable", body));
        }
        let started = Instant::now();
        let over_mcp = mcp_post(&app, &token.token, create_call(&fresh_key())).await;
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{who} over /mcp"
        );
        assert_eq!(over_mcp.status(), 503, "{who} over /mcp");
        assert!(over_mcp.headers().contains_key("retry-after"));
        let rpc: Value = over_mcp.json().await.expect("JSON-RPC, not a problem");
        assert_eq!(rpc["jsonrpc"], "2.0", "{rpc}");
    }
    assert_eq!(app.ticket_count(&acme).await, 0, "nothing was let through");
}

async fn a_mapped_subject_acts_for_its_tenant_without_a_claim(db: TestDatabase) {
    let idp = TestIdp::start().await;
    let OAuthApp {
        app,
        audience,
        acme,
    } = spawn(&db, std::slice::from_ref(&idp.issuer), |s| {
        s.tenant_claim(None)
    })
    .await;
    let ci = bearer(&acme, idp.token(&audience, json!({"sub": "ci-bot"})));
    assert_eq!(
        app.get(&ci, "/v1/tickets").await.status(),
        401,
        "not mapped yet"
    );
    let issuer = Issuer::parse(idp.issuer.clone()).expect("an issuer");
    let subject = Subject::parse("ci-bot").expect("a subject");
    app.kitchen
        .map_oauth_subject(&issuer, &subject, acme.id)
        .await
        .expect("map");
    assert_eq!(
        app.post_ticket(&ci, Some(&fresh_key()), DISK_FULL)
            .await
            .status(),
        201
    );
    assert_eq!(app.ticket_count(&acme).await, 1);
}

/// The policy names every route behind a token (by its operationId) and
/// every tool, reads by a list and writes by their action, so that none
/// falls to a default.
#[test]
fn the_access_policy_names_every_route_and_every_tool() {
    let doc = serde_json::to_value(rest_door::openapi()).expect("JSON");
    let mut secured = Vec::new();
    for item in doc["paths"].as_object().expect("paths").values() {
        for op in item.as_object().expect("an item").values() {
            if op.get("security").is_some() {
                let id = op["operationId"].as_str().expect("an operationId");
                secured.push(id.to_owned());
            }
        }
    }
    // Every write by its action's name, every read listed.
    let mut listed: Vec<String> = access::policy::READ_OPERATIONS
        .iter()
        .map(|o| (*o).to_owned())
        .chain(kitchen::Action::ALL.map(|a| a.as_str().to_owned()))
        .collect();
    secured.sort();
    listed.sort();
    assert_eq!(secured, listed, "every secured route, and only those");

    let mut tools: Vec<String> = mcp_door::TicketTools::definitions()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    let mut named: Vec<String> = access::policy::READ_TOOLS
        .iter()
        .map(|t| (*t).to_owned())
        .chain(kitchen::Action::ALL.map(|a| a.as_str().to_owned()))
        .collect();
    tools.sort();
    named.sort();
    assert_eq!(tools, named, "every tool, and only those");
    // Writes need tickets:write, and only writes.
    for tool in &tools {
        let write = kitchen::Action::parse(tool).is_some();
        let scope = access::policy::tool(tool).expect("a tool the policy knows");
        assert_eq!(scope == Scope::Write, write, "{tool}");
    }
}

kitchen::on_both_databases!(
    an_access_token_works_on_both_doors_and_static_tokens_still_do,
    refused_tokens_are_401_naming_the_resource_metadata,
    a_missing_scope_is_403_with_the_step_up_challenge_on_both_doors,
    static_tokens_carry_the_scopes_they_were_issued_with,
    a_read_only_token_over_stdio_reads_and_cannot_write,
    the_metadata_document_names_the_issuer_the_scopes_and_the_resource,
    without_oauth_nothing_points_to_a_sign_in_that_cannot_succeed,
    a_rotated_key_is_fetched_when_its_kid_is_first_seen,
    unknown_kids_fetch_the_keys_at_most_once_per_cooldown,
    an_identity_provider_that_is_slow_or_down_is_503_in_bounded_time,
    a_mapped_subject_acts_for_its_tenant_without_a_claim,
);
