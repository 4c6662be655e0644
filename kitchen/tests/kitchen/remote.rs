//! The remote backend: the write-ahead effect ledger, unknown outcomes and
//! reconciliation, against an in-memory provider whose ticket count per
//! external reference is the ground truth. Every test states, at its end,
//! how many tickets the provider really holds for the intended effect.

use kitchen::actions::CreateTicket;
use std::sync::Arc;
use std::time::Duration;

use kitchen::fake_provider::{DispatchFault, FakeProvider, LookupFault};
use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{
    Action, Actor, AttemptKind, AttemptResult, ExternalRef, Kitchen, KitchenConfig,
    NotCreatedReason, OperationKey, OperationState, OperationStatus, Outcome, RemoteSettings,
    TenantId, TicketBackend, Trigger,
};

use crate::support::{created, draft, fresh_key, history, replayed, ticket_count};

/// One intended effect against a fake provider.
struct Effect {
    kitchen: Kitchen,
    provider: FakeProvider,
    tenant: TenantId,
    key: OperationKey,
}

/// Settings for tests: short enough to wait out, long enough to matter.
fn settings(dedup_window: Duration, max_inflight: Duration) -> RemoteSettings {
    RemoteSettings {
        dedup_window,
        max_inflight,
        call_timeout: Duration::from_millis(500),
        reconcile_every: Duration::from_millis(50),
        ..RemoteSettings::default()
    }
}

impl Effect {
    async fn new(db: &TestDatabase, provider: FakeProvider, settings: RemoteSettings) -> Self {
        let config = KitchenConfig {
            backend: TicketBackend::Remote {
                provider: Arc::new(provider.clone()),
                settings,
            },
            ..KitchenConfig::default()
        };
        let kitchen = db.kitchen_with(config).await;
        let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
        Self {
            kitchen,
            provider,
            tenant: tenant.id,
            key: fresh_key(),
        }
    }

    async fn create(&self) -> Outcome {
        self.create_titled("Disk full on db-1").await
    }

    async fn create_titled(&self, title: &str) -> Outcome {
        self.kitchen
            .write::<CreateTicket>(self.tenant, &self.key, &draft("ops", title))
            .await
            .expect("create")
    }

    async fn status(&self) -> OperationStatus {
        self.kitchen
            .operation_status(self.tenant, Action::CreateTicket, &self.key)
            .await
            .expect("status")
            .expect("a record")
    }

    /// The stored state, read without reconciling.
    async fn state(&self) -> OperationState {
        self.kitchen
            .operation(self.tenant, Action::CreateTicket, &self.key)
            .await
            .expect("read")
            .expect("a record")
            .state
    }

    fn external_ref(&self) -> String {
        ExternalRef::derive(self.tenant, Action::CreateTicket, &self.key)
            .as_str()
            .to_owned()
    }

    /// Tickets the provider made for this effect: the ground truth.
    fn made(&self) -> usize {
        self.provider.count(&self.external_ref())
    }

    /// Attempts as `kind:result` strings, oldest first.
    async fn attempts(&self) -> Vec<String> {
        let status = self.status().await;
        let ledger = status.effect.expect("an effect ledger");
        ledger
            .attempts
            .iter()
            .map(|a| {
                format!(
                    "{}:{}",
                    a.kind.as_str(),
                    a.result.map_or("-", AttemptResult::as_str)
                )
            })
            .collect()
    }
}

fn unknown(outcome: Outcome) -> String {
    match outcome {
        Outcome::Unknown { reason, .. } => reason,
        other => panic!("expected unknown, got {other:?}"),
    }
}

async fn a_create_is_recorded_ahead_and_replays(db: TestDatabase) {
    let effect = Effect::new(
        &db,
        FakeProvider::ignoring_keys(),
        settings(Duration::ZERO, Duration::ZERO),
    )
    .await;
    let first = created(effect.create().await);
    assert_eq!(first.operation.state, OperationState::Succeeded);
    assert!(
        first
            .result
            .provider_ticket_id
            .as_deref()
            .is_some_and(|id| id.starts_with("FAKE-"))
    );
    let again = replayed(effect.create().await);
    assert_eq!(first.snapshot, again.snapshot, "byte-identical replay");
    assert_eq!(effect.made(), 1);
    assert_eq!(
        effect.provider.calls(),
        (1, 0),
        "a replay never calls the provider"
    );
    assert_eq!(effect.attempts().await, ["dispatch:created"]);
    // The local copy is listed like any ticket.
    assert_eq!(ticket_count(&effect.kitchen, effect.tenant).await, 1);
}

async fn a_lost_answer_is_unknown_then_found_not_resent(db: TestDatabase) {
    // Ignores keys: a blind re-dispatch would make a second ticket.
    let effect = Effect::new(
        &db,
        FakeProvider::ignoring_keys(),
        settings(Duration::ZERO, Duration::ZERO),
    )
    .await;
    effect
        .provider
        .fail_next_dispatch(DispatchFault::CommitThenLose);
    let reason = unknown(effect.create().await);
    assert!(reason.contains("may or may not exist"), "{reason}");
    assert_eq!(effect.state().await, OperationState::Unknown);

    let retry = replayed(effect.create().await);
    assert!(retry.result.provider_ticket_id.is_some());
    assert_eq!(effect.made(), 1, "reconciled, not re-sent");
    assert_eq!(
        effect.attempts().await,
        ["dispatch:ambiguous", "lookup:found"]
    );
}

async fn a_failure_before_commit_is_resent_once_absence_is_proven(db: TestDatabase) {
    let effect = Effect::new(
        &db,
        FakeProvider::ignoring_keys(),
        settings(Duration::ZERO, Duration::from_millis(300)),
    )
    .await;
    effect
        .provider
        .fail_next_dispatch(DispatchFault::FailBeforeCommit);
    unknown(effect.create().await);
    // Too soon: the 5xx'd request could in principle still land.
    let reason = unknown(effect.create().await);
    assert!(reason.contains("may still be processed"), "{reason}");
    assert_eq!(effect.made(), 0);

    tokio::time::sleep(Duration::from_millis(350)).await;
    created(effect.create().await);
    assert_eq!(
        effect.made(),
        1,
        "missing ticket made once absence was proven"
    );
    assert_eq!(
        effect.attempts().await,
        [
            "dispatch:ambiguous",
            "lookup:absent_too_soon",
            "lookup:absent",
            "dispatch:created"
        ]
    );
}

async fn a_request_that_lands_late_is_found_not_duplicated(db: TestDatabase) {
    let effect = Effect::new(
        &db,
        FakeProvider::ignoring_keys(),
        settings(Duration::ZERO, Duration::from_millis(400)),
    )
    .await;
    effect
        .provider
        .fail_next_dispatch(DispatchFault::LandLater(Duration::from_millis(150)));
    unknown(effect.create().await);
    unknown(effect.create().await);
    tokio::time::sleep(Duration::from_millis(250)).await;
    replayed(effect.create().await);
    assert_eq!(effect.made(), 1);
}

async fn a_refusal_is_not_created_and_frees_the_key(db: TestDatabase) {
    let effect = Effect::new(
        &db,
        FakeProvider::ignoring_keys(),
        settings(Duration::ZERO, Duration::ZERO),
    )
    .await;
    effect.provider.fail_next_dispatch(DispatchFault::Reject);
    match effect.create().await {
        Outcome::NotCreated {
            reason: NotCreatedReason::Rejected(why),
            ..
        } => {
            assert!(why.contains("422"), "{why}");
        }
        other => panic!("expected not created, got {other:?}"),
    }
    let status = effect.status().await;
    assert_eq!(status.record.state, OperationState::FailedBeforeEffect);
    assert_eq!(effect.made(), 0);
    // The key was not spent: a corrected request takes it.
    created(effect.create_titled("Disk full on db-1 (corrected)").await);
    assert_eq!(effect.made(), 1);
}

async fn an_unreachable_provider_is_not_created_and_a_retry_creates(db: TestDatabase) {
    let effect = Effect::new(
        &db,
        FakeProvider::ignoring_keys(),
        settings(Duration::ZERO, Duration::ZERO),
    )
    .await;
    effect
        .provider
        .fail_next_dispatch(DispatchFault::Unreachable);
    assert!(matches!(
        effect.create().await,
        Outcome::NotCreated {
            reason: NotCreatedReason::Unavailable(_),
            ..
        }
    ));
    // Nothing to reconcile: the background pass leaves it to the caller.
    effect
        .kitchen
        .reconcile_due(Trigger::Background)
        .await
        .expect("reconcile");
    assert_eq!(effect.made(), 0);
    created(effect.create().await);
    assert_eq!(effect.made(), 1);
    assert_eq!(
        effect.attempts().await,
        ["dispatch:not_sent", "dispatch:created"]
    );
}

async fn within_the_dedup_window_the_key_protects_a_resend(db: TestDatabase) {
    let window = Duration::from_secs(60);
    let effect = Effect::new(
        &db,
        FakeProvider::honouring_keys(window),
        settings(window, Duration::from_secs(60)),
    )
    .await;
    effect
        .provider
        .fail_next_dispatch(DispatchFault::CommitThenLose);
    unknown(effect.create().await);
    replayed(effect.create().await);
    assert_eq!(effect.made(), 1);
    assert_eq!(
        effect.attempts().await,
        ["dispatch:ambiguous", "dispatch:replayed_by_provider"]
    );
}

async fn past_the_dedup_window_reconciliation_decides(db: TestDatabase) {
    let window = Duration::from_millis(100);
    let effect = Effect::new(
        &db,
        FakeProvider::honouring_keys(window),
        settings(window, Duration::ZERO),
    )
    .await;
    effect
        .provider
        .fail_next_dispatch(DispatchFault::CommitThenLose);
    unknown(effect.create().await);
    tokio::time::sleep(Duration::from_millis(150)).await;
    // The provider has forgotten the key: a re-dispatch would duplicate.
    replayed(effect.create().await);
    assert_eq!(effect.made(), 1);
    assert_eq!(
        effect.attempts().await,
        ["dispatch:ambiguous", "lookup:found"]
    );
}

async fn a_failed_search_stays_unknown_and_says_so(db: TestDatabase) {
    let effect = Effect::new(
        &db,
        FakeProvider::ignoring_keys(),
        settings(Duration::ZERO, Duration::ZERO),
    )
    .await;
    effect
        .provider
        .fail_next_dispatch(DispatchFault::CommitThenLose);
    effect.provider.fail_next_lookup(LookupFault::Fail);
    unknown(effect.create().await);
    let reason = unknown(effect.create().await);
    assert!(reason.contains("could not be searched"), "{reason}");
    let status = effect.status().await;
    // Asking for the status reconciled once more, and this time it could.
    assert_eq!(status.record.state, OperationState::Succeeded);
    let ledger = status.effect.expect("ledger");
    let last = ledger.last_reconciliation().expect("a lookup");
    assert_eq!(last.result, Some(AttemptResult::Found));
    assert_eq!(last.trigger, Trigger::Status);
    assert_eq!(effect.made(), 1);
}

async fn the_background_reconciler_settles_without_a_caller(db: TestDatabase) {
    let effect = Effect::new(
        &db,
        FakeProvider::ignoring_keys(),
        settings(Duration::ZERO, Duration::ZERO),
    )
    .await;
    effect
        .provider
        .fail_next_dispatch(DispatchFault::CommitThenLose);
    unknown(effect.create().await);
    tokio::time::sleep(Duration::from_millis(60)).await;
    let worked = effect
        .kitchen
        .reconcile_due(Trigger::Background)
        .await
        .expect("reconcile");
    assert_eq!(worked, 1);
    assert_eq!(effect.state().await, OperationState::Succeeded);
    assert_eq!(effect.made(), 1);
    assert_eq!(effect.provider.calls(), (1, 1));
}

async fn a_crash_before_dispatch_is_sent_after_the_lease_runs_out(db: TestDatabase) {
    let effect = Effect::new(
        &db,
        FakeProvider::ignoring_keys(),
        settings(Duration::ZERO, Duration::ZERO),
    )
    .await;
    effect
        .kitchen
        .write_ahead_only_for_test(
            effect.tenant,
            &effect.key,
            &draft("ops", "Disk full on db-1"),
        )
        .await;
    assert_eq!(effect.state().await, OperationState::InProgress);
    // The dead worker's lease still runs: nobody may touch the effect.
    assert_eq!(
        effect
            .kitchen
            .reconcile_due(Trigger::Startup)
            .await
            .expect("pass"),
        0
    );
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        effect
            .kitchen
            .reconcile_due(Trigger::Startup)
            .await
            .expect("pass"),
        1
    );
    assert_eq!(effect.made(), 1);
    replayed(effect.create().await);
    assert_eq!(effect.made(), 1);
    let attempts = effect.status().await.effect.expect("ledger").attempts;
    assert_eq!(
        attempts[0].result, None,
        "the crashed dispatch never answered"
    );
    assert_eq!(attempts[1].kind, AttemptKind::Lookup);
    assert_eq!(attempts[2].trigger, Trigger::Startup);
}

async fn a_crash_after_dispatch_is_found_at_startup(db: TestDatabase) {
    let effect = Effect::new(
        &db,
        FakeProvider::ignoring_keys(),
        settings(Duration::ZERO, Duration::ZERO),
    )
    .await;
    effect
        .kitchen
        .write_ahead_only_for_test(
            effect.tenant,
            &effect.key,
            &draft("ops", "Disk full on db-1"),
        )
        .await;
    // The dispatch landed; the process died before recording it.
    effect.provider.make_ticket(&effect.external_ref());
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        effect
            .kitchen
            .reconcile_due(Trigger::Startup)
            .await
            .expect("pass"),
        1
    );
    replayed(effect.create().await);
    assert_eq!(effect.made(), 1);
}

async fn concurrent_first_attempts_dispatch_once(db: TestDatabase) {
    let effect = Effect::new(
        &db,
        FakeProvider::ignoring_keys(),
        settings(Duration::ZERO, Duration::ZERO),
    )
    .await;
    let attempts = (0..8).map(|_| effect.create());
    let outcomes = futures::future::join_all(attempts).await;
    let created = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Created(_)))
        .count();
    assert_eq!(created, 1, "{outcomes:?}");
    assert!(outcomes.iter().all(|o| matches!(
        o,
        Outcome::Created(_) | Outcome::Replayed(_) | Outcome::InProgress { .. }
    )));
    assert_eq!(effect.made(), 1);
    assert_eq!(effect.provider.calls().0, 1);
}

async fn a_different_request_with_a_used_key_conflicts(db: TestDatabase) {
    let effect = Effect::new(
        &db,
        FakeProvider::ignoring_keys(),
        settings(Duration::ZERO, Duration::ZERO),
    )
    .await;
    effect
        .provider
        .fail_next_dispatch(DispatchFault::CommitThenLose);
    unknown(effect.create().await);
    assert!(matches!(
        effect.create_titled("Something else").await,
        Outcome::Conflict { .. }
    ));
    assert_eq!(effect.made(), 1);
}

/// A ticket's history is the same whichever backend made it: its first
/// entry names the token the caller authenticated with, as a local
/// create's does (`history::each_write_adds_one_entry_saying_what_changed`).
async fn a_remote_create_records_the_callers_token_in_history(db: TestDatabase) {
    let effect = Effect::new(
        &db,
        FakeProvider::ignoring_keys(),
        settings(Duration::ZERO, Duration::ZERO),
    )
    .await;
    let token = effect
        .kitchen
        .issue_token(effect.tenant)
        .await
        .expect("issue");
    let caller = effect
        .kitchen
        .authenticate(&token.secret)
        .await
        .expect("auth")
        .expect("a fresh token authenticates");
    let made = created(
        effect
            .kitchen
            .write::<CreateTicket>(
                Actor::from(&caller),
                &effect.key,
                &draft("ops", "Disk full"),
            )
            .await
            .expect("create"),
    );
    let entries = history(&effect.kitchen, effect.tenant, made.result.id).await;
    assert_eq!(entries.len(), 1, "the create");
    assert_eq!(entries[0].action, Action::CreateTicket);
    assert_eq!(entries[0].operation_key, effect.key);
    assert_eq!(
        entries[0].actor_token_id,
        caller.token(),
        "the caller's token, as on the local backend"
    );
}

/// A status read observes and never acts: under every fault of a
/// dispatch, reading the status sends nothing to the provider and makes
/// nothing there. It may search, and it settles what the search proves:
/// found is `succeeded`, provably absent is `failed_before_effect`. Only
/// the caller's retry sends again, and makes exactly one ticket.
async fn status_reads_never_send(db: &TestDatabase, provider: FakeProvider) {
    // No request can still be in flight (max_inflight 0), so a search
    // proves absence at once and the test needs no wait.
    let mut effect = Effect::new(db, provider, settings(Duration::ZERO, Duration::ZERO)).await;
    for fault in [
        DispatchFault::FailBeforeCommit,
        DispatchFault::CommitThenLose,
        DispatchFault::Reject,
        DispatchFault::Unreachable,
    ] {
        effect.key = fresh_key();
        effect.provider.fail_next_dispatch(fault.clone());
        let first = effect.create().await;
        let made = effect.made();
        let (dispatches, _) = effect.provider.calls();
        for _ in 0..3 {
            effect.status().await;
        }
        let status = effect.status().await;
        assert_eq!(
            effect.provider.calls().0,
            dispatches,
            "{fault:?}: a status read sent the ticket (first answer: {})",
            first.name()
        );
        assert_eq!(
            effect.made(),
            made,
            "{fault:?}: a status read made a ticket"
        );
        let expected = if made == 1 {
            OperationState::Succeeded
        } else {
            OperationState::FailedBeforeEffect
        };
        assert_eq!(
            status.record.state, expected,
            "{fault:?}: what the reads settled"
        );
        let retry = effect.create().await;
        assert!(
            matches!(retry, Outcome::Created(_) | Outcome::Replayed(_)),
            "{fault:?}: the retry answered {retry:?}"
        );
        assert_eq!(effect.made(), 1, "{fault:?}: tickets after the retry");
    }
}

/// Where the provider honours keys a resend would even be harmless; a read
/// still does not send (hosts run read-only tools without asking).
async fn a_status_read_never_sends_when_the_provider_honours_keys(db: TestDatabase) {
    status_reads_never_send(&db, FakeProvider::honouring_keys(Duration::from_secs(3600))).await;
}

async fn a_status_read_never_sends_when_the_provider_ignores_keys(db: TestDatabase) {
    status_reads_never_send(&db, FakeProvider::ignoring_keys()).await;
}

/// A status read that finds nothing at the provider tells the caller what
/// to do: nothing was made, retry the write with the same key.
async fn a_status_read_that_proves_absence_says_to_retry(db: TestDatabase) {
    let effect = Effect::new(
        &db,
        FakeProvider::ignoring_keys(),
        settings(Duration::ZERO, Duration::ZERO),
    )
    .await;
    effect
        .provider
        .fail_next_dispatch(DispatchFault::FailBeforeCommit);
    unknown(effect.create().await);
    let status = effect.status().await;
    assert_eq!(status.record.state, OperationState::FailedBeforeEffect);
    let ledger = status.effect.expect("ledger");
    let detail = ledger.state_detail.clone().unwrap_or_default();
    assert!(detail.contains("nothing was made"), "{detail}");
    assert!(detail.contains("same key"), "{detail}");
    let last = ledger.last_reconciliation().expect("a lookup");
    assert_eq!(last.result, Some(AttemptResult::Absent));
    assert_eq!(last.trigger, Trigger::Status);
    assert_eq!(effect.made(), 0);
    assert_eq!(
        effect.attempts().await,
        ["dispatch:ambiguous", "lookup:absent"],
        "the read searched, and sent nothing"
    );
}

/// A status read that arrives while another worker (here an earlier read,
/// stuck on a provider that stopped answering) holds the effect's lease
/// does not wait behind it: it answers what is recorded, `unknown`, at
/// once. Asked again once that worker is done and the provider answers,
/// it searches itself and finds the ticket.
async fn a_status_read_does_not_wait_behind_a_worker_already_at_it(db: TestDatabase) {
    let effect = Arc::new(
        Effect::new(
            &db,
            FakeProvider::ignoring_keys(),
            settings(Duration::ZERO, Duration::ZERO),
        )
        .await,
    );
    effect
        .provider
        .fail_next_dispatch(DispatchFault::CommitThenLose);
    unknown(effect.create().await);
    effect.provider.stop_answering();
    let first = tokio::spawn({
        let effect = Arc::clone(&effect);
        async move { effect.status().await }
    });
    // The first read holds the lease once its search reaches the provider.
    while effect.provider.calls().1 == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let meanwhile = effect.status().await;
    assert_eq!(meanwhile.record.state, OperationState::Unknown);
    assert!(
        !first.is_finished(),
        "answered while the first read still waits on the provider"
    );
    effect.provider.resume_answering();
    let stuck = first.await.expect("the first read");
    assert_eq!(
        stuck.record.state,
        OperationState::Unknown,
        "its search timed out"
    );
    let status = effect.status().await;
    assert_eq!(status.record.state, OperationState::Succeeded);
    let last = status
        .effect
        .expect("ledger")
        .last_reconciliation()
        .cloned()
        .expect("a lookup");
    assert_eq!(last.result, Some(AttemptResult::Found));
    assert_eq!(effect.made(), 1);
}

kitchen::on_both_databases!(
    a_status_read_does_not_wait_behind_a_worker_already_at_it,
    a_status_read_never_sends_when_the_provider_honours_keys,
    a_status_read_never_sends_when_the_provider_ignores_keys,
    a_status_read_that_proves_absence_says_to_retry,
    a_create_is_recorded_ahead_and_replays,
    a_lost_answer_is_unknown_then_found_not_resent,
    a_failure_before_commit_is_resent_once_absence_is_proven,
    a_request_that_lands_late_is_found_not_duplicated,
    a_refusal_is_not_created_and_frees_the_key,
    an_unreachable_provider_is_not_created_and_a_retry_creates,
    within_the_dedup_window_the_key_protects_a_resend,
    past_the_dedup_window_reconciliation_decides,
    a_failed_search_stays_unknown_and_says_so,
    the_background_reconciler_settles_without_a_caller,
    a_crash_before_dispatch_is_sent_after_the_lease_runs_out,
    a_crash_after_dispatch_is_found_at_startup,
    concurrent_first_attempts_dispatch_once,
    a_different_request_with_a_used_key_conflicts,
    a_remote_create_records_the_callers_token_in_history,
);
