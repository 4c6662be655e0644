//! `add_label`, `remove_label` and the label filter on `list_tickets`.

use kitchen::actions::{AddLabel, CreateTicket, RemoveLabel};
use std::sync::Arc;

use kitchen::fake_provider::FakeProvider;
use kitchen::testing::TestDatabase;
use kitchen::{
    Action, KitchenConfig, MAX_LABELS_PER_TICKET, PageSize, Refusal, TicketBackend, TicketFilter,
};
use serde_json::json;

use crate::support::{
    Desk, conflict, created, draft, fresh_key, invalid, label, refused, replayed, unknown_ticket,
};

async fn a_label_is_added_once_and_its_retry_replays(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let key = fresh_key();
    let first = created(
        desk.kitchen
            .write::<AddLabel>(desk.actor, &key, &(id.into(), label("needs-triage")))
            .await
            .expect("label"),
    );
    let labels = |t: &kitchen::Ticket| -> Vec<String> {
        t.labels
            .as_slice()
            .iter()
            .map(|l| l.as_str().to_owned())
            .collect()
    };
    assert_eq!(labels(&first.result), ["needs-triage"]);
    assert_eq!(first.result.version.get(), 2);
    assert_eq!(first.operation.ticket_id, Some(id));
    // Labels stay alphabetical whatever the order they came in.
    created(
        desk.kitchen
            .write::<AddLabel>(desk.actor, &fresh_key(), &(id.into(), label("billing")))
            .await
            .expect("label"),
    );
    let again = replayed(
        desk.kitchen
            .write::<AddLabel>(desk.actor, &key, &(id.into(), label("needs-triage")))
            .await
            .expect("retry"),
    );
    assert_eq!(again.snapshot.as_str(), first.snapshot.as_str());
    let now = desk.current(id).await;
    assert_eq!(labels(&now), ["billing", "needs-triage"]);
    assert_eq!(
        now.version.get(),
        3,
        "two labels, the replay changed nothing"
    );
    let history = desk.history(id).await;
    let labelled: Vec<_> = history
        .iter()
        .filter(|e| e.action == Action::AddLabel)
        .collect();
    assert_eq!(labelled.len(), 2, "{history:?}");
    let change = &labelled[1].changes.fields()["labels"];
    assert_eq!(change.from, json!(["needs-triage"]));
    assert_eq!(change.to, json!(["billing", "needs-triage"]));
}

/// Adding a label the ticket has, or removing one it lacks, changes
/// nothing and is still a write: the key is used and replays, and the same
/// key with another label conflicts.
async fn a_change_that_changes_nothing_still_records_the_operation(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let absent = fresh_key();
    let nothing = created(
        desk.kitchen
            .write::<RemoveLabel>(desk.actor, &absent, &(id.into(), label("ghost")))
            .await
            .expect("unlabel"),
    );
    assert_eq!(nothing.result, desk.ticket, "same version, no updated_at");
    assert!(!desk.unused(Action::RemoveLabel, &absent).await);
    replayed(
        desk.kitchen
            .write::<RemoveLabel>(desk.actor, &absent, &(id.into(), label("ghost")))
            .await
            .expect("retry"),
    );
    conflict(
        desk.kitchen
            .write::<RemoveLabel>(desk.actor, &absent, &(id.into(), label("other")))
            .await
            .expect("another label"),
    );

    created(
        desk.kitchen
            .write::<AddLabel>(desk.actor, &fresh_key(), &(id.into(), label("disk")))
            .await
            .expect("label"),
    );
    let twice = fresh_key();
    let same = created(
        desk.kitchen
            .write::<AddLabel>(desk.actor, &twice, &(id.into(), label("disk")))
            .await
            .expect("label again"),
    );
    assert_eq!(same.result.version.get(), 2, "nothing changed");
    assert!(!desk.unused(Action::AddLabel, &twice).await);
    assert_eq!(
        desk.history(id)
            .await
            .iter()
            .filter(|e| e.action == Action::AddLabel)
            .count(),
        1,
        "a change that changes nothing is not history"
    );
}

async fn the_21st_label_is_refused_and_leaves_the_key_unused(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    for n in 0..MAX_LABELS_PER_TICKET {
        created(
            desk.kitchen
                .write::<AddLabel>(
                    desk.actor,
                    &fresh_key(),
                    &(id.into(), label(&format!("l{n:02}"))),
                )
                .await
                .expect("label"),
        );
    }
    let key = fresh_key();
    let refusal = refused(
        desk.kitchen
            .write::<AddLabel>(desk.actor, &key, &(id.into(), label("one-too-many")))
            .await
            .expect("label"),
    );
    assert_eq!(
        refusal,
        Refusal::LabelLimitReached {
            ticket_id: id,
            limit: MAX_LABELS_PER_TICKET
        }
    );
    assert!(desk.unused(Action::AddLabel, &key).await);
    // One it already has is no new label: still a write, not a refusal.
    created(
        desk.kitchen
            .write::<AddLabel>(desk.actor, &fresh_key(), &(id.into(), label("l00")))
            .await
            .expect("label"),
    );
    created(
        desk.kitchen
            .write::<RemoveLabel>(desk.actor, &fresh_key(), &(id.into(), label("l00")))
            .await
            .expect("unlabel"),
    );
    created(
        desk.kitchen
            .write::<AddLabel>(desk.actor, &key, &(id.into(), label("one-too-many")))
            .await
            .expect("the same key, once there is room"),
    );
}

async fn a_bad_label_or_ticket_writes_nothing(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    for (bad, code) in [
        ("", "blank"),
        ("Needs-Triage", "invalid_characters"),
        ("has space", "invalid_characters"),
        (&"x".repeat(51), "too_long"),
    ] {
        let key = fresh_key();
        let violations = invalid(
            desk.kitchen
                .write::<AddLabel>(desk.actor, &key, &(id.into(), label(bad)))
                .await
                .expect("label"),
        );
        assert_eq!(violations.len(), 1, "{bad:?}: {violations:?}");
        assert_eq!(violations[0].field, "label");
        assert_eq!(violations[0].code, code, "{bad:?}");
        assert!(desk.unused(Action::AddLabel, &key).await);
    }
    let missing = invalid(
        desk.kitchen
            .write::<AddLabel>(
                desk.actor,
                &fresh_key(),
                &(id.into(), kitchen::LabelDraft::default()),
            )
            .await
            .expect("label"),
    );
    assert_eq!(missing[0].field, "label");
    let (key, nowhere) = (fresh_key(), unknown_ticket());
    assert_eq!(
        refused(
            desk.kitchen
                .write::<RemoveLabel>(desk.actor, &key, &(nowhere.into(), label("disk")))
                .await
                .expect("unlabel"),
        ),
        Refusal::TicketNotFound { ticket_id: nowhere }
    );
    assert!(desk.unused(Action::RemoveLabel, &key).await);
    assert_eq!(desk.current(id).await, desk.ticket);
}

async fn list_tickets_filters_by_label(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let mut tagged = Vec::new();
    for title in ["One", "Two"] {
        let made = created(
            desk.kitchen
                .write::<CreateTicket>(desk.actor, &fresh_key(), &draft("ops", title))
                .await
                .expect("create"),
        )
        .result;
        created(
            desk.kitchen
                .write::<AddLabel>(desk.actor, &fresh_key(), &(made.id.into(), label("db")))
                .await
                .expect("label"),
        );
        tagged.push(made.id);
    }
    // A label that only contains the one asked for is another label.
    created(
        desk.kitchen
            .write::<AddLabel>(
                desk.actor,
                &fresh_key(),
                &(desk.ticket.id.into(), label("db-2")),
            )
            .await
            .expect("label"),
    );
    let mut violations = Vec::new();
    let filter = TicketFilter::parse(None, Some("db".into()), &mut violations);
    assert!(violations.is_empty());
    let page = desk
        .kitchen
        .list_tickets(desk.tenant.id, &filter, PageSize::DEFAULT, None)
        .await
        .expect("list");
    let mut found: Vec<_> = page.tickets.iter().map(|t| t.id).collect();
    found.sort();
    tagged.sort();
    assert_eq!(found, tagged);

    TicketFilter::parse(None, Some("DB".into()), &mut violations);
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(violations[0].field, "label");
}

/// No provider keeps labels: the remote backend refuses both before it
/// reads or writes anything, and the key stays unused.
async fn the_remote_backend_refuses_labels_and_leaves_the_key_unused(db: TestDatabase) {
    let provider = FakeProvider::ignoring_keys();
    let kitchen = db
        .kitchen_with(KitchenConfig {
            backend: TicketBackend::Remote {
                provider: Arc::new(provider.clone()),
                settings: kitchen::RemoteSettings::default(),
            },
            ..KitchenConfig::default()
        })
        .await;
    let desk = Desk::on(kitchen, "acme").await;
    let sent = provider.total();
    let (kitchen, actor, id) = (&desk.kitchen, desk.actor, desk.ticket.id);
    let (add, remove) = (fresh_key(), fresh_key());
    let answers = [
        (
            Action::AddLabel,
            &add,
            kitchen
                .write::<AddLabel>(actor, &add, &(id.into(), label("disk")))
                .await,
        ),
        (
            Action::RemoveLabel,
            &remove,
            kitchen
                .write::<RemoveLabel>(actor, &remove, &(id.into(), label("disk")))
                .await,
        ),
    ];
    for (action, key, outcome) in answers {
        assert!(!kitchen::reaches_provider(action));
        assert_eq!(
            refused(outcome.expect("label")),
            Refusal::NotSupportedByProvider { action }
        );
        assert!(desk.unused(action, key).await, "{action}");
    }
    assert_eq!(provider.total(), sent, "nothing was sent");
    assert_eq!(desk.current(desk.ticket.id).await, desk.ticket);
}

kitchen::on_both_databases!(
    a_label_is_added_once_and_its_retry_replays,
    a_change_that_changes_nothing_still_records_the_operation,
    the_21st_label_is_refused_and_leaves_the_key_unused,
    a_bad_label_or_ticket_writes_nothing,
    list_tickets_filters_by_label,
    the_remote_backend_refuses_labels_and_leaves_the_key_unused,
);
