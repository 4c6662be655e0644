//! The tool contract, linted and hashed.
//!
//! On the MCP door the descriptions are the mechanism: they are what makes
//! an agent invent an operation_id and reuse it on retry. So the wording is
//! checked like code: every identifier argument says where its value comes
//! from, every description stays within a token budget (counted with a real
//! tokenizer), and every tool's contract hash is pinned by a snapshot.

use mcp_door::TicketTools;
use mcp_door::contract::{CONTRACT_HASH_META, contract_hash};
use rmcp::model::Tool;

/// Most tokens (o200k) a tool description may take: the model reads every
/// description on every turn.
const DESCRIPTION_BUDGET: usize = 90;

/// Arguments that hold identifiers.
fn is_identifier(name: &str) -> bool {
    name.ends_with("_id") || name == "cursor"
}

/// What a description must say about an identifier's provenance.
const PROVENANCE: [&str; 2] = ["Invented by you", "Taken from"];

/// Every rule each tool breaks, in words.
fn lint(tools: &[Tool]) -> Vec<String> {
    let bpe = tiktoken_rs::o200k_base().expect("o200k tokenizer");
    let mut problems = Vec::new();
    for tool in tools {
        let description = tool.description.as_deref().unwrap_or_default();
        let tokens = bpe.encode_with_special_tokens(description).len();
        println!(
            "{:<22} {tokens:>3} / {DESCRIPTION_BUDGET} tokens",
            tool.name
        );
        if tokens > DESCRIPTION_BUDGET {
            problems.push(format!(
                "{}: description takes {tokens} tokens, over the budget of {DESCRIPTION_BUDGET}",
                tool.name
            ));
        }
        let properties = tool
            .input_schema
            .get("properties")
            .and_then(|p| p.as_object());
        for (arg, schema) in properties.into_iter().flatten() {
            if !is_identifier(arg) {
                continue;
            }
            let text = schema
                .get("description")
                .and_then(|d| d.as_str())
                .unwrap_or_default();
            if !PROVENANCE.iter().any(|p| text.contains(p)) {
                problems.push(format!(
                    "{}.{arg}: an identifier argument must say where its value comes from ({})",
                    tool.name,
                    PROVENANCE.join(" / ")
                ));
            }
        }
    }
    problems
}

#[test]
fn the_contract_passes_its_lint() {
    let problems = lint(&TicketTools::definitions());
    assert!(
        problems.is_empty(),
        "contract lint:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_lint_catches_a_dropped_provenance_sentence() {
    let mut tools = TicketTools::definitions();
    let create = tools
        .iter_mut()
        .find(|t| t.name == "create_ticket")
        .expect("create_ticket");
    let mut schema = (*create.input_schema).clone();
    schema["properties"]["operation_id"]["description"] = "The operation id.".into();
    create.input_schema = std::sync::Arc::new(schema);
    let problems = lint(&tools);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("create_ticket.operation_id"));
}

#[test]
fn the_lint_catches_a_description_over_budget() {
    let mut tools = TicketTools::definitions();
    tools[0].description = Some("word ".repeat(DESCRIPTION_BUDGET + 1).into());
    assert!(lint(&tools).iter().any(|p| p.contains("over the budget")));
}

#[test]
fn every_tool_publishes_its_contract_hash() {
    let hashes: std::collections::BTreeMap<_, _> = TicketTools::definitions()
        .into_iter()
        .map(|tool| {
            let published = tool
                .meta
                .as_ref()
                .and_then(|m| m.get(CONTRACT_HASH_META))
                .and_then(|h| h.as_str())
                .map(str::to_owned);
            let mut bare = tool.clone();
            bare.meta = None;
            assert_eq!(
                published.as_deref(),
                Some(contract_hash(&bare).as_str()),
                "{} publishes its own hash",
                tool.name
            );
            (tool.name.to_string(), published)
        })
        .collect();
    // A change to any tool's wording, schema or annotations changes its
    // hash here: review the change as a change of the contract.
    insta::assert_json_snapshot!("contract_hashes", hashes);
}

#[test]
fn a_changed_description_changes_the_hash() {
    let tool = TicketTools::definitions()
        .into_iter()
        .find(|t| t.name == "create_ticket")
        .expect("create_ticket");
    let mut reworded = tool.clone();
    reworded.description = Some(
        format!(
            "{} Thanks!",
            tool.description.as_deref().unwrap_or_default()
        )
        .into(),
    );
    assert_ne!(contract_hash(&tool), contract_hash(&reworded));
    let mut annotated = tool.clone();
    if let Some(a) = annotated.annotations.as_mut() {
        a.idempotent_hint = Some(false);
    }
    assert_ne!(contract_hash(&tool), contract_hash(&annotated));
}

/// Every place in `schema` (a JSON Schema) where `bad` holds, as a JSON
/// pointer.
fn find(
    schema: &serde_json::Value,
    at: &str,
    bad: &dyn Fn(&serde_json::Map<String, serde_json::Value>) -> bool,
) -> Vec<String> {
    let mut found = Vec::new();
    match schema {
        serde_json::Value::Object(map) => {
            if bad(map) {
                found.push(at.to_owned());
            }
            for (key, value) in map {
                found.extend(find(value, &format!("{at}/{key}"), bad));
            }
        }
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                found.extend(find(item, &format!("{at}/{i}"), bad));
            }
        }
        _ => {}
    }
    found
}

/// The schemas say what the server does, in a form strict clients take:
/// unknown arguments are refused (so the schema closes every object), an
/// optional argument is left out rather than null (the server reads an
/// explicit null as omitted, but no schema invites it, so no type admits a
/// value an enum refuses), and integers carry no schemars `format` (not a
/// JSON Schema format: Ajv warns on every call).
#[test]
fn the_schemas_are_strict_and_portable() {
    let mut problems = Vec::new();
    for tool in TicketTools::definitions() {
        let input = serde_json::Value::Object((*tool.input_schema).clone());
        if input["additionalProperties"] != false {
            problems.push(format!("{}: input allows unknown arguments", tool.name));
        }
        for at in find(&input, "", &|m| {
            m.get("type")
                .and_then(|t| t.as_array())
                .is_some_and(|types| types.iter().any(|t| t == "null"))
        }) {
            problems.push(format!("{}: input{at} admits null", tool.name));
        }
        let output = tool
            .output_schema
            .as_ref()
            .map(|s| serde_json::Value::Object((**s).clone()))
            .unwrap_or_default();
        for (side, schema) in [("input", &input), ("output", &output)] {
            for at in find(schema, "", &|m| m.contains_key("format")) {
                problems.push(format!("{}: {side}{at} has a format", tool.name));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Where the create tools take a project slug, every tool that takes one
/// says its pattern.
#[test]
fn every_project_id_argument_has_the_same_pattern() {
    let patterns: std::collections::BTreeMap<_, _> = TicketTools::definitions()
        .into_iter()
        .filter_map(|tool| {
            let pattern = tool.input_schema.get("properties")?.get("project_id")?["pattern"]
                .as_str()
                .map(str::to_owned);
            Some((tool.name.to_string(), pattern))
        })
        .collect();
    assert_eq!(patterns.len(), 3, "{patterns:?}");
    let first = patterns.values().next().cloned().flatten();
    assert!(first.is_some(), "{patterns:?}");
    assert!(patterns.values().all(|p| *p == first), "{patterns:?}");
}
