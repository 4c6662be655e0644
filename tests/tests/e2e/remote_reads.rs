//! On the remote backend a read observes and never acts: no read route and
//! no read tool sends anything to the provider, under every fault the
//! simulator can put on a create or a search. The ground truth is the
//! simulator's own count of create requests received. And the tools'
//! annotations say so: only the tools that reach the provider on this
//! deployment are open-world.

use std::collections::BTreeMap;
use std::time::Duration;

use drivers::provider_sim::{Fault, FaultRule, RunningSim};
use e2e_tests::{TestApp, TestTenant};
use kitchen::testing::TestDatabase;
use mcp_door::TicketTools;
use serde_json::json;

use crate::fresh_key;
use crate::mcp_support::{Client, Protocol, call, connect, content};
use crate::rest_remote::spawn_remote_with;

/// How long the simulator's hang fault holds a create: past the server's
/// 500 ms provider timeout, within what it is told may still land.
const HANG_MS: u64 = 800;

/// What happens to the create (and, for some, the search after it).
#[derive(Debug, Clone)]
enum Case {
    /// A fault on the create itself.
    Create(Fault),
    /// The create's answer is lost and every search fails.
    SearchFails,
    /// The provider stops listening.
    Outage,
}

/// Every read the doors offer about one operation and the tickets.
async fn read_everything(app: &TestApp, acme: &TestTenant, mcp: &Client, key: &str) {
    let status = app
        .get(acme, &format!("/v1/operations/create_ticket/{key}"))
        .await;
    assert!(
        status.status().is_success(),
        "status read: {}",
        status.status()
    );
    let body: serde_json::Value = status.json().await.expect("JSON");
    if let Some(id) = body["resource_id"].as_str() {
        let ticket = app.get(acme, &format!("/v1/tickets/{id}")).await;
        assert!(ticket.status().is_success(), "{}", ticket.status());
        content(&call(mcp, "get_ticket", json!({"ticket_id": id})).await);
    }
    let list = app.get(acme, "/v1/tickets").await;
    assert!(list.status().is_success(), "{}", list.status());
    content(&call(mcp, "get_operation_status", json!({"operation_id": key})).await);
    content(&call(mcp, "list_tickets", json!({})).await);
}

async fn creates_received(sim: &RunningSim) -> u64 {
    sim.client()
        .counts()
        .await
        .expect("the simulator's counts")
        .creates_received
}

async fn no_read_sends_anything_to_the_provider(db: TestDatabase) {
    // Told that nothing is in flight once answered, the server can prove a
    // ticket absent at once, which is where a read that acted would send
    // the create again; the hang needs a server told to wait for it.
    let settled_at_once = [
        Case::Create(Fault::FailBeforeCommit),
        Case::Create(Fault::CommitThenDrop),
        Case::Create(Fault::CommitThen500),
        Case::Create(Fault::Reject),
        Case::SearchFails,
        Case::Outage,
    ];
    reads_send_nothing(&db, Duration::ZERO, &settled_at_once).await;
    let in_flight = Duration::from_millis(HANG_MS + 400);
    reads_send_nothing(&db, in_flight, &[Case::Create(Fault::Hang { ms: HANG_MS })]).await;
}

/// Each case against one server: a create under the fault, then every read
/// three times, and not one more create request at the simulator.
async fn reads_send_nothing(db: &TestDatabase, max_inflight: Duration, cases: &[Case]) {
    let (app, sim) = spawn_remote_with(db, max_inflight).await;
    let acme = app
        .tenant(&format!("acme{}", max_inflight.as_millis()))
        .await;
    let mcp = connect(&app, &acme.token, Protocol::Stateless).await;
    for case in cases {
        let key = fresh_key();
        let title = format!("Disk full {key}");
        match case {
            Case::Create(fault) => sim
                .client()
                .add_fault(&FaultRule::create(fault.clone()).title_contains(&key))
                .await
                .expect("set the fault"),
            Case::SearchFails => {
                let client = sim.client();
                client
                    .add_fault(&FaultRule::create(Fault::CommitThenDrop).title_contains(&key))
                    .await
                    .expect("set the fault");
                client
                    .add_fault(&FaultRule::search(Fault::FailBeforeCommit).times(100))
                    .await
                    .expect("set the fault");
            }
            Case::Outage => sim
                .client()
                .outage(Duration::from_millis(300))
                .await
                .expect("an outage"),
        }
        let body = json!({"project_id": "ops", "title": title}).to_string();
        let answer = app.post_ticket(&acme, Some(&key), &body).await;
        let answered = answer.status();
        // After the outage, the simulator listens again within its pause.
        let control = sim.client();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !control.healthy().await {
            assert!(
                std::time::Instant::now() < deadline,
                "the simulator listens again"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let before = creates_received(&sim).await;
        for _ in 0..3 {
            read_everything(&app, &acme, &mcp, &key).await;
        }
        assert_eq!(
            creates_received(&sim).await,
            before,
            "{case:?} (the create answered {answered}): a read sent a create to the provider"
        );
        sim.client().clear_faults().await.expect("clear the faults");
    }
}

/// The annotation of every tool: whether it is open-world.
fn open_world(tools: &[rmcp::model::Tool]) -> BTreeMap<String, Option<bool>> {
    tools
        .iter()
        .map(|tool| {
            let hint = tool.annotations.as_ref().and_then(|a| a.open_world_hint);
            (tool.name.to_string(), hint)
        })
        .collect()
}

/// On the remote backend, the create (sent to the provider) and the status
/// read (which may search it) are open-world; every other tool, and every
/// tool on the local backend, is closed. Their contract hashes differ from
/// the local ones exactly there.
async fn the_tools_say_which_reach_the_provider(db: TestDatabase) {
    let (app, _sim) = spawn_remote_with(&db, Duration::ZERO).await;
    let acme = app.tenant("acme").await;
    let mcp = connect(&app, &acme.token, Protocol::Stateless).await;
    let remote = mcp.list_all_tools().await.expect("tools/list");
    let local = TicketTools::definitions();
    let reaching: Vec<_> = open_world(&remote)
        .into_iter()
        .filter(|(_, hint)| *hint == Some(true))
        .map(|(name, _)| name)
        .collect();
    assert_eq!(reaching, ["create_ticket", "get_operation_status"]);
    assert!(
        open_world(&local).values().all(|hint| *hint == Some(false)),
        "{:?}",
        open_world(&local)
    );
    let hash = |tool: &rmcp::model::Tool| {
        tool.meta
            .as_ref()
            .and_then(|m| m.get(mcp_door::contract::CONTRACT_HASH_META))
            .and_then(|h| h.as_str())
            .map(str::to_owned)
    };
    for tool in &remote {
        let here = local
            .iter()
            .find(|t| t.name == tool.name)
            .expect("the same tools on both backends");
        let changed = hash(tool) != hash(here);
        assert_eq!(
            changed,
            reaching.contains(&tool.name.to_string()),
            "{}: its contract hash changes exactly when its annotation does",
            tool.name
        );
    }
}

kitchen::on_both_databases!(
    no_read_sends_anything_to_the_provider,
    the_tools_say_which_reach_the_provider,
);
