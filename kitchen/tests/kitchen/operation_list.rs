//! Lists of operations: a tenant's own, newest first, paged by cursor and
//! narrowed by state, action and time; an operator's across tenants.
//! Forgotten keys are never listed, and a list never shows another
//! tenant's operation.

use kitchen::actions::{AddComment, CreateTicket};
use kitchen::testing::TestDatabase;
use kitchen::{
    Action, Clock, KeyPhase, Kitchen, KitchenConfig, ListedState, OperationCursor, OperationFilter,
    OperationKey, OperationSummary, PageSize, TenantId,
};
use time::OffsetDateTime;
use time::macros::datetime;

use crate::support::{Desk, created, draft, fresh_key, say};

const START: OffsetDateTime = datetime!(2026-03-01 09:00:00.250 UTC);
const WINDOW: time::Duration = time::Duration::days(30);
const HORIZON: time::Duration = time::Duration::days(400);

async fn desk(db: &TestDatabase, clock: &Clock, name: &str) -> Desk {
    let kitchen = db
        .kitchen_with(KitchenConfig {
            clock: clock.clone(),
            replay_window: WINDOW,
            tombstone_horizon: HORIZON,
            ..KitchenConfig::default()
        })
        .await;
    Desk::on(kitchen, name).await
}

/// Every page of a list, followed by cursor, with its operations' keys.
async fn every_page(
    kitchen: &Kitchen,
    tenant: Option<TenantId>,
    filter: &OperationFilter,
    size: u32,
) -> Vec<Vec<OperationSummary>> {
    let size = PageSize::parse(size).expect("a size");
    let mut pages = Vec::new();
    let mut cursor: Option<OperationCursor> = None;
    loop {
        let page = kitchen
            .all_operations(tenant, filter, size, cursor.as_ref())
            .await
            .expect("list");
        pages.push(page.operations);
        match page.next_cursor {
            // Callers get the cursor as text: it must survive the trip.
            Some(next) => {
                cursor = Some(OperationCursor::parse(&next.to_string()).expect("a cursor"))
            }
            None => return pages,
        }
        assert!(pages.len() < 100, "the cursor moves on");
    }
}

fn keys(pages: &[Vec<OperationSummary>]) -> Vec<(Action, OperationKey)> {
    pages
        .iter()
        .flatten()
        .map(|o| (o.record.action, o.record.key.clone()))
        .collect()
}

async fn one_page(
    kitchen: &Kitchen,
    tenant: TenantId,
    filter: &OperationFilter,
) -> Vec<OperationSummary> {
    kitchen
        .operations(tenant, filter, PageSize::DEFAULT, None)
        .await
        .expect("list")
        .operations
}

/// Newest first, each operation once across pages (also where several
/// share one instant, as under this clock), narrowed by every filter, and
/// only the tenant's own.
async fn a_tenants_operations_page_newest_first_and_filter(db: TestDatabase) {
    let clock = Clock::manual(START);
    let acme = desk(&db, &clock, "acme").await;
    let kitchen = &acme.kitchen;
    let other = Desk::on(kitchen.clone(), "globex").await;
    let mut made = vec![(Action::CreateTicket, None)];
    for i in 0..4 {
        clock.advance(time::Duration::seconds(1));
        let key = fresh_key();
        created(
            kitchen
                .write::<CreateTicket>(acme.actor, &key, &draft("ops", &format!("Ticket {i}")))
                .await
                .expect("create"),
        );
        made.push((Action::CreateTicket, Some(key)));
    }
    // Two at one instant: the order among them is still total.
    clock.advance(time::Duration::seconds(1));
    let since = clock.now();
    for _ in 0..2 {
        let key = fresh_key();
        created(
            kitchen
                .write::<AddComment>(
                    acme.actor,
                    &key,
                    &(acme.ticket.id.into(), say("Seen on db-1")),
                )
                .await
                .expect("comment"),
        );
        made.push((Action::AddComment, Some(key)));
    }

    let all = every_page(
        kitchen,
        Some(acme.tenant.id),
        &OperationFilter::default(),
        2,
    )
    .await;
    assert_eq!(all.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 2, 1]);
    let listed = keys(&all);
    assert_eq!(listed.len(), made.len());
    let mut unique = listed.clone();
    unique.sort_by(|a, b| (a.0.as_str(), a.1.as_str()).cmp(&(b.0.as_str(), b.1.as_str())));
    unique.dedup();
    assert_eq!(unique.len(), listed.len(), "no operation twice");
    let times: Vec<_> = all.iter().flatten().map(|o| o.record.created_at).collect();
    assert!(
        times.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {times:?}"
    );
    assert_eq!(
        listed[..2]
            .iter()
            .filter(|(a, _)| *a == Action::AddComment)
            .count(),
        2
    );
    for (action, key) in made.iter().filter_map(|(a, k)| k.clone().map(|k| (*a, k))) {
        assert!(listed.contains(&(action, key)), "listed");
    }
    let first = &all[0][0];
    assert_eq!(first.phase, KeyPhase::Replayable);
    assert!(
        first.record.result.is_none(),
        "a list leaves the answer to the status"
    );
    assert!(!first.needs_operator());

    let creates = OperationFilter {
        action: Some(Action::CreateTicket),
        ..OperationFilter::default()
    };
    assert_eq!(one_page(kitchen, acme.tenant.id, &creates).await.len(), 5);
    let recent = OperationFilter {
        since: Some(since),
        ..OperationFilter::default()
    };
    assert_eq!(one_page(kitchen, acme.tenant.id, &recent).await.len(), 2);
    let older = OperationFilter {
        before: Some(since),
        ..OperationFilter::default()
    };
    assert_eq!(one_page(kitchen, acme.tenant.id, &older).await.len(), 5);
    for (state, expected) in [
        (ListedState::Succeeded, 7),
        (ListedState::Expired, 0),
        (ListedState::Unknown, 0),
        (ListedState::InProgress, 0),
        (ListedState::FailedBeforeEffect, 0),
    ] {
        let filter = OperationFilter {
            state: Some(state),
            ..OperationFilter::default()
        };
        assert_eq!(
            one_page(kitchen, acme.tenant.id, &filter).await.len(),
            expected,
            "{state}"
        );
    }

    // The other tenant sees its one create; an operator sees both.
    let theirs = one_page(kitchen, other.tenant.id, &OperationFilter::default()).await;
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0].record.tenant_id, other.tenant.id);
    let everyone = every_page(kitchen, None, &OperationFilter::default(), 200).await;
    assert_eq!(keys(&everyone).len(), made.len() + 1);
}

/// Past the replay window an operation lists as `expired`; past the
/// tombstone horizon it is not listed at all, swept or not.
async fn expired_keys_list_as_expired_and_forgotten_ones_not_at_all(db: TestDatabase) {
    let clock = Clock::manual(START);
    let acme = desk(&db, &clock, "acme").await;
    let kitchen = &acme.kitchen;
    let only = |state| OperationFilter {
        state: Some(state),
        ..OperationFilter::default()
    };
    let tenant = acme.tenant.id;
    assert_eq!(
        one_page(kitchen, tenant, &only(ListedState::Succeeded))
            .await
            .len(),
        1
    );

    clock.advance(WINDOW + time::Duration::seconds(1));
    assert_eq!(
        one_page(kitchen, tenant, &only(ListedState::Succeeded))
            .await
            .len(),
        0
    );
    let expired = one_page(kitchen, tenant, &only(ListedState::Expired)).await;
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].phase, KeyPhase::Expired);

    clock.advance(HORIZON);
    assert!(
        one_page(kitchen, tenant, &OperationFilter::default())
            .await
            .is_empty()
    );
}

kitchen::on_both_databases!(
    a_tenants_operations_page_newest_first_and_filter,
    expired_keys_list_as_expired_and_forgotten_ones_not_at_all,
);
