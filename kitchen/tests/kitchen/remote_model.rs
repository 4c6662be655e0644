//! A model test of the remote backend: random sequences of provider faults,
//! creates, status reads and reconciler passes, against a real kitchen and
//! an in-memory provider whose ticket count is the ground truth.
//!
//! The rules it checks, after every step:
//! - the provider never holds more than one ticket per intended effect;
//! - `created` or `replayed` only when that one ticket exists, always the
//!   same ticket for a key, and `created` at most once per key;
//! - `not_created` only when the provider holds nothing for the key.
//!
//! And at the end, once the provider behaves: one more retry of every key
//! settles it, and the provider holds exactly one ticket per key.

use kitchen::actions::CreateTicket;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kitchen::fake_provider::{DispatchFault, FakeProvider, LookupFault};
use kitchen::testing::{DatabaseKind, TestDatabase, tenant_with_token};
use kitchen::{
    Action, ExternalRef, Kitchen, KitchenConfig, OperationKey, Outcome, RemoteSettings,
    TicketBackend, TicketId, Trigger,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use crate::support::{draft, ticket_count};

/// How late a `LandLater` dispatch lands; the kitchen is told the provider
/// may take twice as long (its max in-flight time), as a real deployment
/// must be.
const LANDS_AFTER: Duration = Duration::from_millis(20);
const MAX_INFLIGHT: Duration = Duration::from_millis(40);

#[derive(Debug, Clone)]
enum Step {
    /// The next dispatch (whichever key it is for) misbehaves.
    DispatchFault(u8),
    /// The next search fails.
    LookupFault,
    Create(usize),
    Status(usize),
    Reconcile,
    Wait,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => (0..5u8).prop_map(Step::DispatchFault),
        1 => Just(Step::LookupFault),
        5 => (0..3usize).prop_map(Step::Create),
        1 => (0..3usize).prop_map(Step::Status),
        1 => Just(Step::Reconcile),
        1 => Just(Step::Wait),
    ]
}

fn fault(n: u8) -> DispatchFault {
    match n {
        0 => DispatchFault::FailBeforeCommit,
        1 => DispatchFault::CommitThenLose,
        2 => DispatchFault::Reject,
        3 => DispatchFault::Unreachable,
        _ => DispatchFault::LandLater(LANDS_AFTER),
    }
}

/// What the model knows of one key.
#[derive(Debug, Default)]
struct Known {
    ticket: Option<TicketId>,
    created: bool,
}

struct Case<'a> {
    kitchen: &'a Kitchen,
    provider: &'a FakeProvider,
    tenant: kitchen::TenantId,
    keys: Vec<OperationKey>,
}

impl Case<'_> {
    fn made(&self, k: usize) -> usize {
        self.provider
            .count(ExternalRef::derive(self.tenant, Action::CreateTicket, &self.keys[k]).as_str())
    }

    async fn create(&self, k: usize) -> Result<Outcome, TestCaseError> {
        self.kitchen
            .write::<CreateTicket>(
                self.tenant,
                &self.keys[k],
                &draft("ops", &format!("Ticket {k}")),
            )
            .await
            .map_err(|e| TestCaseError::fail(format!("infrastructure error: {e}")))
    }

    /// Checks one create's outcome against the model and the ground truth.
    fn judge(&self, k: usize, outcome: &Outcome, known: &mut Known) -> Result<(), TestCaseError> {
        let made = self.made(k);
        match outcome {
            Outcome::Created(r) | Outcome::Replayed(r) => {
                prop_assert_eq!(made, 1, "a ticket answered, so the provider holds it once");
                if let Some(id) = known.ticket {
                    prop_assert_eq!(r.result.id, id, "always the same ticket for a key");
                }
                known.ticket = Some(r.result.id);
                if matches!(outcome, Outcome::Created(_)) {
                    prop_assert!(!known.created, "created at most once per key");
                    known.created = true;
                }
            }
            Outcome::NotCreated { .. } => {
                prop_assert_eq!(made, 0, "not created means nothing made")
            }
            Outcome::Unknown { .. } | Outcome::InProgress { .. } => {}
            other => return Err(TestCaseError::fail(format!("unexpected outcome {other:?}"))),
        }
        Ok(())
    }
}

async fn run_case(
    kitchen: &Kitchen,
    provider: &FakeProvider,
    n: usize,
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let (tenant, _) = tenant_with_token(kitchen, &format!("case-{n}")).await;
    let case = Case {
        kitchen,
        provider,
        tenant: tenant.id,
        keys: (0..3)
            .map(|k| OperationKey::parse(format!("case-{n}-key-{k}")).expect("a key"))
            .collect(),
    };
    provider.clear_faults();
    let mut known: HashMap<usize, Known> = HashMap::new();
    for step in steps {
        match *step {
            Step::DispatchFault(f) => provider.fail_next_dispatch(fault(f)),
            Step::LookupFault => provider.fail_next_lookup(LookupFault::Fail),
            Step::Create(k) => {
                let outcome = case.create(k).await?;
                case.judge(k, &outcome, known.entry(k).or_default())?;
            }
            Step::Status(k) => {
                kitchen
                    .operation_status(case.tenant, Action::CreateTicket, &case.keys[k])
                    .await
                    .map_err(|e| TestCaseError::fail(format!("infrastructure error: {e}")))?;
            }
            Step::Reconcile => {
                kitchen
                    .reconcile_due(Trigger::Background)
                    .await
                    .map_err(|e| TestCaseError::fail(format!("infrastructure error: {e}")))?;
            }
            Step::Wait => tokio::time::sleep(MAX_INFLIGHT / 2).await,
        }
        for k in 0..3 {
            prop_assert!(
                case.made(k) <= 1,
                "{step:?}: key {k} made {} tickets",
                case.made(k)
            );
        }
    }
    // The provider behaves again; every key used settles on one retry or a
    // few (a retry may first have to wait out the in-flight time).
    provider.clear_faults();
    tokio::time::sleep(MAX_INFLIGHT).await;
    for (&k, known) in known.iter_mut() {
        let mut settled = false;
        for _ in 0..20 {
            let outcome = case.create(k).await?;
            case.judge(k, &outcome, known)?;
            if matches!(outcome, Outcome::Created(_) | Outcome::Replayed(_)) {
                settled = true;
                break;
            }
            tokio::time::sleep(MAX_INFLIGHT / 4).await;
        }
        prop_assert!(settled, "key {} never settled", k);
        prop_assert_eq!(
            case.made(k),
            1,
            "key {}: exactly one ticket once settled",
            k
        );
    }
    prop_assert_eq!(ticket_count(kitchen, case.tenant).await, known.len());
    Ok(())
}

fn model_agrees(backend: DatabaseKind) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let provider = FakeProvider::ignoring_keys();
    let (db, kitchen) = rt.block_on(async {
        let db = TestDatabase::new(backend).await;
        let config = KitchenConfig {
            backend: TicketBackend::Remote {
                provider: Arc::new(provider.clone()),
                settings: RemoteSettings {
                    dedup_window: Duration::ZERO,
                    max_inflight: MAX_INFLIGHT,
                    call_timeout: Duration::from_millis(500),
                    reconcile_every: Duration::from_millis(10),
                    ..RemoteSettings::default()
                },
            },
            ..KitchenConfig::default()
        };
        let kitchen = db.kitchen_with(config).await;
        (db, kitchen)
    });
    let case = AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases: 24,
        ..Config::default()
    });
    let result = runner.run(&proptest::collection::vec(step(), 1..16), |steps| {
        let n = case.fetch_add(1, Ordering::Relaxed);
        rt.block_on(run_case(&kitchen, &provider, n, &steps))
    });
    rt.block_on(kitchen.close());
    drop(db);
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

#[test]
fn sqlite_remote_model_agrees() {
    model_agrees(DatabaseKind::Sqlite);
}

#[test]
fn postgres_remote_model_agrees() {
    model_agrees(DatabaseKind::Postgres);
}
