//! Update, transition and comment attempts that race each other. Every test
//! judges by what is stored (versions, history entries, comments), not only
//! by the answers.

use kitchen::actions::{AddComment, TransitionTicket, UpdateTicket};
use std::collections::HashSet;
use std::fmt::Debug;
use std::future::Future;

use futures::future::join_all;
use kitchen::testing::TestDatabase;
use kitchen::{Action, Outcome, Refusal, TicketStatus, Version};

use crate::support::{Desk, fresh_key, move_to, say, update, update_at};

const RACERS: usize = 32;

/// How a race of identical attempts ended: how many performed the effect,
/// and every distinct snapshot answered.
#[derive(Debug, Default)]
struct Tally {
    created: usize,
    snapshots: HashSet<String>,
}

/// Fires `RACERS` copies of `attempt` at once. An attempt that answers in
/// progress is retried with the same key until it gets the first answer
/// (each retry waits up to the wait bound inside the kitchen: no sleeps).
async fn race<T, F, Fut>(attempt: F) -> Tally
where
    T: Debug + Send + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output = Outcome<T>> + Send + 'static,
{
    let tasks: Vec<_> = (0..RACERS).map(|_| tokio::spawn(attempt())).collect();
    let mut tally = Tally::default();
    for task in tasks {
        let mut outcome = task.await.expect("task ran");
        for _ in 0..10 {
            if !matches!(outcome, Outcome::InProgress { .. }) {
                break;
            }
            outcome = attempt().await;
        }
        match outcome {
            Outcome::Created(r) => {
                tally.created += 1;
                tally.snapshots.insert(r.snapshot.as_str().to_owned());
            }
            Outcome::Replayed(r) => {
                tally.snapshots.insert(r.snapshot.as_str().to_owned());
            }
            other => panic!("expected created or replayed, got {other:?}"),
        }
    }
    tally
}

async fn identical_updates_bump_the_version_once(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let key = fresh_key();
    let request = update(id, r#"{"title": "Disk full on db-1"}"#);
    let tally = race(|| {
        let (kitchen, actor, key, request) = (
            desk.kitchen.clone(),
            desk.actor,
            key.clone(),
            request.clone(),
        );
        async move {
            kitchen
                .write::<UpdateTicket>(actor, &key, &request)
                .await
                .expect("no attempt errors")
        }
    })
    .await;
    assert_eq!(tally.created, 1, "exactly one attempt performs the update");
    assert_eq!(
        tally.snapshots.len(),
        1,
        "every caller gets the same answer"
    );
    assert_eq!(desk.current(id).await.version.get(), 2);
    assert_eq!(desk.history(id).await.len(), 2, "create and one update");
}

async fn identical_transitions_move_once(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let key = fresh_key();
    let tally = race(|| {
        let (kitchen, actor, key) = (desk.kitchen.clone(), desk.actor, key.clone());
        async move {
            kitchen
                .write::<TransitionTicket>(actor, &key, &(id.into(), move_to("in_progress")))
                .await
                .expect("no attempt errors")
        }
    })
    .await;
    assert_eq!(tally.created, 1);
    assert_eq!(tally.snapshots.len(), 1);
    let now = desk.current(id).await;
    assert_eq!(
        (now.status, now.version.get()),
        (TicketStatus::InProgress, 2)
    );
    assert_eq!(desk.history(id).await.len(), 2);
}

async fn identical_comments_add_one_comment(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let key = fresh_key();
    let tally = race(|| {
        let (kitchen, actor, key) = (desk.kitchen.clone(), desk.actor, key.clone());
        async move {
            kitchen
                .write::<AddComment>(actor, &key, &(id.into(), say("Looking into it")))
                .await
                .expect("no attempt errors")
        }
    })
    .await;
    assert_eq!(tally.created, 1);
    assert_eq!(tally.snapshots.len(), 1);
    assert_eq!(desk.comments(id).await.len(), 1);
    assert_eq!(desk.history(id).await.len(), 2);
}

/// Several callers read version 1 and each sends its own edit with
/// `If-Match: "1"`: exactly one wins, every other is told the version moved
/// on, and nothing of theirs is written.
async fn conditional_updates_at_one_version_let_exactly_one_win(db: TestDatabase) {
    const CALLERS: usize = 8;
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let keys: Vec<_> = (0..CALLERS).map(|_| fresh_key()).collect();
    let attempts = keys.iter().enumerate().map(|(i, key)| {
        let (kitchen, actor, key) = (desk.kitchen.clone(), desk.actor, key.clone());
        let request = update_at(id, 1, &format!(r#"{{"title": "Edit {i}"}}"#));
        tokio::spawn(async move { kitchen.write::<UpdateTicket>(actor, &key, &request).await })
    });
    let outcomes: Vec<_> = join_all(attempts)
        .await
        .into_iter()
        .map(|r| r.expect("task ran").expect("no attempt errors"))
        .collect();

    let mut winner = None;
    for (i, outcome) in outcomes.into_iter().enumerate() {
        match outcome {
            Outcome::Created(r) => {
                assert!(
                    winner.is_none(),
                    "a second winner: {}",
                    r.result.title.as_str()
                );
                winner = Some((i, r.result));
            }
            Outcome::Refused(refusal) => {
                assert_eq!(
                    refusal,
                    Refusal::VersionMismatch {
                        expected: Version::FIRST,
                        current: Version::parse(2, "v").expect("a version"),
                    }
                );
                assert!(desk.unused(Action::UpdateTicket, &keys[i]).await);
            }
            other => panic!("expected created or a version mismatch, got {other:?}"),
        }
    }
    let (won, ticket) = winner.expect("exactly one winner");
    assert_eq!(ticket.title.as_str(), format!("Edit {won}"));
    assert_eq!(desk.current(id).await, ticket, "only the winner's edit");
    let history = desk.history(id).await;
    assert_eq!(history.len(), 2, "create and the winner's update");
    assert_eq!(history[1].operation_key, keys[won]);
}

/// Unconditional edits of different fields at once: each applies on top of
/// the others, none is lost, and each gets its own version.
async fn concurrent_edits_of_different_fields_all_land(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let patches = [
        r#"{"title": "Disk full on db-1"}"#,
        r#"{"description": "Since 02:00"}"#,
        r#"{"priority": "urgent"}"#,
        r#"{"assignee": "Ada"}"#,
    ];
    let attempts = patches.map(|patch| {
        let (kitchen, actor) = (desk.kitchen.clone(), desk.actor);
        let request = update(id, patch);
        tokio::spawn(async move {
            kitchen
                .write::<UpdateTicket>(actor, &fresh_key(), &request)
                .await
        })
    });
    let mut versions = Vec::new();
    for outcome in join_all(attempts).await {
        match outcome.expect("task ran").expect("no attempt errors") {
            Outcome::Created(r) => versions.push(r.result.version.get()),
            other => panic!("expected created, got {other:?}"),
        }
    }
    versions.sort_unstable();
    assert_eq!(versions, [2, 3, 4, 5], "one version each");
    let now = desk.current(id).await;
    assert_eq!(now.version.get(), 5);
    assert_eq!(now.title.as_str(), "Disk full on db-1");
    assert_eq!(
        now.description.as_ref().map(|d| d.as_str()),
        Some("Since 02:00")
    );
    assert_eq!(now.priority, kitchen::Priority::Urgent);
    assert_eq!(now.assignee.as_ref().map(|a| a.as_str()), Some("Ada"));
    let history = desk.history(id).await;
    let recorded: Vec<_> = history.iter().map(|e| e.version.get()).collect();
    assert_eq!(recorded, [1, 2, 3, 4, 5]);
}

/// Several callers each move the open ticket to in_progress with their own
/// key: one moves it, the others find it already there, which is not a move.
async fn concurrent_moves_from_one_status_let_exactly_one_win(db: TestDatabase) {
    const CALLERS: usize = 8;
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let attempts = (0..CALLERS).map(|_| {
        let (kitchen, actor, key) = (desk.kitchen.clone(), desk.actor, fresh_key());
        tokio::spawn(async move {
            let outcome = kitchen
                .write::<TransitionTicket>(actor, &key, &(id.into(), move_to("in_progress")))
                .await;
            (key, outcome)
        })
    });
    let mut moved = 0;
    for joined in join_all(attempts).await {
        let (key, outcome) = joined.expect("task ran");
        match outcome.expect("no attempt errors") {
            Outcome::Created(_) => moved += 1,
            Outcome::Refused(refusal) => {
                assert_eq!(
                    refusal,
                    Refusal::TransitionNotAllowed {
                        from: TicketStatus::InProgress,
                        to: TicketStatus::InProgress,
                        allowed: &[TicketStatus::Resolved],
                    }
                );
                assert!(desk.unused(Action::TransitionTicket, &key).await);
            }
            other => panic!("expected created or not allowed, got {other:?}"),
        }
    }
    assert_eq!(moved, 1);
    assert_eq!(desk.current(id).await.version.get(), 2);
    assert_eq!(desk.history(id).await.len(), 2);
}

kitchen::on_both_databases!(
    identical_updates_bump_the_version_once,
    identical_transitions_move_once,
    identical_comments_add_one_comment,
    conditional_updates_at_one_version_let_exactly_one_win,
    concurrent_edits_of_different_fields_all_land,
    concurrent_moves_from_one_status_let_exactly_one_win,
);
