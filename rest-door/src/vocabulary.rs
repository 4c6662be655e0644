//! What each write is called in the REST door's words: the one place that
//! matches on the action for prose, a leaf that problem details
//! (`error.rs`) and operation statuses (`routes/operations.rs`) read. A
//! new write is one entry here (and its route file).

use kitchen::Action;

/// The words of one write.
pub(crate) struct Words {
    /// The request that makes it: "POST /v1/tickets".
    pub(crate) request: &'static str,
    /// What a caller intends by one: "ticket", "change", "move", "comment".
    pub(crate) intent: &'static str,
    /// What it is called as a deed: "create", "update", …
    pub(crate) noun: &'static str,
    /// What did not happen when it was refused: "Nothing was created".
    pub(crate) nothing: &'static str,
    /// How its body must be sent.
    pub(crate) media_type: &'static str,
    /// Whether it makes its ticket (so there is no ticket to read before
    /// it, and a refusal's fix is only to correct the request).
    pub(crate) makes_its_ticket: bool,
    /// What its operation's resource is.
    pub(crate) resource: Resource,
    /// What the operation did, for a key reused for another request: with
    /// the ticket's address appended, and before there is a ticket.
    pub(crate) did: (&'static str, &'static str),
    /// What it did and what it left, for an expired key: "The ticket was
    /// created", "the ticket".
    pub(crate) expired: (&'static str, &'static str),
    /// The status's next step once it succeeded.
    pub(crate) succeeded: &'static str,
    /// … while it is being sent to a provider.
    pub(crate) in_progress: &'static str,
    /// … while its effect is unknown.
    pub(crate) unknown: &'static str,
    /// … once reconciliation gave up on it.
    pub(crate) gave_up: &'static str,
}

/// What an operation's resource id names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resource {
    /// A ticket.
    Ticket,
    /// A comment on its ticket.
    Comment,
}

const JSON: &str = "Send the body as JSON with `Content-Type: application/json`.";

const CHANGE_SUCCEEDED: &str = "The change was made. Sending the same request with this key \
    again returns the ticket as that change left it and changes nothing; a different request \
    with this key is refused. GET the ticket to see it as it is now.";
const CHANGE_IN_PROGRESS: &str = "The change is being sent to the ticket provider. GET this \
    again shortly, or retry the same request with the same key. Do not use a new key for this \
    change.";
const CHANGE_UNKNOWN: &str = "The provider's answer was lost, so the change may or may not have \
    been made; the service is reconciling with the provider's records. Retry the same request \
    with the same key, or GET this again: either returns the ticket as the change left it once \
    it is known. Never use a new key for this change: that could make it twice.";
const CHANGE_GAVE_UP: &str = "Whether the change was made is still unknown, and the service has \
    stopped asking the provider (see detail): an operator must check the provider for this \
    operation's external reference. Retrying with this key answers the same; never use a new \
    key for this change: that could make it twice.";

/// The words of `action`.
pub(crate) fn words(action: Action) -> &'static Words {
    match action {
        Action::CreateTicket => &Words {
            request: "POST /v1/tickets",
            intent: "ticket",
            noun: "create",
            nothing: "Nothing was created",
            media_type: JSON,
            makes_its_ticket: true,
            resource: Resource::Ticket,
            did: ("made the ticket ", "has not made a ticket yet"),
            expired: ("The ticket was created", "the ticket"),
            succeeded: "The ticket exists. Sending the same request with this key again returns \
                it again and creates nothing; a different request with this key is refused.",
            in_progress: "The ticket is being sent to the ticket provider. GET this again \
                shortly, or retry the same request with the same key. Do not use a new key for \
                this ticket.",
            unknown: "The provider's answer was lost, so the ticket may or may not exist; the \
                service is reconciling with the provider's records. Retry the same request with \
                the same key, or GET this again: either returns the ticket once it is known. \
                Never use a new key for this ticket: that could create a duplicate.",
            gave_up: "Whether the ticket exists is still unknown, and the service has stopped \
                asking the provider (see detail): an operator must check the provider for this \
                operation's external reference. Retrying with this key answers the same; never \
                use a new key for this ticket: that could create a duplicate.",
        },
        Action::UpdateTicket => &Words {
            request: "PATCH /v1/tickets/{id}",
            intent: "change",
            noun: "update",
            nothing: "Nothing was changed",
            media_type: "Send the patch as JSON with `Content-Type: \
                application/merge-patch+json` (or `application/json`).",
            makes_its_ticket: false,
            resource: Resource::Ticket,
            did: ("changed the ticket ", "has not finished yet"),
            expired: ("The change was made", "the ticket"),
            succeeded: CHANGE_SUCCEEDED,
            in_progress: CHANGE_IN_PROGRESS,
            unknown: CHANGE_UNKNOWN,
            gave_up: CHANGE_GAVE_UP,
        },
        Action::TransitionTicket => &Words {
            request: "POST /v1/tickets/{id}/transitions",
            intent: "move",
            noun: "transition",
            nothing: "Nothing was changed",
            media_type: JSON,
            makes_its_ticket: false,
            resource: Resource::Ticket,
            did: ("changed the ticket ", "has not finished yet"),
            expired: ("The move was made", "the ticket"),
            succeeded: CHANGE_SUCCEEDED,
            in_progress: CHANGE_IN_PROGRESS,
            unknown: CHANGE_UNKNOWN,
            gave_up: CHANGE_GAVE_UP,
        },
        Action::AddLabel => &Words {
            request: "POST /v1/tickets/{id}/labels",
            intent: "label",
            noun: "labelling",
            nothing: "Nothing was changed",
            media_type: JSON,
            makes_its_ticket: false,
            resource: Resource::Ticket,
            did: ("labelled the ticket ", "has not finished yet"),
            expired: ("The label was added", "the ticket"),
            succeeded: CHANGE_SUCCEEDED,
            in_progress: CHANGE_IN_PROGRESS,
            unknown: CHANGE_UNKNOWN,
            gave_up: CHANGE_GAVE_UP,
        },
        Action::RemoveLabel => &Words {
            request: "DELETE /v1/tickets/{id}/labels/{label}",
            intent: "label removal",
            noun: "label removal",
            nothing: "Nothing was changed",
            media_type: "This request has no body; the label is the last part of its path.",
            makes_its_ticket: false,
            resource: Resource::Ticket,
            did: ("unlabelled the ticket ", "has not finished yet"),
            expired: ("The label was removed", "the ticket"),
            succeeded: CHANGE_SUCCEEDED,
            in_progress: CHANGE_IN_PROGRESS,
            unknown: CHANGE_UNKNOWN,
            gave_up: CHANGE_GAVE_UP,
        },
        Action::AddComment => &Words {
            request: "POST /v1/tickets/{id}/comments",
            intent: "comment",
            noun: "comment",
            nothing: "No comment was added",
            media_type: JSON,
            makes_its_ticket: false,
            resource: Resource::Comment,
            did: ("commented on the ticket ", "has not finished yet"),
            expired: ("The comment was added", "the comment"),
            succeeded: "The comment was added. Sending the same request with this key again \
                returns it again and adds nothing; a different request with this key is refused.",
            in_progress: "The comment is being sent to the ticket provider. GET this again \
                shortly, or retry the same request with the same key. Do not use a new key for \
                this comment.",
            unknown: "The provider's answer was lost, so the comment may or may not exist; the \
                service is reconciling with the provider's records. Retry the same request with \
                the same key, or GET this again: either returns the comment once it is known. \
                Never use a new key for this comment: that could add it twice.",
            gave_up: "Whether the comment exists is still unknown, and the service has stopped \
                asking the provider (see detail): an operator must check the provider for this \
                operation's external reference. Retrying with this key answers the same; never \
                use a new key for this comment: that could add it twice.",
        },
    }
}

/// What did not happen when `action` was refused, as a sentence.
pub(crate) fn nothing_done(action: Action) -> String {
    format!("{}.", words(action).nothing)
}
