//! Ticket reads: by id and paged lists, always within one tenant.

use kitchen::actions::CreateTicket;
use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{Cursor, PageSize, ProjectId, TicketFilter, TicketId};

use crate::support::{created, draft, fresh_key};

async fn lists_newest_first_in_pages(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let mut made: Vec<TicketId> = Vec::new();
    for (i, project) in ["ops", "web", "ops", "ops", "web"].iter().enumerate() {
        let receipt = created(
            kitchen
                .write::<CreateTicket>(tenant.id, &fresh_key(), &draft(project, &format!("T{i}")))
                .await
                .expect("create"),
        );
        made.push(receipt.result.id);
    }
    made.reverse(); // newest first

    let two = PageSize::parse(2).expect("valid size");
    let mut seen = Vec::new();
    let mut cursor: Option<Cursor> = None;
    loop {
        let page = kitchen
            .list_tickets(tenant.id, &TicketFilter::default(), two, cursor)
            .await
            .expect("list");
        assert!(page.tickets.len() <= 2);
        seen.extend(page.tickets.iter().map(|t| t.id));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, made);

    let ops = ProjectId::parse("ops").expect("slug");
    let page = kitchen
        .list_tickets(
            tenant.id,
            &TicketFilter::project(ops.clone()),
            PageSize::DEFAULT,
            None,
        )
        .await
        .expect("list");
    assert_eq!(page.tickets.len(), 3);
    assert!(page.tickets.iter().all(|t| t.project_id == ops));
    assert_eq!(page.next_cursor, None);
}

async fn another_tenants_ticket_is_not_found(db: TestDatabase) {
    let kitchen = db.kitchen().await;
    let (acme, _) = tenant_with_token(&kitchen, "acme").await;
    let (globex, _) = tenant_with_token(&kitchen, "globex").await;
    let receipt = created(
        kitchen
            .write::<CreateTicket>(acme.id, &fresh_key(), &draft("ops", "Secret"))
            .await
            .expect("create"),
    );
    assert!(
        kitchen
            .ticket(acme.id, receipt.result.id)
            .await
            .expect("read")
            .is_some()
    );
    assert_eq!(
        kitchen
            .ticket(globex.id, receipt.result.id)
            .await
            .expect("read"),
        None
    );
    let page = kitchen
        .list_tickets(globex.id, &TicketFilter::default(), PageSize::DEFAULT, None)
        .await
        .expect("list");
    assert!(page.tickets.is_empty());
}

kitchen::on_both_databases!(
    lists_newest_first_in_pages,
    another_tenants_ticket_is_not_found
);
