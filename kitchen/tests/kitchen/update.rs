//! `update_ticket`: one attempt after another. Every refusal and every
//! invalid patch is followed by a look at what was written (nothing) and at
//! the key (still unused).

use kitchen::actions::{CreateTicket, UpdateTicket};
use std::time::Duration;

use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{Action, KitchenConfig, Refusal, Version};

use crate::support::{
    Desk, assert_held, conflict, created, draft, fresh_key, invalid, refused, replayed,
    unknown_ticket, update, update_at,
};

async fn a_replay_returns_the_first_answer_even_after_the_ticket_changed(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let key = fresh_key();
    let request = update(id, r#"{"title": "Disk full on db-1"}"#);

    let first = created(
        desk.kitchen
            .write::<UpdateTicket>(desk.actor, &key, &request)
            .await
            .expect("update"),
    );
    assert_eq!(first.result.version.get(), 2);
    assert_eq!(first.result.title.as_str(), "Disk full on db-1");
    assert_eq!(first.operation.ticket_id, Some(id));

    // Someone else changes the ticket after the first answer was lost.
    created(
        desk.kitchen
            .write::<UpdateTicket>(
                desk.actor,
                &fresh_key(),
                &update(id, r#"{"priority": "urgent"}"#),
            )
            .await
            .expect("another update"),
    );

    let again = replayed(
        desk.kitchen
            .write::<UpdateTicket>(desk.actor, &key, &request)
            .await
            .expect("retry"),
    );
    assert_eq!(
        again.snapshot.as_str(),
        first.snapshot.as_str(),
        "byte-identical snapshot"
    );
    assert_eq!(
        again.result, first.result,
        "the ticket as the first attempt left it"
    );
    assert_eq!(again.operation, first.operation);
    let now = desk.current(id).await;
    assert_eq!(now.version.get(), 3, "the replay changed nothing");
    assert_eq!(desk.history(id).await.len(), 3, "create and two updates");
}

async fn the_same_key_with_another_command_conflicts(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let other = created(
        desk.kitchen
            .write::<CreateTicket>(desk.actor, &fresh_key(), &draft("ops", "Other"))
            .await
            .expect("create"),
    )
    .result;
    let key = fresh_key();
    let first = created(
        desk.kitchen
            .write::<UpdateTicket>(desk.actor, &key, &update(id, r#"{"title": "A"}"#))
            .await
            .expect("update"),
    );
    for (what, request) in [
        ("another title", update(id, r#"{"title": "B"}"#)),
        (
            "one more field",
            update(id, r#"{"title": "A", "assignee": "Ada"}"#),
        ),
        ("an expected version", update_at(id, 1, r#"{"title": "A"}"#)),
        ("another ticket", update(other.id, r#"{"title": "A"}"#)),
    ] {
        let original = conflict(
            desk.kitchen
                .write::<UpdateTicket>(desk.actor, &key, &request)
                .await
                .expect("retry"),
        );
        assert_eq!(original, first.operation.reference(), "{what}");
        assert_eq!(original.action, Action::UpdateTicket);
        assert_eq!(original.resource, Some(id), "{what}");
    }
    assert_eq!(desk.current(id).await, first.result, "no conflict wrote");
    assert_eq!(desk.current(other.id).await, other);
    assert_eq!(desk.history(id).await.len(), 2);
}

async fn an_invalid_patch_writes_nothing_and_leaves_the_key_unused(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let key = fresh_key();
    let violations = invalid(
        desk.kitchen
            .write::<UpdateTicket>(
                desk.actor,
                &key,
                &update(id, r#"{"title": null, "priority": null, "assignee": " "}"#),
            )
            .await
            .expect("update"),
    );
    let codes: Vec<_> = violations
        .iter()
        .map(|v| (v.field.as_str(), v.code))
        .collect();
    assert_eq!(
        codes,
        [
            ("title", "not_removable"),
            ("priority", "not_removable"),
            ("assignee", "blank")
        ]
    );
    assert_eq!(desk.current(id).await, desk.ticket, "nothing written");
    assert_eq!(desk.history(id).await.len(), 1);
    assert!(desk.unused(Action::UpdateTicket, &key).await);

    let corrected = created(
        desk.kitchen
            .write::<UpdateTicket>(desk.actor, &key, &update(id, r#"{"assignee": "Ada"}"#))
            .await
            .expect("update"),
    );
    assert_eq!(corrected.result.version.get(), 2);
}

async fn null_removes_description_and_assignee(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let set = created(
        desk.kitchen
            .write::<UpdateTicket>(
                desk.actor,
                &fresh_key(),
                &update(id, r#"{"description": "Since 02:00", "assignee": "Ada"}"#),
            )
            .await
            .expect("update"),
    );
    assert_eq!(
        set.result.description.as_ref().map(|d| d.as_str()),
        Some("Since 02:00")
    );
    assert_eq!(
        set.result.assignee.as_ref().map(|a| a.as_str()),
        Some("Ada")
    );
    assert!(set.snapshot.as_str().contains(r#""assignee":"Ada""#));

    let removed = created(
        desk.kitchen
            .write::<UpdateTicket>(
                desk.actor,
                &fresh_key(),
                &update(id, r#"{"description": null, "assignee": null}"#),
            )
            .await
            .expect("update"),
    );
    assert_eq!(removed.result.description, None);
    assert_eq!(removed.result.assignee, None);
    assert_eq!(removed.result.version.get(), 3);
    assert_eq!(removed.result.title, desk.ticket.title, "left out: kept");
    assert_eq!(
        removed.result.priority, desk.ticket.priority,
        "left out: kept"
    );
    // An unassigned ticket's JSON has no assignee at all.
    assert!(
        !removed.snapshot.as_str().contains("assignee"),
        "{}",
        removed.snapshot.as_str()
    );
    assert_eq!(desk.current(id).await, removed.result);
    let last = desk.history(id).await.pop().expect("an entry");
    let fields: Vec<_> = last.changes.fields().keys().map(String::as_str).collect();
    assert_eq!(fields, ["assignee", "description"]);
    assert_eq!(
        last.changes.fields()["assignee"].to,
        serde_json::Value::Null
    );
}

async fn a_patch_that_changes_nothing_takes_the_key_but_no_version(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    for patch in [r#"{}"#, r#"{"title": "Disk full", "priority": "normal"}"#] {
        let key = fresh_key();
        let request = update(id, patch);
        let first = created(
            desk.kitchen
                .write::<UpdateTicket>(desk.actor, &key, &request)
                .await
                .expect("update"),
        );
        assert_eq!(first.result, desk.ticket, "{patch}: the ticket as it is");
        assert_eq!(first.result.version, Version::FIRST);
        assert_eq!(first.result.updated_at, None);
        assert!(
            !desk.unused(Action::UpdateTicket, &key).await,
            "{patch}: the key is used"
        );
        let again = replayed(
            desk.kitchen
                .write::<UpdateTicket>(desk.actor, &key, &request)
                .await
                .expect("retry"),
        );
        assert_eq!(again.snapshot, first.snapshot);
        conflict(
            desk.kitchen
                .write::<UpdateTicket>(desk.actor, &key, &update(id, r#"{"title": "Other"}"#))
                .await
                .expect("another command"),
        );
    }
    assert_eq!(desk.current(id).await, desk.ticket, "still version 1");
    assert_eq!(desk.history(id).await.len(), 1, "no entry for no change");
}

async fn a_stale_expected_version_is_refused_and_leaves_the_key_unused(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let winner = created(
        desk.kitchen
            .write::<UpdateTicket>(
                desk.actor,
                &fresh_key(),
                &update_at(id, 1, r#"{"title": "A"}"#),
            )
            .await
            .expect("update"),
    );
    let key = fresh_key();
    let refusal = refused(
        desk.kitchen
            .write::<UpdateTicket>(desk.actor, &key, &update_at(id, 1, r#"{"title": "B"}"#))
            .await
            .expect("update"),
    );
    assert_eq!(
        refusal,
        Refusal::VersionMismatch {
            expected: Version::FIRST,
            current: winner.result.version,
        }
    );
    assert_eq!(desk.current(id).await, winner.result, "nothing written");
    assert_eq!(desk.history(id).await.len(), 2);
    assert!(desk.unused(Action::UpdateTicket, &key).await);

    // Read again, decide again, with the same key.
    let retried = created(
        desk.kitchen
            .write::<UpdateTicket>(desk.actor, &key, &update_at(id, 2, r#"{"title": "B"}"#))
            .await
            .expect("update"),
    );
    assert_eq!(retried.result.version.get(), 3);
    assert_eq!(retried.result.title.as_str(), "B");
}

async fn an_unknown_or_foreign_ticket_is_not_found(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let (globex, _) = tenant_with_token(&desk.kitchen, "globex").await;
    let nowhere = unknown_ticket();
    let key = fresh_key();
    assert_eq!(
        refused(
            desk.kitchen
                .write::<UpdateTicket>(desk.actor, &key, &update(nowhere, r#"{"title": "A"}"#))
                .await
                .expect("update"),
        ),
        Refusal::TicketNotFound { ticket_id: nowhere }
    );
    assert!(desk.unused(Action::UpdateTicket, &key).await);

    // Another tenant's ticket answers exactly as a missing one, even when a
    // version check would have failed: its version is not revealed either.
    let theirs = desk.ticket.id;
    for request in [
        update(theirs, r#"{"title": "Mine now"}"#),
        update_at(theirs, 7, r#"{"title": "Mine now"}"#),
    ] {
        let key = fresh_key();
        assert_eq!(
            refused(
                desk.kitchen
                    .write::<UpdateTicket>(globex.id, &key, &request)
                    .await
                    .expect("update"),
            ),
            Refusal::TicketNotFound { ticket_id: theirs }
        );
        assert_eq!(
            desk.kitchen
                .operation(globex.id, Action::UpdateTicket, &key)
                .await
                .expect("lookup"),
            None
        );
    }
    assert_eq!(desk.current(theirs).await, desk.ticket, "untouched");
    assert_eq!(desk.history(theirs).await.len(), 1);
}

async fn a_holder_past_the_wait_bound_yields_in_progress(db: TestDatabase) {
    let kitchen = db
        .kitchen_with(KitchenConfig {
            wait_bound: Duration::from_millis(200),
            ..KitchenConfig::default()
        })
        .await;
    let desk = Desk::on(kitchen, "acme").await;
    let id = desk.ticket.id;
    let key = fresh_key();
    let request = update(id, r#"{"title": "A"}"#);

    let holder = desk
        .kitchen
        .hold_action_key_for_test(desk.tenant.id, Action::UpdateTicket, &key)
        .await;
    assert_held(
        db.backend(),
        desk.kitchen
            .write::<UpdateTicket>(desk.actor, &key, &request)
            .await,
    );
    holder.roll_back().await;

    assert!(desk.unused(Action::UpdateTicket, &key).await);
    assert_eq!(desk.current(id).await, desk.ticket, "nothing written");
    created(
        desk.kitchen
            .write::<UpdateTicket>(desk.actor, &key, &request)
            .await
            .expect("update"),
    );
    assert_eq!(desk.current(id).await.version.get(), 2);
}

kitchen::on_both_databases!(
    a_replay_returns_the_first_answer_even_after_the_ticket_changed,
    the_same_key_with_another_command_conflicts,
    an_invalid_patch_writes_nothing_and_leaves_the_key_unused,
    null_removes_description_and_assignee,
    a_patch_that_changes_nothing_takes_the_key_but_no_version,
    a_stale_expected_version_is_refused_and_leaves_the_key_unused,
    an_unknown_or_foreign_ticket_is_not_found,
    a_holder_past_the_wait_bound_yields_in_progress,
);
