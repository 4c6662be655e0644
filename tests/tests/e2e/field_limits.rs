//! Field limits come from one source: the kitchen's constants. Both doors'
//! schemas (the OpenAPI document and the MCP tool list) must state exactly
//! those limits for every field they describe, so a client validating
//! against either schema accepts what the kitchen accepts.

use std::collections::BTreeMap;

use e2e_tests::TestApp;
use kitchen::testing::TestDatabase;
use serde_json::Value;

use crate::mcp_support::{Protocol, connect};

/// (keyword, value) pairs each field's schema must carry, by field name.
fn expected() -> BTreeMap<&'static str, Vec<(&'static str, u64)>> {
    let n = |v: usize| v as u64;
    BTreeMap::from([
        (
            "title",
            vec![("minLength", 1), ("maxLength", n(kitchen::MAX_TITLE_CHARS))],
        ),
        (
            "description",
            vec![("maxLength", n(kitchen::MAX_DESCRIPTION_CHARS))],
        ),
        (
            "assignee",
            vec![
                ("minLength", 1),
                ("maxLength", n(kitchen::MAX_ASSIGNEE_CHARS)),
            ],
        ),
        (
            "body",
            vec![
                ("minLength", 1),
                ("maxLength", n(kitchen::MAX_COMMENT_CHARS)),
            ],
        ),
        ("reason", vec![("maxLength", n(kitchen::MAX_REASON_CHARS))]),
        (
            "operation_id",
            vec![
                ("minLength", n(kitchen::MIN_KEY_LEN)),
                ("maxLength", n(kitchen::MAX_KEY_LEN)),
            ],
        ),
        (
            "Idempotency-Key",
            vec![
                ("minLength", n(kitchen::MIN_KEY_LEN)),
                ("maxLength", n(kitchen::MAX_KEY_LEN)),
            ],
        ),
        (
            "limit",
            vec![
                ("minimum", 1),
                ("maximum", u64::from(kitchen::PageSize::MAX)),
            ],
        ),
    ])
}

/// Every (field name, schema) in `doc`: object properties and, in OpenAPI,
/// parameters (whose schema is under `schema`). `$ref`s are followed
/// through `components/schemas`.
fn field_schemas(doc: &Value, root: &Value, out: &mut Vec<(String, Value)>) {
    match doc {
        Value::Object(map) if map.contains_key("$ref") => {
            field_schemas(&resolve(doc, root), root, out);
        }
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                for (name, schema) in props {
                    out.push((name.clone(), resolve(schema, root)));
                }
            }
            if let (Some(Value::String(name)), Some(schema)) = (map.get("name"), map.get("schema"))
                && map.contains_key("in")
            {
                out.push((name.clone(), resolve(schema, root)));
            }
            for value in map.values() {
                field_schemas(value, root, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| field_schemas(v, root, out)),
        _ => {}
    }
}

/// A schema with one `$ref` (possibly inside `allOf`/`oneOf`/`anyOf`)
/// replaced by what it points to; the limits of a nullable field sit on its
/// non-null branch.
fn resolve(schema: &Value, root: &Value) -> Value {
    if let Some(Value::String(r)) = schema.get("$ref") {
        let path = r.trim_start_matches('#');
        return resolve(root.pointer(path).unwrap_or(&Value::Null), root);
    }
    for combinator in ["allOf", "oneOf", "anyOf"] {
        if let Some(Value::Array(branches)) = schema.get(combinator) {
            let mut merged = schema.clone();
            for branch in branches {
                if let Value::Object(b) = resolve(branch, root) {
                    for (k, v) in b {
                        merged[k] = v;
                    }
                }
            }
            return merged;
        }
    }
    schema.clone()
}

/// The inputs a door describes: in the OpenAPI document every operation's
/// parameters and request body; in the MCP tool list every `inputSchema`.
/// Answers (a ticket in a response) are what the server wrote, not input,
/// and carry no limits.
fn inputs(doc: &Value) -> Vec<Value> {
    let mut inputs = Vec::new();
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        for item in paths.values().filter_map(Value::as_object) {
            for op in item.values() {
                inputs.push(op.get("parameters").cloned().unwrap_or(Value::Null));
                inputs.push(op.get("requestBody").cloned().unwrap_or(Value::Null));
            }
        }
    }
    if let Some(tools) = doc.as_array() {
        for tool in tools {
            let mut schema = tool["inputSchema"].clone();
            // A status lookup takes any string on purpose: a value that
            // cannot be a key is answered (`invalid`, code `malformed`:
            // nothing can have been recorded under it), not refused by a
            // client before the question is asked.
            if tool["name"] == "get_operation_status"
                && let Some(props) = schema["properties"].as_object_mut()
            {
                props.remove("operation_id");
            }
            inputs.push(schema);
        }
    }
    inputs
}

/// What is wrong with `doc`'s limits, door by door; also that every field
/// in `must_have` is described at least once (so the check is never empty).
fn mismatches(door: &str, doc: &Value, must_have: &[&str]) -> Vec<String> {
    let mut fields = Vec::new();
    for input in inputs(doc) {
        field_schemas(&input, doc, &mut fields);
    }
    let expected = expected();
    let mut problems = Vec::new();
    for name in must_have {
        if !fields.iter().any(|(f, _)| f == name) {
            problems.push(format!("{door}: no schema describes {name}"));
        }
    }
    for (name, schema) in &fields {
        let Some(rules) = expected.get(name.as_str()) else {
            continue;
        };
        // Only string or integer fields carry these limits; a `body`
        // property that is an object (a request body) is another thing.
        if schema.get("properties").is_some() {
            continue;
        }
        for (keyword, value) in rules {
            if schema.get(*keyword).and_then(Value::as_u64) != Some(*value) {
                problems.push(format!(
                    "{door}: {name}.{keyword} is {}, the kitchen says {value}",
                    schema.get(*keyword).unwrap_or(&Value::Null)
                ));
            }
        }
    }
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_doors_state_the_kitchens_limits() {
    let db = TestDatabase::sqlite();
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;

    let openapi: Value = app.public_json("/openapi.json").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let tools = serde_json::to_value(&tools).expect("json");

    let mut problems = mismatches(
        "REST",
        &openapi,
        &[
            "title",
            "description",
            "assignee",
            "body",
            "reason",
            "Idempotency-Key",
            "limit",
        ],
    );
    problems.extend(mismatches(
        "MCP",
        &tools,
        &[
            "title",
            "description",
            "assignee",
            "body",
            "reason",
            "operation_id",
            "limit",
        ],
    ));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
