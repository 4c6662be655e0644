use serde_json::json;

use super::*;
use crate::actions::add_comment::AddCommentArgs;
use crate::actions::add_label::LabelArgs;
use crate::actions::transition_ticket::TransitionTicketArgs;
use crate::actions::update_ticket::UpdateTicketArgs;

fn read_as<T: ToolArgs>(args: Value) -> Read<T> {
    let args: Arguments<T> = serde_json::from_value(args).expect("any object is read");
    args.read().expect("the schema and the type agree")
}

fn problems<T: ToolArgs>(args: Value) -> Vec<(String, String)> {
    read_as::<T>(args)
        .problems
        .into_iter()
        .map(|p| (p.field, p.code.to_owned()))
        .collect()
}

fn one(field: &str, code: &str) -> Vec<(String, String)> {
    vec![(field.into(), code.into())]
}

#[test]
fn a_wrong_type_is_a_problem_named_by_argument() {
    for (args, field) in [
        (json!({"operation_id": 12_345_678}), "operation_id"),
        (json!({"title": 5}), "title"),
        (json!({"project_id": ["ops"]}), "project_id"),
        (json!({"priority": true}), "priority"),
        (json!({"description": {"text": "x"}}), "description"),
    ] {
        assert_eq!(
            problems::<CreateTicketArgs>(args.clone()),
            one(field, "wrong_type"),
            "{args}"
        );
    }
    assert_eq!(
        problems::<GetTicketArgs>(json!({"ticket_id": 1})),
        one("ticket_id", "wrong_type")
    );
    assert_eq!(
        problems::<OperationStatusArgs>(json!({"operation_id": 12_345_678})),
        one("operation_id", "wrong_type")
    );
    for limit in [json!(1.5), json!("5"), json!(false)] {
        assert_eq!(
            problems::<ListTicketsArgs>(json!({ "limit": limit })),
            one("limit", "wrong_type"),
            "{limit}"
        );
    }
}

#[test]
fn the_message_says_the_type_wanted_and_the_type_sent() {
    let read = read_as::<PreviewTicketArgs>(json!({"title": 5, "project_id": "ops"}));
    let message = &read.problems[0].message;
    assert!(
        message.starts_with("title must be a string; got a number"),
        "{message}"
    );
    assert_eq!(read.args.ticket.project_id.as_deref(), Some("ops"));
    assert_eq!(
        read.args.ticket.title, None,
        "the wrong-typed one is left out"
    );
    let read = read_limit(json!(1.5));
    assert!(
        read.problems[0]
            .message
            .starts_with("limit must be an integer; got a number with a fraction (1.5)"),
        "{}",
        read.problems[0].message
    );
}

fn read_limit(limit: Value) -> Read<ListTicketsArgs> {
    read_as::<ListTicketsArgs>(json!({ "limit": limit }))
}

#[test]
fn whole_numbers_of_any_spelling_reach_the_range_check() {
    for (limit, read) in [
        (json!(-1), Some(-1)),
        (json!(5.0), Some(5)),
        (json!(1e12), Some(1_000_000_000_000)),
        (json!(1e300), Some(i64::MAX)),
        (json!(u64::MAX), Some(i64::MAX)),
        (json!(null), None),
    ] {
        let got = read_limit(limit.clone());
        assert!(got.problems.is_empty(), "{limit}");
        assert_eq!(got.args.limit, read, "{limit}");
    }
}

#[test]
fn an_unknown_argument_is_a_problem_that_lists_the_real_ones() {
    let read = read_as::<CreateTicketArgs>(json!({"tenant_id": "globex", "title": "x"}));
    assert_eq!(read.problems.len(), 1);
    let problem = &read.problems[0];
    assert_eq!(
        (problem.field.as_str(), problem.code),
        ("tenant_id", "unknown_argument")
    );
    for name in [
        "operation_id",
        "project_id",
        "title",
        "description",
        "priority",
    ] {
        assert!(problem.message.contains(name), "{}", problem.message);
    }
    assert_eq!(read.args.ticket.title.as_deref(), Some("x"));
    for unknown in [json!({"extra": 1}), json!({"operation_id": "k", "x": null})] {
        assert!(
            !read_as::<OperationStatusArgs>(unknown).problems.is_empty(),
            "refused on every tool"
        );
    }
    assert!(
        !read_as::<ListTicketsArgs>(json!({"tenant": "a"}))
            .problems
            .is_empty()
    );
    assert!(
        !read_as::<GetTicketArgs>(json!({"id": "a"}))
            .problems
            .is_empty()
    );
}

#[test]
fn null_is_read_as_omitted() {
    let read = read_as::<CreateTicketArgs>(json!({
        "operation_id": null, "title": null, "priority": null, "description": null
    }));
    assert!(read.problems.is_empty());
    assert_eq!(read.args.operation_id, None);
    assert_eq!(read.args.ticket.priority, None);
}

#[test]
fn argument_problems_come_first_and_shadow_validation() {
    let Read { args, problems } =
        read_as::<PreviewTicketArgs>(json!({"title": 5, "project_id": "Ops!"}));
    let checked = TicketDraft::from(args.ticket)
        .validate()
        .expect_err("invalid");
    let fields: Vec<_> = merge(problems, checked)
        .into_iter()
        .map(|v| v.field)
        .collect();
    assert_eq!(
        fields,
        ["title", "project_id"],
        "no 'title is required' for a title that was sent as a number"
    );
}

/// Every tool's published input schema is its arguments' schema, and
/// every value of each declared type is one its Rust type can hold:
/// otherwise `read` would fail where it must answer `invalid`.
#[test]
fn every_type_holds_what_its_schema_admits() {
    fn holds<T: ToolArgs>() {
        let schema = schema_for_input::<Arguments<T>>().expect("an object schema");
        let properties = schema["properties"].as_object().expect("properties");
        for (name, property) in properties {
            let (declared, nullable) = declared_type(property);
            let mut samples = match declared {
                Some("string") => vec![json!(""), json!("ops")],
                Some("integer") => vec![json!(-1), json!(1e12), json!(u64::MAX)],
                Some("boolean") => vec![json!(true), json!(false)],
                other => panic!("{name}: type {other:?} is not checked by `admit`"),
            };
            if nullable {
                samples.push(Value::Null);
            }
            for sample in samples {
                let read = read_as::<T>(json!({ name.as_str(): sample }));
                assert!(read.problems.is_empty(), "{name}: {sample}");
            }
        }
    }
    holds::<CreateTicketArgs>();
    holds::<PreviewTicketArgs>();
    holds::<UpdateTicketArgs>();
    holds::<TransitionTicketArgs>();
    holds::<AddCommentArgs>();
    holds::<LabelArgs>();
    holds::<OperationStatusArgs>();
    holds::<GetTicketArgs>();
    holds::<ListTicketsArgs>();
    holds::<ListCommentsArgs>();
}

/// `update_ticket` tells a null description or assignee (remove it) from
/// one left out (keep it); a null title or priority, whose schema does
/// not admit null, is read as left out, as on every other tool.
#[test]
fn null_removes_only_where_the_schema_says_so() {
    let read = read_as::<UpdateTicketArgs>(json!({
        "description": null, "assignee": null, "title": null, "priority": null
    }));
    assert!(read.problems.is_empty());
    assert_eq!(read.args.description, Some(None));
    assert_eq!(read.args.assignee, Some(None));
    assert_eq!(read.args.title, None);
    assert_eq!(read.args.priority, None);

    let read = read_as::<UpdateTicketArgs>(json!({"assignee": "Ada"}));
    assert_eq!(read.args.assignee, Some(Some("Ada".into())));
    assert_eq!(read.args.description, None, "left out: kept");

    let read = read_as::<UpdateTicketArgs>(json!({"assignee": 5}));
    assert_eq!(read.problems[0].code, "wrong_type");
    assert!(
        read.problems[0]
            .message
            .starts_with("assignee must be a string; got a number"),
        "{}",
        read.problems[0].message
    );

    let schema = schema_for_input::<Arguments<UpdateTicketArgs>>().expect("schema");
    assert_eq!(
        schema["properties"]["description"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(schema["properties"]["title"]["type"], "string");
}

#[test]
fn the_tidied_schema_is_strict_and_portable() {
    let schema = schema_for_input::<Arguments<ListTicketsArgs>>().expect("schema");
    let schema = Value::Object((*schema).clone());
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(
        schema["properties"]["limit"],
        json!({
            "description": "Page size.",
            "type": "integer",
            "minimum": 1,
            "maximum": PageSize::MAX,
            "default": PageSize::DEFAULT.get()
        })
    );
    assert_eq!(
        schema["properties"]["project_id"]["pattern"],
        PROJECT_ID_PATTERN
    );
    let schema = schema_for_input::<Arguments<CreateTicketArgs>>().expect("schema");
    assert_eq!(schema["properties"]["priority"]["type"], "string");
    assert_eq!(schema["additionalProperties"], false);
}
