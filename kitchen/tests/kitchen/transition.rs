//! `transition_ticket`: the status machine, and the key rules for moves.

use kitchen::actions::{CreateTicket, TransitionTicket};
use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{Action, MAX_REASON_CHARS, Refusal, Ticket, TicketStatus, TransitionDraft};

use crate::support::{
    Desk, conflict, created, draft, fresh_key, invalid, move_to, refused, replayed, unknown_ticket,
};

use TicketStatus::{Closed, InProgress, Open, Resolved};

/// The moves the contract allows, written out here rather than taken from
/// the kitchen, so the test is an independent statement of the machine.
const ALLOWED: [(TicketStatus, TicketStatus); 5] = [
    (Open, InProgress),
    (InProgress, Resolved),
    (Resolved, Closed),
    (Resolved, InProgress),
    (Closed, Open),
];

/// Where each status may go, by the same table.
fn allowed_from(from: TicketStatus) -> Vec<TicketStatus> {
    ALLOWED
        .iter()
        .filter(|(f, _)| *f == from)
        .map(|(_, t)| *t)
        .collect()
}

/// The legal path from a new ticket to `status`.
fn path_to(status: TicketStatus) -> &'static [TicketStatus] {
    match status {
        Open => &[],
        InProgress => &[InProgress],
        Resolved => &[InProgress, Resolved],
        Closed => &[InProgress, Resolved, Closed],
    }
}

/// A new ticket moved to `status` along the legal path.
async fn ticket_at(desk: &Desk, status: TicketStatus) -> Ticket {
    let mut ticket = created(
        desk.kitchen
            .write::<CreateTicket>(desk.actor, &fresh_key(), &draft("ops", status.as_str()))
            .await
            .expect("create"),
    )
    .result;
    for step in path_to(status) {
        ticket = created(
            desk.kitchen
                .write::<TransitionTicket>(
                    desk.actor,
                    &fresh_key(),
                    &(ticket.id.into(), move_to(step.as_str())),
                )
                .await
                .expect("move"),
        )
        .result;
    }
    assert_eq!(ticket.status, status);
    ticket
}

async fn every_allowed_move_works_and_every_other_is_refused(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    for from in TicketStatus::ALL {
        for to in TicketStatus::ALL {
            let ticket = ticket_at(&desk, from).await;
            let key = fresh_key();
            let outcome = desk
                .kitchen
                .write::<TransitionTicket>(
                    desk.actor,
                    &key,
                    &(ticket.id.into(), move_to(to.as_str())),
                )
                .await
                .expect("move");
            if ALLOWED.contains(&(from, to)) {
                let moved = created(outcome).result;
                assert_eq!(moved.status, to, "{from:?} -> {to:?}");
                assert_eq!(moved.version.get(), ticket.version.get() + 1);
                assert_eq!(desk.current(ticket.id).await, moved);
            } else {
                match refused(outcome) {
                    Refusal::TransitionNotAllowed {
                        from: f,
                        to: t,
                        allowed,
                    } => {
                        assert_eq!((f, t), (from, to));
                        assert_eq!(allowed, allowed_from(from), "{from:?} -> {to:?}");
                    }
                    other => panic!("{from:?} -> {to:?}: expected not allowed, got {other:?}"),
                }
                assert_eq!(desk.current(ticket.id).await, ticket, "nothing written");
                assert!(desk.unused(Action::TransitionTicket, &key).await);
            }
        }
    }
}

async fn a_refused_move_leaves_the_key_for_a_legal_one(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let key = fresh_key();
    refused(
        desk.kitchen
            .write::<TransitionTicket>(desk.actor, &key, &(id.into(), move_to("resolved")))
            .await
            .expect("move"),
    );
    assert!(desk.unused(Action::TransitionTicket, &key).await);
    assert_eq!(desk.history(id).await.len(), 1, "no entry for a refusal");
    let moved = created(
        desk.kitchen
            .write::<TransitionTicket>(desk.actor, &key, &(id.into(), move_to("in_progress")))
            .await
            .expect("move"),
    );
    assert_eq!(moved.result.status, InProgress);
}

async fn a_replay_returns_the_first_answer_even_after_the_ticket_moved_on(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let key = fresh_key();
    let request = TransitionDraft {
        to: Some("in_progress".into()),
        reason: Some("on it".into()),
    };
    let first = created(
        desk.kitchen
            .write::<TransitionTicket>(desk.actor, &key, &(id.into(), request.clone()))
            .await
            .expect("move"),
    );
    for to in ["resolved", "closed"] {
        created(
            desk.kitchen
                .write::<TransitionTicket>(desk.actor, &fresh_key(), &(id.into(), move_to(to)))
                .await
                .expect("move"),
        );
    }
    // From closed, in_progress is no longer a legal move; the retry of the
    // move that happened is still answered with what it did.
    let again = replayed(
        desk.kitchen
            .write::<TransitionTicket>(desk.actor, &key, &(id.into(), request.clone()))
            .await
            .expect("retry"),
    );
    assert_eq!(again.snapshot.as_str(), first.snapshot.as_str());
    assert_eq!(again.result.status, InProgress);
    assert_eq!(again.result.version.get(), 2);
    assert_eq!(desk.current(id).await.status, Closed);
    assert_eq!(desk.history(id).await.len(), 4);
}

async fn an_empty_reason_means_none(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let key = fresh_key();
    let first = created(
        desk.kitchen
            .write::<TransitionTicket>(
                desk.actor,
                &key,
                &(desk.ticket.id.into(), move_to("in_progress")),
            )
            .await
            .expect("move"),
    );
    let empty_reason = TransitionDraft {
        reason: Some(String::new()),
        ..move_to("in_progress")
    };
    let again = replayed(
        desk.kitchen
            .write::<TransitionTicket>(
                desk.actor,
                &key,
                &(desk.ticket.id.into(), empty_reason.clone()),
            )
            .await
            .expect("retry"),
    );
    assert_eq!(again.snapshot, first.snapshot);
}

async fn the_same_key_with_another_command_conflicts(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let other = ticket_at(&desk, Open).await;
    let key = fresh_key();
    let first = created(
        desk.kitchen
            .write::<TransitionTicket>(desk.actor, &key, &(id.into(), move_to("in_progress")))
            .await
            .expect("move"),
    );
    let with_reason = TransitionDraft {
        reason: Some("on it".into()),
        ..move_to("in_progress")
    };
    for (what, ticket, request) in [
        ("a reason", id, with_reason),
        ("another status", id, move_to("resolved")),
        ("another ticket", other.id, move_to("in_progress")),
    ] {
        let original = conflict(
            desk.kitchen
                .write::<TransitionTicket>(desk.actor, &key, &(ticket.into(), request.clone()))
                .await
                .expect("retry"),
        );
        assert_eq!(original, first.operation.reference(), "{what}");
    }
    assert_eq!(desk.current(id).await, first.result);
    assert_eq!(
        desk.current(other.id).await,
        other,
        "the other ticket is untouched"
    );
}

async fn an_invalid_move_writes_nothing_and_leaves_the_key_unused(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let key = fresh_key();
    for (request, expected) in [
        (TransitionDraft::default(), vec![("to", "required")]),
        (move_to("done"), vec![("to", "unknown_value")]),
        (
            TransitionDraft {
                to: Some("Resolved".into()),
                reason: Some("x".repeat(MAX_REASON_CHARS + 1)),
            },
            vec![("to", "unknown_value"), ("reason", "too_long")],
        ),
        (
            TransitionDraft {
                reason: Some("why\0".into()),
                ..move_to("in_progress")
            },
            vec![("reason", "nul_character")],
        ),
    ] {
        let violations = invalid(
            desk.kitchen
                .write::<TransitionTicket>(desk.actor, &key, &(id.into(), request.clone()))
                .await
                .expect("move"),
        );
        let codes: Vec<_> = violations
            .iter()
            .map(|v| (v.field.as_str(), v.code))
            .collect();
        assert_eq!(codes, expected, "{request:?}");
        assert!(desk.unused(Action::TransitionTicket, &key).await);
    }
    assert_eq!(desk.current(id).await, desk.ticket, "nothing written");
    let longest = TransitionDraft {
        reason: Some("x".repeat(MAX_REASON_CHARS)),
        ..move_to("in_progress")
    };
    created(
        desk.kitchen
            .write::<TransitionTicket>(desk.actor, &key, &(id.into(), longest.clone()))
            .await
            .expect("move"),
    );
}

async fn an_unknown_or_foreign_ticket_is_not_found(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let (globex, _) = tenant_with_token(&desk.kitchen, "globex").await;
    for (who, ticket) in [
        (desk.tenant.id, unknown_ticket()),
        (globex.id, desk.ticket.id),
    ] {
        let key = fresh_key();
        assert_eq!(
            refused(
                desk.kitchen
                    .write::<TransitionTicket>(who, &key, &(ticket.into(), move_to("in_progress")))
                    .await
                    .expect("move"),
            ),
            Refusal::TicketNotFound { ticket_id: ticket }
        );
        // A move that would not be allowed answers the same: where the
        // ticket is is not revealed.
        assert_eq!(
            refused(
                desk.kitchen
                    .write::<TransitionTicket>(who, &key, &(ticket.into(), move_to("closed")))
                    .await
                    .expect("move"),
            ),
            Refusal::TicketNotFound { ticket_id: ticket }
        );
        assert_eq!(
            desk.kitchen
                .operation(who, Action::TransitionTicket, &key)
                .await
                .expect("lookup"),
            None
        );
    }
    assert_eq!(desk.current(desk.ticket.id).await, desk.ticket);
}

kitchen::on_both_databases!(
    every_allowed_move_works_and_every_other_is_refused,
    a_refused_move_leaves_the_key_for_a_legal_one,
    a_replay_returns_the_first_answer_even_after_the_ticket_moved_on,
    an_empty_reason_means_none,
    the_same_key_with_another_command_conflicts,
    an_invalid_move_writes_nothing_and_leaves_the_key_unused,
    an_unknown_or_foreign_ticket_is_not_found,
);
