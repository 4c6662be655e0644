//! The lifecycle of a key over REST, for every write, with a clock the test
//! moves: within the replay window a retry replays the first answer; past
//! it the same request answers `200` with the resource as it is now and
//! `Idempotent-Replayed: expired`, makes nothing new, and another request is
//! still refused; past the tombstone horizon the key is free again. Every
//! answer advertises the window's end in `Idempotency-Replayable-Until`,
//! and the answers do not change when the sweep makes the record a
//! tombstone.

use std::time::Duration;

use e2e_tests::{TestApp, TestTenant, snapshot_settings};
use kitchen::testing::TestDatabase;
use kitchen::{Clock, KitchenConfig};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;

use crate::fresh_key;
use crate::rest_lifecycle::{Answer, comment, create, get, history, patch, transition};

/// When every first use in these tests happens: not a whole second, so the
/// horizons show their rounding up.
const START: OffsetDateTime = datetime!(2026-03-01 09:00:00.25 UTC);
/// The replay window the server is given.
const WINDOW: time::Duration = time::Duration::days(30);
/// The tombstone horizon the server is given.
const HORIZON: time::Duration = time::Duration::days(400);
/// START + WINDOW, rounded up to a whole second.
const REPLAYABLE_UNTIL: OffsetDateTime = datetime!(2026-03-31 09:00:01 UTC);
/// START + HORIZON, rounded up to a whole second.
const RETAINED_UNTIL: OffsetDateTime = datetime!(2027-04-05 09:00:01 UTC);

const HORIZON_HEADER: &str = "idempotency-replayable-until";

/// A server whose kitchen reads `clock`, with the window and horizon above.
async fn spawn(db: &TestDatabase, clock: &Clock) -> TestApp {
    let config = KitchenConfig {
        clock: clock.clone(),
        replay_window: WINDOW,
        tombstone_horizon: HORIZON,
        ..KitchenConfig::default()
    };
    TestApp::spawn_with(db, config, Duration::from_secs(30)).await
}

/// One of the four writes, sent with a key: the request under test, or
/// another one (a conflict with it).
#[derive(Debug, Clone, Copy)]
enum Write {
    Create,
    Update,
    Transition,
    Comment,
}

impl Write {
    fn action(self) -> &'static str {
        match self {
            Self::Create => "create_ticket",
            Self::Update => "update_ticket",
            Self::Transition => "transition_ticket",
            Self::Comment => "add_comment",
        }
    }

    /// The status of its first answer (and of a replay).
    fn created_status(self) -> u16 {
        match self {
            Self::Create | Self::Comment => 201,
            Self::Update | Self::Transition => 200,
        }
    }

    /// Sends the request under test (`same`) or another one with `key`, on
    /// `ticket` (none for a create).
    async fn send(
        self,
        app: &TestApp,
        tenant: &TestTenant,
        ticket: &str,
        key: &str,
        same: bool,
    ) -> Answer {
        match (self, same) {
            (Self::Create, true) => {
                Answer::of(
                    app.post_ticket(
                        tenant,
                        Some(key),
                        r#"{"project_id":"ops","title":"Disk full"}"#,
                    )
                    .await,
                )
                .await
            }
            (Self::Create, false) => {
                Answer::of(
                    app.post_ticket(tenant, Some(key), r#"{"project_id":"ops","title":"Other"}"#)
                        .await,
                )
                .await
            }
            (Self::Update, true) => patch(app, tenant, ticket, key, None, r#"{"title":"A"}"#).await,
            (Self::Update, false) => {
                patch(app, tenant, ticket, key, None, r#"{"title":"B"}"#).await
            }
            (Self::Transition, true) => {
                transition(app, tenant, ticket, key, r#"{"to":"in_progress"}"#).await
            }
            (Self::Transition, false) => {
                transition(app, tenant, ticket, key, r#"{"to":"resolved"}"#).await
            }
            (Self::Comment, true) => comment(app, tenant, ticket, key, r#"{"body":"Seen."}"#).await,
            (Self::Comment, false) => {
                comment(app, tenant, ticket, key, r#"{"body":"Other."}"#).await
            }
        }
    }

    /// Someone else's change to the ticket, made between the first answer
    /// and the late retry, so that "as it is now" differs from the first
    /// answer. Answers what the ticket's title is afterwards.
    async fn change_meanwhile(self, app: &TestApp, tenant: &TestTenant, ticket: &str) -> String {
        let changed = match self {
            // A move on from where the write under test left it (it moved
            // the ticket to in_progress).
            Self::Transition => {
                transition(app, tenant, ticket, &fresh_key(), r#"{"to":"resolved"}"#).await
            }
            Self::Create | Self::Update | Self::Comment => {
                patch(
                    app,
                    tenant,
                    ticket,
                    &fresh_key(),
                    None,
                    r#"{"title":"Changed meanwhile"}"#,
                )
                .await
            }
        };
        assert_eq!(
            changed.status,
            200,
            "{}",
            String::from_utf8_lossy(&changed.body)
        );
        changed.json()["title"]
            .as_str()
            .expect("a title")
            .to_owned()
    }
}

/// The comments on `ticket`.
async fn comments(app: &TestApp, tenant: &TestTenant, ticket: &str) -> Vec<Value> {
    let page = get(
        app,
        tenant,
        &format!("/v1/tickets/{ticket}/comments?limit=200"),
    )
    .await;
    assert_eq!(page.status, 200);
    page.json()["comments"]
        .as_array()
        .expect("comments")
        .clone()
}

/// What the tenant has: tickets, history entries of `ticket`, comments on
/// it. A write that makes nothing leaves all three as they were.
async fn footprint(app: &TestApp, tenant: &TestTenant, ticket: &str) -> (usize, usize, usize) {
    (
        app.ticket_count(tenant).await,
        history(app, tenant, ticket).await.len(),
        comments(app, tenant, ticket).await.len(),
    )
}

/// The expired answer as a snapshot shows it: status, the headers of the
/// contract, and the body.
fn expired_shape(answer: &Answer) -> Value {
    let headers: serde_json::Map<String, Value> = [
        "content-type",
        "etag",
        "location",
        "idempotent-replayed",
        HORIZON_HEADER,
    ]
    .iter()
    .filter_map(|name| answer.header(name).map(|v| ((*name).to_owned(), v.into())))
    .collect();
    json!({ "status": answer.status, "headers": headers, "body": answer.json() })
}

/// A status lookup, with the fingerprint (which covers a new ticket id
/// each run) checked and redacted.
fn redacted_status(mut status: Value) -> Value {
    assert!(
        status["fingerprint"]
            .as_str()
            .is_some_and(|f| f.starts_with("v1:"))
    );
    status["fingerprint"] = "[fingerprint]".into();
    status
}

/// The whole life of one key of `write`.
async fn a_key_lives_through_its_phases(db: TestDatabase, write: Write) {
    let clock = Clock::manual(START);
    let app = spawn(&db, &clock).await;
    let acme = app.tenant("acme").await;
    let action = write.action();
    let replayable_until = kitchen::rfc3339(REPLAYABLE_UNTIL);
    let retained_until = kitchen::rfc3339(RETAINED_UNTIL);
    assert_eq!(replayable_until, "2026-03-31T09:00:01Z");
    assert_eq!(retained_until, "2027-04-05T09:00:01Z");

    // The ticket the write acts on (a create makes its own).
    let base = match write {
        Write::Create => None,
        Write::Update | Write::Transition | Write::Comment => Some(create(&app, &acme).await),
    };
    let key = fresh_key();
    let first = write
        .send(&app, &acme, base.as_deref().unwrap_or_default(), &key, true)
        .await;
    assert_eq!(
        first.status,
        write.created_status(),
        "{}",
        String::from_utf8_lossy(&first.body)
    );
    assert!(first.header("idempotent-replayed").is_none());
    assert_eq!(
        first.header(HORIZON_HEADER),
        Some(replayable_until.as_str()),
        "the first answer says until when it replays: first use + window, rounded up"
    );
    let made = first.json();
    let ticket = base.unwrap_or_else(|| made["id"].as_str().expect("an id").to_owned());
    let (resource_id, resource) = match write {
        Write::Comment => {
            let id = made["id"].as_str().expect("a comment id").to_owned();
            let at = format!("/v1/tickets/{ticket}/comments/{id}");
            (id, at)
        }
        Write::Create | Write::Update | Write::Transition => {
            (ticket.clone(), format!("/v1/tickets/{ticket}"))
        }
    };
    let lookup_path = format!("/v1/operations/{action}/{key}");

    // Replayable: one microsecond before the horizon the retry is still the
    // first answer, byte for byte, and another request is refused.
    clock.set(REPLAYABLE_UNTIL - time::Duration::microseconds(1));
    let replay = write.send(&app, &acme, &ticket, &key, true).await;
    assert_eq!(replay.status, write.created_status());
    assert!(replay.replayed());
    assert_eq!(replay.body, first.body, "byte-identical replay");
    assert_eq!(
        replay.header(HORIZON_HEADER),
        Some(replayable_until.as_str())
    );
    let other = write.send(&app, &acme, &ticket, &key, false).await;
    other.problem(422, "idempotency-key-reused");
    assert_eq!(
        other.header(HORIZON_HEADER),
        Some(replayable_until.as_str()),
        "a conflict shows the original operation's horizon"
    );
    let lookup = get(&app, &acme, &lookup_path).await;
    assert_eq!(lookup.status, 200);
    let status = lookup.json();
    assert_eq!(status["phase"], "replayable");
    assert_eq!(status["state"], "succeeded");
    assert_eq!(status["resource_id"], resource_id.as_str());
    assert_eq!(status["created_at"], kitchen::rfc3339(START));
    assert_eq!(status["replayable_until"], replayable_until.as_str());
    assert_eq!(status["retained_until"], retained_until.as_str());

    // Someone changes the ticket; then the window ends (exactly at the
    // horizon: it is the first instant past it).
    let title_now = write.change_meanwhile(&app, &acme, &ticket).await;
    clock.set(REPLAYABLE_UNTIL);
    let before = footprint(&app, &acme, &ticket).await;
    let expired = write.send(&app, &acme, &ticket, &key, true).await;
    assert_eq!(
        expired.status,
        200,
        "{}",
        String::from_utf8_lossy(&expired.body)
    );
    assert_eq!(expired.header("idempotent-replayed"), Some("expired"));
    assert_eq!(
        expired.header(HORIZON_HEADER),
        Some(replayable_until.as_str()),
        "the horizon, now in the past"
    );
    assert_eq!(expired.header("location"), Some(resource.as_str()));
    assert_eq!(expired.header("content-type"), Some("application/json"));
    // The resource as it is now: what a GET of Location shows, with its
    // ETag; not the first answer.
    let now = get(&app, &acme, &resource).await;
    assert_eq!(
        expired.body, now.body,
        "the body is the resource as it is now"
    );
    assert_eq!(expired.header("etag"), now.header("etag"));
    let ticket_now = get(&app, &acme, &format!("/v1/tickets/{ticket}"))
        .await
        .json();
    assert_eq!(ticket_now["title"], title_now.as_str());
    match write {
        Write::Comment => {
            assert_eq!(expired.json(), made, "a comment does not change");
            assert!(expired.header("etag").is_none());
        }
        Write::Create | Write::Update | Write::Transition => {
            assert_ne!(expired.body, first.body, "not the frozen first answer");
            assert_eq!(expired.json()["title"], title_now.as_str());
            assert_eq!(
                expired.json()["version"],
                made["version"].as_i64().expect("a version") + 1,
                "the change made meanwhile shows"
            );
        }
    }
    assert_eq!(
        footprint(&app, &acme, &ticket).await,
        before,
        "nothing new was made"
    );
    match write {
        Write::Create => assert_eq!(before.0, 1, "exactly one ticket"),
        Write::Comment => assert_eq!(before.2, 1, "exactly one comment"),
        Write::Update | Write::Transition => {}
    }
    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!(format!("rest_expired_{action}"), expired_shape(&expired));
    });

    // Another request with the key is still refused, with the horizon.
    let other = write.send(&app, &acme, &ticket, &key, false).await;
    let problem = other.problem(422, "idempotency-key-reused");
    assert_eq!(
        other.header(HORIZON_HEADER),
        Some(replayable_until.as_str())
    );
    assert_eq!(
        problem["original_resource"],
        format!("/v1/tickets/{ticket}")
    );
    assert_eq!(footprint(&app, &acme, &ticket).await, before);

    // The status lookup: expired, with the resource and the dates; the key
    // is spent until retained_until.
    let lookup = get(&app, &acme, &lookup_path).await;
    assert_eq!(lookup.status, 200);
    let status = lookup.json();
    assert_eq!(status["phase"], "expired");
    assert_eq!(status["state"], "succeeded");
    assert_eq!(status["resource_id"], resource_id.as_str());
    assert_eq!(status["ticket_id"], ticket.as_str());
    assert_eq!(status["created_at"], kitchen::rfc3339(START));
    assert_eq!(status["replayable_until"], replayable_until.as_str());
    assert_eq!(status["retained_until"], retained_until.as_str());
    let next_step = status["next_step"].as_str().expect("a next step");
    assert!(
        next_step.contains(&format!("spent until {retained_until}"))
            && next_step.contains("makes nothing new"),
        "{next_step}"
    );
    if let Write::Comment = write {
        assert_eq!(status["comment_location"], resource.as_str());
    }
    let status = redacted_status(status);
    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!(format!("rest_operation_status_expired_{action}"), status);
    });

    // The sweep makes the record a tombstone; nothing any answer says
    // changes.
    let swept = app.kitchen.sweeper().sweep_batch().await.expect("a sweep");
    assert!(swept.tombstoned >= 1, "{swept:?}");
    assert_eq!(swept.deleted, 0, "{swept:?}");
    let after_sweep = write.send(&app, &acme, &ticket, &key, true).await;
    assert_eq!(after_sweep.status, 200);
    assert_eq!(after_sweep.body, expired.body);
    for name in ["idempotent-replayed", HORIZON_HEADER, "location", "etag"] {
        assert_eq!(after_sweep.header(name), expired.header(name), "{name}");
    }
    let lookup = get(&app, &acme, &lookup_path).await;
    assert_eq!(lookup.status, 200);
    assert_eq!(
        redacted_status(lookup.json()),
        status,
        "a tombstone's status"
    );
    write
        .send(&app, &acme, &ticket, &key, false)
        .await
        .problem(422, "idempotency-key-reused");
    assert_eq!(footprint(&app, &acme, &ticket).await, before);

    // Past the tombstone horizon the key is forgotten: the lookup is 404
    // and the same request is a new write.
    clock.set(RETAINED_UNTIL);
    let lookup = get(&app, &acme, &lookup_path).await;
    let problem = lookup.problem(404, "operation-not-found");
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("tombstone horizon") && d.contains("retry")),
        "{problem}"
    );
    let again = write.send(&app, &acme, &ticket, &key, true).await;
    assert_eq!(
        again.status,
        write.created_status(),
        "{}",
        String::from_utf8_lossy(&again.body)
    );
    assert!(again.header("idempotent-replayed").is_none(), "a new write");
    let new_horizon = kitchen::rfc3339(RETAINED_UNTIL + WINDOW);
    assert_eq!(again.header(HORIZON_HEADER), Some(new_horizon.as_str()));
    let (tickets, entries, notes) = before;
    let expected = match write {
        Write::Create => (tickets + 1, entries, notes),
        Write::Update | Write::Transition => (tickets, entries + 1, notes),
        Write::Comment => (tickets, entries + 1, notes + 1),
    };
    // A create's new ticket has its own history; count the first ticket's.
    assert_eq!(footprint(&app, &acme, &ticket).await, expected);
    if let Write::Create | Write::Comment = write {
        assert_ne!(again.json()["id"], made["id"], "a new resource");
    }
    // The sweep deletes what is past the horizon, never the new record.
    app.kitchen.sweeper().sweep_batch().await.expect("a sweep");
    let lookup = get(&app, &acme, &lookup_path).await;
    assert_eq!(lookup.status, 200);
    assert_eq!(lookup.json()["phase"], "replayable");
    assert_eq!(
        lookup.json()["created_at"],
        kitchen::rfc3339(RETAINED_UNTIL)
    );
    let replay = write.send(&app, &acme, &ticket, &key, true).await;
    assert!(replay.replayed());
    assert_eq!(replay.body, again.body);
}

async fn a_create_key_lives_through_its_phases(db: TestDatabase) {
    a_key_lives_through_its_phases(db, Write::Create).await;
}

async fn an_update_key_lives_through_its_phases(db: TestDatabase) {
    a_key_lives_through_its_phases(db, Write::Update).await;
}

async fn a_transition_key_lives_through_its_phases(db: TestDatabase) {
    a_key_lives_through_its_phases(db, Write::Transition).await;
}

async fn a_comment_key_lives_through_its_phases(db: TestDatabase) {
    a_key_lives_through_its_phases(db, Write::Comment).await;
}

kitchen::on_both_databases!(
    a_create_key_lives_through_its_phases,
    an_update_key_lives_through_its_phases,
    a_transition_key_lives_through_its_phases,
    a_comment_key_lives_through_its_phases,
);
