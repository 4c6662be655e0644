//! What Redmine's answers prove, on answers as API_NOTES.md records them.

use kitchen::{Dispatched, Lookup};
use serde_json::json;

use super::api::answer;
use super::issues_found;
use super::wire::IssueList;

fn issue(id: u64, reference: Option<&str>) -> serde_json::Value {
    json!({
        "id": id, "project": {"id": 1, "name": "Tickets"}, "subject": "Disk full",
        "description": null, "status": {"id": 1, "name": "New"},
        "priority": {"id": 2, "name": "Normal"},
        "custom_fields": [{"id": 1, "name": "External reference", "value": reference}],
    })
}

fn list(issues: Vec<serde_json::Value>, total: u64) -> IssueList {
    serde_json::from_value(
        json!({"issues": issues, "total_count": total, "offset": 0, "limit": 100}),
    )
    .expect("a search answer")
}

#[test]
fn a_search_proves_absence_only_when_every_issue_it_returned_carries_the_reference() {
    assert_eq!(issues_found(list(vec![], 0), 1, "r"), Lookup::Absent);
    // Redmine ignored the filter: the whole project came back.
    for unfiltered in [
        list(vec![issue(3, Some("other"))], 1),
        list(vec![issue(3, Some("r")), issue(4, None)], 2),
    ] {
        assert!(matches!(
            issues_found(unfiltered, 1, "r"),
            Lookup::Failed(_)
        ));
    }
    // More than a page of copies: not hidden, not guessed.
    assert!(matches!(
        issues_found(list(vec![issue(3, Some("r"))], 101), 1, "r"),
        Lookup::Failed(_)
    ));
}

#[test]
fn two_issues_with_one_reference_are_a_duplicate_reported_with_the_oldest_kept() {
    match issues_found(
        list(vec![issue(9, Some("r")), issue(4, Some("r"))], 2),
        1,
        "r",
    ) {
        Lookup::Found {
            receipt,
            duplicates,
        } => {
            assert_eq!(receipt.effect.id(), "4");
            assert_eq!(duplicates, ["9"]);
        }
        other => panic!("expected a duplicate, got {other:?}"),
    }
}

#[test]
fn only_a_refusal_on_the_merits_proves_nothing_was_made() {
    let validation = answer(
        422,
        true,
        r#"{"errors":["Subject cannot be blank","Priority cannot be blank"]}"#,
    );
    assert_eq!(
        validation.refusal(),
        Dispatched::Rejected("422: Subject cannot be blank; Priority cannot be blank".into())
    );
    assert!(matches!(
        answer(404, true, "").refusal(),
        Dispatched::Rejected(_)
    ));
    assert!(matches!(
        answer(401, true, "").refusal(),
        Dispatched::Rejected(m) if m.contains("REDMINE_API_KEY")
    ));
    // Redmine's own 500, a proxy's HTML page, a 200 where 201 or 204 was
    // due: any of them may have come after the write.
    for maybe in [
        answer(
            500,
            true,
            r#"{"status":500,"error":"Internal Server Error"}"#,
        ),
        answer(502, false, "<html><body>Bad gateway</body></html>"),
        answer(200, true, "{}"),
        answer(409, false, ""),
    ] {
        assert!(
            matches!(maybe.refusal(), Dispatched::Ambiguous(_)),
            "{maybe:?}"
        );
    }
    assert!(matches!(
        answer(429, false, "").refusal(),
        Dispatched::NotSent(_)
    ));
    // An HTML page is named by its status, not pasted into the caller's error.
    assert_eq!(
        answer(503, false, "<!DOCTYPE html><p>down</p>").describe(),
        "503 Service Unavailable"
    );
}
