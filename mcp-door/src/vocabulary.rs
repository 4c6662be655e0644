//! What each write is called in the MCP door's sentences: the one place
//! that matches on the action for words, a leaf that every sentence in
//! `contract` and every result builder reads. A new write is one entry
//! here (and its file in `actions/`).

use kitchen::Action;

/// The words of one write, as its results say them.
pub(crate) struct Words {
    /// What one call of it makes: "ticket", "change", "comment".
    pub(crate) thing: &'static str,
    /// The participle for it: "created", "made", "added".
    pub(crate) made: &'static str,
    /// What a call that did not happen did: "created nothing", …
    pub(crate) did_nothing: &'static str,
    /// The sentence start for it: "Nothing was created", …
    pub(crate) nothing: &'static str,
    /// What a second try under a new operation_id could do.
    pub(crate) twice: &'static str,
    /// The ticket it made or acted on, around its id: " (ticket_id …)" for
    /// a create, " to ticket_id …" for a change, " on ticket_id …" for a
    /// comment.
    pub(crate) acted_on: (&'static str, &'static str),
    /// What it leaves that can be read now, and the tool that reads it.
    pub(crate) lasting: (&'static str, &'static str),
    /// The `replayed` answer's next step.
    pub(crate) replayed: &'static str,
    /// The status of a call that did it: `created`, or `updated` for a
    /// write that changes a ticket.
    pub(crate) done: &'static str,
    /// Whether it makes its ticket (so there is no ticket to read before
    /// it, and a status lookup needs no action: it is the default).
    pub(crate) makes_its_ticket: bool,
    /// The shape of its tool's result.
    pub(crate) result: ResultShape,
}

/// The result shapes write tools answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResultShape {
    /// `CreateTicketResult`: the ticket made.
    NewTicket,
    /// `TicketWriteResult`: the ticket as the change left it.
    ChangedTicket,
    /// `CommentWriteResult`: the comment added.
    Comment,
}

const CHANGE: Words = Words {
    thing: "change",
    made: "made",
    did_nothing: "changed nothing",
    nothing: "Nothing was changed",
    twice: "make the change twice",
    acted_on: (" to ticket_id ", ""),
    lasting: ("ticket", "get_ticket"),
    replayed: "This operation_id had already made this change; nothing was changed again. The \
               ticket shown is as that change left it (read it with get_ticket for how it is \
               now). For a different change, invent a new operation_id.",
    done: "updated",
    makes_its_ticket: false,
    result: ResultShape::ChangedTicket,
};

/// The words of `action`.
pub(crate) fn words(action: Action) -> &'static Words {
    match action {
        Action::CreateTicket => &Words {
            thing: "ticket",
            made: "created",
            did_nothing: "created nothing",
            nothing: "Nothing was created",
            twice: "create a duplicate",
            acted_on: (" (ticket_id ", ")"),
            lasting: ("ticket", "get_ticket"),
            replayed: "This operation_id had already created this ticket; nothing new was \
                       created. For a different ticket, invent a new operation_id.",
            done: "created",
            makes_its_ticket: true,
            result: ResultShape::NewTicket,
        },
        Action::UpdateTicket
        | Action::TransitionTicket
        | Action::AddLabel
        | Action::RemoveLabel => &CHANGE,
        Action::AddComment => &Words {
            thing: "comment",
            made: "added",
            did_nothing: "added nothing",
            nothing: "Nothing was added",
            twice: "add it twice",
            acted_on: (" on ticket_id ", ""),
            lasting: ("comment", "list_comments"),
            replayed: "This operation_id had already added this comment; nothing new was added. \
                       For a different comment, invent a new operation_id.",
            done: "created",
            makes_its_ticket: false,
            result: ResultShape::Comment,
        },
    }
}

impl Words {
    /// The ticket `ticket_id` as a phrase after the effect; nothing when
    /// there is no ticket yet.
    pub(crate) fn on(&self, ticket_id: Option<&str>) -> String {
        let (before, after) = self.acted_on;
        ticket_id.map_or_else(String::new, |id| format!("{before}{id}{after}"))
    }
}
