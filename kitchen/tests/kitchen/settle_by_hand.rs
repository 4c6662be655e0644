//! Settling an effect by hand (`tickets ops settle`): an operator decides
//! what reconciliation could not learn. Only an `unknown` effect is
//! settled; a decision the provider contradicts is refused unless forced;
//! the audit entry is in the status from then on; the caller's retry sees
//! the settled outcome; a settled record never changes again, however the
//! settle races the reconciler; and copies found at the provider are
//! resolved with `--keep`.

use kitchen::actions::CreateTicket;
use std::sync::Arc;
use std::time::Duration;

use kitchen::fake_provider::{DispatchFault, FakeProvider};
use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{
    Action, Decision, ExternalRef, Kitchen, KitchenConfig, OperationKey, OperationState,
    OperationStatus, OperatorName, Outcome, ProviderReference, RemoteSettings, SettleAnswer,
    SettleOrder, SettleReason, SettleRefusal, TenantId, TicketBackend, Trigger,
};

use crate::support::{Desk, created, draft, fresh_key, replayed};

/// An effect whose answer was lost, that no worker settles by itself while
/// the test looks: absence is never provable (the in-flight bound is long)
/// and no reconciler runs unless the test asks.
struct Lost {
    kitchen: Kitchen,
    provider: FakeProvider,
    tenant: TenantId,
    key: OperationKey,
}

impl Lost {
    /// A create whose dispatch met `fault`, left `unknown`.
    async fn create(db: &TestDatabase, fault: DispatchFault) -> Self {
        Self::create_for(db, fault, "acme").await
    }

    /// The same, for a tenant of its own named `tenant`.
    async fn create_for(db: &TestDatabase, fault: DispatchFault, tenant: &str) -> Self {
        let provider = FakeProvider::ignoring_keys();
        let kitchen = db
            .kitchen_with(KitchenConfig {
                backend: TicketBackend::Remote {
                    provider: Arc::new(provider.clone()),
                    settings: RemoteSettings {
                        dedup_window: Duration::ZERO,
                        max_inflight: Duration::from_secs(3600),
                        call_timeout: Duration::from_millis(200),
                        reconcile_every: Duration::ZERO,
                        ..RemoteSettings::default()
                    },
                },
                ..KitchenConfig::default()
            })
            .await;
        let (tenant, _) = tenant_with_token(&kitchen, tenant).await;
        let lost = Self {
            kitchen,
            provider,
            tenant: tenant.id,
            key: fresh_key(),
        };
        lost.provider.fail_next_dispatch(fault);
        match lost.retry().await {
            Outcome::Unknown { .. } => {}
            other => panic!("expected unknown, got {other:?}"),
        }
        lost
    }

    async fn retry(&self) -> Outcome {
        self.kitchen
            .write::<CreateTicket>(self.tenant, &self.key, &draft("ops", "Disk full on db-1"))
            .await
            .expect("create")
    }

    async fn settle(&self, decision: Decision, force: bool) -> SettleAnswer {
        let order = SettleOrder {
            decision,
            by: OperatorName::parse("ana").expect("a name"),
            reason: SettleReason::parse("checked the tracker by hand").expect("a reason"),
            force,
        };
        self.kitchen
            .settle(self.tenant, Action::CreateTicket, &self.key, &order)
            .await
            .expect("settle")
    }

    /// As recorded: reads settle nothing here.
    async fn recorded(&self) -> OperationStatus {
        self.kitchen
            .operation_as_recorded(self.tenant, Action::CreateTicket, &self.key)
            .await
            .expect("read")
            .expect("a record")
    }

    fn external_ref(&self) -> String {
        ExternalRef::derive(self.tenant, Action::CreateTicket, &self.key)
            .as_str()
            .to_owned()
    }
}

fn made(reference: &str) -> Decision {
    Decision::Made(ProviderReference::parse(reference).expect("a reference"))
}

/// How many of the tenant's operations the list shows as needing a person.
async fn needing_an_operator(lost: &Lost) -> usize {
    let filter = kitchen::OperationFilter {
        needs_operator: true,
        ..kitchen::OperationFilter::default()
    };
    lost.kitchen
        .operations(lost.tenant, &filter, kitchen::PageSize::DEFAULT, None)
        .await
        .expect("list")
        .operations
        .len()
}

fn kept(reference: &str) -> Decision {
    Decision::Kept(ProviderReference::parse(reference).expect("a reference"))
}

fn refused(answer: SettleAnswer) -> SettleRefusal {
    match answer {
        SettleAnswer::Refused(refusal) => refusal,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

async fn unchanged(lost: &Lost) {
    let recorded = lost.recorded().await;
    assert_eq!(recorded.record.state, OperationState::Unknown);
    let ledger = recorded.effect.expect("a ledger");
    assert!(ledger.settled_by_hand.is_empty(), "no audit entry");
}

/// The provider made it: `--made` with another id is refused (and names
/// what the provider holds); with its id, the operation succeeds with that
/// ticket, the retry replays it, the status keeps who settled it and why,
/// and a second settle is told what won.
async fn made_settles_a_lost_create_and_the_retry_replays_it(db: TestDatabase) {
    let lost = Lost::create(&db, DispatchFault::CommitThenLose).await;
    // What an operator sees first: the lost answer among the failed calls,
    // and the effect in the reconciler's backlog.
    let failed = lost.kitchen.failed_provider_calls(10).await.expect("calls");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].key, lost.key);
    assert_eq!(
        failed[0].attempt.result,
        Some(kitchen::AttemptResult::Ambiguous)
    );
    let upkeep = lost.kitchen.upkeep().await.expect("upkeep");
    assert_eq!(
        (upkeep.reconciling, upkeep.records, upkeep.tombstones),
        (1, 1, 0)
    );
    let wrong = refused(lost.settle(made("FAKE-9"), false).await);
    let SettleRefusal::Contradicted(why) = &wrong else {
        panic!("expected contradicted, got {wrong:?}");
    };
    assert!(why.contains("found as FAKE-1"), "{why}");
    unchanged(&lost).await;
    let not_made = refused(lost.settle(Decision::NotMade, false).await);
    assert!(
        matches!(not_made, SettleRefusal::Contradicted(_)),
        "{not_made:?}"
    );
    unchanged(&lost).await;

    let SettleAnswer::Settled { state, settlement } = lost.settle(made("FAKE-1"), false).await
    else {
        panic!("expected settled");
    };
    assert_eq!(state, OperationState::Succeeded);
    assert_eq!(settlement.provider_check, "found as FAKE-1");
    assert!(!settlement.forced);
    let replay = replayed(lost.retry().await);
    assert_eq!(replay.result.provider_ticket_id.as_deref(), Some("FAKE-1"));
    let upkeep = lost.kitchen.upkeep().await.expect("upkeep");
    assert_eq!(upkeep.reconciling, 0, "settled: out of the backlog");
    let status = lost
        .kitchen
        .operation_status(lost.tenant, Action::CreateTicket, &lost.key)
        .await
        .expect("status")
        .expect("a record");
    assert_eq!(status.record.state, OperationState::Succeeded);
    let audit = status.effect.expect("a ledger").settled_by_hand;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].by.as_str(), "ana");
    assert_eq!(audit[0].reason.as_str(), "checked the tracker by hand");
    assert_eq!(audit[0].decision, made("FAKE-1"));

    let again = refused(lost.settle(Decision::NotMade, true).await);
    let SettleRefusal::NotUnknown { state, settled_by } = &again else {
        panic!("expected not unknown, got {again:?}");
    };
    assert_eq!(*state, OperationState::Succeeded);
    assert_eq!(settled_by.as_ref().map(|s| s.by.as_str()), Some("ana"));
    assert!(
        again.to_string().contains("ana settled it as made"),
        "{again}"
    );
    assert_eq!(lost.provider.count(&lost.external_ref()), 1);
}

/// The provider never made it: `--not-made` settles it as failed before
/// its effect, and the caller's retry with the same key sends it, once.
async fn not_made_lets_the_retry_send_it(db: TestDatabase) {
    let lost = Lost::create(&db, DispatchFault::FailBeforeCommit).await;
    let SettleAnswer::Settled { state, settlement } = lost.settle(Decision::NotMade, false).await
    else {
        panic!("expected settled");
    };
    assert_eq!(state, OperationState::FailedBeforeEffect);
    assert!(
        settlement.provider_check.contains("no ticket"),
        "{}",
        settlement.provider_check
    );
    let recorded = lost.recorded().await;
    assert_eq!(recorded.record.state, OperationState::FailedBeforeEffect);
    // The reconciler leaves it to the caller: a settled record stays so.
    lost.kitchen
        .reconcile_due(Trigger::Background)
        .await
        .expect("pass");
    assert_eq!(
        lost.recorded().await.record.state,
        OperationState::FailedBeforeEffect
    );
    assert_eq!(lost.provider.count(&lost.external_ref()), 0);

    let sent = created(lost.retry().await);
    assert_eq!(sent.result.provider_ticket_id.as_deref(), Some("FAKE-1"));
    assert_eq!(lost.provider.count(&lost.external_ref()), 1);
    replayed(lost.retry().await);
    assert_eq!(lost.provider.count(&lost.external_ref()), 1);
}

/// A provider that cannot be searched contradicts nothing but proves
/// nothing: `--made` needs `--force`, and the audit entry says it was.
async fn a_forced_settlement_is_marked_as_forced(db: TestDatabase) {
    let lost = Lost::create(&db, DispatchFault::CommitThenLose).await;
    lost.provider.stop_answering();
    let unproven = refused(lost.settle(made("FAKE-1"), false).await);
    assert!(
        unproven.to_string().contains("could not be searched"),
        "{unproven}"
    );
    unchanged(&lost).await;
    let SettleAnswer::Settled { settlement, .. } = lost.settle(made("FAKE-1"), true).await else {
        panic!("expected settled");
    };
    assert!(settlement.forced);
    lost.provider.resume_answering();
    let replay = replayed(lost.retry().await);
    assert_eq!(replay.result.provider_ticket_id.as_deref(), Some("FAKE-1"));
}

/// A settle racing reconciliation (a status read, which finds the ticket): one of them
/// settles it, the record never flips afterwards, and a settle that lost
/// says what won.
async fn a_settle_racing_the_reconciler_has_one_winner(db: TestDatabase) {
    let mut winners = (0, 0);
    for round in 0..10 {
        let tenant = format!("acme-{round}");
        let lost = Lost::create_for(&db, DispatchFault::CommitThenLose, &tenant).await;
        // A status read settles it the way the reconciler does, at once
        // (the reconciler's own schedule backs off after the lost answer).
        // Who is asked first alternates.
        let read = lost
            .kitchen
            .operation_status(lost.tenant, Action::CreateTicket, &lost.key);
        let settled = if round % 2 == 0 {
            tokio::join!(lost.settle(made("FAKE-1"), false), read).0
        } else {
            let (read, settled) = tokio::join!(read, lost.settle(made("FAKE-1"), false));
            read.expect("status");
            settled
        };
        let recorded = lost.recorded().await;
        assert_eq!(recorded.record.state, OperationState::Succeeded);
        let audit = recorded.effect.expect("a ledger").settled_by_hand;
        match settled {
            SettleAnswer::Settled { .. } => {
                assert_eq!(audit.len(), 1);
                winners.0 += 1;
            }
            SettleAnswer::Refused(SettleRefusal::NotUnknown { state, settled_by }) => {
                assert_eq!(state, OperationState::Succeeded);
                assert!(settled_by.is_none() && audit.is_empty());
                winners.1 += 1;
            }
            SettleAnswer::Refused(SettleRefusal::Busy) => {
                assert!(audit.is_empty());
                winners.1 += 1;
            }
            other => panic!("unexpected {other:?}"),
        }
        replayed(lost.retry().await);
        assert_eq!(lost.provider.count(&lost.external_ref()), 1);
    }
    eprintln!(
        "settle won {} times, reconciliation {}",
        winners.0, winners.1
    );
}

/// Copies at the provider: `--keep` the original once the others are
/// removed there (not another one, not while copies remain unless forced);
/// the record stops listing them and stops counting for an operator.
async fn keep_resolves_copies_at_the_provider(db: TestDatabase) {
    let lost = Lost::create(&db, DispatchFault::CommitThenLose).await;
    assert!(lost.provider.duplicate(&lost.external_ref()));
    let nothing_yet = refused(lost.settle(kept("FAKE-1"), true).await);
    assert_eq!(
        nothing_yet,
        SettleRefusal::NoCopies {
            state: OperationState::Unknown
        }
    );
    let status = lost
        .kitchen
        .operation_status(lost.tenant, Action::CreateTicket, &lost.key)
        .await
        .expect("status")
        .expect("a record");
    assert_eq!(status.record.state, OperationState::Succeeded);
    assert_eq!(
        status.effect.expect("a ledger").duplicates_at_provider,
        ["FAKE-2"]
    );
    assert_eq!(lost.kitchen.provider_duplicates().await.expect("count"), 1);
    assert_eq!(
        needing_an_operator(&lost).await,
        1,
        "listed as needing a person"
    );

    let other = refused(lost.settle(kept("FAKE-2"), true).await);
    assert!(other.to_string().contains("keep FAKE-1"), "{other}");
    let still = refused(lost.settle(kept("FAKE-1"), false).await);
    assert!(still.to_string().contains("and 1 more ticket"), "{still}");
    assert_eq!(lost.kitchen.provider_duplicates().await.expect("count"), 1);

    assert!(lost.provider.remove("FAKE-2"));
    let SettleAnswer::Settled { settlement, .. } = lost.settle(kept("FAKE-1"), false).await else {
        panic!("expected settled");
    };
    assert!(!settlement.forced);
    assert_eq!(lost.kitchen.provider_duplicates().await.expect("count"), 0);
    assert_eq!(needing_an_operator(&lost).await, 0, "resolved");
    let ledger = lost.recorded().await.effect.expect("a ledger");
    assert!(ledger.duplicates_at_provider.is_empty());
    assert_eq!(ledger.settled_by_hand.len(), 1);
    assert_eq!(ledger.settled_by_hand[0].decision, kept("FAKE-1"));
    let again = refused(lost.settle(kept("FAKE-1"), true).await);
    assert!(matches!(again, SettleRefusal::NoCopies { .. }), "{again:?}");
    replayed(lost.retry().await);
}

/// On the local backend every outcome is known: nothing to settle.
async fn the_local_backend_has_nothing_to_settle(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let order = SettleOrder {
        decision: Decision::NotMade,
        by: OperatorName::parse("ana").expect("a name"),
        reason: SettleReason::parse("why not").expect("a reason"),
        force: true,
    };
    let key = desk.ticket.id;
    let records = desk
        .kitchen
        .operations(
            desk.tenant.id,
            &kitchen::OperationFilter::default(),
            kitchen::PageSize::DEFAULT,
            None,
        )
        .await
        .expect("list");
    let used = records.operations[0].record.key.clone();
    let answer = desk
        .kitchen
        .settle(desk.tenant.id, Action::CreateTicket, &used, &order)
        .await
        .expect("settle");
    assert!(
        matches!(
            answer,
            SettleAnswer::Refused(SettleRefusal::NotUnknown {
                state: OperationState::Succeeded,
                settled_by: None
            })
        ),
        "{answer:?} ({key})"
    );
    let never = desk
        .kitchen
        .settle(desk.tenant.id, Action::CreateTicket, &fresh_key(), &order)
        .await
        .expect("settle");
    assert_eq!(never, SettleAnswer::Refused(SettleRefusal::NotFound));
}

kitchen::on_both_databases!(
    made_settles_a_lost_create_and_the_retry_replays_it,
    not_made_lets_the_retry_send_it,
    a_forced_settlement_is_marked_as_forced,
    a_settle_racing_the_reconciler_has_one_winner,
    keep_resolves_copies_at_the_provider,
    the_local_backend_has_nothing_to_settle,
);
