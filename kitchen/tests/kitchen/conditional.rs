//! Conditional writes: one rule for every change to an existing ticket.
//! A move and a comment may name the version the caller expects (REST
//! `If-Match`, MCP `expected_version`), exactly as an update does: another
//! version is refused before anything else and leaves the key unused; the
//! version is part of what the key means; a retry of a write that succeeded
//! replays even though its own effect moved the ticket on. On both backends.

use kitchen::actions::{AddComment, TransitionTicket, UpdateTicket};
use std::time::Duration;

use kitchen::fake_provider::FakeProvider;
use kitchen::testing::TestDatabase;
use kitchen::{Action, KitchenConfig, Refusal, TicketAt, TicketId, TicketStatus, Version};

use crate::support::{
    Desk, conflict, created, fresh_key, move_to, refused, remote_backend, replayed, say, update,
};

fn at(ticket: TicketId, version: i64) -> TicketAt {
    TicketAt::new(
        ticket,
        Some(Version::parse(version, "expected_version").expect("a version")),
    )
}

fn version(n: i64) -> Version {
    Version::parse(n, "version").expect("a version")
}

/// A desk whose ticket was changed once (so it is at version 2) by someone
/// else: what a caller who read version 1 does not know.
async fn changed_behind_the_callers_back(desk: &Desk) {
    let id = desk.ticket.id;
    let changed = created(
        desk.kitchen
            .write::<UpdateTicket>(desk.actor, &fresh_key(), &update(id, r#"{"title": "B"}"#))
            .await
            .expect("update"),
    );
    assert_eq!(changed.result.version, version(2));
}

async fn stale_version_refused(desk: &Desk) {
    let id = desk.ticket.id;
    changed_behind_the_callers_back(desk).await;
    let before = desk.current(id).await;
    let history = desk.history(id).await.len();

    let (move_key, comment_key) = (fresh_key(), fresh_key());
    let mismatch = Refusal::VersionMismatch {
        expected: Version::FIRST,
        current: version(2),
    };
    assert_eq!(
        refused(
            desk.kitchen
                .write::<TransitionTicket>(
                    desk.actor,
                    &move_key,
                    &((at(id, 1)), move_to("in_progress"))
                )
                .await
                .expect("move"),
        ),
        mismatch
    );
    assert_eq!(
        refused(
            desk.kitchen
                .write::<AddComment>(desk.actor, &comment_key, &((at(id, 1)), say("Seen it")))
                .await
                .expect("comment"),
        ),
        mismatch
    );
    assert_eq!(desk.current(id).await, before, "nothing moved");
    assert!(desk.comments(id).await.is_empty(), "nothing added");
    assert_eq!(desk.history(id).await.len(), history, "no history entry");
    assert!(desk.unused(Action::TransitionTicket, &move_key).await);
    assert!(desk.unused(Action::AddComment, &comment_key).await);

    // Read again, decide again, with the same keys: the right version
    // passes.
    let moved = created(
        desk.kitchen
            .write::<TransitionTicket>(
                desk.actor,
                &move_key,
                &((at(id, 2)), move_to("in_progress")),
            )
            .await
            .expect("move"),
    );
    assert_eq!(moved.result.status, TicketStatus::InProgress);
    assert_eq!(moved.result.version, version(3));
    let comment = created(
        desk.kitchen
            .write::<AddComment>(desk.actor, &comment_key, &((at(id, 3)), say("Seen it")))
            .await
            .expect("comment"),
    );
    assert_eq!(desk.comments(id).await, [comment.result]);
    assert_eq!(
        desk.current(id).await.version,
        version(3),
        "a comment is no change"
    );
}

async fn a_stale_move_or_comment_is_refused_and_leaves_the_key_unused(db: TestDatabase) {
    stale_version_refused(&Desk::new(&db).await).await;
}

/// What the caller saw is out of date, whatever it asked for: a stale move
/// the status machine would refuse too is a version mismatch, as on PATCH.
async fn the_version_is_checked_before_the_move_itself(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    changed_behind_the_callers_back(&desk).await;
    let key = fresh_key();
    assert_eq!(
        refused(
            desk.kitchen
                .write::<TransitionTicket>(desk.actor, &key, &((at(id, 1)), move_to("closed")))
                .await
                .expect("move"),
        ),
        Refusal::VersionMismatch {
            expected: Version::FIRST,
            current: version(2),
        }
    );
    assert!(desk.unused(Action::TransitionTicket, &key).await);
}

async fn retry_replays(desk: &Desk) {
    let id = desk.ticket.id;
    // A comment at version 1, then a move at version 1 (which makes it 2):
    // each retried with its own key and its own, now stale, version.
    let (comment_key, move_key) = (fresh_key(), fresh_key());
    let comment = created(
        desk.kitchen
            .write::<AddComment>(desk.actor, &comment_key, &((at(id, 1)), say("On it")))
            .await
            .expect("comment"),
    );
    let moved = created(
        desk.kitchen
            .write::<TransitionTicket>(
                desk.actor,
                &move_key,
                &((at(id, 1)), move_to("in_progress")),
            )
            .await
            .expect("move"),
    );
    assert_eq!(moved.result.version, version(2));
    for _ in 0..2 {
        let again = replayed(
            desk.kitchen
                .write::<TransitionTicket>(
                    desk.actor,
                    &move_key,
                    &((at(id, 1)), move_to("in_progress")),
                )
                .await
                .expect("retry"),
        );
        assert_eq!(again.snapshot, moved.snapshot);
        let again = replayed(
            desk.kitchen
                .write::<AddComment>(desk.actor, &comment_key, &((at(id, 1)), say("On it")))
                .await
                .expect("retry"),
        );
        assert_eq!(again.snapshot, comment.snapshot);
    }
    assert_eq!(desk.current(id).await.version, version(2), "moved once");
    assert_eq!(desk.comments(id).await.len(), 1, "added once");
}

/// A retry is never refused by the effect of its own first attempt: the
/// key decides before the version does.
async fn a_retry_after_success_replays_though_its_own_effect_moved_the_version(db: TestDatabase) {
    retry_replays(&Desk::new(&db).await).await;
}

/// The expected version is part of the normalized command, so of the
/// fingerprint: the same key with another (or no) version is another
/// request.
async fn the_expected_version_is_part_of_what_the_key_means(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let key = fresh_key();
    created(
        desk.kitchen
            .write::<TransitionTicket>(desk.actor, &key, &((at(id, 1)), move_to("in_progress")))
            .await
            .expect("move"),
    );
    for other in [TicketAt::from(id), at(id, 2)] {
        conflict(
            desk.kitchen
                .write::<TransitionTicket>(desk.actor, &key, &(other, move_to("in_progress")))
                .await
                .expect("move"),
        );
    }
    let key = fresh_key();
    created(
        desk.kitchen
            .write::<AddComment>(desk.actor, &key, &(id.into(), say("Hello")))
            .await
            .expect("comment"),
    );
    conflict(
        desk.kitchen
            .write::<AddComment>(desk.actor, &key, &((at(id, 2)), say("Hello")))
            .await
            .expect("comment"),
    );
    replayed(
        desk.kitchen
            .write::<AddComment>(desk.actor, &key, &(id.into(), say("Hello")))
            .await
            .expect("comment"),
    );
}

/// A remote kitchen (a fake provider that honours keys) with one ticket.
async fn remote_desk(db: &TestDatabase, provider: &FakeProvider, tenant: &str) -> Desk {
    let kitchen = db
        .kitchen_with(KitchenConfig {
            backend: remote_backend(provider, Duration::from_millis(30)),
            ..KitchenConfig::default()
        })
        .await;
    Desk::on(kitchen, tenant).await
}

/// On the remote backend the local copy's version is checked before
/// anything is sent: a stale move or comment reaches no provider.
async fn the_remote_backend_refuses_a_stale_version_before_sending(db: TestDatabase) {
    let provider = FakeProvider::ignoring_keys();
    let desk = remote_desk(&db, &provider, "acme").await;
    changed_behind_the_callers_back(&desk).await;
    let id = desk.ticket.id;
    let sent = provider.calls().0;
    let key = fresh_key();
    for refusal in [
        refused(
            desk.kitchen
                .write::<TransitionTicket>(desk.actor, &key, &((at(id, 1)), move_to("in_progress")))
                .await
                .expect("move"),
        ),
        refused(
            desk.kitchen
                .write::<AddComment>(desk.actor, &key, &((at(id, 1)), say("Seen it")))
                .await
                .expect("comment"),
        ),
    ] {
        assert_eq!(
            refusal,
            Refusal::VersionMismatch {
                expected: Version::FIRST,
                current: version(2),
            }
        );
    }
    assert_eq!(provider.calls().0, sent, "nothing was sent");
    assert!(desk.unused(Action::TransitionTicket, &key).await);
    assert!(desk.unused(Action::AddComment, &key).await);
}

async fn the_remote_backend_follows_the_same_rule(db: TestDatabase) {
    let provider = FakeProvider::ignoring_keys();
    stale_version_refused(&remote_desk(&db, &provider, "acme").await).await;
    let provider = FakeProvider::ignoring_keys();
    retry_replays(&remote_desk(&db, &provider, "globex").await).await;
}

kitchen::on_both_databases!(
    a_stale_move_or_comment_is_refused_and_leaves_the_key_unused,
    the_version_is_checked_before_the_move_itself,
    a_retry_after_success_replays_though_its_own_effect_moved_the_version,
    the_expected_version_is_part_of_what_the_key_means,
    the_remote_backend_refuses_a_stale_version_before_sending,
    the_remote_backend_follows_the_same_rule,
);
