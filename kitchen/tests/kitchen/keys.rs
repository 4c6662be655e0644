//! Key namespaces: the scope of a key is (tenant, action, key), and every
//! action's operations can be looked up.

use kitchen::actions::{
    AddComment, AddLabel, CreateTicket, RemoveLabel, TransitionTicket, UpdateTicket,
};
use std::time::Duration;

use kitchen::fake_provider::FakeProvider;
use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{
    Action, KitchenConfig, OperationKey, OperationState, Outcome, ResultSnapshot, TicketId,
};

use crate::support::{
    Desk, created, draft, fresh_key, label, move_to, refused, remote_backend, replayed, say,
    unknown_ticket, update,
};

/// What one write answered, its result type forgotten.
#[derive(Debug)]
struct Answer {
    action: Action,
    /// The outcome's name.
    outcome: &'static str,
    /// The ticket the operation made or acted on, for a success.
    ticket: Option<TicketId>,
    /// The frozen result, for a success.
    snapshot: Option<ResultSnapshot>,
}

impl Answer {
    fn of<T>(action: Action, outcome: Outcome<T>) -> Self {
        let name = outcome.name();
        let (ticket, snapshot) = match outcome {
            Outcome::Created(r) | Outcome::Replayed(r) => (r.operation.ticket_id, Some(r.snapshot)),
            Outcome::Expired(e) => (e.operation.resource, None),
            Outcome::Conflict { .. }
            | Outcome::Invalid { .. }
            | Outcome::Refused(_)
            | Outcome::InProgress { .. }
            | Outcome::NotCreated { .. }
            | Outcome::Unknown { .. } => (None, None),
        };
        Self {
            action,
            outcome: name,
            ticket,
            snapshot,
        }
    }
}

/// One write of each action, all with `key`, on `ticket` where they need
/// one, in the order of `Action::ALL`.
async fn each_action_with(desk: &Desk, key: &OperationKey, ticket: TicketId) -> Vec<Answer> {
    let k = &desk.kitchen;
    let a = desk.actor;
    vec![
        Answer::of(
            Action::CreateTicket,
            k.write::<CreateTicket>(a, key, &draft("ops", "Made with the key"))
                .await
                .expect("create"),
        ),
        Answer::of(
            Action::UpdateTicket,
            k.write::<UpdateTicket>(
                a,
                key,
                &update(ticket, r#"{"title": "Edited with the key"}"#),
            )
            .await
            .expect("update"),
        ),
        Answer::of(
            Action::TransitionTicket,
            k.write::<TransitionTicket>(a, key, &(ticket.into(), move_to("in_progress")))
                .await
                .expect("move"),
        ),
        Answer::of(
            Action::AddComment,
            k.write::<AddComment>(a, key, &(ticket.into(), say("Written with the key")))
                .await
                .expect("comment"),
        ),
        Answer::of(
            Action::AddLabel,
            k.write::<AddLabel>(a, key, &(ticket.into(), label("keyed")))
                .await
                .expect("label"),
        ),
        Answer::of(
            Action::RemoveLabel,
            k.write::<RemoveLabel>(a, key, &(ticket.into(), label("keyed")))
                .await
                .expect("unlabel"),
        ),
    ]
}

async fn one_key_names_one_operation_per_action(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let key = fresh_key();

    let first = each_action_with(&desk, &key, id).await;
    let names: Vec<_> = first.iter().map(|a| (a.action, a.outcome)).collect();
    assert_eq!(
        names,
        Action::ALL.map(|a| (a, "created")),
        "the same key is a new operation for every action"
    );
    let made = first[0].ticket.expect("the create made a ticket");
    assert_ne!(made, id);
    assert!(first[1..].iter().all(|a| a.ticket == Some(id)));

    let again = each_action_with(&desk, &key, id).await;
    for (again, first) in again.iter().zip(&first) {
        let action = first.action;
        assert_eq!(again.outcome, "replayed", "{action}");
        assert_eq!(again.ticket, first.ticket, "{action}");
        assert_eq!(again.snapshot, first.snapshot, "{action}: byte for byte");
    }
    for action in Action::ALL {
        let record = desk
            .kitchen
            .operation(desk.tenant.id, action, &key)
            .await
            .expect("lookup")
            .expect("one record per action");
        assert_eq!(record.action, action);
    }
    let current = desk.current(id).await;
    assert_eq!(
        current.version.get(),
        5,
        "one update, one move, one label on and off"
    );
    assert_eq!(desk.comments(id).await.len(), 1);
}

async fn operation_status_answers_for_every_action(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let key = fresh_key();
    for action in Action::ALL {
        assert!(
            desk.kitchen
                .operation_status(desk.tenant.id, action, &key)
                .await
                .expect("status")
                .is_none(),
            "{action}: nothing recorded yet, a retry is safe"
        );
    }
    let answered = each_action_with(&desk, &key, id).await;
    for Answer {
        action,
        ticket,
        snapshot,
        ..
    } in answered
    {
        let status = desk
            .kitchen
            .operation_status(desk.tenant.id, action, &key)
            .await
            .expect("status")
            .expect("recorded");
        assert_eq!(status.record.action, action);
        assert_eq!(status.record.key, key);
        assert_eq!(status.record.state, OperationState::Succeeded);
        assert_eq!(status.record.ticket_id, ticket, "{action}");
        assert_eq!(
            status.record.result, snapshot,
            "{action}: the frozen answer"
        );
        assert!(status.effect.is_none(), "made locally: no effect ledger");
    }
    // Another tenant sees none of them.
    let (globex, _) = tenant_with_token(&desk.kitchen, "globex").await;
    for action in Action::ALL {
        assert!(
            desk.kitchen
                .operation_status(globex.id, action, &key)
                .await
                .expect("status")
                .is_none()
        );
    }
}

async fn a_refused_attempt_leaves_no_status(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let key = fresh_key();
    refused(
        desk.kitchen
            .write::<TransitionTicket>(
                desk.actor,
                &key,
                &(desk.ticket.id.into(), move_to("closed")),
            )
            .await
            .expect("move"),
    );
    refused(
        desk.kitchen
            .write::<AddComment>(desk.actor, &key, &(unknown_ticket().into(), say("Hello")))
            .await
            .expect("comment"),
    );
    for action in Action::ALL {
        assert!(
            desk.kitchen
                .operation_status(desk.tenant.id, action, &key)
                .await
                .expect("status")
                .is_none(),
            "{action}"
        );
    }
    // The key is still good for every action.
    let after = each_action_with(&desk, &key, desk.ticket.id).await;
    assert!(after.iter().all(|a| a.outcome == "created"), "{after:?}");
    let again = replayed(
        desk.kitchen
            .write::<CreateTicket>(desk.actor, &key, &draft("ops", "Made with the key"))
            .await
            .expect("retry"),
    );
    assert_eq!(Some(again.snapshot), after[0].snapshot);
}

async fn one_key_names_one_effect_per_action_at_the_provider(db: TestDatabase) {
    let provider = FakeProvider::ignoring_keys();
    let kitchen = db
        .kitchen_with(KitchenConfig {
            backend: remote_backend(&provider, Duration::ZERO),
            ..KitchenConfig::default()
        })
        .await;
    let (tenant, _) = tenant_with_token(&kitchen, "acme").await;
    let ticket = created(
        kitchen
            .write::<CreateTicket>(tenant.id, &fresh_key(), &draft("ops", "Remote"))
            .await
            .expect("create"),
    )
    .result;
    // Every action reaches the provider under its own reference: one key,
    // four effects, each made once.
    let key = fresh_key();
    assert_eq!(
        created(
            kitchen
                .write::<UpdateTicket>(tenant.id, &key, &update(ticket.id, r#"{"title": "A"}"#))
                .await
                .expect("update")
        )
        .result
        .version
        .get(),
        2
    );
    created(
        kitchen
            .write::<TransitionTicket>(tenant.id, &key, &(ticket.id.into(), move_to("in_progress")))
            .await
            .expect("move"),
    );
    created(
        kitchen
            .write::<AddComment>(tenant.id, &key, &(ticket.id.into(), say("Hello")))
            .await
            .expect("comment"),
    );
    for action in Action::ALL {
        let reference = kitchen::ExternalRef::derive(tenant.id, action, &key);
        // A create's reference is the ticket's own; an action the
        // provider has nothing like never reaches it.
        let made = if action == Action::CreateTicket || !kitchen::reaches_provider(action) {
            0
        } else {
            1
        };
        assert_eq!(provider.count(reference.as_str()), made, "{action}");
    }
    assert_eq!(provider.total(), 4, "one ticket, two changes, one comment");
}

kitchen::on_both_databases!(
    one_key_names_one_operation_per_action,
    operation_status_answers_for_every_action,
    a_refused_attempt_leaves_no_status,
    one_key_names_one_effect_per_action_at_the_provider,
);
