//! Shared helpers for the kitchen tests.

use kitchen::{Kitchen, OperationKey, Outcome, PageSize, Receipt, TenantId, TicketDraft};

/// A fresh operation key, as a caller would mint one.
pub fn fresh_key() -> OperationKey {
    OperationKey::parse(uuid::Uuid::now_v7().to_string()).expect("a UUID is a good key")
}

/// A valid draft for `project` with `title`.
pub fn draft(project: &str, title: &str) -> TicketDraft {
    TicketDraft {
        project_id: Some(project.into()),
        title: Some(title.into()),
        ..TicketDraft::default()
    }
}

/// How many tickets the tenant has, read from the database (ground truth),
/// not from any create's answer.
pub async fn ticket_count(kitchen: &Kitchen, tenant: TenantId) -> usize {
    let mut count = 0;
    let mut cursor = None;
    loop {
        let page = kitchen
            .list_tickets(
                tenant,
                None,
                PageSize::parse(PageSize::MAX).expect("max"),
                cursor,
            )
            .await
            .expect("list tickets");
        count += page.tickets.len();
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return count,
        }
    }
}

/// The receipt of a `Created` outcome; panics on anything else.
pub fn created(outcome: Outcome) -> Receipt {
    match outcome {
        Outcome::Created(receipt) => receipt,
        other => panic!("expected created, got {other:?}"),
    }
}

/// The receipt of a `Replayed` outcome; panics on anything else.
pub fn replayed(outcome: Outcome) -> Receipt {
    match outcome {
        Outcome::Replayed(receipt) => receipt,
        other => panic!("expected replayed, got {other:?}"),
    }
}
