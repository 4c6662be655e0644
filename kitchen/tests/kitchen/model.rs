//! A model test: random sequences of attempts against a real kitchen must
//! agree with a few lines of in-memory rules.
//!
//! The model: a (tenant, key) pair is free until a valid request uses it;
//! then the same meaning replays that ticket, another meaning conflicts, and
//! invalid input is refused without touching the pair.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use kitchen::testing::{Backend, TestDatabase, tenant_with_token};
use kitchen::{Action, Kitchen, OperationKey, Outcome, TenantId, TicketDraft, TicketId};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use crate::support::ticket_count;

/// Requests by meaning: 0 and 1 mean the same (1 spells the defaults out),
/// 2 differs in priority, 3 is invalid.
fn request(payload: usize) -> TicketDraft {
    let base = TicketDraft {
        project_id: Some("ops".into()),
        title: Some("Disk full".into()),
        ..TicketDraft::default()
    };
    match payload {
        0 => base,
        1 => TicketDraft {
            priority: Some("normal".into()),
            description: Some(String::new()),
            ..base
        },
        2 => TicketDraft {
            priority: Some("high".into()),
            ..base
        },
        _ => TicketDraft {
            project_id: Some("Not a slug".into()),
            ..base
        },
    }
}

fn meaning(payload: usize) -> Option<usize> {
    match payload {
        0 | 1 => Some(0),
        2 => Some(2),
        _ => None,
    }
}

#[derive(Debug, Clone)]
enum Step {
    Create {
        tenant: usize,
        key: usize,
        payload: usize,
    },
    Lookup {
        tenant: usize,
        key: usize,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..2usize, 0..3usize, 0..4usize)
            .prop_map(|(tenant, key, payload)| Step::Create { tenant, key, payload }),
        1 => (0..2usize, 0..3usize).prop_map(|(tenant, key)| Step::Lookup { tenant, key }),
    ]
}

async fn run_case(kitchen: &Kitchen, case: usize, steps: &[Step]) -> Result<(), TestCaseError> {
    let mut tenants: Vec<TenantId> = Vec::new();
    for t in 0..2 {
        let (tenant, _) = tenant_with_token(kitchen, &format!("case-{case}-tenant-{t}")).await;
        tenants.push(tenant.id);
    }
    let key = |k: usize| OperationKey::parse(format!("case-{case}-key-{k}")).expect("valid key");
    // (tenant, key) -> (meaning, ticket) of the request that placed it.
    let mut model: HashMap<(usize, usize), (usize, TicketId)> = HashMap::new();

    for step in steps {
        match *step {
            Step::Create {
                tenant,
                key: k,
                payload,
            } => {
                let outcome = kitchen
                    .create_ticket(tenants[tenant], &key(k), &request(payload))
                    .await
                    .map_err(|e| TestCaseError::fail(format!("infrastructure error: {e}")))?;
                match (meaning(payload), model.get(&(tenant, k)), outcome) {
                    (None, _, Outcome::Invalid { .. }) => {}
                    (Some(m), None, Outcome::Created(r)) => {
                        model.insert((tenant, k), (m, r.ticket.id));
                    }
                    (Some(m), Some(&(placed, id)), Outcome::Replayed(r)) if m == placed => {
                        prop_assert_eq!(r.ticket.id, id);
                    }
                    (Some(m), Some(&(placed, _)), Outcome::Conflict { original })
                        if m != placed =>
                    {
                        prop_assert_eq!(original.key, key(k));
                    }
                    (_, expected, actual) => {
                        return Err(TestCaseError::fail(format!(
                            "{step:?}: model has {expected:?}, kitchen answered {actual:?}"
                        )));
                    }
                }
            }
            Step::Lookup { tenant, key: k } => {
                let record = kitchen
                    .operation(tenants[tenant], Action::CreateTicket, &key(k))
                    .await
                    .map_err(|e| TestCaseError::fail(format!("infrastructure error: {e}")))?;
                let expected = model.get(&(tenant, k)).map(|&(_, id)| id);
                prop_assert_eq!(record.and_then(|r| r.ticket_id), expected);
            }
        }
    }
    for (t, tenant) in tenants.iter().enumerate() {
        let expected = model.keys().filter(|(mt, _)| *mt == t).count();
        prop_assert_eq!(ticket_count(kitchen, *tenant).await, expected);
    }
    Ok(())
}

/// One database per backend for the whole run; every case gets fresh
/// tenants, so cases cannot see each other.
fn model_agrees(backend: Backend) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (db, kitchen) = rt.block_on(async {
        let db = TestDatabase::new(backend).await;
        let kitchen = db.kitchen().await;
        (db, kitchen)
    });
    // proptest's runner takes an Fn closure, so the case counter is atomic.
    let case = AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases: 48,
        ..Config::default()
    });
    let result = runner.run(&proptest::collection::vec(step(), 1..24), |steps| {
        let n = case.fetch_add(1, Ordering::Relaxed);
        rt.block_on(run_case(&kitchen, n, &steps))
    });
    rt.block_on(kitchen.close());
    drop(db);
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

#[test]
fn sqlite_model_agrees() {
    model_agrees(Backend::Sqlite);
}

#[test]
fn postgres_model_agrees() {
    model_agrees(Backend::Postgres);
}
