//! A ticket's history: one entry per write that changed something, in the
//! write's own transaction; none for a replay, a refusal or a no-op.

use kitchen::actions::{AddComment, CreateTicket, TransitionTicket, UpdateTicket};
use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{Action, Actor, HistoryEntry, OperationKey, PageSize, TicketDraft, TransitionDraft};
use serde_json::{Value, json};

use crate::support::{
    Desk, created, draft, fresh_key, history, move_to, refused, replayed, say, unknown_ticket,
    update,
};

fn key(name: &str) -> OperationKey {
    OperationKey::parse(name).expect("a valid key")
}

/// An entry's changes as plain JSON, `{field: [from, to]}`.
fn changes(entry: &HistoryEntry) -> Value {
    entry
        .changes
        .fields()
        .iter()
        .map(|(field, change)| (field.clone(), json!([change.from, change.to])))
        .collect()
}

/// Ids and timestamps differ from run to run; the shape does not.
fn stable(text: &str, snapshot: &str) {
    insta::with_settings!({
        filters => vec![
            (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "[uuid]"),
            (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z", "[time]"),
        ],
    }, {
        insta::assert_snapshot!(snapshot, text);
    });
}

async fn each_write_adds_one_entry_saying_what_changed(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let create_request = TicketDraft {
        description: Some("Since 02:00".into()),
        priority: Some("high".into()),
        ..draft("ops", "Disk full")
    };
    let move_request = TransitionDraft {
        reason: Some("on it".into()),
        ..move_to("in_progress")
    };

    let made = created(
        desk.kitchen
            .write::<CreateTicket>(desk.actor, &key("history-create"), &create_request)
            .await
            .expect("create"),
    );
    let id = made.result.id;
    let update_request = update(
        id,
        r#"{"title": "Disk full on db-1", "assignee": "Ada", "description": null}"#,
    );
    let edited = created(
        desk.kitchen
            .write::<UpdateTicket>(desk.actor, &key("history-update"), &update_request)
            .await
            .expect("update"),
    );
    let moved = created(
        desk.kitchen
            .write::<TransitionTicket>(
                desk.actor,
                &key("history-move"),
                &(id.into(), move_request.clone()),
            )
            .await
            .expect("move"),
    );
    let commented = created(
        desk.kitchen
            .write::<AddComment>(
                desk.actor,
                &key("history-comment"),
                &(id.into(), say("Looking into it")),
            )
            .await
            .expect("comment"),
    );

    let entries = desk.history(id).await;
    let summary: Vec<_> = entries
        .iter()
        .map(|e| (e.action, e.operation_key.as_str(), e.version.get()))
        .collect();
    assert_eq!(
        summary,
        [
            (Action::CreateTicket, "history-create", 1),
            (Action::UpdateTicket, "history-update", 2),
            (Action::TransitionTicket, "history-move", 3),
            (Action::AddComment, "history-comment", 3),
        ]
    );
    let when = [
        made.operation.created_at,
        edited.operation.created_at,
        moved.operation.created_at,
        commented.operation.created_at,
    ];
    for (entry, when) in entries.iter().zip(when) {
        assert_eq!(entry.ticket_id, id);
        assert_eq!(entry.actor_token_id, desk.actor.token, "the caller's token");
        assert_eq!(entry.recorded_at, when, "the write's own time");
    }
    assert_eq!(
        entries.iter().map(changes).collect::<Vec<_>>(),
        [
            json!({
                "description": [null, "Since 02:00"],
                "priority": [null, "high"],
                "project_id": [null, "ops"],
                "status": [null, "open"],
                "title": [null, "Disk full"],
            }),
            json!({
                "assignee": [null, "Ada"],
                "description": ["Since 02:00", null],
                "title": ["Disk full", "Disk full on db-1"],
            }),
            json!({
                "reason": [null, "on it"],
                "status": ["open", "in_progress"],
            }),
            json!({ "comment_id": [null, commented.result.id.to_string()] }),
        ]
    );

    // Retries replay and add nothing.
    replayed(
        desk.kitchen
            .write::<CreateTicket>(desk.actor, &key("history-create"), &create_request)
            .await
            .expect("retry"),
    );
    replayed(
        desk.kitchen
            .write::<UpdateTicket>(desk.actor, &key("history-update"), &update_request)
            .await
            .expect("retry"),
    );
    replayed(
        desk.kitchen
            .write::<TransitionTicket>(
                desk.actor,
                &key("history-move"),
                &(id.into(), move_request.clone()),
            )
            .await
            .expect("retry"),
    );
    replayed(
        desk.kitchen
            .write::<AddComment>(
                desk.actor,
                &key("history-comment"),
                &(id.into(), say("Looking into it")),
            )
            .await
            .expect("retry"),
    );
    // Neither do a refusal and a write that changes nothing.
    refused(
        desk.kitchen
            .write::<TransitionTicket>(desk.actor, &fresh_key(), &(id.into(), move_to("closed")))
            .await
            .expect("move"),
    );
    created(
        desk.kitchen
            .write::<UpdateTicket>(
                desk.actor,
                &fresh_key(),
                &update(id, r#"{"assignee": "Ada"}"#),
            )
            .await
            .expect("no-op update"),
    );
    assert_eq!(desk.history(id).await, entries);

    // What the doors show: the entries, and every result's JSON.
    stable(
        &serde_json::to_string_pretty(&entries).expect("json"),
        "history_entries",
    );
    stable(made.snapshot.as_str(), "create_ticket_result");
    stable(edited.snapshot.as_str(), "update_ticket_result");
    stable(moved.snapshot.as_str(), "transition_ticket_result");
    stable(commented.snapshot.as_str(), "add_comment_result");
}

async fn a_writer_without_a_token_is_recorded_without_one(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    // A door that knows only the tenant (the stdio MCP server, say).
    let tenant_only = Actor::from(desk.tenant.id);
    created(
        desk.kitchen
            .write::<UpdateTicket>(tenant_only, &fresh_key(), &update(id, r#"{"title": "A"}"#))
            .await
            .expect("update"),
    );
    let entries = desk.history(id).await;
    assert_eq!(entries[0].actor_token_id, desk.actor.token);
    assert_eq!(entries[1].actor_token_id, None);
    let json = serde_json::to_value(&entries[1]).expect("json");
    assert!(json.get("actor_token_id").is_none(), "{json}");
}

async fn history_pages_oldest_first(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    for i in 2..=7 {
        created(
            desk.kitchen
                .write::<UpdateTicket>(
                    desk.actor,
                    &fresh_key(),
                    &update(id, &format!(r#"{{"title": "Version {i}"}}"#)),
                )
                .await
                .expect("update"),
        );
    }
    let three = PageSize::parse(3).expect("valid size");
    let mut pages = Vec::new();
    let mut versions = Vec::new();
    let mut cursor = None;
    loop {
        let page = desk
            .kitchen
            .ticket_history(desk.tenant.id, id, three, cursor)
            .await
            .expect("read")
            .expect("the ticket exists");
        pages.push(page.entries.len());
        versions.extend(page.entries.iter().map(|e| e.version.get()));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, [3, 3, 1]);
    assert_eq!(versions, (1..=7).collect::<Vec<_>>());
    assert_eq!(history(&desk.kitchen, desk.tenant.id, id).await.len(), 7);
}

async fn the_history_of_an_unknown_or_foreign_ticket_is_none(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let (globex, _) = tenant_with_token(&desk.kitchen, "globex").await;
    for (who, ticket) in [
        (desk.tenant.id, unknown_ticket()),
        (globex.id, desk.ticket.id),
    ] {
        assert_eq!(
            desk.kitchen
                .ticket_history(who, ticket, PageSize::DEFAULT, None)
                .await
                .expect("read"),
            None
        );
    }
}

kitchen::on_both_databases!(
    each_write_adds_one_entry_saying_what_changed,
    a_writer_without_a_token_is_recorded_without_one,
    history_pages_oldest_first,
    the_history_of_an_unknown_or_foreign_ticket_is_none,
);
