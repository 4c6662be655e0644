//! Every write on the remote backend: an update, a move and a comment go to
//! the provider through the same effect ledger as a create (write ahead,
//! dispatch, settle, reconcile), and the local copy mirrors what the
//! provider reports. The fake provider's count of objects per external
//! reference is the ground truth: each test ends by stating how many the
//! provider holds for the intended effect, and that the local copy (the
//! ticket's version and history, its comments) shows the same.

use kitchen::actions::{AddComment, TransitionTicket, UpdateTicket};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kitchen::fake_provider::{DispatchFault, FakeProvider};
use kitchen::testing::TestDatabase;
use kitchen::{
    Action, EffectKind, ExternalRef, KitchenConfig, NotCreatedReason, OperationKey, OperationState,
    Outcome, Refusal, RemoteSettings, TicketBackend, TicketStatus, Trigger,
};

use crate::support::{
    Desk, created, fresh_key, move_to, refused, remote_settings, replayed, say, update, update_at,
};

/// The three writes that act on an existing ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Update,
    Move,
    Comment,
}

impl Change {
    const ALL: [Change; 3] = [Self::Update, Self::Move, Self::Comment];

    fn action(self) -> Action {
        match self {
            Self::Update => Action::UpdateTicket,
            Self::Move => Action::TransitionTicket,
            Self::Comment => Action::AddComment,
        }
    }
}

/// An outcome, whatever the write made: its name and, when it has one, its
/// frozen answer.
#[derive(Debug)]
struct Said {
    name: &'static str,
    snapshot: Option<String>,
    outcome: String,
}

fn said<T: std::fmt::Debug>(outcome: Outcome<T>) -> Said {
    let snapshot = match &outcome {
        Outcome::Created(r) | Outcome::Replayed(r) => Some(r.snapshot.as_str().to_owned()),
        _ => None,
    };
    Said {
        name: outcome.name(),
        snapshot,
        outcome: format!("{outcome:?}"),
    }
}

/// A tenant with one ticket made at the provider, on a remote kitchen.
struct Remote {
    desk: Desk,
    provider: FakeProvider,
}

impl Remote {
    async fn new(db: &TestDatabase, provider: FakeProvider) -> Self {
        Self::with(db, provider, remote_settings(Duration::from_millis(30))).await
    }

    async fn with(db: &TestDatabase, provider: FakeProvider, settings: RemoteSettings) -> Self {
        let kitchen = db
            .kitchen_with(KitchenConfig {
                backend: TicketBackend::Remote {
                    provider: Arc::new(provider.clone()),
                    settings,
                },
                ..KitchenConfig::default()
            })
            .await;
        // Tests that try several writes each make one of these per write,
        // on one database: one tenant each.
        static TENANTS: AtomicUsize = AtomicUsize::new(0);
        let name = format!("acme-{}", TENANTS.fetch_add(1, Ordering::Relaxed));
        let desk = Desk::on(kitchen, &name).await;
        Self { desk, provider }
    }

    /// `change` with `key`, as the tests send it.
    async fn send(&self, change: Change, key: &OperationKey) -> Said {
        let (kitchen, actor, ticket) = (&self.desk.kitchen, self.desk.actor, self.desk.ticket.id);
        match change {
            Change::Update => said(
                kitchen
                    .write::<UpdateTicket>(
                        actor,
                        key,
                        &update(ticket, r#"{"title": "Disk full on db-1"}"#),
                    )
                    .await
                    .expect("update"),
            ),
            Change::Move => said(
                kitchen
                    .write::<TransitionTicket>(actor, key, &(ticket.into(), move_to("in_progress")))
                    .await
                    .expect("move"),
            ),
            Change::Comment => said(
                kitchen
                    .write::<AddComment>(actor, key, &(ticket.into(), say("Looking into it")))
                    .await
                    .expect("comment"),
            ),
        }
    }

    fn external_ref(&self, change: Change, key: &OperationKey) -> String {
        ExternalRef::derive(self.desk.tenant.id, change.action(), key)
            .as_str()
            .to_owned()
    }

    /// Objects the provider holds for this effect: the ground truth.
    fn made(&self, change: Change, key: &OperationKey) -> usize {
        self.provider.count(&self.external_ref(change, key))
    }

    /// The local copy's record of `change`: history entries of its action
    /// (and for a comment, the comments too, which must agree).
    async fn mirrored(&self, change: Change) -> usize {
        let entries = self
            .desk
            .history(self.desk.ticket.id)
            .await
            .into_iter()
            .filter(|e| e.action == change.action())
            .count();
        if change == Change::Comment {
            let comments = self.desk.comments(self.desk.ticket.id).await.len();
            assert_eq!(comments, entries, "one history entry per comment");
        }
        entries
    }

    fn dispatches(&self) -> usize {
        self.provider.calls().0
    }

    /// Retries `change` with `key` until it is settled (or 40 tries).
    async fn retry_until_settled(&self, change: Change, key: &OperationKey) -> Vec<Said> {
        let mut answers = Vec::new();
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let answer = self.send(change, key).await;
            let settled = matches!(answer.name, "created" | "replayed");
            answers.push(answer);
            if settled {
                break;
            }
        }
        answers
    }
}

async fn every_write_is_sent_to_the_provider_and_mirrored(db: TestDatabase) {
    let remote = Remote::new(&db, FakeProvider::ignoring_keys()).await;
    let provider_id = remote
        .desk
        .ticket
        .provider_ticket_id
        .clone()
        .expect("made at the provider");
    for change in Change::ALL {
        let key = fresh_key();
        let first = remote.send(change, &key).await;
        assert_eq!(first.name, "created", "{change:?}: {}", first.outcome);
        let again = remote.send(change, &key).await;
        assert_eq!(again.name, "replayed", "{change:?}");
        assert_eq!(again.snapshot, first.snapshot, "{change:?}: byte for byte");
        assert_eq!(remote.made(change, &key), 1, "{change:?}");
        assert_eq!(remote.mirrored(change).await, 1, "{change:?}");
    }
    // The local copy is the provider's ticket: the update, then the move.
    let local = remote.desk.current(remote.desk.ticket.id).await;
    let at_provider = remote
        .provider
        .ticket(&provider_id)
        .expect("at the provider");
    assert_eq!(local.title.as_str(), "Disk full on db-1");
    assert_eq!(local.status, TicketStatus::InProgress);
    assert_eq!(
        (local.version, at_provider.version),
        (at_provider.version, local.version)
    );
    assert_eq!(local.version.get(), 3, "a comment is not a new version");
    let comments = remote.desk.comments(remote.desk.ticket.id).await;
    assert_eq!(comments.len(), 1);
    assert!(
        comments[0]
            .provider_comment_id
            .as_deref()
            .is_some_and(|id| id.starts_with("CMT-")),
        "{comments:?}"
    );
    assert_eq!(remote.provider.made(EffectKind::Change), 2);
    assert_eq!(remote.provider.made(EffectKind::Comment), 1);
}

async fn a_lost_answer_is_reconciled_into_exactly_one_effect(db: TestDatabase) {
    let faults = [
        DispatchFault::FailBeforeCommit,
        DispatchFault::CommitThenLose,
        DispatchFault::LandLater(Duration::from_millis(10)),
    ];
    for change in Change::ALL {
        for fault in &faults {
            let remote = Remote::new(&db, FakeProvider::ignoring_keys()).await;
            remote.provider.fail_next_dispatch(fault.clone());
            let key = fresh_key();
            let first = remote.send(change, &key).await;
            assert_eq!(
                first.name, "unknown",
                "{change:?} {fault:?}: {}",
                first.outcome
            );
            let retries = remote.retry_until_settled(change, &key).await;
            let last = retries.last().expect("at least one retry");
            assert!(
                matches!(last.name, "created" | "replayed"),
                "{change:?} {fault:?}: {retries:?}"
            );
            for meanwhile in &retries[..retries.len() - 1] {
                assert!(
                    matches!(meanwhile.name, "unknown" | "in_progress"),
                    "{change:?} {fault:?}: only unknown may be said meanwhile: {retries:?}"
                );
            }
            assert_eq!(remote.made(change, &key), 1, "{change:?} {fault:?}");
            assert_eq!(remote.mirrored(change).await, 1, "{change:?} {fault:?}");
        }
    }
}

async fn the_background_reconciler_settles_every_action(db: TestDatabase) {
    for change in Change::ALL {
        let remote = Remote::new(&db, FakeProvider::ignoring_keys()).await;
        remote
            .provider
            .fail_next_dispatch(DispatchFault::CommitThenLose);
        let key = fresh_key();
        assert_eq!(remote.send(change, &key).await.name, "unknown");
        tokio::time::sleep(Duration::from_millis(60)).await;
        let worked = remote
            .desk
            .kitchen
            .reconcile_due(Trigger::Background)
            .await
            .expect("a pass");
        assert_eq!(worked, 1, "{change:?}");
        let record = remote
            .desk
            .kitchen
            .operation(remote.desk.tenant.id, change.action(), &key)
            .await
            .expect("read")
            .expect("a record");
        assert_eq!(record.state, OperationState::Succeeded, "{change:?}");
        assert_eq!(remote.made(change, &key), 1, "{change:?}");
        assert_eq!(remote.mirrored(change).await, 1, "{change:?}");
        // The caller's retry replays what the reconciler settled.
        assert_eq!(remote.send(change, &key).await.name, "replayed");
    }
}

async fn nothing_is_sent_for_a_write_the_local_copy_refuses(db: TestDatabase) {
    let remote = Remote::new(&db, FakeProvider::ignoring_keys()).await;
    let (kitchen, actor, ticket) = (
        &remote.desk.kitchen,
        remote.desk.actor,
        remote.desk.ticket.id,
    );
    let sent = remote.dispatches();
    let key = fresh_key();
    assert!(matches!(
        refused(
            kitchen
                .write::<UpdateTicket>(actor, &key, &update_at(ticket, 7, r#"{"title": "X"}"#))
                .await
                .expect("update")
        ),
        Refusal::VersionMismatch { .. }
    ));
    assert!(matches!(
        refused(
            kitchen
                .write::<TransitionTicket>(actor, &key, &(ticket.into(), move_to("closed")))
                .await
                .expect("move")
        ),
        Refusal::TransitionNotAllowed { .. }
    ));
    let nowhere = crate::support::unknown_ticket();
    assert!(matches!(
        refused(
            kitchen
                .write::<AddComment>(actor, &key, &(nowhere.into(), say("Hello")))
                .await
                .expect("comment")
        ),
        Refusal::TicketNotFound { .. }
    ));
    assert_eq!(remote.dispatches(), sent, "nothing was sent");
    for change in Change::ALL {
        assert!(
            remote.desk.unused(change.action(), &key).await,
            "{change:?}"
        );
    }
}

async fn a_provider_refusal_makes_nothing_and_keeps_the_key(db: TestDatabase) {
    for change in Change::ALL {
        let remote = Remote::new(&db, FakeProvider::ignoring_keys()).await;
        remote.provider.fail_next_dispatch(DispatchFault::Reject);
        let key = fresh_key();
        let first = remote.send(change, &key).await;
        assert_eq!(first.name, "not_created", "{change:?}: {}", first.outcome);
        assert_eq!(remote.made(change, &key), 0);
        assert_eq!(remote.mirrored(change).await, 0);
        let second = remote.send(change, &key).await;
        assert_eq!(second.name, "created", "{change:?}: {}", second.outcome);
        assert_eq!(remote.made(change, &key), 1, "{change:?}");
        assert_eq!(remote.mirrored(change).await, 1, "{change:?}");
    }
}

async fn a_refusal_by_the_provider_names_its_reason(db: TestDatabase) {
    // The local copy is at version 1, so the update is allowed here; the
    // provider has moved on behind our back (someone changed it there), so
    // it refuses the precondition: nothing is made, and the caller is told
    // in the provider's words.
    let remote = Remote::new(&db, FakeProvider::ignoring_keys()).await;
    let provider_id = remote
        .desk
        .ticket
        .provider_ticket_id
        .clone()
        .expect("made at the provider");
    remote.provider.edit_behind_our_back(&provider_id);
    let key = fresh_key();
    let outcome = remote
        .desk
        .kitchen
        .write::<UpdateTicket>(
            remote.desk.actor,
            &key,
            &update_at(remote.desk.ticket.id, 1, r#"{"priority": "urgent"}"#),
        )
        .await
        .expect("update");
    match outcome {
        Outcome::NotCreated {
            reason: NotCreatedReason::Rejected(why),
            ..
        } => assert!(why.contains("412") && why.contains("not 1"), "{why}"),
        other => panic!("expected a refusal by the provider, got {other:?}"),
    }
    assert_eq!(remote.made(Change::Update, &key), 0);
}

async fn status_reads_never_send_any_write(db: TestDatabase) {
    for change in Change::ALL {
        let remote = Remote::new(&db, FakeProvider::ignoring_keys()).await;
        remote
            .provider
            .fail_next_dispatch(DispatchFault::FailBeforeCommit);
        let key = fresh_key();
        assert_eq!(remote.send(change, &key).await.name, "unknown");
        tokio::time::sleep(Duration::from_millis(40)).await;
        let sent = remote.dispatches();
        for _ in 0..3 {
            let status = remote
                .desk
                .kitchen
                .operation_status(remote.desk.tenant.id, change.action(), &key)
                .await
                .expect("status")
                .expect("a record");
            assert_eq!(
                status.record.state,
                OperationState::FailedBeforeEffect,
                "{change:?}: a search proved it absent"
            );
        }
        assert_eq!(remote.dispatches(), sent, "{change:?}: a read sent nothing");
        assert_eq!(remote.made(change, &key), 0);
        // The caller's retry is what sends it.
        assert_eq!(remote.send(change, &key).await.name, "created");
        assert_eq!(remote.made(change, &key), 1, "{change:?}");
        assert_eq!(remote.mirrored(change).await, 1, "{change:?}");
    }
}

async fn a_change_reconciled_late_never_rolls_the_local_copy_back(db: TestDatabase) {
    let remote = Remote::new(&db, FakeProvider::ignoring_keys()).await;
    let (kitchen, actor, ticket) = (
        &remote.desk.kitchen,
        remote.desk.actor,
        remote.desk.ticket.id,
    );
    // A: made at the provider (version 2), its answer lost.
    remote
        .provider
        .fail_next_dispatch(DispatchFault::CommitThenLose);
    let a = fresh_key();
    let lost = kitchen
        .write::<UpdateTicket>(
            actor,
            &a,
            &update(ticket, r#"{"title": "Disk full on db-1"}"#),
        )
        .await
        .expect("update");
    assert_eq!(lost.name(), "unknown");
    // B: made on top of it (version 3) and answered at once.
    let b = fresh_key();
    let later = created(
        kitchen
            .write::<UpdateTicket>(actor, &b, &update(ticket, r#"{"priority": "urgent"}"#))
            .await
            .expect("update"),
    );
    assert_eq!(later.result.version.get(), 3);
    assert_eq!(later.result.title.as_str(), "Disk full on db-1");
    // A is found later: its answer is the ticket as A left it, and the
    // local copy stays where B put it.
    tokio::time::sleep(Duration::from_millis(40)).await;
    let found = replayed(
        kitchen
            .write::<UpdateTicket>(
                actor,
                &a,
                &update(ticket, r#"{"title": "Disk full on db-1"}"#),
            )
            .await
            .expect("retry"),
    );
    assert_eq!(found.result.version.get(), 2);
    let local = remote.desk.current(ticket).await;
    assert_eq!(local.version.get(), 3);
    assert_eq!(local.priority.as_str(), "urgent");
    let versions: Vec<i64> = remote
        .desk
        .history(ticket)
        .await
        .iter()
        .filter(|e| e.action == Action::UpdateTicket)
        .map(|e| e.version.get())
        .collect();
    assert_eq!(
        versions,
        [3, 2],
        "one entry per change, at the version it made"
    );
}

async fn a_duplicate_at_the_provider_is_reported_not_hidden(db: TestDatabase) {
    let remote = Remote::new(&db, FakeProvider::ignoring_keys()).await;
    remote
        .provider
        .fail_next_dispatch(DispatchFault::CommitThenLose);
    let key = fresh_key();
    assert_eq!(remote.send(Change::Comment, &key).await.name, "unknown");
    // Something at the provider made the comment twice.
    assert!(
        remote
            .provider
            .duplicate(&remote.external_ref(Change::Comment, &key))
    );
    tokio::time::sleep(Duration::from_millis(40)).await;
    assert_eq!(remote.send(Change::Comment, &key).await.name, "replayed");
    let status = remote
        .desk
        .kitchen
        .operation_status(remote.desk.tenant.id, Action::AddComment, &key)
        .await
        .expect("status")
        .expect("a record");
    let ledger = status.effect.expect("a ledger");
    assert_eq!(ledger.duplicates_at_provider, ["CMT-2"]);
    let found = ledger.last_reconciliation().expect("a lookup");
    assert!(
        found
            .detail
            .as_deref()
            .is_some_and(|d| d.contains("CMT-2") && d.contains("duplicate")),
        "{found:?}"
    );
    assert_eq!(
        remote
            .desk
            .kitchen
            .provider_duplicates()
            .await
            .expect("count"),
        1
    );
    // The local copy keeps the original only.
    assert_eq!(remote.mirrored(Change::Comment).await, 1);
}

async fn a_ticket_kept_only_here_is_refused_and_keeps_the_key(db: TestDatabase) {
    // Made while the deployment kept its tickets itself...
    let local = Desk::new(&db).await;
    // ...then it moved them to a provider.
    let provider = FakeProvider::ignoring_keys();
    let kitchen = db
        .kitchen_with(KitchenConfig {
            backend: TicketBackend::Remote {
                provider: Arc::new(provider.clone()),
                settings: remote_settings(Duration::from_millis(30)),
            },
            ..KitchenConfig::default()
        })
        .await;
    let key = fresh_key();
    let refusal = refused(
        kitchen
            .write::<AddComment>(local.actor, &key, &(local.ticket.id.into(), say("Hello")))
            .await
            .expect("comment"),
    );
    assert_eq!(
        refusal,
        Refusal::NotAtProvider {
            ticket_id: local.ticket.id
        }
    );
    assert_eq!(provider.calls(), (0, 0), "nothing was sent");
    assert!(local.unused(Action::AddComment, &key).await);
}

/// A retry racing its own first attempt is never refused by that attempt's
/// effect: the retry reads the key before the first attempt claims it, the
/// first attempt then makes its effect (the ticket moves on, so the
/// retry's `If-Match` and move are stale), and only then does the retry
/// run its pre-check against the local copy. The key decides, as on the
/// local backend: the retry replays the first attempt's answer. The pause
/// between the retry's read and its pre-check makes the race certain.
async fn a_retry_is_never_refused_by_its_own_first_attempt(db: TestDatabase) {
    let remote = Remote::new(&db, FakeProvider::ignoring_keys()).await;
    let (kitchen, actor, ticket) = (
        &remote.desk.kitchen,
        remote.desk.actor,
        remote.desk.ticket.id,
    );
    for change in [Change::Update, Change::Move] {
        let key = fresh_key();
        let version = remote.desk.current(ticket).await.version.get();
        // The same request twice: an update at the version read before, or
        // the move to in_progress (which the ticket, once moved, refuses).
        let send = || async {
            match change {
                Change::Update => said(
                    kitchen
                        .write::<UpdateTicket>(
                            actor,
                            &key,
                            &update_at(ticket, version, r#"{"title": "Disk full on db-2"}"#),
                        )
                        .await
                        .expect("update"),
                ),
                _ => said(
                    kitchen
                        .write::<TransitionTicket>(
                            actor,
                            &key,
                            &(ticket.into(), move_to("in_progress")),
                        )
                        .await
                        .expect("move"),
                ),
            }
        };
        let mut pause = kitchen::testing::pause_before_precheck(&key);
        let (first, retry) = tokio::join!(
            async {
                pause.held().await;
                let first = send().await;
                pause.release();
                first
            },
            send(),
        );
        assert_eq!(first.name, "created", "{change:?}: {}", first.outcome);
        assert_eq!(retry.name, "replayed", "{change:?}: {}", retry.outcome);
        assert_eq!(retry.snapshot, first.snapshot, "{change:?}: byte for byte");
        assert_eq!(remote.made(change, &key), 1, "{change:?}");
        assert_eq!(remote.mirrored(change).await, 1, "{change:?}");
    }
}

kitchen::on_both_databases!(
    every_write_is_sent_to_the_provider_and_mirrored,
    a_retry_is_never_refused_by_its_own_first_attempt,
    a_lost_answer_is_reconciled_into_exactly_one_effect,
    the_background_reconciler_settles_every_action,
    nothing_is_sent_for_a_write_the_local_copy_refuses,
    a_provider_refusal_makes_nothing_and_keeps_the_key,
    a_refusal_by_the_provider_names_its_reason,
    status_reads_never_send_any_write,
    a_change_reconciled_late_never_rolls_the_local_copy_back,
    a_duplicate_at_the_provider_is_reported_not_hidden,
    a_ticket_kept_only_here_is_refused_and_keeps_the_key,
);
