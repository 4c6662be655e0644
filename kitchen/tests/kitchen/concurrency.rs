//! Attempts that race each other.

use kitchen::actions::CreateTicket;
use std::collections::HashSet;

use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{Kitchen, KitchenConfig, Outcome};

use crate::support::{draft, fresh_key, ticket_count};

const RACERS: usize = 32;

pub(crate) async fn concurrent_identical_creates_make_one_ticket(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let key = fresh_key();
    let request = draft("ops", "Disk full");

    let attempts = (0..RACERS).map(|_| {
        let (kitchen, key, request) = (kitchen.clone(), key.clone(), request.clone());
        tokio::spawn(async move {
            kitchen
                .write::<CreateTicket>(tenant.id, &key, &request)
                .await
        })
    });
    let mut created = 0;
    let mut ids = HashSet::new();
    let mut snapshots = HashSet::new();
    for attempt in attempts {
        let outcome = attempt.await.expect("task ran").expect("no attempt errors");
        let receipt = match outcome {
            Outcome::Created(r) => {
                created += 1;
                r
            }
            Outcome::Replayed(r) => r,
            other => panic!("expected created or replayed, got {other:?}"),
        };
        ids.insert(receipt.result.id);
        snapshots.insert(receipt.snapshot.as_str().to_owned());
    }
    assert_eq!(created, 1, "exactly one attempt places the ticket");
    assert_eq!(ids.len(), 1, "every caller gets the same ticket id");
    assert_eq!(snapshots.len(), 1, "every caller gets the same snapshot");
    assert_eq!(ticket_count(&kitchen, tenant.id).await, 1);
}

async fn concurrent_creates_with_different_keys_make_one_ticket_each(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let attempts = (0..RACERS).map(|i| {
        let kitchen = kitchen.clone();
        tokio::spawn(async move {
            kitchen
                .write::<CreateTicket>(
                    tenant.id,
                    &fresh_key(),
                    &draft("ops", &format!("Ticket {i}")),
                )
                .await
        })
    });
    for attempt in attempts {
        let outcome = attempt.await.expect("task ran").expect("no attempt errors");
        assert!(matches!(outcome, Outcome::Created(_)), "got {outcome:?}");
    }
    assert_eq!(ticket_count(&kitchen, tenant.id).await, RACERS);
}

kitchen::on_both_databases!(
    concurrent_identical_creates_make_one_ticket,
    concurrent_creates_with_different_keys_make_one_ticket_each,
);

/// Several instances starting at once on one PostgreSQL database (the way to
/// scale past one machine) must each come up with the schema applied once.
/// SQLite is an embedded, one-instance store, so this is PostgreSQL's alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_instances_starting_at_once_all_migrate() {
    let db = TestDatabase::postgres().await;
    let starts = (0..4).map(|_| {
        let url = db.url().to_owned();
        tokio::spawn(async move { Kitchen::connect(&url, KitchenConfig::default()).await })
    });
    let mut kitchens = Vec::new();
    for start in starts {
        kitchens.push(start.await.expect("task ran").expect("instance started"));
    }
    let (tenant, _) = tenant_with_token(&kitchens[0], "acme").await;
    assert_eq!(ticket_count(&kitchens[3], tenant.id).await, 0);
}
