//! The facade's reads of tickets, comments and history: tenant-scoped,
//! behind the circuit, and never a write.

use std::future::Future;

use crate::KitchenError;
use crate::domain::comment::{Comment, CommentId, CommentPage};
use crate::domain::history::HistoryPage;
use crate::domain::page::{Cursor, PageSize, TicketFilter, TicketPage};
use crate::domain::tenant::TenantId;
use crate::domain::ticket::{Ticket, TicketId};
use crate::store;

use super::Kitchen;

impl Kitchen {
    /// One of the tenant's tickets; another tenant's is not found.
    pub async fn ticket(
        &self,
        tenant: TenantId,
        id: TicketId,
    ) -> Result<Option<Ticket>, KitchenError> {
        self.guarded(store::tickets::find(&self.db, tenant, id))
            .await
    }

    /// A page of the tenant's tickets, newest first: those `filter` lets
    /// through (of one project, carrying one label).
    pub async fn list_tickets(
        &self,
        tenant: TenantId,
        filter: &TicketFilter,
        size: PageSize,
        cursor: Option<Cursor>,
    ) -> Result<TicketPage, KitchenError> {
        let tickets = self
            .guarded(store::tickets::list(
                &self.db,
                tenant,
                filter,
                cursor.map(Cursor::after),
                size.get() + 1,
            ))
            .await?;
        Ok(TicketPage::from_overfetch(tickets, size))
    }

    /// A page of a ticket's comments, oldest first; `None` when the tenant
    /// has no such ticket.
    pub async fn list_comments(
        &self,
        tenant: TenantId,
        ticket: TicketId,
        size: PageSize,
        cursor: Option<Cursor>,
    ) -> Result<Option<CommentPage>, KitchenError> {
        let after = cursor.map(Cursor::after);
        let read = store::comments::list(&self.db, tenant, ticket, after, size.get() + 1);
        let comments = self.of_ticket(tenant, ticket, read).await?;
        Ok(comments.map(|comments| CommentPage::from_overfetch(comments, size)))
    }

    /// One comment of one of the tenant's tickets.
    pub async fn comment(
        &self,
        tenant: TenantId,
        ticket: TicketId,
        id: CommentId,
    ) -> Result<Option<Comment>, KitchenError> {
        self.guarded(store::comments::find(&self.db, tenant, ticket, id))
            .await
    }

    /// A page of a ticket's history, oldest first; `None` when the tenant
    /// has no such ticket.
    pub async fn ticket_history(
        &self,
        tenant: TenantId,
        ticket: TicketId,
        size: PageSize,
        cursor: Option<Cursor>,
    ) -> Result<Option<HistoryPage>, KitchenError> {
        let after = cursor.map(Cursor::after);
        let read = store::history::list(&self.db, tenant, ticket, after, size.get() + 1);
        let entries = self.of_ticket(tenant, ticket, read).await?;
        Ok(entries.map(|entries| HistoryPage::from_overfetch(entries, size)))
    }

    /// `read` of something under one of the tenant's tickets; `None`, and
    /// `read` never run, when the tenant has no such ticket (so another
    /// tenant's ticket reveals nothing, not even that it has no comments).
    async fn of_ticket<T>(
        &self,
        tenant: TenantId,
        ticket: TicketId,
        read: impl Future<Output = Result<T, KitchenError>>,
    ) -> Result<Option<T>, KitchenError> {
        if self
            .guarded(store::tickets::find(&self.db, tenant, ticket))
            .await?
            .is_none()
        {
            return Ok(None);
        }
        Ok(Some(self.guarded(read).await?))
    }
}
