//! The remote backend's cap on attempts per effect: an effect the provider
//! never answers for is given up on after `max_attempts` calls. It stays
//! `unknown`, no worker (the reconciler, a status read, a caller's retry)
//! calls the provider for it again, and it is counted for an operator.

use kitchen::actions::CreateTicket;
use std::sync::Arc;
use std::time::Duration;

use kitchen::fake_provider::{DispatchFault, FakeProvider};
use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{
    Action, Kitchen, KitchenConfig, NotCreatedReason, OperationKey, OperationState,
    OperationStatus, Outcome, RemoteSettings, TenantId, TicketBackend, Trigger,
};

use crate::support::{created, draft, fresh_key};

/// The cap these tests set: small, so that reaching it takes few calls.
const CAP: u32 = 3;

/// Settings under which every unsettled effect is due at once (no backoff
/// to wait out) and a call nobody answers ends quickly.
fn settings(max_attempts: u32) -> RemoteSettings {
    RemoteSettings {
        dedup_window: Duration::ZERO,
        max_inflight: Duration::ZERO,
        call_timeout: Duration::from_millis(20),
        reconcile_every: Duration::ZERO,
        max_attempts,
    }
}

async fn remote_kitchen(db: &TestDatabase, provider: &FakeProvider, max_attempts: u32) -> Kitchen {
    db.kitchen_with(KitchenConfig {
        backend: TicketBackend::Remote {
            provider: Arc::new(provider.clone()),
            settings: settings(max_attempts),
        },
        ..KitchenConfig::default()
    })
    .await
}

/// One effect on a kitchen.
struct Effect<'k> {
    kitchen: &'k Kitchen,
    tenant: TenantId,
    key: OperationKey,
}

impl Effect<'_> {
    async fn create(&self) -> Outcome {
        self.kitchen
            .write::<CreateTicket>(self.tenant, &self.key, &draft("ops", "Disk full on db-1"))
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

    /// Attempt rows, as a status read shows them. The read reconciles
    /// first, so call it only once the effect is given up on.
    async fn attempts(&self) -> usize {
        self.status()
            .await
            .effect
            .expect("an effect ledger")
            .attempts
            .len()
    }

    async fn pass(&self) -> usize {
        self.kitchen
            .reconcile_due(Trigger::Background)
            .await
            .expect("reconciler pass")
    }
}

fn unknown(outcome: Outcome) -> String {
    match outcome {
        Outcome::Unknown { reason, .. } => reason,
        other => panic!("expected unknown, got {other:?}"),
    }
}

fn says_it_gave_up(reason: &str, attempts: u32) {
    assert!(
        reason.contains(&format!("gave up after {attempts} attempts")),
        "{reason}"
    );
    assert!(
        reason.contains("operator must check the provider"),
        "{reason}"
    );
}

/// Every kind of worker spends attempts until the cap; after it none makes
/// a call, through any door, even once the provider answers again.
async fn a_provider_that_never_answers_is_given_up_on_at_the_cap(db: TestDatabase) {
    let provider = FakeProvider::ignoring_keys();
    provider.stop_answering();
    let kitchen = remote_kitchen(&db, &provider, CAP).await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let effect = Effect {
        kitchen: &kitchen,
        tenant: tenant.id,
        key: fresh_key(),
    };
    assert_eq!(kitchen.unresolved_effects().await.expect("count"), 0);

    // 1: the dispatch times out; a status read searches (not counted: the
    // cap is the reconciler's); 2 and 3: the reconciler searches, and that
    // was the last attempt.
    let first = unknown(effect.create().await);
    assert!(!first.contains("gave up"), "{first}");
    let status = effect.status().await;
    assert_eq!(status.record.state, OperationState::Unknown);
    assert_eq!(effect.pass().await, 1);
    assert_eq!(effect.pass().await, 1);
    assert_eq!(provider.calls(), (1, 3));
    assert_eq!(effect.attempts().await, 4);

    // Past the cap: no pass finds it due, no status read or retry calls.
    for _ in 0..3 {
        assert_eq!(effect.pass().await, 0, "out of the reconciler's queue");
        let status = effect.status().await;
        assert_eq!(status.record.state, OperationState::Unknown);
        let ledger = status.effect.expect("an effect ledger");
        says_it_gave_up(ledger.state_detail.as_deref().unwrap_or_default(), CAP);
        says_it_gave_up(&unknown(effect.create().await), CAP);
    }
    provider.resume_answering();
    assert_eq!(effect.pass().await, 0);
    says_it_gave_up(&unknown(effect.create().await), CAP);
    assert_eq!(effect.attempts().await, 4, "no attempt past the cap");
    assert_eq!(provider.calls(), (1, 3), "no call past the cap");
    assert_eq!(provider.total(), 0, "nothing was made");
    assert_eq!(kitchen.unresolved_effects().await.expect("count"), 1);
}

/// Callers who ask often do not spend the reconciler's budget: a create
/// lost before the provider made anything, asked about many times while a
/// search cannot yet prove absence (within the in-flight bound), stays
/// `unknown` without being given up; once the bound has passed, a status
/// read proves it absent, and the caller's retry sends it. (Before, each
/// read's search counted: the cap was spent within seconds and the effect
/// stayed `unknown` for good although the provider had nothing.)
async fn status_reads_do_not_spend_the_reconcilers_budget(db: TestDatabase) {
    // Room for the reads' round trips through a pooler (tests/ha/pgbouncer.py).
    const IN_FLIGHT: Duration = Duration::from_millis(1000);
    let provider = FakeProvider::ignoring_keys();
    let kitchen = db
        .kitchen_with(KitchenConfig {
            backend: TicketBackend::Remote {
                provider: Arc::new(provider.clone()),
                settings: RemoteSettings {
                    max_inflight: IN_FLIGHT,
                    ..settings(CAP)
                },
            },
            ..KitchenConfig::default()
        })
        .await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let effect = Effect {
        kitchen: &kitchen,
        tenant: tenant.id,
        key: fresh_key(),
    };
    provider.fail_next_dispatch(DispatchFault::FailBeforeCommit);
    let started = std::time::Instant::now();
    unknown(effect.create().await);
    let mut reads = 0;
    while started.elapsed() < IN_FLIGHT / 2 || reads < 3 * CAP {
        let status = effect.status().await;
        assert_eq!(status.record.state, OperationState::Unknown, "read {reads}");
        reads += 1;
    }
    assert!(
        started.elapsed() < IN_FLIGHT,
        "the reads ran within the bound"
    );
    assert!(provider.calls().1 >= 3 * CAP as usize, "each read searched");
    assert_eq!(
        kitchen.unresolved_effects().await.expect("count"),
        0,
        "not given up"
    );

    tokio::time::sleep(IN_FLIGHT).await;
    let status = effect.status().await;
    assert_eq!(
        status.record.state,
        OperationState::FailedBeforeEffect,
        "past the bound a search proves the ticket absent"
    );
    created(effect.create().await);
    assert_eq!(provider.total(), 1, "one ticket at the provider");
}

/// An effect already past a cap that was lowered since is given up on by
/// the next worker, without a call.
async fn a_lowered_cap_gives_up_at_the_next_pass(db: TestDatabase) {
    let provider = FakeProvider::ignoring_keys();
    provider.stop_answering();
    let before = remote_kitchen(&db, &provider, 10).await;
    let (tenant, _) = tenant_with_token(&before, "acme").await;
    let key = fresh_key();
    let effect = Effect {
        kitchen: &before,
        tenant: tenant.id,
        key: key.clone(),
    };
    unknown(effect.create().await);
    assert_eq!(effect.pass().await, 1);
    assert_eq!(effect.pass().await, 1);
    assert_eq!(provider.calls(), (1, 2), "three attempts under a cap of 10");
    assert_eq!(before.unresolved_effects().await.expect("count"), 0);

    let after = remote_kitchen(&db, &provider, 2).await;
    let effect = Effect {
        kitchen: &after,
        tenant: tenant.id,
        key,
    };
    assert_eq!(effect.pass().await, 1, "worked on, to give up on it");
    assert_eq!(effect.pass().await, 0);
    says_it_gave_up(&unknown(effect.create().await), 3);
    assert_eq!(effect.attempts().await, 3);
    assert_eq!(provider.calls(), (1, 2));
    assert_eq!(after.unresolved_effects().await.expect("count"), 1);
}

/// A create the provider provably never made is not capped: nothing exists,
/// so a caller's retry may always send again.
async fn a_provable_failure_is_not_capped(db: TestDatabase) {
    let provider = FakeProvider::ignoring_keys();
    let kitchen = remote_kitchen(&db, &provider, 2).await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let effect = Effect {
        kitchen: &kitchen,
        tenant: tenant.id,
        key: fresh_key(),
    };
    for _ in 0..3 {
        provider.fail_next_dispatch(DispatchFault::Unreachable);
        assert!(matches!(
            effect.create().await,
            Outcome::NotCreated {
                reason: NotCreatedReason::Unavailable(_),
                ..
            }
        ));
    }
    created(effect.create().await);
    assert_eq!(provider.total(), 1);
    assert_eq!(kitchen.unresolved_effects().await.expect("count"), 0);
}

async fn the_local_backend_has_nothing_unresolved(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    assert_eq!(kitchen.unresolved_effects().await.expect("count"), 0);
}

kitchen::on_both_databases!(
    a_provider_that_never_answers_is_given_up_on_at_the_cap,
    a_lowered_cap_gives_up_at_the_next_pass,
    status_reads_do_not_spend_the_reconcilers_budget,
    a_provable_failure_is_not_capped,
    the_local_backend_has_nothing_unresolved,
);
