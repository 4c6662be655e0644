//! The operators' console through its router: what it shows, the settle
//! form carried out by the kitchen (an unknown create settled, the
//! caller's retry answering it, the provider holding it once), and every
//! bad input refused with nothing changed. On both databases.

use kitchen::actions::CreateTicket;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use http::{Request, StatusCode, header};
use kitchen::fake_provider::{DispatchFault, FakeProvider};
use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{
    Action, ExternalRef, Kitchen, KitchenConfig, OperationKey, OperationState, Outcome,
    RemoteSettings, TicketBackend, TicketDraft,
};
use ops_console::ConsoleSettings;
use telemetry::Metrics;
use tower::ServiceExt as _;

const LOOPBACK: &str = "127.0.0.1:0";

fn settings(token: Option<&str>) -> ConsoleSettings {
    ConsoleSettings {
        listen: LOOPBACK.parse().expect("an address"),
        token: token.map(str::to_owned),
    }
}

struct Page {
    status: StatusCode,
    html: String,
}

async fn send(router: &axum::Router, request: Request<Body>) -> Page {
    let answer = router.clone().oneshot(request).await.expect("answered");
    let status = answer.status();
    let bytes = axum::body::to_bytes(answer.into_body(), 1 << 20)
        .await
        .expect("a body");
    Page {
        status,
        html: String::from_utf8(bytes.to_vec()).expect("UTF-8"),
    }
}

async fn get(router: &axum::Router, path: &str) -> Page {
    send(
        router,
        Request::get(path).body(Body::empty()).expect("a request"),
    )
    .await
}

async fn post(router: &axum::Router, form: &[(&str, String)]) -> Page {
    let body = form
        .iter()
        .map(|(k, v)| format!("{k}={}", urlencode(v)))
        .collect::<Vec<_>>()
        .join("&");
    let request = Request::post("/settle")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(body))
        .expect("a request");
    send(router, request).await
}

fn urlencode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The value of the hidden field `name` in `html`.
fn hidden(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker).expect("the field") + marker.len();
    html[start..]
        .split('"')
        .next()
        .expect("its value")
        .to_owned()
}

/// A kitchen on the remote backend with a create whose answer was lost
/// after the provider made it: `unknown`, and not settled by itself while
/// the test looks (absence is never provable, no reconciler runs).
async fn lost_create(db: &TestDatabase) -> (Kitchen, FakeProvider, kitchen::Tenant, OperationKey) {
    let provider = FakeProvider::ignoring_keys();
    let kitchen = db
        .kitchen_with(KitchenConfig {
            backend: TicketBackend::Remote {
                provider: Arc::new(provider.clone()),
                settings: RemoteSettings {
                    dedup_window: Duration::ZERO,
                    max_inflight: Duration::from_secs(3600),
                    call_timeout: Duration::from_millis(200),
                    reconcile_every: Duration::ZERO,
                    ..RemoteSettings::default()
                },
            },
            ..KitchenConfig::default()
        })
        .await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let key = OperationKey::parse("console-lost-create").expect("a key");
    provider.fail_next_dispatch(DispatchFault::CommitThenLose);
    let outcome = kitchen
        .write::<CreateTicket>(tenant.id, &key, &draft())
        .await
        .expect("create");
    assert!(matches!(outcome, Outcome::Unknown { .. }), "{outcome:?}");
    (kitchen, provider, tenant, key)
}

fn draft() -> TicketDraft {
    TicketDraft {
        project_id: Some("ops".into()),
        title: Some("Disk full on db-1".into()),
        ..TicketDraft::default()
    }
}

/// The unknown create shows with its form; settling it as made with the
/// provider's id makes the caller's retry answer that ticket, and the
/// provider holds it once. A form from elsewhere, or with a field missing,
/// changes nothing.
async fn an_operator_settles_an_unknown_create_with_the_form(db: TestDatabase) {
    let (kitchen, provider, tenant, key) = lost_create(&db).await;
    let router = ops_console::router(kitchen.clone(), Metrics::new(), &settings(None));

    let overview = get(&router, "/").await;
    assert_eq!(overview.status, StatusCode::OK);
    // The lost answer is among the provider's last errors, and the effect
    // in the reconciler's backlog.
    assert!(
        overview.html.contains("The provider&#39;s last errors")
            || overview.html.contains("The provider's last errors")
    );
    assert!(overview.html.contains("ambiguous"), "{}", overview.html);
    assert!(overview.html.contains("console-lost-create"));
    let effects = get(&router, "/effects").await;
    assert_eq!(effects.status, StatusCode::OK);
    assert!(
        effects.html.contains("console-lost-create"),
        "{}",
        effects.html
    );
    assert!(
        effects.html.contains("Unknown, being reconciled"),
        "not given up yet"
    );
    let form_token = hidden(&effects.html, "form_token");
    // Not given up on: it shows among the ones being reconciled, with a form
    // all the same (an operator may know better, as with the CLI).
    let reference = ExternalRef::derive(tenant.id, Action::CreateTicket, &key);
    assert_eq!(provider.count(reference.as_str()), 1);

    // A settle form's fields, as the page's form sends them.
    let form = |form_token: &str, decision: &str, reference: &str, by: &str| {
        [
            ("form_token", form_token),
            ("tenant", "acme"),
            ("action", "create_ticket"),
            ("key", "console-lost-create"),
            ("decision", decision),
            ("reference", reference),
            ("by", by),
            ("reason", "found it in the tracker"),
        ]
        .map(|(k, v)| (k, v.to_owned()))
    };
    let forged = post(&router, &form("forged", "made", "FAKE-1", "ana")).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    let refused = post(&router, &form(&form_token, "made", "FAKE-1", "  ")).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(
        refused.html.contains("by must not be empty"),
        "{}",
        refused.html
    );
    let contradicted = post(&router, &form(&form_token, "made", "FAKE-9", "ana")).await;
    assert_eq!(contradicted.status, StatusCode::CONFLICT);
    assert!(
        contradicted.html.contains("found as FAKE-1"),
        "{}",
        contradicted.html
    );
    let recorded = kitchen
        .operation_as_recorded(tenant.id, Action::CreateTicket, &key)
        .await
        .expect("read")
        .expect("a record");
    assert_eq!(
        recorded.record.state,
        OperationState::Unknown,
        "nothing changed"
    );

    let settled = post(&router, &form(&form_token, "made", "FAKE-1", "ana")).await;
    assert_eq!(settled.status, StatusCode::OK, "{}", settled.html);
    assert!(settled.html.contains("Settled"), "{}", settled.html);
    match kitchen
        .write::<CreateTicket>(tenant.id, &key, &draft())
        .await
        .expect("retry")
    {
        Outcome::Replayed(receipt) => {
            assert_eq!(receipt.result.provider_ticket_id.as_deref(), Some("FAKE-1"));
        }
        other => panic!("expected the settled ticket, got {other:?}"),
    }
    assert_eq!(provider.count(reference.as_str()), 1, "made once");

    let lookup = get(
        &router,
        "/lookup?tenant=acme&action=create_ticket&key=console-lost-create",
    )
    .await;
    assert_eq!(lookup.status, StatusCode::OK);
    assert!(lookup.html.contains("Settled by hand"), "{}", lookup.html);
    assert!(lookup.html.contains("found it in the tracker"));
}

/// Garbage in the lookup box is a clear refusal; a key nobody used is a
/// 404 that says a retry is safe; /metrics is served.
async fn the_lookup_refuses_garbage_and_metrics_are_served(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    tenant_with_token(&kitchen, "acme").await;
    let router = ops_console::router(kitchen, Metrics::new(), &settings(None));
    assert_eq!(get(&router, "/lookup").await.status, StatusCode::OK);
    let garbage = get(
        &router,
        "/lookup?tenant=Not%20A%20Slug&action=drop_table&key=%00",
    )
    .await;
    assert_eq!(garbage.status, StatusCode::BAD_REQUEST);
    for part in ["tenant:", "action: the actions are", "key:"] {
        assert!(garbage.html.contains(part), "{part} in {}", garbage.html);
    }
    let unused = get(
        &router,
        "/lookup?tenant=acme&action=create_ticket&key=never-used-key",
    )
    .await;
    assert_eq!(unused.status, StatusCode::NOT_FOUND);
    assert!(unused.html.contains("a retry with that key is safe"));
    let metrics = get(&router, "/metrics").await;
    assert_eq!(metrics.status, StatusCode::OK);
}

/// With an operator token, nothing is answered without it (HTTP Basic, or
/// a bearer token); without one, only a loopback address is allowed.
#[tokio::test]
async fn the_console_is_guarded() {
    let wide: SocketAddr = "0.0.0.0:8081".parse().expect("an address");
    let open = ConsoleSettings {
        listen: wide,
        token: None,
    };
    let refused = open.check().expect_err("a wide address needs a token");
    assert!(refused.contains("ADMIN_TOKEN"), "{refused}");
    let short = ConsoleSettings {
        listen: wide,
        token: Some("short".into()),
    };
    assert!(short.check().is_err(), "a short token is refused");
    let token = "an-operator-token-of-some-length";
    let guarded = ConsoleSettings {
        listen: wide,
        token: Some(token.into()),
    };
    assert_eq!(guarded.check(), Ok(()));
    assert_eq!(settings(None).check(), Ok(()));

    let db = TestDatabase::sqlite();
    let router = ops_console::router(db.kitchen().await, Metrics::new(), &guarded);
    let bare = get(&router, "/metrics").await;
    assert_eq!(bare.status, StatusCode::UNAUTHORIZED);
    use base64::Engine as _;
    for authorization in [
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("ops:{token}"))
        ),
        format!("Bearer {token}"),
    ] {
        let request = Request::get("/metrics")
            .header(header::AUTHORIZATION, &authorization)
            .body(Body::empty())
            .expect("a request");
        assert_eq!(
            send(&router, request).await.status,
            StatusCode::OK,
            "{authorization}"
        );
    }
    let wrong = Request::get("/")
        .header(header::AUTHORIZATION, "Bearer not-the-token-at-all")
        .body(Body::empty())
        .expect("a request");
    assert_eq!(send(&router, wrong).await.status, StatusCode::UNAUTHORIZED);
}

kitchen::on_both_databases!(
    an_operator_settles_an_unknown_create_with_the_form,
    the_lookup_refuses_garbage_and_metrics_are_served,
);
