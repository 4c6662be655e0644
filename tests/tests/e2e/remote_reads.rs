//! On the remote backend a read observes and never acts: no read route and
//! no read tool sends anything to the provider, under every fault the
//! simulator can put on a write (a create, an update, a move, a comment) or
//! on a search. The ground truth is the simulator's own count of write
//! requests received, of every kind. And the tools' annotations say so:
//! only the tools that reach the provider on this deployment are
//! open-world.

use std::collections::BTreeMap;
use std::time::Duration;

use e2e_tests::{TestApp, TestTenant};
use kitchen::Action;
use kitchen::testing::TestDatabase;
use mcp_door::TicketTools;
use provider_sim::{Fault, FaultOn, FaultRule, RunningSim};
use serde_json::json;

use crate::fresh_key;
use crate::mcp_support::{Client, Protocol, call, connect, content, status_of};
use crate::rest_remote::spawn_remote_with;

/// How long the simulator's hang fault holds a write: past the server's
/// 500 ms provider timeout, within what it is told may still land.
const HANG_MS: u64 = 800;

/// What happens to the write (and, for some, the search after it).
#[derive(Debug, Clone)]
enum Case {
    /// A fault on the write itself.
    Write(Fault),
    /// The write's answer is lost and every search fails.
    SearchFails,
    /// The provider stops listening.
    Outage,
}

/// One write sent under a fault: what the reads look up.
struct Sent {
    action: Action,
    key: String,
    /// The ticket the write made or acted on, once known.
    ticket: Option<String>,
}

/// The simulator's request kind for `action`; none for an action that
/// never reaches the provider (the remote backend refuses it at once).
fn fault_on(action: Action) -> Option<FaultOn> {
    match action {
        Action::CreateTicket => Some(FaultOn::Create),
        Action::UpdateTicket => Some(FaultOn::Update),
        Action::TransitionTicket => Some(FaultOn::Transition),
        Action::AddComment => Some(FaultOn::Comment),
        Action::AddLabel | Action::RemoveLabel => None,
    }
}

/// The ticket a write of `action` acts on, titled with `mark`, made now
/// (with no fault scheduled for creates, at once); `None` for a create,
/// which makes its own.
async fn subject(app: &TestApp, acme: &TestTenant, action: Action, mark: &str) -> Option<String> {
    if action == Action::CreateTicket {
        return None;
    }
    let made = app
        .post_ticket(acme, Some(&fresh_key()), &ticket_body(mark))
        .await;
    assert_eq!(made.status(), 201, "the ticket to {action} on");
    let made: serde_json::Value = made.json().await.expect("JSON");
    Some(made["id"].as_str().expect("an id").to_owned())
}

fn ticket_body(mark: &str) -> String {
    json!({"project_id": "ops", "title": format!("Disk full {mark}")}).to_string()
}

/// Sends the write of `action` (on `ticket`, or a create titled with
/// `mark`) over REST; answers what was sent and the status it answered.
async fn send(
    app: &TestApp,
    acme: &TestTenant,
    action: Action,
    mark: &str,
    ticket: Option<String>,
) -> (Sent, u16) {
    let key = fresh_key();
    let id = ticket.clone().unwrap_or_default();
    let (method, path, body) = match action {
        Action::CreateTicket => (
            reqwest::Method::POST,
            "/v1/tickets".to_owned(),
            ticket_body(mark),
        ),
        Action::UpdateTicket => (
            reqwest::Method::PATCH,
            format!("/v1/tickets/{id}"),
            r#"{"priority":"high"}"#.to_owned(),
        ),
        Action::TransitionTicket => (
            reqwest::Method::POST,
            format!("/v1/tickets/{id}/transitions"),
            r#"{"to":"in_progress"}"#.to_owned(),
        ),
        Action::AddComment => (
            reqwest::Method::POST,
            format!("/v1/tickets/{id}/comments"),
            r#"{"body":"Looking into it"}"#.to_owned(),
        ),
        Action::AddLabel => (
            reqwest::Method::POST,
            format!("/v1/tickets/{id}/labels"),
            r#"{"label":"disk"}"#.to_owned(),
        ),
        Action::RemoveLabel => (
            reqwest::Method::DELETE,
            format!("/v1/tickets/{id}/labels/disk"),
            String::new(),
        ),
    };
    let answer = app
        .client
        .request(method, app.url(&path))
        .bearer_auth(&acme.token)
        .header("content-type", "application/json")
        .header("idempotency-key", &key)
        .body(body)
        .send()
        .await
        .expect("the server answers");
    let status = answer.status().as_u16();
    (
        Sent {
            action,
            key,
            ticket,
        },
        status,
    )
}

/// Every read the doors offer about one operation and its ticket.
async fn read_everything(app: &TestApp, acme: &TestTenant, mcp: &Client, sent: &Sent) {
    let action = sent.action.as_str();
    let key = &sent.key;
    let status = app
        .get(acme, &format!("/v1/operations/{action}/{key}"))
        .await;
    assert!(
        status.status().is_success(),
        "status read: {}",
        status.status()
    );
    let body: serde_json::Value = status.json().await.expect("JSON");
    let ticket = sent
        .ticket
        .clone()
        .or_else(|| body["resource_id"].as_str().map(str::to_owned));
    if let Some(id) = ticket {
        for path in [
            format!("/v1/tickets/{id}"),
            format!("/v1/tickets/{id}/history"),
            format!("/v1/tickets/{id}/comments"),
        ] {
            let read = app.get(acme, &path).await;
            assert!(read.status().is_success(), "{path}: {}", read.status());
        }
        content(&call(mcp, "get_ticket", json!({"ticket_id": id})).await);
        content(&call(mcp, "list_comments", json!({"ticket_id": id})).await);
    }
    let list = app.get(acme, "/v1/tickets").await;
    assert!(list.status().is_success(), "{}", list.status());
    status_of(mcp, action, key).await;
    content(&call(mcp, "list_tickets", json!({})).await);
}

/// Write requests of every kind the simulator received.
async fn writes_received(sim: &RunningSim) -> u64 {
    sim.client()
        .counts()
        .await
        .expect("the simulator's counts")
        .effects_received()
}

async fn no_read_sends_anything_to_the_provider(db: TestDatabase) {
    // Told that nothing is in flight once answered, the server can prove a
    // write absent at once, which is where a read that acted would send it
    // again; the hang needs a server told to wait for it.
    let settled_at_once = [
        Case::Write(Fault::FailBeforeCommit),
        Case::Write(Fault::CommitThenDrop),
        Case::Write(Fault::CommitThen500),
        Case::Write(Fault::Reject),
        Case::SearchFails,
        Case::Outage,
    ];
    reads_send_nothing(&db, Duration::ZERO, &settled_at_once).await;
    let in_flight = Duration::from_millis(HANG_MS + 400);
    reads_send_nothing(&db, in_flight, &[Case::Write(Fault::Hang { ms: HANG_MS })]).await;
}

/// Each case, for each action, against one server: a write under the
/// fault, then every read three times, and not one more write request of
/// any kind at the simulator.
async fn reads_send_nothing(db: &TestDatabase, max_inflight: Duration, cases: &[Case]) {
    let (app, sim) = spawn_remote_with(db, max_inflight).await;
    let acme = app
        .tenant(&format!("acme{}", max_inflight.as_millis()))
        .await;
    let mcp = connect(&app, &acme.token, Protocol::Stateless).await;
    // An action that never reaches the provider has no fault to be sent
    // under (`remote_refusals` checks it is refused).
    for action in Action::ALL {
        let Some(on) = fault_on(action) else {
            assert!(
                !kitchen::reaches_provider(action),
                "{action} reaches the provider, so it needs a fault kind here"
            );
            continue;
        };
        for case in cases {
            let mark = fresh_key();
            let ticket = subject(&app, &acme, action, &mark).await;
            let client = sim.client();
            match case {
                Case::Write(fault) => client
                    .add_fault(&FaultRule::on(on, fault.clone()).title_contains(&mark))
                    .await
                    .expect("set the fault"),
                Case::SearchFails => {
                    client
                        .add_fault(&FaultRule::on(on, Fault::CommitThenDrop).title_contains(&mark))
                        .await
                        .expect("set the fault");
                    client
                        .add_fault(&FaultRule::search(Fault::FailBeforeCommit).times(100))
                        .await
                        .expect("set the fault");
                }
                Case::Outage => client
                    .outage(Duration::from_millis(300))
                    .await
                    .expect("an outage"),
            }
            let (sent, answered) = send(&app, &acme, action, &mark, ticket).await;
            let case = format!("{case:?}");
            assert_reads_send_nothing(&app, &acme, &mcp, &sim, &sent, &case, answered).await;
            sim.client().clear_faults().await.expect("clear the faults");
        }
    }
}

/// Waits for the simulator to listen (after an outage), then reads
/// everything three times and checks no write request arrived meanwhile.
async fn assert_reads_send_nothing(
    app: &TestApp,
    acme: &TestTenant,
    mcp: &Client,
    sim: &RunningSim,
    sent: &Sent,
    case: &str,
    answered: u16,
) {
    let control = sim.client();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !control.healthy().await {
        assert!(
            std::time::Instant::now() < deadline,
            "the simulator listens again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = writes_received(sim).await;
    for _ in 0..3 {
        read_everything(app, acme, mcp, sent).await;
    }
    assert_eq!(
        writes_received(sim).await,
        before,
        "{} {case} (the write answered {answered}): a read sent a write to the provider",
        sent.action
    );
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

/// On the remote backend, the writes (sent to the provider) and the status
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
    assert_eq!(
        reaching,
        [
            "add_comment",
            "create_ticket",
            "get_operation_status",
            "transition_ticket",
            "update_ticket"
        ]
    );
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
