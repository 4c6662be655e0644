//! The lifecycle of an operation_id over MCP, on a clock the test moves:
//! within the replay window a retry replays (and says until when); past it
//! the same call answers `expired` with the resource as it is now, and
//! nothing new is made; another call with the key is still a conflict;
//! get_operation_status shows each phase; past the tombstone horizon the key
//! is forgotten and free again. Every write tool, on both databases.

use std::time::Duration;

use e2e_tests::{TestApp, snapshot_settings};
use kitchen::testing::TestDatabase;
use kitchen::{Clock, KitchenConfig};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::fresh_key;
use crate::mcp_support::{Client, Protocol, call, connect, content, new_ticket, status_of};

/// The replay window the server runs with.
const WINDOW: time::Duration = time::Duration::days(30);
/// The tombstone horizon the server runs with.
const HORIZON: time::Duration = time::Duration::days(400);

/// A server whose kitchen reads `clock`, and a client of one tenant.
struct Lifecycle {
    /// Kept alive for the client.
    _app: TestApp,
    clock: Clock,
    client: Client,
}

impl Lifecycle {
    async fn start(db: &TestDatabase) -> Self {
        let clock = Clock::manual(OffsetDateTime::now_utc());
        let config = KitchenConfig {
            clock: clock.clone(),
            replay_window: WINDOW,
            tombstone_horizon: HORIZON,
            ..KitchenConfig::default()
        };
        let app = TestApp::spawn_with(db, config, Duration::from_secs(30)).await;
        let acme = app.tenant("acme").await;
        let client = connect(&app, &acme.token, Protocol::Stateless).await;
        Self {
            _app: app,
            clock,
            client,
        }
    }

    /// Calls `tool`: whether it was a tool error, and its content.
    async fn answer(&self, tool: &'static str, args: &Value) -> (bool, Value) {
        let result = call(&self.client, tool, args.clone()).await;
        (result.is_error == Some(true), content(&result))
    }

    /// Calls `tool`, which must answer `status` without a tool error.
    async fn expect(&self, tool: &'static str, args: &Value, status: &str) -> Value {
        let (error, body) = self.answer(tool, args).await;
        assert!(!error, "{tool}: {body}");
        assert_eq!(body["status"], status, "{tool}: {body}");
        body
    }

    /// Moves the clock just past the replay window of a key used now.
    fn past_the_window(&self) {
        self.clock.advance(WINDOW + time::Duration::days(1));
    }

    /// Moves the clock past the tombstone horizon of a key used before
    /// [`Self::past_the_window`].
    fn past_the_horizon(&self) {
        self.clock.advance(HORIZON);
    }

    /// The tenant's tickets, through list_tickets.
    async fn ticket_ids(&self) -> Vec<String> {
        let (_, page) = self.answer("list_tickets", &json!({"limit": 100})).await;
        ids(&page["tickets"])
    }

    /// The ticket's comments, through list_comments.
    async fn comment_ids(&self, ticket_id: &str) -> Vec<String> {
        let (_, page) = self
            .answer("list_comments", &json!({"ticket_id": ticket_id}))
            .await;
        ids(&page["comments"])
    }

    /// The ticket, through get_ticket.
    async fn ticket(&self, id: &str) -> Value {
        self.answer("get_ticket", &json!({"ticket_id": id})).await.1["ticket"].clone()
    }
}

fn ids(items: &Value) -> Vec<String> {
    items
        .as_array()
        .expect("a list")
        .iter()
        .map(|i| i["id"].as_str().expect("an id").to_owned())
        .collect()
}

fn time_of(body: &Value, field: &str) -> OffsetDateTime {
    let raw = body[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {body}"));
    OffsetDateTime::parse(raw, &Rfc3339).unwrap_or_else(|e| panic!("{field} {raw}: {e}"))
}

/// A replayable status: the first answer's resource, the id, the dates.
fn assert_replayable_status(status: &Value, resource_id: &str, replayable_until: &Value) {
    assert_eq!(status["state"], "succeeded", "{status}");
    assert_eq!(status["phase"], "replayable", "{status}");
    assert_eq!(status["resource_id"], resource_id, "{status}");
    assert_eq!(status["replayable_until"], *replayable_until, "{status}");
    // Each horizon is rounded up to a whole second.
    let created = time_of(status, "created_at");
    let window = time_of(status, "replayable_until") - created;
    assert!(
        window >= WINDOW && window < WINDOW + time::Duration::SECOND,
        "{status}"
    );
    let kept = time_of(status, "retained_until") - created;
    assert!(
        kept >= HORIZON && kept < HORIZON + time::Duration::SECOND,
        "{status}"
    );
    assert_eq!(status["retry_safe"], true);
}

/// An expired status: the effect and its dates, no first answer, and words
/// that say the key is spent until retained_until.
fn assert_expired_status(status: &Value, resource_id: &str, replayable_until: &Value) {
    assert_eq!(status["state"], "succeeded", "{status}");
    assert_eq!(status["phase"], "expired", "{status}");
    assert_eq!(status["resource_id"], resource_id, "{status}");
    assert_eq!(status["replayable_until"], *replayable_until, "{status}");
    assert!(status["created_at"].is_string(), "{status}");
    assert_eq!(status["ticket"], Value::Null, "only a tombstone is kept");
    assert!(status.get("comment").is_none(), "{status}");
    assert_eq!(status["retry_safe"], true);
    let retained = status["retained_until"].as_str().expect("retained_until");
    let step = status["next_step"].as_str().expect("a next_step");
    assert!(
        step.contains(&format!("This operation_id is spent until {retained}")),
        "{step}"
    );
    assert!(step.contains("makes nothing new"), "{step}");
    assert!(
        step.contains("Do not retry with a new operation_id"),
        "{step}"
    );
}

/// The expired answer: not an error, the resource as it is now, the
/// horizon that passed, and the way to read it.
fn assert_expired(
    lc: &Lifecycle,
    body: &Value,
    replayable_until: &Value,
    ticket_id: &str,
    read_with: &str,
) {
    assert_eq!(body["status"], "expired", "{body}");
    assert_eq!(body["replayable_until"], *replayable_until, "{body}");
    assert!(time_of(body, "replayable_until") < lc.clock.now(), "{body}");
    assert!(body.get("original_operation").is_none(), "{body}");
    let step = body["next_step"].as_str().expect("a next_step");
    assert!(step.contains(&format!("ticket_id {ticket_id}")), "{step}");
    assert!(step.contains("as it is now"), "{step}");
    assert!(
        step.contains(&format!("read it again with {read_with}")),
        "{step}"
    );
    assert!(step.contains("with a new operation_id"), "{step}");
}

/// The same key with other arguments, after the window: still a conflict.
async fn assert_conflict(
    lc: &Lifecycle,
    tool: &'static str,
    args: &Value,
    replayable_until: &Value,
    ticket_id: &str,
) {
    let (error, body) = lc.answer(tool, args).await;
    assert!(error, "{tool}: {body}");
    assert_eq!(body["status"], "conflict", "{tool}: {body}");
    assert_eq!(
        body["replayable_until"], *replayable_until,
        "the original's horizon"
    );
    assert_eq!(body["original_operation"]["ticket_id"], ticket_id, "{body}");
}

async fn create_ticket_replays_expires_and_is_forgotten(db: TestDatabase) {
    let lc = Lifecycle::start(&db).await;
    let key = fresh_key();
    let args = json!({"operation_id": key, "project_id": "ops", "title": "Disk full"});

    let created = lc.expect("create_ticket", &args, "created").await;
    let id = created["ticket"]["id"].as_str().expect("an id").to_owned();
    let horizon = created["replayable_until"].clone();
    assert!(horizon.is_string(), "{created}");
    let replayed = lc.expect("create_ticket", &args, "replayed").await;
    assert_eq!(replayed["replayable_until"], horizon);
    assert_eq!(replayed["ticket"], created["ticket"]);
    let status = status_of(&lc.client, "create_ticket", &key).await;
    assert_replayable_status(&status, &id, &horizon);
    assert_eq!(status["ticket"], created["ticket"]);
    // The ticket changes, so that "as it is now" differs from the first answer.
    lc.expect(
        "update_ticket",
        &json!({"ticket_id": id, "title": "Disk full on db-1", "operation_id": fresh_key()}),
        "updated",
    )
    .await;

    lc.past_the_window();
    let (error, expired) = lc.answer("create_ticket", &args).await;
    assert!(!error, "an expired key is not an error: {expired}");
    assert_expired(&lc, &expired, &horizon, &id, "get_ticket");
    assert_eq!(expired["operation_id"], key.as_str());
    assert_eq!(expired["ticket"]["id"], id.as_str());
    assert_eq!(
        expired["ticket"]["title"], "Disk full on db-1",
        "now, not then"
    );
    assert_eq!(expired["ticket"]["version"], 2);
    assert_eq!(expired["ticket"], lc.ticket(&id).await);
    assert!(
        expired["next_step"]
            .as_str()
            .is_some_and(|s| s.contains("already created this ticket")),
        "{expired}"
    );
    assert_eq!(lc.ticket_ids().await, [id.as_str()], "one ticket");
    let other = json!({"operation_id": key, "project_id": "ops", "title": "Disk full again"});
    assert_conflict(&lc, "create_ticket", &other, &horizon, &id).await;
    let status = status_of(&lc.client, "create_ticket", &key).await;
    assert_expired_status(&status, &id, &horizon);
    assert_eq!(lc.ticket_ids().await, [id.as_str()], "still one ticket");
    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!("mcp_create_expired", expired);
        insta::assert_json_snapshot!("mcp_operation_status_expired", status);
    });

    lc.past_the_horizon();
    let forgotten = status_of(&lc.client, "create_ticket", &key).await;
    assert_eq!(forgotten["state"], "not_found", "{forgotten}");
    assert!(forgotten.get("phase").is_none(), "{forgotten}");
    let step = forgotten["next_step"].as_str().expect("a next_step");
    assert!(step.contains("tombstone horizon"), "{step}");
    let again = lc.expect("create_ticket", &args, "created").await;
    let new_id = again["ticket"]["id"].as_str().expect("an id");
    assert_ne!(new_id, id, "a forgotten key makes a new ticket");
    assert_eq!(lc.ticket_ids().await.len(), 2);
    assert_ne!(again["replayable_until"], horizon, "a new window");
}

async fn update_ticket_replays_expires_and_is_forgotten(db: TestDatabase) {
    let lc = Lifecycle::start(&db).await;
    let id = new_ticket(&lc.client, "Disk full").await;
    let key = fresh_key();
    let args = json!({"ticket_id": id, "priority": "high", "operation_id": key});

    let updated = lc.expect("update_ticket", &args, "updated").await;
    let horizon = updated["replayable_until"].clone();
    assert!(horizon.is_string(), "{updated}");
    let replayed = lc.expect("update_ticket", &args, "replayed").await;
    assert_eq!(replayed["replayable_until"], horizon);
    let status = status_of(&lc.client, "update_ticket", &key).await;
    assert_replayable_status(&status, &id, &horizon);
    assert_eq!(status["ticket"], updated["ticket"]);
    lc.expect(
        "transition_ticket",
        &json!({"ticket_id": id, "to": "in_progress", "operation_id": fresh_key()}),
        "updated",
    )
    .await;

    lc.past_the_window();
    let (error, expired) = lc.answer("update_ticket", &args).await;
    assert!(!error, "{expired}");
    assert_expired(&lc, &expired, &horizon, &id, "get_ticket");
    assert_eq!(expired["ticket"]["id"], id.as_str());
    assert_eq!(expired["ticket"]["status"], "in_progress", "now, not then");
    assert_eq!(expired["ticket"]["version"], 3, "nothing changed again");
    assert_eq!(expired["ticket"], lc.ticket(&id).await);
    assert_eq!(lc.ticket_ids().await, [id.as_str()]);
    let other = json!({"ticket_id": id, "priority": "low", "operation_id": key});
    assert_conflict(&lc, "update_ticket", &other, &horizon, &id).await;
    let status = status_of(&lc.client, "update_ticket", &key).await;
    assert_expired_status(&status, &id, &horizon);
    assert_eq!(lc.ticket(&id).await["version"], 3);
    snapshot_settings().bind(|| insta::assert_json_snapshot!("mcp_update_expired", expired));

    lc.past_the_horizon();
    let forgotten = status_of(&lc.client, "update_ticket", &key).await;
    assert_eq!(forgotten["state"], "not_found", "{forgotten}");
    // The key is free again: the same call is a new write, with a new window.
    let again = lc.expect("update_ticket", &args, "updated").await;
    assert!(
        time_of(&again, "replayable_until") > lc.clock.now(),
        "{again}"
    );
}

async fn transition_ticket_replays_expires_and_is_forgotten(db: TestDatabase) {
    let lc = Lifecycle::start(&db).await;
    let id = new_ticket(&lc.client, "Disk full").await;
    let key = fresh_key();
    let args = json!({"ticket_id": id, "to": "in_progress", "operation_id": key});

    let moved = lc.expect("transition_ticket", &args, "updated").await;
    let horizon = moved["replayable_until"].clone();
    assert!(horizon.is_string(), "{moved}");
    let replayed = lc.expect("transition_ticket", &args, "replayed").await;
    assert_eq!(replayed["replayable_until"], horizon);
    let status = status_of(&lc.client, "transition_ticket", &key).await;
    assert_replayable_status(&status, &id, &horizon);
    lc.expect(
        "update_ticket",
        &json!({"ticket_id": id, "title": "Disk full on db-1", "operation_id": fresh_key()}),
        "updated",
    )
    .await;

    lc.past_the_window();
    let (error, expired) = lc.answer("transition_ticket", &args).await;
    assert!(!error, "{expired}");
    assert_expired(&lc, &expired, &horizon, &id, "get_ticket");
    assert_eq!(
        expired["ticket"]["title"], "Disk full on db-1",
        "now, not then"
    );
    assert_eq!(expired["ticket"]["status"], "in_progress");
    assert_eq!(expired["ticket"]["version"], 3, "nothing moved again");
    assert_eq!(expired["ticket"], lc.ticket(&id).await);
    assert_eq!(lc.ticket_ids().await, [id.as_str()]);
    let other = json!({"ticket_id": id, "to": "resolved", "operation_id": key});
    assert_conflict(&lc, "transition_ticket", &other, &horizon, &id).await;
    let status = status_of(&lc.client, "transition_ticket", &key).await;
    assert_expired_status(&status, &id, &horizon);
    snapshot_settings().bind(|| insta::assert_json_snapshot!("mcp_transition_expired", expired));

    lc.past_the_horizon();
    let forgotten = status_of(&lc.client, "transition_ticket", &key).await;
    assert_eq!(forgotten["state"], "not_found", "{forgotten}");
}

async fn add_comment_replays_expires_and_is_forgotten(db: TestDatabase) {
    let lc = Lifecycle::start(&db).await;
    let id = new_ticket(&lc.client, "Disk full").await;
    let key = fresh_key();
    let args = json!({"ticket_id": id, "body": "On it", "operation_id": key});

    let added = lc.expect("add_comment", &args, "created").await;
    let comment_id = added["comment"]["id"].as_str().expect("an id").to_owned();
    let horizon = added["replayable_until"].clone();
    assert!(horizon.is_string(), "{added}");
    let replayed = lc.expect("add_comment", &args, "replayed").await;
    assert_eq!(replayed["replayable_until"], horizon);
    let status = status_of(&lc.client, "add_comment", &key).await;
    assert_replayable_status(&status, &comment_id, &horizon);
    assert_eq!(status["comment"], added["comment"]);
    lc.expect(
        "transition_ticket",
        &json!({"ticket_id": id, "to": "in_progress", "operation_id": fresh_key()}),
        "updated",
    )
    .await;

    lc.past_the_window();
    let (error, expired) = lc.answer("add_comment", &args).await;
    assert!(!error, "{expired}");
    assert_expired(&lc, &expired, &horizon, &id, "list_comments");
    assert_eq!(
        expired["comment"], added["comment"],
        "a comment does not change"
    );
    assert_eq!(
        lc.comment_ids(&id).await,
        [comment_id.as_str()],
        "one comment"
    );
    let other = json!({"ticket_id": id, "body": "On it now", "operation_id": key});
    assert_conflict(&lc, "add_comment", &other, &horizon, &id).await;
    let status = status_of(&lc.client, "add_comment", &key).await;
    assert_expired_status(&status, &comment_id, &horizon);
    assert!(
        status["next_step"]
            .as_str()
            .is_some_and(|s| s.contains("list_comments")),
        "{status}"
    );
    assert_eq!(lc.comment_ids(&id).await, [comment_id.as_str()]);
    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!("mcp_comment_expired", expired);
        insta::assert_json_snapshot!("mcp_operation_status_expired_comment", status);
    });

    lc.past_the_horizon();
    let forgotten = status_of(&lc.client, "add_comment", &key).await;
    assert_eq!(forgotten["state"], "not_found", "{forgotten}");
    let again = lc.expect("add_comment", &args, "created").await;
    assert_ne!(again["comment"]["id"], comment_id.as_str());
    assert_eq!(
        lc.comment_ids(&id).await.len(),
        2,
        "a forgotten key adds anew"
    );
}

kitchen::on_both_databases!(
    create_ticket_replays_expires_and_is_forgotten,
    update_ticket_replays_expires_and_is_forgotten,
    transition_ticket_replays_expires_and_is_forgotten,
    add_comment_replays_expires_and_is_forgotten,
);
