//! The tool contract, linted and hashed.
//!
//! On the MCP door the descriptions are the mechanism: they are what makes
//! an agent invent an operation_id and reuse it on retry. So the wording is
//! checked like code: every identifier argument says where its value comes
//! from, every description stays within a token budget, the whole listing a
//! model reads (each tool's name, description and input schema, as
//! `tools/list` sends them) stays within a total budget (both counted with a
//! real tokenizer, o200k), and every tool's contract hash is pinned by a
//! snapshot.

use mcp_door::TicketTools;
use mcp_door::contract::{CONTRACT_HASH_META, contract_hash};
use rmcp::model::Tool;

/// Most tokens (o200k) a tool description may take: the model reads every
/// description on every turn.
const DESCRIPTION_BUDGET: usize = 90;

/// Most tokens (o200k) the whole listing may take: every tool's name,
/// description and input schema together, which a model carries in its
/// context on every turn whether it calls a tool or not. 1,512 held nine
/// tools; `list_tickets`' label filter and `add_label` and `remove_label`
/// (about 160 each, the label pattern included) and the likely-duplicate
/// guard's `confirm_new` took it to 1,940 for eleven. Shorter identifier
/// and write descriptions (the key rule is said once, in `create_ticket`,
/// and in the instructions) brought it to 1,829: the nine tools of 1,512
/// take 1,502 with `confirm_new`. A new tool earns its tokens here, in
/// review.
const LISTING_BUDGET: usize = 1_850;

/// Arguments that hold identifiers.
fn is_identifier(name: &str) -> bool {
    name.ends_with("_id") || name == "cursor"
}

/// What a description must say about an identifier's provenance.
const PROVENANCE: [&str; 2] = ["Invented by you", "Taken from"];

/// What a model reads of `tool`: its name, description and input schema,
/// as `tools/list` sends them (compact JSON).
fn model_facing(tool: &Tool) -> String {
    let schema = serde_json::Value::Object((*tool.input_schema).clone());
    format!(
        "{}\n{}\n{schema}",
        tool.name,
        tool.description.as_deref().unwrap_or_default()
    )
}

/// Every rule each tool (and the listing as a whole) breaks, in words.
/// Prints each tool's counts and the total.
fn lint(tools: &[Tool]) -> Vec<String> {
    let bpe = tiktoken_rs::o200k_base().expect("o200k tokenizer");
    let tokens = |text: &str| bpe.encode_with_special_tokens(text).len();
    let mut problems = Vec::new();
    let mut total = 0;
    println!("{:<22} {:>11} {:>8}", "tool", "description", "listing");
    for tool in tools {
        let description = tool.description.as_deref().unwrap_or_default();
        let described = tokens(description);
        let listed = tokens(&model_facing(tool));
        total += listed;
        println!(
            "{:<22} {described:>5} / {DESCRIPTION_BUDGET} {listed:>8}",
            tool.name
        );
        if described > DESCRIPTION_BUDGET {
            problems.push(format!(
                "{}: description takes {described} tokens, over the budget of {DESCRIPTION_BUDGET}",
                tool.name
            ));
        }
        let properties = tool
            .input_schema
            .get("properties")
            .and_then(|p| p.as_object());
        for (arg, schema) in properties.into_iter().flatten() {
            let text = schema
                .get("description")
                .and_then(|d| d.as_str())
                .unwrap_or_default();
            if is_identifier(arg) && !PROVENANCE.iter().any(|p| text.contains(p)) {
                problems.push(format!(
                    "{}.{arg}: an identifier argument must say where its value comes from ({})",
                    tool.name,
                    PROVENANCE.join(" / ")
                ));
            }
            if admits_null(schema) && !text.contains("null") {
                problems.push(format!(
                    "{}.{arg}: an argument that takes null must say what null does",
                    tool.name
                ));
            }
        }
    }
    println!("{:<22} {:>11} {total:>8} / {LISTING_BUDGET}", "total", "");
    // What a host receives besides: output schemas and annotations, which
    // most hosts keep out of the model's context but some pass on.
    let whole = tokens(&serde_json::to_string(tools).expect("the listing serializes"));
    println!(
        "{:<22} {:>11} {whole:>8} (as tools/list sends it, output schemas included)",
        "whole listing", ""
    );
    if total > LISTING_BUDGET {
        problems.push(format!(
            "the listing takes {total} tokens, over the budget of {LISTING_BUDGET}"
        ));
    }
    problems
}

/// Whether an argument's schema admits null as a value.
fn admits_null(schema: &serde_json::Value) -> bool {
    schema
        .get("type")
        .and_then(|t| t.as_array())
        .is_some_and(|types| types.iter().any(|t| t == "null"))
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
    assert!(
        lint(&tools)
            .iter()
            .any(|p| p.contains("description takes") && p.contains("over the budget"))
    );
}

#[test]
fn the_lint_catches_a_listing_over_budget() {
    let mut tools = TicketTools::definitions();
    // Each description stays within its own budget; together they do not.
    for tool in &mut tools {
        let padded = format!(
            "{} {}",
            tool.description.as_deref().unwrap_or_default(),
            "word ".repeat(LISTING_BUDGET / 9)
        );
        tool.description = Some(padded.into());
    }
    assert!(
        lint(&tools)
            .iter()
            .any(|p| p.starts_with("the listing takes")),
    );
}

#[test]
fn the_lint_catches_a_null_that_says_nothing() {
    let mut tools = TicketTools::definitions();
    let update = tools
        .iter_mut()
        .find(|t| t.name == "update_ticket")
        .expect("update_ticket");
    let mut schema = (*update.input_schema).clone();
    schema["properties"]["assignee"]["description"] = "Who works on it.".into();
    update.input_schema = std::sync::Arc::new(schema);
    let problems = lint(&tools);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("update_ticket.assignee"));
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
/// value an enum refuses) except where null is a value (update_ticket's
/// description and assignee: null removes them), and integers carry no
/// schemars `format` (not a JSON Schema format: Ajv warns on every call).
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
                && m.get("enum").is_some()
        }) {
            problems.push(format!(
                "{}: input{at} admits null outside its enum",
                tool.name
            ));
        }
        let nullable: Vec<String> = input["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, schema)| admits_null(schema))
            .map(|(name, _)| format!("{}.{name}", tool.name))
            .collect();
        let expected: &[&str] = match tool.name.as_ref() {
            "update_ticket" => &["update_ticket.assignee", "update_ticket.description"],
            _ => &[],
        };
        if nullable != expected {
            problems.push(format!(
                "{}: null is a value for {nullable:?}, expected {expected:?}",
                tool.name
            ));
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

/// The README's MCP section lists every tool the door serves, says how
/// many, and names no tool the door does not have (one was missing from it
/// for a while; now the listing itself checks it).
#[test]
fn the_readme_lists_every_tool() {
    let readme = include_str!("../../README.md");
    let section = readme
        .split("## For agents: the MCP door")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the README's MCP section");
    let paragraph = section
        .split("\n\n")
        .find(|p| p.starts_with("Tools ("))
        .expect("its paragraph that starts `Tools (`");
    let named: std::collections::BTreeSet<&str> = paragraph
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|word| {
            word.contains('_')
                && word.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                && *word != "operation_id"
        })
        .collect();
    let tools: std::collections::BTreeSet<String> = TicketTools::definitions()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    let tools: std::collections::BTreeSet<&str> = tools.iter().map(String::as_str).collect();
    assert_eq!(named, tools, "the README's tools, and the door's");
    let words = [
        "none", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen",
    ];
    let count = words.get(tools.len()).copied().unwrap_or("many");
    assert!(
        paragraph.starts_with(&format!("Tools ({count};")),
        "the README says how many ({count}): {paragraph}"
    );
}
