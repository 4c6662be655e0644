//! What the driver knows of each write action, in one place: [`plan`],
//! the one `match` a new action asks the driver for. For a check it says
//! which request the check intends, which other request it sends under
//! the same key, which second effect it makes under a key of its own,
//! what must be done to the ticket first, where the server shows the
//! effects, and what the provider simulator sees of them. Every check
//! (`policies.rs`, `remote.rs`) is written once, for any action, over a
//! [`Plan`].

use kitchen::{Action, TicketStatus, Version};
use provider_sim::{ChangeKind, FaultOn};
use reqwest::Method;
use serde_json::{Value, json};

use super::write::{Rest, Ticket, Write};

/// One intended effect: the write, another request for the same key, and
/// where the server's state for it is read.
pub(crate) struct Intent {
    pub(crate) write: Write,
    /// Another request under the same key (check 3's).
    pub(crate) changed: Write,
    /// A second intended effect with a key of its own, after the first
    /// (check 10's): a ticket with the same content, an edit or a move on
    /// from there, the same comment again (two keys are two comments,
    /// whatever they say).
    pub(crate) another: Write,
    pub(crate) ground: Ground,
}

impl Intent {
    /// The ticket made for the check to act on (`None` for a create).
    pub(crate) fn subject(&self) -> Option<&str> {
        match &self.ground {
            Ground::Project(_) => None,
            Ground::Versions { ticket, .. } | Ground::Comments(ticket) => Some(ticket),
        }
    }
}

/// Where a check reads what exists.
pub(crate) enum Ground {
    /// The tickets of a project made up for the check.
    Project(String),
    /// A ticket made for the check: its history entries of the action, one
    /// per version past `from` (the version the check found it at).
    Versions {
        /// The ticket.
        ticket: String,
        /// Its version before the check's first write.
        from: i64,
    },
    /// A ticket made for the check: its comments, one history entry each.
    Comments(String),
}

/// Everything a check of one action needs from the action.
pub(crate) struct Plan {
    pub(crate) intent: Intent,
    /// Writes to make first, each with a key of its own, so that the
    /// intent's requests would each change something (a label to take
    /// off); none for most actions.
    pub(crate) prepare: Vec<Write>,
    /// What the provider simulator sees of the effect; `None` for an
    /// action the provider has nothing like (it never arrives there).
    pub(crate) at_provider: Option<AtProvider>,
}

/// An action's effects as the provider simulator sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AtProvider {
    /// The kind of request it arrives as (where a fault is aimed).
    pub(crate) request: FaultOn,
    /// How its effects are counted there.
    pub(crate) counted: Counted,
}

/// How the provider's effects of an action are counted for a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counted {
    /// Tickets with the check's title.
    Tickets,
    /// Change records of this kind on the check's ticket.
    Changes(ChangeKind),
    /// Comments on the check's ticket.
    Comments,
}

/// Whether a check of `action` acts on a ticket made for it: every action
/// but the create.
pub(crate) fn acts_on_a_ticket(action: Action) -> bool {
    action != Action::CreateTicket
}

/// The plan of a check of `action` whose ticket is `ticket`: made by the
/// write for a create; for the other actions made beforehand, as
/// `subject` (its id, at version 1). Each changed request, had the key
/// not stopped it, would make a second effect the ground truth shows.
pub(crate) fn plan(action: Action, ticket: &Ticket, subject: Option<&str>) -> Result<Plan, String> {
    let subject = || {
        subject
            .map(str::to_owned)
            .ok_or_else(|| format!("{action} needs a ticket to act on"))
    };
    let provider = |request, counted| Some(AtProvider { request, counted });
    let title = &ticket.title;
    let plan = match action {
        Action::CreateTicket => Plan {
            intent: Intent {
                write: Write::create(ticket),
                changed: Write::create(&Ticket {
                    title: format!("{title} (changed)"),
                    ..ticket.clone()
                }),
                another: Write::create(ticket),
                ground: Ground::Project(ticket.project_id.clone()),
            },
            prepare: Vec::new(),
            at_provider: provider(FaultOn::Create, Counted::Tickets),
        },
        Action::UpdateTicket => {
            let ticket_id = subject()?;
            let edit = |title: String, expected_version: Option<i64>| {
                let mut arguments = json!({"ticket_id": ticket_id, "title": title});
                if let Some(version) = expected_version {
                    arguments["expected_version"] = json!(version);
                }
                let rest = Rest::with_body(
                    Method::PATCH,
                    format!("/v1/tickets/{ticket_id}"),
                    "application/merge-patch+json",
                    json!({"title": title}),
                    200,
                );
                Write::new(action, rest.if_match(expected_version), arguments, "ticket")
            };
            // What a careful client sends; its retries must still replay,
            // though the ticket has moved past that version.
            let careful = Some(Version::FIRST.get());
            Plan {
                intent: Intent {
                    write: edit(format!("{title} (edited)"), careful),
                    changed: edit(format!("{title} (edited otherwise)"), careful),
                    another: edit(format!("{title} (edited again)"), None),
                    ground: Ground::Versions {
                        ticket: ticket_id.clone(),
                        from: Version::FIRST.get(),
                    },
                },
                prepare: Vec::new(),
                at_provider: provider(FaultOn::Update, Counted::Changes(ChangeKind::Update)),
            }
        }
        Action::TransitionTicket => {
            let ticket_id = subject()?;
            let to = |status: TicketStatus, reason: Option<&str>| {
                let with_reason = |mut body: Value| {
                    if let Some(reason) = reason {
                        body["reason"] = json!(reason);
                    }
                    body
                };
                let body = with_reason(json!({"to": status.as_str()}));
                let arguments = with_reason(json!({"ticket_id": ticket_id, "to": status.as_str()}));
                let path = format!("/v1/tickets/{ticket_id}/transitions");
                Write::new(
                    action,
                    Rest::json(Method::POST, path, body, 200),
                    arguments,
                    "ticket",
                )
            };
            Plan {
                intent: Intent {
                    write: to(TicketStatus::InProgress, Some(title)),
                    changed: to(TicketStatus::Resolved, Some(title)),
                    another: to(TicketStatus::Resolved, None),
                    ground: Ground::Versions {
                        ticket: ticket_id.clone(),
                        from: Version::FIRST.get(),
                    },
                },
                prepare: Vec::new(),
                at_provider: provider(
                    FaultOn::Transition,
                    Counted::Changes(ChangeKind::Transition),
                ),
            }
        }
        Action::AddComment => {
            let ticket_id = subject()?;
            let comment = |body: String| {
                let arguments = json!({"ticket_id": ticket_id, "body": body});
                let path = format!("/v1/tickets/{ticket_id}/comments");
                let rest = Rest::json(Method::POST, path, json!({"body": body}), 201);
                Write::new(action, rest, arguments, "comment")
            };
            Plan {
                intent: Intent {
                    write: comment(title.clone()),
                    changed: comment(format!("{title} (changed)")),
                    another: comment(title.clone()),
                    ground: Ground::Comments(ticket_id.clone()),
                },
                prepare: Vec::new(),
                at_provider: provider(FaultOn::Comment, Counted::Comments),
            }
        }
        Action::AddLabel => {
            let ticket_id = subject()?;
            let label = |label: &str| add_label(&ticket_id, label);
            Plan {
                intent: Intent {
                    write: label("double-fire"),
                    changed: label("double-fire-changed"),
                    another: label("double-fire-again"),
                    ground: Ground::Versions {
                        ticket: ticket_id.clone(),
                        from: Version::FIRST.get(),
                    },
                },
                prepare: Vec::new(),
                // The provider keeps no labels.
                at_provider: None,
            }
        }
        Action::RemoveLabel => {
            let ticket_id = subject()?;
            let unlabel = |label: &str| {
                let arguments = json!({"ticket_id": ticket_id, "label": label});
                // No body: the label is in the path.
                let rest = Rest {
                    method: Method::DELETE,
                    path: format!("/v1/tickets/{ticket_id}/labels/{label}"),
                    body: None,
                    if_match: None,
                    performed: 200,
                };
                Write::new(action, rest, arguments, "ticket")
            };
            // Both labels are on the ticket first (two versions), so that
            // either request, had the key not stopped it, would change the
            // ticket once more.
            let labels = ["double-fire", "double-fire-changed"];
            Plan {
                intent: Intent {
                    write: unlabel(labels[0]),
                    changed: unlabel(labels[1]),
                    another: unlabel("double-fire-again"),
                    ground: Ground::Versions {
                        ticket: ticket_id.clone(),
                        from: Version::FIRST.get() + 2,
                    },
                },
                prepare: labels.map(|label| add_label(&ticket_id, label)).into(),
                // The provider keeps no labels.
                at_provider: None,
            }
        }
    };
    Ok(plan)
}

/// `add_label`: `POST /v1/tickets/{id}/labels` (also what `remove_label`
/// prepares).
fn add_label(ticket_id: &str, label: &str) -> Write {
    let arguments = json!({"ticket_id": ticket_id, "label": label});
    let path = format!("/v1/tickets/{ticket_id}/labels");
    let rest = Rest::json(Method::POST, path, json!({"label": label}), 200);
    Write::new(Action::AddLabel, rest, arguments, "ticket")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_action_reaches_the_provider_exactly_when_its_plan_says_the_provider_sees_it() {
        let ticket = Ticket {
            project_id: "df-test".into(),
            title: "double-fire: test".into(),
        };
        for action in Action::ALL {
            let plan = plan(
                action,
                &ticket,
                Some("0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79"),
            )
            .expect("a plan");
            assert_eq!(
                plan.at_provider.is_some(),
                kitchen::reaches_provider(action),
                "{action}"
            );
            for write in [
                &plan.intent.write,
                &plan.intent.changed,
                &plan.intent.another,
            ] {
                assert_eq!(write.action(), action);
            }
            assert_ne!(plan.intent.write, plan.intent.changed, "{action}");
        }
    }

    #[test]
    fn an_action_on_a_ticket_without_one_is_no_plan() {
        let ticket = Ticket {
            project_id: "df-test".into(),
            title: "double-fire: test".into(),
        };
        for action in Action::ALL {
            assert_eq!(
                plan(action, &ticket, None).is_err(),
                acts_on_a_ticket(action),
                "{action}"
            );
        }
    }
}
