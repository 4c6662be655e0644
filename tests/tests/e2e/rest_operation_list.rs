//! `GET /v1/operations`: a tenant's own operations, newest first, paged and
//! filtered; and on a ticket provider, what an operator's settlement looks
//! like to the caller (the list and the status).

use e2e_tests::{TestApp, TestTenant, snapshot_settings};
use kitchen::testing::TestDatabase;
use kitchen::{
    Action, Decision, OperationKey, OperatorName, SettleAnswer, SettleOrder, SettleReason,
};
use provider_sim::{Fault, FaultRule};

use crate::rest_remote::spawn_remote_with;
use crate::{DISK_FULL, fresh_key};

async fn json(app: &TestApp, tenant: &TestTenant, path: &str) -> serde_json::Value {
    let answer = app.get(tenant, path).await;
    assert_eq!(answer.status(), 200, "{path}");
    answer.json().await.expect("json")
}

fn keys(list: &serde_json::Value) -> Vec<String> {
    list["operations"]
        .as_array()
        .expect("operations")
        .iter()
        .map(|o| o["key"].as_str().expect("a key").to_owned())
        .collect()
}

async fn a_tenant_lists_its_own_operations(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let globex = app.tenant("globex").await;
    let mut made = Vec::new();
    for _ in 0..3 {
        let key = fresh_key();
        assert_eq!(
            app.post_ticket(&acme, Some(&key), DISK_FULL).await.status(),
            201
        );
        made.push(key);
    }
    app.post_ticket(&globex, Some(&fresh_key()), DISK_FULL)
        .await;
    made.reverse();

    let first = json(&app, &acme, "/v1/operations?limit=2").await;
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let second = json(
        &app,
        &acme,
        &format!("/v1/operations?limit=2&cursor={cursor}"),
    )
    .await;
    assert!(second["next_cursor"].is_null());
    let listed: Vec<_> = keys(&first).into_iter().chain(keys(&second)).collect();
    assert_eq!(listed, made, "the tenant's own, newest first");

    let item = &first["operations"][0];
    assert_eq!(item["action"], "create_ticket");
    assert_eq!(item["state"], "succeeded");
    assert_eq!(item["needs_operator"], false);
    assert_eq!(
        item["status_location"],
        format!("/v1/operations/create_ticket/{}", made[0])
    );
    let status = json(
        &app,
        &acme,
        item["status_location"].as_str().expect("a path"),
    )
    .await;
    assert_eq!(status["ticket_id"], item["ticket_id"]);

    for (query, count) in [
        ("state=succeeded", 3),
        ("state=unknown", 0),
        ("action=add_comment", 0),
        ("action=create_ticket&state=expired", 0),
        ("since=2000-01-01T00:00:00Z", 3),
        ("since=2999-01-01T00:00:00Z", 0),
        ("cursor=", 3),
    ] {
        let list = json(&app, &acme, &format!("/v1/operations?{query}")).await;
        assert_eq!(keys(&list).len(), count, "{query}");
    }

    let bad = app
        .get(
            &acme,
            "/v1/operations?state=lost&action=delete_ticket&since=yesterday&limit=0&cursor=zz",
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
    assert_eq!(fields, ["state", "action", "since", "limit", "cursor"]);
    snapshot_settings()
        .bind(|| insta::assert_json_snapshot!("problem_operation_list_parameters", problem));
}

/// An unknown effect is listed as needing attention until an operator
/// settles it; the status then shows who settled it, and the list its new
/// state.
async fn a_settled_effect_shows_its_audit_entry(db: TestDatabase) {
    let (app, sim) = spawn_remote_with(&db, std::time::Duration::from_secs(3600)).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    let rule = FaultRule::create(Fault::CommitThenDrop).title_contains("Disk full");
    sim.client().add_fault(&rule).await.expect("set the fault");
    assert_eq!(
        app.post_ticket(&acme, Some(&key), DISK_FULL).await.status(),
        202
    );

    let unknown = json(&app, &acme, "/v1/operations?state=unknown").await;
    assert_eq!(keys(&unknown), std::slice::from_ref(&key));
    assert!(unknown["operations"][0]["external_reference"].is_string());

    let order = SettleOrder {
        decision: Decision::NotMade,
        by: OperatorName::parse("ana").expect("a name"),
        reason: SettleReason::parse("the ticket at the provider is someone else's")
            .expect("a reason"),
        force: true,
    };
    let settled = app
        .kitchen
        .settle(
            acme.id,
            Action::CreateTicket,
            &OperationKey::parse(key.as_str()).expect("a key"),
            &order,
        )
        .await
        .expect("settle");
    assert!(
        matches!(settled, SettleAnswer::Settled { .. }),
        "{settled:?}"
    );

    assert!(keys(&json(&app, &acme, "/v1/operations?state=unknown").await).is_empty());
    let failed = json(&app, &acme, "/v1/operations?state=failed_before_effect").await;
    assert_eq!(keys(&failed), std::slice::from_ref(&key));
    let status = json(&app, &acme, &format!("/v1/operations/create_ticket/{key}")).await;
    assert_eq!(status["state"], "failed_before_effect");
    let entry = &status["effect"]["settled_by_hand"][0];
    assert_eq!(entry["by"], "ana");
    assert_eq!(entry["decision"], "not_made");
    assert_eq!(entry["forced"], true);
    assert!(
        entry["provider_check"]
            .as_str()
            .expect("text")
            .starts_with("found as "),
        "{entry}"
    );
    assert!(
        status["detail"]
            .as_str()
            .expect("text")
            .contains("Settled by hand by ana"),
        "{status}"
    );
}

kitchen::on_both_databases!(
    a_tenant_lists_its_own_operations,
    a_settled_effect_shows_its_audit_entry,
);
