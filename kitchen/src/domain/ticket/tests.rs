use super::*;

fn draft(project: &str, title: &str) -> TicketDraft {
    TicketDraft {
        project_id: Some(project.into()),
        title: Some(title.into()),
        ..TicketDraft::default()
    }
}

#[test]
fn fills_in_defaults() {
    let cmd = draft("ops", "Disk full").validate().expect("valid");
    assert_eq!(cmd.priority, Priority::Normal);
    assert_eq!(cmd.description, None);
}

#[test]
fn reports_every_violation_by_field() {
    let bad = TicketDraft {
        project_id: Some("Not A Slug".into()),
        title: Some("   ".into()),
        description: Some("x".repeat(MAX_DESCRIPTION_CHARS + 1)),
        priority: Some("asap".into()),
    };
    let fields: Vec<_> = bad
        .validate()
        .expect_err("invalid")
        .into_iter()
        .map(|v| v.field)
        .collect();
    assert_eq!(fields, ["project_id", "title", "description", "priority"]);
}

#[test]
fn missing_required_fields_are_named() {
    let violations = TicketDraft::default().validate().expect_err("invalid");
    assert_eq!(violations.len(), 2);
    assert!(violations.iter().all(|v| v.code == "required"));
}

#[test]
fn title_length_counts_characters_not_bytes() {
    assert!(Title::parse("é".repeat(MAX_TITLE_CHARS)).is_ok());
    assert!(Title::parse("é".repeat(MAX_TITLE_CHARS + 1)).is_err());
    assert!(Title::parse("two\nlines").is_err());
}

#[test]
fn nul_is_refused_in_every_ticket_field_with_one_code() {
    let bad = TicketDraft {
        project_id: Some("ops\0".into()),
        title: Some("Disk\0full".into()),
        description: Some("\0".into()),
        priority: None,
    };
    let violations: Vec<_> = bad
        .validate()
        .expect_err("invalid")
        .into_iter()
        .map(|v| (v.field, v.code))
        .collect();
    assert_eq!(
        violations,
        [
            ("project_id".to_owned(), "nul_character"),
            ("title".to_owned(), "nul_character"),
            ("description".to_owned(), "nul_character"),
        ]
    );
}

#[test]
fn nul_in_a_title_wins_over_its_other_problems() {
    // Blank apart from the NUL, too long as well, other controls as well:
    // the NUL is what is reported, as in every other field.
    for raw in [
        " \0 ".to_owned(),
        format!("{}\0", "x".repeat(MAX_TITLE_CHARS)),
        "\t\0".to_owned(),
    ] {
        let violation = Title::parse(raw.clone()).expect_err("invalid");
        assert_eq!(violation.code, "nul_character", "{raw:?}");
    }
    for other in ["a\u{1}b", "a\u{7f}b", "a\u{85}b", "two\nlines"] {
        let violation = Title::parse(other).expect_err("invalid");
        assert_eq!(violation.code, "control_character", "{other:?}");
    }
}

#[test]
fn descriptions_keep_line_breaks_and_tabs_but_not_nul() {
    let text = "line one\r\n\tindented\nline three";
    let parsed = Description::parse(text).expect("valid").expect("not empty");
    assert_eq!(parsed.as_str(), text);
    let violation = Description::parse(format!("{text}\0")).expect_err("NUL is refused");
    assert_eq!(
        (violation.field.as_str(), violation.code),
        ("description", "nul_character")
    );
}

#[test]
fn a_stored_description_with_nul_stays_readable() {
    // Written by SQLite before the rule: readable from the row and from
    // the result snapshot, where serde_json escapes it as \u0000.
    let stored = Description::from_stored("legacy\0text".into())
        .expect("readable")
        .expect("not empty");
    let ticket = Ticket {
        description: Some(stored),
        ..draft("ops", "t")
            .validate()
            .expect("valid")
            .into_ticket(OffsetDateTime::now_utc())
    };
    let snapshot = serde_json::to_string(&ticket).expect("serialize");
    assert!(snapshot.contains("legacy\\u0000text"), "{snapshot}");
    let back: Ticket = serde_json::from_str(&snapshot).expect("deserialize");
    assert_eq!(back, ticket);
}

#[test]
fn created_at_is_cut_to_microseconds() {
    let now = OffsetDateTime::now_utc()
        .replace_nanosecond(123_456_789)
        .expect("valid nanos");
    let ticket = draft("ops", "t")
        .validate()
        .expect("valid")
        .into_ticket(now);
    assert_eq!(ticket.created_at.nanosecond(), 123_456_000);
}
