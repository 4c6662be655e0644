//! `add_comment` and the comment reads.

use kitchen::actions::{AddComment, CreateTicket, UpdateTicket};
use kitchen::testing::{TestDatabase, tenant_with_token};
use kitchen::{Action, CommentDraft, MAX_COMMENT_CHARS, PageSize, Refusal};

use crate::support::{
    Desk, conflict, created, draft, fresh_key, invalid, refused, replayed, say, unknown_ticket,
    update,
};

async fn a_replay_returns_the_first_comment_even_after_more_were_added(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let key = fresh_key();
    let first = created(
        desk.kitchen
            .write::<AddComment>(desk.actor, &key, &(id.into(), say("Looking into it")))
            .await
            .expect("comment"),
    );
    assert_eq!(first.result.ticket_id, id);
    assert_eq!(first.result.body.as_str(), "Looking into it");
    assert_eq!(first.operation.ticket_id, Some(id));
    created(
        desk.kitchen
            .write::<AddComment>(desk.actor, &fresh_key(), &(id.into(), say("Found it")))
            .await
            .expect("comment"),
    );
    created(
        desk.kitchen
            .write::<UpdateTicket>(
                desk.actor,
                &fresh_key(),
                &update(id, r#"{"priority": "high"}"#),
            )
            .await
            .expect("update"),
    );
    let again = replayed(
        desk.kitchen
            .write::<AddComment>(desk.actor, &key, &(id.into(), say("Looking into it")))
            .await
            .expect("retry"),
    );
    assert_eq!(again.snapshot.as_str(), first.snapshot.as_str());
    assert_eq!(again.result, first.result);
    let comments = desk.comments(id).await;
    assert_eq!(comments.len(), 2, "the replay added none");
    assert_eq!(comments[0], first.result, "stored as answered");
    assert_eq!(
        desk.kitchen
            .comment(desk.tenant.id, id, first.result.id)
            .await
            .expect("read"),
        Some(first.result)
    );
}

async fn a_comment_is_not_an_edit(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    created(
        desk.kitchen
            .write::<AddComment>(
                desk.actor,
                &fresh_key(),
                &(desk.ticket.id.into(), say("Noted")),
            )
            .await
            .expect("comment"),
    );
    assert_eq!(
        desk.current(desk.ticket.id).await,
        desk.ticket,
        "same version, no updated_at"
    );
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
            .write::<AddComment>(desk.actor, &key, &(id.into(), say("First")))
            .await
            .expect("comment"),
    );
    for (what, ticket, body) in [
        ("another body", id, "Second"),
        ("another ticket", other.id, "First"),
    ] {
        let original = conflict(
            desk.kitchen
                .write::<AddComment>(desk.actor, &key, &(ticket.into(), say(body)))
                .await
                .expect("retry"),
        );
        assert_eq!(original, first.operation.reference(), "{what}");
        assert_eq!(original.action, Action::AddComment);
        assert_eq!(original.resource, Some(id));
    }
    assert_eq!(desk.comments(id).await, [first.result]);
    assert!(desk.comments(other.id).await.is_empty());
}

async fn an_invalid_comment_writes_nothing_and_leaves_the_key_unused(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let key = fresh_key();
    for (request, code) in [
        (CommentDraft::default(), "required"),
        (say(" \n\t"), "blank"),
        (say(&"x".repeat(MAX_COMMENT_CHARS + 1)), "too_long"),
        (say("before\0after"), "nul_character"),
    ] {
        let violations = invalid(
            desk.kitchen
                .write::<AddComment>(desk.actor, &key, &(id.into(), request.clone()))
                .await
                .expect("comment"),
        );
        let codes: Vec<_> = violations
            .iter()
            .map(|v| (v.field.as_str(), v.code))
            .collect();
        assert_eq!(codes, [("body", code)]);
        assert!(desk.unused(Action::AddComment, &key).await);
    }
    assert!(desk.comments(id).await.is_empty());
    assert_eq!(desk.history(id).await.len(), 1);
    let longest = "é".repeat(MAX_COMMENT_CHARS);
    let made = created(
        desk.kitchen
            .write::<AddComment>(desk.actor, &key, &(id.into(), say(&longest)))
            .await
            .expect("comment"),
    );
    assert_eq!(made.result.body.as_str(), longest, "kept byte for byte");
}

async fn an_unknown_or_foreign_ticket_is_not_found(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let (globex, _) = tenant_with_token(&desk.kitchen, "globex").await;
    let mine = created(
        desk.kitchen
            .write::<AddComment>(
                desk.actor,
                &fresh_key(),
                &(desk.ticket.id.into(), say("Internal note")),
            )
            .await
            .expect("comment"),
    )
    .result;
    for (who, ticket) in [
        (desk.tenant.id, unknown_ticket()),
        (globex.id, desk.ticket.id),
    ] {
        let key = fresh_key();
        assert_eq!(
            refused(
                desk.kitchen
                    .write::<AddComment>(who, &key, &(ticket.into(), say("Hello")))
                    .await
                    .expect("comment"),
            ),
            Refusal::TicketNotFound { ticket_id: ticket }
        );
        assert_eq!(
            desk.kitchen
                .operation(who, Action::AddComment, &key)
                .await
                .expect("lookup"),
            None
        );
        assert_eq!(
            desk.kitchen
                .list_comments(who, ticket, PageSize::DEFAULT, None)
                .await
                .expect("list"),
            None,
            "no such ticket, no comments"
        );
    }
    assert_eq!(
        desk.kitchen
            .comment(globex.id, desk.ticket.id, mine.id)
            .await
            .expect("read"),
        None,
        "another tenant's comment is not found"
    );
    assert_eq!(desk.comments(desk.ticket.id).await, [mine]);
}

async fn comments_page_oldest_first(db: TestDatabase) {
    let desk = Desk::new(&db).await;
    let id = desk.ticket.id;
    let other = created(
        desk.kitchen
            .write::<CreateTicket>(desk.actor, &fresh_key(), &draft("ops", "Other"))
            .await
            .expect("create"),
    )
    .result;
    let mut made = Vec::new();
    for i in 0..5 {
        made.push(
            created(
                desk.kitchen
                    .write::<AddComment>(
                        desk.actor,
                        &fresh_key(),
                        &(id.into(), say(&format!("Comment {i}"))),
                    )
                    .await
                    .expect("comment"),
            )
            .result,
        );
        // Another ticket's comments in between must not show up.
        created(
            desk.kitchen
                .write::<AddComment>(
                    desk.actor,
                    &fresh_key(),
                    &(other.id.into(), say("Elsewhere")),
                )
                .await
                .expect("comment"),
        );
    }
    let two = PageSize::parse(2).expect("valid size");
    let mut pages = Vec::new();
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = desk
            .kitchen
            .list_comments(desk.tenant.id, id, two, cursor)
            .await
            .expect("list")
            .expect("the ticket exists");
        pages.push(page.comments.len());
        seen.extend(page.comments);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, [2, 2, 1]);
    assert_eq!(seen, made, "oldest first, every comment once");
}

kitchen::on_both_databases!(
    a_replay_returns_the_first_comment_even_after_more_were_added,
    a_comment_is_not_an_edit,
    the_same_key_with_another_command_conflicts,
    an_invalid_comment_writes_nothing_and_leaves_the_key_unused,
    an_unknown_or_foreign_ticket_is_not_found,
    comments_page_oldest_first,
);
