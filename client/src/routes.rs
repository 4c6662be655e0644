//! Where each request goes and what it carries: the contract's routes as
//! [`Call`]s.

use uuid::Uuid;

use crate::action::Action;
use crate::key::OperationKey;
use crate::network::Call;
use crate::requests::{WriteRequest, ticket_path};
use crate::resources::{PageRequest, TicketId};

/// A write's request, made once per intent: every attempt sends these
/// same bytes with the same key, and only its own request id.
#[derive(Debug, Clone)]
pub(crate) struct WriteCall {
    template: Call,
}

impl WriteCall {
    /// The call for `request` under `key`.
    pub(crate) fn new(
        key: &OperationKey,
        request: &WriteRequest,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self {
            template: request.call(key)?,
        })
    }

    /// One attempt's request: the same request, a new request id.
    pub(crate) fn attempt(&self) -> Call {
        Call {
            request_id: Uuid::now_v7(),
            ..self.template.clone()
        }
    }
}

/// The page parameters of a list.
fn page_query(page: &PageRequest) -> Vec<(&'static str, String)> {
    let mut query = Vec::new();
    if let Some(limit) = page.limit {
        query.push(("limit", limit.to_string()));
    }
    if let Some(cursor) = &page.cursor {
        query.push(("cursor", cursor.clone()));
    }
    query
}

/// `GET /v1/operations/{action}/{key}`.
pub(crate) fn operation(action: Action, key: &OperationKey) -> Call {
    Call::get(
        vec![
            "v1".into(),
            "operations".into(),
            action.as_str().into(),
            key.as_str().into(),
        ],
        Vec::new(),
    )
}

/// `GET /v1/tickets/{id}`.
pub(crate) fn ticket(ticket_id: TicketId) -> Call {
    Call::get(ticket_path(ticket_id, None), Vec::new())
}

/// `GET /v1/tickets?project_id=&limit=&cursor=`.
pub(crate) fn tickets(project_id: Option<&str>, page: &PageRequest) -> Call {
    let mut query = Vec::new();
    if let Some(project_id) = project_id {
        query.push(("project_id", project_id.to_owned()));
    }
    query.extend(page_query(page));
    Call::get(vec!["v1".into(), "tickets".into()], query)
}

/// `GET /v1/tickets/{id}/comments?limit=&cursor=`.
pub(crate) fn comments(ticket_id: TicketId, page: &PageRequest) -> Call {
    Call::get(ticket_path(ticket_id, Some("comments")), page_query(page))
}

/// `GET /v1/tickets/{id}/history?limit=&cursor=`.
pub(crate) fn history(ticket_id: TicketId, page: &PageRequest) -> Call {
    Call::get(ticket_path(ticket_id, Some("history")), page_query(page))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::Method;
    use crate::requests::{NewTicket, PatchField, TicketPatch};
    use crate::resources::TicketStatus;

    #[test]
    fn every_attempt_sends_the_same_request_under_its_own_request_id() {
        let key = OperationKey::parse("key-00000001").expect("a key");
        let ticket_id: TicketId = "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79".parse().expect("id");
        let update = WriteRequest::UpdateTicket {
            ticket_id,
            patch: TicketPatch {
                assignee: PatchField::Set("Ada".into()),
                ..TicketPatch::default()
            },
            if_match: Some(1),
        };
        let call = WriteCall::new(&key, &update).expect("a call");
        let (first, second) = (call.attempt(), call.attempt());
        assert_ne!(first.request_id, second.request_id);
        assert_eq!(
            Call {
                request_id: first.request_id,
                ..second.clone()
            },
            first
        );
        assert_eq!(first.method, Method::Patch);
        assert_eq!(first.key.as_ref(), Some(&key));
        assert_eq!(first.if_match, Some(1));
        assert_eq!(
            first.body,
            Some((
                "application/merge-patch+json",
                br#"{"assignee":"Ada"}"#.to_vec()
            ))
        );

        let create = WriteCall::new(
            &key,
            &WriteRequest::CreateTicket {
                ticket: NewTicket::new("ops", "Disk full"),
            },
        )
        .expect("a call")
        .attempt();
        assert_eq!(create.path, ["v1", "tickets"]);
        assert_eq!(
            create.body.map(|(_, b)| b),
            Some(br#"{"project_id":"ops","title":"Disk full"}"#.to_vec())
        );

        let moved = WriteCall::new(
            &key,
            &WriteRequest::TransitionTicket {
                ticket_id,
                to: TicketStatus::InProgress,
                reason: None,
            },
        )
        .expect("a call")
        .attempt();
        assert_eq!(moved.path.last().map(String::as_str), Some("transitions"));
        assert_eq!(
            moved.body.map(|(_, b)| b),
            Some(br#"{"to":"in_progress"}"#.to_vec())
        );
    }
}
