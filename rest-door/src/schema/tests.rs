use super::*;

/// A ticket with every optional field set, and one with none, each
/// shown through [`TicketBody`] exactly as the kitchen freezes it.
#[test]
fn ticket_body_serializes_as_the_kitchen_snapshot() {
    for json in [
        r#"{"id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","project_id":"ops","title":"Disk","description":null,"priority":"normal","status":"open","created_at":"2026-11-30T12:00:00.123456Z","version":1}"#,
        r#"{"id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","project_id":"ops","title":"Disk","description":"d","priority":"high","status":"in_progress","created_at":"2026-11-30T12:00:00Z","provider_ticket_id":"SIM-1","assignee":"Ada","version":3,"updated_at":"2026-11-30T12:00:01.5Z"}"#,
    ] {
        let ticket: Ticket = serde_json::from_str(json).expect("a ticket");
        let kitchen = serde_json::to_string(&ticket).expect("JSON");
        let door = serde_json::to_string(&TicketBody::from(ticket)).expect("JSON");
        assert_eq!(door, kitchen);
    }
}

#[test]
fn comment_body_serializes_as_the_kitchen_snapshot() {
    for json in [
        r#"{"id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","ticket_id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a7a","body":"line\nbreak","created_at":"2026-11-30T12:00:00.000001Z"}"#,
        r#"{"id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","ticket_id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a7a","body":"hi","created_at":"2026-11-30T12:00:00Z","provider_comment_id":"CMT-1"}"#,
    ] {
        let comment: Comment = serde_json::from_str(json).expect("a comment");
        let kitchen = serde_json::to_string(&comment).expect("JSON");
        let door = serde_json::to_string(&CommentBody::from(comment)).expect("JSON");
        assert_eq!(door, kitchen);
    }
}
